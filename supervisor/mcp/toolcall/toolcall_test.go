package toolcall

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// decodeCases are JSON texts (and not quite JSON texts) the decoder must
// read exactly as encoding/json reads them into an any.
var decodeCases = []string{
	`{}`, `[]`, ` { "a" : [ 1 , -2.5e3 , true , false , null ] } `, `"plain"`, `""`,
	`"esc \" \\ \/ \b \f \n \r \t \u0041 \u00e9 \u20ac"`, `"pair \ud83d\ude00"`, `"lone \ud83d x"`,
	`"lone low \ude00"`, `"high then high \ud83d\ud83d\ude00"`, `"bad utf-8 ` + "\xff\xfe" + ` end"`,
	`"truncated utf-8 ` + "\xe2\x82" + `"`, `"escaped then bad \n` + "\xc3" + `"`,
	`{"a":1,"a":2}`, `{"":{"":[]}}`, `0`, `-0`, `1e400`, `-`, `01`, `1.`, `.5`, `1e`, `1e+`, `1E-2`,
	`tru`, `nul`, `true false`, `{"a" 1}`, `{"a":1,}`, `[1,]`, `[1 2]`, `{a:1}`, `"ctl ` + "\x01" + `"`,
	`"bad \x escape"`, `"\u12"`, `"\u12G4"`, `"unterminated`, `[`, `{`, `{"a":`, ``, `   `, `nullx`,
	`{"k\u00e9y":"v"}`, `[1.5e-7, 123456789012345678901234567890]`,
}

func TestDecoderReadsAsEncodingJSON(t *testing.T) {
	for _, in := range decodeCases {
		checkDecodesAsEncodingJSON(t, []byte(in))
	}
}

func checkDecodesAsEncodingJSON(t *testing.T, in []byte) {
	t.Helper()
	var want any
	wantErr := json.Unmarshal(in, &want)
	d := &decoder{b: in}
	got, err := d.value()
	if err == nil {
		err = d.end()
	}
	if d.depth != 0 && err == nil {
		t.Fatalf("%q: depth %d after the value", in, d.depth)
	}
	// A duplicate key is refused where encoding/json keeps the last;
	// encoding/json's tokens must show the same duplicate (or the text is
	// no JSON at all, past the duplicate).
	_, dup := err.(*keyError)
	if dup && json.Valid(in) && !hasDuplicateKey(in) || !dup && hasDuplicateKey(in) {
		t.Fatalf("%q: the decoder says %v; encoding/json's tokens say duplicate: %v", in, err, hasDuplicateKey(in))
	}
	if dup {
		return
	}
	switch {
	case err == nil && wantErr != nil:
		t.Fatalf("%q: decoded %#v, encoding/json refuses it: %v", in, got, wantErr)
	case err != nil && wantErr == nil && !tooDeep(in):
		t.Fatalf("%q: refused, encoding/json decodes %#v", in, want)
	case err == nil && !reflect.DeepEqual(got, want):
		t.Fatalf("%q: decoded %#v, encoding/json %#v", in, got, want)
	}
	// skip validates as json.Valid does (lenient: duplicates were
	// checked above).
	s := &decoder{b: in, lenient: true}
	_, skipErr := s.skip()
	if skipErr == nil {
		skipErr = s.end()
	}
	if (skipErr == nil) != json.Valid(in) && !tooDeep(in) {
		t.Fatalf("%q: skip says %v, json.Valid %v", in, skipErr, json.Valid(in))
	}
}

