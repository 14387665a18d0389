// Package runtimes defines what every language runtime gives the worker:
// a compiled engine that can prepare a fresh interpreter instance ahead of
// time, and an instance that runs exactly one piece of code.
//
// The split between Engine.Prepare and Instance.Run is what lets a worker be
// made ready (module loaded, lockdown applied, interpreter started) before
// the untrusted code arrives.
package runtimes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/tetratelabs/wazero/experimental"

	"capsule/runtimes/fileset"
	"capsule/runtimes/internal/guestmem"
)

// Language names, as used on the command line, in the ipc protocol and in
// tool names.
const (
	Python     = "python"
	JavaScript = "javascript"
)

// Limit names reported in Outcome.Limit and in the tool's structured result.
const (
	LimitTimeout  = "timeout"
	LimitMemory   = "memory"
	LimitOutput   = "output"
	LimitCodeSize = "code_size"
	// LimitScratch is the size of the private scratch directory.
	LimitScratch = "scratch"
	// LimitFilesIn is the size of the files passed in, all together.
	LimitFilesIn = "files_in"
	// LimitFilesOut is the size and number of the files returned.
	LimitFilesOut = "files_out"
	// LimitShutdown is the server's shutdown grace period: the call was
	// still running when it ended.
	LimitShutdown = "shutdown"
	// LimitAnswer is the size of an MCP answer, encoded: what did not fit
	// was cut or left out.
	LimitAnswer = "answer"
)

// Config is what a runtime needs to compile its module. It is fixed for the
// lifetime of a worker process.
type Config struct {
	// MemoryLimitBytes caps the guest's linear memory. It is rounded down to
	// whole 64 KiB wasm pages.
	MemoryLimitBytes uint64
	// CacheDir is wazero's file compilation cache directory. Empty means no
	// file cache (compile in memory).
	CacheDir string
	// Snapshot, when set, is an image of an interpreter taken right after
	// its start-up (see runtimes/internal/snapshot): every instance starts
	// from it instead of running the start-up. SnapshotKey is the key the
	// image must have been made for.
	Snapshot    *os.File
	SnapshotKey string
	// CompiledImage, when set, is a mapping of the module's compiled image
	// (wazero's experimental.WithCompiledImage): the compiled code runs
	// from it in place, with nothing decoded, validated or copied that a
	// compiled module does not need. ImageWriter, when set, receives that
	// image once the module is compiled.
	CompiledImage []byte
	ImageWriter   io.Writer
	// ScratchBytes caps the guest's private writable directory (Python's
	// /tmp), held in the worker's memory.
	ScratchBytes int64
	// PythonPath is the operator's directory or zip of pure-Python
	// packages, or empty.
	PythonPath string
	// FilesOut bounds the files a run returns.
	FilesOut fileset.Limits
	// BundledPackages makes the pure-Python packages embedded with the
	// Python runtime importable (runtimes/python/bundle.sh).
	BundledPackages bool
	// Variant names the snapshot variant (the interpreter with more
	// modules imported at its start-up, Python's python.Variants) that
	// WriteSnapshot makes or a run starts from; a variant with a module of
	// its own also picks the module Compile loads. Empty for the plain
	// interpreter, the only one a runtime without variants has.
	Variant string
}

// GuardPages reports whether guest memories are guard-page reservations and
// modules are compiled without bounds checks for them (guestmem.GuardPages):
// where the platform has wazero's fault handler (linux/amd64 and
// linux/arm64) and 8 GiB of address space can be reserved. The same in every process of one host and
// binary, and part of the key of anything compiled.
func GuardPages() bool { return guestmem.GuardPages() }

// CompileContext is the context a runtime compiles its own module under,
// carrying cfg's compiled image or image writer, and compiling for
// guard-page memories where instances get them (guestmem.GuardPages): the
// module's loads and stores then have no bounds checks.
func (cfg Config) CompileContext(ctx context.Context) context.Context {
	if GuardPages() {
		ctx = experimental.WithMemoryGuardPages(ctx)
	}
	if cfg.CompiledImage != nil {
		ctx = experimental.WithCompiledImage(ctx, cfg.CompiledImage)
	}
	if cfg.ImageWriter != nil {
		ctx = experimental.WithCompiledImageWriter(ctx, cfg.ImageWriter)
	}
	return ctx
}

// Streams receive the guest's standard output and standard error. Writes must
// not fail the guest: capping and counting is the writer's job.
type Streams struct {
	Stdout io.Writer
	Stderr io.Writer
}

// Engine is one language's compiled module inside one process.
type Engine interface {
	// Prepare instantiates the module and starts the interpreter up to the
	// point where it waits for code. It must not run any user code.
	Prepare(ctx context.Context, streams Streams) (Instance, error)
	// Close releases the compiled module and its runtime.
	Close(ctx context.Context) error
}

