// Package terminal writes what a guest produced to a terminal safely:
// escaped, so that it cannot drive the terminal, and unchanged when the
// output is not a terminal.
package terminal

import (
	"fmt"
	"io"
	"os"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/sys/unix"
)

// GuestOutput is where capsule exec writes what the guest produced (its
// stdout and stderr, its result, its error): f itself when f is not a
// terminal, so that a pipe or a file gets the bytes unchanged; on a
// terminal, an Escaper, so that the guest cannot drive the terminal
// (move the cursor, retitle the window, rewrite what was printed before,
// reorder text) by printing escape sequences or control characters.
func GuestOutput(f *os.File) io.Writer {
	if !IsTerminal(f) {
		return f
	}
	return Escaper{f}
}

// IsTerminal reports whether f is a terminal: whether it has terminal
// attributes, as isatty(3) checks.
func IsTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// Escaper writes to W through Escape.
type Escaper struct{ W io.Writer }

// Write writes p escaped. Each call is escaped alone, so a CRLF split
// between two calls has its carriage return escaped.
func (e Escaper) Write(p []byte) (int, error) {
	if _, err := io.WriteString(e.W, Escape(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Escape makes text safe to show on a terminal: each control
// character (C0, DEL, C1) and bidirectional control is written as an
// escape, \x1b or \u202e, and so is each byte that is not UTF-8 (\xff).
// Line feeds, tabs and the carriage return of a CRLF stay, so that text
// keeps its lines.
func Escape(s string) string {
	if !needsEscape(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r < 0x80 && keepControl(s, i):
			b.WriteByte(s[i])
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case unicode.Is(unicode.Cc, r) || unicode.Is(unicode.Bidi_Control, r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// keepControl reports whether the ASCII character at s[i] is written as
// it is: any that is not a control, and a line feed, a tab, or the
// carriage return of a CRLF.
func keepControl(s string, i int) bool {
	switch c := s[i]; {
	case c == '\n' || c == '\t':
		return true
	case c == '\r':
		return i+1 < len(s) && s[i+1] == '\n'
	default:
		return c >= 0x20 && c != 0x7f
	}
}

// needsEscape reports whether Escape would change s.
func needsEscape(s string) bool {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && size == 1) || (r < 0x80 && !keepControl(s, i)) ||
			(r >= 0x80 && (unicode.Is(unicode.Cc, r) || unicode.Is(unicode.Bidi_Control, r))) {
			return true
		}
		i += size
	}
	return false
}
