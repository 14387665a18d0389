package python

import (
	"archive/zip"
	"bytes"
	"io"
	"io/fs"
	"runtime"
	"testing"
	"testing/fstest"
)

func TestStdlibFS(t *testing.T) {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, f := range []struct {
		name   string
		method uint16
		body   string
	}{
		{"os.py", zip.Deflate, "import sys\n"},
		{"json/__init__.py", zip.Deflate, "from .decoder import *\n"},
		{"json/__pycache__/__init__.cpython-311.pyc", zip.Store, "\x00pyc"},
		{"email/mime/text.py", zip.Store, "# text\n"},
	} {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: f.name, Method: f.method})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(w, f.body); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	s, err := newZipFS(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	// fstest checks directory listings, Stat, Read, ReadAt and Seek
	// against each other for every file.
	if err := fstest.TestFS(s, "os.py", "json/__init__.py", "json/__pycache__/__init__.cpython-311.pyc", "email/mime/text.py"); err != nil {
		t.Fatal(err)
	}
	b, err := fs.ReadFile(s, "json/__init__.py")
	if err != nil || string(b) != "from .decoder import *\n" {
		t.Fatalf("ReadFile = %q, %v", b, err)
	}
	for _, name := range []string{"nope.py", "json/nope", "/etc/passwd", "../x", "json/../os.py"} {
		if _, err := s.Open(name); err == nil {
			t.Errorf("Open(%q) succeeded", name)
		}
	}
	entries, err := fs.ReadDir(s, ".")
	if err != nil || len(entries) != 3 || entries[0].Name() != "email" || !entries[0].IsDir() {
		t.Fatalf("root = %v, %v", entries, err)
	}
}

// zipWith builds an archive of the given names and bodies, compressed.
func zipWith(t *testing.T, files map[string][]byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for name, body := range files {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: name, Method: zip.Deflate})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(body); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestZipFSSharesInflatedFiles opens a compressed file many times: it is
// inflated once, so the opens together allocate far less than one copy
// per open (the attack of issue 10 grew a worker by the file's size at
// every open).
func TestZipFSSharesInflatedFiles(t *testing.T) {
	const size, opens = 512 << 10, 200
	s, err := newZipFS(zipWith(t, map[string][]byte{"topics.py": bytes.Repeat([]byte("# docs\n"), size/7)}))
	if err != nil {
		t.Fatal(err)
	}
	view := s.view(&guestFiles{})
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range opens {
		f, err := view.Open("topics.py")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(io.Discard, f); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	runtime.ReadMemStats(&after)
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 4*size {
		t.Fatalf("%d opens allocated %d bytes: the file is inflated per open", opens, grew)
	}
}

// TestOpenFileLimit holds files open up to the limit: the next open fails
// with EMFILE, and closing one frees its slot.
func TestOpenFileLimit(t *testing.T) {
	s, err := newZipFS(zipWith(t, map[string][]byte{"a.py": []byte("a = 1\n"), "pkg/b.py": nil}))
	if err != nil {
		t.Fatal(err)
	}
	files := &guestFiles{}
	view := s.view(files)
	var open []fs.File
	for i := range maxOpenFiles {
		name := "a.py"
		if i%2 == 1 {
			name = "pkg" // directories count too
		}
		f, err := view.Open(name)
		if err != nil {
			t.Fatalf("open %d: %v", i, err)
		}
		open = append(open, f)
	}
	if _, err := view.Open("a.py"); err == nil || files.pending.Swap(0) != errnoMfile {
		t.Fatalf("open past the limit: %v, want EMFILE", err)
	}
	open[0].Close()
	open[0].Close() // a second close gives nothing back
	f, err := view.Open("a.py")
	if err != nil {
		t.Fatalf("open after a close: %v", err)
	}
	if _, err := view.Open("a.py"); err == nil {
		t.Fatal("a double close freed two slots")
	}
	f.Close()
	for _, f := range open[1:] {
		f.Close()
	}
	if n := files.open.Load(); n != 0 {
		t.Fatalf("%d files still counted open", n)
	}
	// A missing file takes no slot.
	if _, err := view.Open("nope.py"); err == nil || files.open.Load() != 0 {
		t.Fatalf("missing file: %v, %d open", err, files.open.Load())
	}
}
