package binary

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"unsafe"

	"github.com/tetratelabs/wazero/api"
)

func TestDecodeCompiledModule(t *testing.T) {
	// (func (local i32) nop) (memory 1) (data (i32.const 0) "hi")
	binary := []byte{0, 'a', 's', 'm', 1, 0, 0, 0,
		1, 4, 1, 0x60, 0, 0, // type section: () -> ()
		3, 2, 1, 0, // function section
		5, 3, 1, 0, 1, // memory section
		10, 7, 1, 5, 1, 1, 0x7f, 1, 0x0b, // code section
		11, 8, 1, 0, 0x41, 0, 0x0b, 2, 'h', 'i', // data section
	}
	full, err := DecodeModule(binary, api.CoreFeaturesV2, 1, false, false, false)
	if err != nil {
		t.Fatal(err)
	}
	compiled, err := DecodeCompiledModule(binary, api.CoreFeaturesV2, 1, false, false, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(full.CodeSection[0].Body) != 2 || len(full.CodeSection[0].LocalTypes) != 1 {
		t.Fatalf("DecodeModule: code %+v", full.CodeSection)
	}
	if compiled.CodeSection != nil || len(compiled.FunctionSection) != 1 {
		t.Errorf("DecodeCompiledModule: code %+v, functions %v; want no code, one function", compiled.CodeSection, compiled.FunctionSection)
	}
	// The counts of the function and code sections are still compared.
	noCode := append([]byte{}, binary[:23]...)
	noCode = append(noCode, 10, 1, 0)
	if _, err := DecodeCompiledModule(noCode, api.CoreFeaturesV2, 1, false, false, false); err == nil || !strings.Contains(err.Error(), "inconsistent lengths") {
		t.Errorf("DecodeCompiledModule with 1 function and 0 bodies: got %v", err)
	}
	init := compiled.DataSection[0].Init
	if !bytes.Equal(init, full.DataSection[0].Init) || string(init) != "hi" {
		t.Errorf("DecodeCompiledModule: data %q, want %q", init, "hi")
	}
	if unsafe.SliceData(init) != &binary[len(binary)-2] || cap(init) != 2 {
		t.Error("DecodeCompiledModule: data init is not the binary's own bytes")
	}
	for _, cut := range []int{len(binary) - 1, len(binary) - 12} { // in the data, in the code
		if _, err := DecodeCompiledModule(binary[:cut], api.CoreFeaturesV2, 1, false, false, false); err == nil {
			t.Errorf("DecodeCompiledModule of %d of %d bytes: no error", cut, len(binary))
		}
	}
}

// BenchmarkDecode compares, for the module at $WAZERO_BENCH_WASM, the work
// CompileModule does before compiling (decode and validate) with what it does
// when the code comes from a compiled image (decode without bodies).
func BenchmarkDecode(b *testing.B) {
	path := os.Getenv("WAZERO_BENCH_WASM")
	if path == "" {
		b.Skip("WAZERO_BENCH_WASM is not set")
	}
	binary, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("DecodeModule", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, err := DecodeModule(binary, api.CoreFeaturesV2, 65536, false, false, false); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Validate", func(b *testing.B) {
		m, err := DecodeModule(binary, api.CoreFeaturesV2, 65536, false, false, false)
		if err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if err := m.Validate(api.CoreFeaturesV2); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("DecodeCompiledModule", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, err := DecodeCompiledModule(binary, api.CoreFeaturesV2, 65536, false, false, false); err != nil {
				b.Fatal(err)
			}
		}
	})
}
