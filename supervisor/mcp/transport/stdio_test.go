package transport

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"sync"
	"testing"
	"time"
)

// lockedBuffer is a bytes.Buffer safe for the guard's writers.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestStdioGuardBoundsMessages(t *testing.T) {
	big := strings.Repeat("x", 5000)
	tests := []struct {
		name     string
		in       string
		wantRead string
		wantOut  []string // substrings of what the guard answered itself
	}{
		{name: "small lines pass", in: `{"a":1}` + "\n" + `{"b":2}` + "\n", wantRead: `{"a":1}` + "\n" + `{"b":2}` + "\n"},
		{name: "oversized, id first", in: `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"x":"` + big + `"}}` + "\n" + `{"ok":1}` + "\n",
			wantRead: `{"ok":1}` + "\n", wantOut: []string{`"id":7`, "over the 1000B limit", "-32600"}},
		{name: "oversized, id last", in: `{"method":"tools/call","params":{"x":"` + big + `"},"jsonrpc":"2.0","id":"abc"}` + "\n",
			wantOut: []string{`"id":"abc"`, "bytes, over the"}},
		{name: "oversized, no id found", in: `{"params":{"x":"` + big + `"},"id":3,"method":"m"}` + "\n" + "{}\n",
			wantRead: "{}\n", wantOut: []string{`"id":null`}},
		{name: "oversized without newline at the end", in: `{"x":"` + big + `"}`, wantOut: []string{`"id":null`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out lockedBuffer
			g := NewStdioGuard(strings.NewReader(tt.in), &out, 1000, time.Second)
			got, err := io.ReadAll(g)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.wantRead {
				t.Errorf("read %q, want %q", got, tt.wantRead)
			}
			for _, w := range tt.wantOut {
				if !strings.Contains(out.String(), w) {
					t.Errorf("answered %q, want it to contain %q", out.String(), w)
				}
			}
			if len(tt.wantOut) == 0 && out.Len() != 0 {
				t.Errorf("answered %q, want nothing", out.String())
			}
			for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
				if line != "" && !json.Valid([]byte(line)) {
					t.Errorf("answer %q is not JSON", line)
				}
			}
		})
	}
}

func (l *lockedBuffer) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Len()
}

func TestStdioGuardDropsCancelledResponses(t *testing.T) {
	in := `{"jsonrpc":"2.0","id":1,"method":"tools/call"}` + "\n" +
		`{"jsonrpc":"2.0","id":2,"method":"tools/call"}` + "\n" +
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}` + "\n"
	var out lockedBuffer
	g := NewStdioGuard(strings.NewReader(in), &out, 1<<20, time.Minute)
	var read bytes.Buffer
	buf := make([]byte, 4096)
	for i := 0; i < 3; i++ { // the three lines, not the end
		n, err := g.Read(buf)
		if err != nil {
			t.Fatal(err)
		}
		read.Write(buf[:n])
	}
	g.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":{"cancelled":true}}` + "\n"))
	g.Write([]byte(`{"jsonrpc":"2.0","method":"notifications/progress","params":{}}` + "\n"))
	g.Write([]byte(`{"jsonrpc":"2.0","id":2,"result":{}}` + "\n"))
	if strings.Contains(out.String(), `"id":1`) {
		t.Errorf("the cancelled request was answered: %s", out.String())
	}
	if !strings.Contains(out.String(), `"id":2`) || !strings.Contains(out.String(), "progress") {
		t.Errorf("other messages were dropped: %s", out.String())
	}
}

