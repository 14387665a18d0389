// Package toolcall takes the bulk of a tools/call off mcp-go's JSON path.
//
// mcp-go decodes an incoming message about ten times on its way to a tool
// handler (to classify it, as each kind of response it might be, in
// HandleMessage, for the call's parameters) and encodes a result twice
// (CallToolResult's own MarshalJSON, then the response around it, which
// re-scans the first). encoding/json scans at about 100 to 200 MB/s, so a
// 5 MiB file passed in or returned cost the server close to a second of CPU.
//
// The transports instead Split a tools/call once: this package decodes the
// arguments, and mcp-go gets the same message with empty arguments, which
// costs it nothing. The decoded arguments reach the tool handler in the
// request's context, which belongs to that request alone, so no other
// call, and no other client, can see them. On the way back, the handler
// Attaches each returned file to the Call and puts the placeholder it gets
// into the result; mcp-go encodes the small result, and the transport
// Splices the files into its bytes, each encoded once.
package toolcall

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"strings"
	"sync"
)

// Method is the JSON-RPC method this package splits.
const Method = "tools/call"

// Call is a tools/call the transport split: its arguments, decoded, and the
// files its result carries as placeholders.
type Call struct {
	// ID is the request's id, as the client wrote it.
	ID []byte
	// Arguments is params.arguments as encoding/json would decode it into
	// an any: a map[string]any.
	Arguments any

	nonce       string // makes the placeholders unguessable
	mu          sync.Mutex
	attachments []attachment
}

// Split decodes msg when it is a tools/call request (a method of
// "tools/call", a string or number id, and params.arguments an object),
// and returns the call and the message mcp-go is to handle: msg with
// params.arguments replaced by {}. Anything else, including a message that
// is not valid JSON or whose names encoding/json would read otherwise
// (duplicates, other capitalisation), is not split (ok is false) and goes
// to mcp-go as it is.
func Split(msg []byte) (call *Call, small []byte, ok bool) {
	d := &decoder{b: msg}
	var s splitter
	if d.members(s.topMember(d)) != nil || d.end() != nil || !s.complete() {
		return nil, nil, false
	}
	var nonce [16]byte
	_, _ = rand.Read(nonce[:])
	call = &Call{ID: bytes.Clone(s.id), Arguments: s.args, nonce: hex.EncodeToString(nonce[:])}
	return call, s.small(msg), true
}

// splitter gathers what Split reads of a message: the members it must
// know, and where params.arguments is, to cut it out.
type splitter struct {
	method       string
	id           []byte
	args         any
	argsFrom     int // params.arguments' value spans msg[argsFrom:argsTo]
	argsTo       int
	seen         map[string]bool
	unusual      bool // a name encoding/json might read as one of ours
	paramsObject bool
}

// topMember reads one member of the message.
func (s *splitter) topMember(d *decoder) func(raw []byte, key string) error {
	return func(raw []byte, key string) error {
		if !s.note(raw, key, "jsonrpc", "id", "method", "params") {
			_, err := d.skip()
			return err
		}
		switch key {
		case "method":
			if d.peek() != '"' {
				_, err := d.skip()
				return err
			}
			m, err := d.str()
			s.method = m
			return err
		case "id":
			id, err := d.skip()
			s.id = id
			return err
		case "params":
			if d.peek() != '{' {
				_, err := d.skip()
				return err
			}
			s.paramsObject = true
			return d.members(s.paramsMember(d))
		}
		_, err := d.skip()
		return err
	}
}

// paramsMember reads one member of params.
func (s *splitter) paramsMember(d *decoder) func(raw []byte, key string) error {
	return func(raw []byte, key string) error {
		if !s.note(raw, "params."+key, "params.arguments") || d.peek() != '{' {
			_, err := d.skip()
			return err
		}
		s.argsFrom = d.i
		v, err := d.value()
		s.args, s.argsTo = v, d.i
		return err
	}
}

// note records a member's name and reports whether it is one of names.
// A name that is one of them but for case or escapes, or comes twice,
// makes the message unusual: encoding/json matches names without regard
// to case and takes the last of duplicates, and the message then goes to
// it whole.
func (s *splitter) note(raw []byte, key string, names ...string) bool {
	for _, n := range names {
		plainKey := key[strings.LastIndexByte(key, '.')+1:]
		if !strings.EqualFold(key, n) {
			continue
		}
		if s.seen == nil {
			s.seen = map[string]bool{}
		}
		if s.seen[n] || string(raw) != plainKey || key != n {
			s.unusual = true
		}
		s.seen[n] = true
		return true
	}
	return false
}

// complete reports whether the message is a tools/call request to split.
func (s *splitter) complete() bool {
	return !s.unusual && s.method == Method && validID(s.id) && s.paramsObject && s.argsTo > s.argsFrom
}

// validID reports whether id, as the message writes it, is a string or a
// number, the ids MCP allows. A request with any other id (null, an
// object) goes to mcp-go whole, which answers it as it always has.
func validID(id []byte) bool {
	return len(id) > 0 && (id[0] == '"' || id[0] == '-' || id[0] >= '0' && id[0] <= '9')
}

// small is msg with params.arguments' value replaced by {}.
func (s *splitter) small(msg []byte) []byte {
	out := make([]byte, 0, len(msg)-(s.argsTo-s.argsFrom)+2)
	out = append(out, msg[:s.argsFrom]...)
	out = append(out, "{}"...)
	return append(out, msg[s.argsTo:]...)
}

type contextKey struct{}

// NewContext returns ctx carrying call, for the tool handler.
func NewContext(ctx context.Context, call *Call) context.Context {
	return context.WithValue(ctx, contextKey{}, call)
}

// FromContext returns the call ctx carries, or nil when the transport did
// not split the request.
func FromContext(ctx context.Context) *Call {
	c, _ := ctx.Value(contextKey{}).(*Call)
	return c
}
