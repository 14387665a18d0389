package javascript

import (
	"strings"
	"testing"
)

func TestMentionsAwait(t *testing.T) {
	tests := []struct {
		code string
		want bool
	}{
		{"await x", true},
		{"const v = await f();", true},
		{"for await (const x of y) {}", true},
		{"async function f() { await g() }", true},
		{"x = `${await f()}`", true},
		{"x = `a${ {b: 1}.b }c${await f()}`", true},
		{"var await;", true},
		{"'await'", false},
		{`"it's await"`, false},
		{"`await ${1} await`", false},
		{"// await\n1", false},
		{"/* await */ 1", false},
		{"/await/.test(s)", false},
		{"x = /[/]await/g", false},
		{"x.await", false},
		{"x?.await()", false},
		{"x. /* c */ await", false},
		{"class A { #await = 1 }", false},
		{"awaiting + notawait + await_ + $await", false},
		{"a / await / b", true},
		{"return /await/", false},
		{"aw\\u0061it", false},
	}
	for _, tt := range tests {
		if got := mentionsAwait(tt.code); got != tt.want {
			t.Errorf("mentionsAwait(%q) = %v, want %v", tt.code, got, tt.want)
		}
	}
}

func FuzzMentionsAwait(f *testing.F) {
	for _, s := range []string{"await x", "`${`${await 1}`}`", "/[/]/", "a/b/c", "'\\", "}}}`"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, code string) {
		// It must not panic or loop, and finds a token only where the word is.
		if mentionsAwait(code) && !strings.Contains(code, "await") {
			t.Errorf("mentionsAwait(%q) without the word", code)
		}
	})
}

// TestScriptMode: code runs as a plain script unless it uses top-level
// await (issue 11, item 7).
func TestScriptMode(t *testing.T) {
	runCases(t, []runCase{
		{name: "await as a variable", code: "var await; await = 3; await", result: "3"},
		{name: "await as a class", code: "class await {}; typeof await", result: `"function"`},
		{name: "await as a function", code: "function await(x) { return x + 1 }\nawait(1)", result: "2"},
		{name: "await as a label", code: "await: for (;;) break await; 'ok'", result: `"ok"`},
		{name: "top-level await", code: "const v = await Promise.resolve(41); v + 1", result: "42"},
		{name: "await of a parenthesised call", code: "await (async () => 5)()", result: "5"},
		{name: "for await", code: "let s = 0; for await (const v of [Promise.resolve(1), 2]) s += v; s", result: "3"},
		{name: "await only in a string", code: "'await'", result: `"await"`},
		{name: "await in a comment, as a name in the code", code: "// await the result\nvar await = 1; await", result: "1"},
		{name: "await that the scanner misreads", code: "if (true) {} /x'/.test('a'); const v = await 1; v", result: "1"},
		{name: "a run-time SyntaxError runs once", code: "console.log('await'); JSON.parse('{')",
			stdout: "await\n", errType: "SyntaxError"},
		{name: "a run-time SyntaxError after await runs once", code: "console.log('x'); await null; JSON.parse('{')",
			stdout: "x\n", errType: "SyntaxError"},
		{name: "both parses fail: the later error (plain)", code: "var await;\n1 +",
			errType: "SyntaxError", traceback: "<input>:2:"},
		{name: "both parses fail: the later error (async)", code: "const v = await 1;\nv +",
			errType: "SyntaxError", traceback: "<input>:2:"},
		{name: "plain syntax error", code: "let x = 1;\nx +", errType: "SyntaxError", traceback: "<input>:2:"},
	})
}
