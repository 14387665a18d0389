package python

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"capsule/runtimes"
	"capsule/runtimes/internal/runtimetest"
)

// Engines are compiled once per limit (and bundle setting) and shared: a
// cold compile takes seconds, and the file cache makes the second one
// cheap. Like workers, they start every instance from an interpreter
// snapshot (TestColdStart covers the start-up that makes one), and have the
// bundled packages unless a test asks for none.
var (
	enginesMu sync.Mutex
	engines   = map[engineKey]runtimes.Engine{}
	cacheDir  string
)

type engineKey struct {
	limit   uint64
	bundled bool
	variant string
	// bare starts the variant's module with the plain interpreter's
	// program, without its imports: for a variant with its own module,
	// what a call that imports the packages itself would run on.
	bare bool
}

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "capsule-python-test-")
	if err != nil {
		panic(err)
	}
	cacheDir = dir
	code := m.Run()
	for _, e := range engines {
		_ = e.Close(context.Background())
	}
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

func engineWithLimit(tb testing.TB, limit uint64) runtimes.Engine {
	tb.Helper()
	return sharedEngine(tb, engineKey{limit: limit, bundled: true})
}

func sharedEngine(tb testing.TB, key engineKey) runtimes.Engine {
	tb.Helper()
	enginesMu.Lock()
	defer enginesMu.Unlock()
	if e, ok := engines[key]; ok {
		return e
	}
	compile := Compile
	if key.bare {
		compile = func(ctx context.Context, cfg runtimes.Config) (runtimes.Engine, error) {
			e, err := Compile(ctx, cfg)
			if err == nil {
				e.(*engine).program = bootstrap
			}
			return e, err
		}
	}
	e, err := runtimetest.Restored(compile, runtimes.Config{MemoryLimitBytes: key.limit, CacheDir: cacheDir,
		ScratchBytes: testScratch, FilesOut: testFilesOut, BundledPackages: key.bundled, Variant: key.variant})
	if err != nil {
		tb.Fatalf("Compile: %v", err)
	}
	engines[key] = e
	return e
}

type result struct {
	runtimes.Outcome
	stdout, stderr string
}

// syncBuffer is a bytes.Buffer safe for the guest goroutine to write while
// the test reads it afterwards.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func run(tb testing.TB, limit uint64, code string, inputs json.RawMessage) result {
	tb.Helper()
	return runIn(tb, engineWithLimit(tb, limit), code, inputs)
}

// runIn runs code in a fresh instance of e.
func runIn(tb testing.TB, e runtimes.Engine, code string, inputs json.RawMessage) result {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var stdout, stderr syncBuffer
	inst, err := e.Prepare(ctx, runtimes.Streams{Stdout: &stdout, Stderr: &stderr})
	if err != nil {
		tb.Fatalf("Prepare: %v", err)
	}
	out := inst.Run(ctx, runtimes.Request{Code: code, Inputs: inputs})
	if err := inst.Close(ctx); err != nil {
		tb.Fatalf("Close: %v", err)
	}
	return result{Outcome: out, stdout: stdout.String(), stderr: stderr.String()}
}

const defaultLimit = 256 << 20

// testScratch is the test engines' scratch directory size.
const testScratch = 8 << 20

