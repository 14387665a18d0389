// Package runtimetest holds what the runtimes' tests share.
package runtimetest

import (
	"context"
	"testing"

	"capsule/runtimes"
)

// BenchmarkRun measures what one execution of code costs a worker whose
// engine is compiled: a fresh instance, the interpreter's start-up, and the
// code, whose result must be want.
func BenchmarkRun(b *testing.B, e runtimes.Engine, code, want string) {
	ctx := context.Background()
	for b.Loop() {
		inst, err := e.Prepare(ctx, runtimes.Streams{})
		if err != nil {
			b.Fatal(err)
		}
		if o := inst.Run(ctx, runtimes.Request{Code: code}); string(o.Result) != want {
			b.Fatalf("outcome %+v", o)
		}
		_ = inst.Close(ctx)
	}
}
