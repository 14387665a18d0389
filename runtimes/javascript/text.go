package javascript

import (
	"encoding/binary"
	"unicode/utf16"
	"unicode/utf8"
)

// Text passed in as a file reaches QuickJS through its binary object format
// (QTS_bjson_decode), not QTS_NewString: the host writes the string's
// characters as QuickJS stores them and QuickJS copies them into a string
// with one memcpy, NULs and all. QTS_NewString reads a C string and decodes
// its UTF-8 a byte at a time in the guest (about 15 ms for 5 MiB here), and
// cannot take a NUL. The format of a lone string is a header of the format's
// version, an empty atom table, the string tag and the length in characters
// shifted left by one, its low bit set for 16-bit characters, then the
// characters: one byte each (Latin-1) when every character is below U+0100,
// UTF-16 little-endian otherwise. TestNewText checks these values against
// what QTS_bjson_encode writes.
const (
	bjsonVersion   = 23 // BC_VERSION of QuickJS-NG 0.12
	bjsonTagString = 7  // BC_TAG_STRING
)

// maxStringChars is QuickJS's JS_STRING_LEN_MAX: longer text cannot be one
// string.
const maxStringChars = 1<<30 - 1

// textChars returns how many characters (UTF-16 units) QuickJS's string of
// the UTF-8 text has, and whether they all fit in a byte. Invalid UTF-8
// counts as U+FFFD, as it is written.
func textChars(text []byte) (chars int, narrow bool) {
	narrow = true
	for len(text) > 0 {
		i := asciiPrefix(text)
		chars += i
		if text = text[i:]; len(text) == 0 {
			break
		}
		r, n := utf8.DecodeRune(text)
		text = text[n:]
		chars += utf16.RuneLen(r)
		narrow = narrow && r < 0x100
	}
	return chars, narrow
}

// bjsonHeaderLen is the length of the header bjsonStringHeader writes: the
// length always takes five bytes (LEB128 with padding, which QuickJS reads
// as the shortest form), so that a file received into guest memory after
// this much room needs no moving whatever its length.
const bjsonHeaderLen = 8

// bjsonStringHeader writes the header of the binary object of a string of
// chars characters to hdr.
func bjsonStringHeader(hdr []byte, chars int, narrow bool) {
	n := uint32(chars) << 1
	if !narrow {
		n |= 1
	}
	hdr[0], hdr[1], hdr[2] = bjsonVersion, 0, bjsonTagString
	for i := 3; i < 7; i++ {
		hdr[i] = byte(n&0x7f) | 0x80
		n >>= 7
	}
	hdr[7] = byte(n)
}

// putChars writes the text's characters to dst as QuickJS stores them: a
// byte each when narrow, UTF-16 little-endian otherwise. dst holds exactly
// the characters textChars counted.
func putChars(dst, text []byte, narrow bool) {
	if narrow {
		for j := 0; len(text) > 0; j++ {
			i := asciiPrefix(text)
			j += copy(dst[j:], text[:i])
			if text = text[i:]; len(text) == 0 {
				break
			}
			r, n := utf8.DecodeRune(text)
			dst[j] = byte(r)
			text = text[n:]
		}
		return
	}
	j := 0
	for i := 0; i < len(text); {
		r, n := rune(text[i]), 1
		if r >= utf8.RuneSelf {
			r, n = utf8.DecodeRune(text[i:]) // never a surrogate
		}
		i += n
		if r >= 0x10000 {
			r1, r2 := utf16.EncodeRune(r)
			binary.LittleEndian.PutUint16(dst[j:], uint16(r1))
			binary.LittleEndian.PutUint16(dst[j+2:], uint16(r2))
			j += 4
			continue
		}
		binary.LittleEndian.PutUint16(dst[j:], uint16(r))
		j += 2
	}
}

// charBytes is the size of chars characters as QuickJS stores them.
func charBytes(chars int, narrow bool) int {
	if narrow {
		return chars
	}
	return 2 * chars
}

// newText makes a JSValue* string of UTF-8 text, NULs included, or returns
// the exception QuickJS threw (out of memory, say). The text has chars
// characters (at most maxStringChars), narrow when all fit in a byte.
func (in *instance) newText(text []byte, chars int, narrow bool) (value, exc uint32) {
	size := charBytes(chars, narrow)
	p := in.malloc(uint32(bjsonHeaderLen + size))
	buf, ok := in.mem.Read(p+bjsonHeaderLen, uint32(size))
	if !ok {
		panic(trap{errNoMemory})
	}
	putChars(buf, text, narrow)
	return in.decodeText(p, chars, narrow)
}

// decodeText makes a JSValue* string of the chars characters at
// p+bjsonHeaderLen, a block of guest memory from malloc that it takes.
func (in *instance) decodeText(p uint32, chars int, narrow bool) (value, exc uint32) {
	var hdr [bjsonHeaderLen]byte
	bjsonStringHeader(hdr[:], chars, narrow)
	in.mem.Write(p, hdr[:])
	// The ArrayBuffer takes p, and frees it with free().
	ab := in.call(in.fn.newArrayBuffer, in.jsctx, p, uint32(bjsonHeaderLen+charBytes(chars, narrow)))
	v := in.call(in.fn.bjsonDecode, in.jsctx, ab)
	in.freeValue(ab)
	return in.valueOrException(v)
}