// hasDuplicateKey reports whether some object in in, a valid JSON text,
// holds a key twice, as encoding/json's tokens show it: a reading of its
// own, to check the decoder's against. It is false for text that is not
// JSON, or nests too deeply.
func hasDuplicateKey(in []byte) bool {
	if !json.Valid(in) || tooDeep(in) {
		return false
	}
	dec := json.NewDecoder(bytes.NewReader(in))
	type level struct {
		object bool
		keys   map[string]bool
		key    bool // the next string token is a key
	}
	var stack []*level
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		var top *level
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		switch v := tok.(type) {
		case json.Delim:
			switch v {
			case '{':
				if top != nil && top.object {
					top.key = true
				}
				stack = append(stack, &level{object: true, keys: map[string]bool{}, key: true})
			case '[':
				if top != nil && top.object {
					top.key = true
				}
				stack = append(stack, &level{})
			default:
				stack = stack[:len(stack)-1]
			}
			continue
		case string:
			if top != nil && top.object && top.key {
				if top.keys[v] {
					return true
				}
				top.keys[v] = true
				top.key = false
				continue
			}
		}
		if top != nil && top.object {
			top.key = true
		}
	}
}

// tooDeep reports whether in nests beyond what the decoder takes.
func tooDeep(in []byte) bool {
	return bytes.Count(in, []byte("["))+bytes.Count(in, []byte("{")) > maxDepth
}

func FuzzDecode(f *testing.F) {
	for _, in := range decodeCases {
		f.Add([]byte(in))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		checkDecodesAsEncodingJSON(t, in)
	})
}

// nested is n arrays, each the only element of the one around it.
func nested(n int) any {
	v := []any{}
	for range n - 1 {
		v = []any{v}
	}
	return v
}

// toolArguments are the argument names Split is given in the tests, as
// capsule's tools have them.
var toolArguments = []string{"code", "timeout_seconds", "inputs", "files"}

