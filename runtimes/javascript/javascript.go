// Package javascript runs JavaScript in QuickJS-NG compiled to WebAssembly
// (the quickjs-emscripten build published as
// @jitl/quickjs-ng-wasmfile-release-sync), under wazero.
//
// The module is an emscripten build, not a WASI one: it imports 20 small
// functions (host.go implements them in Go) and is driven through
// quickjs-emscripten's C interface (the QTS_* exports). fetch.sh fetches the
// pinned package and rewrites the module once so that it owns its memory
// (see internal/ownmemory); the result is embedded here.
package javascript

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/tetratelabs/wazero"

	"capsule/runtimes"
	"capsule/runtimes/fileset"
	"capsule/runtimes/internal/snapshot"
	"capsule/runtimes/provenance"
)

// quickjs.snap.wasm is fetch.sh's quickjs.wasm without its data segments,
// which quickjs.data holds (see snapshot.PrepareModule).
var (
	//go:embed dist/quickjs.snap.wasm
	wasmModule []byte
	//go:embed dist/quickjs.data
	moduleData []byte
)

//go:embed dist/VERSION
var versionFile string

var (
	//go:embed dist/ASSETS
	assetSums string
	//go:embed dist/sources/*/SOURCE
	sourceFiles embed.FS
)

// Built reports an error when this binary embeds the empty placeholders
// of `make wazero` instead of the built runtime: it can type-check and
// test the packages that run no code, but not run JavaScript.
func Built() error {
	if len(wasmModule) == 0 {
		return errors.New("this binary was built without the JavaScript runtime (runtimes/javascript/dist holds the empty placeholders of make wazero): run make build")
	}
	return nil
}

// Provenance describes the embedded files, with the hashes fetch.sh
// recorded for them, and the npm package they come from. Every file
// fetch.sh lists in dist/ASSETS must be embedded and named here.
func Provenance() (provenance.Runtime, error) {
	return provenance.New(runtimes.JavaScript, map[string][]byte{
		"quickjs.snap.wasm": wasmModule,
		"quickjs.data":      moduleData,
		"VERSION":           []byte(versionFile),
	}, assetSums, sourceFiles, "dist/sources")
}

// Versions reports the npm package version the module comes from and the
// QuickJS-NG version inside it, as recorded by fetch.sh in dist/VERSION.
func Versions() (pkg, quickjs string) {
	for _, line := range strings.Split(versionFile, "\n") {
		key, value, _ := strings.Cut(strings.TrimSpace(line), "=")
		switch key {
		case "quickjs-ng-wasmfile":
			pkg = value
		case "quickjs-ng":
			quickjs = value
		}
	}
	return pkg, quickjs
}

// engine is the compiled module inside one wazero runtime. The host module
// "a" is instantiated once, here; every Prepare instantiates the QuickJS
// module anew, anonymously, with its own memory.
type engine struct {
	runtime  wazero.Runtime
	compiled wazero.CompiledModule
	limit    uint64 // memory limit in bytes, whole pages
	data     *snapshot.Data
	image    *snapshot.Image // nil: instances start cold
	filesOut fileset.Limits
}

// Identity is a digest of everything an interpreter's start-up depends on:
// the module, its data and the prelude. A snapshot is valid for one
// identity only.
var Identity = sync.OnceValue(func() string {
	return snapshot.Identity(runtimes.JavaScript, wasmModule, moduleData, []byte(preludeSource))
})

// Compile compiles the embedded QuickJS module and checks it against the
// name table (names.go). All compilation happens here, the host module's
// included: the worker forbids executable mappings once Compile returns.
//
// Memory is capped by the wasm memory maximum, which WithMemoryLimitPages
// sets to cfg.MemoryLimitBytes for a memory the module defines: fetch.sh
// rewrote the module to define its own (internal/ownmemory says why that
// rather than a shim module built at run time). QuickJS's
// own limit (QTS_RuntimeSetMemoryLimit) does not hold in this build: with
// malloc_usable_size returning 0 under emscripten it counts 8 bytes for
// every allocation.
func Compile(ctx context.Context, cfg runtimes.Config) (runtimes.Engine, error) {
	pages := cfg.MemoryLimitBytes / 65536
	if pages == 0 || pages > 65536 {
		return nil, fmt.Errorf("javascript: memory limit %d bytes is not between 64KiB and 4GiB", cfg.MemoryLimitBytes)
	}
	if cfg.Variant != "" {
		return nil, fmt.Errorf("javascript: no snapshot variant %q: the JavaScript runtime has none", cfg.Variant)
	}
	rc := wazero.NewRuntimeConfigCompiler().WithMemoryLimitPages(uint32(pages))
	if cfg.CacheDir != "" {
		cache, err := wazero.NewCompilationCacheWithDir(cfg.CacheDir)
		if err != nil {
			return nil, fmt.Errorf("javascript: compilation cache: %w", err)
		}
		rc = rc.WithCompilationCache(cache)
	}
	rt := wazero.NewRuntimeWithConfig(ctx, rc)
	e, err := compileIn(ctx, cfg, rt, pages*65536)
	if err == nil && cfg.Snapshot != nil {
		if e.image, err = snapshot.Open(cfg.Snapshot, cfg.SnapshotKey); err != nil {
			err = fmt.Errorf("javascript: %w", err)
		}
	}
	if err != nil {
		_ = rt.Close(ctx)
		return nil, err
	}
	return e, nil
}

func compileIn(ctx context.Context, cfg runtimes.Config, rt wazero.Runtime, limit uint64) (*engine, error) {
	if !bytes.HasPrefix(wasmModule, []byte("\x00asm")) {
		return nil, fmt.Errorf("javascript: dist/quickjs.wasm is not a wasm module (run runtimes/javascript/fetch.sh)")
	}
	compiled, err := rt.CompileModule(cfg.CompileContext(ctx), wasmModule)
	if err != nil {
		return nil, fmt.Errorf("javascript: compile: %w", err)
	}
	if err := verify(shapeOf(compiled)); err != nil {
		return nil, err
	}
	host := rt.NewHostModuleBuilder(hostModule)
	defineHost(host)
	if _, err := host.Instantiate(ctx); err != nil {
		return nil, fmt.Errorf("javascript: host module: %w", err)
	}
	data, err := snapshot.ParseData(moduleData)
	if err != nil {
		return nil, fmt.Errorf("javascript: %w", err)
	}
	return &engine{runtime: rt, compiled: compiled, limit: limit, data: data, filesOut: cfg.FilesOut}, nil
}

// Close releases the runtime, the compiled module and every instance.
func (e *engine) Close(ctx context.Context) error {
	return e.runtime.Close(ctx)
}
