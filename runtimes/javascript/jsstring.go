package javascript

import (
	"encoding/binary"
	"errors"
	"unicode/utf16"
	"unicode/utf8"
)

// A string returned as a file's text is read straight from QuickJS's
// memory, not through QTS_GetString, which scans and converts the string a
// byte at a time in the guest and, for most strings, copies it into a C
// string first (about 10 ms for 5 MiB here). The host reads the characters
// in place and converts them to UTF-8 at native speed.
//
// The layout is QuickJS-NG 0.12's on wasm32, where a JSValue is NaN-boxed
// in 64 bits: the tag in the high half, a pointer in the low one. A string
// is one of:
//   - JS_TAG_STRING, a JSString: a 28-byte header (reference count; length
//     in characters, bit 31 set for 16-bit characters; hash, kind and atom
//     type; hash_next; first_weak_ref; and the two pointers of the list of
//     strings that quickjs-emscripten's build keeps for its leak dumps),
//     then, for the normal kind, the
//     characters; for the slice kind, the parent string (a normal one) and
//     the slice's start in bytes within the parent's characters;
//   - JS_TAG_STRING_ROPE, a JSStringRope: a concatenation of two strings,
//     its left and right JSValues at offsets 16 and 24.
//
// TestReadString holds this to QTS_GetString on strings of every kind. The
// guest's memory is the guest's: every read is bounds-checked, and a
// layout that does not make sense is an error, never a crash or a read
// outside the guest.
const (
	jsTagString     = 0xFFFFFFF9 // JS_TAG_STRING (-7)
	jsTagStringRope = 0xFFFFFFFA // JS_TAG_STRING_ROPE (-6)
	jsStringHeader  = 28         // sizeof(JSString)
	jsKindNormal    = 0          // JS_STRING_KIND_NORMAL
	jsKindSlice     = 1          // JS_STRING_KIND_SLICE
	jsRopeLeft      = 16
	jsRopeRight     = 24
	// maxRopeStack bounds the ropes waiting to be read: QuickJS rebalances
	// a rope deeper than 60 (JS_STRING_ROPE_MAX_DEPTH).
	maxRopeStack = 1024
	// maxRopeNodes bounds the strings and ropes read for one string, a
	// rope that holds itself included. QuickJS keeps ropes coarse: 200,000
	// appends of a few characters made a rope of about 2,500 strings.
	maxRopeNodes = 1 << 20
)

// errStringLayout is the error for a string that cannot be read.
var errStringLayout = errors.New("the string is not laid out as this QuickJS lays out strings")

// guestMemory is what stringRuns reads: api.Memory, bounds-checked.
type guestMemory interface {
	Read(offset, byteCount uint32) ([]byte, bool)
	ReadUint32Le(offset uint32) (uint32, bool)
	ReadUint64Le(offset uint32) (uint64, bool)
}

// charRun is a run of a string's characters in guest memory: a byte each
// (Latin-1), or UTF-16 little-endian when wide.
type charRun struct {
	b    []byte // a view of guest memory, valid while the instance is
	wide bool
}

// stringRuns returns the runs of characters of the string whose JSValue is
// at address v, in order, without copying them. It fails for anything that
// is not a string laid out as above, and for more than maxStringChars
// characters.
func stringRuns(mem guestMemory, v uint32) ([]charRun, error) {
	val, ok := mem.ReadUint64Le(v)
	if !ok {
		return nil, errStringLayout
	}
	var runs []charRun
	chars, nodes := 0, 0
	stack := []uint64{val}
	for len(stack) > 0 {
		val, stack = stack[len(stack)-1], stack[:len(stack)-1]
		if nodes++; nodes > maxRopeNodes {
			return nil, errStringLayout
		}
		p := uint32(val)
		switch uint32(val >> 32) {
		case jsTagString:
			r, err := stringRun(mem, p)
			if err != nil {
				return nil, err
			}
			if chars += charsOf(r); chars > maxStringChars {
				return nil, errStringLayout
			}
			if len(r.b) > 0 {
				runs = append(runs, r)
			}
		case jsTagStringRope:
			left, ok1 := mem.ReadUint64Le(p + jsRopeLeft)
			right, ok2 := mem.ReadUint64Le(p + jsRopeRight)
			if !ok1 || !ok2 || p > p+jsRopeRight || len(stack) > maxRopeStack {
				return nil, errStringLayout
			}
			stack = append(stack, right, left)
		default:
			return nil, errStringLayout
		}
	}
	return runs, nil
}

