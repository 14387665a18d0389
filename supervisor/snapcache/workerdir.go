package snapcache

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// FD is the worker's descriptor of the compilation cache
// directory: after the ipc pipes on 3 and 4.
const FD = 5

// WorkerDir returns a descriptor of the workers' compilation cache,
// which every worker gets as FD and reaches as /proc/self/fd/5. Through
// that magic link a worker needs no search permission on the directories
// above the cache: a worker mapped to an unprivileged host uid uses a cache
// under root's home without anyone else of that uid being able to reach
// it. It returns nil without a cache directory.
//
// Workers of another host uid than the server (uid and gid are the
// workers' host ids) get a cache of their own below the directory, named
// for the uid and handed to it, since the workers fill it: what they
// write is never loaded by workers of the server's own uid, nor read by
// the server, and the rest of the directory keeps its owner.
func (c *Cache) WorkerDir(uid, gid int) (*os.File, error) {
	if c.dir == nil {
		return nil, nil
	}
	dirfd := int(c.dir.Fd())
	name := "."
	if uid != os.Geteuid() || gid != os.Getegid() {
		name = fmt.Sprintf("uid-%d-gid-%d", uid, gid)
		if err := unix.Mkdirat(dirfd, name, 0o700); err != nil && !errors.Is(err, unix.EEXIST) {
			return nil, fmt.Errorf("creating the workers' compilation cache %s: %w", name, err)
		}
	}
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("opening the workers' compilation cache %s: %w", name, err)
	}
	f := os.NewFile(uintptr(fd), filepath.Join(c.dir.Name(), name))
	if name != "." {
		// Below a directory only the server can write, so the paths
		// walked here are the ones just opened.
		err := filepath.WalkDir(f.Name(), func(path string, _ fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			return os.Lchown(path, uid, gid)
		})
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("handing the compilation cache %s to the workers' host uid %d: %w", f.Name(), uid, err)
		}
	}
	return f, nil
}

// WorkerPath is the cache directory as a worker names it.
var WorkerPath = "/proc/self/fd/" + strconv.Itoa(FD)
