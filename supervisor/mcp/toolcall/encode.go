package toolcall

import (
	"bytes"
	"encoding/base64"
	"strconv"
	"unicode/utf8"
)

// attachment is a returned file's content, and how it goes into the JSON.
type attachment struct {
	data   []byte
	base64 bool
}

// placeholderPrefix starts every placeholder; the call's nonce and the
// attachment's index follow.
const placeholderPrefix = "capsule-attachment:"

// Text is the string a result carries for data as text: data itself when
// c is nil (the request was not split), else a placeholder that Splice
// replaces with data, encoded once as a JSON string.
func (c *Call) Text(data []byte) string {
	if c == nil {
		return string(data)
	}
	return c.attach(attachment{data: data})
}

// Base64 is Text for data as base64, as MCP's image content and blob
// resources carry bytes.
func (c *Call) Base64(data []byte) string {
	if c == nil {
		return base64.StdEncoding.EncodeToString(data)
	}
	return c.attach(attachment{data: data, base64: true})
}

func (c *Call) attach(a attachment) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.attachments = append(c.attachments, a)
	return placeholderPrefix + c.nonce + ":" + strconv.Itoa(len(c.attachments)-1)
}

// Splice returns encoded, a message holding the call's placeholders as
// JSON strings, with each replaced by its attachment. Nothing is copied
// when there are none. encoded is small, since it holds no file; each file
// is encoded into the result once.
func (c *Call) Splice(encoded []byte) []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.attachments) == 0 {
		return encoded
	}
	quoted := []byte(`"` + placeholderPrefix + c.nonce + ":")
	first := bytes.Index(encoded, quoted)
	if first < 0 {
		return encoded
	}
	size := len(encoded)
	for _, a := range c.attachments {
		size += encodedLen(a)
	}
	out := make([]byte, 0, size)
	rest := encoded
	for i := first; i >= 0; i = bytes.Index(rest, quoted) {
		out = append(out, rest[:i]...)
		rest = rest[i+len(quoted):]
		end := bytes.IndexByte(rest, '"')
		n, err := strconv.Atoi(string(rest[:max(end, 0)]))
		if end < 0 || err != nil || n < 0 || n >= len(c.attachments) {
			out = append(out, quoted...) // not one of ours after all
			continue
		}
		out = c.attachments[n].appendJSON(out)
		rest = rest[end+1:]
	}
	return append(out, rest...)
}

// encodedLen is about how long an attachment is as a JSON string.
func encodedLen(a attachment) int {
	if a.base64 {
		return base64.StdEncoding.EncodedLen(len(a.data)) + 2
	}
	return len(a.data) + len(a.data)/16 + 2
}

// appendJSON appends the attachment as a JSON string.
func (a attachment) appendJSON(out []byte) []byte {
	out = append(out, '"')
	if a.base64 {
		out = base64.StdEncoding.AppendEncode(out, a.data)
	} else {
		out = AppendString(out, a.data)
	}
	return append(out, '"')
}

// AppendString appends s, escaped for a JSON string (without the quotes):
// '"', '\\' and the control characters are escaped, and each byte that is
// not part of valid UTF-8 becomes U+FFFD, as encoding/json writes it.
// Unlike encoding/json it leaves <, > and & as they are; a JSON reader
// reads the same string either way.
func AppendString(out, s []byte) []byte {
	const hex = "0123456789abcdef"
	valid := utf8.Valid(s)
	for len(s) > 0 {
		n := special(s)
		if valid {
			out = append(out, s[:n]...)
		} else {
			out = appendValid(out, s[:n])
		}
		s = s[n:]
		if len(s) == 0 {
			break
		}
		switch c := s[0]; c {
		case '"', '\\':
			out = append(out, '\\', c)
		case '\n':
			out = append(out, '\\', 'n')
		case '\r':
			out = append(out, '\\', 'r')
		case '\t':
			out = append(out, '\\', 't')
		default:
			out = append(out, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		}
		s = s[1:]
	}
	return out
}

// appendValid appends b, with each byte that is not part of valid UTF-8
// as U+FFFD.
func appendValid(out, b []byte) []byte {
	if utf8.Valid(b) {
		return append(out, b...)
	}
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		out = utf8.AppendRune(out, r) // RuneError for a bad byte
		b = b[n:]
	}
	return out
}
