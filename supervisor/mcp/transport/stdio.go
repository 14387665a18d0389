package transport

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"sync"
	"time"

	"capsule/ipc"
	"capsule/supervisor"
)

// StdioGuard stands between the stdio streams and mcp-go's stdio server,
// for what that server does not do itself:
//
//   - It bounds a message before it is decoded: a line over the limit is
//     skipped as it streams in, never held whole, and answered with a
//     JSON-RPC error (invalid request), after which the server carries on.
//     mcp-go would read the whole line into memory and parse it first.
//   - It sends no response to a request the client cancelled
//     (notifications/cancelled; MCP: the receiver SHOULD NOT respond).
//   - At the end of stdin it runs OnEOF, then waits, up to a grace
//     period, for the calls still running to answer before it reports
//     the end, since mcp-go cancels every running call when its input
//     ends.
//   - It answers a request whose id is null as an invalid request; mcp-go
//     would take it for a notification and say nothing.
//   - Given a server (ServeToolCalls), it serves tools/call requests
//     itself, split (package toolcall): their arguments are decoded once,
//     here, and never by mcp-go, and the files their results return are
//     encoded once, here (stdio_calls.go).
//   - It handles JSON-RPC batches by the negotiated version: under
//     2025-03-26 each message goes to the server alone and their responses
//     come back as one array; later versions have no batches, and a batch
//     is refused.
//
// mcp-go writes each message with one Write call, which the guard relies
// on to see whole messages.
type StdioGuard struct {
	// OnEOF, when set, runs at the end of stdin while calls are still
	// running, before the guard waits for their answers. serve drains the
	// supervisor there, so that a call still running at the end of the
	// shutdown grace is ended by the shutdown, and its answer says so,
	// rather than cancelled by the stdio server.
	OnEOF func()

	in    *bufio.Reader
	out   io.Writer
	max   int
	grace time.Duration

	line []byte // the rest of the line being handed to the server
	// buf keeps the storage of the last line read, for the next: a large
	// message then costs no fresh memory, whose page faults cost more
	// than reading the message.
	buf []byte

	mu      sync.Mutex // guards out, pending, idle, batches, initID, version and calls
	pending map[string]bool
	idle    chan struct{} // closed when pending becomes empty
	// batches holds the batches waiting for responses, by request id.
	batches map[string]*stdioBatch
	// initID is the initialize request's id; version is the protocol
	// version the server answered it with.
	initID, version string
	// calls serves the tools/call requests the guard splits, once
	// ServeToolCalls has attached a server; nil before.
	calls *stdioCalls
}

// stdioBatch gathers the responses to one batch.
type stdioBatch struct {
	waiting   int
	responses [][]byte
}

// NewStdioGuard guards the server's stdin and stdout; maxMessage bounds
// one message, grace is how long calls may run on after stdin ends.
func NewStdioGuard(stdin io.Reader, stdout io.Writer, maxMessage int, grace time.Duration) *StdioGuard {
	// Reads as large as the pipe, but no larger than a message may be.
	in := bufio.NewReaderSize(stdin, min(ipc.StdioPipeSize, max(64<<10, maxMessage)))
	return &StdioGuard{in: in, out: stdout, max: maxMessage, grace: grace, pending: map[string]bool{}, batches: map[string]*stdioBatch{}}
}

// Read implements io.Reader for the stdio server: whole lines of at most
// max bytes.
func (g *StdioGuard) Read(p []byte) (int, error) {
	for len(g.line) == 0 {
		line, err := g.next()
		if len(line) > 0 {
			g.line = g.admit(line)
			if len(g.line) > 0 {
				break
			}
		}
		if err == io.EOF {
			if g.OnEOF != nil && g.busy() {
				g.OnEOF()
			}
			g.waitIdle()
			g.stopCalls()
			return 0, io.EOF
		}
		if err != nil {
			return 0, err
		}
	}
	n := copy(p, g.line)
	g.line = g.line[n:]
	return n, nil
}

