//go:build (linux || darwin) && (amd64 || arm64)

package wazero_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
)

// imageTestModule returns a module that imports env.add, calls it, calls
// through a table and has a data segment:
//
//	(import "env" "add" (func $add (param i32 i32) (result i32)))
//	(func $inc (export "inc") (param i32) (result i32) (call $add (local.get 0) (i32.const 1)))
//	(func $mul (param i32) (result i32) (i32.mul (local.get 0) (i32.const <factor>)))
//	(func (export "dispatch") (param i32 i32) (result i32)
//	  (call_indirect (type 1) (local.get 1) (local.get 0)))
//	(table 2 funcref) (elem (i32.const 0) $inc $mul)
//	(memory (export "mem") 1) (data (i32.const 0) "hi")
func imageTestModule(factor byte) []byte {
	section := func(id byte, content ...byte) []byte {
		return append([]byte{id, byte(len(content))}, content...)
	}
	m := []byte{0, 'a', 's', 'm', 1, 0, 0, 0}
	m = append(m, section(1, 2, 0x60, 2, 0x7f, 0x7f, 1, 0x7f, 0x60, 1, 0x7f, 1, 0x7f)...)
	m = append(m, section(2, 1, 3, 'e', 'n', 'v', 3, 'a', 'd', 'd', 0, 0)...)
	m = append(m, section(3, 3, 1, 1, 0)...)
	m = append(m, section(4, 1, 0x70, 0, 2)...)
	m = append(m, section(5, 1, 0, 1)...)
	m = append(m, section(7, 3,
		3, 'i', 'n', 'c', 0, 1,
		8, 'd', 'i', 's', 'p', 'a', 't', 'c', 'h', 0, 3,
		3, 'm', 'e', 'm', 2, 0)...)
	m = append(m, section(9, 1, 0, 0x41, 0, 0x0b, 2, 1, 2)...)
	m = append(m, section(10, 3,
		8, 0, 0x20, 0, 0x41, 1, 0x10, 0, 0x0b,
		7, 0, 0x20, 0, 0x41, factor, 0x6c, 0x0b,
		9, 0, 0x20, 1, 0x20, 0, 0x11, 1, 0, 0x0b)...)
	m = append(m, section(11, 1, 0, 0x41, 0, 0x0b, 2, 'h', 'i')...)
	return m
}

func newImageTestRuntime(t *testing.T, ctx context.Context, config wazero.RuntimeConfig) wazero.Runtime {
	t.Helper()
	r := wazero.NewRuntimeWithConfig(ctx, config)
	t.Cleanup(func() { r.Close(ctx) })
	_, err := r.NewHostModuleBuilder("env").NewFunctionBuilder().
		WithFunc(func(a, b uint32) uint32 { return a + b }).Export("add").Instantiate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// writeImage compiles binary in a fresh runtime and returns its image.
func writeImage(t *testing.T, binary []byte, config wazero.RuntimeConfig) []byte {
	t.Helper()
	ctx := context.Background()
	var image bytes.Buffer
	r := newImageTestRuntime(t, ctx, config)
	if _, err := r.CompileModule(experimental.WithCompiledImageWriter(ctx, &image), binary); err != nil {
		t.Fatal(err)
	}
	return image.Bytes()
}

// mapImage maps image from a file as a caller of WithCompiledImage would.
func mapImage(t *testing.T, image []byte) []byte {
	t.Helper()
	path := filepath.Join(t.TempDir(), "image")
	if err := os.WriteFile(path, image, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	mapped, err := syscall.Mmap(int(f.Fd()), 0, len(image), syscall.PROT_READ, syscall.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Munmap(mapped) })
	return mapped
}

func TestCompiledImage_RoundTrip(t *testing.T) {
	ctx := context.Background()
	binary := imageTestModule(2)
	config := wazero.NewRuntimeConfigCompiler()
	image := mapImage(t, writeImage(t, binary, config))

	r := newImageTestRuntime(t, ctx, config)
	compiled, err := r.CompileModule(experimental.WithCompiledImage(ctx, image), binary)
	if err != nil {
		t.Fatal(err)
	}
	if got := len(compiled.ExportedFunctions()); got != 2 {
		t.Fatalf("exported functions: got %d, want 2", got)
	}
	for i := 0; i < 2; i++ { // Instantiating twice reuses the loaded code.
		mod, err := r.InstantiateModule(ctx, compiled, wazero.NewModuleConfig().WithName(fmt.Sprint("m", i)))
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			name string
			args []uint64
			want uint64
		}{
			{"inc", []uint64{41}, 42},
			{"dispatch", []uint64{0, 5}, 6},
			{"dispatch", []uint64{1, 5}, 10},
		} {
			got, err := mod.ExportedFunction(tc.name).Call(ctx, tc.args...)
			if err != nil || got[0] != tc.want {
				t.Errorf("%s%v = %v, %v; want %d", tc.name, tc.args, got, err, tc.want)
			}
		}
		if _, err := mod.ExportedFunction("dispatch").Call(ctx, 2, 5); err == nil || !strings.Contains(err.Error(), "invalid table access") {
			t.Errorf("dispatch out of the table: got %v, want invalid table access", err)
		}
		if data, ok := mod.Memory().Read(0, 2); !ok || string(data) != "hi" {
			t.Errorf("data segment: got %q", data)
		}
	}
	if runtime.GOOS == "linux" {
		assertExecutableInPlace(t, image)
	}
}

