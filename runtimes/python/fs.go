package python

import (
	"archive/zip"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"strings"
	"time"
)

// stdlibFS serves the embedded python311.zip as a read-only directory tree:
// it is all the guest ever sees of a file system, so no host path can be
// reached through it.
//
// Why a directory rather than the zip itself on sys.path: zipimport reads
// the archive's central directory in Python at every interpreter start-up,
// which under wasm cost 50 ms for its ~1,300 entries (measured). Here
// Go indexes the archive once per process (Compile), and CPython's ordinary
// path finder lists only the directories it imports from.
//
// Stored entries (the .pyc files) are served straight from the embedded
// bytes; compressed ones (sources, read only for tracebacks) are inflated
// when opened.
type stdlibFS struct {
	files map[string]*zip.File
	data  map[string][]byte // stored entries' bytes, aliasing the archive
	dirs  map[string][]fs.DirEntry
}

// newStdlibFS indexes the archive.
func newStdlibFS(archive []byte) (*stdlibFS, error) {
	zr, err := zip.NewReader(bytes.NewReader(archive), int64(len(archive)))
	if err != nil {
		return nil, err
	}
	s := &stdlibFS{
		files: make(map[string]*zip.File, len(zr.File)),
		data:  make(map[string][]byte, len(zr.File)),
		dirs:  map[string][]fs.DirEntry{".": nil},
	}
	for _, f := range zr.File {
		name := f.Name
		if strings.HasSuffix(name, "/") {
			continue // directories are implied by their files
		}
		if !fs.ValidPath(name) {
			return nil, fmt.Errorf("invalid path %q in the standard library", name)
		}
		s.files[name] = f
		if f.Method == zip.Store {
			off, err := f.DataOffset()
			if err != nil || off < 0 || uint64(off)+f.UncompressedSize64 > uint64(len(archive)) {
				return nil, fmt.Errorf("entry %q: bad data offset", name)
			}
			s.data[name] = archive[off : off+int64(f.UncompressedSize64)]
		}
		s.addDirEntry(name, memInfo{name: path.Base(name), size: int64(f.UncompressedSize64), mode: 0o444})
	}
	for _, entries := range s.dirs {
		slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	}
	return s, nil
}

// addDirEntry records name in its parent directory, creating the parent
// chain on first sight.
func (s *stdlibFS) addDirEntry(name string, info memInfo) {
	dir := path.Dir(name)
	entries, known := s.dirs[dir] // "." always is: the recursion ends there
	s.dirs[dir] = append(entries, info)
	if !known {
		s.addDirEntry(dir, memInfo{name: path.Base(dir), mode: fs.ModeDir | 0o555})
	}
}

// Open implements fs.FS.
func (s *stdlibFS) Open(name string) (fs.File, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	if entries, ok := s.dirs[name]; ok {
		return &memDir{info: memInfo{name: path.Base(name), mode: fs.ModeDir | 0o555}, entries: entries}, nil
	}
	f, ok := s.files[name]
	if !ok {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	data, ok := s.data[name]
	if !ok {
		rc, err := f.Open()
		if err != nil {
			return nil, &fs.PathError{Op: "open", Path: name, Err: err}
		}
		data, err = io.ReadAll(io.LimitReader(rc, int64(f.UncompressedSize64)))
		_ = rc.Close()
		if err != nil {
			return nil, &fs.PathError{Op: "open", Path: name, Err: err}
		}
	}
	info := memInfo{name: path.Base(name), size: int64(len(data)), mode: 0o444}
	return &memFile{Reader: bytes.NewReader(data), info: info}, nil
}

// memInfo is the fs.FileInfo and fs.DirEntry of every entry.
type memInfo struct {
	name string
	size int64
	mode fs.FileMode
}

func (i memInfo) Name() string               { return i.name }
func (i memInfo) Size() int64                { return i.size }
func (i memInfo) Mode() fs.FileMode          { return i.mode }
func (i memInfo) ModTime() time.Time         { return time.Time{} }
func (i memInfo) IsDir() bool                { return i.mode.IsDir() }
func (i memInfo) Sys() any                   { return nil }
func (i memInfo) Type() fs.FileMode          { return i.mode.Type() }
func (i memInfo) Info() (fs.FileInfo, error) { return i, nil }

// memFile is an open file. It seeks (tokenize.open rewinds after detecting
// the encoding) and reads at offsets (wazero's fd_pread), both courtesy of
// bytes.Reader.
type memFile struct {
	*bytes.Reader
	info memInfo
}

func (f *memFile) Stat() (fs.FileInfo, error) { return f.info, nil }
func (f *memFile) Close() error               { return nil }

// memDir is an open directory.
type memDir struct {
	info    memInfo
	entries []fs.DirEntry
	offset  int
}

func (d *memDir) Stat() (fs.FileInfo, error) { return d.info, nil }
func (d *memDir) Read([]byte) (int, error) {
	return 0, &fs.PathError{Op: "read", Path: d.info.name, Err: errors.New("is a directory")}
}
func (d *memDir) Close() error { return nil }

// ReadDir implements fs.ReadDirFile.
func (d *memDir) ReadDir(n int) ([]fs.DirEntry, error) {
	rest := d.entries[d.offset:]
	if n <= 0 {
		d.offset = len(d.entries)
		return slices.Clone(rest), nil
	}
	if len(rest) == 0 {
		return nil, io.EOF
	}
	n = min(n, len(rest))
	d.offset += n
	return slices.Clone(rest[:n]), nil
}
