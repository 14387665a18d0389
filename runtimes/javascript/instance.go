package javascript

import (
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/sys"

	"capsule/runtimes"
	"capsule/runtimes/internal/guestmem"
	"capsule/runtimes/internal/snapshot"
)

//go:embed prelude.js
var preludeSource string

const (
	// maxStackSize is QuickJS's own stack limit. The emscripten stack of this
	// build is 5 MiB; with 1 MiB, deep recursion ends in a catchable
	// RangeError well before either that stack or wazero's runs out (a trap
	// would leave the emscripten stack pointer wrong).
	maxStackSize = 1 << 20

	// scriptName is the file name of the user's code in stack traces.
	scriptName = "<input>"

	// scratchSize is the guest buffer Prepare allocates for call arguments
	// (an array of JSValue pointers) and out-parameters.
	scratchSize   = 64
	maxCallArgs   = 8
	scratchOutArg = 4 * maxCallArgs
)

// Results of QTS_PromiseState.
const (
	promiseNone      = -1 // not a promise
	promisePending   = 0
	promiseFulfilled = 1
	promiseRejected  = 2
)

// Host function ids, passed to QTS_NewFunction and back to callFunction.
const (
	refWrite = iota + 1
	refSchedule
	refCancel
)

// exports are the module's functions we call, bound by minified name.
type exports struct {
	callCtors, malloc, free                                   api.Function
	newRuntime, newContext, setMaxStackSize, enableInterrupt  api.Function
	newObject, newFunction, newString, getString, freeCString api.Function
	freeValue, getFloat64, newFloat64, setProp, getProp       api.Function
	argvGet, call, eval, resolveException, typeOf             api.Function
	promiseState, promiseResult, isJobPending, executeJobs    api.Function
	newArrayBuffer, getArrayBuffer, getArrayBufferLength      api.Function
	bjsonDecode                                               api.Function
}

func bindExports(mod api.Module) exports {
	var x exports
	for _, b := range []struct {
		n name
		f *api.Function
	}{
		{expCallCtors, &x.callCtors}, {expMalloc, &x.malloc}, {expFree, &x.free},
		{expNewRuntime, &x.newRuntime}, {expNewContext, &x.newContext},
		{expSetMaxStackSize, &x.setMaxStackSize}, {expEnableInterrupt, &x.enableInterrupt},
		{expNewObject, &x.newObject}, {expNewFunction, &x.newFunction},
		{expNewString, &x.newString}, {expGetString, &x.getString}, {expFreeCString, &x.freeCString},
		{expFreeValuePointer, &x.freeValue}, {expGetFloat64, &x.getFloat64}, {expNewFloat64, &x.newFloat64},
		{expSetProp, &x.setProp}, {expGetProp, &x.getProp}, {expArgvGetPointer, &x.argvGet},
		{expCall, &x.call}, {expEval, &x.eval}, {expResolveException, &x.resolveException},
		{expTypeof, &x.typeOf}, {expPromiseState, &x.promiseState}, {expPromiseResult, &x.promiseResult},
		{expIsJobPending, &x.isJobPending}, {expExecutePendingJob, &x.executeJobs},
		{expNewArrayBuffer, &x.newArrayBuffer}, {expGetArrayBuffer, &x.getArrayBuffer},
		{expGetArrayBufferLen, &x.getArrayBufferLength}, {expBJSONDecode, &x.bjsonDecode},
	} {
		// verify has checked that every name exists with its signature.
		*b.f = mod.ExportedFunction(b.n.min)
	}
	return x
}

