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

// testFilesOut bounds the test engine's returned files.
var testFilesOut = fileset.Limits{MaxBytes: 1 << 20, MaxFiles: 4}

func runFiles(t *testing.T, code string, files []fileset.File, timeout time.Duration) runtimes.Outcome {
	t.Helper()
	in, _, _ := testInstance(t, testEngine(t))
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return in.Run(ctx, runtimes.Request{Code: code, Files: files})
}

func TestFilesIn(t *testing.T) {
	files := []fileset.File{
		{Path: "__proto__", Data: []byte("not a prototype")},
		{Path: "a.bin", Data: []byte{0, 1, 255}, Binary: true},
		{Path: "data.csv", Data: []byte("x,y\n1,2\n3,4\n")},
		{Path: "in/nul.txt", Data: []byte("a\x00b\x00")},
		{Path: "ü.txt", Data: []byte("grüße 🙂")},
	}
	code := `const rows = files['data.csv'].trim().split('\n').slice(1).map(l => l.split(',').map(Number));
const b = files['a.bin'];
[rows.reduce((s, r) => s + r[1], 0), b instanceof Uint8Array, Array.from(b), files['in/nul.txt'] === 'a\0b\0',
 files['__proto__'], Object.getPrototypeOf(files) === Object.prototype, Object.isFrozen(files), files['ü.txt'],
 Object.keys(files).length, (() => { 'use strict'; try { files.x = 1; return 'mutable'; } catch (e) { return e.name; } })()]`
	o := runFiles(t, code, files, 5*time.Second)
	want := `[6,true,[0,1,255],true,"not a prototype",true,true,"grüße 🙂",5,"TypeError"]`
	if o.Error != nil || string(o.Result) != want {
		t.Fatalf("result %s, error %+v; want %s", o.Result, o.Error, want)
	}
	// Without files there is no global of that name: code may use it.
	o = runFiles(t, "let files = 3; typeof globalThis.files + files", nil, 5*time.Second)
	if o.Error != nil || string(o.Result) != `"undefined3"` {
		t.Fatalf("result %s, error %+v", o.Result, o.Error)
	}
}

// TestFilesReceivedInGuest: files received into the buffers FileBuffer
// hands out, as the worker receives them, reach the code as the same
// values: ASCII text in place, other text converted, bytes in place.
func TestFilesReceivedInGuest(t *testing.T) {
	in, _, _ := testInstance(t, testEngine(t))
	files := []fileset.File{
		{Path: "a.bin", Data: []byte{0, 1, 255}, Binary: true},
		{Path: "ascii.csv", Data: []byte("x,y\n1,2\n\x00\n")},
		{Path: "empty.txt", Data: []byte{}},
		{Path: "wide.txt", Data: []byte("grüße 🙂")},
	}
	for i, f := range files {
		b := in.FileBuffer(int64(len(f.Data)), f.Binary)
		if len(f.Data) > 0 && (b == nil || cap(b) != len(f.Data)) {
			t.Fatalf("%s: FileBuffer gave %d bytes of room", f.Path, cap(b))
		}
		files[i].Data = append(b, f.Data...)
	}
	code := `[Array.from(files['a.bin']), files['ascii.csv'] === 'x,y\n1,2\n\0\n', files['empty.txt'], files['wide.txt']]`
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	o := in.Run(ctx, runtimes.Request{Code: code, Files: files})
	if want := `[[0,1,255],true,"","grüße 🙂"]`; o.Error != nil || string(o.Result) != want {
		t.Fatalf("result %s, error %+v; want %s", o.Result, o.Error, want)
	}
}

