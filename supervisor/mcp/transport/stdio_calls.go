package transport

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/mark3labs/mcp-go/server"

	tools "capsule/supervisor/mcp"
	"capsule/supervisor/mcp/toolcall"
)

// codeInternalError is JSON-RPC's internal error, the answer to a request
// whose handling panicked.
const codeInternalError = -32603

// stdioCalls is what the guard needs to serve the calls it splits.
type stdioCalls struct {
	srv *server.MCPServer
	// ctx is the stdio session's context, as the stdio server gives it to
	// the requests it serves itself: HandleMessage finds the session
	// there, for progress notifications, logging and cancellation. The
	// guard cancels it at the end of stdin, as the stdio server cancels
	// its own requests.
	ctx  context.Context
	stop context.CancelFunc
	// running cancels each running call, by id, for
	// notifications/cancelled (mcp-go cancels it too, but only once
	// HandleMessage has registered it).
	running map[string]context.CancelFunc
}

// ServeToolCalls has the guard serve tools/call requests itself, through
// srv.HandleMessage, with their arguments taken out and decoded once
// (package toolcall), rather than hand them to the stdio server, which
// would decode the whole message about ten times. The other messages, and
// a tools/call that toolcall does not split, still go to the stdio server.
//
// It returns the function to give the stdio server's SetContextFunc, from
// which the guard takes the session's context. The stdio server calls it
// before it reads the first message.
func (g *StdioGuard) ServeToolCalls(srv *server.MCPServer) server.StdioContextFunc {
	return func(ctx context.Context) context.Context {
		calls, stop := context.WithCancel(ctx)
		g.mu.Lock()
		defer g.mu.Unlock()
		g.calls = &stdioCalls{srv: srv, ctx: calls, stop: stop, running: map[string]context.CancelFunc{}}
		return ctx
	}
}

// split reads msg, a message of batch b (nil for none), with
// toolcall.Split. A message it refuses as ambiguous is answered here
// (refused is true). A tools/call it splits is noted as pending, when the
// guard serves tools/call itself, and start serves it; otherwise start is
// nil and msg goes to the stdio server.
func (g *StdioGuard) split(msg []byte, b *stdioBatch) (start func(), refused bool) {
	call, small, refusal := toolcall.Split(msg, tools.ArgumentNames)
	if refusal != nil {
		resp := errorResponse(refusal.ID, refusal.Code, refusal.Message)
		if b != nil {
			b.responses = append(b.responses, resp)
		} else {
			g.writeLine(resp)
		}
		return nil, true
	}
	g.mu.Lock()
	calls := g.calls
	g.mu.Unlock()
	if calls == nil || call == nil {
		return nil, false
	}
	key := idKey(call.ID)
	ctx, cancel := context.WithCancel(toolcall.NewContext(calls.ctx, call))
	g.note(&message{ID: call.ID, Method: toolcall.Method}, b)
	g.mu.Lock()
	_, taken := calls.running[key] // a second request with the same id is not cancellable by it
	if !taken {
		calls.running[key] = cancel
	}
	g.mu.Unlock()
	return func() {
		go func() {
			defer cancel()
			response := serveSplit(ctx, calls.srv, call, small)
			if !taken {
				g.mu.Lock()
				delete(calls.running, key)
				g.mu.Unlock()
			}
			if response != nil {
				response = append(response, '\n')
			}
			_ = g.respond(key, response)
		}()
	}, false
}

// serveSplit has srv handle a split call and returns the response, the
// returned files spliced in, or nil when there is none.
func serveSplit(ctx context.Context, srv *server.MCPServer, call *toolcall.Call, small []byte) (response []byte) {
	defer func() {
		// As the stdio server does: a panic answers the request rather
		// than ending the process.
		if r := recover(); r != nil {
			response = errorResponse(call.ID, codeInternalError, fmt.Sprintf("internal panic: %v", r))
		}
	}()
	msg := srv.HandleMessage(ctx, small)
	if msg == nil {
		return nil
	}
	b, err := json.Marshal(msg)
	if err != nil {
		return errorResponse(call.ID, codeInternalError, "encoding the response: "+err.Error())
	}
	return call.Splice(b)
}

// stopCalls cancels the calls still running, at the end of stdin.
func (g *StdioGuard) stopCalls() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.calls != nil {
		g.calls.stop()
	}
}
