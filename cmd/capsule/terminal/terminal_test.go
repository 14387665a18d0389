package terminal

import (
	"os"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"capsule/cmd/capsule/terminal/terminaltest"
)

func TestEscape(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain text\n", "plain text\n"},
		{"tabs\tand\nlines\r\n", "tabs\tand\nlines\r\n"},
		{"é€😀 日本語 حساب", "é€😀 日本語 حساب"},
		{"\x1b[31mred\x1b[0m", `\x1b[31mred\x1b[0m`},
		{"\x1b]0;pwned\x07", `\x1b]0;pwned\x07`}, // window title
		{"safe\rEVIL", `safe\x0dEVIL`},           // a lone CR rewrites the line
		{"bs\b\b", `bs\x08\x08`},
		{"del\x7f", `del\x7f`},
		{"nul\x00", `nul\x00`},
		{"c1 \u009b31m csi", `c1 \u009b31m csi`},
		{"nel\u0085", `nel\u0085`},
		{"inv\u202etxt.exe", `inv\u202etxt.exe`},
		{"\u2066isolate\u2069 \u200f", `\u2066isolate\u2069 \u200f`},
		{"bad \xff\xfe utf-8 \x9b", `bad \xff\xfe utf-8 \x9b`},
		{"cr at the end\r", `cr at the end\x0d`},
	}
	for _, tt := range tests {
		if got := Escape(tt.in); got != tt.want {
			t.Errorf("Escape(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if needsEscape(tt.in) != (tt.in != tt.want) {
			t.Errorf("needsEscape(%q) = %t", tt.in, needsEscape(tt.in))
		}
	}
}

// TestGuestOutputOnlyEscapesTerminals: a pipe gets the guest's bytes as
// they are; only a terminal gets them escaped.
func TestGuestOutputOnlyEscapesTerminals(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if got := GuestOutput(w); got != w {
		t.Errorf("a pipe gets %T, want the file itself", got)
	}
	master, slave := terminaltest.OpenPTY(t)
	defer master.Close()
	defer slave.Close()
	if _, ok := GuestOutput(slave).(Escaper); !ok {
		t.Errorf("a terminal gets %T, want a Escaper", GuestOutput(slave))
	}
}

// FuzzEscape holds Escape to its promise on any bytes: what it writes is
// UTF-8 and holds no control character but line feeds, tabs and the
// carriage returns of CRLFs, and no bidirectional control; text that
// needs no escaping comes out unchanged.
func FuzzEscape(f *testing.F) {
	for _, s := range []string{"plain\n", "\x1b[31mred", "a\r\nb\rc", "inv\u202etxt", "\xff\xc2\x9b", "\u0085\u009b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := Escape(s)
		if !utf8.ValidString(out) {
			t.Fatalf("Escape(%q) = %q, not UTF-8", s, out)
		}
		for i, r := range out {
			ok := r == '\n' || r == '\t' || (r == '\r' && strings.HasPrefix(out[i+1:], "\n")) ||
				!(unicode.Is(unicode.Cc, r) || unicode.Is(unicode.Bidi_Control, r))
			if !ok {
				t.Fatalf("Escape(%q) = %q, which holds U+%04X", s, out, r)
			}
		}
		if !needsEscape(s) && out != s {
			t.Fatalf("Escape(%q) = %q, though it needs no escaping", s, out)
		}
	})
}
