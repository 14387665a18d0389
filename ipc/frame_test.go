package ipc

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"strings"
	"testing"
)

func TestRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	want := Request{Code: "print('hi')", TimeoutMS: 30000}
	if err := w.WriteJSON(TypeRequest, want); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteFrame(TypeStdout, []byte("out\n")); err != nil {
		t.Fatal(err)
	}
	r := NewReader(&buf, 1<<20)
	f, err := r.Next()
	if err != nil || f.Type != TypeRequest {
		t.Fatalf("first frame: %v %v", f.Type, err)
	}
	var got Request
	if err := DecodeJSON(f, &got); err != nil {
		t.Fatal(err)
	}
	if got.Code != want.Code || got.TimeoutMS != want.TimeoutMS {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	f, err = r.Next()
	if err != nil || f.Type != TypeStdout || string(f.Payload) != "out\n" {
		t.Fatalf("second frame: %v %q %v", f.Type, f.Payload, err)
	}
	if _, err := r.Next(); err != io.EOF {
		t.Fatalf("after last frame: %v, want io.EOF", err)
	}
}

func frame(t Type, payload string) []byte {
	b := make([]byte, HeaderSize, HeaderSize+len(payload))
	binary.BigEndian.PutUint32(b, uint32(len(payload)))
	b[4] = byte(t)
	return append(b, payload...)
}

func TestReaderRejects(t *testing.T) {
	tests := []struct {
		name  string
		input []byte
		want  string
	}{
		{"unknown type", frame('Z', "{}"), "unknown frame type"},
		{"too large", frame(TypeDone, strings.Repeat("x", 65)), "exceeds the maximum"},
		{"cut header", []byte{0, 0}, "unexpected EOF"},
		{"cut payload", frame(TypeDone, "{}")[:6], "unexpected EOF"},
		{"huge declared length", []byte{0xff, 0xff, 0xff, 0xff, byte(TypeStdout)}, "exceeds the maximum"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewReader(bytes.NewReader(tt.input), 64).Next()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want error containing %q", err, tt.want)
			}
		})
	}
	_, err := NewReader(bytes.NewReader(frame(TypeDone, strings.Repeat("x", 65))), 64).Next()
	if !errors.Is(err, ErrFrameTooLarge) {
		t.Fatalf("oversized frame error %v is not ErrFrameTooLarge", err)
	}
}

func TestDecodeDoneStrict(t *testing.T) {
	tests := []struct {
		name    string
		payload string
		ok      bool
	}{
		{"plain", `{"exit_code":0,"stdout_dropped":0,"stderr_dropped":0}`, true},
		{"result", `{"result":{"a":[1,2]},"result_type":"dict","result_repr":"{'a': [1, 2]}","exit_code":0,"stdout_dropped":0,"stderr_dropped":0}`, true},
		{"result without JSON", `{"result_type":"set","result_repr":"{1}","exit_code":0,"stdout_dropped":0,"stderr_dropped":0}`, true},
		{"result without a type", `{"result":{"a":[1,2]},"exit_code":0,"stdout_dropped":0,"stderr_dropped":0}`, false},
		{"repr without a type", `{"result_repr":"1","exit_code":0,"stdout_dropped":0,"stderr_dropped":0}`, false},
		{"type with a control character", `{"result_type":"a\u0007","exit_code":0,"stdout_dropped":0,"stderr_dropped":0}`, false},
		{"shutdown is not the worker's to say", `{"limit":"shutdown","error":{"type":"E","message":"m","traceback":""},"exit_code":0,"stdout_dropped":0,"stderr_dropped":0}`, false},
		{"limit with error", `{"limit":"memory","error":{"type":"MemoryError","message":"m","traceback":""},"exit_code":0,"stdout_dropped":0,"stderr_dropped":0}`, true},
		{"unknown field", `{"exit_code":0,"evil":1}`, false},
		{"trailing data", `{"exit_code":0} {}`, false},
		{"trailing garbage", `{"exit_code":0}x`, false},
		{"not an object", `[1]`, false},
		{"scratch limit", `{"limit":"scratch","error":{"type":"OSError","message":"scratch: limit of 64MiB reached","traceback":""},"exit_code":1,"stdout_dropped":0,"stderr_dropped":0}`, true},
		{"unknown limit", `{"limit":"disk","error":{"type":"","message":"","traceback":""}}`, false},
		{"limit without error", `{"limit":"timeout"}`, false},
		{"negative count", `{"stdout_dropped":-1}`, false},
		{"empty", ``, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var d Done
			err := DecodeJSON(Frame{Type: TypeDone, Payload: []byte(tt.payload)}, &d)
			if err == nil {
				err = d.Validate()
			}
			if (err == nil) != tt.ok {
				t.Fatalf("ok=%v, err=%v", tt.ok, err)
			}
		})
	}
}

// TestSetupValidate: a Setup names a language, sane limits, a known mode, a
// key for a snapshot worker, and a variant only by a plain name (a run
// worker of a variant with a module of its own needs it too).
func TestSetupValidate(t *testing.T) {
	valid := func() Setup {
		return Setup{Protocol: ProtocolVersion, Language: "python", MemoryBytes: 1 << 20, MaxTimeoutMS: 1000, Mode: ModeRun}
	}
	tests := []struct {
		name   string
		change func(*Setup)
		ok     bool
	}{
		{"run", func(*Setup) {}, true},
		{"run of a variant", func(s *Setup) { s.Variant = "numpy" }, true},
		{"snapshot of a variant", func(s *Setup) { s.Mode, s.SnapshotKey, s.Variant = ModeSnapshot, "k", "sympy" }, true},
		{"snapshot without a key", func(s *Setup) { s.Mode = ModeSnapshot }, false},
		{"a variant named as a path", func(s *Setup) { s.Variant = "../numpy" }, false},
		{"a variant with capitals", func(s *Setup) { s.Variant = "NumPy" }, false},
		{"another protocol", func(s *Setup) { s.Protocol++ }, false},
		{"no language", func(s *Setup) { s.Language = "" }, false},
		{"an unknown mode", func(s *Setup) { s.Mode = "debug" }, false},
		{"a tiny memory", func(s *Setup) { s.MemoryBytes = 1 }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := valid()
			tt.change(&s)
			if err := s.Validate(); (err == nil) != tt.ok {
				t.Fatalf("ok=%v, err=%v", tt.ok, err)
			}
		})
	}
}
