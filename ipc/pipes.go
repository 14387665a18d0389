package ipc

import (
	"os"

	"golang.org/x/sys/unix"
)

// Pipe sizes WidenPipes is asked for. A 5 MiB message or file through the
// default 64 KiB crosses in 80 pieces, each a wake-up of the reader and the
// writer, and on a busy machine each waits its turn for a CPU. The stdio
// pipes get the most an unprivileged user may ask for; a worker's get a
// quarter of it, since one pair per call in flight counts against the
// user's pipe pages (pipe-user-pages-soft, 64 MiB by default, past which
// the kernel gives every new pipe of the user 8 KiB).
const (
	StdioPipeSize  = 1 << 20
	WorkerPipeSize = 256 << 10
)

// WidenPipes asks the kernel for buffers of size bytes on files that are
// pipes. Files that are not pipes, and a kernel that refuses (a size over
// /proc/sys/fs/pipe-max-size, or a user over its pipe pages), keep the
// buffers they have: it is only speed.
//
// It reaches the descriptors through SyscallConn, never Fd: Fd puts a file
// into blocking mode, after which its deadlines no longer work, and the
// supervisor ends a cancelled or stuck call by them.
func WidenPipes(size int, files ...*os.File) {
	for _, f := range files {
		rc, err := f.SyscallConn()
		if err != nil {
			continue
		}
		_ = rc.Control(func(fd uintptr) {
			var st unix.Stat_t
			if unix.Fstat(int(fd), &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFIFO {
				_, _ = unix.FcntlInt(fd, unix.F_SETPIPE_SZ, size)
			}
		})
	}
}
