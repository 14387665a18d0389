// Package worker is the child side of capsule: a short-lived process that
// loads one language's module, locks itself down, prepares an interpreter,
// and then runs exactly one piece of untrusted code.
//
// The worker is the same binary as the supervisor, started as `capsule
// worker` with its ipc pipes on file descriptors 3 (from the supervisor) and
// 4 (to the supervisor). Its stdin and stdout are not used; its stderr is
// read by the supervisor for diagnostics.
package worker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"capsule/ipc"
	"capsule/runtimes"
	"capsule/runtimes/fileset"
)

// File descriptors of the ipc pipes, as arranged by the supervisor through
// exec.Cmd.ExtraFiles.
const (
	fdFromSupervisor = 3
	fdToSupervisor   = 4
)

// maxRequestFrame bounds what the worker reads from the supervisor. The
// supervisor is trusted and enforces the real code-size limit; this only
// keeps a broken peer from making the worker allocate without bound.
const maxRequestFrame = 256 << 20

// ErrNotStartedBySupervisor is returned when the worker's ipc pipes are
// missing, which means someone ran `capsule worker` by hand.
var ErrNotStartedBySupervisor = errors.New("capsule worker is started by capsule itself (serve or exec) and needs its ipc pipes on file descriptors 3 and 4; run `capsule exec` to try code by hand")

// Main runs the worker, with languages the table of the languages it
// may be asked to run (cmd/capsule's). It returns the process exit status.
func Main(languages runtimes.Languages) int {
	if !isPipe(fdFromSupervisor) || !isPipe(fdToSupervisor) {
		fmt.Fprintln(os.Stderr, ErrNotStartedBySupervisor)
		return 2
	}
	in := os.NewFile(fdFromSupervisor, "ipc-from-supervisor")
	out := os.NewFile(fdToSupervisor, "ipc-to-supervisor")
	if err := run(languages, ipc.NewReader(in, maxRequestFrame), ipc.NewWriter(out)); err != nil {
		fmt.Fprintln(os.Stderr, "capsule worker:", err)
		return 1
	}
	return 0
}