// stringRun returns the characters of the JSString at p.
func stringRun(mem guestMemory, p uint32) (charRun, error) {
	length, wide, kind, ok := stringHeader(mem, p)
	if !ok {
		return charRun{}, errStringLayout
	}
	start := p + jsStringHeader
	switch kind {
	case jsKindNormal:
	case jsKindSlice:
		parent, ok1 := mem.ReadUint32Le(p + jsStringHeader)
		offset, ok2 := mem.ReadUint32Le(p + jsStringHeader + 4)
		pLength, pWide, pKind, ok3 := stringHeader(mem, parent)
		end := uint64(offset) + uint64(length)<<wide
		if !ok1 || !ok2 || !ok3 || pKind != jsKindNormal || pWide != wide || end > uint64(pLength)<<wide {
			return charRun{}, errStringLayout
		}
		start = parent + jsStringHeader + offset // within the parent, which fits
	default:
		return charRun{}, errStringLayout
	}
	b, ok := mem.Read(start, length<<wide)
	if !ok {
		return charRun{}, errStringLayout
	}
	return charRun{b: b, wide: wide == 1}, nil
}

// stringHeader reads a JSString's length, width (1 for 16-bit characters)
// and kind.
func stringHeader(mem guestMemory, p uint32) (length, wide, kind uint32, ok bool) {
	lw, ok1 := mem.ReadUint32Le(p + 4)
	hk, ok2 := mem.ReadUint32Le(p + 8)
	if !ok1 || !ok2 || p > p+jsStringHeader {
		return 0, 0, 0, false
	}
	return lw & 0x7FFFFFFF, lw >> 31, hk >> 28 & 3, true
}

func charsOf(r charRun) int {
	if r.wide {
		return len(r.b) / 2
	}
	return len(r.b)
}

// utf8Writer converts runs of characters to UTF-8, or only counts the
// bytes that would make. A lone surrogate becomes U+FFFD, as TextEncoder
// makes it; a surrogate pair may straddle two runs.
type utf8Writer struct {
	dst   []byte
	n     int    // bytes counted, when count
	high  uint16 // a high surrogate waiting for its low half, or 0
	count bool
}

// stringUTF8Len is the length of the runs' text in UTF-8.
func stringUTF8Len(runs []charRun) int {
	w := utf8Writer{count: true}
	w.runs(runs)
	return w.n
}

// stringUTF8 is the runs' text as UTF-8, n bytes of it. A string of ASCII
// in one run is its own UTF-8, and is returned in place, a view of the
// guest's memory: copying megabytes onto a fresh process's new pages costs
// more than anything else about a file returned.
func stringUTF8(runs []charRun, n int) []byte {
	if len(runs) == 1 && !runs[0].wide && n == len(runs[0].b) {
		return runs[0].b
	}
	return appendStringUTF8(make([]byte, 0, n), runs)
}

// appendStringUTF8 appends the runs' text to dst as UTF-8.
func appendStringUTF8(dst []byte, runs []charRun) []byte {
	w := utf8Writer{dst: dst}
	w.runs(runs)
	return w.dst
}

func (w *utf8Writer) runs(runs []charRun) {
	for _, r := range runs {
		if !r.wide {
			w.lone()
			w.narrow(r.b)
			continue
		}
		for i := 0; i+1 < len(r.b); i += 2 {
			w.unit(binary.LittleEndian.Uint16(r.b[i:]))
		}
	}
	w.lone()
}

// narrow writes Latin-1 characters, runs of ASCII at once.
func (w *utf8Writer) narrow(b []byte) {
	for len(b) > 0 {
		i := asciiPrefix(b)
		if w.count {
			w.n += i
		} else {
			w.dst = append(w.dst, b[:i]...)
		}
		if b = b[i:]; len(b) > 0 {
			w.rune(rune(b[0]))
			b = b[1:]
		}
	}
}

// unit writes one UTF-16 unit.
func (w *utf8Writer) unit(u uint16) {
	if w.high != 0 {
		if utf16.IsSurrogate(rune(u)) && u >= 0xDC00 {
			w.rune(utf16.DecodeRune(rune(w.high), rune(u)))
			w.high = 0
			return
		}
		w.lone()
	}
	switch {
	case u >= 0xD800 && u < 0xDC00:
		w.high = u
	case u >= 0xDC00 && u < 0xE000:
		w.rune(utf8.RuneError)
	default:
		w.rune(rune(u))
	}
}

// lone writes a high surrogate that no low half followed as U+FFFD.
func (w *utf8Writer) lone() {
	if w.high != 0 {
		w.high = 0
		w.rune(utf8.RuneError)
	}
}

func (w *utf8Writer) rune(r rune) {
	if w.count {
		w.n += utf8.RuneLen(r)
		return
	}
	w.dst = utf8.AppendRune(w.dst, r)
}

// asciiPrefix is the length of b's leading run of ASCII, 32 bytes and then
// eight at a time.
func asciiPrefix(b []byte) int {
	const high = 0x8080808080808080
	i := 0
	for ; i+32 <= len(b); i += 32 {
		le := binary.LittleEndian
		if (le.Uint64(b[i:])|le.Uint64(b[i+8:])|le.Uint64(b[i+16:])|le.Uint64(b[i+24:]))&high != 0 {
			break
		}
	}
	for ; i+8 <= len(b); i += 8 {
		if binary.LittleEndian.Uint64(b[i:])&high != 0 {
			break
		}
	}
	for ; i < len(b) && b[i] < utf8.RuneSelf; i++ {
	}
	return i
}
