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
	}{
		{
			name:   "result and output",
			max:    100,
			frames: []func(*ipc.Writer) error{out("hel"), out("lo\n"), errOut("warn\n"), done(ipc.Done{Result: json.RawMessage(`42`)})},
			stdout: "hello\n", stderr: "warn\n", result: "42",
			text: []string{"hello\n", "[stderr]\nwarn\n", "[result]\n42"},
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
		})
	}
}

func TestAnswerJSONShape(t *testing.T) {
	a := errorAnswer("WorkerError", "worker was killed")
	b, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	want := []string{"stdout", "stderr", "result", "error", "limit", "duration_ms", "stdout_truncated", "stderr_truncated"}
	if len(m) != len(want) {
		t.Fatalf("structured answer has fields %v, want exactly %v", m, want)
	}
	for _, k := range want {
		if _, ok := m[k]; !ok {
			t.Errorf("field %q missing from %s", k, b)
		}
	}
	if m["result"] != nil || m["limit"] != nil {
		t.Errorf("result and limit must be null: %s", b)
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

// FuzzParseArguments throws arbitrary JSON at the tool argument handling:
// it must never panic, and accepted arguments always hold the given code.
func FuzzParseArguments(f *testing.F) {
	f.Add([]byte(`{"code":"print(1)"}`))
	f.Add([]byte(`{"code":12}`))
	f.Add([]byte(`{}`))
	f.Add([]byte(`[]`))
	f.Add([]byte(`{"code":"x","extra":null}`))
	f.Add([]byte(`null`))
	f.Add([]byte(`{"code":"x","files":{"a.csv":"1,2","b/c":{"base64":"AAE="},"../d":"x"}}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		args, err := ParseArguments(json.RawMessage(raw))
		if err != nil {
			return
		}
		var m map[string]any
		if json.Unmarshal(raw, &m) != nil || m["code"] != args.Code {
			t.Fatalf("accepted %q as code %q", raw, args.Code)
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

func TestReadableJSON(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"k":"\u003cb\u003e\u65e5\u672c\u003c/b\u003e \u0026 co"}`, `{"k":"<b>日本</b> & co"}`},
		{`"\ud83d\ude00"`, `"😀"`},
		{`"\ud83d"`, `"\ud83d"`},                   // a lone surrogate stays escaped
		{`"a\"b\\c\n\u0007"`, `"a\"b\\c\n\u0007"`}, // escapes that must stay
		{`"\u0022\u005c"`, `"\u0022\u005c"`},       // a quote and a backslash stay escaped
		{`"\\u0041"`, `"\\u0041"`},                 // an escaped backslash, not an escape
		{`["\u00e9", 1.5e3, null]`, `["é", 1.5e3, null]`},
		{`"\u00"`, `"\u00"`}, // cut short: copied
	}
	for _, tt := range tests {
		if got := readableJSON([]byte(tt.in)); got != tt.want {
			t.Errorf("readableJSON(%s) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

// FuzzReadableJSON checks that the readable form of any JSON value is
// valid UTF-8 JSON for the same value.
func FuzzReadableJSON(f *testing.F) {
	f.Add([]byte(`{"k":"\u003cb\u003e\u65e5 \u0026"}`))
	f.Add([]byte(`"\ud83d\ude00\ud800"`))
	f.Add([]byte(`["\\u0041", "\u2028"]`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		var want any
		if json.Unmarshal(raw, &want) != nil {
			return
		}
		got := readableJSON(raw)
		var back any
		if err := json.Unmarshal([]byte(got), &back); err != nil {
			t.Fatalf("readable form %q of %q is not JSON: %v", got, raw, err)
		}
		a, _ := json.Marshal(want)
		b, _ := json.Marshal(back)
		if !bytes.Equal(a, b) {
			t.Fatalf("readable form %q of %q is %s, want %s", got, raw, b, a)
		}
		if utf8.Valid(raw) && !utf8.ValidString(got) {
			t.Fatalf("readable form %q of valid UTF-8 %q is not", got, raw)
		}
	})
}

func TestParseArgumentsBounds(t *testing.T) {
	deep := strings.Repeat(`{"a":`, MaxInputsDepth) + `1` + strings.Repeat(`}`, MaxInputsDepth)
	tooDeep := strings.Repeat(`[`, MaxInputsDepth) + strings.Repeat(`]`, MaxInputsDepth)
	tests := []struct {
		name, raw, wantErr string
	}{
		{"tiny timeout", `{"code":"1","timeout_seconds":1e-10}`, "below the smallest timeout"},
		{"smallest timeout", `{"code":"1","timeout_seconds":0.001}`, ""},
		{"inputs at the depth limit", `{"code":"1","inputs":` + deep[len(`{"a":`):len(deep)-1] + `}`, ""},
		{"inputs too deep", `{"code":"1","inputs":{"a":` + tooDeep + `}}`, "nests more than 100 levels"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseArguments(json.RawMessage(tt.raw))
			if tt.wantErr == "" && err != nil {
				t.Fatalf("refused: %v", err)
			}
			if tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("err = %v, want %q", err, tt.wantErr)
			}
		})
	}
}
