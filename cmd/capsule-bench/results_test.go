package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestWriteResults: -out writes each run's report to a dated file of its
// own, in UTC, made in a directory created if need be, and never
// overwrites an earlier run's file.
func TestWriteResults(t *testing.T) {
	date := time.Date(2026, 12, 3, 18, 41, 7, 0, time.FixedZone("CET", 3600))
	dir := filepath.Join(t.TempDir(), "docs", "bench")
	r := &report{date: date, machine: machine{CPUs: 2, CPU: "test CPU", Kernel: "test kernel"},
		loadBefore: "0.10 0.20 0.30", loadAfter: "0.40 0.50 0.60"}

	for _, want := range []string{"results-2026-12-03-1741.md", "results-2026-12-03-1741-2.md", "results-2026-12-03-1741-3.md"} {
		path, err := r.writeResults(dir)
		if err != nil {
			t.Fatal(err)
		}
		if filepath.Base(path) != want {
			t.Errorf("wrote %s, want %s", filepath.Base(path), want)
		}
	}
	first, err := os.ReadFile(filepath.Join(dir, "results-2026-12-03-1741.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"# capsule-bench results, 2026-12-03 17:41 UTC\n",
		"## Benchmarks\n",
		"- machine: 2 CPUs, test CPU, test kernel\n",
		"at the start: 0.10 0.20 0.30; at the end: 0.40 0.50 0.60",
	} {
		if !strings.Contains(string(first), want) {
			t.Errorf("the report file lacks %q:\n%s", want, first)
		}
	}

	// A directory that cannot be made is an error that says what to do.
	blocker := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(blocker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := r.writeResults(filepath.Join(blocker, "bench")); err == nil || !strings.Contains(err.Error(), "-out") {
		t.Errorf("writing under a file: err = %v, want an error naming -out", err)
	}
}

func TestOutFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, ""},
		{[]string{"-out", "docs/bench"}, "docs/bench"},
	} {
		o, err := parseFlags(tc.args)
		if err != nil {
			t.Fatalf("%q: %v", tc.args, err)
		}
		if o.out != tc.want {
			t.Errorf("%q: out = %q, want %q", tc.args, o.out, tc.want)
		}
	}
}
