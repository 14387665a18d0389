package main

// The input schema tells the truth: what it admits the server takes, and
// what the server refuses the schema says it will.

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestSchemaTellsTheTruth(t *testing.T) {
	flags := []string{"--max-code", "1000", "--timeout", "1s", "--max-timeout", "2s"}
	calls := []sdkCall{
		// 600 two-byte characters: 1200 bytes, within the 1000 characters
		// maxLength admits.
		{"execute_python", map[string]any{"code": "s = '" + strings.Repeat("é", 600) + "'\nlen(s)"}},
		{"execute_javascript", map[string]any{"code": "'" + strings.Repeat("é", 991) + "'.length"}},
		{"execute_python", map[string]any{"code": "'" + strings.Repeat("é", 999) + "'"}},
		{"execute_python", map[string]any{"code": "1", "timeout_seconds": 500}},
		{"execute_javascript", map[string]any{"code": "1", "timeout_seconds": 2}},
	}
	for name, outcomes := range callEverywhere(t, flags, calls) {
		t.Run(strings.ReplaceAll(name, "/", "-"), func(t *testing.T) {
			if o := outcomes[0]; o.IsError || o.Structured["result"] != float64(600) {
				t.Errorf("600 × é: isError %v, %v: the schema admits it, so the server must take it", o.IsError, o.Structured)
			}
			if o := outcomes[1]; o.IsError || o.Structured["result"] != float64(991) {
				t.Errorf("1000 characters of JavaScript: isError %v, %v", o.IsError, o.Structured)
			}
			if o := outcomes[2]; !o.IsError || o.Structured["limit"] != "code_size" || !strings.Contains(o.text(), "1001 characters") {
				t.Errorf("1001 characters: isError %v, %q, want limit code_size naming 1001 characters", o.IsError, o.text())
			}
			if o := outcomes[3]; !o.IsError || !strings.Contains(o.text(), "above the most a call may ask for") || !strings.Contains(o.text(), "2 seconds") {
				t.Errorf("timeout_seconds 500: isError %v, %q, want it refused naming the 2-second maximum", o.IsError, o.text())
			}
			if o := outcomes[4]; o.IsError {
				t.Errorf("timeout_seconds at the maximum: %q", o.text())
			}
		})
	}
	// The schema says so.
	s := startHTTPServer(t, []string{"CAPSULE_AUTH_TOKEN=" + testToken}, flags...)
	run := runTS(t, tsHTTP(s, []map[string]any{{"op": "list"}}))
	var tools []struct {
		Name        string
		InputSchema struct {
			Properties map[string]struct {
				MaxLength   int     `json:"maxLength"`
				Maximum     float64 `json:"maximum"`
				Description string  `json:"description"`
			} `json:"properties"`
		} `json:"inputSchema"`
	}
	if err := json.Unmarshal(run.Steps[0].OK, &tools); err != nil || len(tools) != 2 {
		t.Fatalf("tools/list: %v %s", err, run.Steps[0].OK)
	}
	for _, tool := range tools {
		p := tool.InputSchema.Properties
		if p["code"].MaxLength != 1000 || !strings.Contains(p["code"].Description, "1000 characters") {
			t.Errorf("%s: code %+v, want maxLength 1000 and the limit in characters", tool.Name, p["code"])
		}
		if p["timeout_seconds"].Maximum != 2 || !strings.Contains(p["timeout_seconds"].Description, "refused") {
			t.Errorf("%s: timeout_seconds %+v, want maximum 2 and that more is refused", tool.Name, p["timeout_seconds"])
		}
	}
}
