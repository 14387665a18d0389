package toolcall

import (
	"bytes"
	"errors"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// errSyntax is what the decoder reports for anything that is not JSON it
// decodes as encoding/json would. Its callers only need to know that the
// message goes the slow way, where encoding/json words the error.
var errSyntax = errors.New("toolcall: not JSON this decoder takes")

// errTooDeep is what the decoder reports for a value nested deeper than
// maxDepth, which encoding/json refuses too.
var errTooDeep = errors.New("toolcall: nested too deeply")

// maxDepth bounds how deeply the decoder recurses: as deep as
// encoding/json goes (10,000 levels), so that every message mcp-go could
// read has its keys checked. Go's stacks grow as needed; a level costs a
// few hundred bytes of stack.
const maxDepth = 10000

// plain marks the bytes that stand for themselves inside a JSON string:
// everything but '"', '\\' and the control characters.
var plain = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// decoder reads one JSON text. It decodes values into what encoding/json
// decodes into an any (map[string]any, []any, string, float64, bool, nil),
// with the same results, including its handling of invalid UTF-8 and lone
// surrogates (U+FFFD), and it skips values it only has to validate. Long
// strings cost one scan and one copy.
type decoder struct {
	b     []byte
	i     int
	depth int
	// lenient lets duplicate keys pass; only the search for a refused
	// message's id reads that way.
	lenient bool
}

func (d *decoder) space() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

// peek returns the next byte after white space, or 0 at the end.
func (d *decoder) peek() byte {
	d.space()
	if d.i == len(d.b) {
		return 0
	}
	return d.b[d.i]
}

// expect consumes c, after white space.
func (d *decoder) expect(c byte) error {
	if d.peek() != c {
		return errSyntax
	}
	d.i++
	return nil
}

// end checks that nothing but white space follows.
func (d *decoder) end() error {
	if d.space(); d.i != len(d.b) {
		return errSyntax
	}
	return nil
}

// members calls member for each member of the object that starts here,
// with the key's raw bytes (between the quotes) and its decoded form;
// member must consume the value. A key that comes twice (as decoded: an
// escape spells the same key) is a *keyError: encoding/json would keep the
// last, other readers the first.
func (d *decoder) members(member func(raw []byte, key string) error) error {
	var seen keySet
	return d.sequence('{', '}', func() error {
		if d.peek() != '"' {
			return errSyntax
		}
		start := d.i
		key, err := d.str()
		if err != nil {
			return err
		}
		raw := d.b[start+1 : d.i-1]
		if err := d.expect(':'); err != nil {
			return err
		}
		if !seen.add(key) && !d.lenient {
			return &keyError{key: key}
		}
		return within(member(raw, key), key)
	})
}

// elements calls element for each element of the array that starts here.
func (d *decoder) elements(element func() error) error {
	n := 0
	return d.sequence('[', ']', func() error {
		n++
		return within(element(), "["+strconv.Itoa(n-1)+"]")
	})
}

// sequence reads an object or an array: open, then items separated by
// commas, then end. item consumes one.
func (d *decoder) sequence(open, end byte, item func() error) error {
	if err := d.expect(open); err != nil {
		return err
	}
	if d.depth++; d.depth > maxDepth {
		return errTooDeep
	}
	defer func() { d.depth-- }()
	if d.peek() == end {
		d.i++
		return nil
	}
	for {
		if err := item(); err != nil {
			return err
		}
		switch d.peek() {
		case ',':
			d.i++
		case end:
			d.i++
			return nil
		default:
			return errSyntax
		}
	}
}

// value decodes the value that starts here.
func (d *decoder) value() (any, error) {
	switch c := d.peek(); {
	case c == '{':
		m := map[string]any{}
		err := d.members(func(_ []byte, key string) error {
			v, err := d.value()
			m[key] = v // members refuses a duplicate key
			return err
		})
		return m, err
	case c == '[':
		a := []any{}
		err := d.elements(func() error {
			v, err := d.value()
			a = append(a, v)
			return err
		})
		return a, err
	case c == '"':
		return d.str()
	case c == '-' || c >= '0' && c <= '9':
		n, err := d.number()
		if err != nil {
			return nil, err
		}
		f, err := strconv.ParseFloat(string(n), 64)
		if err != nil {
			return nil, errSyntax // out of range: encoding/json refuses it too
		}
		return f, nil
	}
	return d.literal()
}

// skip validates the value that starts here and returns its raw bytes.
func (d *decoder) skip() ([]byte, error) {
	start := d.peek()
	from := d.i
	var err error
	switch {
	case start == '{':
		err = d.members(func([]byte, string) error { _, err := d.skip(); return err })
	case start == '[':
		err = d.elements(func() error { _, err := d.skip(); return err })
	case start == '"':
		_, _, err = d.stringEnd()
	case start == '-' || start >= '0' && start <= '9':
		_, err = d.number()
	default:
		_, err = d.literal()
	}
	return d.b[from:d.i], err
}

// literal reads true, false or null.
func (d *decoder) literal() (any, error) {
	for _, l := range []struct {
		text  string
		value any
	}{{"true", true}, {"false", false}, {"null", nil}} {
		if strings.HasPrefix(string(d.b[d.i:min(len(d.b), d.i+5)]), l.text) {
			d.i += len(l.text)
			return l.value, nil
		}
	}
	return nil, errSyntax
}

// number reads a number as JSON writes it and returns its text.
func (d *decoder) number() ([]byte, error) {
	start := d.i
	if d.at('-') {
		d.i++
	}
	switch {
	case d.at('0'):
		d.i++
	case d.digits() == 0:
		return nil, errSyntax
	}
	if d.at('.') {
		d.i++
		if d.digits() == 0 {
			return nil, errSyntax
		}
	}
	if d.at('e') || d.at('E') {
		d.i++
		if d.at('+') || d.at('-') {
			d.i++
		}
		if d.digits() == 0 {
			return nil, errSyntax
		}
	}
	return d.b[start:d.i], nil
}

func (d *decoder) at(c byte) bool { return d.i < len(d.b) && d.b[d.i] == c }

func (d *decoder) digits() int {
	start := d.i
	for d.i < len(d.b) && d.b[d.i] >= '0' && d.b[d.i] <= '9' {
		d.i++
	}
	return d.i - start
}

// stringEnd moves past the string that starts here and reports where its
// closing quote is and whether it has escapes.
func (d *decoder) stringEnd() (end int, escaped bool, err error) {
	b := d.b
	i := d.i + 1
	for {
		i += special(b[i:])
		if i >= len(b) {
			return 0, false, errSyntax
		}
		switch b[i] {
		case '"':
			d.i = i + 1
			return i, escaped, nil
		case '\\':
			escaped = true
			if i+1 >= len(b) {
				return 0, false, errSyntax
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if hex4(b[i+2:]) < 0 {
					return 0, false, errSyntax
				}
				i += 6
			default:
				return 0, false, errSyntax
			}
		default: // a control character
			return 0, false, errSyntax
		}
	}
}

// str decodes the string that starts here.
func (d *decoder) str() (string, error) {
	start := d.i + 1
	end, escaped, err := d.stringEnd()
	if err != nil {
		return "", err
	}
	raw := d.b[start:end]
	if !escaped && utf8.Valid(raw) {
		return string(raw), nil
	}
	valid := utf8.Valid(raw) // escapes are ASCII, so the pieces between them are valid too
	var s strings.Builder
	s.Grow(len(raw))
	for len(raw) > 0 {
		n := bytes.IndexByte(raw, '\\') // the string is checked: the only special byte left
		if n < 0 {
			n = len(raw)
		}
		if valid {
			s.Write(raw[:n])
		} else {
			writeValid(&s, raw[:n])
		}
		raw = raw[n:]
		if len(raw) > 0 {
			raw = unescape(&s, raw)
		}
	}
	return s.String(), nil
}

// writeValid writes b, each byte that is not part of valid UTF-8 as
// U+FFFD, as encoding/json decodes it.
func writeValid(s *strings.Builder, b []byte) {
	if utf8.Valid(b) {
		s.Write(b)
		return
	}
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		s.WriteRune(r) // RuneError for a bad byte
		b = b[n:]
	}
}

