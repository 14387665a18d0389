package snapshot

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"

	"capsule/runtimes/internal/guestmem"
	"capsule/runtimes/internal/wasmbin"
)

// testModule is a module with one page of memory, a data segment holding 7
// at address 16, and a mutable global holding 5:
//
//	get() -> i32: load(16) + global
//	set(v):       global = v; store(16, 2*v)
func testModule(dataFlags byte) []byte {
	sec := func(id byte, payload ...byte) wasmbin.Section { return wasmbin.Section{ID: id, Payload: payload} }
	code := func(body ...byte) []byte {
		return append(wasmbin.AppendU32(nil, uint32(len(body)+1)), append([]byte{0}, body...)...)
	}
	get := code(0x41, 16, 0x28, 2, 0, 0x23, 0, 0x6a, 0x0b)
	set := code(0x20, 0, 0x24, 0, 0x41, 16, 0x20, 0, 0x41, 2, 0x6c, 0x36, 2, 0, 0x0b)
	codeSec := append([]byte{2}, append(get, set...)...)
	exports := []byte{3}
	for _, e := range []struct {
		name       string
		kind, indx byte
	}{{"get", 0, 0}, {"set", 0, 1}, {"memory", 2, 0}} {
		exports = append(wasmbin.AppendName(exports, e.name), e.kind, e.indx)
	}
	var data []byte
	if dataFlags == 0 {
		data = []byte{1, 0, 0x41, 16, 0x0b, 4, 7, 0, 0, 0}
	} else {
		data = []byte{1, 1, 4, 7, 0, 0, 0}
	}
	return wasmbin.Encode([]wasmbin.Section{
		sec(wasmbin.SecType, 2, 0x60, 0, 1, 0x7f, 0x60, 1, 0x7f, 0),
		sec(wasmbin.SecFunction, 2, 0, 1),
		sec(wasmbin.SecMemory, 1, 0, 1),
		sec(wasmbin.SecGlobal, 1, 0x7f, 1, 0x41, 5, 0x0b),
		sec(wasmbin.SecExport, exports...),
		sec(wasmbin.SecDataCount, 1),
		sec(wasmbin.SecCode, codeSec...),
		sec(wasmbin.SecData, data...),
	})
}

type testInstance struct {
	mod api.Module
	mem *guestmem.Memory
}

func instantiate(t *testing.T, rt wazero.Runtime, cm wazero.CompiledModule) testInstance {
	t.Helper()
	var mem *guestmem.Memory
	ctx := experimental.WithMemoryAllocator(context.Background(), guestmem.Allocator(&mem))
	mod, err := rt.InstantiateModule(ctx, cm, wazero.NewModuleConfig().WithName(""))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mod.Close(context.Background()) })
	return testInstance{mod, mem}
}

