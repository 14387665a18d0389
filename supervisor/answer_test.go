package supervisor

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"capsule/ipc"
	"capsule/runtimes"
)

// frames encodes worker frames as a worker would send them.
func frames(t testing.TB, fs ...func(w *ipc.Writer) error) *ipc.Reader {
	t.Helper()
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf)
	for _, f := range fs {
		if err := f(w); err != nil {
			t.Fatal(err)
		}
	}
	return ipc.NewReader(&buf, 1<<20)
}

func out(s string) func(*ipc.Writer) error {
	return func(w *ipc.Writer) error { return w.WriteFrame(ipc.TypeStdout, []byte(s)) }
}

func errOut(s string) func(*ipc.Writer) error {
	return func(w *ipc.Writer) error { return w.WriteFrame(ipc.TypeStderr, []byte(s)) }
}

func done(d ipc.Done) func(*ipc.Writer) error {
	return func(w *ipc.Writer) error { return w.WriteJSON(ipc.TypeDone, d) }
}

func TestCollector(t *testing.T) {
	tests := []struct {
		name      string
		max       int64
		frames    []func(*ipc.Writer) error
		wantErr   string
		stdout    string
		stderr    string
		result    string
		limit     string
		isError   bool
		truncated bool
		text      []string
		notText   []string
	}{
		{
			name: "result and output",
			max:  100,
			frames: []func(*ipc.Writer) error{out("hel"), out("lo\n"), errOut("warn\n"),
				done(ipc.Done{Result: json.RawMessage(`[1,2]`), ResultType: "tuple", ResultRepr: "(1, 2)"})},
			stdout: "hello\n", stderr: "warn\n", result: "[1,2]",
			text: []string{"hello\n", "[stderr]\nwarn\n", "[result]\n(1, 2)"},
		},
		{
			name:   "a result JSON cannot hold is its repr in the text",
			max:    100,
			frames: []func(*ipc.Writer) error{done(ipc.Done{ResultType: "set", ResultRepr: "{1, 2}"})},
			text:   []string{"[result]\n{1, 2}"},
		},
		{
			name:   "None is in the structure, not in the text",
			max:    100,
			frames: []func(*ipc.Writer) error{done(ipc.Done{Result: json.RawMessage(`null`), ResultType: "NoneType", ResultRepr: "None"})},
			result: "null", notText: []string{"[result]", "None"},
		},
		{
			name: "a result without a type is refused",
			max:  100,
			frames: []func(*ipc.Writer) error{func(w *ipc.Writer) error {
				return w.WriteFrame(ipc.TypeDone, []byte(`{"result":1,"exit_code":0,"stdout_dropped":0,"stderr_dropped":0}`))
			}},
			wantErr: "a result without a type",
		},
		{
			name: "a type name with a control character is refused",
			max:  100,
			frames: []func(*ipc.Writer) error{func(w *ipc.Writer) error {
				return w.WriteFrame(ipc.TypeDone, []byte(`{"result_type":"in\nt","exit_code":0,"stdout_dropped":0,"stderr_dropped":0}`))
			}},
			wantErr: "not printable",
		},
		{
			name:   "worker over its cap is cut by the supervisor",
			max:    4,
			frames: []func(*ipc.Writer) error{out("abcdefgh"), done(ipc.Done{})},
			stdout: "abcd", limit: "output", isError: true, truncated: true,
			text: []string{"[stdout truncated: 4 bytes dropped]"},
		},
		{
			name:   "cut never splits a character",
			max:    4,
			frames: []func(*ipc.Writer) error{out("abcé"), out("z"), done(ipc.Done{})},
			stdout: "abc", limit: "output", isError: true, truncated: true,
		},
		{
			name:   "invalid UTF-8 from the guest is replaced",
			max:    100,
			frames: []func(*ipc.Writer) error{out("a\xffb"), done(ipc.Done{})},
			stdout: "a\uFFFDb",
		},
		{
			name:   "worker-reported drops count",
			max:    100,
			frames: []func(*ipc.Writer) error{out("x"), done(ipc.Done{StderrDropped: 10})},
			stdout: "x", limit: "output", isError: true, truncated: true,
			text: []string{"[stderr truncated: 10 bytes dropped]"},
		},
		{
			name:    "end without done",
			max:     100,
			frames:  []func(*ipc.Writer) error{out("partial")},
			wantErr: "without answering", stdout: "partial",
		},
		{
			name: "malformed done",
			max:  100,
			frames: []func(*ipc.Writer) error{func(w *ipc.Writer) error {
				return w.WriteFrame(ipc.TypeDone, []byte(`{"result":`))
			}},
			wantErr: "bad frame",
		},
		{
			name:    "unexpected frame type",
			max:     100,
			frames:  []func(*ipc.Writer) error{func(w *ipc.Writer) error { return w.WriteJSON(ipc.TypeReady, ipc.Ready{}) }},
			wantErr: "unexpected ready frame",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCollector(tt.max)
			d, err := c.read(frames(t, tt.frames...))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			a := c.answer(d, nil)
			if a.Stdout != tt.stdout || a.Stderr != tt.stderr {
				t.Errorf("stdout %q stderr %q, want %q %q", a.Stdout, a.Stderr, tt.stdout, tt.stderr)
			}
			if string(a.Result) != tt.result {
				t.Errorf("result %s, want %s", a.Result, tt.result)
			}
			gotLimit := ""
			if a.Limit != nil {
				gotLimit = *a.Limit
			}
			if gotLimit != tt.limit || a.IsError() != tt.isError {
				t.Errorf("limit %q isError %v, want %q %v", gotLimit, a.IsError(), tt.limit, tt.isError)
			}
			if (a.StdoutTruncated || a.StderrTruncated) != tt.truncated {
				t.Errorf("truncated %v/%v, want %v", a.StdoutTruncated, a.StderrTruncated, tt.truncated)
			}
			for _, want := range tt.text {
				if !strings.Contains(a.Text(), want) {
					t.Errorf("text %q does not contain %q", a.Text(), want)
				}
			}
			for _, not := range tt.notText {
				if strings.Contains(a.Text(), not) {
					t.Errorf("text %q contains %q", a.Text(), not)
				}
			}
		})
	}
}