// instance is one QuickJS runtime and context in a fresh module instance.
// Values called "JSValue*" below are guest pointers to heap copies of
// JSValues, owned by us, as quickjs-emscripten's C interface hands them out.
type instance struct {
	eng     *engine
	mod     api.Module
	mem     api.Memory
	fn      exports
	streams runtimes.Streams

	// ctx is what every call into the guest carries: the instance, for the
	// host functions. run is Run's context (nil before Run).
	ctx         context.Context
	run         context.Context
	deadline    time.Time
	hasDeadline bool
	epoch       time.Time // zero of the guest's monotonic clock

	rt, jsctx uint32 // JSRuntime*, JSContext*
	scratch   uint32
	prelude   uint32 // JSValue*: the object prelude.js returns
	methods   preludeMethods
	timers    timerQueue

	// fixedClock, when not zero, is what the realtime clock reads (ns).
	fixedClock uint64

	ran           bool
	interrupted   bool // shouldInterrupt said 1: the deadline passed in JavaScript
	timedOut      bool // the deadline passed while waiting for a timer
	memoryRefused bool // a heap growth was refused at the memory limit
	exitCode      int

	// received maps each buffer FileBuffer handed out to the guest block
	// (from malloc) that holds it.
	received map[*byte]uint32
}

// trap is the panic value that carries a failed call into the guest (a wasm
// trap, an abort, an exit, or a malloc that found no memory) up to Prepare or
// Run. Every guest call can fail this way, and there is nothing to do about
// it but end: the instance is not usable afterwards.
type trap struct{ err error }

var errNoMemory = errors.New("javascript: malloc failed")

// Prepare makes a fresh QuickJS ready for its code: restored from the
// engine's snapshot when it has one, otherwise started: runtime, context,
// stack limit, interrupt handler, and the prelude's globals (console,
// timers). No user code runs.
func (e *engine) Prepare(ctx context.Context, streams runtimes.Streams) (inst runtimes.Instance, err error) {
	in, err := e.instantiate(ctx, streams)
	if err != nil {
		return nil, err
	}
	if e.image != nil {
		err = in.restore()
	} else {
		err = in.coldStart()
	}
	if err != nil {
		_ = in.mod.Close(ctx)
		return nil, err
	}
	return in, nil
}

// WriteSnapshot implements runtimes.Snapshotter.
func (e *engine) WriteSnapshot(ctx context.Context, f *os.File, key string) error {
	in, err := e.instantiate(ctx, runtimes.Streams{})
	if err != nil {
		return err
	}
	defer in.mod.Close(ctx)
	// QuickJS seeds Math.random from the clock when it makes the context.
	// A clock that reads a chosen instant during the start-up makes the
	// seed recognisable, so that restore can replace it (see
	// findRandomState).
	in.fixedClock = snapshotClock
	if err := in.coldStart(); err != nil {
		return err
	}
	in.fixedClock = 0
	st := in.startState()
	if st.RandomState, err = in.findRandomState(); err != nil {
		return err
	}
	return snapshot.Capture(f, in.mod, e.data, key, st)
}

// instantiate makes a new instance of the module, with nothing run in it.
func (e *engine) instantiate(ctx context.Context, streams runtimes.Streams) (*instance, error) {
	in := &instance{eng: e, streams: streams, epoch: time.Now()}
	in.ctx = context.WithValue(ctx, instanceKey{}, in)
	mod, err := e.runtime.InstantiateModule(experimental.WithMemoryAllocator(in.ctx, guestmem.Allocator(nil)), e.compiled, wazero.NewModuleConfig().WithName("").WithStartFunctions())
	if err != nil {
		return nil, fmt.Errorf("javascript: instantiate: %w", err)
	}
	in.mod, in.mem, in.fn = mod, mod.Memory(), bindExports(mod)
	return in, nil
}

// coldStart applies the module's data and starts QuickJS.
func (in *instance) coldStart() (err error) {
	if err := in.eng.data.Apply(in.mem); err != nil {
		return fmt.Errorf("javascript: %w", err)
	}
	defer func() {
		if r := recover(); r != nil {
			t, ok := r.(trap)
			if !ok {
				panic(r)
			}
			err = fmt.Errorf("javascript: prepare: %w", t.err)
		}
	}()
	in.start()
	return nil
}

