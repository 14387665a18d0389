// Package runtimetest holds what the runtimes' tests share.
package runtimetest

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"

	"capsule/runtimes"
	"capsule/runtimes/fileset"
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

// Compiler is a runtime's Compile function.
type Compiler func(context.Context, runtimes.Config) (runtimes.Engine, error)

// Restored compiles an engine that starts every instance from an
// interpreter snapshot, as workers do: a first engine, started cold, writes
// the snapshot to a file that is removed at once (its descriptor keeps it),
// then the returned engine is compiled with it. Runtime tests use it so
// that they test what workers run.
func Restored(compile Compiler, cfg runtimes.Config) (runtimes.Engine, error) {
	ctx := context.Background()
	cold, err := compile(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer cold.Close(ctx)
	f, err := os.CreateTemp("", "capsule-snapshot-test-")
	if err != nil {
		return nil, err
	}
	os.Remove(f.Name())
	const key = "test"
	if err := cold.(runtimes.Snapshotter).WriteSnapshot(ctx, f, key); err != nil {
		f.Close()
		return nil, err
	}
	cfg.Snapshot, cfg.SnapshotKey = f, key
	return compile(ctx, cfg)
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

// Listed lists returned files as PATH:SIZE, marked b for bytes and * for
// truncated, space-separated, for tests to compare.
func Listed(files []fileset.File) string {
	parts := make([]string, 0, len(files))
	for _, f := range files {
		p := f.Path + ":" + strconv.FormatInt(f.Len(), 10)
		if f.Binary {
			p += "b"
		}
		if f.Truncated {
			p += "*"
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, " ")
}
