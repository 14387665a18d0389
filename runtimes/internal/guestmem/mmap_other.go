//go:build !unix

package guestmem

import (
	"errors"
	"unsafe"
)

var errNoMappings = errors.New("anonymous mappings are not supported on this platform")

// mapAnonymous is not available here; Allocator falls back to a Go slice.
func mapAnonymous(uint64) ([]byte, error) { return nil, errNoMappings }

func reserve(uint64) ([]byte, error) { return nil, errNoMappings }

func openPages([]byte) error { return errNoMappings }

func unmap([]byte) error { return nil }

func sliceStart(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }

// AdviseHugePages is a Linux refinement; see mmap_linux.go.
func AdviseHugePages([]byte) {}
