package supervisor

import (
	"fmt"
	"strings"
	"time"

	"capsule/ipc"
	"capsule/runtimes"
	"capsule/runtimes/fileset"
)

// FileInfo describes one file a call returned, in structuredContent.
type FileInfo struct {
	// Path is relative to /tmp/outputs (JavaScript: the key in outputs).
	Path     string `json:"path"`
	Size     int64  `json:"size"`
	MIMEType string `json:"mime_type"`
	// Truncated marks a file over the files_out limit: listed, not sent.
	Truncated bool `json:"truncated,omitempty"`
}

// FileReturns is what an Answer keeps of the files returned beyond
// Answer.Files: their contents and kinds, for the tool result's content,
// and how many were not even listed.
type FileReturns struct {
	// Files and Kinds are the files listed, in path order, as Files lists
	// them; a file over a limit is Truncated, without its data.
	Files    []fileset.File
	Kinds    []fileset.Kind
	Unlisted int64
	Limits   fileset.Limits
	// OverAnswer marks the files the answer limit left out; nil when it
	// left none out.
	OverAnswer []bool
}

// filesOutLimits are the configured limits on returned files.
func (s *Supervisor) filesOutLimits() fileset.Limits {
	return fileset.Limits{MaxBytes: int64(s.cfg.Limits.MaxFilesOut), MaxFiles: s.cfg.Limits.MaxFilesOutCount}
}

// checkFiles refuses, before anything runs, files passed in that break a
// path rule or do not fit the limits; nil means they may go.
func (s *Supervisor) checkFiles(req Request) *Answer {
	if len(req.Files) == 0 {
		return nil
	}
	if err := fileset.Check(req.Files); err != nil {
		return errorAnswer("FilesError", err.Error())
	}
	lim := s.cfg.Limits
	if len(req.Files) > lim.MaxFilesInCount {
		return filesCountAnswer(&FilesCountError{N: len(req.Files), Max: lim.MaxFilesInCount})
	}
	n := fileset.TotalLen(req.Files)
	if n > int64(lim.MaxFilesIn) {
		return limitAnswer(runtimes.LimitFilesIn, "FilesInLimitError",
			fmt.Sprintf("files_in: the files passed in are %d bytes in all, over the %s limit", n, lim.MaxFilesIn))
	}
	if req.Language != runtimes.Python {
		return nil
	}
	if lim.Scratch == 0 {
		return errorAnswer("FilesError", "files: this server gives Python no writable directory (--scratch 0), so no file can be passed in")
	}
	if n > int64(lim.Scratch) {
		return limitAnswer(runtimes.LimitScratch, "ScratchLimitError",
			fmt.Sprintf("scratch: the files passed in are %d bytes, over the %s of a Python call's /tmp", n, lim.Scratch))
	}
	return nil
}

// FilesCountError refuses a call that passes in more files than
// --max-files-in-count allows.
type FilesCountError struct {
	N, Max int
}

func (e *FilesCountError) Error() string {
	return fmt.Sprintf("files_in: %s passed in, over the limit of %d per call (--max-files-in-count)",
		Count(int64(e.N), "file is", "files are"), e.Max)
}

// filesCountAnswer refuses a call that passes in too many files.
func filesCountAnswer(e *FilesCountError) *Answer {
	return limitAnswer(runtimes.LimitFilesIn, "FilesInLimitError", e.Error())
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

// AddReturnedFiles lists the files a call returned (in path order, those
// over lim truncated, and unlisted more not even listed) in a, keeping
// their contents for the answer, and names the files_out limit when
// files were left out.
func (a *Answer) AddReturnedFiles(files []fileset.File, unlisted int64, lim fileset.Limits) {
	a.Returned = FileReturns{Files: files, Unlisted: unlisted, Limits: lim}
	truncated := 0
	for _, f := range files {
		k := fileset.ClassifyFile(f)
		a.Files = append(a.Files, FileInfo{Path: f.Path, Size: f.Len(), MIMEType: k.MIME, Truncated: f.Truncated})
		a.Returned.Kinds = append(a.Returned.Kinds, k)
		if f.Truncated {
			truncated++
		}
	}
	if truncated == 0 && unlisted == 0 {
		return
	}
	if a.Limit == nil {
		limit := runtimes.LimitFilesOut
		a.Limit = &limit
		if a.Error == nil {
			a.Error = &runtimes.ErrorInfo{Type: "FilesOutLimitError", Message: a.Returned.limitMessage(truncated)}
		}
	}
}

// limitMessage says which files the files_out limit kept back.
func (r FileReturns) limitMessage(truncated int) string {
	msg := fmt.Sprintf("files_out: %s not sent, over the limit of %s and %s per call; they are listed with truncated: true",
		Count(int64(truncated), "file was", "files were"), runtimes.FormatBytes(r.Limits.MaxBytes), Count(int64(r.Limits.MaxFiles), "file", "files"))
	if r.Unlisted > 0 {
		msg += fmt.Sprintf("; %d more were not even listed (at most %d are)", r.Unlisted, fileset.MaxListed)
	}
	return msg
}

// filesText lists the files returned, for the answer's text.
func (a *Answer) filesText() string {
	var b strings.Builder
	for i, f := range a.Files {
		fmt.Fprintf(&b, "%s (%s, %d bytes)", f.Path, f.MIMEType, f.Size)
		switch {
		case i < len(a.Returned.OverAnswer) && a.Returned.OverAnswer[i]:
			b.WriteString(": not sent, the answer would have been over its limit (--max-answer)")
		case f.Truncated:
			b.WriteString(": not sent, over the files_out limit")
		}
		b.WriteByte('\n')
	}
	if a.Returned.Unlisted > 0 {
		fmt.Fprintf(&b, "[%s more not listed]\n", Count(a.Returned.Unlisted, "file", "files"))
	}
	return b.String()
}

// ReturnedFile is a file a call returned and sent, for capsule exec.
type ReturnedFile struct {
	Path string
	Data []byte
}

// ReturnedFiles are the files the call returned and sent, in path order.
func (a *Answer) ReturnedFiles() []ReturnedFile {
	var out []ReturnedFile
	for _, f := range a.Returned.Files {
		if !f.Truncated {
			out = append(out, ReturnedFile{Path: f.Path, Data: f.Data})
		}
	}
	return out
}
