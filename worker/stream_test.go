package worker

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"capsule/ipc"
	"capsule/runtimes"
)

// sent decodes the output frames a stream wrote.
func sent(t testing.TB, buf *bytes.Buffer) []byte {
	t.Helper()
	r := ipc.NewReader(bytes.NewReader(buf.Bytes()), 1<<20)
	var out []byte
	for {
		f, err := r.Next()
		if err != nil {
			return out
		}
		if f.Type != ipc.TypeStdout {
			t.Fatalf("unexpected %s frame", f.Type)
		}
		out = append(out, f.Payload...)
	}
}

// FuzzStream writes arbitrary chunks through the worker's output capture:
// what reaches the supervisor is a prefix of what was written, within the
// cap, cut at a character boundary when the input was valid text, and kept
// plus dropped adds up.
func FuzzStream(f *testing.F) {
	f.Add([]byte("hello "), []byte("wörld\n"), uint16(8))
	f.Add([]byte("日本"), []byte("語"), uint16(4))
	f.Add([]byte("\xff"), []byte{}, uint16(0))
	f.Fuzz(func(t *testing.T, a, b []byte, max uint16) {
		var buf bytes.Buffer
		s := newStream(ipc.NewWriter(&buf), ipc.TypeStdout, int64(max))
		for _, p := range [][]byte{a, b} {
			if n, err := s.Write(p); n != len(p) || err != nil {
				t.Fatalf("Write = %d, %v: a capture must never fail the guest", n, err)
			}
		}
		if err := s.flush(); err != nil {
			t.Fatal(err)
		}
		all := append(append([]byte{}, a...), b...)
		got := sent(t, &buf)
		if len(got) > int(max) || !bytes.HasPrefix(all, got) {
			t.Fatalf("sent %q of %q with cap %d", got, all, max)
		}
		if int64(len(got))+s.droppedBytes() != int64(len(all)) {
			t.Fatalf("sent %d + dropped %d != written %d", len(got), s.droppedBytes(), len(all))
		}
		// A character split across two writes can be left dangling when
		// the cap falls between them (the supervisor shows it as U+FFFD);
		// any other invalid text would be a cut inside a write.
		if utf8.Valid(all) && !utf8.Valid(trimPartialRune(got)) {
			t.Fatalf("cut inside a character: %q", got)
		}
	})
}

// trimPartialRune drops an incomplete character at the end of b.
func trimPartialRune(b []byte) []byte {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				return b[:i]
			}
			break
		}
	}
	return b
}

func TestStreamFlushesAfterSilence(t *testing.T) {
	var buf syncBuffer
	s := newStream(ipc.NewWriter(&buf), ipc.TypeStdout, 1<<20)
	s.Write([]byte("a")) // first write flushes: long since the last flush
	s.Write([]byte("b")) // buffered...
	time.Sleep(3 * flushEvery)
	if got := string(sent(t, buf.snapshot())); got != "ab" {
		t.Fatalf("after a quiet period the supervisor has %q, want %q", got, "ab")
	}
}

type syncBuffer struct {
	mu  chan struct{}
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	if b.mu == nil {
		b.mu = make(chan struct{}, 1)
	}
	b.mu <- struct{}{}
	defer func() { <-b.mu }()
	return b.buf.Write(p)
}

func (b *syncBuffer) snapshot() *bytes.Buffer {
	b.mu <- struct{}{}
	defer func() { <-b.mu }()
	return bytes.NewBuffer(append([]byte{}, b.buf.Bytes()...))
}

func TestBound(t *testing.T) {
	big := json.RawMessage(`"` + strings.Repeat("x", 100) + `"`)
	o := bound(runtimes.Outcome{Result: big}, 50)
	if o.Result != nil || o.Limit != runtimes.LimitOutput || !strings.Contains(o.Error.Message, "102 bytes") {
		t.Fatalf("oversized result: %+v %+v", o, o.Error)
	}
	o = bound(runtimes.Outcome{Error: &runtimes.ErrorInfo{Type: "E", Message: strings.Repeat("é", 40)}}, 11)
	if !utf8.ValidString(o.Error.Message) || !strings.Contains(o.Error.Message, "bytes cut") {
		t.Fatalf("long message: %q", o.Error.Message)
	}
	o = bound(runtimes.Outcome{Result: json.RawMessage(`2`)}, 50)
	if string(o.Result) != "2" || o.Error != nil {
		t.Fatalf("small result changed: %+v", o)
	}
}