func isPipe(fd int) bool {
	var st unix.Stat_t
	return unix.Fstat(fd, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFIFO
}

// run is one worker's whole life: setup, lockdown, ready, one request, done.
func run(languages runtimes.Languages, in *ipc.Reader, out *ipc.Writer) error {
	cpu := phaseClock{}
	cpu.mark(PhaseStart)
	ctx := context.Background()
	var setup ipc.Setup
	if err := readJSON(in, ipc.TypeSetup, &setup); err != nil {
		return err
	}
	if setup.Mode == ipc.ModeSnapshot {
		err := writeSnapshot(ctx, languages, &setup)
		if err != nil {
			_ = out.WriteJSON(ipc.TypeFailure, ipc.Failure{Message: err.Error()})
			return err
		}
		return out.WriteJSON(ipc.TypeReady, ipc.Ready{Protocol: ipc.ProtocolVersion})
	}
	inst, stdout, stderr, err := prepare(ctx, languages, &setup, out, &cpu)
	if err != nil {
		// Tell the supervisor why; it turns this into the tool's answer.
		_ = out.WriteJSON(ipc.TypeFailure, ipc.Failure{Message: err.Error()})
		return err
	}
	delayStart()
	if err := out.WriteJSON(ipc.TypeReady, ipc.Ready{Protocol: ipc.ProtocolVersion}); err != nil {
		return err
	}

	var req ipc.Request
	if err := readJSON(in, ipc.TypeRequest, &req); err != nil {
		return err
	}
	files, err := readFiles(in, inst, &req, &setup)
	if err != nil {
		return err
	}
	cpu.mark(PhaseWait)
	injectFault(req.Code, out)
	timeout := time.Duration(req.TimeoutMS) * time.Millisecond
	if req.TimeoutMS <= 0 || req.TimeoutMS > setup.MaxTimeoutMS {
		timeout = time.Duration(setup.MaxTimeoutMS) * time.Millisecond
	}

	var once sync.Once
	finish := func(o runtimes.Outcome) error {
		var err error
		once.Do(func() {
			// Flush output and send the files before Done: the
			// supervisor stops reading at Done.
			err = errors.Join(stdout.flush(), stderr.flush(), out.WriteFiles(o.Files))
			o = bound(o, setup.MaxOutput)
			cpu.mark(PhaseRun)
			done := ipc.Done{
				WorkerCPU:     cpu.phases,
				Result:        o.Result,
				ResultType:    o.ResultType,
				ResultRepr:    o.ResultRepr,
				Error:         o.Error,
				Limit:         o.Limit,
				ExitCode:      o.ExitCode,
				StdoutDropped: stdout.droppedBytes(),
				StderrDropped: stderr.droppedBytes(),
				FilesUnlisted: o.FilesUnlisted,
			}
			err = errors.Join(err, out.WriteJSON(ipc.TypeDone, done))
		})
		return err
	}

	// Run returns at the deadline, with the files the code left: CPython,
	// which cannot be interrupted, is given up on and ended by this
	// process's exit. Should Run not return even then (JavaScript stuck in
	// one long native operation), answer with what was printed, without
	// files, and exit. The supervisor's kill is the backstop should this
	// process be unable to even do that.
	timer := time.AfterFunc(timeout+answerGrace, func() {
		_ = finish(runtimes.TimeoutOutcome(timeout))
		os.Exit(0)
	})
	runCtx, cancel := context.WithTimeout(ctx, timeout)
	o, probed := probeMemory(runCtx, req.Code, runtimes.Streams{Stdout: stdout, Stderr: stderr})
	if !probed {
		o = inst.Run(runCtx, runtimes.Request{Code: req.Code, Inputs: req.Inputs, Files: files})
	}
	cancel()
	timer.Stop()
	if o.Limit == runtimes.LimitTimeout {
		// Whoever stopped it, the answer names the configured limit.
		t := runtimes.TimeoutOutcome(timeout)
		t.Files, t.FilesUnlisted = o.Files, o.FilesUnlisted
		o = t
	}
	return finish(o)
}

// readFiles reads the files passed in after the request, into the
// instance's own memory when it can take them there.
func readFiles(in *ipc.Reader, inst runtimes.Instance, req *ipc.Request, setup *ipc.Setup) ([]fileset.File, error) {
	var buffer ipc.BufferFunc
	if r, ok := inst.(runtimes.FileReceiver); ok {
		buffer = r.FileBuffer
	}
	return ipc.ReadFiles(in, req.Files, fileset.Limits{MaxBytes: setup.MaxFilesIn, MaxFiles: req.Files}, buffer)
}

// answerGrace is how long past the deadline Run may take to return with
// the files the code left, before the worker answers without them. The
// supervisor waits longer (its killGrace).
const answerGrace = 250 * time.Millisecond

// bound keeps an outcome within the output limit, so that a huge result or
// exception message cannot make a frame the supervisor will refuse.
func bound(o runtimes.Outcome, max int64) runtimes.Outcome {
	if n := len(o.Result) + len(o.ResultRepr); int64(n) > max && o.Limit == "" {
		o.Result, o.ResultType, o.ResultRepr = nil, "", ""
		o.Limit = runtimes.LimitOutput
		o.Error = &runtimes.ErrorInfo{
			Type:    "OutputLimitError",
			Message: fmt.Sprintf("output: the result is %d bytes as JSON and as text, over the %s limit; print part of it instead", n, runtimes.FormatBytes(max)),
		}
	}
	if o.Error != nil {
		e := *o.Error
		e.Type = truncate(e.Type, 256)
		e.Message = truncate(e.Message, int(max))
		e.Traceback = truncate(e.Traceback, int(max))
		o.Error = &e
	}
	return o
}

// truncate cuts s to at most n bytes at a character boundary, marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + fmt.Sprintf("... [%d bytes cut]", len(s)-n)
}

// prepare loads the module, applies the lockdown and starts the
// interpreter, in that order: compilation needs executable memory, which
// the lockdown forbids, and the interpreter's start-up is trusted code that
// may as well run under the filter it will live with.
func prepare(ctx context.Context, languages runtimes.Languages, setup *ipc.Setup, out *ipc.Writer, cpu *phaseClock) (runtimes.Instance, *stream, *stream, error) {
	if err := setup.Validate(); err != nil {
		return nil, nil, nil, err
	}
	cfg := runtimeConfig(setup)
	if setup.SnapshotKey != "" {
		// Close-on-exec marks it as the worker's own: the lockdown closes
		// every inherited descriptor that is not (closeInheritedFiles).
		unix.CloseOnExec(ipc.SnapshotFD)
		cfg.Snapshot = os.NewFile(ipc.SnapshotFD, "snapshot")
		cfg.SnapshotKey = setup.SnapshotKey
		image, err := mapImage(ipc.ImageFD)
		if err != nil {
			return nil, nil, nil, err
		}
		cfg.CompiledImage = image
	}
	engine, err := compile(ctx, languages, setup.Language, cfg)
	if err == nil {
		err = prepareFaults(ctx, cfg)
	}
	if err != nil {
		return nil, nil, nil, err
	}
	cpu.mark(PhaseCompile)
	if err := harden(setup); err != nil {
		return nil, nil, nil, err
	}
	cpu.mark(PhaseLockdown)
	stdout := newStream(out, ipc.TypeStdout, setup.MaxOutput)
	stderr := newStream(out, ipc.TypeStderr, setup.MaxOutput)
	inst, err := engine.Prepare(ctx, runtimes.Streams{Stdout: stdout, Stderr: stderr})
	if err != nil {
		return nil, nil, nil, fmt.Errorf("%s: starting the interpreter: %w", setup.Language, err)
	}
	cpu.mark(PhaseInterpreter)
	return inst, stdout, stderr, nil
}

