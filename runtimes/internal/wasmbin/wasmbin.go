// Package wasmbin reads and writes the few parts of the WebAssembly binary
// format that capsule's build-time module rewrites touch: the section list,
// LEB128 integers, names, limits and constant expressions.
//
// It is deliberately small: the rewrites change sections they understand
// and copy every other section byte for byte, so the rest of the module
// never needs decoding.
package wasmbin

import (
	"bytes"
	"errors"
	"fmt"
)

// Section ids of the WebAssembly binary format.
const (
	SecCustom    = 0
	SecType      = 1
	SecImport    = 2
	SecFunction  = 3
	SecTable     = 4
	SecMemory    = 5
	SecGlobal    = 6
	SecExport    = 7
	SecStart     = 8
	SecElement   = 9
	SecCode      = 10
	SecData      = 11
	SecDataCount = 12
)

// Import and export kinds.
const (
	KindFunc   = 0
	KindTable  = 1
	KindMemory = 2
	KindGlobal = 3
)

// Section is one section of a module: its id and its raw payload.
type Section struct {
	ID      byte
	Payload []byte
}

var header = []byte{0, 'a', 's', 'm', 1, 0, 0, 0}

// Sections splits a module into its sections. Payloads alias module.
func Sections(module []byte) ([]Section, error) {
	if len(module) < 8 || !bytes.Equal(module[:8], header) {
		return nil, errors.New("not a WebAssembly 1.0 binary module")
	}
	var out []Section
	r := &Reader{B: module, Pos: 8}
	for !r.Done() {
		id := r.Byte()
		size := r.U32()
		payload := r.Bytes(int(size))
		if r.Err != nil {
			return nil, fmt.Errorf("section %d: %w", id, r.Err)
		}
		out = append(out, Section{id, payload})
	}
	return out, nil
}

// Encode writes a module made of sections, in the order given.
func Encode(sections []Section) []byte {
	n := len(header)
	for _, s := range sections {
		n += 1 + 5 + len(s.Payload)
	}
	out := make([]byte, 0, n)
	out = append(out, header...)
	for _, s := range sections {
		out = append(out, s.ID)
		out = AppendU32(out, uint32(len(s.Payload)))
		out = append(out, s.Payload...)
	}
	return out
}

// Rank is the position a section must have in a module; it is not the id
// (the data count section, id 12, comes before code, id 10).
func Rank(id byte) int {
	switch id {
	case SecDataCount:
		return 10
	case SecCode:
		return 11
	case SecData:
		return 12
	default:
		return int(id)
	}
}

// Reader decodes the binary format; the first error sticks in Err, and every
// read after it returns zero values.
type Reader struct {
	B   []byte
	Pos int
	Err error
}

// Done reports whether the whole input has been read.
func (r *Reader) Done() bool { return r.Pos >= len(r.B) }

// Fail records err unless an earlier error is already recorded.
func (r *Reader) Fail(err error) {
	if r.Err == nil {
		r.Err = err
	}
}

// Byte reads one byte.
func (r *Reader) Byte() byte {
	if r.Pos >= len(r.B) {
		r.Fail(errors.New("unexpected end"))
		return 0
	}
	c := r.B[r.Pos]
	r.Pos++
	return c
}

// U32 reads an unsigned LEB128 integer of at most 32 bits.
func (r *Reader) U32() uint32 {
	var v uint32
	for shift := 0; shift < 35; shift += 7 {
		c := r.Byte()
		v |= uint32(c&0x7f) << shift
		if c&0x80 == 0 {
			return v
		}
	}
	r.Fail(errors.New("LEB128 too long"))
	return 0
}

// S64 reads a signed LEB128 integer of at most 64 bits.
func (r *Reader) S64() int64 {
	var v int64
	for shift := 0; shift < 70; shift += 7 {
		c := r.Byte()
		v |= int64(c&0x7f) << shift
		if c&0x80 == 0 {
			if shift+7 < 64 && c&0x40 != 0 {
				v |= -1 << (shift + 7)
			}
			return v
		}
	}
	r.Fail(errors.New("LEB128 too long"))
	return 0
}

// Bytes reads n bytes; the result aliases the input.
func (r *Reader) Bytes(n int) []byte {
	if n < 0 || r.Pos+n > len(r.B) {
		r.Fail(errors.New("unexpected end"))
		return nil
	}
	b := r.B[r.Pos : r.Pos+n]
	r.Pos += n
	return b
}

// Name reads a length-prefixed UTF-8 name.
func (r *Reader) Name() string { return string(r.Bytes(int(r.U32()))) }

// Limits skips the limits of a table or memory.
func (r *Reader) Limits() {
	flags := r.Byte()
	r.U32()
	if flags&1 != 0 {
		r.U32()
	}
}

// Opcodes that may appear in the constant expressions of globals and data
// segments of the modules capsule rewrites.
const (
	opEnd       = 0x0b
	opGlobalGet = 0x23
	opI32Const  = 0x41
	opI64Const  = 0x42
	opF32Const  = 0x43
	opF64Const  = 0x44
	opRefNull   = 0xd0
	opRefFunc   = 0xd2
)

// ConstExpr reads a constant expression up to and including its end opcode.
// When it is a single i32.const it returns that value and true.
func (r *Reader) ConstExpr() (i32 int32, isI32 bool) {
	count := 0
	for r.Err == nil {
		op := r.Byte()
		if op == opEnd {
			return i32, isI32 && count == 1
		}
		count++
		switch op {
		case opI32Const:
			i32, isI32 = int32(r.S64()), true
		case opI64Const:
			r.S64()
		case opF32Const:
			r.Bytes(4)
		case opF64Const:
			r.Bytes(8)
		case opGlobalGet, opRefFunc:
			r.U32()
		case opRefNull:
			r.Byte()
		default:
			r.Fail(fmt.Errorf("unsupported opcode 0x%02x in a constant expression", op))
		}
	}
	return 0, false
}

// AppendU32 appends v as unsigned LEB128.
func AppendU32(out []byte, v uint32) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v == 0 {
			return append(out, c)
		}
		out = append(out, c|0x80)
	}
}

// AppendS64 appends v as signed LEB128.
func AppendS64(out []byte, v int64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0) {
			return append(out, c)
		}
		out = append(out, c|0x80)
	}
}

// AppendVec appends a vector: the count of items, then each item.
func AppendVec(out []byte, items ...[]byte) []byte {
	out = AppendU32(out, uint32(len(items)))
	for _, it := range items {
		out = append(out, it...)
	}
	return out
}

// AppendName appends a length-prefixed name.
func AppendName(out []byte, name string) []byte {
	return append(AppendU32(out, uint32(len(name))), name...)
}

// ImportCounts counts a module's imports of each kind, indexed by kind.
func ImportCounts(payload []byte) ([4]uint32, error) {
	var counts [4]uint32
	r := &Reader{B: payload}
	n := r.U32()
	for i := uint32(0); i < n && r.Err == nil; i++ {
		r.Name()
		r.Name()
		kind := r.Byte()
		switch kind {
		case KindFunc:
			r.U32()
		case KindTable:
			r.Byte()
			r.Limits()
		case KindMemory:
			r.Limits()
		case KindGlobal:
			r.Byte()
			r.Byte()
		default:
			return counts, fmt.Errorf("import %d: unknown kind %d", i, kind)
		}
		counts[kind]++
	}
	if r.Err != nil || !r.Done() {
		return counts, fmt.Errorf("malformed import section: %v", r.Err)
	}
	return counts, nil
}
