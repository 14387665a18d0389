package memprobe

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"strings"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/experimental"

	"capsule/runtimes"
	"capsule/runtimes/internal/guestmem"
	"capsule/runtimes/internal/wasmbin"
)

// fromAcc pushes, for a store, a value of the op's type made from the
// program's accumulator (local 0, an i64).
var fromAcc = map[byte][]byte{
	typeI32: {opLocalGet, 0, opWrapI64},
	typeI64: {opLocalGet, 0},
	0x38:    {opLocalGet, 0, opWrapI64, 0xbe}, // f32.reinterpret_i32
	0x39:    {opLocalGet, 0, 0xbf},            // f64.reinterpret_i64
	0x0b:    {opLocalGet, 0, 0xfd, 0x12},      // i64x2.splat
}

// storeValue returns what a generated program stores with op.
func storeValue(op Op) []byte {
	switch last := op.opcode[len(op.opcode)-1]; {
	case len(op.opcode) == 2: // v128.store
		return fromAcc[0x0b]
	case last == 0x38 || last == 0x39:
		return fromAcc[last]
	case last == 0x37 || last >= 0x3c:
		return fromAcc[typeI64]
	default:
		return fromAcc[typeI32]
	}
}

// fuzzInput reads a generated program's choices; past its end every read
// is zero.
type fuzzInput struct{ b []byte }

func (in *fuzzInput) byte() byte {
	if len(in.b) == 0 {
		return 0
	}
	c := in.b[0]
	in.b = in.b[1:]
	return c
}

func (in *fuzzInput) u32() uint32 {
	var v [4]byte
	for i := range v {
		v[i] = in.byte()
	}
	return binary.LittleEndian.Uint32(v[:])
}

// loads and stores are Ops split by kind.
var loads, stores = func() (loads, stores []Op) {
	for _, op := range Ops {
		if op.Store {
			stores = append(stores, op)
		} else {
			loads = append(loads, op)
		}
	}
	return loads, stores
}()

// fuzzOffsets are the static offsets a generated access picks from.
var fuzzOffsets = []uint64{0, 1, 7, 0xfff0, 0x10000, 0x7fffffff, 0x80000000, 0xfffffff0, 0xffffffff}

// program turns fuzz input into a module whose "run" () -> i64 makes up to
// 48 loads, stores, memory.grows and accumulator steps on a memory of 1 to
// 4 pages, and returns the accumulator. Addresses are constants, offsets
// from the memory's end, or taken from the accumulator.
func program(data []byte) []byte {
	in := &fuzzInput{b: data}
	b := &builder{memMin: 1 + uint32(in.byte()%2), memMax: 4}
	var body []byte
	for step := 0; step < 48 && len(in.b) > 0; step++ {
		switch in.byte() % 6 {
		case 0, 1: // load, into the accumulator
			op := loads[int(in.byte())%len(loads)]
			body = op.access(address(body, in), fuzzOffsets[int(in.byte())%len(fuzzOffsets)])
			body = append(body, opLocalGet, 0, opI64Const, 31, opI64Mul, opI64Add, opLocalSet, 0)
		case 2, 3: // store, of the accumulator
			op := stores[int(in.byte())%len(stores)]
			body = address(body, in)
			body = append(body, storeValue(op)...)
			body = append(append(body, op.opcode...), 0)
			body = wasmbin.AppendU32(body, uint32(fuzzOffsets[int(in.byte())%len(fuzzOffsets)]))
		case 4: // memory.grow by 0 to 2 pages, its result into the accumulator
			body = append(body, opI32Const, in.byte()%3, opMemoryGrow, 0, opExtendI32U, opLocalGet, 0, opI64Add, opLocalSet, 0)
		case 5: // accumulator ^= constant
			body = wasmbin.AppendS64(append(body, opLocalGet, 0, opI64Const), int64(in.u32())<<int(in.byte()%33))
			body = append(body, opI64Xor, opLocalSet, 0)
		}
	}
	b.function("run", funcType(nil, []byte{typeI64}), 1, append(body, opLocalGet, 0))
	return b.bytes()
}

