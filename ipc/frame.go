// Package ipc is the wire between the supervisor and a worker: length-prefixed
// frames over a pair of pipes that carry nothing else.
//
// A frame is a 4-byte big-endian payload length, one type byte, and the
// payload. Control frames carry one JSON object, decoded strictly (unknown
// fields, trailing data and oversized frames are errors); output frames carry
// raw bytes. The supervisor treats everything a worker sends as untrusted:
// a frame is never read past MaxFrameSize, and a malformed one ends the call.
//
// The conversation for one execution:
//
//	supervisor → worker  Setup    (protocol version, language, limits)
//	worker → supervisor  Ready    (module loaded, lockdown applied, interpreter started)
//	supervisor → worker  Request  (the code)
//	supervisor → worker  File, FileData  (the files passed in, if any)
//	worker → supervisor  Stdout / Stderr chunks, any number
//	worker → supervisor  File, FileData  (the files returned, if any)
//	worker → supervisor  Done     (result, error, limit)
//
// A worker that cannot get ready sends Failure instead of Ready.
package ipc

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
)

// ProtocolVersion is bumped on any incompatible change to the frames. The
// supervisor and worker are the same binary, so a mismatch means a stale or
// foreign executable answered.
const ProtocolVersion = 2

// HeaderSize is the length of a frame header: payload length and type.
const HeaderSize = 5

// Type identifies what a frame carries.
type Type byte

// Frame types. The letters make hex dumps readable.
const (
	TypeSetup   Type = 'S'
	TypeReady   Type = 'R'
	TypeFailure Type = 'F'
	TypeRequest Type = 'Q'
	TypeStdout  Type = 'O'
	TypeStderr  Type = 'E'
	TypeDone    Type = 'D'
	// TypeFile begins a file passed in or returned: a FileHeader.
	TypeFile Type = 'P'
	// TypeFileData carries a piece of the current file's content.
	TypeFileData Type = 'B'
)

func (t Type) String() string {
	switch t {
	case TypeSetup:
		return "setup"
	case TypeReady:
		return "ready"
	case TypeFailure:
		return "failure"
	case TypeRequest:
		return "request"
	case TypeStdout:
		return "stdout"
	case TypeStderr:
		return "stderr"
	case TypeDone:
		return "done"
	case TypeFile:
		return "file"
	case TypeFileData:
		return "file data"
	}
	return fmt.Sprintf("unknown(0x%02x)", byte(t))
}

func (t Type) valid() bool {
	switch t {
	case TypeSetup, TypeReady, TypeFailure, TypeRequest, TypeStdout, TypeStderr, TypeDone, TypeFile, TypeFileData:
		return true
	}
	return false
}

// Frame is one decoded frame. Payload is only valid until the next call to
// Reader.Next.
type Frame struct {
	Type    Type
	Payload []byte
}

// ErrFrameTooLarge is returned when a frame's declared length exceeds the
// reader's maximum. The payload is not read.
var ErrFrameTooLarge = errors.New("ipc: frame exceeds the maximum frame size")

// Reader reads frames from a stream, never buffering more than one frame.
type Reader struct {
	r   *bufio.Reader
	max int
	buf []byte
}

// NewReader returns a Reader that rejects frames whose payload is larger
// than maxFrame bytes.
func NewReader(r io.Reader, maxFrame int) *Reader {
	return &Reader{r: bufio.NewReaderSize(r, 64<<10), max: maxFrame}
}

// Next reads the next frame. It returns io.EOF only on a clean end between
// frames; a stream cut inside a frame is io.ErrUnexpectedEOF.
func (r *Reader) Next() (Frame, error) {
	var hdr [HeaderSize]byte
	if _, err := io.ReadFull(r.r, hdr[:]); err != nil {
		return Frame{}, err
	}
	n := binary.BigEndian.Uint32(hdr[:4])
	t := Type(hdr[4])
	if !t.valid() {
		return Frame{}, fmt.Errorf("ipc: unknown frame type 0x%02x", hdr[4])
	}
	if uint64(n) > uint64(r.max) {
		return Frame{}, fmt.Errorf("%w: %s frame of %d bytes, maximum %d", ErrFrameTooLarge, t, n, r.max)
	}
	if cap(r.buf) < int(n) {
		r.buf = make([]byte, n)
	}
	r.buf = r.buf[:n]
	if _, err := io.ReadFull(r.r, r.buf); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return Frame{}, fmt.Errorf("ipc: reading %s frame: %w", t, err)
	}
	return Frame{Type: t, Payload: r.buf}, nil
}

// Writer writes whole frames. It is safe for concurrent use: each frame goes
// out in a single write so frames from different goroutines never interleave.
type Writer struct {
	mu  sync.Mutex
	w   io.Writer
	buf []byte
}

// NewWriter returns a Writer on w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// WriteFrame writes one frame with a raw payload.
func (w *Writer) WriteFrame(t Type, payload []byte) error {
	if uint64(len(payload)) > 1<<32-1 {
		return fmt.Errorf("ipc: %s payload of %d bytes cannot be framed", t, len(payload))
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf[:0], 0, 0, 0, 0, byte(t))
	binary.BigEndian.PutUint32(w.buf[:4], uint32(len(payload)))
	w.buf = append(w.buf, payload...)
	_, err := w.w.Write(w.buf)
	if cap(w.buf) > 1<<20 {
		w.buf = nil // do not pin a large result's buffer for the process lifetime
	}
	return err
}

// WriteJSON writes one control frame holding v encoded as JSON. Characters
// that HTML gives meaning to (<, >, &) stay as they are: json.Marshal would
// turn them into \u003c escapes inside a result's JSON text, which the agent
// reads as it is.
func (w *Writer) WriteJSON(t Type, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("ipc: encoding %s frame: %w", t, err)
	}
	return w.WriteFrame(t, bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
}

// DecodeJSON decodes a control frame's payload into v strictly: exactly one
// JSON object, no unknown fields, nothing after it.
func DecodeJSON(f Frame, v any) error {
	dec := json.NewDecoder(bytes.NewReader(f.Payload))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("ipc: malformed %s frame: %w", f.Type, err)
	}
	if dec.More() {
		return fmt.Errorf("ipc: malformed %s frame: trailing data", f.Type)
	}
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("ipc: malformed %s frame: trailing data", f.Type)
	}
	return nil
}
