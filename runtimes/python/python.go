// Package python is capsule's Python runtime: CPython 3.11 built for
// wasm32-wasi from Debian's source package (see build.sh), run by wazero.
//
// One Engine compiles the interpreter once per process. Each Instance is a
// fresh module instance whose CPython start-up runs in Prepare, up to the
// point where a small bootstrap program blocks reading the request from
// standard input; Run hands it the request and waits for the outcome, which
// comes back on a private result channel (a file descriptor that only the
// host's fd_write knows), never mixed with the guest's stdout and stderr.
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
	"capsule/runtimes/internal/guestmem"
	"capsule/runtimes/provenance"
)

// The build's outputs (build.sh) are embedded as byte slices rather than an
// embed.FS, whose ReadFile would copy 22 MB at every worker's start.
var (
	//go:embed dist/python.wasm
	pythonWasm []byte
	//go:embed dist/python311.zip
	stdlibZip []byte
	//go:embed dist/VERSION
	versionFile string
	//go:embed dist/ASSETS
	assetSums string
	//go:embed dist/sources/*/SOURCE
	sourceFiles embed.FS
)

// Provenance describes the embedded files, with the hashes the build
// recorded for them, and the components they were built from. Every file
// the build lists in dist/ASSETS must be embedded and named here.
func Provenance() (provenance.Runtime, error) {
	return provenance.New(runtimes.Python, map[string][]byte{
		"python.wasm":   pythonWasm,
		"python311.zip": stdlibZip,
		"VERSION":       []byte(versionFile),
	}, assetSums, sourceFiles, "dist/sources")
}

//go:embed bootstrap.py
var bootstrapSource string

const (
	// resultFD is the file descriptor on which the bootstrap writes its
	// report. No file the guest can open gets such a number (the only
	// preopen is fd 3), and the host's fd_write routes it to the instance's
	// report buffer instead of any stream.
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
)

// bootstrap is the program passed with -c, with its constants filled in.
var bootstrap = strings.NewReplacer(
	"__RESULT_FD__", strconv.Itoa(resultFD),
	"__SOURCE_NAME__", strconv.Quote(sourceName),
	"__MAX_REPORT__", strconv.Itoa(maxReport),
	"__STDLIB_DIR__", strconv.Quote(stdlibDir),
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

// engine is a compiled interpreter within one wazero runtime.
type engine struct {
	rt         wazero.Runtime
	cache      wazero.CompilationCache
	module     wazero.CompiledModule
	stdlib     *stdlibFS
	limitBytes uint64
	running    atomic.Int32 // guests whose _start has not returned
}

// Compile compiles the interpreter and the host functions it imports. It does
// all code generation the runtime will ever need: after it returns the
// worker forbids executable mappings, so Prepare and Run only instantiate.
func Compile(ctx context.Context, cfg runtimes.Config) (runtimes.Engine, error) {
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
	var err error
	if cfg.CacheDir != "" {
		cache, err = wazero.NewCompilationCacheWithDir(cfg.CacheDir)
		if err != nil {
			return nil, fmt.Errorf("python: compilation cache: %w", err)
		}
		rc = rc.WithCompilationCache(cache)
	}
	// A cold compile of the 7 MB module takes seconds; spread it over the
	// cores (a cache hit does not compile at all).
	ctx = experimental.WithCompilationWorkers(ctx, runtime.GOMAXPROCS(0))
	rt := wazero.NewRuntimeWithConfig(ctx, rc)
	fail := func(err error) (runtimes.Engine, error) {
		_ = rt.Close(ctx)
		if cache != nil {
			_ = cache.Close(ctx)
		}
		return nil, err
	}

	// The WASI host module is wazero's, with two functions replaced:
	// fd_write (to carry the result channel) and poll_oneoff (to support
	// the absolute clock subscriptions CPython sleeps with). It is
	// compiled and instantiated once; per-instance state reaches the host
	// functions through the context of the _start call.
	b := rt.NewHostModuleBuilder(wasi_snapshot_preview1.ModuleName)
	wasi_snapshot_preview1.NewFunctionExporter().ExportFunctions(b)
	i32 := api.ValueTypeI32
	b.NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(fdWrite), []api.ValueType{i32, i32, i32, i32}, []api.ValueType{i32}).
		WithParameterNames("fd", "iovs", "iovs_len", "result.nwritten").
		WithResultNames("errno").
		Export("fd_write")
	b.NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(pollOneoff), []api.ValueType{i32, i32, i32, i32}, []api.ValueType{i32}).
		WithParameterNames("in", "out", "nsubscriptions", "result.nevents").
		WithResultNames("errno").
		Export("poll_oneoff")
	if _, err := b.Instantiate(ctx); err != nil {
		return fail(fmt.Errorf("python: wasi host module: %w", err))
	}

	stdlib, err := newStdlibFS(stdlibZip)
	if err != nil {
		return fail(fmt.Errorf("python: embedded standard library: %w", err))
	}
	mod, err := rt.CompileModule(ctx, pythonWasm)
	if err != nil {
		return fail(fmt.Errorf("python: compile: %w", err))
	}
	return &engine{
		rt:         rt,
		cache:      cache,
		module:     mod,
		stdlib:     stdlib,
		limitBytes: pages * wasmPage,
	}, nil
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
	return err
}

