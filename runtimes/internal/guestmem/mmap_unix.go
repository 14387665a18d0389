//go:build unix

package guestmem

import "syscall"

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