func TestRun(t *testing.T) {
	type check func(t *testing.T, r result)
	resultIs := func(want string) check {
		return func(t *testing.T, r result) {
			t.Helper()
			if r.Error != nil {
				t.Fatalf("unexpected error %+v\nstderr: %s", *r.Error, r.stderr)
			}
			if string(r.Result) != want {
				t.Fatalf("result = %s, want %s", r.Result, want)
			}
		}
	}
	noResult := func(t *testing.T, r result) {
		t.Helper()
		if r.Error != nil {
			t.Fatalf("unexpected error %+v\nstderr: %s", *r.Error, r.stderr)
		}
		if r.Result != nil || r.ResultType != "" || r.ResultRepr != "" {
			t.Fatalf("result = %s (type %q, repr %q), want none", r.Result, r.ResultType, r.ResultRepr)
		}
	}
	// valueIs checks all three parts of a result; json "" is none.
	valueIs := func(json, typ, repr string) check {
		return func(t *testing.T, r result) {
			t.Helper()
			if r.Error != nil {
				t.Fatalf("unexpected error %+v\nstderr: %s", *r.Error, r.stderr)
			}
			if string(r.Result) != json || r.ResultType != typ || r.ResultRepr != repr {
				t.Fatalf("result = %s, type %q, repr %q; want %s, %q, %q", r.Result, r.ResultType, r.ResultRepr, json, typ, repr)
			}
		}
	}
	errorIs := func(typ, msgContains string, tbContains ...string) check {
		return func(t *testing.T, r result) {
			t.Helper()
			if r.Error == nil {
				t.Fatalf("no error; result %s stdout %q stderr %q", r.Result, r.stdout, r.stderr)
			}
			if r.Error.Type != typ || !strings.Contains(r.Error.Message, msgContains) {
				t.Fatalf("error = %q: %q, want %q containing %q\n%s", r.Error.Type, r.Error.Message, typ, msgContains, r.Error.Traceback)
			}
			for _, s := range tbContains {
				if !strings.Contains(r.Error.Traceback, s) {
					t.Fatalf("traceback lacks %q:\n%s", s, r.Error.Traceback)
				}
			}
			if r.Result != nil {
				t.Fatalf("result %s alongside an error", r.Result)
			}
		}
	}
	stdoutIs := func(want string) check {
		return func(t *testing.T, r result) {
			t.Helper()
			if r.stdout != want {
				t.Fatalf("stdout = %q, want %q", r.stdout, want)
			}
		}
	}
	stderrHas := func(want string) check {
		return func(t *testing.T, r result) {
			t.Helper()
			if !strings.Contains(r.stderr, want) {
				t.Fatalf("stderr = %q, want it to contain %q", r.stderr, want)
			}
		}
	}
	exitIs := func(code int) check {
		return func(t *testing.T, r result) {
			t.Helper()
			if r.ExitCode != code || r.Error != nil {
				t.Fatalf("exit = %d error %+v, want exit %d and no error", r.ExitCode, r.Error, code)
			}
		}
	}
	tests := []struct {
		name   string
		code   string
		inputs string
		checks []check
	}{
		// Results.
		{"expression", "1+1", "", []check{resultIs("2")}},
		{"statement only", "x = 1", "", []check{noResult}},
		{"none is a result", "None", "", []check{valueIs("null", "NoneType", "None")}},
		{"print returns None", "print('hi')", "", []check{valueIs("null", "NoneType", "None"), stdoutIs("hi\n")}},
		{"dict", "data = [12000, 18900.5, 20000.5]\n{'average': round(sum(data)/len(data), 2), 'n': len(data)}", "",
			[]check{resultIs(`{"average": 16967.0, "n": 3}`)}},
		{"string", "'h' + 'i'", "", []check{resultIs(`"hi"`)}},
		{"nested", "[1, [2.5, None, True], {'a': 'b'}]", "", []check{resultIs(`[1, [2.5, null, true], {"a": "b"}]`)}},
		{"a set has no JSON", "{1, 2}", "", []check{valueIs("", "set", "{1, 2}")}},
		{"a string that reads like a set is a string", "'{1, 2}'", "", []check{valueIs(`"{1, 2}"`, "str", "'{1, 2}'")}},
		{"frozenset", "frozenset([1])", "", []check{valueIs("", "frozenset", "frozenset({1})")}},
		{"Decimal", "import decimal\ndecimal.Decimal('0.1')", "", []check{valueIs("", "Decimal", "Decimal('0.1')")}},
		{"tuple is an array", "(1, 'x', (2,))", "", []check{valueIs(`[1, "x", [2]]`, "tuple", "(1, 'x', (2,))")}},
		{"int keys have no JSON", "{1: 'a'}", "", []check{valueIs("", "dict", "{1: 'a'}")}},
		{"big int as its digits", "2**64", "", []check{valueIs(`"18446744073709551616"`, "int", "18446744073709551616")}},
		{"huge int", "-10**40", "", []check{valueIs(`"-10000000000000000000000000000000000000000"`, "int", "-10000000000000000000000000000000000000000")}},
		{"2**53 is still a number", "2**53", "", []check{valueIs("9007199254740992", "int", "9007199254740992")}},
		{"big int inside", "{'n': 2**64, 'm': 1}", "", []check{valueIs(`{"n": "18446744073709551616", "m": 1}`, "dict", "{'n': 18446744073709551616, 'm': 1}")}},
		{"bool is not an int", "True", "", []check{valueIs("true", "bool", "True")}},
		{"infinity has no JSON", "[1e400]", "", []check{valueIs("", "list", "[inf]")}},
		{"a cycle has no JSON", "a = [1]\na.append(a)\na", "", []check{valueIs("", "list", "[1, [...]]")}},
		{"bytes escapes are single", "b'\\x00\\\\'", "", []check{valueIs("", "bytes", `b'\x00\\'`)}},
		{"bytes repr", "b'ab'", "", []check{valueIs("", "bytes", "b'ab'")}},
		{"nan repr", "float('nan')", "", []check{valueIs("", "float", "nan")}},
		{"object repr", "class P:\n    def __repr__(self): return 'P!'\nP()", "", []check{valueIs("", "P", "P!")}},
		{"main module", "__name__", "", []check{resultIs(`"__main__"`)}},
		{"fresh namespace", "sorted(k for k in globals() if not k.startswith('__'))", "", []check{resultIs(`[]`)}},
		{"last expression after loop", "t = 0\nfor i in range(10):\n    t += i\nt", "", []check{resultIs("45")}},
		{"no trailing expression", "def f():\n    return 1\n", "", []check{noResult}},
		{"pickle main class", "import pickle\nclass A: pass\ntype(pickle.loads(pickle.dumps(A()))).__name__", "", []check{resultIs(`"A"`)}},

		// Inputs.
		{"inputs", "inputs['a'] * 2", `{"a": 21}`, []check{resultIs("42")}},
		{"no inputs", "'inputs' in globals()", "", []check{resultIs("false")}},

		// Errors.
		{"zero division", "x = 1\ny = x / 0\n", "", []check{errorIs("ZeroDivisionError", "division by zero",
			"Traceback (most recent call last):\n  File \"<code>\", line 2, in <module>\n    y = x / 0")}},
		{"error in function", "def f(n):\n    return {}[n]\nf('k')", "", []check{errorIs("KeyError", "'k'",
			"line 3, in <module>", "line 2, in f", "return {}[n]")}},
		{"stdlib source in traceback", "import json\njson.loads('{')", "", []check{errorIs("json.decoder.JSONDecodeError", "Expecting property name",
			"json/decoder.py", "obj, end = self.scan_once(s, idx)")}},
		{"syntax error", "x = 1\n1 +\n", "", []check{errorIs("SyntaxError", "invalid syntax", "File \"<code>\", line 2", "1 +", "^")}},
		{"no bootstrap frames", "raise ValueError('v')", "", []check{errorIs("ValueError", "v"), func(t *testing.T, r result) {
			if strings.Contains(r.Error.Traceback, "<string>") || strings.Count(r.Error.Traceback, "File ") != 1 {
				t.Fatalf("traceback has bootstrap frames:\n%s", r.Error.Traceback)
			}
		}}},
		{"user exception", "class Oops(Exception): pass\nraise Oops('x')", "", []check{errorIs("Oops", "x")}},
		{"output before error", "print('before')\nimport sys\nprint('err', file=sys.stderr)\n1/0", "",
			[]check{errorIs("ZeroDivisionError", "division by zero"), stdoutIs("before\n"), stderrHas("err\n")}},
		{"input is eof", "input()", "", []check{errorIs("EOFError", "")}},

		// Exit.
		{"sys.exit code", "import sys\nprint('x')\nsys.exit(3)", "", []check{exitIs(3), stdoutIs("x\n"), noResultOrExit}},
		{"sys.exit message", "import sys\nsys.exit('bye')", "", []check{exitIs(1), stderrHas("bye\n")}},
		{"sys.exit none", "raise SystemExit", "", []check{exitIs(0)}},
		{"exit as last expression", "import sys\nsys.exit(4)", "", []check{exitIs(4)}},

		// Recursion and the stack.
		{"deep recursion", "def f(n):\n    return f(n + 1)\nf(0)", "", []check{errorIs("RecursionError", "maximum recursion depth exceeded")}},
		{"recursion through C", "class R:\n    def __repr__(self): return repr([self])\nrepr(R())", "", []check{errorIs("RecursionError", "")}},
		{"nested json", "import json\nx = []\nfor _ in range(100000):\n    x = [x]\njson.dumps(x)", "", []check{errorIs("RecursionError", "")}},
		{"200 parentheses", strings.Repeat("(", 200) + "1" + strings.Repeat(")", 200), "", []check{resultIs("1")}},
		{"recursion 900 deep", "def f(n):\n    return 0 if n == 0 else 1 + f(n - 1)\nf(900)", "", []check{resultIs("900")}},

		// Habits that must work.
		{"time.sleep", "import time\nt = time.monotonic()\ntime.sleep(0.05)\ntime.monotonic() - t >= 0.05", "", []check{resultIs("true")}},
		{"select timeout", "import select, time\nt = time.monotonic()\nselect.select([], [], [], 0.03)\ntime.monotonic() - t >= 0.03", "", []check{resultIs("true")}},
		{"asyncio", `import asyncio
async def work(i):
    await asyncio.sleep(0.01 * i)
    return i
async def main():
    r = await asyncio.gather(*(work(i) for i in range(3)))
    try:
        await asyncio.wait_for(asyncio.sleep(1), 0.02)
    except asyncio.TimeoutError:
        r.append('timeout')
    return r
asyncio.run(main())`, "", []check{resultIs(`[0, 1, 2, "timeout"]`)}},
		{"top-level await", "import asyncio\nawait asyncio.sleep(0.01)\nawait asyncio.sleep(0, 'done')", "", []check{resultIs(`"done"`)}},
		{"sqlite3", "import sqlite3\nc = sqlite3.connect(':memory:')\nc.execute('create table t(x)')\nc.executemany('insert into t values (?)', [(1,), (2,)])\nc.execute('select sum(x) from t').fetchone()[0]", "", []check{resultIs("3")}},
		{"zlib", "import zlib\nzlib.decompress(zlib.compress(b'abc' * 100)) == b'abc' * 100", "", []check{resultIs("true")}},
		{"decimal", "from decimal import Decimal\nstr(Decimal('0.1') + Decimal('0.2'))", "", []check{resultIs(`"0.3"`)}},
		{"datetime", "import datetime\ndatetime.date(2024, 2, 28) + datetime.timedelta(days=1)", "", []check{valueIs("", "date", "datetime.date(2024, 2, 29)")}},
		{"hashlib", "import hashlib\nhashlib.sha256(b'abc').hexdigest()[:16]", "", []check{resultIs(`"ba7816bf8f01cfea"`)}},
		{"re", "import re\nre.findall(r'\\d+', 'a1b22c333')", "", []check{resultIs(`["1", "22", "333"]`)}},
		{"statistics", "import statistics\nstatistics.median([3, 1, 2])", "", []check{resultIs("2")}},
		{"json", "import json\njson.loads('{\"a\": [1, 2]}')", "", []check{resultIs(`{"a": [1, 2]}`)}},
		{"sysconfig", "import sysconfig\nsysconfig.get_config_var('SOABI')", "", []check{resultIs(`"cpython-311-wasm32-wasi"`)}},
		{"random", "import random\n0 <= random.random() < 1", "", []check{resultIs("true")}},
		{"wall clock", "import time\ntime.time() > 1.7e9", "", []check{resultIs("true")}},

		// What the sandbox refuses.
		{"threads", "import threading\nthreading.Thread(target=print).start()", "", []check{errorIs("RuntimeError", "threads are not available in this sandbox")}},
		{"no host files", "open('/etc/passwd')", "", []check{func(t *testing.T, r result) {
			if r.Error == nil || (r.Error.Type != "FileNotFoundError" && r.Error.Type != "PermissionError") {
				t.Fatalf("error = %+v", r.Error)
			}
		}}},
		{"no pandas", "import pandas", "", []check{errorIs("ModuleNotFoundError", "pandas")}},
		{"no network", "import socket\nsocket.create_connection(('127.0.0.1', 80))", "", []check{func(t *testing.T, r result) {
			if r.Error == nil {
				t.Fatalf("connected?")
			}
		}}},
		{"read-only stdlib", "f = open('/usr/local/lib/python311.zip', 'ab')\nf.write(b'x')\nf.flush()", "", []check{func(t *testing.T, r result) {
			if r.Error == nil {
				t.Fatalf("the standard library zip is writable")
			}
		}}},

		// The result channel.
		// A report of the guest's own that is incomplete: alone it is never
		// valid, so the answer cannot depend on whether the early path saw
		// it before the bootstrap's report followed (a complete one the
		// guest writes is only its own answer, which it controls anyway).
		{"tampered result channel", "import os\nos.write(9999, b'{\"result\": ')\n2", "", []check{errorIs("RuntimeError", "tampered")}},
		{"result too large", "'x' * (17 << 20)", "", []check{errorIs("OutputLimitError", "result: limit of 16 MiB reached"), func(t *testing.T, r result) {
			if r.Limit != runtimes.LimitOutput {
				t.Fatalf("limit %q", r.Limit)
			}
		}}},
		{"inspect user source", "import inspect\ndef f():\n    return 1\ninspect.getsource(f)", "", []check{resultIs(`"def f():\n    return 1\n"`)}},
		{"stack overflow is a crash, not a hang", "import sys\nsys.setrecursionlimit(10**7)\nclass R:\n    def __repr__(self): return repr([self])\nrepr(R())", "",
			[]check{errorIs("RuntimeError", "stack overflow")}},
		{"os._exit", "import os\nprint('bye')\nos._exit(5)", "", []check{exitIs(5), stdoutIs("bye\n")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var inputs json.RawMessage
			if tt.inputs != "" {
				inputs = json.RawMessage(tt.inputs)
			}
			r := run(t, defaultLimit, tt.code, inputs)
			for _, c := range tt.checks {
				c(t, r)
			}
		})
	}
}

