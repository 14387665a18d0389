package main

// The protocol features over Streamable HTTP, as a remote MCP host uses
// them: tool listing with annotations and output schema, inputs,
// timeout_seconds, progress notifications and cancellation.

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

func TestToolsListed(t *testing.T) {
	s := startHTTPServer(t, []string{"CAPSULE_AUTH_TOKEN=" + testToken}, "--timeout", "20s", "--max-timeout", "90s", "--max-code", "64KiB")
	c := s.client(t, bearer(testToken))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	list, err := c.c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, tool := range list.Tools {
		names[tool.Name] = true
		a := tool.Annotations
		if a.Title == "" || a.ReadOnlyHint == nil || !*a.ReadOnlyHint || a.DestructiveHint == nil || *a.DestructiveHint ||
			a.IdempotentHint == nil || *a.IdempotentHint || a.OpenWorldHint == nil || *a.OpenWorldHint {
			t.Errorf("%s annotations = %+v, want a title, read-only, not destructive, not idempotent, closed world", tool.Name, a)
		}
		schema, _ := json.Marshal(tool.OutputSchema)
		for _, field := range []string{"stdout", "stderr", "result", "error", "limit", "duration_ms", "stdout_truncated", "stderr_truncated"} {
			if !strings.Contains(string(schema), `"`+field+`"`) {
				t.Errorf("%s output schema lacks %q: %s", tool.Name, field, schema)
			}
		}
		for _, want := range []string{"20s", "1m30s", "256MiB", "no network"} {
			if !strings.Contains(tool.Description, want) {
				t.Errorf("%s description does not state %q: %s", tool.Name, want, tool.Description)
			}
		}
		if tool.Name == "execute_python" {
			// What is and is not available to Python code.
			for _, want := range []string{"in-memory /tmp of 64MiB", "the rest is read-only", "lzma, bz2", "zoneinfo", "no threads"} {
				if !strings.Contains(tool.Description, want) {
					t.Errorf("%s description does not state %q: %s", tool.Name, want, tool.Description)
				}
			}
		}
		props, _ := json.Marshal(tool.InputSchema.Properties)
		for _, p := range []string{"code", "timeout_seconds", "inputs"} {
			if !strings.Contains(string(props), `"`+p+`"`) {
				t.Errorf("%s input schema lacks %q", tool.Name, p)
			}
		}
		// The schema states what the server enforces.
		var in struct {
			AdditionalProperties *bool `json:"additionalProperties"`
			Properties           struct {
				Code struct {
					MaxLength int `json:"maxLength"`
				} `json:"code"`
				Timeout struct {
					Minimum float64 `json:"minimum"`
					Maximum float64 `json:"maximum"`
				} `json:"timeout_seconds"`
			} `json:"properties"`
		}
		inSchema, _ := json.Marshal(tool.InputSchema)
		if err := json.Unmarshal(inSchema, &in); err != nil {
			t.Fatal(err)
		}
		if in.AdditionalProperties == nil || *in.AdditionalProperties || in.Properties.Code.MaxLength != 64<<10 ||
			in.Properties.Timeout.Minimum != 0.001 || in.Properties.Timeout.Maximum != 90 {
			t.Errorf("%s input schema %s: want additionalProperties false, code maxLength 65536, timeout_seconds from 0.001 to 90", tool.Name, inSchema)
		}
	}
	if !names["execute_python"] || !names["execute_javascript"] {
		t.Fatalf("tools %v, want execute_python and execute_javascript", names)
	}
}

func TestInputsAndTimeoutSeconds(t *testing.T) {
	s := startHTTPServer(t, []string{"CAPSULE_AUTH_TOKEN=" + testToken}, "--timeout", "1s", "--max-timeout", "2s")
	c := s.client(t, bearer(testToken))
	inputs := map[string]any{"revenue": []any{12400, 15800}, "name": "Q1"}
	cases := []struct {
		tool string
		args map[string]any
		e    expectation
	}{
		{"execute_python", map[string]any{"code": "sum(inputs['revenue']), inputs['name']", "inputs": inputs},
			expectation{result: `[28200,"Q1"]`}},
		{"execute_javascript", map[string]any{"code": "[inputs.revenue.reduce((a, b) => a + b), inputs.name]", "inputs": inputs},
			expectation{result: `[28200,"Q1"]`}},
		{"execute_python", map[string]any{"code": "inputs", "inputs": "not an object"},
			expectation{isError: true, text: "must be a JSON object"}},
		{"execute_python", map[string]any{"code": "while True:\n    pass", "timeout_seconds": 1.5},
			expectation{isError: true, limit: "timeout", errContains: "exceeded 1.5s"}},
		// Above --max-timeout: refused, as the schema's maximum says.
		{"execute_javascript", map[string]any{"code": "for (;;) {}", "timeout_seconds": 100},
			expectation{isError: true, text: "above the most a call may ask for on this server: 2 seconds"}},
		{"execute_javascript", map[string]any{"code": "for (;;) {}", "timeout_seconds": 2},
			expectation{isError: true, limit: "timeout", errContains: "exceeded 2s"}},
		{"execute_python", map[string]any{"code": "1", "timeout_seconds": -1},
			expectation{isError: true, text: "below the smallest timeout"}},
	}
	for _, tc := range cases {
		t.Run(tc.tool, func(t *testing.T) {
			res, st := c.callArgs(t, tc.tool, tc.args)
			check(t, res, st, tc.e)
		})
	}
}

