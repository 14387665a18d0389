package memprobe

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"capsule/runtimes"
)

// TestRun: the probe's little language, as the end-to-end test speaks it.
func TestRun(t *testing.T) {
	ctx := context.Background()
	e, err := Compile(ctx, runtimes.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(ctx)
	for _, tt := range []struct {
		name, code          string
		result, stdout, err string
	}{
		{"load at the end", "print hi\ni32.store offset=1 65531\ni32.load offset=0 65532", "287454020", "hi\n", ""},
		{"one past", "print before\ni32.load offset=0 65533", "", "before\n", "RuntimeError: the probe crashed: wasm error: out of bounds memory access"},
		{"after a growth", "grow 1\nv128.store offset=65536 65520\nv128.load offset=65536 65520", "7378413942531504440", "", ""},
		{"beyond it", "grow 1\ni32.load8_u offset=0 131072", "", "", "RuntimeError: the probe crashed: wasm error: out of bounds memory access"},
		{"the top", "i64.store offset=4294967295 4294967295", "", "", "RuntimeError: the probe crashed: wasm error: out of bounds memory access"},
		{"no such function", "i32.load offset=3 0", "", "", `ValueError: the probe has no function "i32.load offset=3"`},
		{"bad address", "i32.load offset=0 x", "", "", "ValueError"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var stdout bytes.Buffer
			inst, err := e.Prepare(ctx, runtimes.Streams{Stdout: &stdout})
			if err != nil {
				t.Fatal(err)
			}
			defer inst.Close(ctx)
			o := inst.Run(ctx, runtimes.Request{Code: tt.code})
			gotErr := ""
			if o.Error != nil {
				gotErr = o.Error.Type + ": " + o.Error.Message
			}
			if string(o.Result) != tt.result || stdout.String() != tt.stdout || !strings.HasPrefix(gotErr, tt.err) || (tt.err == "") != (gotErr == "") {
				t.Errorf("result %s, stdout %q, error %q; want %s, %q, %q", o.Result, stdout.String(), gotErr, tt.result, tt.stdout, tt.err)
			}
		})
	}
}