func noResultOrExit(t *testing.T, r result) {
	t.Helper()
	if r.Result != nil {
		t.Fatalf("result %s after sys.exit", r.Result)
	}
}

func TestMemoryLimit(t *testing.T) {
	const limit = 64 << 20
	tests := []struct {
		name string
		code string
	}{
		{"growing list", "x = []\nwhile True:\n    x.append(' ' * 100000)"},
		{"one big allocation", "b = bytearray(200 * 1024 * 1024)"},
		{"string concatenation", "s = 'x'\nwhile True:\n    s = s + s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := run(t, limit, tt.code, nil)
			if r.Limit != runtimes.LimitMemory || r.Error == nil || r.Error.Type != "MemoryError" ||
				r.Error.Message != "memory: limit of 64MiB reached" {
				t.Fatalf("outcome = %+v (error %+v)\nstderr: %s", r.Outcome, r.Error, r.stderr)
			}
		})
	}
	// Below the limit a MemoryError raised by the user is just an error.
	r := run(t, limit, "raise MemoryError('mine')", nil)
	if r.Limit != "" || r.Error == nil || r.Error.Message != "mine" {
		t.Fatalf("outcome = %+v (error %+v)", r.Outcome, r.Error)
	}
	// The same engine still works after a run that hit the limit.
	if r := run(t, limit, "1+1", nil); string(r.Result) != "2" {
		t.Fatalf("after the limit: %+v", r.Outcome)
	}
}