func TestStdioGuardWaitsForRunningCallsAtEOF(t *testing.T) {
	for _, tt := range []struct {
		name     string
		answer   bool
		grace    time.Duration
		wantWait time.Duration
	}{
		{name: "call answers", answer: true, grace: time.Minute},
		{name: "grace runs out", answer: false, grace: 200 * time.Millisecond, wantWait: 200 * time.Millisecond},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var out lockedBuffer
			g := NewStdioGuard(strings.NewReader(`{"jsonrpc":"2.0","id":5,"method":"tools/call"}`+"\n"), &out, 1<<20, tt.grace)
			buf := make([]byte, 4096)
			if _, err := g.Read(buf); err != nil {
				t.Fatal(err)
			}
			eof := make(chan time.Time, 1)
			start := time.Now()
			go func() {
				_, err := g.Read(buf)
				if err == io.EOF {
					eof <- time.Now()
				}
			}()
			select {
			case <-eof:
				t.Fatal("EOF while a call was running")
			case <-time.After(100 * time.Millisecond):
			}
			if tt.answer {
				g.Write([]byte(`{"jsonrpc":"2.0","id":5,"result":{}}` + "\n"))
			}
			select {
			case at := <-eof:
				if at.Sub(start) < tt.wantWait {
					t.Fatalf("EOF after %s, want at least %s", at.Sub(start), tt.wantWait)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("no EOF")
			}
		})
	}
}

func TestStdioGuardBatchesAndNullIDs(t *testing.T) {
	initialize := func(version string) string {
		return `{"jsonrpc":"2.0","id":0,"method":"initialize"}` + "\n"
	}
	tests := []struct {
		name, version, line string
		wantRead            string   // what the server reads after initialize
		answers             []string // the server's responses, written after the read
		wantOut             string   // what the client gets after initialize's answer
	}{
		{name: "batch under 2025-03-26", version: "2025-03-26",
			line:     `[{"jsonrpc":"2.0","id":1,"method":"a"}, {"jsonrpc":"2.0","method":"n"},` + "\t" + `{"jsonrpc":"2.0","id":2,"method":"b"}]`,
			wantRead: `{"jsonrpc":"2.0","id":1,"method":"a"}` + "\n" + `{"jsonrpc":"2.0","method":"n"}` + "\n" + `{"jsonrpc":"2.0","id":2,"method":"b"}` + "\n",
			answers:  []string{`{"jsonrpc":"2.0","id":2,"result":"B"}`, `{"jsonrpc":"2.0","id":1,"result":"A"}`},
			wantOut:  `[{"jsonrpc":"2.0","id":2,"result":"B"},{"jsonrpc":"2.0","id":1,"result":"A"}]` + "\n"},
		{name: "batch under 2025-11-25", version: "2025-11-25", line: `[{"jsonrpc":"2.0","id":1,"method":"a"}]`,
			wantOut: `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"` + noBatches("2025-11-25") + `"}}` + "\n"},
		{name: "batch of junk", version: "2025-03-26", line: `[1, 2]`,
			wantOut: `[{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"a batch element is not a JSON-RPC message"}},{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"a batch element is not a JSON-RPC message"}}]` + "\n"},
		{name: "null id", version: "2025-11-25", line: `{"jsonrpc":"2.0","id":null,"method":"tools/call"}`,
			wantOut: string(errorResponse(nil, codeInvalidRequest, nullIDError)) + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out lockedBuffer
			g := NewStdioGuard(strings.NewReader(initialize(tt.version)+tt.line+"\n"), &out, 1<<20, time.Second)
			buf := make([]byte, 4096)
			n, _ := g.Read(buf) // initialize
			if !strings.Contains(string(buf[:n]), "initialize") {
				t.Fatalf("read %q first", buf[:n])
			}
			g.Write([]byte(`{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"` + tt.version + `"}}` + "\n"))
			before := out.Len()
			var read bytes.Buffer
			for read.Len() < len(tt.wantRead) || tt.wantRead == "" {
				n, err := g.Read(buf)
				if err == io.EOF && tt.wantRead == "" {
					break
				}
				if err != nil {
					t.Fatalf("read %q, then %v", read.String(), err)
				}
				read.Write(buf[:n])
			}
			if read.String() != tt.wantRead {
				t.Errorf("the server read %q, want %q", read.String(), tt.wantRead)
			}
			for _, a := range tt.answers {
				g.Write([]byte(a + "\n"))
			}
			if got := out.String()[before:]; got != tt.wantOut {
				t.Errorf("the client got %q, want %q", got, tt.wantOut)
			}
		})
	}
}
