package javascript

import (
	"encoding/binary"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestReadString holds the host's reading of a string in QuickJS's memory
// to QTS_GetString, on strings of every layout: normal, 8-bit and 16-bit,
// slices of either, ropes of mixed widths, a surrogate pair split between
// a rope's halves, lone surrogates, NULs.
func TestReadString(t *testing.T) {
	exprs := []string{
		`''`,
		`'x,y\n1,2\n'`,
		`'a\0b\0'`,
		`'café ÿ'`,
		`'grüße € ✓ 🙂'`,
		`'\ud800 lone \udc00 and \ud83d'`,
		`'x'.repeat(5000)`,
		`'é'.repeat(3000).slice(7, 2900)`,   // a slice of an 8-bit string
		`('€'.repeat(3000) + 'a').slice(1)`, // a slice of a 16-bit one
		`(() => { let s = ''; for (let i = 0; i < 3000; i++) s += i + ','; return s; })()`, // a rope
		`'a'.repeat(2000) + '\ud83d' + ('\ude00' + 'é'.repeat(2000))`,                      // a pair across a rope
		`(() => { let s = 'é'; for (let i = 0; i < 200; i++) s = (i % 2 ? s + '€' : '\ud83d' + s) + 'x'.repeat(50); return s; })()`,
		`('y'.repeat(5000) + 'z'.repeat(5000)).slice(1000, 9000)`,
	}
	e := testEngine(t)
	for _, expr := range exprs {
		in, _, _ := testInstance(t, e)
		v, exc := in.evalScript(expr, "test.js", 0)
		if exc != 0 {
			t.Fatalf("%s: %s", expr, in.describe(exc).Message)
		}
		want := viaGetString(in, v)
		runs, err := stringRuns(in.mem, v)
		if err != nil {
			t.Fatalf("%s: %v", expr, err)
		}
		got := appendStringUTF8(nil, runs)
		if string(got) != want || stringUTF8Len(runs) != len(got) {
			t.Errorf("%.40s: read %d bytes (counted %d) %.40q, QTS_GetString %d bytes %.40q", expr, len(got), stringUTF8Len(runs), got, len(want), want)
		}
		in.freeValue(v)
	}
}

// viaGetString is a string's text through QTS_GetString: QuickJS's UTF-8,
// its length found from the string's length in UTF-16 units (QuickJS
// writes a lone surrogate as three bytes of its own), lone surrogates then
// made U+FFFD.
func viaGetString(in *instance, v uint32) string {
	units := int(in.numberProp(v, "length"))
	c := in.call(in.fn.getString, in.jsctx, v)
	defer in.callv(in.fn.freeCString, in.jsctx, c)
	b, _ := in.mem.Read(c, in.mem.Size()-c)
	n := 0
	for ; units > 0; units-- {
		switch {
		case b[n] < 0x80:
			n++
		case b[n] >= 0xf0:
			n += 4
			units--
		case b[n] >= 0xe0:
			n += 3
		default:
			n += 2
		}
	}
	var sb strings.Builder
	for s := string(b[:n]); s != ""; {
		r, size := utf8.DecodeRuneInString(s)
		if r == utf8.RuneError && size == 1 && len(s) >= 3 { // a surrogate, encoded
			size = 3
		}
		sb.WriteRune(r)
		s = s[size:]
	}
	return sb.String()
}

// TestReadStringRefusesWhatIsNotAString: a JSValue that is no string, and
// a string header that points outside the guest, are errors.
func TestReadStringRefusesWhatIsNotAString(t *testing.T) {
	in, _, _ := testInstance(t, testEngine(t))
	v, _ := in.evalScript(`({})`, "test.js", 0)
	if _, err := stringRuns(in.mem, v); err == nil {
		t.Error("an object read as a string")
	}
	s, _ := in.evalScript(`'abc'.repeat(10)`, "test.js", 0)
	ptr, _ := in.mem.ReadUint32Le(s)
	in.mem.WriteUint32Le(ptr+4, 0x7FFFFFF0) // a length past the memory's end
	if _, err := stringRuns(in.mem, s); err == nil {
		t.Error("a string past the memory's end read")
	}
	in.mem.WriteUint32Le(ptr+4, 30)
	in.mem.WriteUint32Le(ptr+8, 2<<28) // the kind QuickJS uses for RegExp bytecode
	if _, err := stringRuns(in.mem, s); err == nil {
		t.Error("an indirect string read")
	}
	in.mem.WriteUint32Le(s+4, 0xFFFFFFFA) // a rope
	in.mem.WriteUint32Le(ptr+16, ptr)     // whose left half is itself
	in.mem.WriteUint32Le(ptr+20, 0xFFFFFFFA)
	if _, err := stringRuns(in.mem, s); err == nil {
		t.Error("a rope that begins with itself read")
	}
	q, _ := in.evalScript(`''`, "test.js", 0) // an empty string, on the left
	qv, _ := in.mem.ReadUint64Le(q)
	in.mem.WriteUint64Le(ptr+16, qv)
	in.mem.WriteUint32Le(ptr+24, ptr) // and itself on the right
	in.mem.WriteUint32Le(ptr+28, 0xFFFFFFFA)
	if _, err := stringRuns(in.mem, s); err == nil {
		t.Error("a rope that ends with itself read")
	}
}

// byteMemory is a guest memory for FuzzStringRuns.
type byteMemory []byte

func (m byteMemory) Read(off, n uint32) ([]byte, bool) {
	if uint64(off)+uint64(n) > uint64(len(m)) {
		return nil, false
	}
	return m[off : off+n], true
}

func (m byteMemory) ReadUint32Le(off uint32) (uint32, bool) {
	b, ok := m.Read(off, 4)
	if !ok {
		return 0, false
	}
	return binary.LittleEndian.Uint32(b), true
}

func (m byteMemory) ReadUint64Le(off uint32) (uint64, bool) {
	b, ok := m.Read(off, 8)
	if !ok {
		return 0, false
	}
	return binary.LittleEndian.Uint64(b), true
}

// FuzzStringRuns reads strings out of arbitrary memory, as a guest whose
// heap is corrupt could present them: it may refuse them, never panic or
// read outside the memory, and what it reads is as long as it counts.
func FuzzStringRuns(f *testing.F) {
	// A normal 8-bit string "hi" at 8, its JSValue at 0; a rope of it and
	// itself at 64, its JSValue at 56; a slice of the first at 96.
	m := make(byteMemory, 160)
	binary.LittleEndian.PutUint64(m[0:], 0xFFFFFFF9<<32|8)
	binary.LittleEndian.PutUint32(m[8+4:], 2)
	copy(m[8+jsStringHeader:], "hi")
	binary.LittleEndian.PutUint64(m[56:], 0xFFFFFFFA<<32|64)
	binary.LittleEndian.PutUint64(m[64+jsRopeLeft:], 0xFFFFFFF9<<32|8)
	binary.LittleEndian.PutUint64(m[64+jsRopeRight:], 0xFFFFFFF9<<32|96)
	binary.LittleEndian.PutUint32(m[96+4:], 1)
	binary.LittleEndian.PutUint32(m[96+8:], jsKindSlice<<28)
	binary.LittleEndian.PutUint32(m[96+jsStringHeader:], 8)
	binary.LittleEndian.PutUint32(m[96+jsStringHeader+4:], 1)
	f.Add([]byte(m), uint32(0))
	f.Add([]byte(m), uint32(56))
	f.Fuzz(func(t *testing.T, mem []byte, v uint32) {
		runs, err := stringRuns(byteMemory(mem), v)
		if err != nil {
			return
		}
		chars := 0
		for _, r := range runs {
			chars += charsOf(r)
		}
		if chars > maxStringChars {
			t.Fatalf("read %d characters", chars)
		}
		n := stringUTF8Len(runs)
		if b := stringUTF8(runs, n); len(b) != n || !utf8.Valid(b) {
			t.Fatalf("counted %d bytes, wrote %d (valid UTF-8: %v)", n, len(b), utf8.Valid(b))
		}
	})
}
