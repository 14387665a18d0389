//go:build unix

package javascript

import (
	"syscall"

	"github.com/tetratelabs/wazero/experimental"
)

// memoryAllocator backs each instance's linear memory with one anonymous
// mapping of the maximum size, reserved but committed page by page by the
// kernel as the guest touches it.
//
// Why: wazero's default grows memory by reallocating a Go slice and copying
// it; a guest that fills a 256 MiB limit spent seconds copying (and the
// interrupt handler cannot stop a copy in progress). Eager Go allocation
// (WithMemoryCapacityFromMax) avoids the copies but zeroes the whole maximum
// whenever the Go heap reuses a freed span. A fresh mapping is zero, never
// moves, and goes back to the system when the instance closes. It needs mmap
// and munmap without PROT_EXEC, which the worker's lockdown allows.
var memoryAllocator experimental.MemoryAllocator = experimental.MemoryAllocatorFunc(func(_, max uint64) experimental.LinearMemory {
	return &mappedMemory{max: max}
})

type mappedMemory struct {
	max uint64
	buf []byte
}

// Reallocate maps the memory on first use and returns its first size bytes,
// or nil (a failed growth, which the guest sees as out of memory).
func (m *mappedMemory) Reallocate(size uint64) []byte {
	if size > m.max {
		return nil
	}
	if m.buf == nil {
		buf, err := syscall.Mmap(-1, 0, int(max(m.max, 1)), syscall.PROT_READ|syscall.PROT_WRITE,
			syscall.MAP_PRIVATE|syscall.MAP_ANON|mapNoReserve)
		if err != nil {
			return nil
		}
		m.buf = buf
	}
	return m.buf[:size]
}

// Free unmaps the memory; wazero calls it when the instance closes.
func (m *mappedMemory) Free() {
	if m.buf != nil {
		_ = syscall.Munmap(m.buf)
		m.buf = nil
	}
}
