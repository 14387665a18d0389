package supervisor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
	"unicode/utf8"

	"capsule/ipc"
	"capsule/runtimes"
	"capsule/runtimes/fileset"
	"capsule/supervisor/scarcity"
)

// One call on its worker: the request and the files passed in go out, the
// worker's frames come back into an Answer, with the output and files
// limits enforced here (the worker's own caps are not trusted).

// run sends the request to a ready worker and collects its answer, killing
// it at the deadline or when ctx is cancelled.
func (s *Supervisor) run(ctx context.Context, p *process, req Request, timeout time.Duration) *Answer {
	col := newCollector(int64(s.cfg.Limits.MaxOutput))
	col.files = newFileCollector(s.filesOutLimits())
	if err := sendRequest(p, req, timeout); err != nil {
		return col.answer(nil, fmt.Errorf("sending the request: %w", p.describeEnd(err)))
	}
	// The frames are read on this goroutine, with the deadline, the
	// cancellation and the shutdown all turned into a read deadline: every
	// goroutine hand-off on this path costs a wake-up, which in a virtual
	// machine is a measurable part of a trivial call.
	defer s.watchMemory(p)()
	_ = p.fromWkr.SetReadDeadline(time.Now().Add(timeout + killGrace))
	interrupt := func() { _ = p.fromWkr.SetReadDeadline(time.Now()) }
	defer context.AfterFunc(ctx, interrupt)()
	defer context.AfterFunc(s.stopped, interrupt)()
	result, err := col.read(p.in)
	switch {
	case err == nil:
		return col.answer(result, nil)
	case errors.Is(err, errWorkerEnded):
		end := p.exitError()
		s.log.Debug("worker ended without answering", "language", p.language, "how", end, "stderr", p.stderr.String())
		return col.answer(nil, end)
	}
	p.kill() // stopped, or it broke the protocol: nothing more it says counts
	switch {
	case !errors.Is(err, os.ErrDeadlineExceeded):
		return col.answer(nil, err)
	case s.stopped.Err() != nil:
		return s.shutdownAnswer(col)
	case ctx.Err() != nil:
		return col.answer(nil, errors.New("the call was cancelled; its worker was killed"))
	}
	o := runtimes.TimeoutOutcome(timeout)
	return col.answer(&ipc.Done{Error: o.Error, Limit: o.Limit}, nil)
}

// sendRequest sends the request and the files passed in. A worker that
// stops reading cannot hold the call past its deadline. The worker's pipes
// are widened only now that it takes a call (files cross them in 64 KiB
// frames): a worker waiting in the pool holds none of the user's pipe
// pages.
func sendRequest(p *process, req Request, timeout time.Duration) error {
	ipc.WidenPipes(ipc.WorkerPipeSize, p.toWorker, p.fromWkr)
	_ = p.toWorker.SetWriteDeadline(time.Now().Add(timeout + killGrace))
	err := p.out.WriteJSON(ipc.TypeRequest, ipc.Request{
		Code:      req.Code,
		Inputs:    req.Inputs,
		TimeoutMS: timeout.Milliseconds(),
		Files:     len(req.Files),
	})
	if err == nil {
		err = p.out.WriteFiles(req.Files)
	}
	return err
}

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

// filesOutLimits are the configured limits on returned files.
func (s *Supervisor) filesOutLimits() fileset.Limits {
	return fileset.Limits{MaxBytes: int64(s.cfg.Limits.MaxFilesOut), MaxFiles: s.cfg.Limits.MaxFilesOutCount}
}

// fileCollector receives the files a worker returns, checking them as
// ipc.FileReceiver does against the configured limits.
type fileCollector struct {
	recv     *ipc.FileReceiver // nil: no file is expected
	lim      fileset.Limits
	files    []fileset.File
	unlisted int64
	done     bool // the worker's Done arrived, and its files were whole
}

func newFileCollector(lim fileset.Limits) fileCollector {
	return fileCollector{recv: ipc.NewFileReceiver(lim, true), lim: lim}
}

func (c *fileCollector) add(f ipc.Frame) error {
	if c.recv == nil {
		return fmt.Errorf("an unexpected %s frame", f.Type)
	}
	return c.recv.Add(f)
}

// finish takes the files once the worker's Done has come.
func (c *fileCollector) finish(d *ipc.Done) error {
	if c.recv == nil {
		return nil
	}
	files, err := c.recv.Files()
	if err != nil {
		return err
	}
	if d.FilesUnlisted > 0 && len(files) < fileset.MaxListed {
		return fmt.Errorf("ipc: %d files unlisted, though only %d were listed", d.FilesUnlisted, len(files))
	}
	c.files, c.unlisted, c.done = files, d.FilesUnlisted, true
	return nil
}

// answer adds the files to a, once the worker's Done has come.
func (c *fileCollector) answer(a *Answer) {
	if c.done {
		a.AddReturnedFiles(c.files, c.unlisted, c.lim)
	}
}
