package supervisor

import (
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// readableJSON rewrites the string escapes of a JSON text that stand for
// printable characters as those characters, for people and models to read:
// Go's encoder writes <, > and & as \u003c, \u003e and \u0026, and Python's
// json.dumps writes every non-ASCII character as \uXXXX. Quotes,
// backslashes, control characters and lone surrogates stay escaped, so the
// output is still the same JSON value. Anything that is not a well-formed
// escape is copied as it is.
func readableJSON(b []byte) string {
	out := make([]byte, 0, len(b))
	inString := false
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch {
		case c == '"':
			inString = !inString
		case c == '\\' && inString && i+1 < len(b):
			if b[i+1] != 'u' {
				out = append(out, c, b[i+1])
				i++
				continue
			}
			r, n := decodeEscape(b[i:])
			if n == 0 || !printable(r) {
				out = append(out, b[i:i+2]...)
				i++
				continue
			}
			out = utf8.AppendRune(out, r)
			i += n - 1
			continue
		}
		out = append(out, c)
	}
	return string(out)
}

// decodeEscape reads a \uXXXX escape, or a surrogate pair of two, at the
// start of b. It returns the character and the bytes read, or 0 bytes
// when b does not start with a well-formed escape of a whole character.
func decodeEscape(b []byte) (rune, int) {
	hi, ok := hex4(b)
	if !ok {
		return 0, 0
	}
	if !utf16.IsSurrogate(hi) {
		return hi, 6
	}
	lo, ok := hex4(b[6:])
	if !ok {
		return 0, 0
	}
	r := utf16.DecodeRune(hi, lo)
	if r == utf8.RuneError {
		return 0, 0
	}
	return r, 12
}

// hex4 parses `\uXXXX` at the start of b.
func hex4(b []byte) (rune, bool) {
	if len(b) < 6 || b[0] != '\\' || b[1] != 'u' {
		return 0, false
	}
	n, err := strconv.ParseUint(string(b[2:6]), 16, 16)
	return rune(n), err == nil
}

// printable reports whether r may appear unescaped in readable JSON: not a
// quote or backslash (which would end or start an escape), not a control
// character, and not a line or paragraph separator.
func printable(r rune) bool {
	switch {
	case r == '"' || r == '\\':
		return false
	case r < 0x20 || (r >= 0x7f && r < 0xa0):
		return false
	case r == 0x2028 || r == 0x2029:
		return false
	}
	return r != utf8.RuneError
}
