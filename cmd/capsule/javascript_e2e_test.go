package main

import (
	"testing"
	"time"
)

const seedJavaScript = `const revenue = [12400, 15800, 14200, 18900, 21000, 19500];
const growth = revenue.slice(1).map((v, i) => v - revenue[i]);
const best = growth.indexOf(Math.max(...growth));
({average: Math.round(revenue.reduce((a, b) => a + b) / revenue.length * 100) / 100,
  best_growth_month: best + 2, growth: growth[best]})
`

func TestJavaScriptEndToEnd(t *testing.T) {
	s := startServer(t, "--timeout", "3s", "--memory", "128MiB")
	cases := []expectation{
		{name: "seed example", code: seedJavaScript,
			result: `{"average":16966.67,"best_growth_month":4,"growth":4700}`},
		{name: "console plus expression", code: "console.log('hello', 42, {a: [1, 2]});\n6 * 7",
			stdoutExact: ptr("hello 42 { a: [ 1, 2 ] }\n"), result: "42"},
		{name: "console.error to stderr", code: "console.error('bad'); console.warn('careful')",
			stderr: "bad\ncareful\n", text: "[stderr]"},
		{name: "undefined has no JSON", code: "let x = 1", result: "null", typ: "undefined", repr: "undefined"},
		{name: "modern syntax", code: `class A { #p = 40; get p() { return this.#p } }
const o = {a: {b: null}};
const m = /(?<y>\d{4})-(?<mo>\d{2})/.exec('2024-05');
[new A().p + 2, o.a?.b?.c ?? 'none', (2n ** 64n).toString(), m.groups.y, [1, 2, 3].at(-1)]`,
			result: `[42,"none","18446744073709551616","2024",3]`},
		{name: "a big BigInt is its digits", code: "10n ** 20n", result: `"100000000000000000000"`, typ: "BigInt", repr: "100000000000000000000n"},
		{name: "thrown error with stack", code: "function inner() { throw new TypeError('nope') }\ninner()",
			isError: true, errType: "TypeError", errContains: "nope", traceContains: "inner"},
		{name: "syntax error", code: "let = = 1", isError: true, errType: "SyntaxError"},
		{name: "top-level await", code: "const v = await new Promise(r => setTimeout(() => r(5), 50));\nv * 2",
			result: "10"},
		{name: "promise result is awaited", code: "Promise.resolve({ok: true})", result: `{"ok":true}`},
		{name: "rejected promise is an error", code: "Promise.reject(new RangeError('denied'))",
			isError: true, errType: "RangeError", errContains: "denied"},
		{name: "timer ordering", code: `const order = [];
setTimeout(() => order.push('t100'), 100);
setTimeout(() => order.push('t10'), 10);
queueMicrotask(() => order.push('micro'));
const iv = setInterval(() => { order.push('iv'); if (order.filter(x => x === 'iv').length === 2) clearInterval(iv) }, 20);
const cancelled = setTimeout(() => order.push('never'), 5); clearTimeout(cancelled);
await new Promise(r => setTimeout(r, 200));
order`, result: `["micro","t10","iv","iv","t100"]`, minDuration: 200 * time.Millisecond},
		{name: "infinite loop hits the timeout", code: "console.log('start'); while (true) {}",
			isError: true, limit: "timeout", errContains: "timeout: execution exceeded 3s", stdout: "start"},
		{name: "memory bomb hits the memory limit", code: "const a = []; while (true) a.push(new Float64Array(1 << 21))",
			isError: true, limit: "memory", errContains: "128MiB"},
		{name: "deep recursion is a RangeError", code: "function f(n) { return f(n + 1) + 1 }\nf(0)",
			isError: true, errType: "RangeError", errContains: "Maximum call stack size exceeded"},
		{name: "output flood is truncated", code: "for (let i = 0; i < 3000; i++) console.log('x'.repeat(1000));\n'done'",
			isError: true, limit: "output", truncated: true, result: `"done"`},
		{name: "no host globals", code: "[typeof require, typeof process, typeof fetch, typeof XMLHttpRequest, typeof Deno, typeof Bun]",
			result: `["undefined","undefined","undefined","undefined","undefined","undefined"]`},
		{name: "no module imports", code: "await import('fs')", isError: true},
		{name: "export is a SyntaxError", code: "export const x = 1", isError: true, errType: "SyntaxError"},
		{name: "no Atomics", code: "typeof Atomics", result: `"undefined"`},
		{name: "await is a name in a plain script", code: "var await = 2; class K {}; await * 21", result: "42"},
		{name: "a thenable is not awaited", code: "({then(resolve) { resolve(1) }, n: 2})", result: "null", repr: "{ then: [Function: then], n: 2 }"},
		{name: "toJSON is not called", code: "({a: 1, toJSON() { return 'replaced' }})", result: "null", repr: "{ a: 1, toJSON: [Function: toJSON] }"},
		{name: "a promise that never settles is a value", code: "new Promise(() => {}); ", text: "[result]\nPromise { <pending> }", typ: "Promise"},
		{name: "a handled rejection is no error", code: "const p = Promise.reject(7); p.catch(() => console.log('handled')); p",
			stdout: "handled", text: "Promise {"},
	}
	for _, e := range cases {
		t.Run(e.name, func(t *testing.T) {
			res, st := s.call(t, "execute_javascript", e.code)
			check(t, res, st, e)
		})
	}
}