// admit returns what of a line the server is to read: the line itself;
// nothing, when the guard answered it; or a batch's messages, one a line.
func (g *StdioGuard) admit(line []byte) []byte {
	if isBatch(line) {
		return g.admitBatch(line)
	}
	start, refused := g.split(line, nil)
	if refused {
		return nil
	}
	if start != nil {
		start()
		return nil
	}
	if resp, _ := ownAnswer(line, false, ""); resp != nil {
		g.writeLine(resp)
		return nil
	}
	var m message
	if json.Unmarshal(line, &m) != nil {
		return line // the server answers a parse error
	}
	if m.hasNullID() {
		g.writeLine(errorResponse(nil, codeInvalidRequest, nullIDError))
		return nil
	}
	g.note(&m, nil)
	return line
}

// admitBatch splits a batch into lines for the server, or refuses it.
func (g *StdioGuard) admitBatch(line []byte) []byte {
	g.mu.Lock()
	version := g.version
	g.mu.Unlock()
	var elems []json.RawMessage
	switch err := json.Unmarshal(line, &elems); {
	case !batchesAllowed(version):
		g.writeLine(errorResponse(nil, codeInvalidRequest, noBatches(version)))
		return nil
	case err != nil:
		g.writeLine(errorResponse(nil, codeParseError, "the batch is not valid JSON: "+err.Error()))
		return nil
	case len(elems) == 0:
		g.writeLine(errorResponse(nil, codeInvalidRequest, "the batch is empty"))
		return nil
	}
	b := &stdioBatch{}
	var lines []byte
	var calls []func() // started once every element is noted, so that no answer completes the batch early
	for _, e := range elems {
		var m message
		switch {
		case json.Unmarshal(e, &m) != nil || (m.Method == "" && !m.isResponse()):
			b.responses = append(b.responses, errorResponse(nil, codeInvalidRequest, "a batch element is not a JSON-RPC message"))
		case m.hasNullID():
			b.responses = append(b.responses, errorResponse(nil, codeInvalidRequest, nullIDError))
		case m.Method == "initialize":
			b.responses = append(b.responses, errorResponse(m.ID, codeInvalidRequest, "initialize must not be part of a batch"))
		default:
			start, refused := g.split(e, b)
			if refused {
				continue
			}
			if start != nil {
				calls = append(calls, start)
				continue
			}
			g.note(&m, b)
			var c bytes.Buffer
			_ = json.Compact(&c, e) // one line: JSON has no raw newline but in white space
			lines = append(append(lines, c.Bytes()...), '\n')
		}
	}
	g.mu.Lock()
	if b.waiting == 0 && len(b.responses) > 0 {
		g.out.Write(append(joinBatch(b.responses), '\n'))
	}
	g.mu.Unlock()
	for _, start := range calls {
		start()
	}
	return lines
}

// note records a request as pending (in batch b, when not nil), or a
// cancellation of one.
func (g *StdioGuard) note(m *message, b *stdioBatch) {
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case m.Method == "notifications/cancelled" && len(m.Params.RequestID) > 0:
		key := idKey(m.Params.RequestID)
		if _, ok := g.pending[key]; ok {
			g.pending[key] = true
		}
		if g.calls != nil && g.calls.running[key] != nil {
			g.calls.running[key]()
		}
	case m.isRequest():
		if len(g.pending) == 0 {
			g.idle = make(chan struct{})
		}
		key := idKey(m.ID)
		g.pending[key] = false
		if b != nil {
			b.waiting++
			g.batches[key] = b
		}
		if m.Method == "initialize" {
			g.initID = key
		}
	}
}

// Write implements io.Writer for the stdio server: one message per call.
// A response goes through respond.
func (g *StdioGuard) Write(p []byte) (int, error) {
	var m message
	if json.Unmarshal(p, &m) != nil || !m.isResponse() {
		g.mu.Lock()
		defer g.mu.Unlock()
		return g.out.Write(p)
	}
	key := idKey(m.ID)
	g.mu.Lock()
	if key == g.initID {
		g.version = m.protocolVersion()
	}
	g.mu.Unlock()
	if err := g.respond(key, p); err != nil {
		return 0, err
	}
	return len(p), nil
}

