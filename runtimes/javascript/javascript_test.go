package javascript

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"capsule/runtimes"
	"capsule/runtimes/internal/runtimetest"
)

// run prepares an instance and runs code with a deadline of timeout.
func run(t testing.TB, code string, inputs json.RawMessage, timeout time.Duration) (runtimes.Outcome, string, string) {
	t.Helper()
	in, stdout, stderr := testInstance(t, testEngine(t))
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	o := in.Run(ctx, runtimes.Request{Code: code, Inputs: inputs})
	return o, stdout.String(), stderr.String()
}

type runCase struct {
	name   string
	code   string
	inputs string
	// result is the expected exact JSON, "" for none.
	result string
	// repr and typ are the expected inspect form and type name; "" is
	// not checked.
	repr, typ string
	stdout    string
	stderr    string
	// errType and errMessage are the expected error, "" for none;
	// errMessage is a prefix.
	errType    string
	errMessage string
	traceback  string // a substring of the traceback
	limit      string
	timeout    time.Duration // default 5s
	maxElapsed time.Duration
}

func (c runCase) check(t *testing.T) {
	timeout := c.timeout
	if timeout == 0 {
		timeout = 5 * time.Second
	}
	var inputs json.RawMessage
	if c.inputs != "" {
		inputs = json.RawMessage(c.inputs)
	}
	start := time.Now()
	o, stdout, stderr := run(t, c.code, inputs, timeout)
	elapsed := time.Since(start)
	if string(o.Result) != c.result {
		t.Errorf("result = %s, want %s (type %q, repr %q)", o.Result, c.result, o.ResultType, o.ResultRepr)
	}
	if c.repr != "" && o.ResultRepr != c.repr {
		t.Errorf("repr = %q, want %q", o.ResultRepr, c.repr)
	}
	if c.typ != "" && o.ResultType != c.typ {
		t.Errorf("type = %q, want %q", o.ResultType, c.typ)
	}
	if stdout != c.stdout {
		t.Errorf("stdout = %q, want %q", stdout, c.stdout)
	}
	if stderr != c.stderr {
		t.Errorf("stderr = %q, want %q", stderr, c.stderr)
	}
	if o.Limit != c.limit {
		t.Errorf("limit = %q, want %q", o.Limit, c.limit)
	}
	switch {
	case c.errType == "" && o.Error != nil:
		t.Errorf("unexpected error %+v", *o.Error)
	case c.errType != "" && o.Error == nil:
		t.Errorf("no error, want %s: %s", c.errType, c.errMessage)
	case c.errType != "":
		if o.Error.Type != c.errType || !strings.HasPrefix(o.Error.Message, c.errMessage) {
			t.Errorf("error %s: %q, want %s: %q", o.Error.Type, o.Error.Message, c.errType, c.errMessage)
		}
		if !strings.Contains(o.Error.Traceback, c.traceback) {
			t.Errorf("traceback %q lacks %q", o.Error.Traceback, c.traceback)
		}
	}
	if c.maxElapsed != 0 && elapsed > c.maxElapsed {
		t.Errorf("took %v, want at most %v", elapsed, c.maxElapsed)
	}
}

func runCases(t *testing.T, cases []runCase) {
	for _, c := range cases {
		t.Run(c.name, c.check)
	}
}

