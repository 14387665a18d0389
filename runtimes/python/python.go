// Package python is capsule's Python runtime: CPython 3.11 built for
// wasm32-wasi from Debian's source package (see build.sh), run by wazero.
//
// The module is a WASI reactor with two entry points of capsule's own
// (reactor/capsule.c): capsule_init starts CPython and runs the bootstrap, which
// imports what calls commonly use; capsule_run runs one request. One Engine
// compiles the module once per process. Each Instance is a fresh module
// instance that is either started cold (the data segments applied,
// _initialize and capsule_init run) or restored from an image of an
// instance taken right after capsule_init (runtimes/internal/snapshot),
// which costs a few mappings instead of CPython's start-up. Run hands the
// request to capsule_run and waits for the outcome, which comes back on a
// private result channel (a file descriptor that only the host's fd_write
// knows), never mixed with the guest's stdout and stderr.
package python

import (
	"bytes"
	"context"
	"crypto/rand"
	"embed" // the build outputs
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/tetratelabs/wazero/sys"

	"capsule/runtimes"
	"capsule/runtimes/fileset"
	"capsule/runtimes/internal/guestmem"
	"capsule/runtimes/internal/snapshot"
	"capsule/runtimes/provenance"
)

// The build's outputs (build.sh, then the Makefile's snapshot preparation)
// are embedded as byte slices rather than an embed.FS, whose ReadFile would
// copy 22 MB at every worker's start. python.snap.wasm is python.wasm
// without its data segments, which python.data holds (see
// snapshot.PrepareModule); python-numpy.* are the same interpreter with
// numpy's extension modules linked in, the numpy variant's module.
var (
	//go:embed dist/python.snap.wasm
	pythonWasm []byte
	//go:embed dist/python.data
	moduleData []byte
	//go:embed dist/python-numpy.snap.wasm
	numpyWasm []byte
	//go:embed dist/python-numpy.data
	numpyModuleData []byte
	//go:embed dist/python311.zip
	stdlibZip []byte
	//go:embed dist/tzdata.zip
	tzdataZip []byte
	//go:embed dist/VERSION
	versionFile string
	//go:embed dist/ASSETS
	assetSums string
	//go:embed dist/sources/*/SOURCE dist/bundle/sources/*/SOURCE
	sourceFiles embed.FS
)

// Built reports an error when this binary embeds the empty placeholders
// of `make wazero` instead of the built runtime: it can type-check and
// test the packages that run no code, but not run Python.
func Built() error {
	if len(pythonWasm) == 0 || len(numpyWasm) == 0 || len(bundleZip) == 0 {
		return errors.New("this binary was built without the Python runtime (runtimes/python/dist holds the empty placeholders of make wazero): run make build")
	}
	return nil
}

// Provenance describes the embedded files, with the hashes the build
// recorded for them, and the components they were built from. Every file
// the builds list in dist/ASSETS and dist/bundle/ASSETS must be embedded
// and named here.
func Provenance() (provenance.Runtime, error) {
	return provenance.New(runtimes.Python, map[string][]byte{
		"python.snap.wasm":       pythonWasm,
		"python.data":            moduleData,
		"python-numpy.snap.wasm": numpyWasm,
		"python-numpy.data":      numpyModuleData,
		"python311.zip":          stdlibZip,
		"tzdata.zip":             tzdataZip,
		"VERSION":                []byte(versionFile),
		"bundle/packages.zip":    bundleZip,
	}, assetSums+bundleSums, sourceFiles, "dist/sources", bundleSourcesDir)
}

//go:embed bootstrap.py
var bootstrapSource string

const (
	// resultFD is the file descriptor on which the bootstrap writes its
	// report. No file the guest opens gets such a number (descriptors are
	// numbered lowest first, and a guest holds at most maxOpenFiles), and
	// the host's fd_write routes it to the instance's report buffer
	// instead of any stream.
	resultFD = 9999
	// maxReport bounds the report buffer: the report carries the result
	// value, so this is also the largest result a run can return.
	maxReport = 16 << 20
	// stdlibDir is where the standard library is mounted: with
	// PYTHONHOME=/usr/local it is on CPython's default sys.path.
	stdlibDir = "/usr/local/lib/python3.11"
	// sourceName is the file name the user's code gets in tracebacks. The
	// bootstrap uses the same name.
	sourceName = "<code>"
	// zoneinfoDir is where the time zones are mounted: the first entry of
	// CPython's zoneinfo.TZPATH.
	zoneinfoDir = "/usr/share/zoneinfo"
	// ScratchDir is the guest's private writable directory, also its
	// working directory.
	ScratchDir = "/tmp"
)

