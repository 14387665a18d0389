package transport

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
)

// cancellable is an MCP stand-in: a request runs until its context ends
// or a second passes, and reports which.
type cancellable struct {
	mu    sync.Mutex
	ended map[string]string // body → "cancelled" or "finished"
}

func (c *cancellable) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b := make([]byte, r.ContentLength)
	r.Body.Read(b)
	how := "finished"
	select {
	case <-r.Context().Done():
		how = "cancelled"
	case <-time.After(time.Second):
	}
	c.mu.Lock()
	c.ended[string(b)] = how
	c.mu.Unlock()
}

func TestCancellationStaysWithItsSession(t *testing.T) {
	o := testOptions()
	mcp := &cancellable{ended: map[string]string{}}
	h := o.handler(mcp, func() bool { return true }, hclog.NewNullLogger())
	post := func(session, body string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodPost, MCPPath, strings.NewReader(body))
		if session != "" {
			r.Header.Set(SessionHeader, session)
		}
		return serveOne(h, r)
	}
	// Initialize issues a fresh, unguessable session id each time.
	a := post("", `{"jsonrpc":"2.0","id":0,"method":"initialize"}`).Header().Get(SessionHeader)
	b := post("", `{"jsonrpc":"2.0","id":0,"method":"initialize"}`).Header().Get(SessionHeader)
	if len(a) != 32 || len(b) != 32 || a == b {
		t.Fatalf("session ids %q and %q: want two distinct 128-bit ids", a, b)
	}
	callA := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a"}}`
	callB := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"b"}}`
	cancel := func(session string) *httptest.ResponseRecorder {
		return post(session, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`)
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); post(a, callA) }()
	go func() { defer wg.Done(); post(b, callB) }()
	time.Sleep(100 * time.Millisecond)
	if w := cancel(b); w.Code != http.StatusAccepted {
		t.Fatalf("cancel answered %d, want 202", w.Code)
	}
	cancel("") // without a session, a cancellation reaches nothing
	wg.Wait()
	if mcp.ended[callA] != "finished" || mcp.ended[callB] != "cancelled" {
		t.Fatalf("A's call %s, B's %s; want only B's cancelled", mcp.ended[callA], mcp.ended[callB])
	}
}

func TestCORS(t *testing.T) {
	o := testOptions()
	o.AuthToken = "s3cret-token"
	o.AllowOrigins = []string{"https://app.example"}
	h := o.handler(echoBody, func() bool { return true }, hclog.NewNullLogger())
	tests := []struct {
		name, method, origin string
		preflight            bool
		token                bool
		status               int
		allowOrigin          string
	}{
		{name: "preflight from an allowed origin, no token", method: http.MethodOptions, origin: "https://app.example", preflight: true,
			status: http.StatusNoContent, allowOrigin: "https://app.example"},
		{name: "preflight from a loopback origin", method: http.MethodOptions, origin: "http://localhost:5173", preflight: true,
			status: http.StatusNoContent, allowOrigin: "http://localhost:5173"},
		{name: "preflight from another origin", method: http.MethodOptions, origin: "https://evil.example", preflight: true,
			status: http.StatusForbidden},
		{name: "POST from an allowed origin", method: http.MethodPost, origin: "https://app.example", token: true,
			status: http.StatusOK, allowOrigin: "https://app.example"},
		{name: "POST from an allowed origin without token", method: http.MethodPost, origin: "https://app.example",
			status: http.StatusUnauthorized, allowOrigin: "https://app.example"},
		{name: "POST without origin", method: http.MethodPost, token: true, status: http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(tt.method, MCPPath, strings.NewReader("{}"))
			if tt.origin != "" {
				r.Header.Set("Origin", tt.origin)
			}
			if tt.preflight {
				r.Header.Set("Access-Control-Request-Method", "POST")
				r.Header.Set("Access-Control-Request-Headers", "authorization, content-type, mcp-session-id")
			}
			if tt.token {
				r.Header.Set("Authorization", "Bearer s3cret-token")
			}
			w := serveOne(h, r)
			if w.Code != tt.status {
				t.Fatalf("status %d, want %d", w.Code, tt.status)
			}
			if got := w.Header().Get("Access-Control-Allow-Origin"); got != tt.allowOrigin {
				t.Errorf("Access-Control-Allow-Origin = %q, want %q", got, tt.allowOrigin)
			}
			if tt.allowOrigin != "" {
				if got := w.Header().Get("Access-Control-Expose-Headers"); !strings.Contains(got, "Mcp-Session-Id") || !strings.Contains(got, "WWW-Authenticate") {
					t.Errorf("Access-Control-Expose-Headers = %q", got)
				}
			}
			if tt.preflight && tt.status == http.StatusNoContent {
				for _, want := range []string{"Authorization", "Content-Type", "Mcp-Session-Id", "Mcp-Protocol-Version"} {
					if !strings.Contains(w.Header().Get("Access-Control-Allow-Headers"), want) {
						t.Errorf("Access-Control-Allow-Headers = %q, want %s", w.Header().Get("Access-Control-Allow-Headers"), want)
					}
				}
				if !strings.Contains(w.Header().Get("Access-Control-Allow-Methods"), "POST") {
					t.Errorf("Access-Control-Allow-Methods = %q", w.Header().Get("Access-Control-Allow-Methods"))
				}
			}
		})
	}
}

