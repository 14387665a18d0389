//go:build unix

package worker

import (
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// closeInheritedFiles closes every descriptor the worker inherited beyond
// its own (stdio and the two ipc pipes): whatever the server's parent
// leaked without close-on-exec reaches the worker through two execs, and
// would otherwise stay open under the guest. A descriptor with
// close-on-exec set cannot have come through exec, so it is the Go
// runtime's or wazero's own and stays.
func closeInheritedFiles() error {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return err
	}
	for _, e := range entries {
		fd, err := strconv.Atoi(e.Name())
		if err != nil || fd <= fdToSupervisor {
			continue
		}
		flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
		if err != nil || flags&unix.FD_CLOEXEC != 0 {
			continue // gone (the directory's own descriptor) or ours
		}
		_ = unix.Close(fd)
	}
	return nil
}