// bootstrap is the program capsule_init runs, with its constants filled in.
var bootstrap = strings.NewReplacer(
	"__RESULT_FD__", strconv.Itoa(resultFD),
	"__SOURCE_NAME__", strconv.Quote(sourceName),
	"__MAX_REPORT__", strconv.Itoa(maxReport),
	"__STDLIB_DIR__", strconv.Quote(stdlibDir),
	"__PACKAGES_DIR__", strconv.Quote(PackagesDir),
	"__BUNDLE_DIR__", strconv.Quote(BundleDir),
	"__SCRATCH_DIR__", strconv.Quote(ScratchDir),
).Replace(bootstrapSource)

// Versions reports the embedded interpreter's CPython version and the
// Debian source package version it was built from (from dist/VERSION).
func Versions() (cpython, debian string) {
	for line := range strings.Lines(versionFile) {
		k, v, ok := strings.Cut(strings.TrimSpace(line), "=")
		if !ok {
			continue
		}
		switch k {
		case "cpython":
			cpython = v
		case "debian":
			debian = v
		}
	}
	return cpython, debian
}

// NumpyVersion reports the upstream version of the numpy built into the
// interpreter ("1.19.5", from dist/VERSION's Debian source version), or ""
// when the build has none.
func NumpyVersion() string {
	for line := range strings.Lines(versionFile) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "numpy="); ok {
			_, v, _ = strings.Cut(v, ":") // the epoch
			v, _, _ = strings.Cut(v, "-") // the Debian revision
			return v
		}
	}
	return ""
}

// Identity is a digest of everything an interpreter's start-up depends on:
// the module, its data, the standard library, the time zones, the bundled
// packages and the bootstrap. A snapshot is valid for one identity only.
// The bundle counts by the SHA-256 its build recorded (which `capsule
// doctor` checks): hashing its 19 MB here would add to the server's
// start-up.
var Identity = sync.OnceValue(func() string {
	return snapshot.Identity(runtimes.Python, pythonWasm, moduleData, stdlibZip, tzdataZip, []byte(bundleSums), []byte(bootstrap), []byte(fsLayout))
})

// Libraries reports the Debian source packages of the libraries and data
// built into the runtime (zlib, sqlite3, xz-utils, bzip2, tzdata), each as
// "name version", in build order (from dist/VERSION).
func Libraries() []string {
	var libs []string
	for line := range strings.Lines(versionFile) {
		k, v, ok := strings.Cut(strings.TrimSpace(line), "=")
		if ok && k != "cpython" && k != "debian" {
			libs = append(libs, k+" "+v)
		}
	}
	return libs
}

// engine is a compiled interpreter within one wazero runtime.
type engine struct {
	rt         wazero.Runtime
	cache      wazero.CompilationCache
	module     wazero.CompiledModule
	data       *snapshot.Data
	image      *snapshot.Image // nil: instances start cold
	stdlib     *zipFS
	zoneinfo   *zipFS
	bundleFS   *lazyZipFS // nil without Config.BundledPackages
	packages   *Packages  // nil without --python-path
	packagesFS *zipFS
	scratch    int64 // bytes of the scratch directory
	filesOut   fileset.Limits
	limitBytes uint64
	running    atomic.Int32 // guests whose capsule_run has not returned
	// program is what capsule_init runs: the bootstrap, and the
	// variant's imports for a variant's snapshot.
	program string
}

