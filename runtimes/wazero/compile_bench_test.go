//go:build linux

// Package wazero_test measures what the patch set in this directory saves a
// worker: the CPU that Runtime.CompileModule costs in a fresh process when
// the compiled code comes from wazero's file cache, against when it comes
// from a compiled image mapped from a file (patch 0001).
package wazero_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"hash/crc32"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/experimental"
)

// childEnv, when set, makes the test binary a child that loads one module
// once and prints what it cost: "<mode> <wasm path> <cache dir> <image path>".
const childEnv = "CAPSULE_WAZERO_BENCH_CHILD"

func TestMain(m *testing.M) {
	if args := os.Getenv(childEnv); args != "" {
		if err := runChild(strings.Fields(args)); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// benchModules are capsule's modules, with the runtime configuration their
// runtimes package uses (python.Compile, javascript.Compile).
var benchModules = []struct {
	name, path string
	config     func() wazero.RuntimeConfig
}{
	{"python", "../python/dist/python.wasm", func() wazero.RuntimeConfig {
		return wazero.NewRuntimeConfigCompiler().WithDebugInfoEnabled(false)
	}},
	{"javascript", "../javascript/dist/quickjs.wasm", wazero.NewRuntimeConfigCompiler},
}

func cpuTime(ru *syscall.Rusage) time.Duration {
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// runChild loads the module in the given mode and prints the CPU time and
// minor page faults of CompileModule alone.
func runChild(args []string) error {
	mode, wasmPath, cacheDir, imagePath := args[0], args[1], args[2], args[3]
	var config wazero.RuntimeConfig
	for _, m := range benchModules {
		if strings.HasSuffix(wasmPath, filepath.Base(m.path)) {
			config = m.config()
		}
	}
	// The worker's binary is embedded in its executable: file pages, paged
	// in when first read. A mapping of the file behaves the same.
	binary, err := mapFile(wasmPath)
	if err != nil {
		return err
	}
	ctx := context.Background()
	if mode == "image" {
		// Mapped before the measurement, as the worker maps its image
		// before it loads the module.
		image, err := mapFile(imagePath)
		if err != nil {
			return err
		}
		ctx = experimental.WithCompiledImage(ctx, image)
	} else if mode == "cache" {
		cache, err := wazero.NewCompilationCacheWithDir(cacheDir)
		if err != nil {
			return err
		}
		config = config.WithCompilationCache(cache)
	}
	rt := wazero.NewRuntimeWithConfig(ctx, config)
	// Finish any collection the set-up started, so that it is not counted
	// below.
	runtime.GC()
	var before, after syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &before)
	switch mode {
	case "cache", "image":
		_, err = rt.CompileModule(ctx, binary)
	case "sha256": // what hashing the binary for its module ID costs
		sha256.Sum256(binary)
	case "crc32c": // what the image's check of the binary costs
		crc32.Checksum(binary, crc32.MakeTable(crc32.Castagnoli))
	case "nothing": // the noise of the measurement
	}
	syscall.Getrusage(syscall.RUSAGE_SELF, &after)
	if err != nil {
		return err
	}
	fmt.Printf("%d %d\n", cpuTime(&after)-cpuTime(&before), after.Minflt-before.Minflt)
	return nil
}

func mapFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	return syscall.Mmap(int(f.Fd()), 0, int(st.Size()), syscall.PROT_READ, syscall.MAP_PRIVATE)
}

// BenchmarkCompileModule runs one fresh process per iteration that loads
// the module once, and reports the median CPU time ("cpu-ms") and minor
// page faults ("faults") of that load. Use -benchtime=15x for 15 processes.
func BenchmarkCompileModule(b *testing.B) {
	for _, m := range benchModules {
		binary, err := os.ReadFile(m.path)
		if err != nil {
			b.Skipf("%v: run make build first", err)
		}
		dir := b.TempDir()
		cacheDir, imagePath := filepath.Join(dir, "cache"), filepath.Join(dir, "image")
		cache, err := wazero.NewCompilationCacheWithDir(cacheDir)
		if err != nil {
			b.Fatal(err)
		}
		var image bytes.Buffer
		ctx := experimental.WithCompiledImageWriter(experimental.WithCompilationWorkers(context.Background(), 2), &image)
		rt := wazero.NewRuntimeWithConfig(ctx, m.config().WithCompilationCache(cache))
		if _, err := rt.CompileModule(ctx, binary); err != nil {
			b.Fatal(err)
		}
		rt.Close(ctx)
		if err := os.WriteFile(imagePath, image.Bytes(), 0o600); err != nil {
			b.Fatal(err)
		}
		for _, mode := range []string{"cache", "image", "sha256", "crc32c", "nothing"} {
			b.Run(m.name+"/"+mode, func(b *testing.B) {
				var cpu, faults []float64
				for i := 0; i < b.N; i++ {
					cmd := exec.Command(os.Args[0])
					cmd.Env = append(os.Environ(), childEnv+"="+strings.Join([]string{mode, m.path, cacheDir, imagePath}, " "))
					cmd.Stderr = os.Stderr
					out, err := cmd.Output()
					if err != nil {
						b.Fatal(err)
					}
					fields := strings.Fields(string(out))
					ns, _ := strconv.ParseFloat(fields[0], 64)
					flt, _ := strconv.ParseFloat(fields[1], 64)
					cpu, faults = append(cpu, ns/1e6), append(faults, flt)
				}
				b.ReportMetric(median(cpu), "cpu-ms")
				b.ReportMetric(median(faults), "faults")
			})
		}
	}
}

func median(v []float64) float64 {
	slices.Sort(v)
	return v[len(v)/2]
}
