package transport

import (
	"bufio"
	"bytes"
	"capsule/supervisor"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"sync"
	"time"
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
//   - At the end of stdin it waits, up to a grace period, for the calls
//     still running to answer before it reports the end, since mcp-go
//     cancels every running call when its input ends.
//
// mcp-go writes each message with one Write call, which the guard relies
// on to see whole messages.
type StdioGuard struct {
	in    *bufio.Reader
	out   io.Writer
	max   int
	grace time.Duration

	line []byte // the rest of the line being handed to the server

	mu      sync.Mutex // guards out, pending and idle
	pending map[string]bool
	idle    chan struct{} // closed when pending becomes empty
}

// NewStdioGuard guards the server's stdin and stdout; max bounds one
// message, grace is how long calls may run on after stdin ends.
func NewStdioGuard(stdin io.Reader, stdout io.Writer, max int, grace time.Duration) *StdioGuard {
	return &StdioGuard{in: bufio.NewReaderSize(stdin, 64<<10), out: stdout, max: max, grace: grace, pending: map[string]bool{}}
}

// Read implements io.Reader for the stdio server: whole lines of at most
// max bytes.
func (g *StdioGuard) Read(p []byte) (int, error) {
	for len(g.line) == 0 {
		line, err := g.next()
		if len(line) > 0 {
			g.note(line)
			g.line = line
			break
		}
		if err == io.EOF {
			g.waitIdle()
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

// idCarrier is what the guard reads of a message.
type idCarrier struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		RequestID json.RawMessage `json:"requestId"`
	} `json:"params"`
}

// note records a request as pending, or a cancellation of one.
func (g *StdioGuard) note(line []byte) {
	var m idCarrier
	if json.Unmarshal(line, &m) != nil || m.Method == "" {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case m.Method == "notifications/cancelled" && len(m.Params.RequestID) > 0:
		if _, ok := g.pending[idKey(m.Params.RequestID)]; ok {
			g.pending[idKey(m.Params.RequestID)] = true
		}
	case len(m.ID) > 0 && string(m.ID) != "null":
		if len(g.pending) == 0 {
			g.idle = make(chan struct{})
		}
		g.pending[idKey(m.ID)] = false
	}
}

func idKey(id json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, id) != nil {
		return string(id)
	}
	return b.String()
}

// Write implements io.Writer for the stdio server: one message per call.
// A response to a cancelled request is dropped.
func (g *StdioGuard) Write(p []byte) (int, error) {
	var m idCarrier
	isResponse := json.Unmarshal(p, &m) == nil && m.Method == "" && len(m.ID) > 0
	g.mu.Lock()
	defer g.mu.Unlock()
	if isResponse {
		key := idKey(m.ID)
		cancelled, ok := g.pending[key]
		if ok {
			delete(g.pending, key)
			if len(g.pending) == 0 {
				close(g.idle)
			}
		}
		if cancelled {
			return len(p), nil
		}
	}
	return g.out.Write(p)
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
func (g *StdioGuard) next() ([]byte, error) {
	var line []byte
	var head, tail []byte
	size := 0
	for {
		chunk, err := g.in.ReadSlice('\n')
		size += len(chunk)
		switch {
		case size <= g.max:
			line = append(line, chunk...)
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
			line, head, tail, size = nil, nil, nil, 0
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
	b, _ := json.Marshal(map[string]any{
		"jsonrpc": "2.0",
		"id":      id,
		"error": map[string]any{
			"code":    -32600,
			"message": fmt.Sprintf("the message is %d bytes, over the %s limit (see --max-request-body); it was skipped unread", size, supervisor.Size(g.max)),
		},
	})
	g.mu.Lock()
	defer g.mu.Unlock()
	_, _ = g.out.Write(append(b, '\n'))
}
