package lockdown

import (
	"fmt"
	"os"
	"runtime/debug"

	"capsule/worker/lockdown/internal/attack"
)

// int80Getpid makes the i386 getpid (number 20; on x86_64, 20 is writev)
// through `int $0x80`, and checks it really ran. Some hypervisors (and
// kernels booted with ia32_emulation=0) answer int 0x80 with a general
// protection fault; that is reported as an error so the test can skip.
func int80Getpid(any) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("int 0x80 faulted (no IA32 emulation here): %v", r)
		}
	}()
	if got := attack.Int80(20); int(got) != os.Getpid() {
		return fmt.Errorf("int 0x80 getpid returned %d", int64(got))
	}
	return nil
}
