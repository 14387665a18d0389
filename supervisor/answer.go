package supervisor

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"capsule/ipc"
	"capsule/runtimes"
	"capsule/supervisor/scarcity"
)

// Answer is the result of one execution, exactly as the tools return it in
// structuredContent.
type Answer struct {
	Stdout          string              `json:"stdout"`
	Stderr          string              `json:"stderr"`
	Result          json.RawMessage     `json:"result"`
	ResultType      *string             `json:"result_type"`
	ResultRepr      *string             `json:"result_repr"`
	Error           *runtimes.ErrorInfo `json:"error"`
	Limit           *string             `json:"limit"`
	DurationMS      float64             `json:"duration_ms"`
	StdoutTruncated bool                `json:"stdout_truncated"`
	StderrTruncated bool                `json:"stderr_truncated"`
	// Files lists the files returned, if any (files.go).
	Files []FileInfo `json:"files,omitempty"`

	// Not part of the structured result. The text shows the counts of
	// bytes dropped; the MCP edge's answer limit (supervisor/mcp) cuts
	// the texts and withholds files through them.

	// StdoutDropped and StderrDropped count the bytes of each stream
	// that were dropped, by the output limit or the answer limit.
	StdoutDropped int64 `json:"-"`
	StderrDropped int64 `json:"-"`
	// Returned holds the returned files' contents, beyond Files.
	Returned FileReturns `json:"-"`
	// AnswerNote says what the answer limit cut or left out when another
	// limit holds the answer's error; the text shows it last.
	AnswerNote string `json:"-"`

	exitCode  int
	workerCPU []ipc.PhaseCPU // as the worker reported it, for the log
	variant   string         // the snapshot variant the worker started from, for the log
	// limitNote is the text's line on the limit that was hit (limittext.go).
	limitNote string
}

// LimitNote is one line naming the limit the call hit, its size and what
// changes it; empty when it hit none.
func (a *Answer) LimitNote() string { return a.limitNote }

// ExitCode is the guest's exit status (Python's SystemExit); zero otherwise.
func (a *Answer) ExitCode() int { return a.exitCode }

// IsError reports whether the tool result is an error: an uncaught
// exception, a syntax error, a limit, or a worker failure.
func (a *Answer) IsError() bool { return a.Error != nil || a.Limit != nil }

func errorAnswer(typ, msg string) *Answer {
	return &Answer{Error: &runtimes.ErrorInfo{Type: typ, Message: msg}}
}

func limitAnswer(limit, typ, msg string) *Answer {
	a := errorAnswer(typ, msg)
	a.Limit = &limit
	return a
}

// Text renders the answer for the tool's text content: stdout; then stderr,
// marked, if any; then the result; on error the traceback; and a line for
// each stream that was cut.
func (a *Answer) Text() string {
	var b strings.Builder
	section := func(title, body string) {
		if b.Len() > 0 && !strings.HasSuffix(b.String(), "\n") {
			b.WriteByte('\n')
		}
		if title != "" {
			b.WriteString(title)
			b.WriteByte('\n')
		}
		b.WriteString(body)
	}
	if a.Stdout != "" {
		section("", a.Stdout)
	}
	if a.StdoutTruncated {
		section("", fmt.Sprintf("[stdout truncated: %d bytes dropped]", a.StdoutDropped))
	}
	if a.Stderr != "" || a.StderrTruncated {
		section("[stderr]", a.Stderr)
	}
	if a.StderrTruncated {
		section("", fmt.Sprintf("[stderr truncated: %d bytes dropped]", a.StderrDropped))
	}
	if shown, ok := a.ShownResult(); ok {
		section("[result]", shown)
	}
	if a.Error != nil {
		body := a.Error.Traceback
		if body == "" {
			body = a.Error.Message
			if a.Error.Type != "" && !strings.HasPrefix(body, a.Error.Type) && a.Limit == nil {
				body = a.Error.Type + ": " + body
			}
		}
		section("[error]", body)
	}
	if a.exitCode != 0 {
		section("", fmt.Sprintf("[exit code %d]", a.exitCode))
	}
	if len(a.Files) > 0 || a.Returned.Unlisted > 0 {
		section("[files]", a.filesText())
	}
	if a.limitNote != "" {
		section("", a.limitNote)
	}
	if a.AnswerNote != "" {
		section("", a.AnswerNote)
	}
	if b.Len() == 0 {
		return "[no output and no result]"
	}
	return b.String()
}

// ShownResult is the result as the language's REPL shows it, and whether
// it shows one: Python's repr, node's util.inspect form; nothing for no
// last expression, None or undefined.
func (a *Answer) ShownResult() (string, bool) {
	if a.ResultRepr == nil || silentResult[*a.ResultType] {
		return "", false
	}
	return *a.ResultRepr, true
}

