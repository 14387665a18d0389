package supervisor

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"capsule/ipc"
	"capsule/runtimes"
	"capsule/runtimes/fileset"
)

func sendFiles(files ...fileset.File) func(*ipc.Writer) error {
	return func(w *ipc.Writer) error { return w.WriteFiles(files) }
}

func rawFrame(t ipc.Type, payload string) func(*ipc.Writer) error {
	return func(w *ipc.Writer) error { return w.WriteFrame(t, []byte(payload)) }
}

var testFilesLimits = fileset.Limits{MaxBytes: 100, MaxFiles: 3}

// collectFiles reads frames as run does, with the test limits.
func collectFiles(t testing.TB, fs ...func(*ipc.Writer) error) (*Answer, error) {
	c := newCollector(1 << 10)
	c.files = newFileCollector(testFilesLimits)
	d, err := c.read(frames(t, fs...))
	return c.answer(d, err), err
}

func TestReturnedFiles(t *testing.T) {
	png := []byte("\x89PNG\r\n\x1a\nrest")
	a, err := collectFiles(t, out("hi\n"), sendFiles(
		fileset.File{Path: "a b/summary.csv", Data: []byte("x,y\n")},
		fileset.File{Path: "chart.png", Data: png},
		fileset.File{Path: "data.bin", Data: []byte{0, 1}},
		fileset.File{Path: "latin1.csv", Truncated: true, Size: 1000},
	), done(ipc.Done{Result: json.RawMessage("1"), ResultType: "int", ResultRepr: "1"}))
	if err != nil {
		t.Fatal(err)
	}
	want := []FileInfo{
		{Path: "a b/summary.csv", Size: 4, MIMEType: "text/csv"},
		{Path: "chart.png", Size: int64(len(png)), MIMEType: "image/png"},
		{Path: "data.bin", Size: 2, MIMEType: "application/octet-stream"},
		{Path: "latin1.csv", Size: 1000, MIMEType: "text/csv", Truncated: true},
	}
	if len(a.Files) != len(want) {
		t.Fatalf("files %+v", a.Files)
	}
	for i := range want {
		if a.Files[i] != want[i] {
			t.Errorf("file %d: %+v, want %+v", i, a.Files[i], want[i])
		}
	}
	if a.Limit == nil || *a.Limit != runtimes.LimitFilesOut || a.Error == nil ||
		!strings.Contains(a.Error.Message, "files_out: 1 file was not sent, over the limit of 100B and 3 files per call") {
		t.Errorf("limit %v, error %+v", a.Limit, a.Error)
	}
	if !strings.Contains(a.Text(), "[files]\na b/summary.csv (text/csv, 4 bytes)\n") ||
		!strings.Contains(a.Text(), "latin1.csv (text/csv, 1000 bytes): not sent, over the files_out limit") {
		t.Errorf("text %q", a.Text())
	}
	// The three sent, with their contents (supervisor/mcp's
	// TestFileContents turns them into MCP content).
	sent := a.ReturnedFiles()
	if len(sent) != 3 || sent[0].Path != "a b/summary.csv" || string(sent[0].Data) != "x,y\n" ||
		sent[1].Path != "chart.png" || !bytes.Equal(sent[1].Data, png) || sent[2].Path != "data.bin" {
		t.Errorf("sent %+v", sent)
	}
	b, err := json.Marshal(a)
	if err != nil || !bytes.Contains(b, []byte(`"files":[{"path":"a b/summary.csv","size":4,"mime_type":"text/csv"}`)) {
		t.Errorf("structured %s", b)
	}
	// No files, no "files" field.
	a, _ = collectFiles(t, done(ipc.Done{}))
	if b, _ := json.Marshal(a); bytes.Contains(b, []byte(`"files"`)) || strings.Contains(a.Text(), "[files]") {
		t.Errorf("answer without files: %s, %q", b, a.Text())
	}
}

// TestReturnedFilesRefused checks that what a hostile worker might send
// ends the call as a bad frame, with no file in the answer.
func TestReturnedFilesRefused(t *testing.T) {
	tests := []struct {
		name   string
		frames []func(*ipc.Writer) error
		want   string
	}{
		{"over the bytes", []func(*ipc.Writer) error{sendFiles(fileset.File{Path: "a", Data: make([]byte, 101)})}, "over the limits"},
		{"a bad path", []func(*ipc.Writer) error{rawFrame(ipc.TypeFile, `{"path":"../a","size":0}`)}, `".."`},
		{"short", []func(*ipc.Writer) error{rawFrame(ipc.TypeFile, `{"path":"a","size":5}`), rawFrame(ipc.TypeFileData, "x"), done(ipc.Done{})}, "4 bytes short"},
		{"unlisted without reason", []func(*ipc.Writer) error{sendFiles(fileset.File{Path: "a", Data: []byte("x")}), done(ipc.Done{FilesUnlisted: 3})}, "only 1 were listed"},
		{"negative unlisted", []func(*ipc.Writer) error{done(ipc.Done{FilesUnlisted: -1})}, "negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := collectFiles(t, tt.frames...)
			if err == nil || !strings.Contains(err.Error(), "bad frame") || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err %v, want a bad frame naming %q", err, tt.want)
			}
			if len(a.Files) != 0 || len(a.ReturnedFiles()) != 0 || a.Error == nil || a.Error.Type != "WorkerError" {
				t.Fatalf("answer %+v", a)
			}
		})
	}
	// A collector that expects no file refuses file frames.
	c := newCollector(100)
	if _, err := c.read(frames(t, sendFiles(fileset.File{Path: "a", Data: []byte("x")}))); err == nil || !strings.Contains(err.Error(), "unexpected file frame") {
		t.Fatalf("err %v", err)
	}
}

