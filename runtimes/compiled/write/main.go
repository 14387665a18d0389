// Command write compiles each runtime's module at build time and writes its
// compiled image (wazero's experimental.WithCompiledImageWriter) for
// embedding by package compiled, with an ASSETS file of their SHA-256.
//
// The modules are compiled for wazero's baseline CPU features
// (experimental.WithBaselineCPUFeatures), not this machine's, so every
// build writes the same bytes and every CPU with those features can load
// them. linux/amd64 and linux/arm64 have images, each written by this tool
// built for that GOARCH (write.sh runs the other architecture's under
// qemu-user); elsewhere the binary compiles its modules at first start.
//
// Usage: go run ./runtimes/compiled/write -out runtimes/compiled/dist/linux-amd64
package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"github.com/tetratelabs/wazero/experimental"

	"capsule/runtimes"
	"capsule/runtimes/languages"
)

func main() {
	out := flag.String("out", "", "the directory to write the images and ASSETS into")
	flag.Parse()
	if *out == "" {
		fmt.Fprintln(os.Stderr, "usage: write -out DIR")
		os.Exit(2)
	}
	if err := run(*out); err != nil {
		fmt.Fprintln(os.Stderr, "write:", err)
		os.Exit(1)
	}
}

// module is one module whose image is written: a language's, or a
// variant's own.
type module struct {
	name    string // as package compiled looks it up (runtimes.Language.Module)
	compile func(context.Context, runtimes.Config) (runtimes.Engine, error)
	variant string
}

// modules are the modules of the table of languages (package languages):
// each language's, and the variants' that run their own.
func modules() []module {
	var ms []module
	for _, l := range languages.All() {
		for _, variant := range append([]string{""}, l.Variants...) {
			if variant == "" || l.HasOwnModule(variant) {
				ms = append(ms, module{l.Module(variant), l.Compile, variant})
			}
		}
	}
	return ms
}

func run(out string) error {
	if runtime.GOOS != "linux" || (runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64") {
		return fmt.Errorf("images are written for linux/amd64 and linux/arm64 only, this is %s/%s", runtime.GOOS, runtime.GOARCH)
	}
	// Workers compile for guard-page memories wherever wazero supports
	// them; an image compiled otherwise would be refused by every one of
	// them.
	if experimental.MemoryGuardPagesSupported && !runtimes.GuardPages() {
		return fmt.Errorf("guard-page memories are not available here (is the address space limited? ulimit -v): the images would not match what workers compile")
	}
	var assets bytes.Buffer
	for _, m := range modules() {
		image, err := compile(m.compile, m.variant)
		if err != nil {
			return fmt.Errorf("%s: %w", m.name, err)
		}
		// The names package compiled embeds (it cannot be imported here:
		// it needs these files to build).
		name := m.name + ".image"
		if err := writeFile(filepath.Join(out, name), image); err != nil {
			return err
		}
		sum := sha256.Sum256(image)
		fmt.Fprintf(&assets, "%s  %s\n", hex.EncodeToString(sum[:]), name)
	}
	return writeFile(filepath.Join(out, "ASSETS"), assets.Bytes())
}

// compile compiles one runtime's module (a variant's own, when variant is
// set) for the baseline CPU features, as a snapshot worker would (the
// memory limit is not part of the code), and returns its image.
func compile(compile func(context.Context, runtimes.Config) (runtimes.Engine, error), variant string) ([]byte, error) {
	var image bytes.Buffer
	ctx := experimental.WithBaselineCPUFeatures(context.Background())
	engine, err := compile(ctx, runtimes.Config{MemoryLimitBytes: 256 << 20, ImageWriter: &image, Variant: variant})
	if err != nil {
		return nil, err
	}
	if err := engine.Close(ctx); err != nil {
		return nil, err
	}
	return image.Bytes(), nil
}

func writeFile(path string, b []byte) error {
	if err := os.WriteFile(path+".tmp", b, 0o644); err != nil {
		return err
	}
	return os.Rename(path+".tmp", path)
}
