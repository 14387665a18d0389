//go:build unix

package guestmem

import (
	"syscall"
	"unsafe"
)

// mapAnonymous maps n bytes of private, zero-filled, read-write memory.
// With MAP_NORESERVE the mapping is address space; only touched pages count.
func mapAnonymous(n uint64) ([]byte, error) {
	return mapPrivate(n, syscall.PROT_READ|syscall.PROT_WRITE)
}

// reserve maps n bytes of private address space that cannot be accessed
// until openPages opens them. A PROT_NONE mapping counts against neither
// RLIMIT_DATA nor the commit charge, only against RLIMIT_AS.
func reserve(n uint64) ([]byte, error) {
	return mapPrivate(n, syscall.PROT_NONE)
}

func mapPrivate(n uint64, prot int) ([]byte, error) {
	b, err := syscall.Mmap(-1, 0, int(max(n, 1)), prot, syscall.MAP_PRIVATE|syscall.MAP_ANON|mapNoReserve)
	if err != nil {
		return nil, err
	}
	return b, nil
}

// openPages makes b, part of a reservation, readable and writable (never
// executable: the worker's seccomp filter refuses that).
func openPages(b []byte) error {
	return syscall.Mprotect(b, syscall.PROT_READ|syscall.PROT_WRITE)
}

func unmap(b []byte) error { return syscall.Munmap(b) }

func sliceStart(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }
