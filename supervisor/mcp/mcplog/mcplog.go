// Package mcplog sends the server's log to MCP clients as
// notifications/message, at the level each client sets with
// logging/setLevel, while the log itself still goes where it went
// (stderr, for `capsule serve`), whole.
//
// It is meant for the stdio transport, where the one client is the host
// that started the server and may read all of its log. Over HTTP the log
// is the operator's: it names other clients' calls, and a stateless
// server has no session to keep a level on.
package mcplog

import (
	"context"
	"fmt"
	"sync"

	"github.com/hashicorp/go-hclog"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// Forwarder is an hclog sink that forwards each log line to the MCP
// sessions whose level admits it.
type Forwarder struct {
	mu       sync.Mutex
	srv      *server.MCPServer
	sessions map[string]bool
}

// New returns a Forwarder; Attach it to the server whose Hooks it
// watches, and register it as a sink of an hclog.InterceptLogger.
func New() *Forwarder { return &Forwarder{sessions: map[string]bool{}} }

// Hooks are the server hooks through which the forwarder learns of
// sessions.
func (f *Forwarder) Hooks() *server.Hooks {
	h := &server.Hooks{}
	h.AddOnRegisterSession(func(_ context.Context, s server.ClientSession) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.sessions[s.SessionID()] = true
	})
	h.AddOnUnregisterSession(func(_ context.Context, s server.ClientSession) {
		f.mu.Lock()
		defer f.mu.Unlock()
		delete(f.sessions, s.SessionID())
	})
	return h
}

// Attach names the server to send through.
func (f *Forwarder) Attach(srv *server.MCPServer) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.srv = srv
}

// Accept implements hclog.SinkAdapter. Sending never blocks: a session
// whose notifications back up loses log lines, not calls.
func (f *Forwarder) Accept(name string, level hclog.Level, msg string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.srv == nil || len(f.sessions) == 0 {
		return
	}
	n := mcp.NewLoggingMessageNotification(Level(level), name, data(msg, args))
	for id := range f.sessions {
		_ = f.srv.SendLogMessageToSpecificClient(id, n)
	}
}

// Level is hclog's level as MCP names it (RFC 5424's).
func Level(l hclog.Level) mcp.LoggingLevel {
	switch {
	case l <= hclog.Debug:
		return mcp.LoggingLevelDebug
	case l == hclog.Info:
		return mcp.LoggingLevelInfo
	case l == hclog.Warn:
		return mcp.LoggingLevelWarning
	}
	return mcp.LoggingLevelError
}

// data is a log line as a JSON object: its message and its fields.
func data(msg string, args []any) map[string]any {
	d := map[string]any{"message": msg}
	for i := 0; i+1 < len(args); i += 2 {
		key := fmt.Sprint(args[i])
		if key == "message" {
			key = "field_message"
		}
		switch v := args[i+1].(type) {
		case error:
			d[key] = v.Error()
		case fmt.Stringer:
			d[key] = v.String()
		default:
			d[key] = v
		}
	}
	return d
}
