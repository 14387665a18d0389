package runtimes

// A worker holds more than its guest's linear memory: the Go runtime, the
// compiled module's machine code, the binary's pages, whatever the host
// side of the runtime keeps for the guest (open files, timers, buffers),
// and a Python call's scratch directory, which lives in the worker's Go
// heap. WorkerBounds is the one place that adds these up into the OS
// backstops; the overheads below are measured and documented in
// SECURITY.md ("What bounds what"), and the answer of a worker stopped by
// a backstop names the memory limit.
//
// Measured with `capsule exec --memory 64MiB|256MiB` (VmHWM and VmData of
// the worker, sampled every 50 ms): a Python worker whose guest fills its
// memory peaks at the limit + 65 MiB of RSS and the limit + 116 MiB of
// writable mappings (Go reserves heap it does not touch); a JavaScript
// worker at the limit + 12 MiB and the limit + 104 MiB. The bounds below
// leave about twice that.
const (
	// WorkerRSSOverhead is how far a worker's resident memory may exceed
	// the memory limit and its scratch before the supervisor's watchdog
	// kills it, and the memory.max of its cgroup beyond them where one is
	// delegated.
	WorkerRSSOverhead = 128 << 20
	// WorkerDataOverhead is how far a worker's writable private mappings
	// (RLIMIT_DATA, which counts the guest's linear memory as opened so
	// far, or the whole limit without guard pages) may exceed the memory
	// limit and its scratch; beyond it an allocation fails and the worker
	// dies of "out of memory", or the guest's growth fails.
	WorkerDataOverhead = 256 << 20
)

// MinMemory is the smallest memory limit both interpreters start under:
// QuickJS-NG's module asks for 16 MiB of linear memory at instantiation,
// and CPython holds about 18 MiB after its start-up (with `capsule exec
// --memory 16MiB` its start-up fails, with 20MiB it runs). A smaller limit
// would fail every call, so it is refused at start.
const MinMemory = 32 << 20

// Bounds are the OS memory backstops of one worker.
type Bounds struct {
	// RSS is the most resident memory the watchdog and the cgroup allow.
	RSS int64
	// Data is the worker's RLIMIT_DATA.
	Data int64
}

// WorkerBounds returns the backstops of a worker of language whose guest
// may use memory bytes of linear memory and, for Python (the only runtime
// with a scratch directory), scratch bytes of /tmp: memory + scratch +
// overhead, as the README promises. A guest that fills its scratch then
// meets the scratch limit (ENOSPC) long before a backstop.
func WorkerBounds(language string, memory, scratch int64) Bounds {
	held := memory
	if language == Python {
		held += scratch
	}
	return Bounds{RSS: held + WorkerRSSOverhead, Data: held + WorkerDataOverhead}
}
