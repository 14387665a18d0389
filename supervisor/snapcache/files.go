package snapcache

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// openRegular opens name in the directory dirfd for reading, without
// following a link and without blocking on a FIFO, and checks with fstat,
// before reading a byte, that it is a regular file of the server's user of
// at most max bytes. It returns the file and its size.
func openRegular(dirfd int, name string, max int64) (*os.File, int64, error) {
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.ELOOP) {
			return nil, 0, fmt.Errorf("%s is a symbolic link", name)
		}
		return nil, 0, &os.PathError{Op: "open", Path: name, Err: err}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, 0, fmt.Errorf("%s: %w", name, err)
	}
	switch {
	case st.Mode&unix.S_IFMT != unix.S_IFREG:
		err = fmt.Errorf("%s is not a regular file (mode %#o)", name, st.Mode)
	case int(st.Uid) != os.Geteuid():
		err = fmt.Errorf("%s is owned by uid %d, not the server's uid %d", name, st.Uid, os.Geteuid())
	case st.Size > max:
		err = fmt.Errorf("%s is %d bytes, over the %d bytes such a file can be", name, st.Size, max)
	}
	if err != nil {
		unix.Close(fd)
		return nil, 0, err
	}
	return os.NewFile(uintptr(fd), name), st.Size, nil
}

// readSmall reads all of the regular file name in dirfd, which must be at
// most max bytes.
func readSmall(dirfd int, name string, max int64) ([]byte, error) {
	f, size, err := openRegular(dirfd, name, max)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, size)
	if _, err := io.ReadFull(f, b); err != nil {
		return nil, fmt.Errorf("reading %s: %w", name, err)
	}
	return b, nil
}

// createTemp creates a new file in dirfd for writing, under a random name
// that starts with tempPrefix. O_EXCL|O_NOFOLLOW: a name planted in
// advance, link or not, makes it fail instead of writing through it.
func createTemp(dirfd int) (*os.File, string, error) {
	var r [12]byte
	if _, err := rand.Read(r[:]); err != nil {
		return nil, "", err
	}
	name := tempPrefix + hex.EncodeToString(r[:])
	fd, err := unix.Openat(dirfd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, "", fmt.Errorf("creating %s: %w", name, err)
	}
	return os.NewFile(uintptr(fd), name), name, nil
}

// tempPrefix starts the names of files being written.
const tempPrefix = ".tmp-"

// writeFile writes b to name in dirfd through a temporary file renamed
// into place.
func writeFile(dirfd int, name string, b []byte) error {
	tmp, tmpName, err := createTemp(dirfd)
	if err != nil {
		return err
	}
	_, err = tmp.Write(b)
	return renameInto(dirfd, tmp, tmpName, name, err)
}

// renameInto closes the temporary file tmp, written with the error err,
// and renames it to name; on any error it removes it instead.
func renameInto(dirfd int, tmp *os.File, tmpName, name string, err error) error {
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = unix.Renameat(dirfd, tmpName, dirfd, name)
	}
	if err != nil {
		_ = unix.Unlinkat(dirfd, tmpName, 0)
		return fmt.Errorf("writing %s: %w", name, err)
	}
	return nil
}