// restore makes the instance the one the engine's snapshot was taken of,
// with a new Math.random seed.
func (in *instance) restore() error {
	img := in.eng.image
	var st startState
	if err := json.Unmarshal(img.State, &st); err != nil {
		return fmt.Errorf("javascript: snapshot state: %w", err)
	}
	if err := img.Restore(in.mod, in.eng.data); err != nil {
		return fmt.Errorf("javascript: %w", err)
	}
	in.loadStartState(st)
	var seed [8]byte
	if _, err := rand.Read(seed[:]); err != nil {
		return err
	}
	// xorshift's state must not be zero.
	if !in.mem.WriteUint64Le(st.RandomState, binary.LittleEndian.Uint64(seed[:])|1) {
		return errors.New("javascript: snapshot: Math.random state outside memory")
	}
	return nil
}

// preludeMethods are the functions of the object prelude.js returns that
// the host calls (JSValue*s).
type preludeMethods struct {
	Fire, Render, RenderPromise, Describe, Unwrap, SetInputs uint32
	AddFile, SealFiles, CollectOutputs                       uint32
}

// startState is what the Go side keeps of QuickJS's start-up: guest
// pointers, saved with the snapshot and set again after a restore.
type startState struct {
	RT, Ctx, Scratch, Prelude uint32
	Methods                   preludeMethods
	// RandomState is the address of the context's Math.random state.
	RandomState uint32
	// Monotonic is the instance's monotonic clock when the snapshot was
	// taken: the prelude keeps readings of it (performance.now's zero), so
	// a restored instance's clock goes on from there.
	Monotonic time.Duration
}

func (in *instance) startState() startState {
	return startState{RT: in.rt, Ctx: in.jsctx, Scratch: in.scratch, Prelude: in.prelude, Methods: in.methods,
		Monotonic: time.Since(in.epoch)}
}

func (in *instance) loadStartState(st startState) {
	in.rt, in.jsctx, in.scratch, in.prelude, in.methods = st.RT, st.Ctx, st.Scratch, st.Prelude, st.Methods
	in.epoch = time.Now().Add(-st.Monotonic)
}

// snapshotClock is the instant the realtime clock reads while a snapshot's
// start-up runs: 2001-09-09T01:46:40.123456789Z, a value whose forms in
// nanoseconds, microseconds and milliseconds are unlikely elsewhere.
const snapshotClock = 1_000_000_000_123_456_789

// findRandomState finds the context's Math.random state: the 64-bit word in
// the JSContext that holds the clock reading it was seeded with. Exactly
// one must match, or the snapshot is refused rather than letting every
// call share one random sequence.
func (in *instance) findRandomState() (uint32, error) {
	const span = 16 << 10 // well past the end of a JSContext
	buf, ok := in.mem.Read(in.jsctx, span)
	if !ok {
		return 0, errors.New("javascript: snapshot: JSContext outside memory")
	}
	var found []uint32
	for off := uint32(0); off+8 <= span; off += 8 {
		switch binary.LittleEndian.Uint64(buf[off:]) {
		case snapshotClock, snapshotClock / 1_000, snapshotClock / 1_000_000:
			found = append(found, in.jsctx+off)
		}
	}
	if len(found) != 1 {
		return 0, fmt.Errorf("javascript: snapshot: found the Math.random seed at %d places in the JSContext, want 1", len(found))
	}
	return found[0], nil
}

