package worker

import (
	"bytes"
	"context"
	"io"
	"os"
	"testing"

	"golang.org/x/sys/cpu"
	"golang.org/x/sys/unix"

	"github.com/tetratelabs/wazero/experimental"

	"capsule/runtimes"
	"capsule/runtimes/javascript"
)

// codeFile is a memfd holding image, as the supervisor gives a snapshot
// worker, its offset left at 0.
func codeFile(t *testing.T, image []byte) *os.File {
	t.Helper()
	fd, err := unix.MemfdCreate("test-code", unix.MFD_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	f := os.NewFile(uintptr(fd), "test-code")
	t.Cleanup(func() { f.Close() })
	if _, err := f.WriteAt(image, 0); err != nil {
		t.Fatal(err)
	}
	return f
}

func contents(t *testing.T, f *os.File) []byte {
	t.Helper()
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, st.Size())
	if _, err := f.ReadAt(b, 0); err != nil && err != io.EOF {
		t.Fatal(err)
	}
	return b
}

// hasBaselineCPU says whether this CPU has the features the embedded
// images are compiled for (wazero's baseline: SSE4.1, BMI1, LZCNT, which
// x/sys/cpu reports as BMI1, BMI2 and POPCNT).
func hasBaselineCPU() bool {
	return cpu.X86.HasSSE41 && cpu.X86.HasBMI1 && cpu.X86.HasBMI2 && cpu.X86.HasPOPCNT
}

// testLanguages are the languages the worker is tested with, as
// cmd/capsule makes them.
var testLanguages = runtimes.Languages{javascript.Language()}

// baselineImage compiles language's module for wazero's baseline CPU
// features, as runtimes/compiled/write does at build time, and returns its
// image. (A test binary cannot load the embedded images: wazero stamps
// images with its version, which it reads from the build information, and
// a test binary has none: cmd/capsule's tests check those.)
func baselineImage(t *testing.T, language string) []byte {
	t.Helper()
	if err := javascript.Built(); err != nil {
		t.Skip(err) // a fresh clone's placeholders: the module cannot compile
	}
	var image bytes.Buffer
	ctx := experimental.WithBaselineCPUFeatures(context.Background())
	engine, err := compile(ctx, testLanguages, language, runtimes.Config{MemoryLimitBytes: 256 << 20, ImageWriter: &image})
	if err != nil {
		t.Fatal(err)
	}
	engine.Close(ctx)
	return image.Bytes()
}

// TestCompileForSnapshot: a snapshot worker loads the module from the image
// it is given and leaves it as it is; given an image whose bytes differ
// (written for another binary, or for a CPU feature this CPU lacks) or
// none, it compiles and writes the image of its own compilation, which a
// run worker then loads.
func TestCompileForSnapshot(t *testing.T) {
	given := baselineImage(t, runtimes.JavaScript)
	// The image's header (wazero patch 0001): magic, version and GOARCH
	// (each a length byte and the string), CPU features, core features,
	// flags, module ID, the binary's length and digest.
	cpuAt := 9 + int(given[8])
	cpuAt += 1 + int(given[cpuAt])
	digestAt := cpuAt + 8 + 8 + 1 + 32 + 8
	otherBinary := bytes.Clone(given)
	otherBinary[digestAt] ^= 0xff
	otherCPU := bytes.Clone(given)
	otherCPU[cpuAt+7] |= 0x40 // a CPU feature no CPU has
	for _, tc := range []struct {
		name       string
		given      []byte
		wantLoaded bool
	}{
		{"an image compiled for the baseline", given, hasBaselineCPU()},
		{"an image for another binary", otherBinary, false},
		{"an image for a CPU feature this one lacks", otherCPU, false},
		{"no image", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			cfg := runtimes.Config{MemoryLimitBytes: 64 << 20}
			code := codeFile(t, tc.given)
			engine, err := compileForSnapshot(ctx, javascript.Language(), cfg, code)
			if err != nil {
				t.Fatal(err)
			}
			engine.Close(ctx)
			written := contents(t, code)
			if loaded := bytes.Equal(written, tc.given); loaded != tc.wantLoaded {
				t.Fatalf("the worker left the image it was given: %v, want %v", loaded, tc.wantLoaded)
			}
			// What the worker leaves is what every run worker loads.
			image, err := mapImage(int(dupFd(t, code)))
			if err != nil {
				t.Fatal(err)
			}
			defer unix.Munmap(image)
			cfg.CompiledImage = image
			engine, err = compile(ctx, testLanguages, runtimes.JavaScript, cfg)
			if err != nil {
				t.Fatalf("a run worker cannot load the image the snapshot worker left: %v", err)
			}
			engine.Close(ctx)
		})
	}
}

func dupFd(t *testing.T, f *os.File) int {
	t.Helper()
	fd, err := unix.Dup(int(f.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	return fd
}
