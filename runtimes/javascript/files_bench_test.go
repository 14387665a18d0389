package javascript

import (
	"context"
	"strings"
	"testing"
	"time"

	"capsule/runtimes"
	"capsule/runtimes/fileset"
	"capsule/runtimes/internal/runtimetest"
)

// BenchmarkFilesInOut runs the bench's files row in the runtime alone: a
// 5 MiB CSV received, passed in and returned as it is (go test -bench
// FilesInOut ./runtimes/javascript).
func BenchmarkFilesInOut(b *testing.B) {
	e, err := runtimetest.Restored(Compile, runtimes.Config{MemoryLimitBytes: 256 << 20,
		FilesOut: fileset.Limits{MaxBytes: 8 << 20, MaxFiles: 4}})
	if err != nil {
		b.Fatal(err)
	}
	csv := []byte(strings.Repeat("1234,customer 17,12.50,2026-01-02\n", 5<<20/34))
	b.SetBytes(int64(len(csv)))
	for b.Loop() {
		b.StopTimer()
		in, _, _ := testInstance(b, e.(*engine))
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		b.StartTimer()
		// Received as the worker receives it (ipc.ReadFiles).
		files := []fileset.File{{Path: "data.csv", Data: append(in.FileBuffer(int64(len(csv)), false), csv...)}}
		o := in.Run(ctx, runtimes.Request{Code: "outputs['out.csv'] = files['data.csv']; 1", Files: files})
		cancel()
		if o.Error != nil || len(o.Files) != 1 || len(o.Files[0].Data) != len(csv) {
			b.Fatalf("error %+v, files %d", o.Error, len(o.Files))
		}
	}
}