func (in *instance) start() {
	in.callv(in.fn.callCtors)
	in.rt = in.call(in.fn.newRuntime)
	in.jsctx = in.call(in.fn.newContext, in.rt, 0) // 0: all intrinsics
	in.callv(in.fn.setMaxStackSize, in.rt, maxStackSize)
	in.callv(in.fn.enableInterrupt, in.rt)
	in.scratch = in.malloc(scratchSize)

	fn, exc := in.evalScript(preludeSource, "<capsule>", 0)
	if exc != 0 {
		panic(trap{fmt.Errorf("prelude: %s", in.cStringOf(exc))})
	}
	host := in.call(in.fn.newObject, in.jsctx)
	for _, h := range []struct {
		name string
		ref  uint32
	}{{"write", refWrite}, {"schedule", refSchedule}, {"cancel", refCancel}} {
		namePtr := in.mallocString(h.name)
		f := in.call(in.fn.newFunction, in.jsctx, namePtr, 0, 0, h.ref)
		in.callv(in.fn.free, namePtr)
		in.setProp(host, h.name, f)
		in.freeValue(f)
	}
	maxTimers := in.newFloat64(maxPendingTimers)
	in.setProp(host, "maxPendingTimers", maxTimers)
	in.freeValue(maxTimers)
	obj, exc := in.callJS(fn, host, host)
	if exc != 0 {
		panic(trap{fmt.Errorf("prelude: %s", in.cStringOf(exc))})
	}
	in.freeValue(host)
	in.freeValue(fn)
	in.prelude = obj
	in.methods.Fire = in.getProp(obj, "fire")
	in.methods.Render = in.getProp(obj, "render")
	in.methods.RenderPromise = in.getProp(obj, "renderPromise")
	in.methods.Describe = in.getProp(obj, "describe")
	in.methods.Unwrap = in.getProp(obj, "unwrap")
	in.methods.SetInputs = in.getProp(obj, "setInputs")
	in.methods.AddFile = in.getProp(obj, "addFile")
	in.methods.SealFiles = in.getProp(obj, "sealFiles")
	in.methods.CollectOutputs = in.getProp(obj, "collectOutputs")
}

// Close discards the module instance and its memory.
func (in *instance) Close(ctx context.Context) error {
	return in.mod.Close(ctx)
}

// Run evaluates req.Code as a global script (plain, or async when it uses
// top-level await: script.go), runs jobs and timers until none is left, and
// reports the value of the last expression (result.go says when it is
// awaited and how it is rendered) and the files the code returns
// (files.go), whichever way the run ended but in a trap.
func (in *instance) Run(ctx context.Context, req runtimes.Request) (out runtimes.Outcome) {
	start := time.Now()
	if in.ran {
		return runtimes.Outcome{Error: &runtimes.ErrorInfo{Type: "InternalError", Message: "javascript: an instance runs only once"}}
	}
	in.ran = true
	in.run = ctx
	in.ctx = context.WithValue(ctx, instanceKey{}, in)
	in.deadline, in.hasDeadline = ctx.Deadline()

	var result renderedValue
	defer func() {
		if r := recover(); r != nil {
			t, ok := r.(trap)
			if !ok {
				panic(r)
			}
			out = in.outcome(start, result, nil, t.err)
		}
	}()
	jsErr := in.execute(req, &result)
	out = in.outcome(start, result, jsErr, nil)
	in.collectOutputs(&out)
	return out
}

// execute does Run's work; result is set as soon as it is known, so that an
// error in a later timer still reports it.
func (in *instance) execute(req runtimes.Request, result *renderedValue) *runtimes.ErrorInfo {
	if err := in.putFiles(req.Files); err != nil {
		return err
	}
	if req.Inputs != nil {
		if !json.Valid(req.Inputs) {
			return &runtimes.ErrorInfo{Type: "InputError", Message: "inputs is not valid JSON"}
		}
		s := in.newString(string(req.Inputs))
		_, exc := in.callJS(in.methods.SetInputs, in.prelude, s)
		in.freeValue(s)
		if exc != 0 {
			return in.describe(exc)
		}
	}

	value, async, exc := in.evalCode(req.Code)
	if exc != 0 {
		return in.describe(exc) // a syntax error, or what a plain script threw
	}
	if async {
		// value is the promise of the script's completion: waiting for it
		// is the top-level await.
		wrapper, errInfo := in.await(value)
		if errInfo != nil || wrapper == 0 {
			return errInfo
		}
		if value, exc = in.callJS(in.methods.Unwrap, in.prelude, wrapper); exc != 0 {
			return in.describe(exc)
		}
	}
	rendered, errInfo := in.lastValue(value)
	if errInfo != nil {
		return errInfo
	}
	if rendered != "" {
		var rv renderedValue
		if err := json.Unmarshal([]byte(rendered), &rv); err != nil || rv.Type == "" {
			return &runtimes.ErrorInfo{Type: "InternalError", Message: "javascript: the result could not be rendered"}
		}
		*result = rv
	}

	// Like node, the run goes on until no job or timer is left.
	if exc, _ := in.loop(0); exc != 0 {
		return in.describe(exc)
	}
	return nil
}