// Compile compiles the interpreter and the host functions it imports. It does
// all code generation the runtime will ever need: after it returns the
// worker forbids executable mappings, so Prepare and Run only instantiate.
func Compile(ctx context.Context, cfg runtimes.Config) (runtimes.Engine, error) {
	rt, cache, pages, err := newRuntime(ctx, cfg)
	if err != nil {
		return nil, err
	}
	fail := func(err error) (runtimes.Engine, error) {
		_ = rt.Close(ctx)
		if cache != nil {
			_ = cache.Close(ctx)
		}
		return nil, err
	}
	// A cold compile of the 7 MB module takes seconds; spread it over the
	// cores (a cache hit does not compile at all).
	ctx = experimental.WithCompilationWorkers(ctx, runtime.GOMAXPROCS(0))

	v, err := variant(cfg.Variant)
	if err != nil {
		return fail(err)
	}
	m := v.module()
	data, err := snapshot.ParseData(m.data)
	if err != nil {
		return fail(fmt.Errorf("python: %w", err))
	}
	var image *snapshot.Image
	if cfg.Snapshot != nil {
		if image, err = snapshot.Open(cfg.Snapshot, cfg.SnapshotKey); err != nil {
			return fail(fmt.Errorf("python: %w", err))
		}
	}
	stdlib, err := newZipFS(stdlibZip)
	if err != nil {
		return fail(fmt.Errorf("python: embedded standard library: %w", err))
	}
	zoneinfo, err := newZipFS(tzdataZip)
	if err != nil {
		return fail(fmt.Errorf("python: embedded time zones: %w", err))
	}
	var bundleFS *lazyZipFS
	if cfg.BundledPackages {
		bundleFS = newLazyZipFS(bundleZip)
	}
	var packages *Packages
	var packagesFS *zipFS
	if cfg.PythonPath != "" {
		// Read before the worker's lockdown, which forbids opening files.
		if packages, err = OpenPackages(cfg.PythonPath); err != nil {
			return fail(err)
		}
		packagesFS = packages.fs
	}
	mod, err := rt.CompileModule(cfg.CompileContext(ctx), m.wasm)
	if err != nil {
		if packages != nil {
			packages.Close()
		}
		return fail(fmt.Errorf("python: compile: %w", err))
	}
	return &engine{
		rt:         rt,
		cache:      cache,
		module:     mod,
		data:       data,
		image:      image,
		stdlib:     stdlib,
		zoneinfo:   zoneinfo,
		bundleFS:   bundleFS,
		packages:   packages,
		packagesFS: packagesFS,
		scratch:    cfg.ScratchBytes,
		filesOut:   cfg.FilesOut,
		limitBytes: pages * wasmPage,
		program:    v.program(),
	}, nil
}

// newRuntime is the wazero runtime a Python engine runs in: guest memory
// limited to cfg's (in pages, returned), the compilation cache in
// cfg.CacheDir if any, and the WASI host module instantiated.
func newRuntime(ctx context.Context, cfg runtimes.Config) (wazero.Runtime, wazero.CompilationCache, uint64, error) {
	pages := cfg.MemoryLimitBytes / wasmPage
	if pages == 0 || pages > maxPages {
		pages = maxPages
	}
	rc := wazero.NewRuntimeConfigCompiler().
		// The limit is also the size of each instance's memory mapping
		// (see guestmem), so growth never copies the heap.
		WithMemoryLimitPages(uint32(pages)).
		// The module is stripped: there is no DWARF to use.
		WithDebugInfoEnabled(false)
	var cache wazero.CompilationCache
	if cfg.CacheDir != "" {
		var err error
		if cache, err = wazero.NewCompilationCacheWithDir(cfg.CacheDir); err != nil {
			return nil, nil, 0, fmt.Errorf("python: compilation cache: %w", err)
		}
		rc = rc.WithCompilationCache(cache)
	}
	rt := wazero.NewRuntimeWithConfig(ctx, rc)
	// The WASI host module is wazero's, with some functions replaced (see
	// exportHostFunctions). It is compiled and instantiated once;
	// per-instance state reaches the host functions through the context
	// of the _start call.
	b := rt.NewHostModuleBuilder(wasi_snapshot_preview1.ModuleName)
	err := exportHostFunctions(ctx, rt, b)
	if err == nil {
		_, err = b.Instantiate(ctx)
	}
	if err != nil {
		_ = rt.Close(ctx)
		if cache != nil {
			_ = cache.Close(ctx)
		}
		return nil, nil, 0, fmt.Errorf("python: wasi host module: %w", err)
	}
	return rt, cache, pages, nil
}

