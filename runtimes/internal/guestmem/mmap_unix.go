//go:build unix

package guestmem

import (
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// mapAnonymous maps n bytes of private, zero-filled, read-write memory.
// With MAP_NORESERVE the mapping is address space; only touched pages count.
func mapAnonymous(n uint64) ([]byte, error) {
	b, err := syscall.Mmap(-1, 0, int(max(n, 1)), syscall.PROT_READ|syscall.PROT_WRITE,
		syscall.MAP_PRIVATE|syscall.MAP_ANON|mapNoReserve)
	if err != nil {
		return nil, err
	}
	adviseHugePages(b)
	return b, nil
}

func unmap(b []byte) error { return syscall.Munmap(b) }

// mapFileAt replaces the pages of dst with a private mapping of fd.
func mapFileAt(dst []byte, fd int, offset int64) error {
	_, err := unix.MmapPtr(fd, offset, unsafe.Pointer(&dst[0]), uintptr(len(dst)),
		unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_FIXED)
	return err
}
