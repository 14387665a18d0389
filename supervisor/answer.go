package supervisor

import (
	"encoding/json"
	"fmt"
	"strings"

	"capsule/ipc"
	"capsule/runtimes"
	"capsule/runtimes/fileset"
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
	// Files lists the files returned, if any (run.go's fileCollector).
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