const (
	wasmPage = 65536
	maxPages = 65536 // 4 GiB, all that wasm32 can address
)

// Close releases the runtime, its compiled code and the compilation cache
// handle (the cache's files stay for the next process).
func (e *engine) Close(ctx context.Context) error {
	if e.running.Load() > 0 {
		// A guest that outlived its Run is still using the runtime (see
		// instance.Close); the process's end releases everything.
		return nil
	}
	err := e.rt.Close(ctx)
	if e.cache != nil {
		err = errors.Join(err, e.cache.Close(ctx))
	}
	if e.packages != nil {
		e.packages.Close()
	}
	return err
}

// monotonicBase anchors the guest's monotonic clock. The same clock is given
// to the module (clock_time_get) and used by poll_oneoff, so that an
// absolute deadline computed by the guest means the same instant to both.
var monotonicBase = time.Now()

func nanotime() int64 { return int64(time.Since(monotonicBase)) }

// Prepare makes a fresh interpreter ready for its request: restored from
// the engine's snapshot when it has one, started cold otherwise. No user
// code runs here.
func (e *engine) Prepare(ctx context.Context, streams runtimes.Streams) (runtimes.Instance, error) {
	inst, err := e.instantiate(ctx, streams)
	if err != nil {
		return nil, err
	}
	if e.image != nil {
		err = e.image.Restore(inst.mod, e.data)
	} else {
		err = inst.start()
	}
	if err != nil {
		_ = inst.mod.Close(ctx)
		return nil, fmt.Errorf("python: %w", err)
	}
	return inst, nil
}

// WriteSnapshot implements runtimes.Snapshotter.
func (e *engine) WriteSnapshot(ctx context.Context, f *os.File, key string) error {
	inst, err := e.instantiate(ctx, runtimes.Streams{})
	if err != nil {
		return err
	}
	defer inst.mod.Close(ctx)
	if err := inst.start(); err != nil {
		return fmt.Errorf("python: %w", err)
	}
	return snapshot.Capture(f, inst.mod, e.data, key, nil)
}

// instantiate makes a new instance of the module, with nothing run in it.
func (e *engine) instantiate(ctx context.Context, streams runtimes.Streams) (*instance, error) {
	stdout, stderr := streams.Stdout, streams.Stderr
	if stdout == nil {
		stdout = io.Discard
	}
	if stderr == nil {
		stderr = io.Discard
	}
	inst := &instance{
		engine:   e,
		stdout:   stdout,
		stderr:   stderr,
		stdin:    newRequestReader(),
		done:     make(chan struct{}),
		reported: make(chan struct{}, 1),
		nowFunc:  nanotime,
		files:    &guestFiles{},
	}
	if e.scratch > 0 {
		inst.scratch = newScratchFS(e.scratch, inst.files)
	}
	// No host directory is ever mounted. The environment is only what is
	// set here. A snapshot holds what the start-up made of the mounts and
	// the environment, so they must not differ between instances.
	mc := wazero.NewModuleConfig().
		WithName("").
		WithStartFunctions().
		WithArgs("python").
		WithEnv("PYTHONHOME", "/usr/local").
		WithEnv("PYTHONDONTWRITEBYTECODE", "1").
		WithEnv("PYTHONUNBUFFERED", "1").
		WithEnv("PYTHONIOENCODING", "utf-8").
		WithEnv("LANG", "C.UTF-8").
		WithEnv("TMPDIR", ScratchDir).
		WithFSConfig(e.fsConfig(inst.files, inst.scratch)).
		WithStdin(inst.stdin).
		WithStdout(stdout).
		WithStderr(stderr).
		WithSysWalltime().
		WithNanotime(nanotime, 1).
		WithSysNanosleep().
		WithRandSource(rand.Reader)
	var mem *guestmem.Memory
	mod, err := e.rt.InstantiateModule(experimental.WithMemoryAllocator(ctx, guestmem.Allocator(&mem)), e.module, mc)
	if err != nil {
		return nil, fmt.Errorf("python: instantiate: %w", err)
	}
	inst.mod = mod
	inst.callCtx = context.WithValue(context.WithoutCancel(ctx), instanceKey{}, inst)
	inst.mem = mem
	return inst, nil
}

