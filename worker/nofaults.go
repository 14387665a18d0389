//go:build !capsule_faults

package worker

import (
	"context"

	"capsule/ipc"
	"capsule/runtimes"
)

// prepareFaults, injectFault, probeMemory and delayStart do nothing in
// production builds; see faults.go.
func prepareFaults(context.Context, runtimes.Config) error { return nil }

func injectFault(string, *ipc.Writer) {}

func probeMemory(context.Context, string, runtimes.Streams) (runtimes.Outcome, bool) {
	return runtimes.Outcome{}, false
}

func delayStart() {}