func TestVersions(t *testing.T) {
	cpython, debian := Versions()
	if !strings.HasPrefix(cpython, "3.11.") || !strings.HasPrefix(debian, "3.11.") {
		t.Fatalf("Versions() = %q, %q", cpython, debian)
	}
	r := run(t, defaultLimit, "import sys\n'%d.%d.%d' % sys.version_info[:3]", nil)
	if string(r.Result) != `"`+cpython+`"` {
		t.Fatalf("guest version %s, VERSION says %s", r.Result, cpython)
	}
}

func TestDecodeReport(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    report
		wantErr bool
	}{
		{"result", `{"result": {"a": 1}, "result_type": "dict", "result_repr": "{'a': 1}", "exit": 0}`,
			report{Result: json.RawMessage(`{"a": 1}`), ResultType: "dict", ResultRepr: "{'a': 1}"}, false},
		{"result without JSON", `{"result_type": "set", "result_repr": "{1}", "exit": 0}`, report{ResultType: "set", ResultRepr: "{1}"}, false},
		{"result without a type", `{"result": 1, "exit": 0}`, report{}, true},
		{"repr without a type", `{"result_repr": "1", "exit": 0}`, report{}, true},
		{"error", `{"error": {"type": "E", "message": "m", "traceback": "t"}, "exit": 0}`,
			report{Error: &runtimes.ErrorInfo{Type: "E", Message: "m", Traceback: "t"}}, false},
		{"exit", `{"exit": 3}`, report{Exit: 3}, false},
		{"garbage before", `xx{"exit": 0}`, report{}, true},
		{"two reports", `{"exit": 0}{"exit": 1}`, report{}, true},
		{"unknown field", `{"exit": 0, "extra": 1}`, report{}, true},
		{"output limit", `{"error": {"type": "OutputLimitError"}, "exit": 0, "limit": "output"}`,
			report{Error: &runtimes.ErrorInfo{Type: "OutputLimitError"}, Limit: "output"}, false},
		{"limit without error", `{"exit": 0, "limit": "output"}`, report{}, true},
		{"forged memory limit", `{"error": {"type": "MemoryError"}, "exit": 0, "limit": "memory"}`, report{}, true},
		{"truncated", `{"result": [1, 2`, report{}, true},
		{"null result", `{"result": null, "exit": 0}`, report{}, true},
		{"result and error", `{"result": 1, "error": {"type": "E"}, "exit": 0}`, report{}, true},
		{"not an object", `[1]`, report{}, true},
		{"empty", ``, report{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := decodeReport([]byte(tt.in))
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			g, _ := json.Marshal(got)
			w, _ := json.Marshal(tt.want)
			if !bytes.Equal(g, w) {
				t.Fatalf("got %s, want %s", g, w)
			}
		})
	}
}

