package guestmem

import "syscall"

const mapNoReserve = syscall.MAP_NORESERVE

// AdviseHugePages asks for transparent huge pages for b, part of a guest
// memory that is about to be written whole: a snapshot's image as it is
// restored. Every first touch of a page is a page fault, and in a virtual
// machine a costly one: with 4 KiB pages, copying CPython's data segments
// into a fresh instance and starting the interpreter took some thousand
// faults, half of Prepare+Run (measured: 45 ms with small pages, 23 ms with
// huge ones). The rest of a memory, which the guest grows and touches
// piecemeal, keeps small pages: a huge page clears 2 MiB for the first byte
// written, and on a virtual machine its 2 MiB are the ones the host has
// most likely taken back, so each huge page costs hundreds of the host's
// faults at once (measured, interleaved: the server's time for a
// JavaScript call given a 5 MiB file was 84-205 ms with huge pages for the
// whole memory, 61-65 ms without; Python's restore took 5.8 ms with them
// and 6.9-8.4 ms without, in-process). Failure is harmless.
func AdviseHugePages(b []byte) {
	_ = syscall.Madvise(b, syscall.MADV_HUGEPAGE)
}