// await runs the event loop until promise p settles and returns its value;
// 0 and no error means the deadline passed first.
func (in *instance) await(p uint32) (uint32, *runtimes.ErrorInfo) {
	exc, stopped := in.loop(p)
	switch {
	case stopped:
		return 0, nil
	case exc != 0:
		return 0, in.describe(exc)
	}
	switch in.promiseState(p) {
	case promiseFulfilled:
		return in.call(in.fn.promiseResult, in.jsctx, p), nil
	case promiseRejected:
		return 0, in.describe(in.call(in.fn.promiseResult, in.jsctx, p))
	default:
		return 0, &runtimes.ErrorInfo{
			Type:    "Error",
			Message: "unsettled top-level await: the code waits for a promise that nothing can settle any more",
		}
	}
}

// loop runs pending jobs and timers until promise p (a JSValue*, or 0 for
// none) settles or nothing is left to run. It returns an exception that
// escaped a job or timer callback (as node, that ends the run), or stopped
// when the deadline passed.
func (in *instance) loop(p uint32) (exc uint32, stopped bool) {
	for {
		if exc := in.drainJobs(); exc != 0 {
			return exc, in.interrupted
		}
		if in.interrupted {
			return 0, true
		}
		if p != 0 && in.promiseState(p) != promisePending {
			return 0, false
		}
		t, ok := in.timers.next()
		if !ok {
			return 0, false
		}
		if !in.sleepUntil(t.due) {
			in.timedOut = true
			return 0, true
		}
		in.timers.take(t)
		id := in.newFloat64(t.id)
		_, exc := in.callJS(in.methods.Fire, in.prelude, id)
		in.freeValue(id)
		if exc != 0 {
			return exc, in.interrupted
		}
	}
}

// sleepUntil waits for due, or reports false if Run's context ends first.
func (in *instance) sleepUntil(due time.Time) bool {
	d := time.Until(due)
	if d <= 0 {
		return in.run.Err() == nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-in.run.Done():
		return false
	}
}

// drainJobs runs every pending promise job and returns the exception one
// of them threw (only an uncatchable one, or an out-of-memory, can escape a
// job: ordinary ones reject the job's promise).
func (in *instance) drainJobs() uint32 {
	for !in.interrupted && in.call(in.fn.isJobPending, in.rt) != 0 {
		r := in.call(in.fn.executeJobs, in.rt, ^uint32(0), in.scratch+scratchOutArg)
		// The result is the number of jobs run, or the exception.
		t := in.call(in.fn.typeOf, in.jsctx, r)
		isCount := cString(in.mem, t) == "number"
		in.callv(in.fn.free, t)
		if !isCount {
			return r
		}
		in.freeValue(r)
	}
	return 0
}

