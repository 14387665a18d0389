// Package guestmem backs a wasm instance's linear memory with one anonymous
// mapping made when the instance is created, which never moves.
//
// Where the platform can run code compiled for guard pages (GuardPages),
// the mapping is a reservation of experimental.MemoryGuardReservation bytes
// of address space (8 GiB and 64 KiB), inaccessible (PROT_NONE) except for
// the memory's current size, which Reallocate opens with mprotect as the
// guest grows it. Every address a wasm32 load or store can form lies inside
// the reservation, so the module is compiled without bounds checks
// (experimental.WithMemoryGuardPages) and an access out of bounds faults;
// wazero's fault handler turns the fault into the usual trap. Elsewhere the
// mapping is the whole memory limit, readable and writable, and the compiled
// code checks bounds.
//
// Why not wazero's default (a Go slice): growing it copies the whole heap
// at every memory.grow (a guest filling 256 MiB spent seconds copying, and
// nothing can interrupt a copy), and reserving the capacity up front
// (WithMemoryCapacityFromMax) makes every instance clear the whole limit. A
// fresh mapping costs neither: the kernel hands out zero pages as the guest
// touches them, the mapping never moves, and growing only lengthens the
// slice. The mapping is never executable (the worker's seccomp filter
// forbids that); it needs mmap, mprotect, madvise and munmap after the
// lockdown.
package guestmem

import (
	"sync"

	"github.com/tetratelabs/wazero/experimental"
)

// Memory is one instance's linear memory.
//
// Unmapping waits until the guest's goroutine has stopped: wazero frees the
// memory when the module closes, which may happen while the guest still
// runs (a Close after a timeout), and running code that touches an unmapped
// page would crash the process rather than trap. Callers that run the guest
// on a goroutine of its own say so with SetRunning.
type Memory struct {
	mu       sync.Mutex
	buf      []byte // the whole mapping; nil once unmapped
	limit    uint64 // the most Reallocate grants
	open     uint64 // bytes of buf readable and writable
	guarded  bool   // buf is a guard-page reservation
	running  bool   // the guest goroutine has not returned yet
	freeWant bool   // wazero has asked for the memory to be freed
}

// GuardMemory is a Memory that is a guard-page reservation.
type GuardMemory struct{ *Memory }

// Reservation implements experimental.GuardPageMemory.
func (g GuardMemory) Reservation() (start uintptr, length uint64) {
	return sliceStart(g.buf), uint64(len(g.buf))
}

// GuardPages reports whether memories are guard-page reservations, and so
// whether modules are compiled for them: the platform can run such code and
// a reservation can be made here (an RLIMIT_AS below 8 GiB would refuse it).
// Decided once per process.
var GuardPages = sync.OnceValue(func() bool {
	if !experimental.MemoryGuardPagesSupported {
		return false
	}
	b, err := reserve(experimental.MemoryGuardReservation)
	if err != nil {
		return false
	}
	_ = unmap(b)
	return true
})

// Allocator returns a wazero memory allocator. When slot is not nil, each
// Memory it makes is recorded there, so its instance can call SetRunning.
// Where no mapping can be made it falls back to wazero's growth by copying
// (and a module compiled for guard pages then fails to instantiate).
func Allocator(slot **Memory) experimental.MemoryAllocator {
	return experimental.MemoryAllocatorFunc(func(capacity, maxBytes uint64) experimental.LinearMemory {
		m := &Memory{limit: maxBytes}
		var err error
		if GuardPages() {
			if m.buf, err = reserve(experimental.MemoryGuardReservation); err == nil {
				m.guarded = true
			}
		}
		if !m.guarded {
			if m.buf, err = mapAnonymous(maxBytes); err != nil {
				return &sliceMemory{buf: make([]byte, 0, capacity)}
			}
			m.open = uint64(len(m.buf))
		}
		if slot != nil {
			*slot = m
		}
		if m.guarded {
			return GuardMemory{m}
		}
		return m
	})
}

// Reallocate implements experimental.LinearMemory: the mapping never moves,
// and a size beyond the limit, or one whose pages cannot be opened, is a
// failed growth, which the guest sees as out of memory.
func (m *Memory) Reallocate(size uint64) []byte {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.buf == nil || size > m.limit || size > uint64(len(m.buf)) {
		return nil
	}
	if size > m.open {
		// Only here does the guest's memory count against RLIMIT_DATA,
		// which makes this fail (ENOMEM) beyond it.
		if err := openPages(m.buf[m.open:size]); err != nil {
			return nil
		}
		m.open = size
	}
	return m.buf[:size:size]
}

// Free implements experimental.LinearMemory.
func (m *Memory) Free() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.freeWant = true
	m.release()
}

// SetRunning records whether a guest goroutine may still touch the memory.
func (m *Memory) SetRunning(running bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.running = running
	m.release()
}

func (m *Memory) release() {
	if m.freeWant && !m.running && m.buf != nil {
		_ = unmap(m.buf)
		m.buf = nil
	}
}

// sliceMemory is the fallback: a Go slice grown by appending.
type sliceMemory struct{ buf []byte }

func (s *sliceMemory) Reallocate(size uint64) []byte {
	if n := uint64(len(s.buf)); size > n {
		s.buf = append(s.buf, make([]byte, size-n)...)
	}
	return s.buf[:size]
}

func (s *sliceMemory) Free() { s.buf = nil }
