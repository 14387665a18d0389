package main

import (
	"context"
	"strings"
	"testing"

	"github.com/tetratelabs/wazero"

	"capsule/runtimes/internal/wasmbin"
)

// module builds a minimal binary module from its sections.
func module(sections ...[]byte) []byte {
	out := []byte("\x00asm\x01\x00\x00\x00")
	for _, s := range sections {
		out = append(out, s[0])
		out = wasmbin.AppendU32(out, uint32(len(s)-1))
		out = append(out, s[1:]...)
	}
	return out
}

var (
	typeSec = []byte{1, 1, 0x60, 0, 0} // one type: () -> ()
	// imports a.f (function, type 0) and a.m (memory, min 2, max 5)
	importSec = []byte{2, 2, 1, 'a', 1, 'f', 0, 0, 1, 'a', 1, 'm', 2, 1, 2, 5}
	funcSec   = []byte{3, 1, 0}                              // one function of type 0
	exportSec = []byte{7, 1, 1, 'g', 0, 1}                   // export g = function 1
	codeSec   = []byte{10, 1, 4, 0, 0x10, 0, 0x0b}           // body: call 0; end
	dataSec   = []byte{11, 1, 0, 0x41, 8, 0x0b, 2, 'h', 'i'} // "hi" at 8
)

func TestRewrite(t *testing.T) {
	out, err := Rewrite(module(typeSec, importSec, funcSec, exportSec, codeSec, dataSec), "memory")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	rt := wazero.NewRuntime(ctx)
	defer rt.Close(ctx)
	cm, err := rt.CompileModule(ctx, out)
	if err != nil {
		t.Fatalf("the rewritten module does not compile: %v", err)
	}
	if n := len(cm.ImportedMemories()); n != 0 {
		t.Errorf("%d memories still imported", n)
	}
	mem, ok := cm.ExportedMemories()["memory"]
	if !ok {
		t.Fatal("no memory export")
	}
	if max, hasMax := mem.Max(); mem.Min() != 2 || !hasMax || max != 5 {
		t.Errorf("memory limits min %d max %d (%v), want 2 and 5", mem.Min(), max, hasMax)
	}
	if fns := cm.ImportedFunctions(); len(fns) != 1 {
		t.Errorf("%d function imports, want 1", len(fns))
	}
	if _, ok := cm.ExportedFunctions()["g"]; !ok {
		t.Error("export g lost")
	}

	// Instantiated, the data segment lands in the module's own memory.
	if _, err := rt.NewHostModuleBuilder("a").NewFunctionBuilder().WithFunc(func() {}).Export("f").Instantiate(ctx); err != nil {
		t.Fatal(err)
	}
	m, err := rt.InstantiateModule(ctx, cm, wazero.NewModuleConfig())
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := m.Memory().Read(8, 2); string(b) != "hi" {
		t.Errorf("data segment reads %q", b)
	}
}

func TestRewriteRefuses(t *testing.T) {
	noMemory := []byte{2, 1, 1, 'a', 1, 'f', 0, 0}
	tests := []struct {
		name string
		mod  []byte
		want string
	}{
		{"not wasm", []byte("hello"), "not a WebAssembly"},
		{"no memory import", module(typeSec, noMemory, funcSec, exportSec, codeSec), "imports no memory"},
		{"already exported", module(typeSec, importSec, funcSec, []byte{7, 1, 6, 'm', 'e', 'm', 'o', 'r', 'y', 0, 1}, codeSec), "already exports"},
		{"truncated", module(typeSec, importSec)[:20], "section"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Rewrite(tt.mod, "memory"); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Rewrite = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}
