//go:build linux && amd64

package wazero_test

import (
	"bytes"
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"syscall"
	"testing"
	"unsafe"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/internal/guardpage"
)

// guardMemory is a GuardPageMemory: a PROT_NONE reservation whose first size
// bytes Reallocate opens.
type guardMemory struct {
	mu   sync.Mutex
	buf  []byte
	open uint64
	max  uint64
}

func newGuardMemory(_, max uint64) experimental.LinearMemory {
	b, err := syscall.Mmap(-1, 0, experimental.MemoryGuardReservation, syscall.PROT_NONE,
		syscall.MAP_PRIVATE|syscall.MAP_ANON|syscall.MAP_NORESERVE)
	if err != nil {
		panic(err)
	}
	return &guardMemory{buf: b, max: max}
}

func (g *guardMemory) Reallocate(size uint64) []byte {
	g.mu.Lock()
	defer g.mu.Unlock()
	if size > g.max {
		return nil
	}
	if size > g.open {
		if err := syscall.Mprotect(g.buf[g.open:size], syscall.PROT_READ|syscall.PROT_WRITE); err != nil {
			return nil
		}
		g.open = size
	}
	return g.buf[:size:size]
}

func (g *guardMemory) Free() { _ = syscall.Munmap(g.buf) }

func (g *guardMemory) Reservation() (uintptr, uint64) {
	return uintptr(unsafe.Pointer(&g.buf[0])), uint64(len(g.buf))
}

// guardContext compiles for, and instantiates with, guard-page memories.
func guardContext() context.Context {
	ctx := experimental.WithMemoryGuardPages(context.Background())
	return experimental.WithMemoryAllocator(ctx, experimental.MemoryAllocatorFunc(newGuardMemory))
}

// wasmBuilder assembles the few sections these tests need.
type wasmBuilder struct {
	types, imports, funcs, exports, code [][]byte
	memory                               []byte
}

func uleb(v uint64) []byte {
	var out []byte
	for {
		b := byte(v & 0x7f)
		if v >>= 7; v == 0 {
			return append(out, b)
		}
		out = append(out, b|0x80)
	}
}

func sleb(v int64) []byte {
	var out []byte
	for {
		b := byte(v & 0x7f)
		v >>= 7
		if (v == 0 && b&0x40 == 0) || (v == -1 && b&0x40 != 0) {
			return append(out, b)
		}
		out = append(out, b|0x80)
	}
}

func wasmVec(items [][]byte) []byte {
	out := uleb(uint64(len(items)))
	for _, it := range items {
		out = append(out, it...)
	}
	return out
}

func wasmName(s string) []byte { return append(uleb(uint64(len(s))), s...) }

// function adds a function of type typ (an encoded func type) with body
// (instructions, without locals and end), exported as name if not empty.
func (b *wasmBuilder) function(name string, typ []byte, body ...byte) {
	idx := len(b.imports) + len(b.funcs)
	b.types = append(b.types, typ)
	b.funcs = append(b.funcs, uleb(uint64(len(b.types)-1)))
	code := append([]byte{0}, body...)
	code = append(code, 0x0b)
	b.code = append(b.code, append(uleb(uint64(len(code))), code...))
	if name != "" {
		b.exports = append(b.exports, append(wasmName(name), append([]byte{0}, uleb(uint64(idx))...)...))
	}
}

func (b *wasmBuilder) bytes() []byte {
	out := []byte{0, 'a', 's', 'm', 1, 0, 0, 0}
	section := func(id byte, content []byte) {
		out = append(out, id)
		out = append(out, uleb(uint64(len(content)))...)
		out = append(out, content...)
	}
	section(1, wasmVec(b.types))
	if len(b.imports) > 0 {
		section(2, wasmVec(b.imports))
	}
	section(3, wasmVec(b.funcs))
	if b.memory != nil {
		section(5, append([]byte{1}, b.memory...))
		b.exports = append(b.exports, append(wasmName("memory"), 2, 0))
	}
	section(7, wasmVec(b.exports))
	section(10, wasmVec(b.code))
	return out
}

// Function types used below.
var (
	typeI32ToI64   = []byte{0x60, 1, 0x7f, 1, 0x7e}
	typeI32ToI32   = []byte{0x60, 1, 0x7f, 1, 0x7f}
	typeNoneToI32  = []byte{0x60, 0, 1, 0x7f}
	typeNoneToNone = []byte{0x60, 0, 0}
)

