package mcp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"capsule/runtimes"
	"capsule/runtimes/fileset"
	"capsule/supervisor"
	"capsule/supervisor/mcp/toolcall"
)

// fitLimits let a test's worker return up to 64 files of 64 MiB in all.
var fitLimits = fileset.Limits{MaxBytes: 64 << 20, MaxFiles: 64}

// fitAnswer is an answer with stdout, stderr and files as the supervisor
// collects it, with room for all of them.
func fitAnswer(t testing.TB, stdout, stderr string, files ...fileset.File) *supervisor.Answer {
	t.Helper()
	typ, repr := "str", "'r'"
	a := &supervisor.Answer{Stdout: stdout, Stderr: stderr, Result: json.RawMessage(`"r"`), ResultType: &typ, ResultRepr: &repr}
	// A copy, as the worker's frames would give: fit marks the files it
	// withholds.
	a.AddReturnedFiles(append([]fileset.File(nil), files...), 0, fitLimits)
	return a
}

// encodedAnswer is the whole response the transports write for a: through
// mcp-go's encoding, with the files spliced in for a split call, or
// inline.
func encodedAnswer(t testing.TB, a *supervisor.Answer, split bool) []byte {
	t.Helper()
	var call *toolcall.Call
	id := "1"
	if split {
		call, _, _ = toolcall.Split([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{}}}`), ArgumentNames)
	}
	res := toolResult(a)
	res.Content = append(res.Content, fileContents(a, call)...)
	b, err := json.Marshal(mcpgo.NewJSONRPCResultResponse(mcpgo.NewRequestId(1), res))
	if err != nil {
		t.Fatal(err)
	}
	if split {
		b = call.Splice(b)
	}
	if !bytes.Contains(b, []byte(`"id":`+id)) {
		t.Fatalf("no id in %.200s", b)
	}
	return b
}

func binaryFiles(n, size int) []fileset.File {
	var fs []fileset.File
	for i := range n {
		data := bytes.Repeat([]byte{0, 0xff, byte(i)}, size/3+1)[:size]
		fs = append(fs, fileset.File{Path: fmt.Sprintf("f%03d.bin", i), Data: data, Binary: true})
	}
	return fs
}

func TestFitKeepsTheAnswerWithinTheLimit(t *testing.T) {
	const max = 8 << 20
	escaped := strings.Repeat("<\x01\"", 1<<20/3) // 6, 6 and 2 bytes of JSON a byte
	controlText := fileset.File{Path: "ctl.txt", Data: bytes.Repeat([]byte("\x01\x02"), 1<<19)}
	tests := []struct {
		name           string
		stdout, stderr string
		files          []fileset.File
		wantSent       int    // files sent
		wantCut        string // what the answer limit's error must say; empty: no limit
	}{
		{name: "small", stdout: "hi\n", files: binaryFiles(3, 100), wantSent: 3},
		{name: "16 files of 512 KiB", stdout: "hi\n", files: binaryFiles(16, 512<<10), wantSent: 11, wantCut: "5 files were not sent"},
		{name: "8 files of 1 MiB", files: binaryFiles(8, 1<<20), wantSent: 5, wantCut: "3 files were not sent"},
		{name: "a big file first, small ones after", files: append(binaryFiles(1, 7<<20), fileset.File{Path: "z.txt", Data: []byte("small")}),
			wantSent: 1, wantCut: "1 file was not sent"},
		{name: "stdout first, files fill the rest", stdout: strings.Repeat("x", 1<<20), files: binaryFiles(8, 1<<20), wantSent: 4, wantCut: "4 files were not sent"},
		{name: "output over the limit alone is cut", stdout: escaped, stderr: escaped, files: binaryFiles(2, 1<<20), wantSent: 0,
			wantCut: "stdout, stderr cut; 2 files were not sent"},
		{name: "text files escape", files: []fileset.File{controlText, controlText, controlText, controlText}, wantSent: 1, wantCut: "3 files were not sent"},
	}
	for i := range tests {
		tests[i].files = append([]fileset.File(nil), tests[i].files...)
	}
	tests[6].files = []fileset.File{{Path: "a.txt", Data: controlText.Data}, {Path: "b.txt", Data: controlText.Data},
		{Path: "c.txt", Data: controlText.Data}, {Path: "d.txt", Data: controlText.Data}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, split := range []bool{false, true} {
				a := fitAnswer(t, tt.stdout, tt.stderr, tt.files...)
				fit(a, max, 1)
				b := encodedAnswer(t, a, split)
				if len(b) > max {
					t.Errorf("split %v: the answer is %d bytes, over %d", split, len(b), max)
				}
				sent := len(a.ReturnedFiles())
				if sent != tt.wantSent {
					t.Errorf("split %v: %d files sent, want %d", split, sent, tt.wantSent)
				}
				if tt.wantCut == "" {
					if a.Limit != nil {
						t.Errorf("limit %s: %+v", *a.Limit, a.Error)
					}
					continue
				}
				if a.Limit == nil || *a.Limit != runtimes.LimitAnswer || a.Error == nil || a.Error.Type != "AnswerLimitError" ||
					!strings.Contains(a.Error.Message, "over the limit of 8MiB of encoded JSON per answer (--max-answer)") ||
					!strings.Contains(a.Error.Message, tt.wantCut) {
					t.Errorf("limit %v, error %+v; want it to say %q", a.Limit, a.Error, tt.wantCut)
				}
				if !strings.Contains(a.Text(), "--max-answer") {
					t.Errorf("the text does not name the limit: %.300q", a.Text())
				}
				withheld := 0
				for _, f := range a.Files {
					if f.Truncated {
						withheld++
					}
				}
				if withheld != len(tt.files)-tt.wantSent || withheld > 0 && !strings.Contains(a.Text(), "not sent, the answer would have been over its limit (--max-answer)") {
					t.Errorf("%d files listed as truncated, want %d; text %.300q", withheld, len(tt.files)-tt.wantSent, a.Text())
				}
			}
		})
	}
}

// TestFitLeavesOtherLimitsNamed: a call that hit another limit keeps it
// named; the files the answer could not take are still listed.
func TestFitLeavesOtherLimitsNamed(t *testing.T) {
	a := fitAnswer(t, "", "", binaryFiles(12, 1<<20)...)
	timeout := runtimes.LimitTimeout
	a.Limit, a.Error = &timeout, &runtimes.ErrorInfo{Type: "TimeoutError", Message: "timeout: execution exceeded 30s"}
	fit(a, 8<<20, 1)
	if *a.Limit != runtimes.LimitTimeout || a.Error.Type != "TimeoutError" || len(a.ReturnedFiles()) != 5 {
		t.Errorf("limit %s, error %+v, %d files sent", *a.Limit, a.Error, len(a.ReturnedFiles()))
	}
	if !strings.Contains(a.Text(), "\nanswer: the answer would have been over the limit of 8MiB of encoded JSON per answer (--max-answer); 7 files were not sent") {
		t.Errorf("the text does not say what the answer limit took: %q", a.Text())
	}
}

func BenchmarkFitSmallAnswer(b *testing.B) {
	a := fitAnswer(b, "hello\n", "", binaryFiles(2, 1000)...)
	for b.Loop() {
		fit(a, 8<<20, 1)
	}
}

// FuzzFit: whatever a worker returns (its output is untrusted), the
// answer as the transports encode it stays within the bound, split or
// not.
func FuzzFit(f *testing.F) {
	f.Add([]byte("hi\n"), []byte(""), []byte("a,b\n"), uint16(3), false)
	f.Add(bytes.Repeat([]byte("<\x01"), 9000), bytes.Repeat([]byte("\u2028\""), 5000), bytes.Repeat([]byte{0xff}, 20000), uint16(9), true)
	f.Fuzz(func(t *testing.T, stdout, stderr, file []byte, copies uint16, binary bool) {
		var files []fileset.File
		for i := range int(copies % 12) {
			files = append(files, fileset.File{Path: fmt.Sprintf("f%02d.txt", i), Data: bytes.Repeat(file, 1+i), Binary: binary})
		}
		a := fitAnswer(t, string(stdout), string(stderr), files...)
		const max = supervisor.MinAnswer
		fit(a, max, 1)
		for _, split := range []bool{false, true} {
			if b := encodedAnswer(t, a, split); len(b) > max {
				t.Fatalf("split %v: the answer is %d bytes, over %d", split, len(b), max)
			}
		}
	})
}

// BenchmarkFitEscapedOutput measures the worst case: stdout and stderr of
// 1 MiB that JSON escapes six bytes a character, cut to fit.
func BenchmarkFitEscapedOutput(b *testing.B) {
	escaped := strings.Repeat("<", 1<<20)
	for b.Loop() {
		a := fitAnswer(b, escaped, escaped)
		fit(a, 8<<20, 1)
	}
}

// BenchmarkFitFiles measures fitting 16 files of 512 KiB.
func BenchmarkFitFiles(b *testing.B) {
	files := binaryFiles(16, 512<<10)
	for b.Loop() {
		a := fitAnswer(b, "hi\n", "", files...)
		fit(a, 8<<20, 1)
	}
}