// monotonicBase anchors the guest's monotonic clock. The same clock is given
// to the module (clock_time_get) and used by poll_oneoff, so that an
// absolute deadline computed by the guest means the same instant to both.
var monotonicBase = time.Now()

func nanotime() int64 { return int64(time.Since(monotonicBase)) }

// Prepare instantiates a fresh interpreter and runs CPython's start-up and
// the bootstrap's imports, returning once the bootstrap waits for the
// request. No user code runs here.
func (e *engine) Prepare(ctx context.Context, streams runtimes.Streams) (runtimes.Instance, error) {
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
	}
	// No host directory is ever mounted: the only file system is the
	// embedded standard library, read-only. The environment is only
	// what is set here.
	mc := wazero.NewModuleConfig().
		WithName("").
		WithStartFunctions().
		WithArgs("python",
			"-S", // no site: no site-packages, nothing user-writable on sys.path
			"-s", // no user site directory
			"-B", // never write .pyc files (the file system is read-only anyway)
			"-u", // unbuffered stdout/stderr: output reaches the writers as it is printed
			"-P", // do not put the current directory on sys.path
			"-c", bootstrap).
		WithEnv("PYTHONHOME", "/usr/local").
		WithEnv("PYTHONDONTWRITEBYTECODE", "1").
		WithEnv("PYTHONUNBUFFERED", "1").
		WithEnv("PYTHONIOENCODING", "utf-8").
		WithEnv("LANG", "C.UTF-8").
		WithFSConfig(wazero.NewFSConfig().WithFSMount(e.stdlib, stdlibDir)).
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
	start := mod.ExportedFunction("_start")
	if start == nil {
		_ = mod.Close(ctx)
		return nil, errors.New("python: module has no _start")
	}
	// The guest runs on its own goroutine for its whole life: start-up now,
	// the user's code when Run hands over the request. Its context carries
	// the instance to the host functions; it is detached from ctx, which
	// only bounds Prepare.
	callCtx := context.WithValue(context.WithoutCancel(ctx), instanceKey{}, inst)
	if mem != nil {
		mem.SetRunning(true)
	}
	e.running.Add(1)
	go func() {
		defer e.running.Add(-1)
		defer close(inst.done)
		if mem != nil {
			defer mem.SetRunning(false)
		}
		_, inst.callErr = start.Call(callCtx)
	}()
	select {
	case <-inst.stdin.waiting:
		return inst, nil
	case <-inst.done:
		_ = mod.Close(ctx)
		return nil, fmt.Errorf("python: interpreter stopped during start-up: %s", describeCallError(inst.callErr))
	case <-ctx.Done():
		// The guest goroutine cannot be interrupted; Close releases what
		// can be released and the worker process ends the rest.
		inst.stdin.abandon()
		_ = mod.Close(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("python: start-up: %w", ctx.Err())
	}
}

// instanceKey is the context key under which host functions find the
// calling instance.
type instanceKey struct{}

// instance is one prepared interpreter.
type instance struct {
	engine  *engine
	mod     api.Module
	stdout  io.Writer
	stderr  io.Writer
	stdin   *requestReader
	nowFunc func() int64

	// report collects what the guest writes to resultFD (under reportMu:
	// Run may read it while the guest is still exiting); reported is
	// signalled after each write.
	reportMu       sync.Mutex
	report         bytes.Buffer
	reportOverflow bool
	reported       chan struct{}

	done    chan struct{} // closed when _start returns
	callErr error         // _start's error; read after done
	ran     bool
}