func TestResults(t *testing.T) {
	runCases(t, []runCase{
		{name: "number", code: "1+1", result: "2"},
		{name: "string", code: "'a' + 'b'", result: `"ab"`},
		{name: "object as JSON", code: "({a: 1, b: [1, 2], c: {d: null}})", result: `{"a":1,"b":[1,2],"c":{"d":null}}`},
		{name: "class instance as JSON", code: "class P { constructor() { this.x = 1 } }; new P()", result: "", typ: "P", repr: `P { x: 1 }`},
		{name: "array", code: "[1, 'two', true]", result: `[1,"two",true]`},
		{name: "null", code: "null", result: "null"},
		{name: "undefined has no JSON", code: "undefined", result: "", typ: "undefined", repr: "undefined"},
		{name: "a declaration completes with undefined", code: "let x = 1", result: "", typ: "undefined"},
		{name: "last expression", code: "let x = 2; x * 21", result: "42"},
		{name: "empty code", code: "", result: ""},
		{name: "bigint", code: "10n ** 20n", result: `"100000000000000000000"`, typ: "BigInt", repr: `100000000000000000000n`},
		{name: "symbol", code: "Symbol('s')", result: "", typ: "Symbol", repr: `Symbol(s)`},
		{name: "function", code: "function foo() {}; foo", result: "", typ: "Function", repr: `[Function: foo]`},
		{name: "class", code: "class K {}; K", result: "", typ: "Function", repr: `[class K]`},
		{name: "arrow", code: "() => 1", result: "", typ: "Function", repr: `[Function (anonymous)]`},
		{name: "NaN", code: "0/0", result: "", typ: "Number", repr: `NaN`},
		{name: "Infinity", code: "-1/0", result: "", typ: "Number", repr: `-Infinity`},
		{name: "map", code: "new Map([['a', 1]])", result: "", typ: "Map", repr: `Map(1) { 'a' => 1 }`},
		{name: "cyclic", code: "const o = {a: 1}; o.self = o; o", result: "", typ: "Object", repr: `<ref *1> { a: 1, self: [Circular *1] }`},
		{name: "bigint inside", code: "({n: 1n})", result: "", typ: "Object", repr: `{ n: 1n }`},
		{name: "date", code: "new Date(0)", result: "", typ: "Date", repr: `1970-01-01T00:00:00.000Z`},
		// Issue 21: what JSON cannot hold exactly has no JSON form, and is
		// told by its type and inspect form, never by a string that reads
		// like a string.
		{name: "Uint8Array", code: "new Uint8Array([1, 2, 3])", result: "", typ: "Uint8Array", repr: "Uint8Array(3) [ 1, 2, 3 ]"},
		{name: "Set", code: "new Set([1, 2])", result: "", typ: "Set", repr: "Set(2) { 1, 2 }"},
		{name: "a string that looks like a Set is a string", code: "'Set(2) { 1, 2 }'", result: `"Set(2) { 1, 2 }"`, typ: "String", repr: "'Set(2) { 1, 2 }'"},
		{name: "minus zero", code: "-0", result: "", typ: "Number", repr: "-0"},
		{name: "small BigInt is a number", code: "5n", result: "5", typ: "BigInt", repr: "5n"},
		{name: "negative big BigInt", code: "-(2n ** 64n)", result: `"-18446744073709551616"`, typ: "BigInt", repr: "-18446744073709551616n"},
		{name: "a big Number is a number", code: "2 ** 64", result: "18446744073709552000", typ: "Number", repr: "18446744073709552000"},
		{name: "null prototype object", code: "Object.assign(Object.create(null), {a: 1})", result: `{"a":1}`, typ: "Object"},
		{name: "unicode", code: "'héllo ✓ 😀'", result: `"héllo ✓ 😀"`},
		{name: "var is global", code: "var g = 5; globalThis.g", result: "5"},
		{name: "functions are global", code: "function h() { return 3 }; globalThis.h()", result: "3"},
		{name: "inputs", code: "inputs.a + inputs.b.length", inputs: `{"a": 1, "b": [1, 2]}`, result: "3"},
		{name: "no inputs", code: "typeof inputs", result: `"undefined"`},
		{name: "invalid inputs", code: "1", inputs: `{`, errType: "InputError", errMessage: "inputs is not valid JSON"},
	})
}

func TestAsync(t *testing.T) {
	runCases(t, []runCase{
		{name: "top-level await", code: "const v = await Promise.resolve(41); v + 1", result: "42"},
		{name: "last expression promise is awaited", code: "Promise.resolve(7)", result: "7"},
		{name: "async function result", code: "(async () => { await null; return {ok: true} })()", result: `{"ok":true}`},
		{name: "rejected promise", code: "Promise.reject(new RangeError('no'))", errType: "RangeError", errMessage: "no"},
		{name: "rejected await", code: "await (async () => { throw new TypeError('bad') })()", errType: "TypeError", errMessage: "bad"},
		{name: "timer resolves", code: "await new Promise(r => setTimeout(r, 30, 'done'))", result: `"done"`},
		{name: "awaited promise never settles", code: "await new Promise(() => {})", errType: "Error", errMessage: "unsettled top-level await"},
		{name: "timers after the result", code: "let x = 0; setTimeout(() => { x = 1; console.log('later', x) }, 10); x",
			result: "0", stdout: "later 1\n"},
		{name: "ordering", code: "setTimeout(() => console.log('b'), 20); setTimeout(() => console.log('a'), 10);" +
			"setTimeout(() => console.log('a2'), 10); queueMicrotask(() => console.log('m'));" +
			"Promise.resolve().then(() => console.log('p')); console.log('s')",
			stdout: "s\nm\np\na\na2\nb\n"},
		{name: "interval", code: "let n = 0; const id = setInterval(() => { console.log(++n); if (n === 3) clearInterval(id) }, 5)",
			stdout: "1\n2\n3\n"},
		{name: "clearTimeout", code: "const id = setTimeout(() => console.log('no'), 5); clearTimeout(id); 'ok'", result: `"ok"`},
		{name: "timer arguments", code: "setTimeout((a, b) => console.log(a + b), 0, 2, 3)", result: "1", stdout: "5\n"},
		{name: "real delay", code: "const t0 = Date.now(); await new Promise(r => setTimeout(r, 100)); Date.now() - t0 >= 99", result: "true"},
		{name: "error in a timer", code: "setTimeout(() => { throw new Error('late') }, 1); 5",
			result: "5", errType: "Error", errMessage: "late"},
		{name: "setTimeout needs a function", code: "setTimeout('1+1', 1)", errType: "TypeError", errMessage: `The "callback" argument must be of type function`},
	})
}

