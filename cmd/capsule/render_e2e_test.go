package main

// One rendering rule per language, as every client reads it (issue 21,
// items 1 to 3): the text shows what the REPL shows, structuredContent has
// exact JSON where the value maps, its type and its repr, ints beyond ±2^53
// as digit strings, and None apart from no last expression.

import (
	"fmt"
	"strings"
	"testing"
)

// rendering is what one value must come back as.
type rendering struct {
	tool, code string
	result     any    // structuredContent.result as a JSON reader has it
	typ        any    // result_type: a string, or nil
	repr       any    // result_repr: a string, or nil
	text       string // the [result] section, "" for none
}

var renderings = []rendering{
	{"execute_python", "{1, 2}", nil, "set", "{1, 2}", "{1, 2}"},
	{"execute_python", "'{1, 2}'", "{1, 2}", "str", "'{1, 2}'", "'{1, 2}'"},
	{"execute_python", "frozenset({3})", nil, "frozenset", "frozenset({3})", "frozenset({3})"},
	{"execute_python", "import decimal\ndecimal.Decimal('1.10')", nil, "Decimal", "Decimal('1.10')", "Decimal('1.10')"},
	{"execute_python", "import datetime\ndatetime.datetime(2024, 2, 29, 12, 30)", nil, "datetime", "datetime.datetime(2024, 2, 29, 12, 30)", "datetime.datetime(2024, 2, 29, 12, 30)"},
	{"execute_python", "float('nan'), float('inf')", nil, "tuple", "(nan, inf)", "(nan, inf)"},
	{"execute_python", `b'a\\b'`, nil, "bytes", `b'a\\b'`, `b'a\\b'`},
	{"execute_python", "(1, 'x')", []any{1.0, "x"}, "tuple", "(1, 'x')", "(1, 'x')"},
	{"execute_python", "{1: 'a'}", nil, "dict", "{1: 'a'}", "{1: 'a'}"},
	{"execute_python", "2**64", "18446744073709551616", "int", "18446744073709551616", "18446744073709551616"},
	{"execute_python", "10**400", "1" + strings.Repeat("0", 400), "int", "1" + strings.Repeat("0", 400), "1" + strings.Repeat("0", 400)},
	{"execute_python", "[2**53, -2**64]", []any{9007199254740992.0, "-18446744073709551616"}, "list", "[9007199254740992, -18446744073709551616]", "[9007199254740992, -18446744073709551616]"},
	{"execute_python", "None", nil, "NoneType", "None", ""},
	{"execute_python", "x = 1", nil, nil, nil, ""},
	{"execute_javascript", "new Map([['a', 1]])", nil, "Map", "Map(1) { 'a' => 1 }", "Map(1) { 'a' => 1 }"},
	{"execute_javascript", "NaN", nil, "Number", "NaN", "NaN"},
	{"execute_javascript", "10n ** 20n", "100000000000000000000", "BigInt", "100000000000000000000n", "100000000000000000000n"},
	{"execute_javascript", "new Date(0)", nil, "Date", "1970-01-01T00:00:00.000Z", "1970-01-01T00:00:00.000Z"},
	{"execute_javascript", "new Uint8Array([1, 2])", nil, "Uint8Array", "Uint8Array(2) [ 1, 2 ]", "Uint8Array(2) [ 1, 2 ]"},
	{"execute_javascript", "({a: [1, 'x']})", map[string]any{"a": []any{1.0, "x"}}, "Object", "{ a: [ 1, 'x' ] }", "{ a: [ 1, 'x' ] }"},
	{"execute_javascript", "'Map(1) {}'", "Map(1) {}", "String", "'Map(1) {}'", "'Map(1) {}'"},
	{"execute_javascript", "undefined", nil, "undefined", "undefined", ""},
}

func TestRenderingThroughEveryClient(t *testing.T) {
	var calls []sdkCall
	for _, r := range renderings {
		calls = append(calls, sdkCall{r.tool, map[string]any{"code": r.code}})
	}
	for client, outcomes := range callEverywhere(t, nil, calls) {
		t.Run(strings.ReplaceAll(client, "/", "-"), func(t *testing.T) {
			for i, want := range renderings {
				o := outcomes[i]
				sc := o.Structured
				if o.IsError || fmt.Sprint(sc["result"]) != fmt.Sprint(want.result) || sc["result_type"] != want.typ || sc["result_repr"] != want.repr {
					t.Errorf("%s %q: isError %v, result %#v type %#v repr %#v; want %#v %#v %#v",
						want.tool, want.code, o.IsError, sc["result"], sc["result_type"], sc["result_repr"], want.result, want.typ, want.repr)
				}
				text := o.text()
				if want.text == "" && strings.Contains(text, "[result]") || want.text != "" && !strings.Contains(text, "[result]\n"+want.text) {
					t.Errorf("%s %q: text %q, want the result shown as %q", want.tool, want.code, text, want.text)
				}
			}
		})
	}
}