func (in testInstance) get(t *testing.T) uint64 {
	t.Helper()
	r, err := in.mod.ExportedFunction("get").Call(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return r[0]
}

func (in testInstance) set(t *testing.T, v uint64) {
	t.Helper()
	if _, err := in.mod.ExportedFunction("set").Call(context.Background(), v); err != nil {
		t.Fatal(err)
	}
}

func TestPrepareCaptureRestore(t *testing.T) {
	ctx := context.Background()
	prepared, moved, err := PrepareModule(testModule(0))
	if err != nil {
		t.Fatal(err)
	}
	sections, err := wasmbin.Sections(prepared)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range sections {
		if s.ID == wasmbin.SecData || s.ID == wasmbin.SecDataCount {
			t.Fatalf("prepared module still has section %d", s.ID)
		}
	}
	d, err := ParseData(moved)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Globals) != 1 || d.Globals[0] != 0 {
		t.Fatalf("globals = %v, want [0]", d.Globals)
	}

	rt := wazero.NewRuntime(ctx)
	defer rt.Close(ctx)
	cm, err := rt.CompileModule(ctx, prepared)
	if err != nil {
		t.Fatal(err)
	}
	cold := instantiate(t, rt, cm)
	if got := cold.get(t); got != 5 {
		t.Fatalf("before the data is applied get() = %d, want 5 (nothing written at instantiation)", got)
	}
	if err := d.Apply(cold.mod.Memory()); err != nil {
		t.Fatal(err)
	}
	if got := cold.get(t); got != 12 {
		t.Fatalf("get() = %d, want 12", got)
	}
	cold.set(t, 100)
	cold.mod.Memory().Grow(2) // images carry the grown size

	f, err := os.CreateTemp(t.TempDir(), "image")
	if err != nil {
		t.Fatal(err)
	}
	if err := Capture(f, cold.mod, d, "key-1", map[string]int{"x": 1}); err != nil {
		t.Fatal(err)
	}
	img, err := Open(f, "key-1")
	if err != nil {
		t.Fatal(err)
	}
	if img.Pages != 3 || len(img.Runs) != 1 || img.Runs[0] != [2]uint32{0, 1} || string(img.State) != `{"x":1}` {
		t.Fatalf("header = %+v", img.Header)
	}

	for i := 0; i < 2; i++ {
		warm := instantiate(t, rt, cm)
		if err := img.Restore(warm.mod, d); err != nil {
			t.Fatal(err)
		}
		if got, size := warm.get(t), warm.mod.Memory().Size(); got != 300 || size != 3*65536 {
			t.Fatalf("restored: get() = %d, size %d; want 300 and 3 pages", got, size)
		}
		// Writes are the instance's own: the next restore sees the image.
		warm.set(t, 1)
		if got := warm.get(t); got != 3 {
			t.Fatalf("after set(1) get() = %d, want 3", got)
		}
	}
}

func TestOpenRefuses(t *testing.T) {
	dir := t.TempDir()
	write := func(b []byte) *os.File {
		f, err := os.CreateTemp(dir, "image")
		if err != nil {
			t.Fatal(err)
		}
		f.Write(b)
		return f
	}
	header := func(s string) []byte { return append([]byte(s), make([]byte, HeaderSize-len(s))...) }
	for _, tc := range []struct {
		name, want string
		file       []byte
	}{
		{"empty", "reading the image header", nil},
		{"not json", "bad image header", header("garbage")},
		{"other magic", "not an image", header(`{"magic":"x","key":"k"}`)},
		{"other key", "made for", header(`{"magic":"capsule-snapshot-1","key":"other"}`)},
		{"short", "size does not match", header(`{"magic":"capsule-snapshot-1","key":"k","pages":2}`)},
		{"run outside", "outside", append(header(`{"magic":"capsule-snapshot-1","key":"k","pages":1,"runs":[[0,2]]}`), make([]byte, 65536)...)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Open(write(tc.file), "k")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Open = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestPrepareRefusesPassiveData(t *testing.T) {
	if _, _, err := PrepareModule(testModule(1)); err == nil || !strings.Contains(err.Error(), "passive") {
		t.Fatalf("PrepareModule = %v, want a refusal of passive segments", err)
	}
}

func TestParseDataRefusesGarbage(t *testing.T) {
	for _, b := range [][]byte{nil, []byte("CAPSULE-DATA-2\n"), append([]byte("CAPSULE-DATA-2\n"), 9, 0, 0, 0)} {
		if _, err := ParseData(b); err == nil {
			t.Errorf("ParseData(%q) succeeded", b)
		}
	}
	d, err := ParseData(append([]byte("CAPSULE-DATA-2\n"), 0, 0, 0, 0, 16, 0, 0, 0, 9, 0, 0, 0, 1))
	if err != nil {
		t.Fatal(err)
	}
	rt := wazero.NewRuntime(context.Background())
	defer rt.Close(context.Background())
	prepared, _, _ := PrepareModule(testModule(0))
	cm, _ := rt.CompileModule(context.Background(), prepared)
	in := instantiate(t, rt, cm)
	if err := d.Apply(in.mod.Memory()); err == nil || !bytes.Contains([]byte(err.Error()), []byte("truncated")) {
		t.Fatalf("Apply of a truncated record = %v", err)
	}
}
