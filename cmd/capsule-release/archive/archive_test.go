package archive

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io"
	"testing"
	"time"
)

// TestTarGz: entries keep their order, owners, modes and the one time; a
// directory is a directory; the gzip header carries no name or time; the
// same entries give the same bytes; a directory with contents is refused.
func TestTarGz(t *testing.T) {
	when := time.Date(2026, 12, 3, 12, 0, 0, 0, time.FixedZone("x", 3600))
	entries := []Entry{{Name: "d/", Mode: 0o700, UID: 7, GID: 8}, {Name: "d/f", Mode: 0o644, Data: []byte("hello")}}
	a, err := TarGz(entries, when)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := TarGz(entries, when)
	if !bytes.Equal(a, b) {
		t.Fatal("the same entries gave different bytes")
	}
	gz, err := gzip.NewReader(bytes.NewReader(a))
	if err != nil {
		t.Fatal(err)
	}
	if gz.Name != "" || !gz.ModTime.IsZero() {
		t.Errorf("gzip header name %q time %v", gz.Name, gz.ModTime)
	}
	tr := tar.NewReader(gz)
	for i := 0; ; i++ {
		h, err := tr.Next()
		if err == io.EOF {
			if i != len(entries) {
				t.Fatalf("%d entries, want %d", i, len(entries))
			}
			break
		}
		e := entries[i]
		wantType := byte(tar.TypeReg)
		if e.IsDir() {
			wantType = tar.TypeDir
		}
		data, _ := io.ReadAll(tr)
		if h.Name != e.Name || h.Typeflag != wantType || h.Mode != e.Mode || h.Uid != e.UID || h.Gid != e.GID ||
			!h.ModTime.Equal(when) || !bytes.Equal(data, e.Data) {
			t.Errorf("entry %d: %+v", i, h)
		}
	}
	if _, err := Tar([]Entry{{Name: "d/", Data: []byte("x")}}, when); err == nil {
		t.Error("a directory with contents was written")
	}
}