func TestConsole(t *testing.T) {
	runCases(t, []runCase{
		{name: "streams", code: "console.log('l'); console.info('i'); console.debug('d'); console.error('e'); console.warn('w')",
			stdout: "l\ni\nd\n", stderr: "e\nw\n"},
		{name: "args", code: "console.log('a', 1, true, null, undefined, 2n)", stdout: "a 1 true null undefined 2n\n"},
		{name: "object", code: "console.log({a: 1, b: [1, 2]})", stdout: "{ a: 1, b: [ 1, 2 ] }\n"},
		{name: "nested strings", code: "console.log({s: 'x', t: \"it's\"}, ['q'])", stdout: "{ s: 'x', t: \"it's\" } [ 'q' ]\n"},
		{name: "depth", code: "console.log({a: {b: {c: {d: 1}}}})", stdout: "{ a: { b: { c: [Object] } } }\n"},
		{name: "circular", code: "const o = {}; o.o = o; console.log(o)", stdout: "<ref *1> { o: [Circular *1] }\n"},
		{name: "long array", code: "console.log(Array.from({length: 30}, (_, i) => i))", stdout: "[\n" +
			"   0,  1,  2,  3,  4,  5,  6,  7,  8,\n" +
			"   9, 10, 11, 12, 13, 14, 15, 16, 17,\n" +
			"  18, 19, 20, 21, 22, 23, 24, 25, 26,\n" +
			"  27, 28, 29\n" +
			"]\n"},
		{name: "multi-line object", code: "console.log({first: 'aaaaaaaaaaaaaaaaaaaa', second: 'bbbbbbbbbbbbbbbbbbbb', third: 'cccccccccccccccccccc'})",
			stdout: "{\n  first: 'aaaaaaaaaaaaaaaaaaaa',\n  second: 'bbbbbbbbbbbbbbbbbbbb',\n  third: 'cccccccccccccccccccc'\n}\n"},
		{name: "class instance and map", code: "class P { x = 1 }; console.log(new P(), new Map([[1, {a: 2}]]), new Set([1]))",
			stdout: "P { x: 1 } Map(1) { 1 => { a: 2 } } Set(1) { 1 }\n"},
		{name: "functions", code: "console.log(function f() {}, class C {}, () => 1)", stdout: "[Function: f] [class C] [Function (anonymous)]\n"},
		{name: "format", code: "console.log('%s has %d items, %j', 'cart', 3, {a: 1}, 'extra')", stdout: "cart has 3 items, {\"a\":1} extra\n"},
		{name: "error", code: "console.log(new TypeError('bad'))", stdout: "TypeError: bad\n    at <eval> (<input>:1:16)\n"},
		{name: "NUL and unicode", code: "console.log('a\\0b', 'é✓')", stdout: "a\x00b é✓\n"},
		{name: "empty line", code: "console.log()", stdout: "\n"},
		{name: "redefined builtins", code: "Array.prototype.join = () => 'x'; JSON.stringify = () => 'y'; console.log([1, 2], {a: 1}); ({a: 1})",
			stdout: "[ 1, 2 ] { a: 1 }\n", result: `{"a":1}`},
	})
}

