package snapcache

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
)

// FD is the worker's descriptor of the compilation cache
// directory: after the ipc pipes on 3 and 4.
const FD = 5

// OpenWorkerDir prepares the compilation cache for workers and returns a
// descriptor of it, which every worker gets as FD and reaches as
// /proc/self/fd/5. Through that magic link a worker needs no search
// permission on the directories above the cache: a worker mapped to an unprivileged host
// uid uses a cache under root's home without anyone else of that uid
// being able to reach it. When workers run as another
// host uid than the supervisor, the cache is handed to that uid, since the
// workers fill it.
//
// Workers of another host uid get a cache of their own below dir, named
// for the uid: what they write is never loaded by workers of the
// supervisor's own uid, and the rest of dir keeps its owner. uid and gid
// are the workers' host ids.
func OpenWorkerDir(dir string, uid, gid int) (*os.File, error) {
	foreign := uid != os.Geteuid() || gid != os.Getegid()
	if foreign {
		dir = filepath.Join(dir, fmt.Sprintf("uid-%d-gid-%d", uid, gid))
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating compilation cache %s: %w", dir, err)
	}
	if foreign {
		err := filepath.WalkDir(dir, func(path string, _ fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			return os.Lchown(path, uid, gid)
		})
		if err != nil {
			return nil, fmt.Errorf("handing the compilation cache %s to the workers' host uid %d: %w", dir, uid, err)
		}
	}
	f, err := os.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("opening compilation cache %s: %w", dir, err)
	}
	return f, nil
}

// WorkerPath is the cache directory as a worker names it.
var WorkerPath = "/proc/self/fd/" + strconv.Itoa(FD)