// respond delivers p, the response to request key (nil: it has none). A
// response to a cancelled request is dropped; one to a request of a batch
// waits for the rest of the batch. The request stops counting as pending
// only once its response is written, so that the end of stdin cannot
// overtake it.
func (g *StdioGuard) respond(key string, p []byte) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	cancelled, ok := g.pending[key]
	if ok {
		defer func() {
			delete(g.pending, key)
			if len(g.pending) == 0 {
				close(g.idle)
			}
		}()
	}
	if b := g.batches[key]; b != nil {
		delete(g.batches, key)
		b.waiting--
		if !cancelled && p != nil {
			b.responses = append(b.responses, bytes.Clone(bytes.TrimSpace(p))) // p is the server's buffer
		}
		if b.waiting == 0 && len(b.responses) > 0 {
			_, _ = g.out.Write(append(joinBatch(b.responses), '\n'))
		}
		return nil
	}
	if cancelled || p == nil {
		return nil
	}
	_, err := g.out.Write(p)
	return err
}

// writeLine writes a message of the guard's own.
func (g *StdioGuard) writeLine(msg []byte) {
	g.mu.Lock()
	defer g.mu.Unlock()
	_, _ = g.out.Write(append(msg, '\n'))
}

// busy reports whether requests are waiting for their answers.
func (g *StdioGuard) busy() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.pending) > 0
}

// waitIdle waits until every pending request has been answered, or the
// grace period is over.
func (g *StdioGuard) waitIdle() {
	g.mu.Lock()
	idle := g.idle
	busy := len(g.pending) > 0
	g.mu.Unlock()
	if !busy {
		return
	}
	t := time.NewTimer(g.grace)
	defer t.Stop()
	select {
	case <-idle:
	case <-t.C:
	}
}

// next reads one line, newline included. A line over max is skipped and
// answered; next then goes on with the line after it.
//
// The line is g.buf's storage, which the next call reuses: nothing may
// keep it past the handling of the line (Split copies what it keeps).
func (g *StdioGuard) next() ([]byte, error) {
	line := g.buf[:0]
	var head, tail []byte
	size := 0
	for {
		chunk, err := g.in.ReadSlice('\n')
		size += len(chunk)
		switch {
		case size <= g.max:
			line = append(line, chunk...)
			g.buf = line
		case line != nil || head == nil:
			// Just over: keep the start and the end for the id.
			head = append(line, chunk...)[:min(size, idSniff)]
			line = nil
			tail = keepTail(nil, chunk)
		default:
			tail = keepTail(tail, chunk)
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if size > g.max {
			g.tooLarge(head, tail, size)
			if err != nil {
				return nil, err
			}
			line, head, tail, size = g.buf[:0], nil, nil, 0
			continue
		}
		return line, err
	}
}

// idSniff is how much of the start and end of an oversized message is
// kept to find its id.
const idSniff = 512

func keepTail(tail, chunk []byte) []byte {
	tail = append(tail, chunk...)
	if len(tail) > idSniff {
		tail = append(tail[:0], tail[len(tail)-idSniff:]...)
	}
	return tail
}

// Where a request's id sits in its first or last bytes, as the SDKs write
// it: Python's and Go's first after "jsonrpc", TypeScript's last.
var (
	idAtStart = regexp.MustCompile(`^\s*\{\s*"jsonrpc"\s*:\s*"2\.0"\s*,\s*"id"\s*:\s*(-?[0-9]+|"[^"\\]{0,200}")\s*,`)
	idAtEnd   = regexp.MustCompile(`,\s*"id"\s*:\s*(-?[0-9]+|"[^"\\]{0,200}")\s*\}\s*$`)
)

// tooLarge answers a message that was over the limit, with its id when
// the id can be found without reading the whole message, else null.
func (g *StdioGuard) tooLarge(head, tail []byte, size int) {
	id := json.RawMessage("null")
	if m := idAtStart.FindSubmatch(head); m != nil {
		id = m[1]
	} else if m := idAtEnd.FindSubmatch(tail); m != nil {
		id = m[1]
	}
	g.writeLine(errorResponse(id, codeInvalidRequest,
		fmt.Sprintf("the message is %d bytes, over the %s limit (see --max-request-body); it was skipped unread", size, supervisor.Size(g.max))))
}
