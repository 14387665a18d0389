package guestmem

import "syscall"

const mapNoReserve = syscall.MAP_NORESERVE

// adviseHugePages asks for transparent huge pages. Every first touch of a
// page is a page fault, and in a virtual machine a costly one: with 4 KiB
// pages, copying CPython's data segments into a fresh instance and starting
// the interpreter took some thousand faults, half of Prepare+Run (measured:
// 45 ms with small pages, 23 ms with huge ones). Failure is harmless.
func adviseHugePages(b []byte) {
	_ = syscall.Madvise(b, syscall.MADV_HUGEPAGE)
}