func TestSplit(t *testing.T) {
	tests := []struct {
		name, msg string
		want      string // the small message; empty: not split
		wantArgs  any
		// refused: the refusal's code, and what its message must hold.
		refused     int
		refusedSays string
		refusedID   string // the id the refusal answers; empty: null
	}{
		{name: "typical", msg: `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"execute_python","arguments":{"code":"1+1","files":{"a.csv":"x,y\n"}}}}` + "\n",
			want:     `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"execute_python","arguments":{}}}` + "\n",
			wantArgs: map[string]any{"code": "1+1", "files": map[string]any{"a.csv": "x,y\n"}}},
		{name: "id last, params first, _meta kept", msg: `{"method":"tools/call","params":{"arguments": {"code":"x"} ,"_meta":{"progressToken":1},"name":"t"},"jsonrpc":"2.0","id":"abc"}`,
			want:     `{"method":"tools/call","params":{"arguments": {} ,"_meta":{"progressToken":1},"name":"t"},"jsonrpc":"2.0","id":"abc"}`,
			wantArgs: map[string]any{"code": "x"}},
		{name: "escaped names read as every reader reads them", msg: `{"jsonrpc":"2.0","id":1,"\u006dethod":"tools/call","params":{"arguments":{"c\u006fde":"x"}}}`,
			want: `{"jsonrpc":"2.0","id":1,"\u006dethod":"tools/call","params":{"arguments":{}}}`, wantArgs: map[string]any{"code": "x"}},
		{name: "another method", msg: `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"arguments":{}}}`},
		{name: "a notification", msg: `{"jsonrpc":"2.0","method":"tools/call","params":{"arguments":{}}}`},
		{name: "null id", msg: `{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"arguments":{}}}`},
		{name: "an object id", msg: `{"jsonrpc":"2.0","id":{"a":1},"method":"tools/call","params":{"arguments":{}}}`},
		{name: "a boolean id", msg: `{"jsonrpc":"2.0","id":true,"method":"tools/call","params":{"arguments":{}}}`},
		{name: "not JSON at all", msg: "\xff\xfe"},
		{name: "empty", msg: ""},
		{name: "invalid UTF-8 in a file is kept as encoding/json reads it", msg: `{"jsonrpc":"2.0","id":-3,"method":"tools/call","params":{"arguments":{"files":{"a":"` + "\xff" + `"}}}}`,
			want: `{"jsonrpc":"2.0","id":-3,"method":"tools/call","params":{"arguments":{}}}`, wantArgs: map[string]any{"files": map[string]any{"a": "\uFFFD"}}},
		{name: "arguments not an object", msg: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":[1]}}`},
		{name: "no arguments", msg: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t"}}`},
		{name: "params not an object", msg: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":1}`},
		{name: "method not a string", msg: `{"jsonrpc":"2.0","id":1,"method":7,"params":{"arguments":{}}}`},
		{name: "trailing junk", msg: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{}}} x`},
		{name: "invalid elsewhere", msg: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{}},"x":[1,]}`},
		{name: "a batch", msg: `[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{}}}]`},

		// The ambiguous: refused, naming the key.
		{name: "tool name twice, by case", msg: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"execute_python","Name":"execute_javascript","arguments":{"code":"1"}}}`,
			refused: -32602, refusedSays: `"params" has the key "Name", which differs from "name"`, refusedID: "1"},
		{name: "arguments with a twin", msg: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{"code":"1"},"Arguments":{"code":"2"}}}`,
			refused: -32602, refusedSays: `key "Arguments"`, refusedID: "1"},
		{name: "arguments with a long s", msg: `{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"argument\u017f":{"code":"1"}}}`,
			refused: -32602, refusedSays: `key "argument\u017f", which differs from "arguments"`, refusedID: `"a"`},
		{name: "arguments twice", msg: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{},"arguments":{"code":"x"}}}`,
			refused: -32602, refusedSays: `"params" has the key "arguments" more than once`, refusedID: "1"},
		{name: "code twice", msg: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{"code":"1","code":"2"}}}`,
			refused: -32602, refusedSays: `"params.arguments" has the key "code" more than once`, refusedID: "1"},
		{name: "an argument by case", msg: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{"Code":"1"}}}`,
			refused: -32602, refusedSays: `"params.arguments" has the key "Code", which differs from "code"`, refusedID: "1"},
		{name: "a file twice", msg: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{"code":"1","files":{"a.txt":"x","a.txt":"y"}}}}`,
			refused: -32602, refusedSays: `"params.arguments.files" has the key "a.txt" more than once`, refusedID: "1"},
		{name: "a key twice deep in inputs", msg: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{"code":"1","inputs":{"a":[{},{"b":1,"\u0062":2}]}}}}`,
			refused: -32602, refusedSays: `"params.arguments.inputs.a[1]" has the key "b" more than once`, refusedID: "1"},
		{name: "id twice, by case", msg: `{"jsonrpc":"2.0","id":4,"ID":5,"method":"tools/call","params":{"arguments":{}}}`,
			refused: -32600, refusedSays: `the message has the key "ID", which differs from "id"`},
		{name: "id twice", msg: `{"jsonrpc":"2.0","id":4,"id":5,"method":"ping"}`,
			refused: -32600, refusedSays: `the message has the key "id" more than once`},
		{name: "method capitalised", msg: `{"jsonrpc":"2.0","id":1,"Method":"tools/call","params":{"arguments":{}}}`,
			refused: -32600, refusedSays: `key "Method"`, refusedID: "1"},
		{name: "params twice", msg: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{}},"params":{}}`,
			refused: -32600, refusedSays: `key "params" more than once`, refusedID: "1"},
		{name: "Kelvin sign for k", msg: `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"tas\u212aId":"x"}}`,
			refused: -32602, refusedSays: `key "tas\u212aId", which differs from "taskId"`, refusedID: "1"},
		{name: "dotless i is no i", msg: `{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"ur\u0131":"x"}}`},
		{name: "another method's params by case", msg: `{"jsonrpc":"2.0","id":2,"method":"logging/setLevel","params":{"LEVEL":"debug"}}`,
			refused: -32602, refusedSays: `key "LEVEL", which differs from "level"`, refusedID: "2"},
		{name: "deep, as encoding/json takes it", msg: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{"a":` + strings.Repeat("[", 1500) + strings.Repeat("]", 1500) + `}}}`,
			want: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{}}}`, wantArgs: map[string]any{"a": nested(1500)}},
		{name: "too deep", msg: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{"a":` + strings.Repeat("[", 10001) + strings.Repeat("]", 10001) + `}}}`,
			refused: -32600, refusedSays: "nests more than 10000 levels deep"},
		{name: "an unknown key differing by case from another unknown one", msg: `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":1,"X":2}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			call, small, refusal := Split([]byte(tt.msg), toolArguments)
			if (refusal != nil) != (tt.refused != 0) {
				t.Fatalf("refusal %+v, want one: %v", refusal, tt.refused != 0)
			}
			if refusal != nil {
				if refusal.Code != tt.refused || !strings.Contains(refusal.Message, tt.refusedSays) || string(refusal.ID) != tt.refusedID {
					t.Errorf("refusal %d %q (id %s), want %d saying %q (id %s)", refusal.Code, refusal.Message, refusal.ID, tt.refused, tt.refusedSays, tt.refusedID)
				}
				return
			}
			if (call != nil) != (tt.want != "") {
				t.Fatalf("split: %v, want %v", call != nil, tt.want != "")
			}
			if call == nil {
				return
			}
			if string(small) != tt.want {
				t.Errorf("small message %s, want %s", small, tt.want)
			}
			if !reflect.DeepEqual(call.Arguments, tt.wantArgs) {
				t.Errorf("arguments %#v, want %#v", call.Arguments, tt.wantArgs)
			}
		})
	}
}

