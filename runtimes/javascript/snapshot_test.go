package javascript

import (
	"bytes"
	"context"
	"testing"
	"time"

	"capsule/runtimes"
)

// TestColdStart runs code in an instance that started QuickJS itself, as
// the snapshot worker's does; every other test runs restored instances.
func TestColdStart(t *testing.T) {
	e, err := Compile(context.Background(), runtimes.Config{MemoryLimitBytes: testLimit})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(context.Background())
	var stdout bytes.Buffer
	inst, err := e.Prepare(context.Background(), runtimes.Streams{Stdout: &stdout})
	if err != nil {
		t.Fatal(err)
	}
	defer inst.Close(context.Background())
	o := inst.Run(context.Background(), runtimes.Request{Code: "console.log('hi', [1, 2]); 6 * 7"})
	if string(o.Result) != "42" || stdout.String() != "hi [ 1, 2 ]\n" || o.Error != nil {
		t.Fatalf("outcome %+v, stdout %q", o, stdout.String())
	}
}

// TestRestoredRandom checks that instances restored from one snapshot draw
// different Math.random sequences: the snapshot holds the seed QuickJS
// took, and restoring replaces it.
func TestRestoredRandom(t *testing.T) {
	seen := map[string]bool{}
	for range 4 {
		o, _, _ := run(t, "[Math.random(), Math.random()]", nil, 5*time.Second)
		if o.Error != nil {
			t.Fatal(o.Error)
		}
		if seen[string(o.Result)] {
			t.Fatalf("two restored instances drew the same numbers %s", o.Result)
		}
		seen[string(o.Result)] = true
	}
}