// runtimeConfig is the runtime's configuration from setup, for a run
// worker and a snapshot worker alike; each adds where its module and
// snapshot come from.
func runtimeConfig(setup *ipc.Setup) runtimes.Config {
	return runtimes.Config{
		MemoryLimitBytes: setup.MemoryBytes,
		CacheDir:         setup.CacheDir,
		ScratchBytes:     setup.ScratchBytes,
		PythonPath:       setup.PythonPath,
		FilesOut:         fileset.Limits{MaxBytes: setup.MaxFilesOut, MaxFiles: setup.MaxFilesOutCount},
		BundledPackages:  setup.BundledPackages,
		Variant:          setup.Variant,
	}
}

// writeSnapshot is the whole work of a ModeSnapshot worker: load or compile
// the module (compileForSnapshot), start an interpreter, write its image
// to the snapshot descriptor. A variant's worker loads the plain
// snapshot's compiled image it is given instead (or, for a variant with a
// module of its own, that module's, as a plain one does), and imports the
// variant's packages after the start-up. It reads no request and runs
// nothing untrusted, so it needs no lockdown beyond the supervisor's
// namespaces.
func writeSnapshot(ctx context.Context, languages runtimes.Languages, setup *ipc.Setup) error {
	if err := setup.Validate(); err != nil {
		return err
	}
	l, err := lookup(languages, setup.Language)
	if err != nil {
		return err
	}
	cfg := runtimeConfig(setup)
	var engine runtimes.Engine
	if setup.Variant == "" || l.HasOwnModule(setup.Variant) {
		// At the normal priority, also for a variant with a module of its
		// own: the call that asked for it waits for it.
		engine, err = compileForSnapshot(ctx, l, cfg, os.NewFile(ipc.ImageFD, "compiled image"))
	} else {
		engine, err = compileForVariant(ctx, l, cfg)
	}
	if err != nil {
		return err
	}
	s, ok := engine.(runtimes.Snapshotter)
	if !ok {
		return fmt.Errorf("%s: this runtime cannot be snapshotted", setup.Language)
	}
	f := os.NewFile(ipc.SnapshotFD, "snapshot")
	if err := s.WriteSnapshot(ctx, f, setup.SnapshotKey); err != nil {
		return fmt.Errorf("%s: writing the snapshot: %w", setup.Language, err)
	}
	return nil
}

// readJSON reads the next frame, which must be of type want.
func readJSON(in *ipc.Reader, want ipc.Type, v any) error {
	f, err := in.Next()
	if err != nil {
		if err == io.EOF {
			return fmt.Errorf("supervisor closed the pipe before the %s frame", want)
		}
		return err
	}
	if f.Type != want {
		return fmt.Errorf("expected a %s frame, got %s", want, f.Type)
	}
	return ipc.DecodeJSON(f, v)
}

// Phases of a worker's life, as reported in ipc.Done.WorkerCPU.
const (
	// PhaseStart is exec, the Go runtime and package initialisation.
	PhaseStart = "start"
	// PhaseCompile is loading the compiled module (or compiling it).
	PhaseCompile = "compile"
	// PhaseLockdown is the OS lockdown.
	PhaseLockdown = "lockdown"
	// PhaseInterpreter is instantiating the module and restoring (or
	// starting) the interpreter.
	PhaseInterpreter = "interpreter"
	// PhaseWait is waiting for the request, in the pool.
	PhaseWait = "wait"
	// PhaseRun is running the code, up to the answer.
	PhaseRun = "run"
)

// phaseClock records the process's CPU time spent in each phase.
type phaseClock struct {
	last   time.Duration
	phases []ipc.PhaseCPU
}

// mark ends phase at the CPU time used so far.
func (c *phaseClock) mark(phase string) {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_PROCESS_CPUTIME_ID, &ts) != nil {
		return
	}
	now := time.Duration(ts.Nano())
	c.phases = append(c.phases, ipc.PhaseCPU{Phase: phase, Micros: (now - c.last).Microseconds()})
	c.last = now
}

// mapImage maps the compiled image the supervisor gave on fd, privately
// and read-only (wazero makes its code executable in place, before the
// lockdown forbids that), and closes fd: the mapping keeps the image.
func mapImage(fd int) ([]byte, error) {
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, fmt.Errorf("compiled image: %w", err)
	}
	b, err := unix.Mmap(fd, 0, int(st.Size), unix.PROT_READ, unix.MAP_PRIVATE)
	if err != nil {
		return nil, fmt.Errorf("compiled image: mmap: %w", err)
	}
	return b, nil
}
