package guardpage

import (
	"errors"
	"fmt"
	"syscall"
	"unsafe"
)

// Supported reports whether this platform has the fault handler.
const Supported = true

// sigactiont is the kernel's struct sigaction on linux/amd64.
type sigactiont struct {
	handler  uintptr
	flags    uint64
	restorer uintptr
	mask     uint64
}

const (
	saSiginfo  = 0x4
	saRestorer = 0x04000000
)

// The layout of the tables that lookup (handler_linux_amd64.s) walks: an
// index out of range here means the assembly must change too.
var (
	_ = [1]struct{}{}[unsafe.Offsetof(Entry{}.seq)]
	_ = [1]struct{}{}[unsafe.Offsetof(Entry{}.lo)-8]
	_ = [1]struct{}{}[unsafe.Offsetof(Entry{}.hi)-16]
	_ = [1]struct{}{}[unsafe.Offsetof(Entry{}.ctx)-24]
	_ = [1]struct{}{}[unsafe.Sizeof(Entry{})-32]
	_ = [1]struct{}{}[unsafe.Offsetof(chunk{}.next)-chunkEntries*32]
	_ = [1]struct{}{}[unsafe.Offsetof(table{}.head)]
)

// goHandler is the SIGSEGV handler that was in place before install, the Go
// runtime's: sigtramp jumps to it with every fault that is not a guard-page
// access, as if the kernel had called it.
var goHandler uintptr

// sigtramp is the SIGSEGV handler (handler_linux_amd64.s).
func sigtramp()

// sigtrampAddr returns the address of sigtramp's machine code.
func sigtrampAddr() uintptr

// install puts sigtramp in front of the SIGSEGV handler in place, keeping
// that handler's flags, mask and restorer.
func install() error {
	var old sigactiont
	if err := rtSigaction(nil, &old); err != nil {
		return err
	}
	// The Go runtime installs its handler with SA_SIGINFO and its own
	// restorer: anything else (no handler, or a C program's) is not one
	// that sigtramp knows how to hand a fault on to.
	if old.handler <= 1 || old.flags&saSiginfo == 0 || old.flags&saRestorer == 0 {
		return errors.New("guard pages: the SIGSEGV handler in place is not the Go runtime's")
	}
	goHandler = old.handler
	act := old
	act.handler = sigtrampAddr()
	return rtSigaction(&act, nil)
}

func rtSigaction(act, old *sigactiont) error {
	_, _, e := syscall.RawSyscall6(syscall.SYS_RT_SIGACTION, uintptr(syscall.SIGSEGV),
		uintptr(unsafe.Pointer(act)), uintptr(unsafe.Pointer(old)), 8, 0, 0)
	if e != 0 {
		return fmt.Errorf("guard pages: rt_sigaction(SIGSEGV): %w", e)
	}
	return nil
}