// unescape writes the escape sequence at the start of b (already
// validated) and returns the rest.
func unescape(s *strings.Builder, b []byte) []byte {
	switch b[1] {
	case 'b':
		s.WriteByte('\b')
	case 'f':
		s.WriteByte('\f')
	case 'n':
		s.WriteByte('\n')
	case 'r':
		s.WriteByte('\r')
	case 't':
		s.WriteByte('\t')
	case 'u':
		r := rune(hex4(b[2:]))
		b = b[6:]
		if utf16.IsSurrogate(r) {
			r2 := rune(-1)
			if len(b) >= 6 && b[0] == '\\' && b[1] == 'u' {
				r2 = rune(hex4(b[2:]))
			}
			if pair := utf16.DecodeRune(r, r2); pair != utf8.RuneError {
				s.WriteRune(pair)
				return b[6:]
			}
			r = utf8.RuneError
		}
		s.WriteRune(r)
		return b
	default: // '"', '\\', '/'
		s.WriteByte(b[1])
	}
	return b[2:]
}

// hex4 decodes four hex digits, or returns -1.
func hex4(b []byte) int {
	if len(b) < 4 {
		return -1
	}
	n := 0
	for _, c := range b[:4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return -1
		}
		n = n<<4 | int(c)
	}
	return n
}
