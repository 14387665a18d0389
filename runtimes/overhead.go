package runtimes

// A worker holds more than its guest's linear memory: the Go runtime, the
// compiled module's machine code, the binary's pages, and whatever the
// host side of the runtime keeps for the guest (open files, timers,
// buffers). These bounds, measured and documented in SECURITY.md ("What
// bounds what"), are what a worker may use beyond the memory limit before
// the OS backstops stop it; the answer then names the memory limit.
//
// Measured with `capsule exec --memory 64MiB|256MiB` (VmHWM and VmData of
// the worker, sampled every 50 ms): a Python worker whose guest fills its
// memory peaks at the limit + 65 MiB of RSS and the limit + 116 MiB of
// writable mappings (Go reserves heap it does not touch); a JavaScript
// worker at the limit + 12 MiB and the limit + 104 MiB. The bounds below
// leave about twice that.
const (
	// WorkerRSSOverhead is how far a worker's resident memory may exceed
	// the memory limit before the supervisor's watchdog kills it, and the
	// memory.max of its cgroup beyond the limit where one is delegated.
	WorkerRSSOverhead = 128 << 20
	// WorkerDataOverhead is how far a worker's writable private mappings
	// (RLIMIT_DATA, which counts the guest's linear memory as opened so
	// far, or the whole limit without guard pages) may exceed the memory
	// limit; beyond it an allocation fails and the worker dies of "out of
	// memory", or the guest's growth fails.
	WorkerDataOverhead = 256 << 20
)
