// Package guardpage turns a fault on a guard page of a linear memory into the
// out-of-bounds trap that the compiler's bounds check would have raised.
//
// A memory compiled for guard pages (experimental.WithMemoryGuardPages) is
// the start of a reservation of ReservationSize bytes of address space, of
// which everything past the memory's current size is inaccessible. Every
// address a wasm32 load or store can form, base + 2^32 - 1 index + 2^32 - 1
// static offset + 16 bytes of access, falls inside it, so the compiled code
// leaves the bounds check out and an out-of-bounds access faults.
//
// The SIGSEGV handler installed by Install recognises such a fault by two
// facts that it looks up in tables kept here: the faulting address is inside
// a registered reservation (RegisterRegion), and the stack pointer is inside
// the stack of a call in progress (EnterCall), which names that call's
// execution context. It then makes the faulting code return to Go exactly as
// the compiled trap exit does, with the out-of-bounds exit code; every other
// fault goes on to the Go runtime's handler, unchanged.
package guardpage

import (
	"sync"
	"sync/atomic"
	"unsafe"
)

// ReservationSize is the address space a guard-page memory reserves from its
// first byte: 4 GiB of index, 4 GiB of static offset and the widest access
// (16 bytes), rounded up to 64 KiB.
const ReservationSize = 8<<30 + 64<<10

// Offsets into wazevo's execution context and the exit code that the handler
// writes; wazevo checks at compile time that they match its own.
const (
	ExecCtxOffsetExitCode                 = 0
	ExecCtxOffsetOriginalFramePointer     = 16
	ExecCtxOffsetOriginalStackPointer     = 24
	ExecCtxOffsetGoCallReturnAddress      = 48
	ExecCtxOffsetStackPointerBeforeGoCall = 56
	ExecCtxOffsetFramePointerBeforeGoCall = 1152
	ExitCodeMemoryOutOfBounds             = 4
)

// Entry is one registered address range. The signal handler reads entries
// without locking: seq is odd while a writer changes the entry, and an entry
// read while seq changed is skipped. An entry that a handler needs is never
// being written at the time: a call's own stack does not change while its
// code runs, and a memory's reservation is registered before any code can
// use it.
type Entry struct {
	seq    uint64
	lo, hi uintptr // [lo, hi); hi == 0 means the entry is free
	ctx    uintptr // the execution context of a call; 0 for a region
}

// chunkEntries is the number of entries in a chunk. The handler's lookup
// (lookup in handler_linux_amd64.s) walks chunks with the same layout.
const chunkEntries = 64

// chunk is a block of entries. Chunks are only ever appended, never freed or
// moved, so the handler can walk them at any time.
type chunk struct {
	entries [chunkEntries]Entry
	next    unsafe.Pointer // *chunk, set once
}

// table is a set of entries. Writers hold mu; the handler only reads.
type table struct {
	head chunk // first, at the table's address, for the handler
	mu   sync.Mutex
}

var (
	// regions are the reservations of guard-page memories.
	regions table
	// stacks are the stacks of calls in progress, with their contexts.
	stacks table
)

// add takes a free entry and sets it.
func (t *table) add(lo, hi, ctx uintptr) *Entry {
	t.mu.Lock()
	defer t.mu.Unlock()
	c := &t.head
	for {
		for i := range c.entries {
			if e := &c.entries[i]; e.hi == 0 {
				e.set(lo, hi, ctx)
				return e
			}
		}
		if c.next == nil {
			atomic.StorePointer(&c.next, unsafe.Pointer(new(chunk)))
		}
		c = (*chunk)(c.next)
	}
}

// update changes e, which the caller owns.
func (t *table) update(e *Entry, lo, hi, ctx uintptr) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e.set(lo, hi, ctx)
}

// set writes the entry as a sequence: seq odd, the fields, seq even, with
// the end of the range last so that a half-written entry is never read as
// complete even without seq.
func (e *Entry) set(lo, hi, ctx uintptr) {
	atomic.AddUint64(&e.seq, 1)
	atomic.StoreUintptr(&e.lo, lo)
	atomic.StoreUintptr(&e.ctx, ctx)
	atomic.StoreUintptr(&e.hi, hi)
	atomic.AddUint64(&e.seq, 1)
}

// find returns the context of the entry whose range holds addr, the Go
// version of the handler's lookup (for tests).
func (t *table) find(addr uintptr) (ctx uintptr, ok bool) {
	for c := &t.head; c != nil; c = (*chunk)(atomic.LoadPointer(&c.next)) {
		for i := range c.entries {
			e := &c.entries[i]
			s := atomic.LoadUint64(&e.seq)
			hi := atomic.LoadUintptr(&e.hi)
			lo := atomic.LoadUintptr(&e.lo)
			ctx := atomic.LoadUintptr(&e.ctx)
			if s&1 == 0 && hi != 0 && atomic.LoadUint64(&e.seq) == s && lo <= addr && addr < hi {
				return ctx, true
			}
		}
	}
	return 0, false
}

// RegisterRegion records [start, start+size) as the reservation of a
// guard-page memory. The caller unregisters it before the memory is freed.
func RegisterRegion(start uintptr, size uint64) *Entry {
	return regions.add(start, start+uintptr(size), 0)
}

// UnregisterRegion forgets a region.
func UnregisterRegion(e *Entry) { regions.update(e, 0, 0, 0) }

// EnterCall records that code running on the stack [lo, hi) belongs to the
// call whose execution context is at execCtx, until LeaveCall. Between the
// two, MoveStack follows the call's stack when it is replaced.
func EnterCall(lo, hi, execCtx uintptr) *Entry { return stacks.add(lo, hi, execCtx) }

// MoveStack records that e's call now runs on the stack [lo, hi).
func MoveStack(e *Entry, lo, hi uintptr) { stacks.update(e, lo, hi, e.ctx) }

// LeaveCall forgets e's call.
func LeaveCall(e *Entry) { stacks.update(e, 0, 0, 0) }

// traps counts the faults the handler has turned into traps (incremented by
// sigtramp).
var traps uint64

// Traps returns how many faults the handler has turned into traps.
func Traps() uint64 { return atomic.LoadUint64(&traps) }

// installed is set once Install has installed the handler.
var installed atomic.Bool

var installOnce sync.Once

var installErr error

// Install installs the fault handler, once per process. It fails where there
// is no handler for the platform (Supported), or when the SIGSEGV handler in
// place is not one it can hand other faults on to.
func Install() error {
	installOnce.Do(func() {
		if installErr = install(); installErr == nil {
			installed.Store(true)
		}
	})
	return installErr
}

// Installed reports whether Install has installed the handler: from then on
// every call registers its stack, since its code may reach a guard-page
// memory through an imported function.
func Installed() bool { return installed.Load() }
