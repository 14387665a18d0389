// Package archive writes the tar and gzip files of a release so that the
// same contents always give the same bytes: every header carries one given
// time, the owner and mode the caller chose, no user or group names and no
// PAX records; entries stay in the caller's order; gzip records no name and
// no time.
//
// The release tarballs, the npm package and the container image's layers
// and archive are all written with it (cmd/capsule-release).
package archive

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"time"
)

// Entry is one file or directory of a tar file.
type Entry struct {
	// Name is the path inside the archive; a directory's ends in "/".
	Name string
	// Mode holds the permission bits (0o755, 0o644, 0o700, ...).
	Mode int64
	// UID and GID own the entry; 0 unless set.
	UID, GID int
	// Data is a regular file's contents; nil for a directory.
	Data []byte
}

// IsDir reports whether the entry is a directory.
func (e Entry) IsDir() bool { return len(e.Name) > 0 && e.Name[len(e.Name)-1] == '/' }

// Tar returns a tar file of entries, in order, each stamped with mtime.
func Tar(entries []Entry, mtime time.Time) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Typeflag: tar.TypeReg, Name: e.Name, Mode: e.Mode, Uid: e.UID, Gid: e.GID,
			Size: int64(len(e.Data)), ModTime: mtime.UTC(), Format: tar.FormatUSTAR}
		if e.IsDir() {
			if len(e.Data) != 0 {
				return nil, fmt.Errorf("archive: directory %s has contents", e.Name)
			}
			h.Typeflag = tar.TypeDir
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, fmt.Errorf("archive: %s: %w", e.Name, err)
		}
		if _, err := tw.Write(e.Data); err != nil {
			return nil, fmt.Errorf("archive: %s: %w", e.Name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Gzip compresses b at the best compression, with an empty header: no file
// name, no modification time, so the output depends on b alone (and on the
// Go version's compressor, which the release pins).
func Gzip(b []byte) []byte {
	var buf bytes.Buffer
	gz, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	gz.Write(b) // writes to a bytes.Buffer cannot fail
	gz.Close()
	return buf.Bytes()
}

// TarGz is Gzip(Tar(entries, mtime)).
func TarGz(entries []Entry, mtime time.Time) ([]byte, error) {
	b, err := Tar(entries, mtime)
	if err != nil {
		return nil, err
	}
	return Gzip(b), nil
}
