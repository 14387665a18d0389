package javascript

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"capsule/runtimes/internal/runtimetest"
)

// TestLastValue: what is awaited, and how the last value is rendered
// without running the value's own code (issue 11, item 8).
func TestLastValue(t *testing.T) {
	runCases(t, []runCase{
		// Only native promises are awaited.
		{name: "native promise", code: "Promise.resolve({ok: true})", result: `{"ok":true}`},
		{name: "promise settled by a timer", code: "new Promise(r => setTimeout(r, 10, 'late'))", result: `"late"`},
		{name: "promise subclass", code: "class P extends Promise {}; P.resolve(3)", result: "3"},
		{name: "thenable is a value", code: "({then(r) { r(9) }, a: 1})", result: "", typ: "Object", repr: `{ then: [Function: then], a: 1 }`},
		{name: "then of a native promise is not read",
			code:   "Object.defineProperty(Promise.resolve(1), 'then', {get() { console.log('then read'); throw new Error('no') }})",
			result: "1"},
		{name: "thenable with a throwing then getter", code: "({get then() { throw new Error('no') }, a: 1})",
			result: "", typ: "Object", repr: `{ then: [Getter], a: 1 }`},
		// Promises that do not fulfil.
		{name: "unhandled rejection is the error", code: "Promise.reject(new RangeError('no'))", errType: "RangeError", errMessage: "no"},
		{name: "handled rejection is no error",
			code:   "const p = Promise.reject(42); p.catch(e => console.log('caught', e)); p",
			stdout: "caught 42\n", result: "", typ: "Promise", repr: `Promise { <rejected> 42 }`},
		{name: "rejection awaited inside is handled",
			code:   "const p = (async () => { throw 'x' })(); (async () => { try { await p } catch { console.log('ok') } })(); p",
			stdout: "ok\n", result: "", typ: "Promise", repr: `Promise { <rejected> 'x' }`},
		{name: "never settles", code: "new Promise(() => {})", result: "", typ: "Promise", repr: `Promise { <pending> }`},
		{name: "never settles, after timers", code: "setTimeout(() => console.log('t'), 5); new Promise(() => {})",
			stdout: "t\n", result: "", typ: "Promise", repr: `Promise { <pending> }`},
		{name: "deadline while waiting", code: "new Promise(r => setTimeout(r, 10000))", timeout: 200 * time.Millisecond,
			limit: "timeout", errType: "TimeoutError", maxElapsed: 2 * time.Second},
		// No user code runs while rendering, or it cannot fail the run.
		{name: "toJSON is not called", code: "({a: 1, toJSON() { console.log('ran'); return 'x' }})", result: "", typ: "Object", repr: `{ a: 1, toJSON: [Function: toJSON] }`},
		{name: "throwing toJSON", code: "class D { constructor() { this.v = 1 } toJSON() { throw new Error('no') } }; [new D()]",
			result: "", typ: "Array", repr: `[ D { v: 1 } ]`},
		{name: "getter is not called", code: "({get x() { console.log('ran'); return 1 }, y: 2})", result: "", typ: "Object", repr: `{ x: [Getter], y: 2 }`},
		{name: "valueOf is not called", code: "const n = new Number(3); n.valueOf = () => { throw new Error('no') }; [n, new String('s'), new Boolean(false)]",
			result: "", typ: "Array"},
		{name: "Date ignores its methods", code: "const d = new Date(0); d.toJSON = d.toISOString = () => 'x'; d", result: "", typ: "Date", repr: "1970-01-01T00:00:00.000Z {\n  toISOString: [Function (anonymous)],\n  toJSON: [Function (anonymous)]\n}"},
		{name: "invalid Date", code: "[new Date(NaN)]", result: "", typ: "Array", repr: `[ Invalid Date ]`},
		{name: "transparent proxy", code: "new Proxy({a: [1, 2]}, {})", result: `{"a":[1,2]}`},
		{name: "throwing proxy trap", code: "new Proxy({}, {ownKeys() { throw new Error('trap') }})",
			result: "", typ: "Object", repr: `[object that cannot be shown: rendering it threw]`},
		{name: "throwing proxy inside", code: "({p: new Proxy({}, {getOwnPropertyDescriptor() { throw new Error('trap') }, ownKeys() { return ['a'] }})})",
			result: "", typ: "Object", repr: `[object that cannot be shown: rendering it threw]`},
		{name: "revoked proxy", code: "const r = Proxy.revocable([], {}); r.revoke(); r.proxy",
			result: "", typ: "object", repr: `[object that cannot be shown: rendering it threw]`},
		{name: "fake Map", code: "Object.create(Map.prototype)", result: "", typ: "Map", repr: `Map {}`},
		{name: "hasInstance is not consulted", code: "Object.defineProperty(Map, Symbol.hasInstance, {value: () => { throw new Error('no') }}); new Map([[1, 2]])",
			result: "", typ: "Map", repr: `Map(1) { 1 => 2 }`},
		{name: "JSON semantics", code: "[1, , undefined, () => 1, Symbol('s'), {u: undefined, f() {}, n: NaN}]",
			result: "", typ: "Array", repr: "[\n  1,\n  <1 empty item>,\n  undefined,\n  [Function (anonymous)],\n  Symbol(s),\n  { u: undefined, f: [Function: f], n: NaN }\n]"},
		{name: "accessor on Object.prototype.value", code: "Object.defineProperty(Object.prototype, 'value', {set(v) {}, get() { return 'hook' }, configurable: true}); await null; 7",
			result: ""},
	})
}

// TestEngineLacks proves what the tool description and README say the
// engine does not have (issue 11, item 9).
func TestEngineLacks(t *testing.T) {
	runCases(t, []runCase{
		{name: "no Atomics", code: "[typeof Atomics, 'Atomics' in globalThis]", result: `["undefined",false]`},
		{name: "import is a SyntaxError", code: "import fs from 'fs'", errType: "SyntaxError"},
		{name: "export is a SyntaxError", code: "export const x = 1", errType: "SyntaxError", errMessage: "unsupported keyword: export"},
		{name: "import.meta is a SyntaxError", code: "import.meta", errType: "SyntaxError"},
		{name: "import() rejects", code: "import('fs').then(() => 'loaded', e => [e.name, e.message])",
			result: `["ReferenceError","could not load module 'fs'"]`},
		{name: "awaited import() throws", code: "await import('./x.js')", errType: "ReferenceError", errMessage: "could not load module"},
	})
}

// BenchmarkLargeResult measures rendering: 10,000 small objects as the
// result (about 200 KB of JSON), against the same run returning a number.
func BenchmarkLargeResult(b *testing.B) {
	const n = 10000
	var want strings.Builder
	want.WriteString("[")
	for i := 0; i < n; i++ {
		if i > 0 {
			want.WriteString(",")
		}
		fmt.Fprintf(&want, `{"i":%d,"s":"x%d"}`, i, i)
	}
	want.WriteString("]")
	build := fmt.Sprintf("const rows = Array.from({length: %d}, (_, i) => ({i, s: 'x' + i}));", n)
	b.Run("rendered", func(b *testing.B) { runtimetest.BenchmarkRun(b, testEngine(b), build+" rows", want.String()) })
	b.Run("JSON.stringify", func(b *testing.B) {
		runtimetest.BenchmarkRun(b, testEngine(b), build+" JSON.stringify(rows).length", fmt.Sprint(want.Len()))
	})
	b.Run("not rendered", func(b *testing.B) { runtimetest.BenchmarkRun(b, testEngine(b), build+" rows.length", fmt.Sprint(n)) })
}