// memoryOp is one load or store instruction.
type memoryOp struct {
	name   string
	opcode []byte // with the 0xfd prefix for SIMD
	width  uint64 // bytes accessed
	store  bool
	// value pushes the value a store stores; toI64 turns what a load
	// leaves on the stack into an i64.
	value, toI64 []byte
}

var (
	i32Value  = append([]byte{0x41}, sleb(0x11223344)...)
	i64Value  = append([]byte{0x42}, sleb(0x1122334455667788)...)
	f32Value  = []byte{0x43, 0x44, 0x33, 0x22, 0x11}
	f64Value  = []byte{0x44, 0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11}
	v128Value = append([]byte{0xfd, 0x0c}, []byte("0123456789abcdef")...)
	fromI32   = []byte{0xad}          // i64.extend_i32_u
	fromF32   = []byte{0xbc, 0xad}    // i32.reinterpret_f32, i64.extend_i32_u
	fromF64   = []byte{0xbd}          // i64.reinterpret_f64
	fromV128  = []byte{0xfd, 0x1d, 1} // i64x2.extract_lane 1
	noConvert = []byte{}
)

// memoryOps are the loads and stores of every width and kind.
var memoryOps = []memoryOp{
	{name: "i32.load", opcode: []byte{0x28}, width: 4, toI64: fromI32},
	{name: "i64.load", opcode: []byte{0x29}, width: 8, toI64: noConvert},
	{name: "f32.load", opcode: []byte{0x2a}, width: 4, toI64: fromF32},
	{name: "f64.load", opcode: []byte{0x2b}, width: 8, toI64: fromF64},
	{name: "i32.load8_s", opcode: []byte{0x2c}, width: 1, toI64: fromI32},
	{name: "i32.load8_u", opcode: []byte{0x2d}, width: 1, toI64: fromI32},
	{name: "i32.load16_s", opcode: []byte{0x2e}, width: 2, toI64: fromI32},
	{name: "i32.load16_u", opcode: []byte{0x2f}, width: 2, toI64: fromI32},
	{name: "i64.load8_s", opcode: []byte{0x30}, width: 1, toI64: noConvert},
	{name: "i64.load8_u", opcode: []byte{0x31}, width: 1, toI64: noConvert},
	{name: "i64.load16_s", opcode: []byte{0x32}, width: 2, toI64: noConvert},
	{name: "i64.load16_u", opcode: []byte{0x33}, width: 2, toI64: noConvert},
	{name: "i64.load32_s", opcode: []byte{0x34}, width: 4, toI64: noConvert},
	{name: "i64.load32_u", opcode: []byte{0x35}, width: 4, toI64: noConvert},
	{name: "v128.load", opcode: []byte{0xfd, 0x00}, width: 16, toI64: fromV128},
	{name: "v128.load8x8_s", opcode: []byte{0xfd, 0x01}, width: 8, toI64: fromV128},
	{name: "v128.load32_splat", opcode: []byte{0xfd, 0x09}, width: 4, toI64: fromV128},
	{name: "v128.load64_zero", opcode: []byte{0xfd, 0x5d}, width: 8, toI64: []byte{0xfd, 0x1d, 0}},
	{name: "i32.store", opcode: []byte{0x36}, width: 4, store: true, value: i32Value},
	{name: "i64.store", opcode: []byte{0x37}, width: 8, store: true, value: i64Value},
	{name: "f32.store", opcode: []byte{0x38}, width: 4, store: true, value: f32Value},
	{name: "f64.store", opcode: []byte{0x39}, width: 8, store: true, value: f64Value},
	{name: "i32.store8", opcode: []byte{0x3a}, width: 1, store: true, value: i32Value},
	{name: "i32.store16", opcode: []byte{0x3b}, width: 2, store: true, value: i32Value},
	{name: "i64.store8", opcode: []byte{0x3c}, width: 1, store: true, value: i64Value},
	{name: "i64.store16", opcode: []byte{0x3d}, width: 2, store: true, value: i64Value},
	{name: "i64.store32", opcode: []byte{0x3e}, width: 4, store: true, value: i64Value},
	{name: "v128.store", opcode: []byte{0xfd, 0x0b}, width: 16, store: true, value: v128Value},
}