func TestCheckFiles(t *testing.T) {
	s := &Supervisor{cfg: DefaultConfig(testLanguages)}
	s.cfg.Limits.MaxFilesIn, s.cfg.Limits.Scratch = 10, 5
	file := func(n int) []fileset.File { return []fileset.File{{Path: "a", Data: make([]byte, n)}} }
	tests := []struct {
		lang  string
		files []fileset.File
		limit string
		msg   string
	}{
		{runtimes.Python, file(5), "", ""},
		{runtimes.Python, file(11), runtimes.LimitFilesIn, "files_in: the files passed in are 11 bytes in all, over the 10B limit"},
		{runtimes.Python, file(6), runtimes.LimitScratch, "scratch: the files passed in are 6 bytes, over the 5B of a Python call's /tmp"},
		{runtimes.JavaScript, file(6), "", ""},
		{runtimes.JavaScript, []fileset.File{{Path: "a"}, {Path: "a"}}, "", `file "a": the path is given twice`},
	}
	for _, tt := range tests {
		a := s.checkFiles(Request{Language: tt.lang, Files: tt.files})
		switch {
		case tt.msg == "" && a != nil:
			t.Errorf("%s, %d bytes: refused: %+v", tt.lang, fileset.TotalLen(tt.files), a.Error)
		case tt.msg != "" && (a == nil || !strings.Contains(a.Error.Message, tt.msg)):
			t.Errorf("%s, %d bytes: %+v, want %q", tt.lang, fileset.TotalLen(tt.files), a, tt.msg)
		case tt.limit != "" && (a.Limit == nil || *a.Limit != tt.limit):
			t.Errorf("%s: limit %v, want %s", tt.lang, a.Limit, tt.limit)
		}
	}
	s.cfg.Limits.Scratch = 0
	if a := s.checkFiles(Request{Language: runtimes.Python, Files: file(1)}); a == nil || !strings.Contains(a.Error.Message, "--scratch 0") {
		t.Errorf("no scratch: %+v", a)
	}
}

// FuzzReturnedFiles feeds arbitrary frames, as a hostile worker would, to
// the supervisor's collector: it may refuse them, never panic, and an
// answer it builds keeps the limits and encodes as JSON.
func FuzzReturnedFiles(f *testing.F) {
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf)
	_ = w.WriteFiles([]fileset.File{{Path: "a.csv", Data: []byte("x,y\n")}, {Path: "b.png", Data: []byte("\x89PNG\r\n\x1a\n")}, {Path: "c", Truncated: true, Size: 9}})
	_ = w.WriteJSON(ipc.TypeDone, ipc.Done{})
	f.Add(buf.Bytes())
	f.Fuzz(func(t *testing.T, data []byte) {
		c := newCollector(64)
		c.files = newFileCollector(testFilesLimits)
		d, err := c.read(ipc.NewReader(bytes.NewReader(data), 1<<10))
		a := c.answer(d, err)
		sent, total := 0, int64(0)
		for _, f := range a.Returned.Files {
			if !f.Truncated {
				sent++
				total += int64(len(f.Data))
			}
		}
		if sent > testFilesLimits.MaxFiles || total > testFilesLimits.MaxBytes {
			t.Fatalf("%d files of %d bytes sent", sent, total)
		}
		if _, err := json.Marshal(a); err != nil {
			t.Fatal(err)
		}
	})
}

// TestReturnedFakeImage checks that a file named as an image that is not
// one is listed as bytes of a type that claims no image, and that an
// image is listed as one whatever its name (supervisor/mcp's
// TestFakeImageContent: and sent so).
func TestReturnedFakeImage(t *testing.T) {
	png := []byte("\x89PNG\r\n\x1a\nrest")
	a, err := collectFiles(t, sendFiles(
		fileset.File{Path: "chart.dat", Data: png},
		fileset.File{Path: "fake.png", Data: []byte("just text\n")},
	), done(ipc.Done{}))
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Files) != 2 || a.Files[0].MIMEType != "image/png" || a.Files[1].MIMEType != "application/octet-stream" {
		t.Fatalf("files %+v", a.Files)
	}
	if !strings.Contains(a.Text(), "fake.png (application/octet-stream, 10 bytes)") {
		t.Errorf("text %q", a.Text())
	}
}
