package main

import (
	"runtime/debug"
	"strings"
	"testing"
)

// TestSameBuild: binaries for other architectures must come from the same
// module graph and build settings as the native one; only the
// architecture's own settings may differ.
func TestSameBuild(t *testing.T) {
	info := func(arch, ldflags, sum string) *builtBinary {
		return &builtBinary{path: "bin/linux-" + arch + "/capsule", arch: arch, info: &debug.BuildInfo{
			GoVersion: "go1.26.8", Path: "capsule/cmd/capsule", Main: debug.Module{Path: "capsule"},
			Deps: []*debug.Module{{Path: "golang.org/x/sys", Version: "v0.1.0", Sum: sum}},
			Settings: []debug.BuildSetting{{Key: "-ldflags", Value: ldflags}, {Key: "CGO_ENABLED", Value: "0"},
				{Key: "GOARCH", Value: arch}, {Key: "GOOS", Value: "linux"}},
		}}
	}
	native := info("amd64", "-X main.commit=abc", "h1:x")
	native.info.Settings = append(native.info.Settings, debug.BuildSetting{Key: "GOAMD64", Value: "v1"})
	cases := []struct {
		name string
		b    *builtBinary
		err  string
	}{
		{"same build", info("arm64", "-X main.commit=abc", "h1:x"), ""},
		{"another commit", info("arm64", "-X main.commit=def", "h1:x"), `lacks "setting -ldflags=-X main.commit=abc"`},
		{"another module hash", info("arm64", "-X main.commit=abc", "h1:y"), "lacks \"dep golang.org/x/sys v0.1.0 h1:x\""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := sameBuild(native, c.b)
			if c.err == "" && err != nil || c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)) {
				t.Fatalf("err %v, want %q", err, c.err)
			}
		})
	}
	cgo := info("arm64", "-X main.commit=abc", "h1:x")
	cgo.info.Settings[1].Value = "1"
	if err := sameBuild(native, cgo); err == nil || !strings.Contains(err.Error(), "CGO_ENABLED=0") {
		t.Errorf("a cgo build: %v", err)
	}
}

// TestCheckEmbedded: a binary that does not hold a runtime file of the
// release byte for byte is refused.
func TestCheckEmbedded(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, root, map[string]string{"runtimes/python/dist/a.wasm": "WASM-BYTES", "runtimes/python/dist/ASSETS": "sum  a.wasm\n"})
	rel := &release{Assets: []asset{{Runtime: "python", Name: "a.wasm"}}}
	rel.Binary = []byte("head WASM-BYTES middle sum  a.wasm\n tail")
	if err := rel.checkEmbedded(root); err != nil {
		t.Fatal(err)
	}
	rel.Binary = []byte("head WASM-BYTEZ middle sum  a.wasm\n tail")
	if err := rel.checkEmbedded(root); err == nil || !strings.Contains(err.Error(), "does not embed python/a.wasm") {
		t.Fatalf("err %v", err)
	}
}