func TestReportOverflowIsBounded(t *testing.T) {
	in := &instance{}
	w := (*reportWriter)(in)
	chunk := bytes.Repeat([]byte("x"), 1<<20)
	for i := 0; i < 20; i++ {
		if n, err := w.Write(chunk); n != len(chunk) || err != nil {
			t.Fatalf("Write = %d, %v", n, err)
		}
	}
	if !in.reportOverflow || in.report.Len() > maxReport {
		t.Fatalf("overflow %v, buffered %d", in.reportOverflow, in.report.Len())
	}
}

// testMemory instantiates a module that only has one page of memory, to
// drive the host functions directly.
func testMemory(t *testing.T) api.Memory {
	t.Helper()
	ctx := context.Background()
	rt := wazero.NewRuntime(ctx)
	t.Cleanup(func() { _ = rt.Close(ctx) })
	// (module (memory (export "mem") 1))
	bin := []byte{0, 'a', 's', 'm', 1, 0, 0, 0,
		5, 3, 1, 0, 1,
		7, 7, 1, 3, 'm', 'e', 'm', 2, 0}
	mod, err := rt.Instantiate(ctx, bin)
	if err != nil {
		t.Fatal(err)
	}
	return mod.Memory()
}

type sub struct {
	userdata uint64
	typ      byte
	clockID  uint32 // or fd
	timeout  uint64
	flags    uint16
}

func writeSubs(mem api.Memory, at uint32, subs []sub) {
	for i, s := range subs {
		b := make([]byte, subscriptionSize)
		le.PutUint64(b[0:], s.userdata)
		b[8] = s.typ
		le.PutUint32(b[16:], s.clockID)
		le.PutUint64(b[24:], s.timeout)
		le.PutUint16(b[40:], s.flags)
		mem.Write(at+uint32(i*subscriptionSize), b)
	}
}

type event struct {
	userdata uint64
	errno    uint16
	typ      byte
}

func readEvents(t *testing.T, mem api.Memory, at, neventsAt uint32) []event {
	n, _ := mem.ReadUint32Le(neventsAt)
	var evs []event
	for i := uint32(0); i < n; i++ {
		b, _ := mem.Read(at+i*eventSize, eventSize)
		evs = append(evs, event{le.Uint64(b[0:]), le.Uint16(b[8:]), b[10]})
	}
	return evs
}

func TestPollOneoff(t *testing.T) {
	const in, out, nevents = 0, 4096, 8192
	ms := uint64(time.Millisecond)
	tests := []struct {
		name         string
		subs         func() []sub
		wantEvents   []uint64 // userdata of the events, in order
		wantErrnos   []uint16
		minWait      time.Duration
		maxWait      time.Duration
		wantRetErrno uint32
	}{
		{name: "relative clock", subs: func() []sub {
			return []sub{{userdata: 7, typ: eventTypeClock, clockID: clockMonotonic, timeout: 30 * ms}}
		}, wantEvents: []uint64{7}, wantErrnos: []uint16{0}, minWait: 30 * time.Millisecond, maxWait: time.Second},
		{name: "absolute monotonic clock (CPython's time.sleep)", subs: func() []sub {
			return []sub{{userdata: 8, typ: eventTypeClock, clockID: clockMonotonic, timeout: uint64(nanotime()) + 30*ms, flags: subscriptionClockAbstime}}
		}, wantEvents: []uint64{8}, wantErrnos: []uint16{0}, minWait: 25 * time.Millisecond, maxWait: time.Second},
		{name: "absolute realtime clock", subs: func() []sub {
			return []sub{{userdata: 9, typ: eventTypeClock, clockID: clockRealtime, timeout: uint64(time.Now().UnixNano()) + 30*ms, flags: subscriptionClockAbstime}}
		}, wantEvents: []uint64{9}, wantErrnos: []uint16{0}, minWait: 25 * time.Millisecond, maxWait: time.Second},
		{name: "absolute deadline in the past", subs: func() []sub {
			return []sub{{userdata: 10, typ: eventTypeClock, clockID: clockMonotonic, timeout: 1, flags: subscriptionClockAbstime}}
		}, wantEvents: []uint64{10}, wantErrnos: []uint16{0}, maxWait: 50 * time.Millisecond},
		{name: "earliest of two clocks", subs: func() []sub {
			return []sub{
				{userdata: 1, typ: eventTypeClock, clockID: clockMonotonic, timeout: uint64(10 * time.Second)},
				{userdata: 2, typ: eventTypeClock, clockID: clockMonotonic, timeout: 20 * ms},
			}
		}, wantEvents: []uint64{2}, wantErrnos: []uint16{0}, minWait: 20 * time.Millisecond, maxWait: time.Second},
		// Standard input holds what the host preloaded or is at its end:
		// it never blocks.
		{name: "stdin always readable", subs: func() []sub {
			return []sub{
				{userdata: 1, typ: eventTypeFdRead, clockID: 0},
				{userdata: 2, typ: eventTypeClock, clockID: clockMonotonic, timeout: uint64(10 * time.Second)},
			}
		}, wantEvents: []uint64{1}, wantErrnos: []uint16{0}, maxWait: 50 * time.Millisecond},
		{name: "fd_write is ready", subs: func() []sub {
			return []sub{{userdata: 3, typ: eventTypeFdWrite, clockID: 1}}
		}, wantEvents: []uint64{3}, wantErrnos: []uint16{0}, maxWait: 50 * time.Millisecond},
		{name: "unknown clock", subs: func() []sub {
			return []sub{{userdata: 4, typ: eventTypeClock, clockID: 77, timeout: 1, flags: subscriptionClockAbstime}}
		}, wantEvents: []uint64{4}, wantErrnos: []uint16{errnoInval}, maxWait: 50 * time.Millisecond},
		{name: "no subscriptions", subs: func() []sub { return nil }, wantRetErrno: errnoInval},
		{name: "unknown event type", subs: func() []sub { return []sub{{typ: 9}} }, wantRetErrno: errnoInval},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mem := testMemory(t)
			inst := &instance{stdin: newRequestReader(), nowFunc: nanotime}
			subs := tt.subs()
			writeSubs(mem, in, subs)
			start := time.Now()
			errno := pollOneoffWith(mem, inst, in, out, uint32(len(subs)), nevents)
			waited := time.Since(start)
			if errno != tt.wantRetErrno {
				t.Fatalf("errno = %d, want %d", errno, tt.wantRetErrno)
			}
			if errno != 0 {
				return
			}
			if waited < tt.minWait || waited > tt.maxWait {
				t.Fatalf("waited %v, want between %v and %v", waited, tt.minWait, tt.maxWait)
			}
			evs := readEvents(t, mem, out, nevents)
			if len(evs) != len(tt.wantEvents) {
				t.Fatalf("events = %+v, want userdata %v", evs, tt.wantEvents)
			}
			for i, ev := range evs {
				if ev.userdata != tt.wantEvents[i] || ev.errno != tt.wantErrnos[i] {
					t.Fatalf("event %d = %+v, want userdata %d errno %d", i, ev, tt.wantEvents[i], tt.wantErrnos[i])
				}
			}
		})
	}
}