// silentResult are the result types the text leaves out, as the REPLs do
// for Python's None (node shows undefined, but a JavaScript script's
// completion value is undefined after any statement, so it says nothing).
// structuredContent still has them.
var silentResult = map[string]bool{"NoneType": true, "undefined": true}

// errWorkerEnded marks a worker that closed its pipe without a Done frame.
var errWorkerEnded = errors.New("worker ended without answering")

// collector gathers a worker's frames into an Answer, enforcing the output
// limit itself: the worker's caps are not trusted.
type collector struct {
	max    int64
	stdout capped
	stderr capped
	files  fileCollector
}

func newCollector(max int64) *collector {
	return &collector{max: max, stdout: capped{max: max}, stderr: capped{max: max}}
}

// read consumes frames until Done, a protocol error, or the end of the
// stream.
func (c *collector) read(in *ipc.Reader) (*ipc.Done, error) {
	for {
		f, err := in.Next()
		if err == io.EOF {
			return nil, errWorkerEnded
		}
		if err != nil {
			return nil, fmt.Errorf("worker sent a bad frame: %w", err)
		}
		switch f.Type {
		case ipc.TypeStdout:
			c.stdout.write(f.Payload)
		case ipc.TypeStderr:
			c.stderr.write(f.Payload)
		case ipc.TypeFile, ipc.TypeFileData:
			if err := c.files.add(f); err != nil {
				return nil, fmt.Errorf("worker sent a bad frame: %w", err)
			}
		case ipc.TypeDone:
			var d ipc.Done
			if err := ipc.DecodeJSON(f, &d); err != nil {
				return nil, fmt.Errorf("worker sent a bad frame: %w", err)
			}
			if err := d.Validate(); err != nil {
				return nil, fmt.Errorf("worker sent a bad frame: %w", err)
			}
			if err := c.files.finish(&d); err != nil {
				return nil, fmt.Errorf("worker sent a bad frame: %w", err)
			}
			return &d, nil
		default:
			return nil, fmt.Errorf("worker sent an unexpected %s frame", f.Type)
		}
	}
}

// answer builds the Answer from what was collected and how the worker
// ended: with a Done frame, or with failure (err).
func (c *collector) answer(d *ipc.Done, failure error) *Answer {
	a := &Answer{
		Stdout:        c.stdout.String(),
		Stderr:        c.stderr.String(),
		StdoutDropped: c.stdout.dropped,
		StderrDropped: c.stderr.dropped,
	}
	if d != nil {
		a.Result = d.Result
		if d.ResultType != "" {
			a.ResultType, a.ResultRepr = &d.ResultType, &d.ResultRepr
		}
		a.Error = d.Error
		if d.Limit != "" {
			limit := d.Limit
			a.Limit = &limit
		}
		a.exitCode = d.ExitCode
		a.workerCPU = d.WorkerCPU
		a.StdoutDropped += d.StdoutDropped
		a.StderrDropped += d.StderrDropped
	}
	var memErr *memoryLimitError
	var scarce *scarcity.Error
	switch {
	case errors.As(failure, &scarce):
		a.Error = &runtimes.ErrorInfo{Type: "ServerBusy", Message: scarce.Error()}
	case errors.As(failure, &memErr):
		limit := runtimes.LimitMemory
		a.Limit = &limit
		a.Error = &runtimes.ErrorInfo{Type: "MemoryError", Message: memErr.Error()}
	case failure != nil:
		a.Error = &runtimes.ErrorInfo{Type: "WorkerError", Message: failure.Error()}
	}
	a.StdoutTruncated = a.StdoutDropped > 0
	a.StderrTruncated = a.StderrDropped > 0
	if a.Limit == nil && (a.StdoutTruncated || a.StderrTruncated) {
		limit := runtimes.LimitOutput
		a.Limit = &limit
		if a.Error == nil {
			a.Error = &runtimes.ErrorInfo{
				Type:    "OutputLimitError",
				Message: fmt.Sprintf("output: more than %s was written to stdout or stderr; the rest was dropped", runtimes.FormatBytes(c.max)),
			}
		}
	}
	if failure == nil {
		c.files.answer(a)
	}
	return a
}

// capped keeps the first max bytes written to it, at a character boundary,
// and counts the rest.
type capped struct {
	max     int64
	buf     []byte
	dropped int64
}

func (c *capped) write(p []byte) {
	room := c.max - int64(len(c.buf))
	if room < 0 {
		room = 0
	}
	keep := int64(len(p))
	if keep > room {
		keep = room
		for keep > 0 && !utf8.RuneStart(p[keep]) {
			keep--
		}
		c.max = int64(len(c.buf)) + keep // nothing more fits after a cut
	}
	c.buf = append(c.buf, p[:keep]...)
	c.dropped += int64(len(p)) - keep
}

// String returns the kept text; invalid UTF-8 from the guest becomes U+FFFD
// so the JSON answer is always well-formed.
func (c *capped) String() string { return strings.ToValidUTF8(string(c.buf), "\uFFFD") }