// Snapshotter is an Engine that can write an image of an interpreter right
// after its start-up, for Config.Snapshot.
type Snapshotter interface {
	// WriteSnapshot starts a fresh interpreter, as Prepare does without a
	// snapshot, and writes its image to f under key.
	WriteSnapshot(ctx context.Context, f *os.File, key string) error
}

// Instance is one prepared interpreter. Run is called at most once.
type Instance interface {
	// Run executes req and reports how it ended. The deadline of ctx is the
	// execution's wall-clock limit; a runtime that can stop its guest
	// cooperatively reports LimitTimeout, otherwise the worker's own timer
	// ends the process.
	Run(ctx context.Context, req Request) Outcome
	// Close discards the instance.
	Close(ctx context.Context) error
}

// FileReceiver is an Instance that can take the content of the files
// passed in straight into its guest's memory: the worker receives each file
// into the buffer FileBuffer returns, and passes it to Run in
// Request.Files. Megabytes copied onto a fresh process's new pages cost
// more than anything else about a file passed in.
type FileReceiver interface {
	// FileBuffer returns an empty slice with capacity size for a file's
	// content, or nil when the instance cannot hold it (the caller then
	// allocates it). The slice is valid until Close.
	FileBuffer(size int64, binary bool) []byte
}

// Request is one execution.
type Request struct {
	// Code is the source text to run.
	Code string
	// Inputs is an optional JSON object exposed to the code as `inputs`.
	// Nil when absent.
	Inputs json.RawMessage
	// Files are passed in, checked (fileset.Check) and sorted by path:
	// Python finds them in its working directory, JavaScript in the
	// global `files`. Run takes their Data, which the runtime may keep
	// and change rather than copy.
	Files []fileset.File
}

// ErrorInfo describes an uncaught exception or syntax error in the guest.
type ErrorInfo struct {
	Type      string `json:"type"`
	Message   string `json:"message"`
	Traceback string `json:"traceback"`
}

// Outcome is how one execution ended. Standard output and error have already
// gone to the Streams.
type Outcome struct {
	// Result is the value of the last top-level expression as JSON where
	// it maps exactly (ints beyond ±2^53 as decimal strings), else nil.
	Result json.RawMessage
	// ResultType names the value's type as the language does (int, tuple,
	// Decimal, Map, BigInt, NoneType, undefined); empty means there was no
	// last expression, and then Result and ResultRepr are empty too.
	ResultType string
	// ResultRepr is the value as the language's REPL shows it: Python's
	// repr, node's util.inspect for JavaScript.
	ResultRepr string
	// Error is set for an uncaught exception, a syntax error, or a limit.
	Error *ErrorInfo
	// Limit names the limit that was hit, or is empty.
	Limit string
	// ExitCode is the guest's exit status (Python's SystemExit code); zero
	// for a normal end.
	ExitCode int
	// Files are the files returned (Python's /tmp/outputs, JavaScript's
	// `outputs`) in path order, picked by a fileset.Picker with
	// Config.FilesOut: those that did not fit are Truncated. A file's
	// Data may be a view of the instance's memory, valid until Close.
	Files []fileset.File
	// FilesUnlisted counts returned files beyond fileset.MaxListed.
	FilesUnlisted int64
}

// FormatBytes prints a byte count in the largest binary unit that divides it
// exactly, the way limits are written in flags and messages ("256MiB").
func FormatBytes(n int64) string {
	for _, u := range []struct {
		suffix string
		factor int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n != 0 && n%u.factor == 0 {
			return fmt.Sprintf("%d%s", n/u.factor, u.suffix)
		}
	}
	return fmt.Sprintf("%dB", n)
}

// TimeoutOutcome is the outcome of an execution stopped at its deadline,
// whoever stopped it: the runtime, the worker's timer or the supervisor.
func TimeoutOutcome(timeout time.Duration) Outcome {
	return Outcome{
		Limit: LimitTimeout,
		Error: &ErrorInfo{
			Type:    "TimeoutError",
			Message: fmt.Sprintf("timeout: execution exceeded %s", timeout),
		},
	}
}

// MaxResultType bounds a result's type name.
const MaxResultType = 256

// CheckResult checks the three parts of a result as they come from a guest
// or a worker, neither of which is trusted: JSON that is one valid value,
// a type name that is short printable UTF-8 and present whenever anything
// else is, and a repr that is valid UTF-8.
func CheckResult(result json.RawMessage, typ, repr string) error {
	switch {
	case result != nil && !json.Valid(result):
		return errors.New("the result is not valid JSON")
	case typ == "" && (result != nil || repr != ""):
		return errors.New("a result without a type")
	case len(typ) > MaxResultType || !utf8.ValidString(typ) || strings.ContainsFunc(typ, func(r rune) bool { return !unicode.IsPrint(r) }):
		return errors.New("the result's type name is too long or not printable")
	case !utf8.ValidString(repr):
		return errors.New("the result's repr is not valid UTF-8")
	}
	return nil
}