func TestErrors(t *testing.T) {
	runCases(t, []runCase{
		{name: "thrown error", code: "function f() { throw new TypeError('bad thing') }\nf()",
			errType: "TypeError", errMessage: "bad thing", traceback: "TypeError: bad thing\n    at f (<input>:1:"},
		{name: "syntax error", code: "1 +", errType: "SyntaxError", traceback: "<input>:1"},
		{name: "reference error", code: "nope", errType: "ReferenceError", errMessage: "nope is not defined"},
		{name: "null property", code: "null.x", errType: "TypeError", errMessage: "cannot read property 'x' of null"},
		{name: "thrown string", code: "throw 'boom'", errType: "Error", errMessage: "boom", traceback: "Uncaught 'boom'"},
		{name: "thrown object", code: "throw {code: 7}", errType: "Error", errMessage: "{ code: 7 }"},
		{name: "custom error", code: "class MyError extends Error { constructor(m) { super(m); this.name = 'MyError' } }; throw new MyError('mine')",
			errType: "MyError", errMessage: "mine"},
		{name: "caught error", code: "try { null.x } catch (e) { e.name }", result: `"TypeError"`},
		{name: "output before an error", code: "console.log('before'); throw new Error('after')", stdout: "before\n", errType: "Error", errMessage: "after"},
		{name: "deep recursion", code: "function f() { return f() } f()", errType: "RangeError", errMessage: "Maximum call stack size exceeded"},
		{name: "deep recursion caught", code: "function f(n) { return f(n + 1) }\nlet r; try { f(0) } catch (e) { r = e.name } r", result: `"RangeError"`},
		{name: "module syntax", code: "import fs from 'fs'", errType: "SyntaxError"},
		{name: "dynamic import", code: "await import('fs')", errType: "ReferenceError", errMessage: "could not load module"},
	})
}

func TestModernSyntax(t *testing.T) {
	runCases(t, []runCase{
		{name: "private fields", code: "class A { #x = 1; static #n = 2; get x() { return this.#x + A.#n } }; new A().x", result: "3"},
		{name: "optional chaining", code: "const o = {a: null}; [o?.a?.b, o.z?.(), o?.a ?? 'd']", result: "", typ: "Array", repr: `[ undefined, undefined, 'd' ]`},
		{name: "bigint", code: "(2n ** 64n).toString()", result: `"18446744073709551616"`},
		{name: "named groups", code: "'2024-05'.match(/(?<y>\\d+)-(?<m>\\d+)/).groups.m", result: `"05"`},
		{name: "at", code: "[1, 2, 3].at(-1)", result: "3"},
		{name: "logical assignment", code: "let a = null; a ??= 4; a ||= 5; a", result: "4"},
		{name: "array methods", code: "[3, 1, 2].toSorted().findLast(x => x < 3)", result: "2"},
		{name: "object groupBy", code: "Object.groupBy([1, 2, 3], x => x % 2 ? 'odd' : 'even')", result: `{"odd":[1,3],"even":[2]}`},
		{name: "generators and spread", code: "function* g() { yield 1; yield 2 }; [...g(), ...new Set([3])]", result: "[1,2,3]"},
		{name: "async iteration", code: "async function* g() { yield 1; yield 2 }; let s = 0; for await (const v of g()) s += v; s", result: "3"},
		{name: "destructuring", code: "const {a, ...rest} = {a: 1, b: 2, c: 3}; rest", result: `{"b":2,"c":3}`},
		{name: "json", code: "JSON.parse('{\"x\": [1]}').x[0]", result: "1"},
		{name: "utc dates", code: "[new Date(0).getHours(), new Date().getTimezoneOffset(), new Date(2024, 0, 1).toISOString()]",
			result: `[0,0,"2024-01-01T00:00:00.000Z"]`},
		{name: "clocks", code: "const d = Date.now() - " + "Number(new Date()); const p = performance.now(); [Math.abs(d) < 100, p >= 0]", result: "[true,true]"},
	})
}

func TestNoHostAccess(t *testing.T) {
	runCases(t, []runCase{
		{name: "globals", code: "['require', 'process', 'fetch', 'XMLHttpRequest', 'Deno', 'Bun'].map(n => typeof globalThis[n])",
			result: `["undefined","undefined","undefined","undefined","undefined","undefined"]`},
		{name: "globals by name", code: "[typeof require, typeof process, typeof fetch]", result: `["undefined","undefined","undefined"]`},
	})
}

