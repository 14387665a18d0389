package python

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"capsule/runtimes"
	"capsule/runtimes/fileset"
	"capsule/runtimes/internal/runtimetest"
)

// testFilesOut bounds the test engines' returned files.
var testFilesOut = fileset.Limits{MaxBytes: 1 << 20, MaxFiles: 4}

// runFiles runs code with files passed in, under timeout.
func runFiles(t *testing.T, code string, files []fileset.File, timeout time.Duration) runtimes.Outcome {
	t.Helper()
	e := engineWithLimit(t, defaultLimit)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	inst, err := e.Prepare(ctx, runtimes.Streams{})
	if err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	defer inst.Close(ctx)
	return inst.Run(ctx, runtimes.Request{Code: code, Files: files})
}

func TestFilesIn(t *testing.T) {
	png := []byte("\x89PNG\r\n\x1a\n\x00\xff")
	files := []fileset.File{
		{Path: "data.csv", Data: []byte("x,y\n1,2\n3,4\n")},
		{Path: "in/deep/a.bin", Data: png, Binary: true},
	}
	code := `import csv, os
rows = list(csv.DictReader(open('data.csv')))
[sum(int(r['y']) for r in rows), open('/tmp/in/deep/a.bin', 'rb').read() == ` + pyBytes(png) + `, sorted(os.listdir('.'))]`
	o := runFiles(t, code, files, time.Minute)
	if o.Error != nil || string(o.Result) != `[6, true, ["data.csv", "in", "outputs"]]` {
		t.Fatalf("result %s, error %+v", o.Result, o.Error)
	}
}

func pyBytes(b []byte) string {
	var s strings.Builder
	s.WriteString("b'")
	for _, c := range b {
		s.WriteString(`\x`)
		s.WriteByte("0123456789abcdef"[c>>4])
		s.WriteByte("0123456789abcdef"[c&15])
	}
	s.WriteString("'")
	return s.String()
}

// TestFilesInOverScratch passes in more than the scratch directory holds:
// nothing runs, and the answer names the scratch limit.
func TestFilesInOverScratch(t *testing.T) {
	o := runFiles(t, "print('ran')", []fileset.File{{Path: "big", Data: make([]byte, testScratch)}}, time.Minute)
	if o.Limit != runtimes.LimitScratch || o.Error == nil || !strings.Contains(o.Error.Message, "scratch: the files passed in") {
		t.Fatalf("outcome %+v %+v", o, o.Error)
	}
}

func TestOutputs(t *testing.T) {
	tests := []struct {
		name  string
		code  string
		files string // as runtimetest.Listed lists them
		err   string // in the error's message, "" for none
		limit string
	}{
		{name: "none", code: "1"},
		{name: "in path order", code: `import os
os.makedirs('outputs/a/b')
for p in ['z.txt', 'a/b/c.csv', 'a-b.txt', 'a/x.bin']:
    open('outputs/' + p, 'w').write(p)`, files: "a/b/c.csv:9 a/x.bin:7 a-b.txt:7 z.txt:5"},
		{name: "after an exception", code: "open('outputs/r.txt', 'w').write('partial')\nraise ValueError('boom')", files: "r.txt:7", err: "boom"},
		{name: "after SystemExit", code: "open('outputs/r.txt', 'w').write('x')\nraise SystemExit(3)", files: "r.txt:1"},
		{name: "over the byte limit", code: "open('outputs/a', 'wb').write(bytes(900 << 10))\nopen('outputs/b', 'wb').write(bytes(200 << 10))\nopen('outputs/c', 'wb').write(bytes(100 << 10))",
			files: "a:921600 b:204800* c:102400"},
		{name: "over the count", code: "for i in range(6):\n    open('outputs/%d' % i, 'w').write('x')", files: "0:1 1:1 2:1 3:1 4:1* 5:1*"},
		{name: "too deep", code: "import os\nos.makedirs('outputs/1/2/3/4/5/6/7/8')\nopen('outputs/1/2/3/4/5/6/7/8/x', 'w').write('x')\nopen('outputs/1/2/3/4/5/6/7/y', 'w').write('y')",
			files: "1/2/3/4/5/6/7/y:1", err: `outputs: not returned: file "1/2/3/4/5/6/7/8/": files in this directory would be more than 8 levels`},
		{name: "outputs replaced by a file", code: "import os\nos.rmdir('outputs')\nopen('outputs', 'w').write('x')"},
		{name: "empty file", code: "open('outputs/e', 'w')", files: "e:0"},
		// Names that show as something else are refused (issue 32).
		{name: "names that lie", code: "import os\nos.makedirs('outputs/d\\u202e')\nfor p in ['inv\\u202etxt.exe', 'a\\u200bb', 'l\\u2028', 'n\\x85', 'd\\u202e/x', 'ok.txt']:\n    open('outputs/' + p, 'w').write('x')",
			files: "ok.txt:1", err: `file "a\u200bb": the path contains an invisible character (U+200B)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := runFiles(t, tt.code, nil, time.Minute)
			if got := runtimetest.Listed(o.Files); got != tt.files {
				t.Errorf("files %q, want %q", got, tt.files)
			}
			if (tt.err == "") != (o.Error == nil) || (o.Error != nil && !strings.Contains(o.Error.Message, tt.err)) {
				t.Errorf("error %+v, want one containing %q", o.Error, tt.err)
			}
			for _, f := range o.Files {
				if !f.Truncated && int64(len(f.Data)) != f.Len() {
					t.Errorf("%s: %d bytes of data", f.Path, len(f.Data))
				}
			}
		})
	}
}

// TestOutputsContent checks that what comes back is what was written.
func TestOutputsContent(t *testing.T) {
	o := runFiles(t, "import zlib\nopen('outputs/t.csv', 'w').write('a,b\\n1,2\\n')\nopen('outputs/z.bin', 'wb').write(zlib.compress(b'x' * 1000))",
		nil, time.Minute)
	if len(o.Files) != 2 || string(o.Files[0].Data) != "a,b\n1,2\n" || !bytes.HasPrefix(o.Files[1].Data, []byte{0x78}) {
		t.Fatalf("files %+v, error %+v", o.Files, o.Error)
	}
}

// TestOutputsAfterTimeout checks that a run stopped at its deadline still
// returns what it wrote before.
func TestOutputsAfterTimeout(t *testing.T) {
	o := runFiles(t, "import time\nopen('outputs/progress.txt', 'w').write('step 1')\ntime.sleep(3)", nil, 500*time.Millisecond)
	if o.Limit != runtimes.LimitTimeout || runtimetest.Listed(o.Files) != "progress.txt:6" || string(o.Files[0].Data) != "step 1" {
		t.Fatalf("limit %q, files %q", o.Limit, runtimetest.Listed(o.Files))
	}
}