// outcome classifies how the run ended. A limit takes precedence over the
// error it caused: the "interrupted" error of QuickJS's interrupt handler,
// or the out-of-memory error (or trap) after a refused heap growth.
func (in *instance) outcome(start time.Time, result renderedValue, jsErr *runtimes.ErrorInfo, trapErr error) runtimes.Outcome {
	out := runtimes.Outcome{Result: result.JSON, ResultType: result.Type, ResultRepr: result.Repr, ExitCode: in.exitCode}
	var exit *sys.ExitError
	switch {
	case in.interrupted || in.timedOut:
		end := time.Now()
		if in.hasDeadline {
			end = in.deadline
		}
		out.Limit, out.Error = runtimes.LimitTimeout, runtimes.TimeoutOutcome(roundDuration(end.Sub(start))).Error
	case in.memoryRefused && (jsErr != nil || trapErr != nil):
		out.Limit = runtimes.LimitMemory
		out.Error = &runtimes.ErrorInfo{
			Type:    "MemoryError",
			Message: fmt.Sprintf("memory: limit of %s reached", runtimes.FormatBytes(int64(in.eng.limit))),
		}
		if jsErr != nil {
			out.Error.Traceback = jsErr.Traceback
		}
	case errors.As(trapErr, &exit):
		out.ExitCode = int(int32(exit.ExitCode()))
	case trapErr != nil:
		out.Error = &runtimes.ErrorInfo{Type: "RuntimeError", Message: trapErr.Error()}
	default:
		out.Error = jsErr
	}
	return out
}

// roundDuration makes a deadline read as it was configured: a context made
// with a 2s timeout, a few milliseconds before Run started, reads "2s".
func roundDuration(d time.Duration) time.Duration {
	if d >= time.Second {
		return d.Round(100 * time.Millisecond)
	}
	return d.Round(10 * time.Millisecond)
}

// describe turns a thrown value (a JSValue*) into an ErrorInfo with the
// prelude's describe; should that fail too (no memory, or the deadline), it
// falls back to the value's string form.
func (in *instance) describe(exc uint32) *runtimes.ErrorInfo {
	if !in.interrupted {
		if d, e := in.callJS(in.methods.Describe, in.prelude, exc); e == 0 {
			var info runtimes.ErrorInfo
			if json.Unmarshal([]byte(in.stringOf(d)), &info) == nil {
				return &info
			}
		}
	}
	return &runtimes.ErrorInfo{Type: "Error", Message: in.cStringOf(exc)}
}

// callHost is callFunction: QuickJS calling one of the prelude's host
// functions. It returns a JSValue* to hand back, 0 for undefined.
func (in *instance) callHost(jsctx uint32, argc int32, argv, ref uint32) uint32 {
	arg := func(i int32) uint32 {
		if i >= argc {
			return 0
		}
		return in.call(in.fn.argvGet, argv, uint32(i))
	}
	number := func(i int32) float64 {
		p := arg(i)
		if p == 0 {
			return 0
		}
		return api.DecodeF64(in.call64(in.fn.getFloat64, jsctx, p))
	}
	switch ref {
	case refWrite:
		fd, text := number(0), in.stringOf(arg(1))
		if number(2) != 0 {
			text += "\x00"
		}
		w := in.streams.Stdout
		if fd == 2 {
			w = in.streams.Stderr
		}
		if w != nil && text != "" {
			_, _ = w.Write([]byte(text))
		}
	case refSchedule:
		in.timers.schedule(number(0), time.Now().Add(time.Duration(number(1)*float64(time.Millisecond))))
	case refCancel:
		in.timers.cancel(number(0))
	}
	return 0
}

// ---- calls into the guest. Each panics with trap on failure.

func (in *instance) call64(f api.Function, args ...uint32) uint64 {
	params := make([]uint64, len(args))
	for i, a := range args {
		params[i] = uint64(a)
	}
	return in.callRaw(f, params...)
}

// callRaw takes parameters as wazero encodes them (for a float64 one).
func (in *instance) callRaw(f api.Function, params ...uint64) uint64 {
	res, err := f.Call(in.ctx, params...)
	if err != nil {
		panic(trap{err})
	}
	if len(res) == 0 {
		return 0
	}
	return res[0]
}

func (in *instance) call(f api.Function, args ...uint32) uint32 {
	return uint32(in.call64(f, args...))
}

func (in *instance) callv(f api.Function, args ...uint32) {
	in.call64(f, args...)
}

