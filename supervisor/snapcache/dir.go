package snapcache

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// ErrUnsafeDir is returned by Open when the cache directory, or one above
// it up to the user's cache root, could be written by someone other than
// the server's user: whatever it holds could have been planted.
var ErrUnsafeDir = errors.New("unsafe cache directory")

// openDir opens dir, creating what is missing, after checking dir and each
// directory between root and it: each must be a real directory (not a
// symbolic link) owned by the server's effective user or by root, and not
// writable by group or others. root itself may also be a sticky directory
// that others can write (a tmpfs mounted 1777): nobody else can then
// rename or remove what the server creates in it. Only the components
// below root are looked up without following links; root itself is the
// user's own choice of cache root.
// Every later file operation is relative to the returned descriptor, so a
// directory swapped afterwards changes nothing.
func openDir(root, dir string) (*os.File, error) {
	checkRoot := true
	rel, err := filepath.Rel(root, dir)
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, "../") {
		// Not below the user's cache root: only dir itself is checked.
		root, rel, checkRoot = filepath.Dir(dir), filepath.Base(dir), false
	}
	if err := os.MkdirAll(root, 0o700); err != nil {
		return nil, fmt.Errorf("creating %s: %w", root, err)
	}
	fd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", root, err)
	}
	if checkRoot {
		if err := checkDir(fd, root, true); err != nil {
			unix.Close(fd)
			return nil, err
		}
	}
	path := root
	for _, name := range strings.Split(rel, "/") {
		path = filepath.Join(path, name)
		next, err := descend(fd, path, name)
		unix.Close(fd)
		if err != nil {
			return nil, err
		}
		fd = next
	}
	return os.NewFile(uintptr(fd), dir), nil
}

// descend creates the directory name in the directory fd if it is
// missing, opens it without following a link and checks it.
func descend(fd int, path, name string) (int, error) {
	if err := unix.Mkdirat(fd, name, 0o700); err != nil && !errors.Is(err, unix.EEXIST) {
		return -1, fmt.Errorf("creating %s: %w", path, err)
	}
	next, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("%w: %s: %w (a symbolic link, or not a directory)", ErrUnsafeDir, path, err)
	}
	if err := checkDir(next, path, false); err != nil {
		unix.Close(next)
		return -1, err
	}
	return next, nil
}

// checkDir checks that the directory open as fd belongs to the server's
// user (or root) and is writable by no one else, or, for the cache root,
// is sticky.
func checkDir(fd int, path string, root bool) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if euid := os.Geteuid(); int(st.Uid) != euid && st.Uid != 0 {
		return fmt.Errorf("%w: %s is owned by uid %d, not by the server's uid %d; anyone who owns it can plant code every call runs", ErrUnsafeDir, path, st.Uid, euid)
	}
	if st.Mode&0o022 != 0 && !(root && st.Mode&unix.S_ISVTX != 0) {
		return fmt.Errorf("%w: %s has mode %04o, writable by group or others, who could plant code every call runs; run chmod go-w %s", ErrUnsafeDir, path, st.Mode&0o7777, path)
	}
	return nil
}

// privateDir makes a fresh directory of the server's own, 0700, under the
// system's temporary directory: where a root server keeps its cache when
// the configured one is unsafe. mkdir fails on any existing name, so
// nobody can have prepared it.
func privateDir() (*os.File, error) {
	path, err := os.MkdirTemp("", "capsule-cache-")
	if err != nil {
		return nil, fmt.Errorf("creating a private cache directory: %w", err)
	}
	f, err := openDir("", path)
	if err != nil {
		os.RemoveAll(path)
		return nil, err
	}
	return f, nil
}