// start runs what the snapshot holds: the data segments, wasi-libc's
// constructors, CPython's start-up and the bootstrap, with the variant's
// imports for a variant's snapshot.
func (in *instance) start() error {
	if err := in.engine.data.Apply(in.mod.Memory()); err != nil {
		return err
	}
	for _, name := range []string{"_initialize", "capsule_init"} {
		f := in.mod.ExportedFunction(name)
		if f == nil {
			return fmt.Errorf("the module has no %s (rebuild it with runtimes/python/build.sh)", name)
		}
		if name == "capsule_init" {
			in.stdin.preload([]byte(in.engine.program))
		}
		res, err := f.Call(in.callCtx)
		if err != nil {
			return fmt.Errorf("interpreter stopped during start-up: %s", describeCallError(err))
		}
		if len(res) > 0 && res[0] != 0 {
			return fmt.Errorf("interpreter start-up failed (%s returned %d)", name, int32(res[0]))
		}
	}
	return nil
}

// instanceKey is the context key under which host functions find the
// calling instance.
type instanceKey struct{}

// instance is one prepared interpreter.
type instance struct {
	engine  *engine
	mod     api.Module
	mem     *guestmem.Memory
	callCtx context.Context // carries the instance to the host functions
	stdout  io.Writer
	stderr  io.Writer
	stdin   *requestReader
	nowFunc func() int64
	files   *guestFiles
	scratch *scratchFS // nil without a scratch directory

	// report collects what the guest writes to resultFD (under reportMu:
	// Run may read it while the guest is still exiting); reported is
	// signalled after each write.
	reportMu       sync.Mutex
	report         bytes.Buffer
	reportOverflow bool
	reported       chan struct{}

	done    chan struct{} // closed when capsule_run returns
	callErr error         // capsule_run's error; read after done
	ran     bool
}

// request is what the bootstrap reads from standard input.
type request struct {
	Code   string          `json:"code"`
	Inputs json.RawMessage `json:"inputs,omitempty"`
}

// run hands req to the bootstrap and reports how the execution ended. It
// returns early with LimitTimeout when ctx ends first; the guest cannot be
// stopped from outside, so the caller must then discard the process (the
// worker does, once it has answered).
func (in *instance) run(ctx context.Context, req runtimes.Request) runtimes.Outcome {
	if in.ran {
		return errorOutcome("RuntimeError", "this interpreter instance has already run")
	}
	in.ran = true
	if req.Inputs != nil && !json.Valid(req.Inputs) {
		return errorOutcome("ValueError", "inputs is not valid JSON")
	}
	msg, err := json.Marshal(request{Code: req.Code, Inputs: req.Inputs})
	if err != nil {
		return errorOutcome("ValueError", "cannot encode the request: "+err.Error())
	}
	run := in.mod.ExportedFunction("capsule_run")
	if run == nil {
		return errorOutcome("RuntimeError", "the module has no capsule_run (rebuild it with runtimes/python/build.sh)")
	}
	in.stdin.preload(msg)
	// The guest runs on its own goroutine: CPython cannot be interrupted,
	// so Run must be able to give up on it at the deadline.
	if in.mem != nil {
		in.mem.SetRunning(true)
	}
	in.engine.running.Add(1)
	go func() {
		defer in.engine.running.Add(-1)
		defer close(in.done)
		if in.mem != nil {
			defer in.mem.SetRunning(false)
		}
		_, in.callErr = run.Call(in.callCtx)
	}()
	for {
		select {
		case <-in.done:
			return in.outcome()
		case <-in.reported:
			// A complete report is the bootstrap's last act: answer now
			// rather than wait for CPython's exit to unwind through
			// wazero, which costs a third of a trivial run. The worker
			// process ends the guest.
			if out, ok := in.earlyOutcome(); ok {
				return out
			}
		case <-ctx.Done():
			return runtimes.Outcome{
				Limit: runtimes.LimitTimeout,
				Error: &runtimes.ErrorInfo{Type: "TimeoutError", Message: "timeout: execution did not finish in time"},
			}
		}
	}
}