// FuzzSplit checks that whatever Split takes, encoding/json reads the same
// way: a tools/call with these arguments, and the small message the same
// but for empty arguments.
func FuzzSplit(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"t","arguments":{"code":"1","files":{"a":"\u00e9\n"}}}}`))
	f.Add([]byte(`{"method":"tools/call","params":{"arguments":{"files":{"b":{"base64":"AA=="}}}},"id":"x"}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{},"Arguments":{}}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{"code":"1","code":"2"}}}`))
	f.Fuzz(func(t *testing.T, msg []byte) {
		call, small, _ := Split(msg, toolArguments)
		if call == nil {
			return
		}
		var whole struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Arguments any `json:"arguments"`
			} `json:"params"`
		}
		if err := json.Unmarshal(msg, &whole); err != nil {
			t.Fatalf("split %q, which encoding/json refuses: %v", msg, err)
		}
		if whole.Method != Method || !reflect.DeepEqual(whole.Params.Arguments, call.Arguments) || !bytes.Equal(whole.ID, call.ID) {
			t.Fatalf("split %q as %s %#v, encoding/json reads %s %s %#v", msg, call.ID, call.Arguments, whole.ID, whole.Method, whole.Params.Arguments)
		}
		var before, after map[string]any
		if json.Unmarshal(msg, &before) != nil || json.Unmarshal(small, &after) != nil {
			t.Fatalf("small message %q is not JSON", small)
		}
		before["params"].(map[string]any)["arguments"] = map[string]any{}
		if !reflect.DeepEqual(before, after) {
			t.Fatalf("small message %q of %q differs beyond the arguments", small, msg)
		}
	})
}

func TestAppendStringReadsBack(t *testing.T) {
	for _, s := range []string{"", "plain", "a,b\n1,2\r\n", "\"quoted\" \\ back", "\x00\x01\x1f\x7f", "<>&", "é€😀",
		"bad \xff\xfe utf-8", "\xe2\x82", "\u2028\u2029", strings.Repeat("x,y\n", 1000)} {
		checkAppendString(t, []byte(s))
	}
}

func checkAppendString(t *testing.T, s []byte) {
	t.Helper()
	enc := append(AppendString([]byte(`"`), s), '"')
	var got string
	if err := json.Unmarshal(enc, &got); err != nil {
		t.Fatalf("%q encodes as %s, not JSON: %v", s, enc, err)
	}
	want, _ := json.Marshal(string(s))
	var wantS string
	_ = json.Unmarshal(want, &wantS)
	if got != wantS {
		t.Fatalf("%q reads back as %q, want %q", s, got, wantS)
	}
}