// FuzzCapture feeds arbitrary output chunks through the supervisor's
// capture: the kept text is within the limit, valid UTF-8, and a prefix of
// what was written; kept plus dropped adds up.
func FuzzCapture(f *testing.F) {
	f.Add([]byte("hello\n"), []byte("wörld"), uint16(8))
	f.Add([]byte("\xff\xfe"), []byte("é"), uint16(1))
	f.Add([]byte(""), []byte("日本語"), uint16(4))
	f.Fuzz(func(t *testing.T, a, b []byte, max uint16) {
		c := capped{max: int64(max)}
		c.write(a)
		c.write(b)
		all := append(append([]byte{}, a...), b...)
		if int64(len(c.buf)) > int64(max) {
			t.Fatalf("kept %d bytes over a %d limit", len(c.buf), max)
		}
		if !bytes.HasPrefix(all, c.buf) {
			t.Fatalf("kept %q is not a prefix of %q", c.buf, all)
		}
		if int64(len(c.buf))+c.dropped != int64(len(all)) {
			t.Fatalf("kept %d + dropped %d != written %d", len(c.buf), c.dropped, len(all))
		}
		if !utf8.ValidString(c.String()) {
			t.Fatalf("captured text is not valid UTF-8")
		}
	})
}

func TestParseSize(t *testing.T) {
	tests := []struct {
		in   string
		want Size
		ok   bool
	}{
		{"256MiB", 256 << 20, true},
		{"1GiB", 1 << 30, true},
		{"512KiB", 512 << 10, true},
		{"1MB", 1000000, true},
		{"1024", 1024, true},
		{" 2 MiB ", 2 << 20, true},
		{"-1MiB", 0, false},
		{"1.5MiB", 0, false},
		{"MiB", 0, false},
		{"10TiB", 0, false},
		{"99999999999999GiB", 0, false},
	}
	for _, tt := range tests {
		got, err := ParseSize(tt.in)
		if (err == nil) != tt.ok || (tt.ok && got != tt.want) {
			t.Errorf("ParseSize(%q) = %v, %v; want %v ok=%v", tt.in, got, err, tt.want, tt.ok)
		}
	}
	if s := Size(256 << 20).String(); s != "256MiB" {
		t.Errorf("Size.String = %q", s)
	}
}

func TestLimitAnswer(t *testing.T) {
	a := limitAnswer(runtimes.LimitCodeSize, "CodeSizeError", "code_size: too big")
	if !a.IsError() || *a.Limit != "code_size" || !strings.Contains(a.Text(), "code_size: too big") {
		t.Fatalf("%+v %q", a, a.Text())
	}
}

// FuzzDone feeds a hostile worker's Done frame to the collector. Whatever
// it accepts must make a well-formed answer: a result type exactly when
// there is a repr, JSON that marshals, and a text that shows the repr
// unless the type is one the REPLs leave silent.
func FuzzDone(f *testing.F) {
	for _, seed := range []string{
		`{"result":[1,2],"result_type":"tuple","result_repr":"(1, 2)","exit_code":0,"stdout_dropped":0,"stderr_dropped":0}`,
		`{"result_type":"set","result_repr":"{1, 2}","exit_code":0,"stdout_dropped":0,"stderr_dropped":0}`,
		`{"result":null,"result_type":"NoneType","result_repr":"None","exit_code":0,"stdout_dropped":0,"stderr_dropped":0}`,
		`{"result":"18446744073709551616","result_type":"int","result_repr":"18446744073709551616","exit_code":0,"stdout_dropped":0,"stderr_dropped":0}`,
		`{"result":1,"exit_code":0,"stdout_dropped":0,"stderr_dropped":0}`,
		`{"result_type":"a\u0000b","exit_code":0,"stdout_dropped":0,"stderr_dropped":0}`,
		`{"result_repr":"x","exit_code":0,"stdout_dropped":0,"stderr_dropped":0}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, payload []byte) {
		var buf bytes.Buffer
		if err := ipc.NewWriter(&buf).WriteFrame(ipc.TypeDone, payload); err != nil {
			return
		}
		c := newCollector(1 << 20)
		d, err := c.read(ipc.NewReader(&buf, 1<<20))
		if err != nil {
			return
		}
		a := c.answer(d, nil)
		if (a.ResultType == nil) != (a.ResultRepr == nil) || (a.Result != nil && a.ResultType == nil) {
			t.Fatalf("accepted a partial result: %s %v %v", a.Result, a.ResultType, a.ResultRepr)
		}
		if _, err := json.Marshal(a); err != nil {
			t.Fatalf("the answer does not marshal: %v", err)
		}
		if shown, ok := a.ShownResult(); ok && !strings.Contains(a.Text(), "[result]\n"+shown) {
			t.Fatalf("text %q does not show %q", a.Text(), shown)
		}
	})
}
