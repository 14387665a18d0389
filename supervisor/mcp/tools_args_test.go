package mcp

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"capsule/runtimes"
	"capsule/supervisor"
)

// TestArgumentErrorsAreStructured: a call whose arguments are refused is
// answered with structuredContent like any other answer (both tools
// declare an output schema), with error type ArgumentError and a message
// naming what is wrong, and isError set.
func TestArgumentErrorsAreStructured(t *testing.T) {
	s := newTestTools(t, supervisor.DefaultConfig(testLanguages))
	tests := []struct {
		name string
		args string
		want string
	}{
		{"timeout above the maximum", `{"code":"1","timeout_seconds":1000}`, "above the most a call may ask for on this server: 120 seconds (--max-timeout)"},
		{"timeout zero", `{"code":"1","timeout_seconds":0}`, "is 0, below the smallest timeout"},
		{"unknown argument", `{"code":"1","language":"go"}`, `unknown argument "language"`},
		{"code not a string", `{"code":5}`, `argument "code" must be a string, got a number`},
		{"code missing", `{}`, `missing required argument "code"`},
		{"inputs not an object", `{"code":"1","inputs":[1]}`, `argument "inputs" must be a JSON object, got an array`},
		{"path rule", `{"code":"1","files":{"../up.txt":"x"}}`, `../up.txt`},
		{"bad base64", `{"code":"1","files":{"a.bin":{"base64":"!!!"}}}`, `a.bin`},
		{"arguments not an object", `[1]`, `arguments must be an object`},
	}
	for _, lang := range []string{runtimes.Python, runtimes.JavaScript} {
		for _, tt := range tests {
			req := mcpgo.CallToolRequest{}
			req.Params.Arguments = json.RawMessage(tt.args)
			res, err := s.handler(lang)(context.Background(), req)
			if err != nil {
				t.Fatalf("%s %s: %v", lang, tt.name, err)
			}
			if !res.IsError {
				t.Errorf("%s %s: isError is false", lang, tt.name)
			}
			b, err := json.Marshal(res.StructuredContent)
			if err != nil || res.StructuredContent == nil {
				t.Fatalf("%s %s: structuredContent %v (%v)", lang, tt.name, res.StructuredContent, err)
			}
			var got map[string]any
			if err := json.Unmarshal(b, &got); err != nil {
				t.Fatal(err)
			}
			checkConformsToOutputSchema(t, got)
			e, _ := got["error"].(map[string]any)
			if e["type"] != "ArgumentError" || !strings.Contains(e["message"].(string), tt.want) {
				t.Errorf("%s %s: error %v, want ArgumentError with %q", lang, tt.name, e, tt.want)
			}
			if got["limit"] != nil {
				t.Errorf("%s %s: limit %v, want null: nothing ran", lang, tt.name, got["limit"])
			}
			if len(res.Content) != 1 || !strings.Contains(res.Content[0].(mcpgo.TextContent).Text, tt.want) {
				t.Errorf("%s %s: text content %v lacks %q", lang, tt.name, res.Content, tt.want)
			}
		}
	}
}

// newTestTools are the tools on a supervisor with cfg that starts no
// worker until a call runs. The bundled packages are off: listing them
// reads the built Python runtime, which the unit tests do without.
func newTestTools(t *testing.T, cfg supervisor.Config) *tools {
	t.Helper()
	cfg.CacheDir = ""
	cfg.BundledPackages = false
	sup, err := supervisor.New(cfg, hclog.NewNullLogger(), "/nonexistent/capsule")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sup.Close)
	s := &tools{sup: sup, cfg: sup.Config()}
	s.bundled, s.pythonPackages = sup.PythonPackages()
	return s
}
