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
// starts later, run at variantNice, or stay at its own nice value when that
// is already lower in priority (a server started with nice 19, or under
// systemd's Nice=15: going back up to 10 would need privilege, and the
// worker has none): Linux keeps a nice value per thread, and
// setpriority(PRIO_PROCESS, 0) sets the calling thread's only.
func lowerPriority() error {
	// getpriority(2) returns 20 - nice, so that it is never negative.
	prio, err := unix.Getpriority(unix.PRIO_PROCESS, 0)
	if err != nil {
		return err
	}
	nice := max(variantNice, 20-prio)
	_, _, errno := syscall.AllThreadsSyscall(syscall.SYS_SETPRIORITY, unix.PRIO_PROCESS, 0, uintptr(nice))
	if errno != 0 {
		return errno
	}
	return nil
}