// echoMCP is an MCP stand-in that answers every request with its id and
// method, and a notification with 202.
var echoMCP = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	var m message
	b, _ := io.ReadAll(r.Body)
	if json.Unmarshal(b, &m) != nil || !m.isRequest() {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"method":%q}}`, m.ID, m.Method)
})

func TestHTTPBatchesAndNullIDs(t *testing.T) {
	o := testOptions()
	h := o.handler(echoMCP, func() bool { return true }, hclog.NewNullLogger())
	tests := []struct {
		name, version, body string
		status              int
		want                string // the body, exactly, when not empty
		contains            string
	}{
		{name: "batch under 2025-03-26", version: "2025-03-26",
			body:   `[{"jsonrpc":"2.0","id":1,"method":"a"},{"jsonrpc":"2.0","method":"n"},{"jsonrpc":"2.0","id":"x","method":"b"}]`,
			status: http.StatusOK, want: `[{"jsonrpc":"2.0","id":1,"result":{"method":"a"}},{"jsonrpc":"2.0","id":"x","result":{"method":"b"}}]`},
		{name: "batch without a version header", body: `[{"jsonrpc":"2.0","id":1,"method":"a"}]`,
			status: http.StatusOK, want: `[{"jsonrpc":"2.0","id":1,"result":{"method":"a"}}]`},
		{name: "batch of notifications", version: "2025-03-26", body: `[{"jsonrpc":"2.0","method":"n"}]`, status: http.StatusAccepted},
		{name: "batch under 2025-06-18", version: "2025-06-18", body: `[{"jsonrpc":"2.0","id":1,"method":"a"}]`,
			status: http.StatusBadRequest, contains: `"code":-32600`},
		{name: "empty batch", version: "2025-03-26", body: `[]`, status: http.StatusBadRequest, contains: "the batch is empty"},
		{name: "batch that is not JSON", version: "2025-03-26", body: `[{"jsonrpc"`, status: http.StatusBadRequest, contains: `"code":-32700`},
		{name: "batch with junk and a null id", version: "2025-03-26", body: `[1,{"jsonrpc":"2.0","id":null,"method":"a"}]`,
			status: http.StatusOK, contains: `"id":null,"error":{"code":-32600`},
		{name: "initialize in a batch", version: "2025-03-26", body: `[{"jsonrpc":"2.0","id":1,"method":"initialize"}]`,
			status: http.StatusOK, contains: "initialize must not be part of a batch"},
		{name: "null id", body: `{"jsonrpc":"2.0","id":null,"method":"tools/call"}`, status: http.StatusBadRequest,
			want: `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"` + strings.ReplaceAll(nullIDError, `"`, `\"`) + `"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, MCPPath, strings.NewReader(tt.body))
			if tt.version != "" {
				r.Header.Set(ProtocolVersionHeader, tt.version)
			}
			w := serveOne(h, r)
			body := strings.TrimSpace(w.Body.String())
			if w.Code != tt.status || (tt.want != "" && body != tt.want) || !strings.Contains(body, tt.contains) {
				t.Errorf("%d %s; want %d %s %s", w.Code, body, tt.status, tt.want, tt.contains)
			}
			if body != "" && !json.Valid([]byte(body)) {
				t.Errorf("body %s is not JSON", body)
			}
		})
	}
}

// TestCancelledRequestEndsAsAnEventStream: a request cancelled by its
// session gets an event stream without an event, not an empty 200.
func TestCancelledRequestEndsAsAnEventStream(t *testing.T) {
	o := testOptions()
	h := o.handler(&cancellable{ended: map[string]string{}}, func() bool { return true }, hclog.NewNullLogger())
	done := make(chan *httptest.ResponseRecorder, 1)
	go func() {
		r := httptest.NewRequest(http.MethodPost, MCPPath, strings.NewReader(`{"jsonrpc":"2.0","id":4,"method":"tools/call"}`))
		r.Header.Set(SessionHeader, "s")
		done <- serveOne(h, r)
	}()
	time.Sleep(100 * time.Millisecond)
	r := httptest.NewRequest(http.MethodPost, MCPPath, strings.NewReader(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":4}}`))
	r.Header.Set(SessionHeader, "s")
	serveOne(h, r)
	w := <-done
	if w.Code != http.StatusOK || w.Header().Get("Content-Type") != "text/event-stream" || w.Body.Len() != 0 {
		t.Errorf("cancelled request: %d %q %q, want 200, an event stream, no event", w.Code, w.Header().Get("Content-Type"), w.Body)
	}
}
