package importscan

// kind is a token's kind.
type kind uint8

const (
	eof kind = iota
	// name is an identifier or keyword.
	name
	// literal is a plain string literal whose text is its value: no
	// escape, no f-string.
	literal
	// other is any other string, a number, or punctuation.
	other
)

type token struct {
	kind kind
	// text is a name, a literal's value, or a punctuation byte.
	text string
	// newline says a line ended before the token (one continued with a
	// backslash does not count): a statement without brackets ends there.
	newline bool
}

func (t token) isName(s string) bool { return t.kind == name && t.text == s }

func (t token) isOp(c byte) bool { return t.kind == other && len(t.text) == 1 && t.text[0] == c }

// scanner splits Python source into tokens. It never fails: whatever is not
// valid Python still becomes some token, and an unterminated string ends
// at the end of its line (or of the code, for a triple-quoted one).
type scanner struct {
	src     string
	pos     int
	newline bool
}

func (s *scanner) next() token {
	tok := s.scan()
	tok.newline = s.newline
	s.newline = false
	return tok
}

// scan reads the next token, noting in s.newline the end of a line on the
// way.
func (s *scanner) scan() token {
	for s.pos < len(s.src) {
		c := s.src[s.pos]
		switch {
		case c == '\\':
			// A backslash joins lines; anywhere else it is an error
			// that does not matter here.
			s.pos++
			if s.pos < len(s.src) && s.src[s.pos] == '\r' {
				s.pos++
			}
			if s.pos < len(s.src) && s.src[s.pos] == '\n' {
				s.pos++
			}
		case c == '\n':
			s.newline = true
			s.pos++
		case c == ' ' || c == '\t' || c == '\r' || c == '\f':
			s.pos++
		case c == '#':
			for s.pos < len(s.src) && s.src[s.pos] != '\n' {
				s.pos++
			}
		case c == '"' || c == '\'':
			return s.str("")
		case isDigit(c):
			// A number, with its letters, dots and underscores (1e5,
			// 0x_ff, 1.5j): none of it is a name.
			start := s.pos
			for s.pos < len(s.src) && (isNameByte(s.src[s.pos]) || s.src[s.pos] == '.') {
				s.pos++
			}
			return token{kind: other, text: s.src[start:s.pos]}
		case isNameByte(c):
			start := s.pos
			for s.pos < len(s.src) && isNameByte(s.src[s.pos]) {
				s.pos++
			}
			word := s.src[start:s.pos]
			if s.pos < len(s.src) && (s.src[s.pos] == '"' || s.src[s.pos] == '\'') && isStringPrefix(word) {
				return s.str(word)
			}
			return token{kind: name, text: word}
		default:
			s.pos++
			return token{kind: other, text: s.src[s.pos-1 : s.pos]}
		}
	}
	return token{kind: eof}
}

// str reads a string literal at s.pos (its opening quote), after prefix.
func (s *scanner) str(prefix string) token {
	q := s.src[s.pos]
	triple := s.pos+2 < len(s.src) && s.src[s.pos+1] == q && s.src[s.pos+2] == q
	open := 1
	if triple {
		open = 3
	}
	s.pos += open
	start := s.pos
	plain := !containsAny(prefix, "fFbB")
	for s.pos < len(s.src) {
		c := s.src[s.pos]
		switch {
		case c == '\\':
			plain = false
			s.pos += 2 // the escaped byte, even in a raw string
			continue
		case c == '\n' && !triple:
			return token{kind: other, text: "\""}
		case c == q && (!triple || (s.pos+2 < len(s.src) && s.src[s.pos+1] == q && s.src[s.pos+2] == q)):
			text := s.src[start:s.pos]
			s.pos += open
			if plain {
				return token{kind: literal, text: text}
			}
			return token{kind: other, text: "\""}
		}
		s.pos++
	}
	s.pos = len(s.src)
	return token{kind: other, text: "\""}
}

// isStringPrefix reports whether word may stand before a string's quote:
// r, u, b, f and the pairs Python allows, in either case.
func isStringPrefix(word string) bool {
	switch len(word) {
	case 1:
		return containsAny(word, "rRuUbBfF")
	case 2:
		a, b := lower(word[0]), lower(word[1])
		return (a == 'r' && (b == 'b' || b == 'f')) || (b == 'r' && (a == 'b' || a == 'f'))
	}
	return false
}

func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

func containsAny(s, chars string) bool {
	for i := 0; i < len(s); i++ {
		for j := 0; j < len(chars); j++ {
			if s[i] == chars[j] {
				return true
			}
		}
	}
	return false
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// nameBytes marks the bytes that may be part of a name: ASCII letters,
// digits and _, and every byte of a non-ASCII character (Python names may
// have them; no module here does). A table, since the scan asks for every
// byte of the code.
var nameBytes = func() (t [256]bool) {
	for c := range 256 {
		t[c] = c == '_' || isDigit(byte(c)) || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || c >= 0x80
	}
	return t
}()

func isNameByte(c byte) bool { return nameBytes[c] }
