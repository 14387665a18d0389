package mcp

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"capsule/runtimes"
	"capsule/supervisor"
)

func TestAnswerJSONShape(t *testing.T) {
	a := &supervisor.Answer{Error: &runtimes.ErrorInfo{Type: "WorkerError", Message: "worker was killed"}}
	b, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	var schema struct{ Required []string }
	if err := json.Unmarshal([]byte(outputSchema), &schema); err != nil {
		t.Fatal(err)
	}
	want := schema.Required
	if len(m) != len(want) {
		t.Fatalf("structured answer has fields %v, want exactly %v", m, want)
	}
	for _, k := range want {
		if _, ok := m[k]; !ok {
			t.Errorf("field %q missing from %s", k, b)
		}
	}
	if m["result"] != nil || m["limit"] != nil {
		t.Errorf("result and limit must be null: %s", b)
	}
}

// FuzzParseArguments throws arbitrary JSON at the tool argument handling:
// it must never panic, and accepted arguments always hold the given code.
func FuzzParseArguments(f *testing.F) {
	f.Add([]byte(`{"code":"print(1)"}`))
	f.Add([]byte(`{"code":12}`))
	f.Add([]byte(`{}`))
	f.Add([]byte(`[]`))
	f.Add([]byte(`{"code":"x","extra":null}`))
	f.Add([]byte(`null`))
	f.Add([]byte(`{"code":"x","files":{"a.csv":"1,2","b/c":{"base64":"AAE="},"../d":"x"}}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		args, err := ParseArguments(json.RawMessage(raw))
		if err != nil {
			return
		}
		var m map[string]any
		if json.Unmarshal(raw, &m) != nil || m["code"] != args.Code {
			t.Fatalf("accepted %q as code %q", raw, args.Code)
		}
	})
}

func TestParseArgumentsBounds(t *testing.T) {
	deep := strings.Repeat(`{"a":`, MaxInputsDepth) + `1` + strings.Repeat(`}`, MaxInputsDepth)
	tooDeep := strings.Repeat(`[`, MaxInputsDepth) + strings.Repeat(`]`, MaxInputsDepth)
	tests := []struct {
		name, raw, wantErr string
	}{
		{"tiny timeout", `{"code":"1","timeout_seconds":1e-10}`, "below the smallest timeout"},
		{"smallest timeout", `{"code":"1","timeout_seconds":0.001}`, ""},
		// Zero is a number: the message says what is wrong with it.
		{"zero timeout", `{"code":"1","timeout_seconds":0}`, `"timeout_seconds" is 0, below the smallest timeout of 0.001 seconds`},
		{"negative timeout", `{"code":"1","timeout_seconds":-2}`, `"timeout_seconds" is -2, below the smallest timeout`},
		{"huge timeout", `{"code":"1","timeout_seconds":1e300}`, `"timeout_seconds" is 1e+300, far above`},
		{"string timeout", `{"code":"1","timeout_seconds":"5"}`, `must be a number of seconds, got a string`},
		{"inputs at the depth limit", `{"code":"1","inputs":` + deep[len(`{"a":`):len(deep)-1] + `}`, ""},
		{"inputs too deep", `{"code":"1","inputs":{"a":` + tooDeep + `}}`, "nests more than 100 levels"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseArguments(json.RawMessage(tt.raw))
			if tt.wantErr == "" && err != nil {
				t.Fatalf("refused: %v", err)
			}
			if tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("err = %v, want %q", err, tt.wantErr)
			}
		})
	}
}

// TestREADMEResultTableMatchesSchema: the README's table of the answer's
// fields names exactly the output schema's properties.
func TestREADMEResultTableMatchesSchema(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(readme), "| field | meaning |\n|---|---|\n")
	if !ok {
		t.Fatal("README.md has no table of the answer's fields")
	}
	inREADME := map[string]bool{}
	for _, row := range strings.Split(table, "\n") {
		if !strings.HasPrefix(row, "| ") {
			break
		}
		first, _, _ := strings.Cut(strings.TrimPrefix(row, "| "), " |")
		for _, f := range strings.Split(first, ", ") {
			inREADME[strings.Trim(f, "`")] = true
		}
	}
	var schema struct{ Properties map[string]json.RawMessage }
	if err := json.Unmarshal([]byte(outputSchema), &schema); err != nil {
		t.Fatal(err)
	}
	for f := range schema.Properties {
		if !inREADME[f] {
			t.Errorf("the output schema's %q is not in the README's table", f)
		}
	}
	for f := range inREADME {
		if _, ok := schema.Properties[f]; !ok {
			t.Errorf("the README's table names %q, which the output schema does not have", f)
		}
	}
}

func TestParseArgumentsFiles(t *testing.T) {
	tests := []struct {
		args string
		err  string
	}{
		{`{"code":"1","files":{"a.csv":"x","b":{"base64":"AA=="}}}`, ""},
		{`{"code":"1","files":{}}`, ""},
		{`{"code":"1","files":[]}`, `argument "files" must be an object`},
		{`{"code":"1","files":{"/etc/passwd":"x"}}`, `file "/etc/passwd": the path is absolute`},
		{`{"code":"1","files":{"a/../../b":"x"}}`, `file "a/../../b": the path contains ".."`},
		{`{"code":"1","files":{"a\u0000b":"x"}}`, `file "a\x00b": the path contains a NUL byte`},
		{`{"code":"1","files":{"a":"x","a/b":"y"}}`, `file "a/b": the path is inside "a", which is a file`},
		{`{"code":"1","files":{"1/2/3/4/5/6/7/8/9":"x"}}`, "the path has 9 levels, more than 8"},
		{`{"code":"1","files":{"outputs/a":"x"}}`, "the path is in outputs/"},
		{`{"code":"1","files":{"a":{"base64":"!!"}}}`, `file "a": the content is not valid base64`},
		{`{"code":"1","files":{"a":3}}`, `file "a": the content must be a string (UTF-8 text) or {"base64": "..."} (bytes), got a number`},
	}
	for _, tt := range tests {
		args, err := ParseArguments(json.RawMessage(tt.args))
		if tt.err == "" {
			if err != nil {
				t.Errorf("%s: %v", tt.args, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tt.err) {
			t.Errorf("%s: err %v, want %q (files %+v)", tt.args, err, tt.err, args.Files)
		}
	}
	long := `{"code":"1","files":{"` + strings.Repeat("x", 256) + `":"x"}}`
	if _, err := ParseArguments(json.RawMessage(long)); err == nil || !strings.Contains(err.Error(), "256 bytes, longer than 255") {
		t.Errorf("a long path: %v", err)
	}
}
