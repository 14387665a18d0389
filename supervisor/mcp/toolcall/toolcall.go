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
	"fmt"
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

// JSON-RPC error codes of a Refusal.
const (
	codeInvalidRequest = -32600
	codeInvalidParams  = -32602
)

// Refusal is a message Split refuses because it could be read two ways
// (keys.go): it is answered with Code and Message, and nothing of it runs.
type Refusal struct {
	// Code is -32600 (invalid request) when the ambiguity is in the
	// message's own members, -32602 (invalid params) when it is in params.
	Code    int
	Message string
	// ID is the request's id as the message writes it, when the message
	// has exactly one "id" and nothing that might be read as another;
	// nil otherwise (the answer's id is then null).
	ID []byte
}

// Split reads msg as the transports receive it, before anything else
// decodes it. It refuses a message whose keys could be read two ways
// (keys.go), or which nests too deeply to check. Otherwise, when msg is a
// tools/call request (a method of "tools/call", a string or number id,
// and params.arguments an object), it returns the call and the message
// mcp-go is to handle: msg with params.arguments replaced by {}. Anything
// else, including a message that is not valid JSON, is neither refused
// nor split (all results nil) and goes to mcp-go as it is.
//
// argumentNames are the tools' argument names: in a tools/call's
// arguments, a key that differs from one of them only by case or folding
// is refused too.
func Split(msg []byte, argumentNames []string) (call *Call, small []byte, refusal *Refusal) {
	d := &decoder{b: msg}
	var s splitter
	err := d.members(s.topMember(d))
	if err == nil {
		err = d.end()
	}
	if err == nil && s.method == Method {
		if args, ok := s.args.(map[string]any); ok {
			err = argumentsChecked(args, argumentNames)
		}
	}
	switch ke, ambiguous := err.(*keyError); {
	case ambiguous:
		code := codeInvalidParams
		if ke.topLevel() {
			code = codeInvalidRequest
		}
		return nil, nil, &Refusal{Code: code, Message: ke.Error(), ID: idOf(msg)}
	case err == errTooDeep:
		return nil, nil, &Refusal{Code: codeInvalidRequest, ID: idOf(msg),
			Message: fmt.Sprintf("the message nests more than %d levels deep, more than JSON-RPC readers take; flatten it", maxDepth)}
	case err != nil || !s.complete():
		return nil, nil, nil
	}
	var nonce [16]byte
	_, _ = rand.Read(nonce[:])
	call = &Call{ID: bytes.Clone(s.id), Arguments: s.args, nonce: hex.EncodeToString(nonce[:])}
	return call, s.small(msg), nil
}

// argumentsChecked checks a tools/call's arguments' keys against names.
func argumentsChecked(args map[string]any, names []string) error {
	for k := range args {
		if err := checkNames(k, names); err != nil {
			err.(*keyError).own = false
			return within(within(err, "arguments"), "params")
		}
	}
	return nil
}

// idOf returns the id of a message Split refuses, read leniently: the
// value of its one member "id", when no other member could be read as
// the id; else nil.
func idOf(msg []byte) []byte {
	d := &decoder{b: msg, lenient: true}
	var id []byte
	ids := 0
	err := d.members(func(_ []byte, key string) error {
		v, err := d.skip()
		if strings.EqualFold(key, "id") {
			ids++
			if key == "id" {
				id = v
			}
		}
		return err
	})
	if err != nil || ids != 1 || !validID(id) {
		return nil
	}
	return bytes.Clone(id)
}

// splitter gathers what Split reads of a message: the members it must
// know, and where params.arguments is, to cut it out.
type splitter struct {
	method       string
	id           []byte
	args         any
	argsFrom     int // params.arguments' value spans msg[argsFrom:argsTo]
	argsTo       int
	paramsObject bool
}

// topMember reads one member of the message.
func (s *splitter) topMember(d *decoder) func(raw []byte, key string) error {
	return func(_ []byte, key string) error {
		if err := checkNames(key, envelopeNames); err != nil {
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
	return func(_ []byte, key string) error {
		if err := checkNames(key, paramsNames); err != nil {
			return err
		}
		if key != "arguments" || d.peek() != '{' {
			_, err := d.skip()
			return err
		}
		s.argsFrom = d.i
		v, err := d.value()
		s.args, s.argsTo = v, d.i
		return err
	}
}

// complete reports whether the message is a tools/call request to split.
func (s *splitter) complete() bool {
	return s.method == Method && validID(s.id) && s.paramsObject && s.argsTo > s.argsFrom
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
