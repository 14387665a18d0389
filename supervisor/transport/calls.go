package transport

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"sync"
)

// SessionHeader is the Streamable HTTP session header.
const SessionHeader = "Mcp-Session-Id"

// callRegistry makes a cancellation reach only the calls of the client
// that sent it. JSON-RPC ids are the client's own numbering (SDKs count
// from 0), so over HTTP they collide between clients all the time; mcp-go's
// stateless transport keys in-flight requests by id alone, so one client's
// notifications/cancelled for id 1 would kill another's call 1.
//
// The registry issues a random Mcp-Session-Id on initialize and keys each
// running request by (session id, request id); notifications/cancelled
// cancels only the request under its own session id and never reaches
// mcp-go. The session id is a capability, not server state: nothing is
// stored beyond the requests in flight, so replicas still share nothing.
// A cancellation that lands on another replica than its call (or comes
// without a session id) finds nothing and does nothing; the call runs on
// to its answer or timeout. Closing the request's connection always stops
// a call, on whichever replica runs it.
type callRegistry struct {
	mu      sync.Mutex
	running map[callKey]context.CancelFunc
}

type callKey struct{ session, id string }

func newCallRegistry() *callRegistry {
	return &callRegistry{running: map[callKey]context.CancelFunc{}}
}

// rpcMessage is what the registry reads of a POST body.
type rpcMessage struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		RequestID json.RawMessage `json:"requestId"`
	} `json:"params"`
}

// serve passes r to mcp, after registering it as a running request, or
// handles it itself when it is a cancellation.
func (c *callRegistry) serve(mcp http.Handler, w http.ResponseWriter, r *http.Request, body []byte) {
	var m rpcMessage
	if r.Method != http.MethodPost || json.Unmarshal(body, &m) != nil {
		mcp.ServeHTTP(w, r)
		return
	}
	session := r.Header.Get(SessionHeader)
	switch {
	case m.Method == "initialize":
		w.Header().Set(SessionHeader, newSessionID())
	case m.Method == "notifications/cancelled":
		if session != "" && len(m.Params.RequestID) > 0 {
			c.cancel(callKey{session, idKey(m.Params.RequestID)})
		}
		w.WriteHeader(http.StatusAccepted)
		return
	case session != "" && len(m.ID) > 0 && string(m.ID) != "null":
		key := callKey{session, idKey(m.ID)}
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		if c.add(key, cancel) {
			defer c.remove(key)
		}
		// With its context cancelled, mcp-go writes no response, as MCP
		// asks of a cancelled request.
		r = r.WithContext(ctx)
	}
	mcp.ServeHTTP(w, r)
}

// add registers a running request; a second request with the same key is
// served but not cancellable, since the key already names the first.
func (c *callRegistry) add(key callKey, cancel context.CancelFunc) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, taken := c.running[key]; taken {
		return false
	}
	c.running[key] = cancel
	return true
}

func (c *callRegistry) remove(key callKey) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.running, key)
}

func (c *callRegistry) cancel(key callKey) {
	c.mu.Lock()
	cancel := c.running[key]
	c.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// newSessionID returns 128 random bits: a session id is what lets a client
// cancel its calls, so it must not be guessable.
func newSessionID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