func TestProgressNotifications(t *testing.T) {
	s := startHTTPServer(t, []string{"CAPSULE_AUTH_TOKEN=" + testToken})
	c := s.client(t, bearer(testToken))
	var mu sync.Mutex
	var progress []float64
	c.c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method != string(mcp.MethodNotificationProgress) {
			return
		}
		if n.Params.AdditionalFields["progressToken"] != "run-1" {
			return
		}
		if p, ok := n.Params.AdditionalFields["progress"].(float64); ok {
			mu.Lock()
			progress = append(progress, p)
			mu.Unlock()
		}
	})
	req := mcp.CallToolRequest{}
	req.Params.Name = "execute_python"
	req.Params.Arguments = map[string]any{"code": "import time\ntime.sleep(3)\n'done'"}
	req.Params.Meta = &mcp.Meta{ProgressToken: "run-1"}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := c.c.CallTool(ctx, req)
	if err != nil || res.IsError {
		t.Fatalf("call: %v %v", err, res)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(progress) < 2 {
		t.Fatalf("got progress %v during a 3-second run, want about one a second", progress)
	}
	for i := 1; i < len(progress); i++ {
		if progress[i] <= progress[i-1] {
			t.Fatalf("progress %v does not increase", progress)
		}
	}
}

// TestCancellationKillsWorker cancels running calls: over stdio the client
// sends notifications/cancelled, over HTTP the request goes away. Either way
// the worker is killed at once.
func TestCancellationKillsWorker(t *testing.T) {
	t.Run("stdio", func(t *testing.T) {
		s := startServer(t, noPool...)
		cancelRunningCalls(t, s, s.cmd.Process.Pid)
	})
	t.Run("http", func(t *testing.T) {
		s := startHTTPServer(t, []string{"CAPSULE_AUTH_TOKEN=" + testToken}, noPool...)
		cancelRunningCalls(t, s.client(t, bearer(testToken)), s.cmd.Process.Pid)
	})
}

func cancelRunningCalls(t *testing.T, c *testServer, server int) {
	// Let the start-up warm-up workers finish.
	c.call(t, "execute_python", "1")
	c.call(t, "execute_javascript", "1")
	if !eventually(20*time.Second, func() bool { return len(children(server)) == 0 }) {
		t.Fatalf("workers remain after warm-up: %v", children(server))
	}
	for _, tc := range []struct{ tool, code string }{
		{"execute_python", "while True:\n    pass"},
		{"execute_javascript", "for (;;) {}"},
	} {
		t.Run(tc.tool, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() {
				req := mcp.CallToolRequest{}
				req.Params.Name = tc.tool
				req.Params.Arguments = map[string]any{"code": tc.code}
				_, err := c.c.CallTool(ctx, req)
				done <- err
			}()
			if !eventually(20*time.Second, func() bool { return len(children(server)) > 0 }) {
				t.Fatal("no worker started")
			}
			time.Sleep(300 * time.Millisecond)
			start := time.Now()
			cancel()
			<-done
			if !eventually(5*time.Second, func() bool { return len(children(server)) == 0 }) {
				t.Fatalf("worker %v still running %v after the call was cancelled", children(server), time.Since(start))
			}
		})
	}
}

// TestResultTextIsReadable: the [result] line of the text content is what
// the language's REPL shows, readable UTF-8 with <, >, & and non-ASCII as
// they are.
func TestResultTextIsReadable(t *testing.T) {
	s := startServer(t)
	for _, tc := range []struct{ tool, code, shown string }{
		{"execute_python", `{"k": "<b>日本</b> & co"}`, `{'k': '<b>日本</b> & co'}`},
		{"execute_javascript", `({k: "<b>日本</b> & co"})`, `{ k: '<b>日本</b> & co' }`},
	} {
		res, st := s.call(t, tc.tool, tc.code)
		if got := text(res); !strings.Contains(got, "[result]\n"+tc.shown) {
			t.Errorf("%s: text %q, want the result as the REPL shows it, %s", tc.tool, got, tc.shown)
		}
		var v map[string]string
		if json.Unmarshal(st.Result, &v) != nil || v["k"] != "<b>日本</b> & co" {
			t.Errorf("%s: structured result %s", tc.tool, st.Result)
		}
	}
	// A timeout that would round to nothing is refused, not replaced by
	// the default.
	res, _ := s.callArgs(t, "execute_python", map[string]any{"code": "1", "timeout_seconds": 1e-10})
	if !res.IsError || !strings.Contains(text(res), "below the smallest timeout") {
		t.Errorf("timeout_seconds 1e-10: %v %q", res.IsError, text(res))
	}
	deep := map[string]any{}
	for cur, i := deep, 0; i < 1500; i++ {
		next := map[string]any{}
		cur["a"] = next
		cur = next
	}
	res, _ = s.callArgs(t, "execute_python", map[string]any{"code": "1", "inputs": deep})
	if !res.IsError || !strings.Contains(text(res), "nests more than 100 levels") {
		t.Errorf("inputs 1500 deep: %v %q", res.IsError, text(res))
	}
}