func TestFdWrite(t *testing.T) {
	mem := testMemory(t)
	var stdout, stderr bytes.Buffer
	in := &instance{stdout: &stdout, stderr: &stderr}
	mem.Write(100, []byte("hello, world"))
	// Two iovecs: "hello" and ", world".
	iov := make([]byte, 16)
	le.PutUint32(iov[0:], 100)
	le.PutUint32(iov[4:], 5)
	le.PutUint32(iov[8:], 105)
	le.PutUint32(iov[12:], 7)
	mem.Write(200, iov)
	for _, fd := range []uint32{1, 2, resultFD} {
		if errno := writeIovecs(mem, writerFor(in, fd), 200, 2, 300); errno != 0 {
			t.Fatalf("fd %d: errno %d", fd, errno)
		}
		if n, _ := mem.ReadUint32Le(300); n != 12 {
			t.Fatalf("fd %d: nwritten %d", fd, n)
		}
	}
	if stdout.String() != "hello, world" || stderr.String() != "hello, world" || in.report.String() != "hello, world" {
		t.Fatalf("stdout %q stderr %q report %q", stdout.String(), stderr.String(), in.report.String())
	}
	if errno := writeIovecs(mem, &stdout, 65530, 2, 300); errno != errnoFault {
		t.Fatalf("iovecs out of memory: errno %d", errno)
	}
}

func writerFor(in *instance, fd uint32) interface{ Write([]byte) (int, error) } {
	switch fd {
	case 1:
		return in.stdout
	case 2:
		return in.stderr
	}
	return (*reportWriter)(in)
}

func TestCloseWithoutRun(t *testing.T) {
	e := engineWithLimit(t, defaultLimit)
	ctx := context.Background()
	var stdout bytes.Buffer
	inst, err := e.Prepare(ctx, runtimes.Streams{Stdout: &stdout, Stderr: &stdout})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := inst.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 500*time.Millisecond {
		t.Fatalf("Close took %v", d)
	}
	if stdout.Len() != 0 {
		t.Fatalf("output %q", stdout.String())
	}
}

