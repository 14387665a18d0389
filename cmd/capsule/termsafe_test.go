package main

import (
	"os"
	"testing"
)

func TestEscapeForTerminal(t *testing.T) {
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
		if got := EscapeForTerminal(tt.in); got != tt.want {
			t.Errorf("EscapeForTerminal(%q) = %q, want %q", tt.in, got, tt.want)
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
	if got := guestOutput(w); got != w {
		t.Errorf("a pipe gets %T, want the file itself", got)
	}
	master, slave := openPTY(t)
	defer master.Close()
	defer slave.Close()
	if _, ok := guestOutput(slave).(terminalEscaper); !ok {
		t.Errorf("a terminal gets %T, want a terminalEscaper", guestOutput(slave))
	}
}