func FuzzAppendString(f *testing.F) {
	f.Add([]byte("a\n\"\\\x00\xff"))
	f.Fuzz(func(t *testing.T, s []byte) { checkAppendString(t, s) })
}

func TestSplice(t *testing.T) {
	call, _, _ := Split([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{}}}`), toolArguments)
	if call == nil {
		t.Fatal("not split")
	}
	if got := call.Splice([]byte(`{"a":1}`)); string(got) != `{"a":1}` {
		t.Errorf("with no attachment: %s", got)
	}
	text := call.Text([]byte("x,y\n\"1\",2\n"))
	blob := call.Base64([]byte{0, 1, 2, 0xff})
	result, _ := json.Marshal(map[string]any{"content": []any{
		map[string]any{"text": text}, map[string]any{"blob": blob},
		map[string]any{"text": placeholderPrefix + call.nonce + ":9"}, // no such attachment
		map[string]any{"text": placeholderPrefix + "0123:0"},          // another call's
	}})
	var got struct {
		Content []struct{ Text, Blob string }
	}
	if err := json.Unmarshal(call.Splice(result), &got); err != nil {
		t.Fatalf("spliced %s: %v", call.Splice(result), err)
	}
	want := []struct{ Text, Blob string }{
		{Text: "x,y\n\"1\",2\n"}, {Blob: base64.StdEncoding.EncodeToString([]byte{0, 1, 2, 0xff})},
		{Text: placeholderPrefix + call.nonce + ":9"}, {Text: placeholderPrefix + "0123:0"},
	}
	if !reflect.DeepEqual(got.Content, want) {
		t.Errorf("spliced %+v, want %+v", got.Content, want)
	}
	var none *Call
	if none.Text([]byte("t")) != "t" || none.Base64([]byte{1}) != "AQ==" {
		t.Error("a nil call does not give the content itself")
	}
}

func TestContext(t *testing.T) {
	if FromContext(context.Background()) != nil {
		t.Error("a call from nowhere")
	}
	c := &Call{}
	if FromContext(NewContext(context.Background(), c)) != c {
		t.Error("the call is not carried")
	}
}

// csvOf makes a CSV of n bytes, like the bench's files row.
func csvOf(n int) []byte {
	var b bytes.Buffer
	b.WriteString("id,name,amount,date\n")
	for i := 0; b.Len() < n; i++ {
		b.WriteString(strings.Repeat("7", 1+i%5) + ",customer " + strings.Repeat("3", 1+i%3) + ",12.50,2026-01-02\n")
	}
	return b.Bytes()[:n]
}

// BenchmarkSplit measures one pass over a tools/call with a 5 MiB CSV, the
// pass that replaces encoding/json's many (go test -bench . ./supervisor/mcp/toolcall).
func BenchmarkSplit(b *testing.B) {
	msg, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": Method, "params": map[string]any{
		"name": "execute_python", "arguments": map[string]any{"code": "x", "files": map[string]any{"data.csv": string(csvOf(5 << 20))}}}})
	b.SetBytes(int64(len(msg)))
	for b.Loop() {
		if call, _, _ := Split(msg, toolArguments); call == nil {
			b.Fatal("not split")
		}
	}
}

// BenchmarkSpliceText measures encoding a returned 5 MiB CSV into a result.
func BenchmarkSpliceText(b *testing.B) {
	data := csvOf(5 << 20)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		call := &Call{nonce: "n"}
		enc := []byte(`{"text":"` + call.Text(data) + `"}`)
		call.Splice(enc)
	}
}
