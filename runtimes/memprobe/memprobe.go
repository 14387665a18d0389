// Package memprobe is a small hand-built wasm module that makes chosen
// loads and stores of its own linear memory, run the way capsule runs a
// language: compiled under runtimes.Config.CompileContext and instantiated on
// guestmem's memory, so on a guard-page memory where the worker has one.
//
// The end-to-end tests drive it through a worker (a capsule_faults build
// only) to show that an access out of bounds is a trap the supervisor
// reports, with the output printed before it; its fuzz target runs
// generated programs on a guard-page memory and on a checked one and
// requires the same results, traps and memory.
package memprobe

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"

	"capsule/runtimes"
	"capsule/runtimes/internal/guestmem"
	"capsule/runtimes/internal/wasmbin"
)

// Op is one load or store instruction.
type Op struct {
	Name   string
	opcode []byte // with the 0xfd prefix for SIMD
	// Width is how many bytes the instruction touches.
	Width uint64
	// Store is true for a store.
	Store bool
	// value pushes what a store stores; toI64 turns what a load leaves on
	// the stack into an i64.
	value, toI64 []byte
}

var (
	i32Value  = wasmbin.AppendS64([]byte{opI32Const}, 0x11223344)
	i64Value  = wasmbin.AppendS64([]byte{opI64Const}, 0x1122334455667788)
	f32Value  = []byte{0x43, 0x44, 0x33, 0x22, 0x11}
	f64Value  = []byte{0x44, 0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11}
	v128Value = append([]byte{0xfd, 0x0c}, "0123456789abcdef"...)
	fromI32   = []byte{opExtendI32U}
	fromF32   = []byte{0xbc, opExtendI32U} // i32.reinterpret_f32
	fromF64   = []byte{0xbd}               // i64.reinterpret_f64
	fromV128  = []byte{0xfd, 0x1d, 1}      // i64x2.extract_lane 1
	fromI64   = []byte{}
)

// Ops are the loads and stores of every width and kind.
var Ops = []Op{
	{Name: "i32.load", opcode: []byte{0x28}, Width: 4, toI64: fromI32},
	{Name: "i64.load", opcode: []byte{0x29}, Width: 8, toI64: fromI64},
	{Name: "f32.load", opcode: []byte{0x2a}, Width: 4, toI64: fromF32},
	{Name: "f64.load", opcode: []byte{0x2b}, Width: 8, toI64: fromF64},
	{Name: "i32.load8_s", opcode: []byte{0x2c}, Width: 1, toI64: fromI32},
	{Name: "i32.load8_u", opcode: []byte{0x2d}, Width: 1, toI64: fromI32},
	{Name: "i32.load16_s", opcode: []byte{0x2e}, Width: 2, toI64: fromI32},
	{Name: "i32.load16_u", opcode: []byte{0x2f}, Width: 2, toI64: fromI32},
	{Name: "i64.load8_s", opcode: []byte{0x30}, Width: 1, toI64: fromI64},
	{Name: "i64.load8_u", opcode: []byte{0x31}, Width: 1, toI64: fromI64},
	{Name: "i64.load16_s", opcode: []byte{0x32}, Width: 2, toI64: fromI64},
	{Name: "i64.load16_u", opcode: []byte{0x33}, Width: 2, toI64: fromI64},
	{Name: "i64.load32_s", opcode: []byte{0x34}, Width: 4, toI64: fromI64},
	{Name: "i64.load32_u", opcode: []byte{0x35}, Width: 4, toI64: fromI64},
	{Name: "v128.load", opcode: []byte{0xfd, 0x00}, Width: 16, toI64: fromV128},
	{Name: "v128.load8x8_s", opcode: []byte{0xfd, 0x01}, Width: 8, toI64: fromV128},
	{Name: "v128.load32_splat", opcode: []byte{0xfd, 0x09}, Width: 4, toI64: fromV128},
	{Name: "v128.load64_zero", opcode: []byte{0xfd, 0x5d}, Width: 8, toI64: []byte{0xfd, 0x1d, 0}},
	{Name: "i32.store", opcode: []byte{0x36}, Width: 4, Store: true, value: i32Value},
	{Name: "i64.store", opcode: []byte{0x37}, Width: 8, Store: true, value: i64Value},
	{Name: "f32.store", opcode: []byte{0x38}, Width: 4, Store: true, value: f32Value},
	{Name: "f64.store", opcode: []byte{0x39}, Width: 8, Store: true, value: f64Value},
	{Name: "i32.store8", opcode: []byte{0x3a}, Width: 1, Store: true, value: i32Value},
	{Name: "i32.store16", opcode: []byte{0x3b}, Width: 2, Store: true, value: i32Value},
	{Name: "i64.store8", opcode: []byte{0x3c}, Width: 1, Store: true, value: i64Value},
	{Name: "i64.store16", opcode: []byte{0x3d}, Width: 2, Store: true, value: i64Value},
	{Name: "i64.store32", opcode: []byte{0x3e}, Width: 4, Store: true, value: i64Value},
	{Name: "v128.store", opcode: []byte{0xfd, 0x0b}, Width: 16, Store: true, value: v128Value},
}