func TestOutputs(t *testing.T) {
	tests := []struct {
		name  string
		code  string
		files string // as runtimetest.Listed lists them
		err   string
		limit string
		data  map[string]string
	}{
		{name: "none", code: "1"},
		{name: "text and bytes, in path order",
			code: `outputs['z.txt'] = 'zz'; outputs['a/b.csv'] = 'x,y\n'; outputs['a-b'] = new Uint8Array([1, 2, 3]);
outputs['v.bin'] = new Uint16Array([1, 2]).subarray(1); outputs['d.bin'] = new DataView(new ArrayBuffer(8), 2, 3); outputs['ab'] = new ArrayBuffer(2)`,
			files: "a/b.csv:4 a-b:3b ab:2b d.bin:3b v.bin:2b* z.txt:2*", limit: "",
			data: map[string]string{"a/b.csv": "x,y\n", "a-b": "\x01\x02\x03", "d.bin": "\x00\x00\x00"}},
		{name: "a plain object in its place", code: `outputs = {'r.json': '{}'}`, files: "r.json:2"},
		{name: "a variable of that name", code: `var outputs = [1, 2]`},
		{name: "a lexical variable of that name", code: `const outputs = {'x': 'y'}; outputs.x`},
		{name: "NUL and lone surrogates", code: `outputs['t.txt'] = 'a\0b\ud800c'`, files: "t.txt:7", data: map[string]string{"t.txt": "a\x00b\uFFFDc"}},
		{name: "wide text ending in NULs", code: `outputs['u.txt'] = '\u00e9\u20ac\ud83d\ude00\udc00\0\0'`, files: "u.txt:14",
			data: map[string]string{"u.txt": "é€😀\uFFFD\x00\x00"}},
		{name: "after an exception", code: `outputs['p.txt'] = 'partial'; throw new Error('boom')`, files: "p.txt:7", err: "boom"},
		{name: "bad paths and values", code: `outputs['../x'] = 'a'; outputs['n'] = 42; outputs['ok'] = 'y'; outputs['a'] = 'f'; outputs['a/b'] = 'g'; outputs['nul\0'] = 'x'`,
			files: "a:1 ok:1", err: `outputs: not returned: file "../x": the path contains ".."; file "a/b": the path is inside "a", which is a file; file "n": the content must be a string or a Uint8Array, got number; file "nul\\0": the path contains a NUL byte`},
		{name: "a getter", code: `Object.defineProperty(outputs, 'g', {get() { throw new Error('called') }, enumerable: true})`, err: `file "g": the content is behind a getter`},
		{name: "after the deadline", code: `outputs['late.txt'] = 'before'; while (true) {}`, files: "late.txt:6", err: "timeout", limit: runtimes.LimitTimeout},
		{name: "a proxy that never answers", code: `outputs = new Proxy({}, {ownKeys() { while (true) {} }}); 0`, err: "outputs: could not be read"},
		{name: "a looping proxy in its place", code: `globalThis.outputs = new Proxy({}, {getPrototypeOf() { while (true) {} }}); 0`, err: "outputs: could not be read"},
		// Names that show as something else are refused (issue 32).
		{name: "names that lie", code: "outputs['inv\\u202etxt.exe'] = 'a'; outputs['a\\u200bb'] = 'b'; outputs['l\\u2028'] = 'c'; outputs['ok.txt'] = 'd'",
			files: "ok.txt:1", err: `file "a\u200bb": the path contains an invisible character (U+200B)`},
		// What the code did to its globals does not change what is collected
		// (issue 32; test262's built-ins/global/property-descriptor.js).
		{name: "globalThis deleted", code: `outputs['a.txt'] = 'x'; delete globalThis; 1 + 1`, files: "a.txt:1"},
		{name: "globalThis replaced", code: `outputs['a.txt'] = 'x'; globalThis = {outputs: {'b.txt': 'y'}}; 0`, files: "a.txt:1"},
		{name: "Array.prototype setters", code: `outputs['a.txt'] = 'x'; outputs['b.txt'] = 'y';
for (let i = 0; i < 8; i++) Object.defineProperty(Array.prototype, i, {set() {}, get() { return 'z' }}); 0`, files: "a.txt:1 b.txt:1"},
		{name: "ArrayBuffer species", code: `outputs['a.bin'] = new Uint8Array([1, 2]); outputs['b.bin'] = new ArrayBuffer(3);
class Big extends ArrayBuffer { constructor() { super(1000) } }
Object.defineProperty(ArrayBuffer, Symbol.species, {get() { return Big }}); 0`, files: "a.bin:2b b.bin:3b"},
		{name: "outputs behind a getter", code: `Object.defineProperty(globalThis, 'outputs', {get() { throw new Error('called') }}); 0`,
			err: "outputs: could not be read: the global outputs is a getter"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := runFiles(t, tt.code, nil, 2*time.Second)
			if got := runtimetest.Listed(o.Files); got != tt.files {
				t.Errorf("files %q, want %q", got, tt.files)
			}
			if (tt.err == "") != (o.Error == nil) || (o.Error != nil && !strings.Contains(o.Error.Message, tt.err)) {
				t.Errorf("error %+v, want one containing %q", o.Error, tt.err)
			}
			if o.Limit != tt.limit {
				t.Errorf("limit %q, want %q", o.Limit, tt.limit)
			}
			for _, f := range o.Files {
				if want, ok := tt.data[f.Path]; ok && string(f.Data) != want {
					t.Errorf("%s holds %q, want %q", f.Path, f.Data, want)
				}
			}
		})
	}
}