// assertExecutableInPlace checks that the code runs from the image's own
// pages, made executable, rather than from a copy.
func assertExecutableInPlace(t *testing.T, image []byte) {
	maps, err := os.Open("/proc/self/maps")
	if err != nil {
		t.Fatal(err)
	}
	defer maps.Close()
	start := uintptr(unsafe.Pointer(&image[0]))
	end := start + uintptr(len(image))
	executable := false
	s := bufio.NewScanner(maps)
	for s.Scan() {
		var lo, hi uintptr
		var perms string
		if _, err := fmt.Sscanf(s.Text(), "%x-%x %s", &lo, &hi, &perms); err != nil {
			continue
		}
		if lo < end && hi > start && strings.HasPrefix(perms, "r-x") {
			executable = true
		}
	}
	if !executable {
		t.Error("no part of the image's mapping is executable")
	}
}

// TestCompiledImage_OtherBodies shows that function bodies, the one part of
// a module taken from the image, are the one part not compared with the
// binary: the image's code runs, with the rest of the module it was compiled
// with.
func TestCompiledImage_OtherBodies(t *testing.T) {
	ctx := context.Background()
	config := wazero.NewRuntimeConfigCompiler()
	image := mapImage(t, writeImage(t, imageTestModule(2), config))
	r := newImageTestRuntime(t, ctx, config)
	mod, err := r.InstantiateWithConfig(experimental.WithCompiledImage(ctx, image), imageTestModule(3), wazero.NewModuleConfig())
	if err != nil {
		t.Fatal(err)
	}
	if got, err := mod.ExportedFunction("dispatch").Call(ctx, 1, 5); err != nil || got[0] != 10 {
		t.Errorf("dispatch(1, 5) = %v, %v; want 10 from the image's code", got, err)
	}
}

func TestCompiledImage_FromCompilationCache(t *testing.T) {
	binary := imageTestModule(2)
	cache, err := wazero.NewCompilationCacheWithDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	config := wazero.NewRuntimeConfigCompiler().WithCompilationCache(cache)
	compiled := writeImage(t, binary, config) // Compiles and fills the cache.
	fromCache := writeImage(t, binary, config)
	if !bytes.Equal(compiled, fromCache) {
		t.Error("the image written on a cache hit differs from the one written after compiling")
	}
}

func TestCompiledImage_Refused(t *testing.T) {
	ctx := context.Background()
	binary := imageTestModule(2)
	config := wazero.NewRuntimeConfigCompiler()
	written := writeImage(t, binary, config)
	versionLen := int(written[8])
	cpuOffset := 8 + 1 + versionLen + 1 + int(written[8+1+versionLen])
	modified := func(offset int) []byte {
		image := bytes.Clone(written)
		image[offset] ^= 0xff
		return mapImage(t, image)
	}
	otherData := bytes.Clone(binary)
	otherData[len(otherData)-1] = 'o' // "hi" becomes "ho"
	misaligned := make([]byte, len(written)+1)[1:]
	copy(misaligned, written)

	for _, tc := range []struct {
		name    string
		config  wazero.RuntimeConfig
		ctx     context.Context
		binary  []byte
		image   []byte
		wantErr string
	}{
		{name: "truncated", image: mapImage(t, written[:40]), wantErr: "truncated"},
		{name: "truncated executable", image: mapImage(t, written[:len(written)-1]), wantErr: "does not end the image"},
		{name: "not an image", image: modified(0), wantErr: "bad magic"},
		{name: "other wazero version", image: modified(9), wantErr: "written by wazero"},
		{name: "other CPU features", image: modified(cpuOffset), wantErr: "CPU features"},
		{name: "other core features", image: modified(cpuOffset + 8), wantErr: "core features"},
		{name: "other binary", binary: otherData, wantErr: "another wasm binary"},
		{name: "other length", binary: append(bytes.Clone(binary), 0, 0), wantErr: "another wasm binary"},
		{name: "close on context done", config: config.WithCloseOnContextDone(true), wantErr: "close-on-context-done"},
		{name: "interpreter", config: wazero.NewRuntimeConfigInterpreter(), wantErr: "only the compiler"},
		{name: "not page-aligned", image: misaligned, wantErr: "not page-aligned"},
		{
			name:    "function listeners",
			ctx:     experimental.WithFunctionListenerFactory(ctx, experimental.FunctionListenerFactoryFunc(func(api.FunctionDefinition) experimental.FunctionListener { return nil })),
			wantErr: "function listeners",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.config == nil {
				tc.config = config
			}
			if tc.ctx == nil {
				tc.ctx = ctx
			}
			if tc.binary == nil {
				tc.binary = binary
			}
			if tc.image == nil {
				tc.image = mapImage(t, written)
			}
			r := newImageTestRuntime(t, ctx, tc.config)
			_, err := r.CompileModule(experimental.WithCompiledImage(tc.ctx, tc.image), tc.binary)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("got error %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}