// request is what the bootstrap reads from standard input.
type request struct {
	Code   string          `json:"code"`
	Inputs json.RawMessage `json:"inputs,omitempty"`
}

// Run hands req to the waiting bootstrap and reports how the execution
// ended. It returns early with LimitTimeout when ctx ends first; the guest
// cannot be stopped from outside, so the caller must then discard the
// process (the worker's own timer does).
func (in *instance) Run(ctx context.Context, req runtimes.Request) runtimes.Outcome {
	if in.ran {
		return errorOutcome("RuntimeError", "this interpreter instance has already run")
	}
	in.ran = true
	if req.Inputs != nil && !json.Valid(req.Inputs) {
		in.stdin.abandon()
		return errorOutcome("ValueError", "inputs is not valid JSON")
	}
	msg, err := json.Marshal(request{Code: req.Code, Inputs: req.Inputs})
	if err != nil {
		in.stdin.abandon()
		return errorOutcome("ValueError", "cannot encode the request: "+err.Error())
	}
	in.stdin.deliver(msg)
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
	out := runtimes.Outcome{Result: rep.Result, Error: rep.Error, ExitCode: rep.Exit, Limit: rep.Limit}
	if rep.Error != nil && rep.Error.Type == "MemoryError" && (nearCap || rep.Error.Message == "") {
		// An allocation failed: CPython's own MemoryError has no message,
		// and a guest whose memory is at the cap has hit the cap.
		m := in.memoryOutcome()
		m.Error.Traceback = rep.Error.Traceback
		return m
	}
	return out
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

// Close discards the instance. A bootstrap still waiting for its request is
// released (it reads end of input and exits without running anything).
func (in *instance) Close(ctx context.Context) error {
	in.stdin.abandon()
	if !in.ran {
		// The bootstrap exits within milliseconds of reading end of input.
		select {
		case <-in.done:
		case <-time.After(time.Second):
		}
	}
	select {
	case <-in.done:
		return in.mod.Close(ctx)
	default:
		// Still running user code (Run gave up at its deadline): it cannot
		// be interrupted, and closing a module under a running guest races
		// with it inside wazero. It is left to the end of the process.
		return nil
	}
}

// report is the bootstrap's message on the result channel.
type report struct {
	Result json.RawMessage     `json:"result,omitempty"`
	Error  *runtimes.ErrorInfo `json:"error,omitempty"`
	Exit   int                 `json:"exit"`
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
	if rep.Result != nil && (bytes.Equal(rep.Result, []byte("null")) || !json.Valid(rep.Result)) {
		return report{}, errors.New("invalid result value")
	}
	if rep.Error != nil && rep.Result != nil {
		return report{}, errors.New("report has both a result and an error")
	}
	if rep.Limit != "" && (rep.Limit != runtimes.LimitOutput || rep.Error == nil) {
		return report{}, errors.New("invalid limit in the report")
	}
	return rep, nil
}

// requestReader is the guest's standard input: it blocks the bootstrap's
// first read until Run delivers the request, then serves the request and
// end of input.
type requestReader struct {
	waiting   chan struct{} // closed by the first Read: the guest is ready
	onceWait  sync.Once
	requests  chan []byte   // receives the request once, or is closed
	ready     chan struct{} // closed with requests: a Read will not block
	onceClose sync.Once
	data      *bytes.Reader
}

func newRequestReader() *requestReader {
	return &requestReader{waiting: make(chan struct{}), requests: make(chan []byte, 1), ready: make(chan struct{})}
}

// Read implements io.Reader for the guest's fd 0.
func (r *requestReader) Read(p []byte) (int, error) {
	r.onceWait.Do(func() { close(r.waiting) })
	if r.data == nil {
		msg, ok := <-r.requests
		if !ok {
			msg = nil
		}
		r.data = bytes.NewReader(msg)
	}
	return r.data.Read(p)
}

// deliver hands the request to the blocked Read.
func (r *requestReader) deliver(msg []byte) {
	r.onceClose.Do(func() {
		r.requests <- msg
		close(r.requests)
		close(r.ready)
	})
}

// abandon releases a blocked Read with end of input.
func (r *requestReader) abandon() {
	r.onceClose.Do(func() {
		close(r.requests)
		close(r.ready)
	})
}
