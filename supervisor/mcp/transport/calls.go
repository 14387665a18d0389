package transport

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"

	tools "capsule/supervisor/mcp"
	"capsule/supervisor/mcp/toolcall"
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

// serve passes r to mcp, after registering it as a running request, or
// handles it itself: a cancellation, a request with a null id, or a batch.
func (c *callRegistry) serve(mcp http.Handler, w http.ResponseWriter, r *http.Request, body []byte) {
	if r.Method == http.MethodPost && isBatch(body) {
		c.serveBatch(mcp, w, r, body)
		return
	}
	c.serveOne(mcp, w, r, body)
}

// serveOne serves one message. A tools/call goes to mcp split (package
// toolcall): its arguments decoded once, here, and handed to the tool
// handler in the request's context, and the files of its result spliced
// into the response as mcp writes it.
func (c *callRegistry) serveOne(mcp http.Handler, w http.ResponseWriter, r *http.Request, body []byte) {
	var m message
	call, small, refusal := toolcall.Split(body, tools.ArgumentNames)
	switch {
	case r.Method != http.MethodPost:
		mcp.ServeHTTP(w, r)
		return
	case refusal != nil:
		writeRPCError(w, http.StatusBadRequest, errorResponse(refusal.ID, refusal.Code, refusal.Message))
		return
	case call == nil && writeOwnAnswer(w, body, r.Header.Get(ProtocolVersionHeader)):
		return
	case call != nil:
		m = message{ID: call.ID, Method: toolcall.Method}
		r = withBody(r.WithContext(toolcall.NewContext(r.Context(), call)), small)
		w = &splicingWriter{ResponseWriter: w, call: call}
	case json.Unmarshal(body, &m) != nil:
		mcp.ServeHTTP(w, r)
		return
	}
	session := r.Header.Get(SessionHeader)
	switch {
	case m.hasNullID():
		writeRPCError(w, http.StatusBadRequest, errorResponse(nil, codeInvalidRequest, nullIDError))
	case m.Method == "initialize":
		w.Header().Set(SessionHeader, newSessionID())
		mcp.ServeHTTP(w, r)
	case m.Method == "notifications/cancelled":
		if session != "" && len(m.Params.RequestID) > 0 {
			c.cancel(callKey{session, idKey(m.Params.RequestID)})
		}
		w.WriteHeader(http.StatusAccepted)
	case session != "" && m.isRequest():
		c.serveCancellable(mcp, w, r, callKey{session, idKey(m.ID)})
	default:
		mcp.ServeHTTP(w, r)
	}
}

// serveCancellable serves a request that notifications/cancelled may
// cancel. With its context cancelled, mcp-go writes no response, as MCP
// asks of a cancelled request; but an HTTP request still needs a valid
// response, so it gets an event stream that ends without an event, which
// clients read as "no answer" rather than as a broken response (an empty
// 200 without a Content-Type is neither JSON nor a stream).
func (c *callRegistry) serveCancellable(mcp http.Handler, w http.ResponseWriter, r *http.Request, key callKey) {
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	if c.add(key, cancel) {
		defer c.remove(key)
	}
	watched := &watchedWriter{ResponseWriter: w}
	mcp.ServeHTTP(watched, r.WithContext(ctx))
	if !watched.wrote && ctx.Err() != nil && r.Context().Err() == nil {
		h := w.Header()
		h.Set("Content-Type", "text/event-stream")
		h.Set("Cache-Control", "no-cache")
		w.WriteHeader(http.StatusOK)
	}
}

