package javascript

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"
	"unicode/utf8"
)

// bjsonEncode is QTS_bjson_encode, which capsule does not use: the test
// compares what it writes with what newText writes.
var expBJSONEncode = name{"QTS_bjson_encode", "Ka", sig(types(i32, i32), i32)}

// TestNewText: text passed in becomes the string it spells, whatever its
// characters (ASCII, Latin-1, the BMP, beyond it, NULs, invalid UTF-8 as
// U+FFFD), and the binary object newText writes is byte for byte the one
// QuickJS itself writes for that string, so the format's version and tag
// (bjsonVersion, bjsonTagString) are the pinned QuickJS's.
func TestNewText(t *testing.T) {
	texts := []string{
		"",
		"x,y\n1,2\n",
		"a\x00b\x00",
		"café ÿ",
		"grüße € ✓",
		"🙂 and \U0010FFFF",
		"bad \xff\xfe utf-8 \xe2\x82",
		strings.Repeat("0123456789abcdef", 1<<14), // a length of three varint bytes
		strings.Repeat("é", 70000),
		strings.Repeat("€", 70000) + "\x00",
	}
	e := testEngine(t)
	for _, text := range texts {
		in, _, _ := testInstance(t, e)
		chars, narrow := textChars([]byte(text))
		v, exc := in.newText([]byte(text), chars, narrow)
		if exc != 0 {
			t.Fatalf("%.20q: exception %s", text, in.describe(exc).Message)
		}
		want := string([]rune(text)) // U+FFFD for each invalid byte
		if got := viaGetString(in, v); got != want {
			t.Errorf("%.20q: the string reads back as %.20q (%d bytes), want %d bytes", text, got, len(got), len(want))
		}
		if n := int(in.numberProp(v, "length")); n != chars {
			t.Errorf("%.20q: length %d, textChars %d", text, n, chars)
		}
		if !strings.Contains(text, "\x00") {
			// QuickJS's own encoding of the string its UTF-8 decoder makes
			// of the text: the bytes newText wrote.
			js := in.newString(want)
			enc := in.call(in.mod.ExportedFunction(expBJSONEncode.min), in.jsctx, js)
			got, err := in.readArrayBuffer(enc, in.call(in.fn.getArrayBufferLength, in.jsctx, enc))
			if err != nil {
				t.Fatal(err)
			}
			in.freeValue(enc)
			in.freeValue(js)
			if !sameBJSON(got, text, chars, narrow) {
				t.Errorf("%.20q: QuickJS writes % x..., not what newText writes", text, got[:min(len(got), 12)])
			}
		}
		in.freeValue(v)
	}
}

// sameBJSON compares QuickJS's binary object of a string with the one
// newText writes for text: the same header but for the length's padding,
// the same characters.
func sameBJSON(got []byte, text string, chars int, narrow bool) bool {
	var hdr [bjsonHeaderLen]byte
	bjsonStringHeader(hdr[:], chars, narrow)
	mine, _ := binary.Uvarint(hdr[3:])
	theirs, n := binary.Uvarint(got[min(3, len(got)):])
	size := charBytes(chars, narrow)
	if len(got) < 3 || n <= 0 || !bytes.Equal(got[:3], hdr[:3]) || theirs != mine || len(got) != 3+n+size {
		return false
	}
	want := make([]byte, size)
	putChars(want, []byte(text), narrow)
	return bytes.Equal(got[3+n:], want)
}

func TestTextChars(t *testing.T) {
	tests := []struct {
		text   string
		chars  int
		narrow bool
	}{
		{"", 0, true},
		{"abcdefghijklmnop", 16, true},
		{"abcdefgh\xe9", 9, false}, // invalid: U+FFFD
		{"abcdefghé", 9, true},     // Latin-1
		{"abcdefgh€", 9, false},    // BMP
		{"abcdefgh🙂", 10, false},   // a surrogate pair
		{"\x00\x00\x00\x00", 4, true},
	}
	for _, tt := range tests {
		chars, narrow := textChars([]byte(tt.text))
		if chars != tt.chars || narrow != tt.narrow {
			t.Errorf("textChars(%q) = %d, %v; want %d, %v", tt.text, chars, narrow, tt.chars, tt.narrow)
		}
		if utf8.ValidString(tt.text) && chars != len([]rune(tt.text))+strings.Count(tt.text, "🙂") {
			t.Errorf("%q: %d characters", tt.text, chars)
		}
	}
}
