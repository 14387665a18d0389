package experimental

import (
	"context"

	"github.com/tetratelabs/wazero/internal/expctxkeys"
	"github.com/tetratelabs/wazero/internal/guardpage"
)

// MemoryGuardReservation is the address space a GuardPageMemory reserves from
// the first byte of its buffer: 4 GiB of index, 4 GiB of static offset and
// the widest access, rounded up to 64 KiB. Every address a load or store of
// a 32-bit memory can form lies inside it.
const MemoryGuardReservation = guardpage.ReservationSize

// MemoryGuardPagesSupported reports whether this platform can run code
// compiled for guard-page memories: it needs a fault handler, which only
// linux/amd64 has. Elsewhere WithMemoryGuardPages does nothing.
const MemoryGuardPagesSupported = guardpage.Supported

// WithMemoryGuardPages makes Runtime.CompileModule, with the compiler, leave
// out the bounds check of every load and store of the memory a module defines
// (not an imported or a shared one), because that memory will be a
// GuardPageMemory: an access out of bounds faults on a guard page instead,
// and a signal handler, installed by the first such compilation, turns the
// fault into the same trap ("out of bounds memory access"). Bulk memory
// instructions and host functions keep their checks.
//
// The setting is part of the compiled module's identity (compilation cache
// and compiled image included). An instance of a module compiled this way
// must get its memory from the MemoryAllocator of WithMemoryAllocator, and
// that allocator must return a GuardPageMemory: instantiation fails
// otherwise.
//
// The option does nothing with the interpreter, on platforms where
// MemoryGuardPagesSupported is false, for modules without a memory of their
// own, and when the handler cannot be installed (the SIGSEGV handler in
// place is not the Go runtime's).
//
// The handler must be installed, by CompileModule, before anything that
// forbids rt_sigaction (a seccomp filter, say); afterwards it makes no
// system call of its own.
func WithMemoryGuardPages(ctx context.Context) context.Context {
	return context.WithValue(ctx, expctxkeys.MemoryGuardPagesKey{}, struct{}{})
}

// GuardPageMemory is a LinearMemory that can back a memory compiled with
// WithMemoryGuardPages. Its buffer never moves, and starts a reservation of
// at least MemoryGuardReservation bytes of address space in which every byte
// past the buffer's current length faults when read or written (PROT_NONE),
// for as long as the memory is in use: Reallocate makes the bytes up to the
// new length readable and writable, never executable, and nothing else.
//
// Nothing in wazero can check that; a LinearMemory that says so wrongly lets
// compiled code read and write outside its memory.
type GuardPageMemory interface {
	LinearMemory
	// Reservation returns the start and length of the reservation.
	Reservation() (start uintptr, length uint64)
}
