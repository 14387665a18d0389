package python

import (
	"archive/zip"
	"bytes"
	"io"
	"io/fs"
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
