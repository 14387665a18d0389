//go:build !unix

package guestmem

import "errors"

// mapAnonymous is not available here; Allocator falls back to a Go slice.
func mapAnonymous(uint64) ([]byte, error) {
	return nil, errors.New("anonymous mappings are not supported on this platform")
}

func unmap([]byte) error { return nil }
