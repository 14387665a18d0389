package memprobe

import "capsule/runtimes/internal/wasmbin"

// Value types and the opcodes the probe's functions are made of.
const (
	typeI32 = 0x7f
	typeI64 = 0x7e

	opEnd        = 0x0b
	opCall       = 0x10
	opDrop       = 0x1a
	opLocalGet   = 0x20
	opLocalSet   = 0x21
	opMemorySize = 0x3f
	opMemoryGrow = 0x40
	opI32Const   = 0x41
	opI64Const   = 0x42
	opI32Sub     = 0x6b
	opI32Shl     = 0x74
	opI64Mul     = 0x7e
	opI64Add     = 0x7c
	opI64Xor     = 0x85
	opWrapI64    = 0xa7
	opExtendI32U = 0xad
)

// builder assembles a module with one memory, exported as "memory".
type builder struct {
	types, imports, funcs, code, exports [][]byte
	memMin, memMax                       uint32
	imported                             uint32
}

// funcType encodes a function type.
func funcType(params, results []byte) []byte {
	t := wasmbin.AppendVec([]byte{0x60}, oneByteEach(params)...)
	return wasmbin.AppendVec(t, oneByteEach(results)...)
}

func oneByteEach(b []byte) [][]byte {
	out := make([][]byte, len(b))
	for i := range b {
		out[i] = b[i : i+1]
	}
	return out
}

// typeIndex returns the index of typ, adding it when new.
func (b *builder) typeIndex(typ []byte) uint32 {
	for i, t := range b.types {
		if string(t) == string(typ) {
			return uint32(i)
		}
	}
	b.types = append(b.types, typ)
	return uint32(len(b.types) - 1)
}

// importFunc imports module.name of type typ; imports come before any
// function is added.
func (b *builder) importFunc(module, name string, typ []byte) uint32 {
	entry := wasmbin.AppendName(wasmbin.AppendName(nil, module), name)
	b.imports = append(b.imports, wasmbin.AppendU32(append(entry, 0), b.typeIndex(typ)))
	b.imported++
	return b.imported - 1
}

// function adds a function of type typ with i64 locals (after its
// parameters) and body, without its final end; exported as name unless
// name is empty. It returns the function's index.
func (b *builder) function(name string, typ []byte, i64Locals uint32, body []byte) uint32 {
	index := b.imported + uint32(len(b.funcs))
	b.funcs = append(b.funcs, wasmbin.AppendU32(nil, b.typeIndex(typ)))
	var code []byte
	if i64Locals > 0 {
		code = append(wasmbin.AppendU32(wasmbin.AppendU32(nil, 1), i64Locals), typeI64)
	} else {
		code = wasmbin.AppendU32(nil, 0)
	}
	code = append(append(code, body...), opEnd)
	b.code = append(b.code, append(wasmbin.AppendU32(nil, uint32(len(code))), code...))
	if name != "" {
		b.exports = append(b.exports, wasmbin.AppendU32(append(wasmbin.AppendName(nil, name), wasmbin.KindFunc), index))
	}
	return index
}

// bytes encodes the module.
func (b *builder) bytes() []byte {
	memory := wasmbin.AppendU32(wasmbin.AppendU32([]byte{1, 1}, b.memMin), b.memMax)
	exports := append(b.exports, append(wasmbin.AppendName(nil, "memory"), wasmbin.KindMemory, 0))
	sections := []wasmbin.Section{{ID: wasmbin.SecType, Payload: wasmbin.AppendVec(nil, b.types...)}}
	if len(b.imports) > 0 {
		sections = append(sections, wasmbin.Section{ID: wasmbin.SecImport, Payload: wasmbin.AppendVec(nil, b.imports...)})
	}
	return wasmbin.Encode(append(sections,
		wasmbin.Section{ID: wasmbin.SecFunction, Payload: wasmbin.AppendVec(nil, b.funcs...)},
		wasmbin.Section{ID: wasmbin.SecMemory, Payload: memory},
		wasmbin.Section{ID: wasmbin.SecExport, Payload: wasmbin.AppendVec(nil, exports...)},
		wasmbin.Section{ID: wasmbin.SecCode, Payload: wasmbin.AppendVec(nil, b.code...)},
	))
}
