package main

// The protocol, exactly: a cancelled HTTP call ends with a valid response,
// JSON-RPC batches follow the negotiated version, and a request whose id
// is null is answered as invalid, on both transports, through the
// TypeScript and Go SDKs where they can say it, and raw where only a raw
// client can.

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	gosdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

var busyLoop = map[string]any{"code": "while True:\n    pass"}

// TestCancelledCallTSSDK: the TypeScript SDK aborts a running call; the
// server's answer to the aborted request must be one the SDK reads without
// error, and the session goes on.
func TestCancelledCallTSSDK(t *testing.T) {
	steps := []map[string]any{
		{"op": "call", "name": "execute_python", "arguments": map[string]any{"code": "1"}},
		{"op": "cancel", "name": "execute_python", "arguments": busyLoop, "after_ms": 1500, "settle_ms": 1500},
		{"op": "call", "name": "execute_javascript", "arguments": map[string]any{"code": "6 * 7"}},
	}
	check := func(t *testing.T, run tsRun) {
		if len(run.Errors) > 0 {
			t.Errorf("the TypeScript SDK reported errors: %q", run.Errors)
		}
		var aborted struct{ Aborted bool }
		json.Unmarshal(run.Steps[1].OK, &aborted)
		if !aborted.Aborted {
			t.Errorf("the cancelled call was not aborted: %+v", run.Steps[1])
		}
		if !strings.Contains(string(run.Steps[2].OK), `"result":42`) {
			t.Errorf("the call after the cancellation: %+v", run.Steps[2])
		}
	}
	t.Run("stdio", func(t *testing.T) { check(t, runTS(t, tsStdio(steps))) })
	t.Run("http", func(t *testing.T) {
		s := startHTTPServer(t, []string{"CAPSULE_AUTH_TOKEN=" + testToken})
		check(t, runTS(t, tsHTTP(s, steps)))
	})
}

// TestCancelledCallGoSDK: the Go SDK cancels a running call by its
// context; the session goes on.
func TestCancelledCallGoSDK(t *testing.T) {
	check := func(t *testing.T, cs *gosdk.ClientSession) {
		ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
		defer cancel()
		if _, err := cs.CallTool(ctx, &gosdk.CallToolParams{Name: "execute_python", Arguments: busyLoop}); err == nil {
			t.Error("the cancelled call returned no error")
		}
		res := goSDKCall(t, cs, "execute_javascript", map[string]any{"code": "6 * 7"})
		if sc, _ := res.StructuredContent.(map[string]any); sc["result"] != float64(42) {
			t.Errorf("the call after the cancellation: %+v", res)
		}
	}
	t.Run("stdio", func(t *testing.T) { check(t, goSDKStdio(t, nil)) })
	t.Run("http", func(t *testing.T) {
		s := startHTTPServer(t, []string{"CAPSULE_AUTH_TOKEN=" + testToken})
		check(t, goSDKHTTP(t, s, nil))
	})
}

// goSDKCall calls a tool through the Go SDK and fails the test on a
// protocol error.
func goSDKCall(t testing.TB, cs *gosdk.ClientSession, tool string, args any) *gosdk.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &gosdk.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("Go SDK: %s: %v", tool, err)
	}
	return res
}

