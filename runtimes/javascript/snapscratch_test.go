package javascript

import (
	"context"
	"os"
	"testing"

	"capsule/runtimes"
)

func TestSnapshotRoundTripScratch(t *testing.T) {
	ctx := context.Background()
	eng, err := Compile(ctx, runtimes.Config{MemoryLimitBytes: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.CreateTemp(t.TempDir(), "img")
	if err != nil {
		t.Fatal(err)
	}
	if err := eng.(runtimes.Snapshotter).WriteSnapshot(ctx, f, "k"); err != nil {
		t.Fatal(err)
	}
	st, _ := f.Stat()
	t.Logf("image %d bytes", st.Size())
	for i := 0; i < 2; i++ {
		eng2, err := Compile(ctx, runtimes.Config{MemoryLimitBytes: 64 << 20, Snapshot: f, SnapshotKey: "k"})
		if err != nil {
			t.Fatal(err)
		}
		var out testWriter
		inst, err := eng2.Prepare(ctx, runtimes.Streams{Stdout: &out, Stderr: &out})
		if err != nil {
			t.Fatal(err)
		}
		o := inst.Run(ctx, runtimes.Request{Code: "console.log('hi', [1,2]); Math.random()"})
		t.Logf("%s %s %+v", out, o.Result, o.Error)
	}
}

type testWriter []byte

func (w *testWriter) Write(p []byte) (int, error) { *w = append(*w, p...); return len(p), nil }
func (w testWriter) String() string               { return string(w) }
