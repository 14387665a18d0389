package supervisor

import (
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"capsule/ipc"
	"capsule/runtimes"
	"capsule/runtimes/fileset"
	"capsule/supervisor/toolcall"
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

// returnedFiles is what an Answer keeps of the files returned beyond
// Answer.Files: their contents and kinds, for the tool result's content,
// and how many were not even listed.
type returnedFiles struct {
	files    []fileset.File
	kinds    []fileset.Kind
	unlisted int64
	lim      fileset.Limits
	// overAnswer marks the files Fit left out for the answer limit; nil
	// when it left none out.
	overAnswer []bool
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

// answer adds the files to a, and names the files_out limit when files
// were left out.
func (c *fileCollector) answer(a *Answer) {
	if !c.done {
		return
	}
	a.returned = returnedFiles{files: c.files, unlisted: c.unlisted, lim: c.lim}
	truncated := 0
	for _, f := range c.files {
		k := fileset.ClassifyFile(f)
		a.Files = append(a.Files, FileInfo{Path: f.Path, Size: f.Len(), MIMEType: k.MIME, Truncated: f.Truncated})
		a.returned.kinds = append(a.returned.kinds, k)
		if f.Truncated {
			truncated++
		}
	}
	if truncated == 0 && c.unlisted == 0 {
		return
	}
	if a.Limit == nil {
		limit := runtimes.LimitFilesOut
		a.Limit = &limit
		if a.Error == nil {
			a.Error = &runtimes.ErrorInfo{Type: "FilesOutLimitError", Message: a.returned.limitMessage(truncated)}
		}
	}
}

// limitMessage says which files the files_out limit kept back.
func (r returnedFiles) limitMessage(truncated int) string {
	msg := fmt.Sprintf("files_out: %s not sent, over the limit of %s and %s per call; they are listed with truncated: true",
		Count(int64(truncated), "file was", "files were"), runtimes.FormatBytes(r.lim.MaxBytes), Count(int64(r.lim.MaxFiles), "file", "files"))
	if r.unlisted > 0 {
		msg += fmt.Sprintf("; %d more were not even listed (at most %d are)", r.unlisted, fileset.MaxListed)
	}
	return msg
}

// filesText lists the files returned, for the answer's text.
func (a *Answer) filesText() string {
	var b strings.Builder
	for i, f := range a.Files {
		fmt.Fprintf(&b, "%s (%s, %d bytes)", f.Path, f.MIMEType, f.Size)
		switch {
		case i < len(a.returned.overAnswer) && a.returned.overAnswer[i]:
			b.WriteString(": not sent, the answer would have been over its limit (--max-answer)")
		case f.Truncated:
			b.WriteString(": not sent, over the files_out limit")
		}
		b.WriteByte('\n')
	}
	if a.returned.unlisted > 0 {
		fmt.Fprintf(&b, "[%s more not listed]\n", Count(a.returned.unlisted, "file", "files"))
	}
	return b.String()
}

// FileContents is the MCP content of the files returned and sent, in path
// order, to follow the answer's text: PNG, JPEG, GIF and WebP images as
// image content, other files as embedded resources at
// file:///tmp/outputs/PATH, text (a text type in UTF-8) or blob. Through
// call, when the transport split the request, each file's content is a
// placeholder that the transport replaces, encoding the file once.
func (a *Answer) FileContents(call *toolcall.Call) []mcp.Content {
	var out []mcp.Content
	for i, f := range a.returned.files {
		if f.Truncated {
			continue
		}
		k := a.returned.kinds[i]
		uri := (&url.URL{Scheme: "file", Path: "/tmp/" + fileset.OutputsDir + "/" + f.Path}).String()
		switch {
		case k.Image:
			out = append(out, mcp.NewImageContent(call.Base64(f.Data), k.MIME))
		case k.Text:
			out = append(out, mcp.NewEmbeddedResource(mcp.TextResourceContents{URI: uri, MIMEType: k.MIME, Text: call.Text(f.Data)}))
		default:
			out = append(out, mcp.NewEmbeddedResource(mcp.BlobResourceContents{URI: uri, MIMEType: k.MIME, Blob: call.Base64(f.Data)}))
		}
	}
	return out
}

// ReturnedFile is a file a call returned and sent, for capsule exec.
type ReturnedFile struct {
	Path string
	Data []byte
}

// ReturnedFiles are the files the call returned and sent, in path order.
func (a *Answer) ReturnedFiles() []ReturnedFile {
	var out []ReturnedFile
	for _, f := range a.returned.files {
		if !f.Truncated {
			out = append(out, ReturnedFile{Path: f.Path, Data: f.Data})
		}
	}
	return out
}