// TestCancelledHTTPCallRaw: the response to a request that
// notifications/cancelled ended is an event stream that closes without an
// event, not an empty 200 without a Content-Type.
func TestCancelledHTTPCallRaw(t *testing.T) {
	s := startHTTPServer(t, []string{"CAPSULE_AUTH_TOKEN=" + testToken})
	auth := bearer(testToken)
	_, h, _ := s.post(t, auth, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	session := map[string]string{"Authorization": auth["Authorization"], "Mcp-Session-Id": h.Get("Mcp-Session-Id"), "Mcp-Protocol-Version": "2025-11-25"}
	type answer struct {
		status int
		header http.Header
		body   string
	}
	done := make(chan answer, 1)
	go func() {
		st, h, body := s.post(t, session, toolCall(5, "execute_python", "while True:\n    pass"))
		done <- answer{st, h, body}
	}()
	time.Sleep(1500 * time.Millisecond)
	if st, _, body := s.post(t, session, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":5}}`); st != http.StatusAccepted {
		t.Fatalf("notifications/cancelled: %d %s", st, body)
	}
	select {
	case a := <-done:
		if a.status != http.StatusOK || a.header.Get("Content-Type") != "text/event-stream" || strings.Contains(a.body, "data:") {
			t.Errorf("the cancelled request got %d, Content-Type %q, body %q; want 200, an event stream, no event",
				a.status, a.header.Get("Content-Type"), a.body)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the cancelled request got no response")
	}
}

// TestBatchesHTTP: a batch is served under 2025-03-26 (and without a
// version header, which means 2025-03-26) and refused under later versions.
func TestBatchesHTTP(t *testing.T) {
	s := startHTTPServer(t, []string{"CAPSULE_AUTH_TOKEN=" + testToken})
	batch := `[{"jsonrpc":"2.0","id":1,"method":"tools/list"},` + toolCall(2, "execute_javascript", "6 * 7") +
		`,{"jsonrpc":"2.0","method":"notifications/initialized"}]`
	for _, version := range []string{"2025-03-26", ""} {
		headers := bearer(testToken)
		if version != "" {
			headers["Mcp-Protocol-Version"] = version
		}
		st, h, body := s.post(t, headers, batch)
		var got []struct {
			ID     float64         `json:"id"`
			Result json.RawMessage `json:"result"`
		}
		if st != http.StatusOK || !strings.HasPrefix(h.Get("Content-Type"), "application/json") || json.Unmarshal([]byte(body), &got) != nil {
			t.Fatalf("version %q: batch answered %d %q %s, want 200 and a JSON array", version, st, h.Get("Content-Type"), body)
		}
		ids := map[float64]string{}
		for _, r := range got {
			ids[r.ID] = string(r.Result)
		}
		if len(got) != 2 || !strings.Contains(ids[1], "execute_python") || !strings.Contains(ids[2], `"result":42`) {
			t.Errorf("version %q: batch responses %s, want the tool list (1) and 42 (2)", version, body)
		}
	}
	st, _, body := s.post(t, map[string]string{"Authorization": "Bearer " + testToken, "Mcp-Protocol-Version": "2025-03-26"},
		`[{"jsonrpc":"2.0","method":"notifications/initialized"}]`)
	if st != http.StatusAccepted || body != "" {
		t.Errorf("a batch of notifications: %d %q, want 202 and no body", st, body)
	}
	for _, version := range []string{"2025-06-18", "2025-11-25"} {
		st, _, body := s.post(t, map[string]string{"Authorization": "Bearer " + testToken, "Mcp-Protocol-Version": version}, batch)
		if st != http.StatusBadRequest || !strings.Contains(body, "-32600") || !strings.Contains(body, "batches are not part of MCP "+version) {
			t.Errorf("version %s: batch answered %d %s, want 400 and invalid request (-32600)", version, st, body)
		}
	}
}

// TestBatchesStdio: the same on stdio, by the version initialize agreed.
func TestBatchesStdio(t *testing.T) {
	batch := `[{"jsonrpc":"2.0","id":1,"method":"tools/list"},` + toolCall(2, "execute_javascript", "6 * 7") + `]`
	r := startRawStdioVersion(t, "2025-03-26")
	r.send(t, batch)
	got, _ := r.next(t)["batch"].([]any)
	ids := map[float64]string{}
	for _, e := range got {
		m, _ := e.(map[string]any)
		id, _ := m["id"].(float64)
		b, _ := json.Marshal(m["result"])
		ids[id] = string(b)
	}
	if len(got) != 2 || !strings.Contains(ids[1], "execute_python") || !strings.Contains(ids[2], `"result":42`) {
		t.Errorf("2025-03-26: batch answered %v, want the tool list (1) and 42 (2)", got)
	}
	r = startRawStdioVersion(t, "2025-11-25")
	r.send(t, batch)
	m := r.next(t)
	e, _ := m["error"].(map[string]any)
	if m["id"] != nil || e["code"] != float64(-32600) || !strings.Contains(e["message"].(string), "2025-11-25") {
		t.Errorf("2025-11-25: batch answered %v, want invalid request (-32600) with a null id", m)
	}
}

// TestNullIDIsInvalid: a request with "id": null is answered as an invalid
// request, not run as a notification.
func TestNullIDIsInvalid(t *testing.T) {
	call := `{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"execute_javascript","arguments":{"code":"1"}}}`
	t.Run("stdio", func(t *testing.T) {
		r := startRawStdio(t)
		r.send(t, call)
		m := r.next(t)
		e, _ := m["error"].(map[string]any)
		if _, hasID := m["id"]; !hasID || m["id"] != nil || e["code"] != float64(-32600) {
			t.Errorf("answered %v, want invalid request (-32600) with id null", m)
		}
	})
	t.Run("http", func(t *testing.T) {
		s := startHTTPServer(t, []string{"CAPSULE_AUTH_TOKEN=" + testToken})
		st, _, body := s.post(t, bearer(testToken), call)
		var m map[string]any
		json.Unmarshal([]byte(body), &m)
		e, _ := m["error"].(map[string]any)
		if _, hasID := m["id"]; st != http.StatusBadRequest || !hasID || m["id"] != nil || e["code"] != float64(-32600) {
			t.Errorf("answered %d %s, want 400 and invalid request (-32600) with id null", st, body)
		}
	})
}
