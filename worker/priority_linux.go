package worker

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// variantNice is the nice value of a worker that makes a snapshot variant:
// the variant is a speed-up for some calls, and the CPU it takes (a cold
// import of its packages, seconds for sympy) must go to calls first.
const variantNice = 10

// lowerPriority makes every thread of this process, and so every thread it
// starts later, run at variantNice: Linux keeps a nice value per thread,
// and setpriority(PRIO_PROCESS, 0) sets the calling thread's only.
func lowerPriority() error {
	_, _, errno := syscall.AllThreadsSyscall(syscall.SYS_SETPRIORITY, unix.PRIO_PROCESS, 0, variantNice)
	if errno != 0 {
		return errno
	}
	return nil
}