// Offsets are the static offsets every op is compiled with; the last is the
// largest a memarg can hold.
var Offsets = []uint64{0, 1, 0x10000, 0x80000000, 0xffffffff}

// FunctionName names the probe's function that runs op with a static
// offset: it takes the dynamic address (an i32) and returns what a load
// read, as an i64.
func FunctionName(op Op, offset uint64) string {
	return op.Name + " offset=" + strconv.FormatUint(offset, 10)
}

// access appends op at the address on the stack with a static offset; a
// load's value is left as an i64.
func (op Op) access(body []byte, offset uint64) []byte {
	if op.Store {
		body = append(body, op.value...)
	}
	body = append(append(body, op.opcode...), 0) // alignment hint: 1 byte
	body = wasmbin.AppendU32(body, uint32(offset))
	if !op.Store {
		body = append(body, op.toI64...)
	}
	return body
}

// Module returns the probe: for every op and offset a function
// (FunctionName), plus "grow" (pages → memory.grow's result), "size" (→
// pages) and "print" (pointer, length: writes those bytes of memory to
// standard output through the host), and a memory of minPages that may
// grow to maxPages.
func Module(minPages, maxPages uint32) []byte {
	b := &builder{memMin: minPages, memMax: maxPages}
	write := b.importFunc(hostModule, "write", funcType([]byte{typeI32, typeI32}, nil))
	for _, op := range Ops {
		for _, offset := range Offsets {
			results := []byte{typeI64}
			if op.Store {
				results = nil
			}
			b.function(FunctionName(op, offset), funcType([]byte{typeI32}, results), 0,
				op.access([]byte{opLocalGet, 0}, offset))
		}
	}
	b.function("grow", funcType([]byte{typeI32}, []byte{typeI32}), 0, []byte{opLocalGet, 0, opMemoryGrow, 0})
	b.function("size", funcType(nil, []byte{typeI32}), 0, []byte{opMemorySize, 0})
	b.function("print", funcType([]byte{typeI32, typeI32}, nil), 0,
		wasmbin.AppendU32([]byte{opLocalGet, 0, opLocalGet, 1, opCall}, write))
	return b.bytes()
}

// hostModule is the module the probe imports "write" from.
const hostModule = "memprobe"

// The probe's memory: one page to start, up to three.
const (
	minPages = 1
	maxPages = 3
)

// engine is the compiled probe.
type engine struct {
	rt       wazero.Runtime
	compiled wazero.CompiledModule
}

// Compile compiles the probe as a language runtime compiles its module
// (cfg.CompileContext); its memory is bounded by its own maximum.
func Compile(ctx context.Context, cfg runtimes.Config) (runtimes.Engine, error) {
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigCompiler())
	_, err := rt.NewHostModuleBuilder(hostModule).NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(hostWrite), []api.ValueType{api.ValueTypeI32, api.ValueTypeI32}, nil).
		Export("write").Instantiate(ctx)
	if err == nil {
		var compiled wazero.CompiledModule
		if compiled, err = rt.CompileModule(cfg.CompileContext(ctx), Module(minPages, maxPages)); err == nil {
			return &engine{rt: rt, compiled: compiled}, nil
		}
	}
	_ = rt.Close(ctx)
	return nil, fmt.Errorf("memprobe: %w", err)
}

