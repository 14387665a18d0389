//go:build capsule_faults

package worker

import (
	"context"
	"os"
	"strings"
	"time"

	"capsule/ipc"
	"capsule/runtimes"
	"capsule/runtimes/memprobe"
)

// The fault switch lets tests make a worker misbehave on purpose. It is
// compiled only with the capsule_faults build tag, which production builds
// never set. The fault is chosen by the code's first line.
const faultPrefix = "#capsule-fault:"

// fault returns the fault a piece of code asks for and the code after it.
func fault(code string) (name, rest string) {
	if !strings.HasPrefix(code, faultPrefix) {
		return "", code
	}
	name, rest, _ = strings.Cut(code[len(faultPrefix):], "\n")
	return strings.TrimSpace(name), rest
}

// injectFault acts on the faults that end the worker instead of running the
// code.
func injectFault(code string, out *ipc.Writer) {
	name, _ := fault(code)
	switch name {
	case "oversized-frame":
		_ = out.WriteFrame(ipc.TypeStdout, make([]byte, 64<<20))
	case "malformed-frame":
		_ = out.WriteFrame(ipc.TypeDone, []byte(`{"result":`))
	case "unknown-frame":
		_ = out.WriteFrame(ipc.Type('Z'), []byte("{}"))
	case "never-answer":
		for {
			time.Sleep(time.Hour)
		}
	case "crash":
		os.Exit(7)
	default:
		return
	}
	os.Exit(0)
}

// startDelayEnv names a fixed delay a worker sleeps through before it says
// it is ready (a Go duration), as if its start took that much longer
// without using the CPU: the pool's tests see how starts overlap on any
// machine. The server passes it on from its own environment
// (supervisor/faults.go).
const startDelayEnv = "CAPSULE_FAULT_START_DELAY"

// delayStart sleeps for the start delay asked for, if any.
func delayStart() {
	if d, err := time.ParseDuration(os.Getenv(startDelayEnv)); err == nil && d > 0 {
		time.Sleep(d)
	}
}

// probe is the memory probe (runtimes/memprobe), compiled like the worker's
// runtime and before the lockdown, for the "memory" fault.
var probe runtimes.Engine

// prepareFaults compiles what the faults need while compiling is allowed.
func prepareFaults(ctx context.Context, cfg runtimes.Config) error {
	cfg.CompiledImage, cfg.ImageWriter = nil, nil // those are the runtime's own module's
	var err error
	probe, err = memprobe.Compile(ctx, cfg)
	return err
}

// probeMemory runs, for the "memory" fault, the rest of the code on the
// memory probe instead of the runtime, in the locked-down worker and with
// its streams, and returns the outcome for the worker to answer with.
func probeMemory(ctx context.Context, code string, streams runtimes.Streams) (runtimes.Outcome, bool) {
	name, rest := fault(code)
	if name != "memory" {
		return runtimes.Outcome{}, false
	}
	inst, err := probe.Prepare(ctx, streams)
	if err != nil {
		return runtimes.Outcome{Error: &runtimes.ErrorInfo{Type: "RuntimeError", Message: err.Error()}}, true
	}
	return inst.Run(ctx, runtimes.Request{Code: rest}), true
}