func (in *instance) malloc(n uint32) uint32 {
	p := in.call(in.fn.malloc, n)
	if p == 0 {
		panic(trap{errNoMemory})
	}
	return p
}

// mallocString copies s into the guest as a NUL-terminated string.
func (in *instance) mallocString(s string) uint32 {
	p := in.malloc(uint32(len(s)) + 1)
	in.mem.WriteString(p, s)
	in.mem.WriteByte(p+uint32(len(s)), 0)
	return p
}

func (in *instance) freeValue(v uint32) {
	in.callv(in.fn.freeValue, in.jsctx, v)
}

// newFloat64 makes a JSValue* number.
func (in *instance) newFloat64(f float64) uint32 {
	return uint32(in.callRaw(in.fn.newFloat64, uint64(in.jsctx), api.EncodeF64(f)))
}

// newString makes a JSValue* string; s must not contain NUL.
func (in *instance) newString(s string) uint32 {
	p := in.mallocString(s)
	v := in.call(in.fn.newString, in.jsctx, p)
	in.callv(in.fn.free, p)
	return v
}

// stringOf is the UTF-8 form of a JSValue* string (its toString otherwise).
func (in *instance) stringOf(v uint32) string {
	c := in.call(in.fn.getString, in.jsctx, v)
	if c == 0 {
		return ""
	}
	s := cString(in.mem, c)
	in.callv(in.fn.freeCString, in.jsctx, c)
	return s
}

// cStringOf is stringOf for a value whose toString may itself throw.
func (in *instance) cStringOf(v uint32) string {
	if s := in.stringOf(v); s != "" {
		return s
	}
	return "(an exception that cannot be converted to a string)"
}

func (in *instance) getProp(obj uint32, key string) uint32 {
	k := in.newString(key)
	v := in.call(in.fn.getProp, in.jsctx, obj, k)
	in.freeValue(k)
	return v
}

func (in *instance) setProp(obj uint32, key string, value uint32) {
	k := in.newString(key)
	in.callv(in.fn.setProp, in.jsctx, obj, k, value)
	in.freeValue(k)
}

func (in *instance) promiseState(v uint32) int32 {
	return int32(in.call(in.fn.promiseState, in.jsctx, v))
}

// callJS calls function f with this and args (JSValue*s, at most
// maxCallArgs) and returns the result, or the exception it threw.
func (in *instance) callJS(f, this uint32, args ...uint32) (result, exc uint32) {
	if len(args) > maxCallArgs {
		panic(fmt.Sprintf("javascript: callJS with %d arguments, the scratch buffer holds %d", len(args), maxCallArgs))
	}
	for i, a := range args {
		in.mem.WriteUint32Le(in.scratch+uint32(4*i), a)
	}
	return in.valueOrException(in.call(in.fn.call, in.jsctx, f, this, uint32(len(args)), in.scratch))
}

// valueOrException returns r, a JSValue* a call into QuickJS returned, or,
// when r is the exception marker, frees it and returns the exception.
func (in *instance) valueOrException(r uint32) (result, exc uint32) {
	if e := in.call(in.fn.resolveException, in.jsctx, r); e != 0 {
		in.freeValue(r)
		return 0, e
	}
	return r, 0
}

// evalScript evaluates code as a global script named file, and returns its
// value or the exception (a syntax error, or with evalFlagAsync only that:
// run-time errors reject the returned promise).
func (in *instance) evalScript(code, file string, flags uint32) (result, exc uint32) {
	// QuickJS's parser wants a NUL after the code, even with a length.
	src := in.malloc(uint32(len(code)) + 1)
	in.mem.WriteString(src, code)
	in.mem.WriteByte(src+uint32(len(code)), 0)
	filename := in.mallocString(file)
	r := in.call(in.fn.eval, in.jsctx, src, uint32(len(code)), filename, 0, flags)
	in.callv(in.fn.free, src)
	in.callv(in.fn.free, filename)
	return in.valueOrException(r)
}
