package ipc

import (
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"capsule/runtimes"
)

// Setup is the supervisor's first frame: everything the worker needs before
// it loads its module and locks itself down.
type Setup struct {
	Protocol int    `json:"protocol"`
	Language string `json:"language"`
	// MemoryBytes caps the guest's linear memory.
	MemoryBytes uint64 `json:"memory_bytes"`
	// MaxOutput caps stdout and stderr, each, in bytes.
	MaxOutput int64 `json:"max_output"`
	// MaxTimeoutMS is the longest execution this worker may be asked to
	// run; its CPU rlimit is derived from it.
	MaxTimeoutMS int64 `json:"max_timeout_ms"`
	// CacheDir is wazero's compilation cache directory, or empty.
	CacheDir string `json:"cache_dir"`
	// Mode is ModeRun, or ModeSnapshot for the trusted worker that writes
	// an interpreter snapshot to SnapshotFD and exits.
	Mode string `json:"mode,omitempty"`
	// SnapshotKey names the snapshot: the one to write (ModeSnapshot), or
	// the one on SnapshotFD to start from (ModeRun). Empty in ModeRun
	// means no snapshot: the interpreter starts cold.
	SnapshotKey string `json:"snapshot_key,omitempty"`
	// ScratchBytes caps the guest's private writable directory.
	ScratchBytes int64 `json:"scratch_bytes"`
	// PythonPath is the operator's directory or zip of pure-Python
	// packages (an absolute path), or empty.
	PythonPath string `json:"python_path,omitempty"`
	// MaxFilesIn bounds the files passed in, all together, in bytes.
	MaxFilesIn int64 `json:"max_files_in"`
	// MaxFilesOut and MaxFilesOutCount bound the files returned: their
	// bytes, all together, and how many are sent (fileset.Limits).
	MaxFilesOut      int64 `json:"max_files_out"`
	MaxFilesOutCount int   `json:"max_files_out_count"`
	// BundledPackages makes the Python runtime's bundled packages
	// importable.
	BundledPackages bool `json:"bundled_packages,omitempty"`
	// Variant names the snapshot variant (the interpreter with more
	// modules imported) a ModeSnapshot worker makes, or a ModeRun worker
	// starts from; empty for the plain interpreter. A variant may run a
	// module of its own (numpy's), which the worker must load.
	Variant string `json:"variant,omitempty"`
}

// Worker modes.
const (
	// ModeRun makes a worker that runs one request.
	ModeRun = ""
	// ModeSnapshot makes a worker that writes an interpreter snapshot and
	// exits; it reads no request and runs no untrusted code.
	ModeSnapshot = "snapshot"
)

// SnapshotFD is the worker's file descriptor of the snapshot image, when
// Setup names one: a sealed, read-only memfd in ModeRun, a writable one in
// ModeSnapshot.
const SnapshotFD = 6

// ImageFD is the worker's file descriptor of the module's compiled image
// (wazero's experimental.WithCompiledImage), given with the snapshot: a
// sealed, read-only memfd in ModeRun, a writable one in ModeSnapshot.
const ImageFD = 7

// Ready says the worker is waiting for its one request.
type Ready struct {
	Protocol int `json:"protocol"`
}

// Failure says the worker could not get ready, and why.
type Failure struct {
	Message string `json:"message"`
}

// Request is the one execution a worker performs.
type Request struct {
	Code      string          `json:"code"`
	Inputs    json.RawMessage `json:"inputs,omitempty"`
	TimeoutMS int64           `json:"timeout_ms"`
	// Files is how many files follow the request (see FileHeader).
	Files int `json:"files,omitempty"`
}

