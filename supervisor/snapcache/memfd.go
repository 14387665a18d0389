package snapcache

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// newMemfd makes an empty memfd that can be sealed.
func newMemfd(name string) (*os.File, error) {
	fd, err := unix.MemfdCreate(name, unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return nil, fmt.Errorf("memfd_create: %w", err)
	}
	return os.NewFile(uintptr(fd), name), nil
}

// seal forbids any further change to the memfd f and returns a read-only
// descriptor of it in its place.
func seal(f *os.File) (*os.File, error) {
	defer f.Close()
	seals := unix.F_SEAL_SEAL | unix.F_SEAL_SHRINK | unix.F_SEAL_GROW | unix.F_SEAL_WRITE
	if _, err := unix.FcntlInt(f.Fd(), unix.F_ADD_SEALS, seals); err != nil {
		return nil, fmt.Errorf("sealing the snapshot: %w", err)
	}
	fd, err := unix.Open(fmt.Sprintf("/proc/self/fd/%d", f.Fd()), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("reopening the snapshot read-only: %w", err)
	}
	return os.NewFile(uintptr(fd), f.Name()), nil
}
