//go:build unix && !linux

package guestmem

// mapNoReserve is Linux's; elsewhere a private anonymous mapping is lazily
// backed anyway.
const mapNoReserve = 0

// AdviseHugePages is a Linux refinement; see mmap_linux.go.
func AdviseHugePages([]byte) {}