// address appends a dynamic address (an i32).
func address(body []byte, in *fuzzInput) []byte {
	switch in.byte() % 4 {
	case 0: // a constant
		return wasmbin.AppendS64(append(body, opI32Const), int64(int32(in.u32())))
	case 1: // the memory's size in bytes minus 0 to 39
		body = append(body, opMemorySize, 0, opI32Const, 16, opI32Shl, opI32Const, in.byte()%40)
		return append(body, opI32Sub)
	case 2: // the accumulator
		return append(body, opLocalGet, 0, opWrapI64)
	default: // a small constant
		return wasmbin.AppendS64(append(body, opI32Const), int64(in.byte())<<8)
	}
}

// run compiles module under ctx in r, calls its "run" and describes what
// happened: the result or the trap, and the memory afterwards.
func run(ctx context.Context, r wazero.Runtime, module []byte) (string, []byte, error) {
	compiled, err := r.CompileModule(ctx, module)
	if err != nil {
		return "", nil, err
	}
	defer compiled.Close(ctx)
	mod, err := r.InstantiateModule(ctx, compiled, wazero.NewModuleConfig().WithName(""))
	if err != nil {
		return "", nil, err
	}
	defer mod.Close(ctx)
	res, err := mod.ExportedFunction("run").Call(ctx)
	outcome := fmt.Sprint(res)
	if err != nil {
		outcome, _, _ = strings.Cut(err.Error(), "\n")
	}
	mem, _ := mod.Memory().Read(0, mod.Memory().Size())
	return outcome, bytes.Clone(mem), nil
}

// seedPrograms are inputs of program: what each does is said beside it.
var seedPrograms = [][]byte{
	{0, 0, 14, 1, 0, 0},                  // v128.load one past the end: a trap
	{0, 2, 1, 1, 4, 0},                   // i64.store straddling the end: a trap, nothing written
	{0, 4, 1, 0, 0, 1, 4, 0},             // grow by a page, then i32.load at the new end: fits
	{0, 4, 1, 0, 0, 1, 0, 2},             // grow by a page, then i32.load past the new end, offset 7: a trap
	{0, 0, 0, 0, 255, 255, 255, 255, 8},  // i32.load at the top of the index range, the largest offset
	{1, 2, 9, 1, 16, 0, 0, 14, 1, 16, 0}, // v128.store in the last 16 bytes, then v128.load there
}

// FuzzGuardPages runs generated programs of loads and stores on a memory
// as the workers have it (a guard-page memory, without bounds checks, where
// guestmem.GuardPages) and on one with checks (wazero's own), and requires
// the same result or trap and the same memory afterwards.
func FuzzGuardPages(f *testing.F) {
	for _, seed := range seedPrograms {
		f.Add(seed)
	}
	guarded := wazero.NewRuntimeWithConfig(context.Background(), wazero.NewRuntimeConfigCompiler())
	checked := wazero.NewRuntimeWithConfig(context.Background(), wazero.NewRuntimeConfigCompiler())
	gctx := experimental.WithMemoryAllocator(runtimes.Config{}.CompileContext(context.Background()), guestmem.Allocator(nil))
	f.Fuzz(func(t *testing.T, data []byte) {
		module := program(data)
		got, gotMem, err := run(gctx, guarded, module)
		if err != nil {
			t.Fatalf("guard pages: %v", err)
		}
		want, wantMem, err := run(context.Background(), checked, module)
		if err != nil {
			t.Fatalf("checked: %v", err)
		}
		if got != want {
			t.Fatalf("guard pages: %s; checked: %s", got, want)
		}
		if !bytes.Equal(gotMem, wantMem) {
			t.Fatalf("the memories differ (%d and %d bytes) after %s", len(gotMem), len(wantMem), got)
		}
	})
}

// TestProgramsTrap: the seed programs that should trap do, on both memories
// (a guard that lets everything through would pass the comparison).
func TestProgramsTrap(t *testing.T) {
	ctx := experimental.WithMemoryAllocator(runtimes.Config{}.CompileContext(context.Background()), guestmem.Allocator(nil))
	r := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigCompiler())
	defer r.Close(ctx)
	for _, data := range [][]byte{seedPrograms[0], seedPrograms[1], seedPrograms[3], seedPrograms[4]} {
		got, _, err := run(ctx, r, program(data))
		if err != nil || got != "wasm error: out of bounds memory access" {
			t.Errorf("program %v: %s, %v; want an out of bounds trap", data, got, err)
		}
	}
}