// body pushes address (instructions leaving an i32), then makes the access
// with a static offset; a load's value is left as an i64.
func (op memoryOp) body(address []byte, offset uint64) []byte {
	body := append([]byte{}, address...)
	if op.store {
		body = append(body, op.value...)
	}
	body = append(append(body, op.opcode...), 0) // alignment hint: 1 byte
	body = append(body, uleb(offset)...)
	if !op.store {
		body = append(body, op.toI64...)
	}
	return body
}

// funcType is the type of a function making op: (i32) if it takes the
// address, and returning an i64 if op is a load.
func (op memoryOp) funcType(takesAddress bool) []byte {
	t := []byte{0x60, 0}
	if takesAddress {
		t = []byte{0x60, 1, 0x7f}
	}
	if op.store {
		return append(t, 0)
	}
	return append(t, 1, 0x7e)
}

// staticOffsets are the memarg offsets each op is compiled with; the last is
// the largest there is.
var staticOffsets = []uint64{0, 1, 0x10000, 0x7fffffff, 0x80000000, 0xffffffff}

func opFunctionName(op memoryOp, offset uint64) string {
	return fmt.Sprintf("%s offset=%d", op.name, offset)
}

// constAccess is an access at a constant address.
type constAccess struct{ addr, offset uint64 }

// constAccesses are out of bounds for any memory of less than 2 GiB.
var constAccesses = []constAccess{{0x80000000, 0}, {0xfffffff0, 0}, {0xffffffff, 0xffffffff}, {0x7fffffff, 0x80000000}}

func constFunctionName(op memoryOp, c constAccess) string {
	return fmt.Sprintf("%s %#x offset=%d", op.name, c.addr, c.offset)
}

// accessModule has, for every op and static offset, a function taking the
// dynamic address (and returning what a load read, as an i64), plus
// "grow" (memory.grow) and "size" (memory.size in pages), and a memory of
// 1 page that may grow to 3.
func accessModule() []byte {
	b := &wasmBuilder{memory: []byte{1, 1, 3}}
	for _, op := range memoryOps {
		for _, offset := range staticOffsets {
			b.function(opFunctionName(op, offset), op.funcType(true), op.body([]byte{0x20, 0}, offset)...)
		}
		// The same accesses at constant addresses, which the compiler
		// folds into the instruction: no parameter.
		for _, c := range constAccesses {
			address := append([]byte{0x41}, sleb(int64(int32(c.addr)))...)
			b.function(constFunctionName(op, c), op.funcType(false), op.body(address, c.offset)...)
		}
	}
	b.function("grow", typeI32ToI32, 0x20, 0, 0x40, 0)
	b.function("size", typeNoneToI32, 0x3f, 0)
	return b.bytes()
}

// outcome is what one call did: its results, or its error's first line.
type outcome struct {
	results []uint64
	err     string
}

func call(ctx context.Context, m api.Module, name string, params ...uint64) outcome {
	res, err := m.ExportedFunction(name).Call(ctx, params...)
	if err != nil {
		line, _, _ := strings.Cut(err.Error(), "\n")
		return outcome{err: line}
	}
	return outcome{results: res}
}

// instantiateAccess instantiates accessModule in r under ctx and fills its
// memory with a pattern.
func instantiateAccess(t *testing.T, ctx context.Context, r wazero.Runtime, name string) api.Module {
	t.Helper()
	m, err := r.InstantiateWithConfig(ctx, accessModule(), wazero.NewModuleConfig().WithName(name))
	if err != nil {
		t.Fatal(err)
	}
	fillPattern(m.Memory())
	return m
}

func fillPattern(mem api.Memory) {
	buf, _ := mem.Read(0, mem.Size())
	for i := range buf {
		buf[i] = byte(i*7 + 3)
	}
}