// earlyOutcome interprets a report that arrived while the guest is still
// exiting. It declines (false) when the report is not complete and valid,
// leaving the decision to outcome once the guest has stopped.
func (in *instance) earlyOutcome() (runtimes.Outcome, bool) {
	in.reportMu.Lock()
	defer in.reportMu.Unlock()
	if in.reportOverflow || in.report.Len() == 0 {
		return runtimes.Outcome{}, false
	}
	rep, err := decodeReport(in.report.Bytes())
	if err != nil {
		return runtimes.Outcome{}, false
	}
	return in.reportOutcome(rep, memoryNearLimit(in.mod, in.engine.limitBytes)), true
}

// outcome interprets the guest's end: its report if it sent one, its exit
// code, or the trap that stopped it.
func (in *instance) outcome() runtimes.Outcome {
	nearCap := memoryNearLimit(in.mod, in.engine.limitBytes)

	var exitCode int
	var exitErr *sys.ExitError
	switch {
	case in.callErr == nil:
	case errors.As(in.callErr, &exitErr):
		exitCode = int(int32(exitErr.ExitCode()))
	default:
		// A trap. Near the memory cap it is the cap's doing: CPython
		// aborts on allocation failures it cannot turn into MemoryError.
		if nearCap {
			return in.memoryOutcome()
		}
		msg := "the interpreter crashed: " + describeCallError(in.callErr)
		if strings.Contains(msg, "out of bounds memory access") || strings.Contains(msg, "stack overflow") {
			// With --stack-first, running off the 8 MiB stack is an out
			// of bounds access: the usual cause is a raised recursion
			// limit.
			msg += " (probably a stack overflow; was the recursion limit raised?)"
		}
		return errorOutcome("RuntimeError", msg)
	}

	if in.reportOverflow {
		return runtimes.Outcome{
			Limit: runtimes.LimitOutput,
			Error: &runtimes.ErrorInfo{Type: "OutputLimitError", Message: "result: limit of " + runtimes.FormatBytes(maxReport) + " reached"},
		}
	}
	if in.report.Len() == 0 {
		// The guest left without reporting (os._exit, or an exit from
		// within the bootstrap's own error handling).
		return runtimes.Outcome{ExitCode: exitCode}
	}
	rep, err := decodeReport(in.report.Bytes())
	if err != nil {
		return errorOutcome("RuntimeError", "the result channel was tampered with: "+err.Error())
	}
	return in.reportOutcome(rep, nearCap)
}

// reportOutcome turns the bootstrap's report into the outcome.
func (in *instance) reportOutcome(rep report, nearCap bool) runtimes.Outcome {
	out := runtimes.Outcome{Result: rep.Result, ResultType: rep.ResultType, ResultRepr: rep.ResultRepr,
		Error: rep.Error, ExitCode: rep.Exit, Limit: rep.Limit}
	// Near the cap CPython may also fail an allocation without setting
	// MemoryError (deep recursion reports "SystemError: error return
	// without exception set"): at the cap, the cap is the cause.
	if rep.Error != nil && ((rep.Error.Type == "MemoryError" && (nearCap || rep.Error.Message == "")) ||
		numpyAllocation(rep.Error) || (rep.Error.Type == "SystemError" && nearCap)) {
		// An allocation failed: CPython's own MemoryError has no message,
		// numpy's names the array it could not allocate (an allocation
		// larger than what is left below the cap fails at once, far from
		// it), and a guest whose memory is at the cap has hit the cap.
		m := in.memoryOutcome()
		if numpyAllocation(rep.Error) {
			m.Error.Message += " (" + rep.Error.Message + ")"
		}
		m.Error.Traceback = rep.Error.Traceback
		return m
	}
	return in.scratchOutcome(out)
}

// numpyAllocation reports whether an error is numpy's for an array it
// could not allocate: its _ArrayMemoryError, the MemoryError that
// numpy/patches/0006 raises for an array of more than 2 GiB, or the
// ValueError of a dimension of 2**31 elements or more (np.ones(10**10)),
// which numpy keeps, as on any 32-bit machine, for it also means an index
// that does not fit. The memory limit or the 32-bit address space stops
// each of them, on a 64-bit machine a failed allocation: to a call, the
// memory limit.
func numpyAllocation(e *runtimes.ErrorInfo) bool {
	switch e.Type {
	case "MemoryError", "numpy.core._exceptions._ArrayMemoryError":
		return strings.HasPrefix(e.Message, "Unable to allocate ")
	case "ValueError":
		return e.Message == "Maximum allowed dimension exceeded"
	}
	return false
}

