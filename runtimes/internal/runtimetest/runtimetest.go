// Package runtimetest holds what the runtimes' tests share.
package runtimetest

import (
	"context"
	"testing"

	"capsule/runtimes"
	"capsule/runtimes/provenance"
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

// CheckProvenance fails unless the runtime's provenance loads (every file
// its build recorded in dist/ASSETS is embedded, and the reverse), its
// embedded files match the recorded hashes, and each of components is
// recorded with a version and a pinning hash.
func CheckProvenance(t *testing.T, get func() (provenance.Runtime, error), components ...string) {
	t.Helper()
	r, err := get()
	if err != nil {
		t.Fatal(err)
	}
	for _, err := range r.Verify() {
		t.Error(err)
	}
	for _, name := range components {
		found := false
		for _, c := range r.Components {
			found = found || (c.Name == name && c.Version != "" && c.SHA256 != "")
		}
		if !found {
			t.Errorf("component %s not recorded with a version and hash: %+v", name, r.Components)
		}
	}
}