// Done is the worker's last frame: how the execution ended. The counts of
// dropped output are the worker's own; the supervisor keeps its own counts
// too and never trusts these beyond reporting them.
type Done struct {
	// Result, ResultType and ResultRepr are the last expression's value
	// (runtimes.Outcome says what each holds); ResultType is empty when
	// there was none.
	Result        json.RawMessage     `json:"result,omitempty"`
	ResultType    string              `json:"result_type,omitempty"`
	ResultRepr    string              `json:"result_repr,omitempty"`
	Error         *runtimes.ErrorInfo `json:"error,omitempty"`
	Limit         string              `json:"limit,omitempty"`
	ExitCode      int                 `json:"exit_code"`
	StdoutDropped int64               `json:"stdout_dropped"`
	StderrDropped int64               `json:"stderr_dropped"`
	// WorkerCPU is the CPU time the worker spent in each phase of its life
	// up to the answer (see worker.Phase names), for the log.
	WorkerCPU []PhaseCPU `json:"worker_cpu,omitempty"`
	// FilesUnlisted counts the files returned beyond fileset.MaxListed,
	// which the answer only counts.
	FilesUnlisted int64 `json:"files_unlisted,omitempty"`
}

// PhaseCPU is the CPU time of one phase of a worker's life.
type PhaseCPU struct {
	Phase string `json:"phase"`
	// Micros is in microseconds.
	Micros int64 `json:"us"`
}

// maxPhases bounds Done.WorkerCPU.
const maxPhases = 8

// Validate checks a Done frame from an untrusted worker: known limit names,
// valid UTF-8 text, non-negative counts, and a result that is one JSON value
// with a short printable type name.
func (d *Done) Validate() error {
	switch d.Limit {
	case "", runtimes.LimitTimeout, runtimes.LimitMemory, runtimes.LimitOutput, runtimes.LimitScratch:
		// shutdown and code_size are the supervisor's to say, never a worker's.
	default:
		return fmt.Errorf("ipc: done frame names unknown limit %q", d.Limit)
	}
	if d.StdoutDropped < 0 || d.StderrDropped < 0 || d.FilesUnlisted < 0 {
		return fmt.Errorf("ipc: done frame has negative counts")
	}
	if d.Error != nil {
		for _, s := range []string{d.Error.Type, d.Error.Message, d.Error.Traceback} {
			if !utf8.ValidString(s) {
				return fmt.Errorf("ipc: done frame error is not valid UTF-8")
			}
		}
	}
	if d.Limit != "" && d.Error == nil {
		return fmt.Errorf("ipc: done frame names limit %q without an error", d.Limit)
	}
	if len(d.WorkerCPU) > maxPhases {
		return fmt.Errorf("ipc: done frame has %d phases, at most %d", len(d.WorkerCPU), maxPhases)
	}
	for _, p := range d.WorkerCPU {
		if len(p.Phase) == 0 || len(p.Phase) > 32 || !isName(p.Phase) || p.Micros < 0 {
			return fmt.Errorf("ipc: done frame has an invalid phase")
		}
	}
	if err := runtimes.CheckResult(d.Result, d.ResultType, d.ResultRepr); err != nil {
		return fmt.Errorf("ipc: done frame: %w", err)
	}
	return nil
}

// Validate checks a Setup frame.
func (s *Setup) Validate() error {
	if s.Protocol != ProtocolVersion {
		return fmt.Errorf("ipc: protocol version %d, this worker speaks %d", s.Protocol, ProtocolVersion)
	}
	if s.Language == "" {
		return fmt.Errorf("ipc: setup names no language")
	}
	if s.MemoryBytes < 64<<10 || s.MaxOutput < 0 || s.MaxTimeoutMS <= 0 || s.ScratchBytes < 0 ||
		s.MaxFilesIn < 0 || s.MaxFilesOut < 0 || s.MaxFilesOutCount < 0 {
		return fmt.Errorf("ipc: setup has invalid limits")
	}
	if s.Mode != ModeRun && s.Mode != ModeSnapshot {
		return fmt.Errorf("ipc: setup names unknown mode %q", s.Mode)
	}
	if s.Mode == ModeSnapshot && s.SnapshotKey == "" {
		return fmt.Errorf("ipc: setup asks for a snapshot without a key")
	}
	if s.Variant != "" && !isName(s.Variant) {
		return fmt.Errorf("ipc: setup names variant %q: a variant's name is lowercase letters and _", s.Variant)
	}
	return nil
}

// isName reports whether s is made of lowercase ASCII letters and '_'.
func isName(s string) bool {
	for _, c := range s {
		if (c < 'a' || c > 'z') && c != '_' {
			return false
		}
	}
	return true
}
