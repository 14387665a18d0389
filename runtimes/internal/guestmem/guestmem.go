// Package guestmem backs a wasm instance's linear memory with one anonymous
// mapping of the whole memory limit, made when the instance is created.
//
// Why not wazero's default (a Go slice): growing it copies the whole heap
// at every memory.grow (a guest filling 256 MiB spent seconds copying, and
// nothing can interrupt a copy), and reserving the capacity up front
// (WithMemoryCapacityFromMax) makes every instance clear the whole limit. A
// fresh mapping costs neither: the kernel hands out zero pages as the guest
// touches them, the mapping never moves, and growing only lengthens the
// slice. The mapping is never executable (the worker's seccomp filter
// forbids that); it needs mmap, madvise and munmap after the lockdown.
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
	running  bool   // the guest goroutine has not returned yet
	freeWant bool   // wazero has asked for the memory to be freed
}

// Allocator returns a wazero memory allocator. When slot is not nil, each
// Memory it makes is recorded there, so its instance can call SetRunning.
// Where no mapping can be made it falls back to wazero's growth by copying.
func Allocator(slot **Memory) experimental.MemoryAllocator {
	return experimental.MemoryAllocatorFunc(func(capacity, maxBytes uint64) experimental.LinearMemory {
		buf, err := mapAnonymous(maxBytes)
		if err != nil {
			return &sliceMemory{buf: make([]byte, 0, capacity)}
		}
		m := &Memory{buf: buf}
		if slot != nil {
			*slot = m
		}
		return m
	})
}

// Reallocate implements experimental.LinearMemory: the mapping never moves,
// and a size beyond it is a failed growth, which the guest sees as out of
// memory.
func (m *Memory) Reallocate(size uint64) []byte {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.buf == nil || size > uint64(len(m.buf)) {
		return nil
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