// TestMemoryGuardPages_Accesses runs every load and store, with every static
// offset, at the last byte that fits, one past it, at the top of the 32-bit
// index range, and in the page beyond the memory, before and right after a
// memory.grow, on a guard-page memory and on a checked one: the results,
// the traps and the memory afterwards must be the same, and every access
// that does not fit must trap.
func TestMemoryGuardPages_Accesses(t *testing.T) {
	gctx := guardContext()
	guarded := wazero.NewRuntimeWithConfig(gctx, wazero.NewRuntimeConfigCompiler())
	defer guarded.Close(gctx)
	ctx := context.Background()
	checked := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigCompiler())
	defer checked.Close(ctx)

	g := instantiateAccess(t, gctx, guarded, "guarded")
	c := instantiateAccess(t, ctx, checked, "checked")
	trapsBefore := guardpage.Traps()
	var guardedTraps uint64

	for round := 0; round < 2; round++ {
		if round == 1 {
			// Right after memory.grow: the new page is open, the next not.
			for _, m := range []api.Module{g, c} {
				if got := call(ctx, m, "grow", 1); got.err != "" || got.results[0] != 1 {
					t.Fatalf("grow: %+v", got)
				}
			}
			fillPattern(g.Memory())
			fillPattern(c.Memory())
		}
		size := uint64(g.Memory().Size())
		for _, op := range memoryOps {
			for _, offset := range staticOffsets {
				name := opFunctionName(op, offset)
				var addresses []uint64 // effective addresses
				for _, ea := range []uint64{0, size - op.width, size - op.width + 1, size - 1, size, size + 65536 - op.width, size + 65536} {
					addresses = append(addresses, ea)
				}
				for _, ea := range addresses {
					if ea < offset || ea-offset > 0xffffffff {
						continue // not reachable with this static offset
					}
					want := ea+op.width <= size
					checkAccess(t, ctx, g, c, name, ea-offset, want)
					if !want {
						guardedTraps++
					}
				}
				// The top of the index range: with the largest offset, the
				// highest address an access can form.
				checkAccess(t, ctx, g, c, name, 0xffffffff, false)
				guardedTraps++
			}
			for _, ca := range constAccesses {
				checkAccess(t, ctx, g, c, constFunctionName(op, ca), noParam, false)
				guardedTraps++
			}
		}
	}
	// Every trap on the guard-page memory was a fault the handler caught:
	// no check was left in the code.
	if got := guardpage.Traps() - trapsBefore; got != guardedTraps {
		t.Errorf("the fault handler caught %d traps, want %d", got, guardedTraps)
	}
}

// noParam, as checkAccess's address, calls a function without parameters.
const noParam = ^uint64(0)

// checkAccess calls name(addr) on the guarded and the checked instance.
func checkAccess(t *testing.T, ctx context.Context, g, c api.Module, name string, addr uint64, fits bool) {
	t.Helper()
	var params []uint64
	if addr != noParam {
		params = []uint64{addr}
	}
	got, want := call(ctx, g, name, params...), call(ctx, c, name, params...)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("%s(%#x): guard pages %+v, checked %+v", name, addr, got, want)
	}
	if fits != (got.err == "") || (!fits && got.err != "wasm error: out of bounds memory access") {
		t.Errorf("%s(%#x): %+v; fits in memory: %v", name, addr, got, fits)
	}
	gm, _ := g.Memory().Read(0, g.Memory().Size())
	cm, _ := c.Memory().Read(0, c.Memory().Size())
	if !bytes.Equal(gm, cm) {
		t.Fatalf("%s(%#x): the memories differ afterwards", name, addr)
	}
}

