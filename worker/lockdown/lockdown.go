// Package lockdown puts the operating system between a capsule worker and
// the untrusted guest it is about to run.
//
// A worker calls Apply exactly once, after everything that needs the
// filesystem, new file descriptors or executable memory is done (reading
// and compiling the wasm module, instantiating host modules, wrapping its
// pipes in *os.File values) and before it reads a single byte of untrusted
// code. Apply stacks four independent layers, each of which would stop most
// escapes from a compromised wazero on its own:
//
//   - rlimits: CPU time (the hard limit's SIGKILL ends a runaway worker even
//     if every timer fails), no file writes, no core dumps, no new file
//     descriptors; plus PR_SET_DUMPABLE 0 so that no other process of the
//     same uid can ptrace the worker or read its /proc entries.
//   - no_new_privs on every thread: execve can never gain privileges, and it
//     is what allows an unprivileged process to install Landlock and seccomp.
//   - landlock on every thread: no filesystem access at all, no TCP bind or
//     connect, no abstract unix sockets or signals outside the worker.
//   - seccomp: a syscall allowlist for every thread, killing the whole
//     process on anything else.
//
// The package needs a pure-Go build (CGO_ENABLED=0): Go refuses
// syscall.AllThreadsSyscall in cgo binaries, and Landlock and
// no_new_privs are per thread.
package lockdown

import (
	"fmt"
	"strings"
	"time"
)

// Layer names, as used in Layer.Name.
const (
	// LayerRlimits covers the resource limits and PR_SET_DUMPABLE 0.
	LayerRlimits = "rlimits"
	// LayerNoNewPrivs is PR_SET_NO_NEW_PRIVS on every thread.
	LayerNoNewPrivs = "no_new_privs"
	// LayerLandlock is the Landlock domain with no rules on every thread.
	LayerLandlock = "landlock"
	// LayerSeccomp is the seccomp-bpf syscall allowlist.
	LayerSeccomp = "seccomp"
)

// Options configures Apply.
type Options struct {
	// CPUTime is the CPU time the guest may use: the execution timeout plus
	// a margin. It must be positive. Apply adds the CPU time the process
	// has already spent (compiling the module counts against RLIMIT_CPU)
	// and rounds up to whole seconds plus one, so a well-behaved run never
	// reaches the limit; the limit is only the backstop behind the worker's
	// own timer and the supervisor's kill.
	CPUTime time.Duration
	// Data, when positive, is RLIMIT_DATA: the most writable private
	// memory (heap, the guest's linear memory, stacks of threads) the
	// process may map. An allocation beyond it fails, which the Go
	// runtime turns into a fatal "out of memory": the backstop for
	// memory the host side of a runtime holds for a guest.
	Data uint64
}

// Report says which layers are in force (Apply) or would be (Probe).
type Report struct {
	// Layers holds one entry per layer, in the order they are applied:
	// rlimits, no_new_privs, landlock, seccomp.
	Layers []Layer
}

// Layer is the outcome of one lockdown layer.
type Layer struct {
	// Name is one of the Layer* constants.
	Name string
	// Active is true when the layer is in force (or, from Probe, would be).
	Active bool
	// Reason says what was applied, or why the layer is unavailable.
	Reason string
	// Duration is how long applying the layer took (zero from Probe).
	Duration time.Duration
}

// Missing returns the names of the layers that are not active, so that a
// caller can log one warning naming them or refuse to run.
func (r Report) Missing() []string {
	var out []string
	for _, l := range r.Layers {
		if !l.Active {
			out = append(out, l.Name)
		}
	}
	return out
}

// Complete reports whether every layer is active.
func (r Report) Complete() bool { return len(r.Layers) > 0 && len(r.Missing()) == 0 }

// Layer returns the layer with the given name.
func (r Report) Layer(name string) (Layer, bool) {
	for _, l := range r.Layers {
		if l.Name == name {
			return l, true
		}
	}
	return Layer{}, false
}

// String renders the report on one line, for logs and `capsule doctor`.
func (r Report) String() string {
	parts := make([]string, 0, len(r.Layers))
	for _, l := range r.Layers {
		state := "active"
		if !l.Active {
			state = "unavailable"
		}
		parts = append(parts, fmt.Sprintf("%s: %s (%s)", l.Name, state, l.Reason))
	}
	return strings.Join(parts, "; ")
}