func TestRunTimeout(t *testing.T) {
	e := engineWithLimit(t, defaultLimit)
	inst, err := e.Prepare(context.Background(), runtimes.Streams{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	out := inst.Run(ctx, runtimes.Request{Code: "import time\ntime.sleep(0.5)"})
	if out.Limit != runtimes.LimitTimeout {
		t.Fatalf("outcome %+v", out)
	}
	_ = inst.Close(context.Background())
}

func TestInvalidInputs(t *testing.T) {
	r := run(t, defaultLimit, "1", json.RawMessage("{not json"))
	if r.Error == nil || r.Error.Type != "ValueError" {
		t.Fatalf("outcome %+v", r.Outcome)
	}
}

// BenchmarkPrepareRun: a fresh instance, CPython's start-up and "1+1".
func BenchmarkPrepareRun(b *testing.B) {
	runtimetest.BenchmarkRun(b, engineWithLimit(b, defaultLimit), "1+1", "2")
}

// BenchmarkLoop measures interpreter speed: a 3e6-iteration loop.
func BenchmarkLoop(b *testing.B) {
	runtimetest.BenchmarkRun(b, engineWithLimit(b, defaultLimit), "t = 0\nfor i in range(3_000_000):\n    t += i\nt", "4499998500000")
}

// TestFiles covers what the guest sees of a file system: its own
// writable scratch directory, and read-only everything else.
func TestFiles(t *testing.T) {
	tests := []struct {
		name, code string
		result     string // exact JSON, when no error is wanted
		errType    string // the error wanted, if any
		errIn      string // a substring of its message
		limit      string
	}{
		{name: "working directory and TMPDIR", code: "import os, tempfile\n[os.getcwd(), tempfile.gettempdir(), os.environ['TMPDIR']]",
			result: `["/tmp", "/tmp", "/tmp"]`},
		{name: "write and read back", code: "open('a.txt', 'w').write('hi')\nopen('/tmp/a.txt').read()", result: `"hi"`},
		{name: "tempfile", code: "import tempfile\nwith tempfile.TemporaryDirectory() as d:\n    with tempfile.NamedTemporaryFile('w+', dir=d) as f:\n        f.write('x'); f.seek(0); r = f.read()\nr",
			result: `"x"`},
		{name: "sqlite file database", code: "import sqlite3\nc = sqlite3.connect('db.sqlite')\nc.execute('create table t(x)')\nc.execute('insert into t values (7)')\nc.commit(); c.close()\nsqlite3.connect('/tmp/db.sqlite').execute('select x from t').fetchone()[0]",
			result: "7"},
		{name: "zipfile write", code: "import zipfile\nwith zipfile.ZipFile('x.zip', 'w', zipfile.ZIP_DEFLATED) as z:\n    z.writestr('a', 'b' * 1000)\nzipfile.ZipFile('x.zip').read('a') == b'b' * 1000",
			result: "true"},
		{name: "directories", code: "import os, shutil\nos.makedirs('a/b/c')\nos.rename('a/b', 'a/d')\nr = [sorted(os.listdir('a')), os.path.isdir('a/d/c')]\nshutil.rmtree('a')\nr + [os.listdir('.')]",
			result: `[["d"], true, ["outputs"]]`},
		{name: "a full directory fails with ENOSPC", code: "with open('big', 'wb') as f:\n    while True:\n        f.write(bytes(1 << 20))",
			errType: "OSError", errIn: "scratch: limit of 8MiB reached (/tmp and the working directory are full): [Errno 51] No space left on device", limit: runtimes.LimitScratch},
		{name: "ENOSPC caught is no limit", code: "try:\n    open('big', 'wb').write(bytes(9 << 20))\nexcept OSError as e:\n    r = e.errno\nimport errno\nr == errno.ENOSPC",
			result: "true"},
		{name: "the standard library is read-only", code: "f = open('/usr/local/lib/python3.11/os.py', 'a')\nf.write('x')\nf.flush()",
			errType: "OSError", errIn: "[Errno 8] Bad file descriptor"},
		{name: "no file is removed from it", code: "import os\nos.remove('/usr/local/lib/python3.11/os.py')", errType: "OSError"},
		{name: "nothing of the host", code: "import os\nsorted(os.listdir('/'))", result: `["dev", "tmp", "usr"]`},
		{name: "no way out of the scratch directory", code: "open('/tmp/../etc/passwd').read()", errType: "FileNotFoundError"},
		{name: "no links", code: "import os\nos.symlink('/usr/local/lib/python3.11/os.py', 'l')", errType: "PermissionError"},
		{name: "open files are bounded", code: "import os\n[os.open('/usr/local/lib/python3.11/pydoc_data/topics.py', os.O_RDONLY) for _ in iter(int, 1)]",
			errType: "OSError", errIn: "[Errno 33]"},
		{name: "time zones", code: "import zoneinfo, datetime\nz = zoneinfo.ZoneInfo('America/New_York')\nd = datetime.datetime(2024, 1, 15, 12, tzinfo=z)\n[str(zoneinfo.ZoneInfo('UTC')), d.utcoffset().total_seconds(), d.tzname(), len(zoneinfo.available_timezones()) > 400]",
			result: `["UTC", -18000.0, "EST", true]`},
		{name: "time zones are read-only", code: "f = open('/usr/share/zoneinfo/UTC', 'r+b')\nf.write(b'x')\nf.flush()", errType: "OSError", errIn: "[Errno 8]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := run(t, defaultLimit, tt.code, nil)
			if tt.errType == "" {
				if r.Error != nil || string(r.Result) != tt.result {
					t.Fatalf("result %s, error %+v, want %s\nstderr: %s", r.Result, r.Error, tt.result, r.stderr)
				}
				return
			}
			if r.Error == nil || r.Error.Type != tt.errType || !strings.Contains(r.Error.Message, tt.errIn) || r.Limit != tt.limit {
				t.Fatalf("outcome %+v, error %+v; want %s containing %q, limit %q", r.Outcome, r.Error, tt.errType, tt.errIn, tt.limit)
			}
		})
	}
	// Each run starts with an empty directory but for an empty outputs/.
	run(t, defaultLimit, "open('left.txt', 'w').write('x')\nopen('outputs/left.txt', 'w').write('x')", nil)
	if r := run(t, defaultLimit, "import os\n[os.listdir('/tmp'), os.listdir('/tmp/outputs')]", nil); string(r.Result) != `[["outputs"], []]` {
		t.Fatalf("a fresh instance's /tmp holds %s", r.Result)
	}
}

// TestCPUClocks checks that process_time and thread_time count CPU time:
// work advances them, a sleep does not. Nothing is compared with wall
// time, which on a loaded machine says little about this process's CPU.
func TestCPUClocks(t *testing.T) {
	r := run(t, defaultLimit, `import time
def advances(clock, amount):
    start, give_up = clock(), time.monotonic() + 30
    while clock() - start < amount:
        if time.monotonic() > give_up:
            return False
    return True
p, th = time.process_time(), time.thread_time()
time.sleep(0.3)
slept = [time.process_time() - p, time.thread_time() - th]
[advances(time.process_time, 0.1), advances(time.thread_time, 0.1), 0 <= slept[0] < 0.1, 0 <= slept[1] < 0.1,
 time.get_clock_info('process_time').implementation]`, nil)
	if r.Error != nil || string(r.Result) != `[true, true, true, true, "clock_gettime(CLOCK_PROCESS_CPUTIME_ID)"]` {
		t.Fatalf("result %s, error %+v", r.Result, r.Error)
	}
}

// TestTimeZoneEnvironment checks that local time follows TZ through
// time.tzset, as natively: musl's time zone code reads the TZif files the
// runtime serves, and POSIX rule strings work without them. Without TZ
// local time is UTC, since nothing of the host's configuration is visible.
func TestTimeZoneEnvironment(t *testing.T) {
	tests := []struct{ name, code, result string }{
		{name: "no TZ is UTC", code: "import time\n[time.tzname, time.timezone, time.daylight, time.localtime(0).tm_hour, time.strftime('%Z', time.localtime(0))]",
			result: `[["UTC", "UTC"], 0, 0, 0, "UTC"]`},
		{name: "a zone from the IANA data", code: `import os, time
os.environ['TZ'] = 'America/New_York'
time.tzset()
winter, summer = time.localtime(1705320000), time.localtime(1719835200)
[time.tzname, time.timezone, time.altzone, time.daylight, winter.tm_hour, winter.tm_zone, summer.tm_hour, summer.tm_zone,
 time.mktime((2024, 1, 15, 7, 0, 0, 0, 0, -1)), time.strftime('%H:%M %Z', winter)]`,
			result: `[["EST", "EDT"], 18000, 14400, 1, 7, "EST", 8, "EDT", 1705320000.0, "07:00 EST"]`},
		{name: "a POSIX rule", code: "import os, time\nos.environ['TZ'] = 'CET-1CEST,M3.5.0,M10.5.0/3'\ntime.tzset()\n[time.tzname, time.localtime(1719835200).tm_hour, time.localtime(1705320000).tm_hour]",
			result: `[["CET", "CEST"], 14, 13]`},
		{name: "datetime follows it", code: "import os, time, datetime\nos.environ['TZ'] = 'Asia/Kolkata'\ntime.tzset()\nd = datetime.datetime.fromtimestamp(0).astimezone()\n[d.isoformat(), d.tzname()]",
			result: `["1970-01-01T05:30:00+05:30", "IST"]`},
		{name: "back to UTC", code: "import os, time\nos.environ['TZ'] = 'Europe/Paris'\ntime.tzset()\ndel os.environ['TZ']\ntime.tzset()\n[time.tzname, time.localtime(0).tm_hour]",
			result: `[["UTC", "UTC"], 0]`},
		{name: "an unknown zone is UTC", code: "import os, time\nos.environ['TZ'] = 'Nowhere/Atlantis'\ntime.tzset()\n[time.timezone, time.localtime(0).tm_hour]",
			result: `[0, 0]`},
		{name: "no file outside the zone data", code: "import os, time\nos.environ['TZ'] = '/tmp/../etc/localtime'\ntime.tzset()\ntime.localtime(0).tm_hour",
			result: `0`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := run(t, defaultLimit, tt.code, nil)
			if r.Error != nil || string(r.Result) != tt.result {
				t.Fatalf("result %s, error %+v, want %s", r.Result, r.Error, tt.result)
			}
		})
	}
	// The zone set by one run does not reach the next.
	run(t, defaultLimit, "import os, time\nos.environ['TZ'] = 'Asia/Tokyo'\ntime.tzset()", nil)
	if r := run(t, defaultLimit, "import time\ntime.localtime(0).tm_hour", nil); string(r.Result) != "0" {
		t.Fatalf("the next run's local hour at the epoch is %s, want 0 (UTC)", r.Result)
	}
}