// memoryOutcome is the outcome of a guest stopped by the memory limit.
func (in *instance) memoryOutcome() runtimes.Outcome {
	return runtimes.Outcome{
		Limit: runtimes.LimitMemory,
		Error: &runtimes.ErrorInfo{Type: "MemoryError", Message: "memory: limit of " + runtimes.FormatBytes(int64(in.engine.limitBytes)) + " reached"},
	}
}

// memoryNearLimit reports whether the guest's memory has grown to within a
// few MiB of the limit, where the next growth of the heap fails.
func memoryNearLimit(mod api.Module, limit uint64) bool {
	mem := mod.Memory()
	if mem == nil {
		return false
	}
	margin := max(limit/32, 4<<20)
	return uint64(mem.Size())+margin >= limit
}

// describeCallError gives the first line of a wazero call error, which names
// the trap ("wasm error: out of bounds memory access") without the stack.
func describeCallError(err error) string {
	if err == nil {
		return "exited"
	}
	var exitErr *sys.ExitError
	if errors.As(err, &exitErr) {
		return "exit code " + strconv.Itoa(int(exitErr.ExitCode()))
	}
	line, _, _ := strings.Cut(err.Error(), "\n")
	return line
}

func errorOutcome(typ, msg string) runtimes.Outcome {
	return runtimes.Outcome{Error: &runtimes.ErrorInfo{Type: typ, Message: msg}}
}

// Close discards the instance. An instance whose guest is still running
// user code (Run gave up at its deadline) is left to the end of the
// process: closing a module under a running guest races with it inside
// wazero.
func (in *instance) Close(ctx context.Context) error {
	if in.ran {
		select {
		case <-in.done:
		default:
			return nil
		}
	}
	return in.mod.Close(ctx)
}

// report is the bootstrap's message on the result channel.
type report struct {
	// Result is the last expression's value as JSON where it maps
	// exactly; ResultType and ResultRepr are set whenever there was a last
	// expression.
	Result     json.RawMessage     `json:"result,omitempty"`
	ResultType string              `json:"result_type,omitempty"`
	ResultRepr string              `json:"result_repr,omitempty"`
	Error      *runtimes.ErrorInfo `json:"error,omitempty"`
	Exit       int                 `json:"exit"`
	// Limit is "output" when the bootstrap replaced a too-large result.
	Limit string `json:"limit,omitempty"`
}

// decodeReport parses exactly one report. Anything else on the channel
// (guest code writing to it too) makes the whole report invalid: the guest
// can spoil its own answer but never confuse the host.
func decodeReport(b []byte) (report, error) {
	var rep report
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rep); err != nil {
		return report{}, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return report{}, errors.New("trailing data after the report")
	}
	if err := runtimes.CheckResult(rep.Result, rep.ResultType, rep.ResultRepr); err != nil {
		return report{}, err
	}
	if rep.Error != nil && rep.ResultType != "" {
		return report{}, errors.New("report has both a result and an error")
	}
	if rep.Limit != "" && (rep.Limit != runtimes.LimitOutput || rep.Error == nil) {
		return report{}, errors.New("invalid limit in the report")
	}
	return rep, nil
}

// requestReader is the guest's standard input. Each message the host
// preloads is read to its end, then reads see end of input until the next
// message: the bootstrap program for capsule_init, the request for
// capsule_run. The guest only reads while the host has called into it, so
// no read ever waits.
type requestReader struct {
	mu   sync.Mutex
	data bytes.Reader
}

func newRequestReader() *requestReader { return &requestReader{} }

// Read implements io.Reader for the guest's fd 0.
func (r *requestReader) Read(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.data.Read(p)
}

// preload makes msg the next thing the guest reads.
func (r *requestReader) preload(msg []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.data.Reset(msg)
}