// streamKey is the context key under which hostWrite finds the instance's
// standard output.
type streamKey struct{}

func hostWrite(ctx context.Context, mod api.Module, stack []uint64) {
	b, ok := mod.Memory().Read(api.DecodeU32(stack[0]), api.DecodeU32(stack[1]))
	if w, _ := ctx.Value(streamKey{}).(runtimes.Streams); ok && w.Stdout != nil {
		_, _ = w.Stdout.Write(b)
	}
}

// Prepare implements runtimes.Engine.
func (e *engine) Prepare(ctx context.Context, streams runtimes.Streams) (runtimes.Instance, error) {
	ctx = context.WithValue(ctx, streamKey{}, streams)
	mod, err := e.rt.InstantiateModule(experimental.WithMemoryAllocator(ctx, guestmem.Allocator(nil)), e.compiled,
		wazero.NewModuleConfig().WithName(""))
	if err != nil {
		return nil, fmt.Errorf("memprobe: %w", err)
	}
	return &instance{mod: mod, ctx: ctx}, nil
}

// Close implements runtimes.Engine.
func (e *engine) Close(ctx context.Context) error { return e.rt.Close(ctx) }

type instance struct {
	mod api.Module
	ctx context.Context
}

// Run runs req.Code, one call a line: "print TEXT" writes TEXT and a
// newline to standard output from the guest, "grow N" grows the memory by N
// pages, and "OP offset=N ADDRESS" (FunctionName and the dynamic address)
// makes an access. The result is the last call's result, if any; a trap
// ends the run as a runtime error naming it.
func (in *instance) Run(_ context.Context, req runtimes.Request) runtimes.Outcome {
	var last []uint64
	for line := range strings.Lines(req.Code) {
		name, params, err := in.parse(strings.TrimSpace(line))
		if err != nil {
			return errorOutcome("ValueError", err.Error())
		}
		if name == "" {
			continue
		}
		if last, err = in.mod.ExportedFunction(name).Call(in.ctx, params...); err != nil {
			msg, _, _ := strings.Cut(err.Error(), "\n")
			return errorOutcome("RuntimeError", "the probe crashed: "+msg)
		}
	}
	if len(last) == 0 {
		return runtimes.Outcome{}
	}
	return runtimes.Outcome{Result: []byte(strconv.FormatUint(last[0], 10))}
}

// parse turns a line of Run's code into a call.
func (in *instance) parse(line string) (name string, params []uint64, err error) {
	if text, ok := strings.CutPrefix(line, "print "); ok {
		// The text goes at the start of the memory, for the guest to write.
		if !in.mod.Memory().Write(0, []byte(text+"\n")) {
			return "", nil, errors.New("print: the text does not fit in memory")
		}
		return "print", []uint64{0, uint64(len(text) + 1)}, nil
	}
	fields := strings.Fields(line)
	if len(fields) == 0 || strings.HasPrefix(line, "#") {
		return "", nil, nil
	}
	name = strings.Join(fields[:len(fields)-1], " ")
	if len(fields) == 1 {
		name = fields[0]
	} else {
		v, err := strconv.ParseUint(fields[len(fields)-1], 0, 32)
		if err != nil {
			return "", nil, fmt.Errorf("%q: %v", line, err)
		}
		params = []uint64{v}
	}
	if in.mod.ExportedFunction(name) == nil {
		return "", nil, fmt.Errorf("the probe has no function %q", name)
	}
	return name, params, nil
}

func errorOutcome(typ, msg string) runtimes.Outcome {
	return runtimes.Outcome{Error: &runtimes.ErrorInfo{Type: typ, Message: msg}}
}

// Close implements runtimes.Instance.
func (in *instance) Close(ctx context.Context) error { return in.mod.Close(ctx) }