// TestMemoryGuardPages_NeedsGuardMemory: a module compiled for guard pages
// does not instantiate on a memory that is not a guard-page memory.
func TestMemoryGuardPages_NeedsGuardMemory(t *testing.T) {
	ctx := experimental.WithMemoryGuardPages(context.Background())
	r := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigCompiler())
	defer r.Close(ctx)
	compiled, err := r.CompileModule(ctx, accessModule())
	if err != nil {
		t.Fatal(err)
	}
	plain := experimental.MemoryAllocatorFunc(func(_, max uint64) experimental.LinearMemory {
		return &sliceMemory{}
	})
	for _, tc := range []struct {
		name string
		ctx  context.Context
		want string
	}{
		{"no allocator", ctx, "instantiate it with experimental.WithMemoryAllocator"},
		{"not a guard-page memory", experimental.WithMemoryAllocator(ctx, plain), "is not an experimental.GuardPageMemory"},
		{"reservation too small", experimental.WithMemoryAllocator(ctx, experimental.MemoryAllocatorFunc(
			func(c, max uint64) experimental.LinearMemory {
				return &shortGuardMemory{newGuardMemory(c, max).(*guardMemory)}
			})), "does not cover"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := r.InstantiateModule(tc.ctx, compiled, wazero.NewModuleConfig().WithName(""))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

type sliceMemory struct{ buf []byte }

func (s *sliceMemory) Reallocate(size uint64) []byte {
	s.buf = append(s.buf, make([]byte, int(size)-len(s.buf))...)
	return s.buf
}

func (s *sliceMemory) Free() {}

type shortGuardMemory struct{ *guardMemory }

func (s *shortGuardMemory) Reservation() (uintptr, uint64) {
	start, length := s.guardMemory.Reservation()
	return start, length - 65536
}

// TestMemoryGuardPages_Identity: the setting is part of the compiled
// module's identity, so that neither the compilation cache nor an image
// gives a module compiled one way to a runtime that wants the other.
func TestMemoryGuardPages_Identity(t *testing.T) {
	binary := accessModule()
	config := wazero.NewRuntimeConfigCompiler()
	var image bytes.Buffer
	gctx := guardContext()
	r := wazero.NewRuntimeWithConfig(gctx, config)
	defer r.Close(gctx)
	if _, err := r.CompileModule(experimental.WithCompiledImageWriter(gctx, &image), binary); err != nil {
		t.Fatal(err)
	}
	mapped := mapImage(t, image.Bytes())

	ctx := context.Background()
	plain := wazero.NewRuntimeWithConfig(ctx, config)
	defer plain.Close(ctx)
	_, err := plain.CompileModule(experimental.WithCompiledImage(ctx, mapped), binary)
	if err == nil || !strings.Contains(err.Error(), "written with memory guard pages true, the module is compiled with false") {
		t.Fatalf("an image compiled for guard pages loaded without them: %v", err)
	}

	// From the same image, with guard pages, it loads and runs.
	again := wazero.NewRuntimeWithConfig(gctx, config)
	defer again.Close(gctx)
	compiled, err := again.CompileModule(experimental.WithCompiledImage(gctx, mapped), binary)
	if err != nil {
		t.Fatal(err)
	}
	m, err := again.InstantiateModule(gctx, compiled, wazero.NewModuleConfig())
	if err != nil {
		t.Fatal(err)
	}
	if got := call(gctx, m, opFunctionName(memoryOps[0], 0), 65536); got.err != "wasm error: out of bounds memory access" {
		t.Fatalf("out of bounds load: %+v", got)
	}

	// The compilation cache keeps them apart too.
	cache := wazero.NewCompilationCache()
	for _, c := range []context.Context{gctx, ctx, gctx} {
		r := wazero.NewRuntimeWithConfig(c, config.WithCompilationCache(cache))
		compiled, err := r.CompileModule(c, binary)
		if err != nil {
			t.Fatal(err)
		}
		m, err := r.InstantiateModule(c, compiled, wazero.NewModuleConfig())
		if err != nil {
			t.Fatalf("instantiating after a cache shared by both settings: %v", err)
		}
		if got := call(c, m, opFunctionName(memoryOps[0], 0), 65533); got.err != "wasm error: out of bounds memory access" {
			t.Fatalf("out of bounds load: %+v", got)
		}
		r.Close(c)
	}
}

// TestMemoryGuardPages_OtherFaults: a fault that is not a guest's access out
// of bounds still reaches the Go runtime as before: one in Go code at an
// address inside a guard-page reservation becomes Go's fault panic (with
// SetPanicOnFault), a nil dereference Go's nil panic.
func TestMemoryGuardPages_OtherFaults(t *testing.T) {
	gctx := guardContext()
	r := wazero.NewRuntimeWithConfig(gctx, wazero.NewRuntimeConfigCompiler())
	defer r.Close(gctx)
	m := instantiateAccess(t, gctx, r, "")
	buf, _ := m.Memory().Read(0, m.Memory().Size())
	beyond := unsafe.Add(unsafe.Pointer(unsafe.SliceData(buf)), len(buf))

	t.Run("guard page", func(t *testing.T) {
		defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
		defer func() {
			err, ok := recover().(interface{ Addr() uintptr })
			if !ok || err.Addr() != uintptr(beyond) {
				t.Fatalf("recovered %v, want Go's fault panic at %p", err, beyond)
			}
		}()
		_ = *(*byte)(beyond)
	})
	t.Run("nil", func(t *testing.T) {
		defer func() {
			if err, ok := recover().(runtime.Error); !ok || !strings.Contains(err.Error(), "nil pointer dereference") {
				t.Fatalf("recovered %v, want Go's nil pointer panic", err)
			}
		}()
		var p *byte
		_ = *p
	})
}

// TestMemoryGuardPages_Calls: the trap reaches the right call whatever the
// call's situation: a wasm call nested inside a host function, a call whose
// stack has grown, a guard-page module's function reached through an import
// of a module that has no memory, and many goroutines at once.
func TestMemoryGuardPages_Calls(t *testing.T) {
	gctx := guardContext()
	r := wazero.NewRuntimeWithConfig(gctx, wazero.NewRuntimeConfigCompiler())
	defer r.Close(gctx)

	// env.nested calls accessModule's first load out of bounds, and
	// returns 1 when that trapped.
	var access api.Module
	_, err := r.NewHostModuleBuilder("env").NewFunctionBuilder().
		WithFunc(func(ctx context.Context) uint32 {
			if got := call(ctx, access, opFunctionName(memoryOps[0], 0), 1<<20); got.err != "wasm error: out of bounds memory access" {
				return 0
			}
			return 1
		}).Export("nested").Instantiate(gctx)
	if err != nil {
		t.Fatal(err)
	}
	access = instantiateAccess(t, gctx, r, "access")

	// caller imports env.nested and access's load, has no memory, and
	// recurses deep enough to grow its stack before it loads.
	b := &wasmBuilder{}
	b.imports = [][]byte{
		append(append(wasmName("env"), wasmName("nested")...), 0, 0),
		append(append(wasmName("access"), wasmName(opFunctionName(memoryOps[0], 0))...), 0, 1),
	}
	b.types = [][]byte{typeNoneToI32, typeI32ToI64}
	// deep(n): n == 0 ? load(1<<20) : deep(n-1) (deep is function 2)
	b.function("deep", typeI32ToI64,
		0x20, 0, 0x45, 0x04, 0x7e, // if (result i64) n == 0
		0x41, 0x80, 0x80, 0xc0, 0x00, 0x10, 1, // load(1<<20)
		0x05,
		0x20, 0, 0x41, 1, 0x6b, 0x10, 2, // deep(n-1)
		0x0b)
	b.function("nested", typeNoneToI32, 0x10, 0)
	caller, err := r.InstantiateWithConfig(gctx, b.bytes(), wazero.NewModuleConfig().WithName("caller"))
	if err != nil {
		t.Fatal(err)
	}

	if got := call(gctx, caller, "nested"); got.err != "" || got.results[0] != 1 {
		t.Errorf("nested: %+v, want 1 (the inner call trapped and the outer went on)", got)
	}
	for _, depth := range []uint64{0, 10000} {
		if got := call(gctx, caller, "deep", depth); got.err != "wasm error: out of bounds memory access" {
			t.Errorf("deep(%d): %+v", depth, got)
		}
	}

	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m, err := r.InstantiateWithConfig(gctx, accessModule(), wazero.NewModuleConfig().WithName(fmt.Sprint("g", i)))
			if err != nil {
				errs <- err
				return
			}
			defer m.Close(gctx)
			for j := 0; j < 200; j++ {
				addr := uint64(65532 + j%8)
				got := call(gctx, m, opFunctionName(memoryOps[0], 0), addr)
				if (addr <= 65532) != (got.err == "") {
					errs <- fmt.Errorf("goroutine %d, load at %d: %+v", i, addr, got)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestMemoryGuardPages_NotApplied: where the option does not apply, to the
// interpreter or to a module without a memory of its own, nothing needs a
// guard-page memory and the checks stay.
func TestMemoryGuardPages_NotApplied(t *testing.T) {
	ctx := experimental.WithMemoryGuardPages(context.Background())
	interpreter := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter())
	defer interpreter.Close(ctx)
	m, err := interpreter.InstantiateWithConfig(ctx, accessModule(), wazero.NewModuleConfig())
	if err != nil {
		t.Fatal(err)
	}
	if got := call(ctx, m, opFunctionName(memoryOps[0], 0), 65533); got.err != "wasm error: out of bounds memory access" {
		t.Fatalf("interpreter, out of bounds: %+v", got)
	}

	compiler := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigCompiler())
	defer compiler.Close(ctx)
	b := &wasmBuilder{}
	b.function("f", typeNoneToNone)
	if _, err := compiler.Instantiate(ctx, b.bytes()); err != nil {
		t.Fatalf("a module without memory, compiled with the option: %v", err)
	}
}