// TestCompression round-trips data through the modules built from
// Debian's xz-utils and bzip2 sources.
func TestCompression(t *testing.T) {
	r := run(t, defaultLimit, `import lzma, bz2, zlib, tarfile, io
data = bytes(range(256)) * 100
buf = io.BytesIO()
with tarfile.open(fileobj=buf, mode='w:xz') as tf:
    info = tarfile.TarInfo('d'); info.size = len(data); tf.addfile(info, io.BytesIO(data))
[lzma.decompress(lzma.compress(data)) == data, bz2.decompress(bz2.compress(data)) == data,
 tarfile.open(fileobj=io.BytesIO(buf.getvalue())).extractfile('d').read() == data]`, nil)
	if r.Error != nil || string(r.Result) != `[true, true, true]` {
		t.Fatalf("result %s, error %+v", r.Result, r.Error)
	}
}

// TestProvenance: what build.sh recorded is what the package embeds, and
// the Debian packages built in are recorded.
func TestProvenance(t *testing.T) {
	runtimetest.CheckProvenance(t, Provenance, "python3.11", "zlib", "sqlite3", "xz-utils", "bzip2", "tzdata", "wasi-libc", "libclang-rt-14-dev-wasm32",
		"python3-sympy", "python3-networkx", "python3-six")
}