// serveBatch serves a JSON-RPC batch: each message as if it came alone,
// all at once, their responses gathered into one array. A batch of only
// notifications and responses gets 202, like one of them alone.
func (c *callRegistry) serveBatch(mcp http.Handler, w http.ResponseWriter, r *http.Request, body []byte) {
	if v := r.Header.Get(ProtocolVersionHeader); !batchesAllowed(v) {
		writeRPCError(w, http.StatusBadRequest, errorResponse(nil, codeInvalidRequest, noBatches(v)))
		return
	}
	var elems []json.RawMessage
	if err := json.Unmarshal(body, &elems); err != nil {
		writeRPCError(w, http.StatusBadRequest, errorResponse(nil, codeParseError, "the batch is not valid JSON: "+err.Error()))
		return
	}
	if len(elems) == 0 {
		writeRPCError(w, http.StatusBadRequest, errorResponse(nil, codeInvalidRequest, "the batch is empty"))
		return
	}
	responses := make([][]byte, len(elems))
	var wg sync.WaitGroup
	for i, e := range elems {
		wg.Add(1)
		go func() {
			defer wg.Done()
			responses[i] = c.batchElement(mcp, r, e)
		}()
	}
	wg.Wait()
	responses = slices.DeleteFunc(responses, func(b []byte) bool { return b == nil })
	if len(responses) == 0 {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(joinBatch(responses))
}

// batchElement serves one message of a batch and returns its response, or
// nil for none.
func (c *callRegistry) batchElement(mcp http.Handler, r *http.Request, elem json.RawMessage) []byte {
	var m message
	if json.Unmarshal(elem, &m) != nil || (m.Method == "" && !m.isResponse()) {
		return errorResponse(nil, codeInvalidRequest, "a batch element is not a JSON-RPC message")
	}
	if m.Method == "initialize" {
		return errorResponse(m.ID, codeInvalidRequest, "initialize must not be part of a batch")
	}
	sub := withBody(r.Clone(r.Context()), elem)
	rec := &bufferedWriter{header: http.Header{}}
	c.serveOne(mcp, rec, sub, elem)
	resp := rec.response()
	if resp != nil && !json.Valid(resp) {
		// A plain-text refusal from the transport, as JSON-RPC.
		return errorResponse(m.ID, codeInvalidRequest, string(resp))
	}
	return resp
}

// withBody returns r with body as its body.
func withBody(r *http.Request, body []byte) *http.Request {
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	return r
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

// writeOwnAnswer answers a request the transport serves itself
// (ownAnswer), and reports whether it did.
func writeOwnAnswer(w http.ResponseWriter, body []byte, headerVersion string) bool {
	resp, failed := ownAnswer(body, true, headerVersion)
	if resp == nil {
		return false
	}
	status := http.StatusOK
	if failed {
		status = http.StatusBadRequest
	}
	writeRPCError(w, status, resp)
	return true
}

// writeRPCError answers with a JSON-RPC error response.
func writeRPCError(w http.ResponseWriter, status int, response []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(response)
}

// watchedWriter records whether anything was written.
type watchedWriter struct {
	http.ResponseWriter
	wrote bool
}

func (w *watchedWriter) WriteHeader(status int) {
	w.wrote = true
	w.ResponseWriter.WriteHeader(status)
}

func (w *watchedWriter) Write(p []byte) (int, error) {
	w.wrote = true
	return w.ResponseWriter.Write(p)
}

// Flush passes a flush on, for event streams.
func (w *watchedWriter) Flush() {
	w.wrote = true
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (w *watchedWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// splicingWriter writes what mcp writes of a split call's response with
// the call's files spliced in. mcp-go writes each message, JSON or an
// event of a stream, with one Write.
type splicingWriter struct {
	http.ResponseWriter
	call *toolcall.Call
}

func (w *splicingWriter) Write(p []byte) (int, error) {
	if _, err := w.ResponseWriter.Write(w.call.Splice(p)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush passes a flush on, for event streams.
func (w *splicingWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (w *splicingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// bufferedWriter keeps the response to one message of a batch.
type bufferedWriter struct {
	header http.Header
	body   bytes.Buffer
}

func (w *bufferedWriter) Header() http.Header         { return w.header }
func (w *bufferedWriter) WriteHeader(int)             {}
func (w *bufferedWriter) Write(p []byte) (int, error) { return w.body.Write(p) }

// Flush does nothing: the batch's response is written at its end.
func (w *bufferedWriter) Flush() {}

// response returns the JSON-RPC response that was written: the body, or
// from an event stream (mcp-go sends one when a call reports progress) the
// event that is a response, its notifications dropped, since a batch's
// answer holds responses only.
func (w *bufferedWriter) response() []byte {
	body := bytes.TrimSpace(w.body.Bytes())
	if !strings.HasPrefix(w.header.Get("Content-Type"), "text/event-stream") {
		if len(body) == 0 {
			return nil
		}
		return body
	}
	for _, line := range bytes.Split(body, []byte("\n")) {
		data, ok := bytes.CutPrefix(line, []byte("data:"))
		var m message
		if ok && json.Unmarshal(data, &m) == nil && m.isResponse() {
			return bytes.TrimSpace(data)
		}
	}
	return nil
}