func TestLimits(t *testing.T) {
	// The runtime names the time from its start to the deadline, which a
	// busy machine shortens by the moments before Run began; the worker's
	// answer names the configured limit (worker.run), so only the prefix is
	// checked here.
	const timedOut = "timeout: execution exceeded "
	runCases(t, []runCase{
		{name: "loop timeout", code: "while (true) {}", timeout: 300 * time.Millisecond,
			limit: runtimes.LimitTimeout, errType: "TimeoutError", errMessage: timedOut, maxElapsed: time.Second},
		{name: "timeout in a caught loop", code: "for (;;) { try { while (true) {} } catch (e) {} }", timeout: 300 * time.Millisecond,
			limit: runtimes.LimitTimeout, errType: "TimeoutError", errMessage: timedOut, maxElapsed: time.Second},
		{name: "timer past the deadline", code: "setTimeout(() => console.log('never'), 10000); console.log('now')", timeout: 200 * time.Millisecond,
			stdout: "now\n", limit: runtimes.LimitTimeout, errType: "TimeoutError", errMessage: timedOut, maxElapsed: time.Second},
		{name: "endless interval", code: "setInterval(() => {}, 1); 1", timeout: 200 * time.Millisecond,
			result: "1", limit: runtimes.LimitTimeout, errType: "TimeoutError", maxElapsed: time.Second},
		{name: "endless jobs", code: "while (true) await null", timeout: 300 * time.Millisecond,
			limit: runtimes.LimitTimeout, errType: "TimeoutError", maxElapsed: time.Second},
		{name: "awaited loop", code: "await (async () => { while (true) {} })()", timeout: 2 * time.Second,
			limit: runtimes.LimitTimeout, errType: "TimeoutError", errMessage: timedOut, maxElapsed: 3 * time.Second},
		{name: "memory bomb", code: "let a = []; while (true) a.push(new Array(1e6).fill(1))", timeout: 30 * time.Second,
			limit: runtimes.LimitMemory, errType: "MemoryError", errMessage: "memory: limit of 256MiB reached"},
		{name: "string bomb", code: "const s = 'x'.repeat(1 << 20); const a = []; while (true) a.push(s + a.length + s)", timeout: 30 * time.Second,
			limit: runtimes.LimitMemory, errType: "MemoryError", errMessage: "memory: limit of 256MiB reached"},
		{name: "object bomb", code: "const a = []; while (true) a.push({i: a.length})", timeout: 60 * time.Second,
			limit: runtimes.LimitMemory, errType: "MemoryError", errMessage: "memory: limit of 256MiB reached"},
		{name: "caught out-of-memory is no limit", code: "let a = []; try { while (true) a.push(new Array(1e6).fill(1)) } catch (e) { a = null; } 'survived'",
			timeout: 30 * time.Second, result: `"survived"`},
	})
}

func TestRunOnce(t *testing.T) {
	in, stdout, stderr := testInstance(t, testEngine(t))
	if stdout.Len() != 0 || stderr.Len() != 0 {
		t.Fatalf("Prepare wrote %q, %q", stdout, stderr)
	}
	ctx := context.Background()
	if o := in.Run(ctx, runtimes.Request{Code: "1"}); string(o.Result) != "1" {
		t.Fatalf("first run: %+v", o)
	}
	if o := in.Run(ctx, runtimes.Request{Code: "1"}); o.Error == nil {
		t.Fatal("second run succeeded")
	}
}

func TestVersions(t *testing.T) {
	pkg, quickjs := Versions()
	if pkg != "0.32.0" || quickjs != "0.12.1" {
		t.Errorf("Versions() = %q, %q", pkg, quickjs)
	}
}

func TestCompileWithCache(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	for i := 0; i < 2; i++ {
		e, err := Compile(ctx, runtimes.Config{MemoryLimitBytes: 64 << 20, CacheDir: dir})
		if err != nil {
			t.Fatal(err)
		}
		_ = e.Close(ctx)
	}
	if entries, _ := os.ReadDir(dir); len(entries) == 0 {
		t.Error("the compilation cache is empty")
	}
	if _, err := Compile(ctx, runtimes.Config{MemoryLimitBytes: 1 << 10}); err == nil {
		t.Error("a limit below one page compiled")
	}
}

// BenchmarkPrepareRun: a fresh instance and a trivial expression.
func BenchmarkPrepareRun(b *testing.B) { runtimetest.BenchmarkRun(b, testEngine(b), "1+1", "2") }

// BenchmarkLoop measures interpreter speed: a 3e6-iteration loop.
func BenchmarkLoop(b *testing.B) {
	runtimetest.BenchmarkRun(b, testEngine(b), "let s = 0; for (let i = 0; i < 3e6; i++) s += i; s", "4499998500000")
}

// TestProvenance: what fetch.sh recorded is what the package embeds.
func TestProvenance(t *testing.T) {
	runtimetest.CheckProvenance(t, Provenance, "@jitl/quickjs-ng-wasmfile-release-sync")
}
