package python

import (
	"context"
	"testing"
	"time"

	"capsule/runtimes"
)

// TestColdStart runs code in an instance that started CPython itself, as
// the snapshot worker's does; every other test runs restored instances.
func TestColdStart(t *testing.T) {
	e, err := Compile(context.Background(), runtimes.Config{MemoryLimitBytes: 256 << 20, CacheDir: cacheDir})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(context.Background())
	var stdout syncBuffer
	inst, err := e.Prepare(context.Background(), runtimes.Streams{Stdout: &stdout})
	if err != nil {
		t.Fatal(err)
	}
	defer inst.Close(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	o := inst.Run(ctx, runtimes.Request{Code: "import json\nprint('hi')\njson.dumps([6 * 7])"})
	if string(o.Result) != `"[42]"` || stdout.String() != "hi\n" || o.Error != nil {
		t.Fatalf("outcome %+v, stdout %q", o, stdout.String())
	}
}

// TestRestoredRandom checks that instances restored from one snapshot, in
// which the random module is already imported, draw different numbers.
func TestRestoredRandom(t *testing.T) {
	e := engineWithLimit(t, 256<<20)
	seen := map[string]bool{}
	for range 4 {
		inst, err := e.Prepare(context.Background(), runtimes.Streams{})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		o := inst.Run(ctx, runtimes.Request{Code: "import random\n[random.random(), random.getrandbits(64)]"})
		cancel()
		inst.Close(context.Background())
		if o.Error != nil {
			t.Fatal(o.Error)
		}
		if seen[string(o.Result)] {
			t.Fatalf("two restored instances drew the same numbers %s", o.Result)
		}
		seen[string(o.Result)] = true
	}
}
