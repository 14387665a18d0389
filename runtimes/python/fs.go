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
	"sync"
	"time"
)

// zipFS serves a zip archive (the embedded standard library, the time
// zones, the operator's --python-path) as a read-only directory tree. The
// guest sees nothing else of a file system but its own scratch directory,
// so no host path can be reached through it.
//
// Why a directory rather than the zip itself on sys.path: zipimport reads
// the archive's central directory in Python at every interpreter start-up,
// which under wasm cost 50 ms for its ~1,300 entries (measured). Here
// Go indexes the archive once per process (Compile), and CPython's ordinary
// path finder lists only the directories it imports from.
//
// Stored entries (the .pyc files) are served straight from the archive's
// bytes; compressed ones (sources, read only for tracebacks) are inflated
// on first open and shared by every later open, so the Go memory they take
// is bounded by the archive's inflated size (about 11 MB for the standard
// library) however often the guest opens them.
//
// A zipFS is shared by every guest of the process; each guest sees it
// through a view (see view) that counts its open files.
type zipFS struct {
	files    map[string]*zip.File
	data     map[string][]byte // stored entries' bytes, aliasing the archive
	inflated map[string]*inflatedEntry
	dirs     map[string][]fs.DirEntry
}

// inflatedEntry is a compressed entry, inflated at most once.
type inflatedEntry struct {
	once sync.Once
	data []byte
	err  error
}

// newZipFS indexes the archive, refusing one whose entries could not all
// be served alike in every call: a name that is absolute or climbs out
// with "..", a name given twice, a name that is both a file and a
// directory, or a compression method other than store and deflate.
func newZipFS(archive []byte) (*zipFS, error) {
	zr, err := zip.NewReader(bytes.NewReader(archive), int64(len(archive)))
	if err != nil {
		return nil, err
	}
	s := &zipFS{
		files:    make(map[string]*zip.File, len(zr.File)),
		data:     make(map[string][]byte, len(zr.File)),
		inflated: map[string]*inflatedEntry{},
		dirs:     map[string][]fs.DirEntry{".": nil},
	}
	explicitDirs := map[string]bool{}
	for _, f := range zr.File {
		name, isDir := strings.CutSuffix(f.Name, "/")
		if !fs.ValidPath(name) || name == "." {
			return nil, fmt.Errorf("invalid path %q in the archive: absolute, empty, or with \"..\" or \".\" elements", f.Name)
		}
		if isDir {
			explicitDirs[name] = true
			continue // directories are implied by their files
		}
		if _, dup := s.files[name]; dup {
			return nil, fmt.Errorf("the archive holds %q twice", name)
		}
		if f.Method != zip.Store && f.Method != zip.Deflate {
			return nil, fmt.Errorf("entry %q: compression method %d; only store and deflate are read", name, f.Method)
		}
		s.files[name] = f
		if f.Method == zip.Store {
			off, err := f.DataOffset()
			if err != nil || off < 0 || uint64(off)+f.UncompressedSize64 > uint64(len(archive)) {
				return nil, fmt.Errorf("entry %q: bad data offset", name)
			}
			s.data[name] = archive[off : off+int64(f.UncompressedSize64)]
		} else {
			s.inflated[name] = &inflatedEntry{}
		}
		s.addDirEntry(name, memInfo{name: path.Base(name), size: int64(f.UncompressedSize64), mode: 0o444})
	}
	for name := range s.files {
		if _, both := s.dirs[name]; both || explicitDirs[name] {
			return nil, fmt.Errorf("the archive holds %q both as a file and as a directory", name)
		}
	}
	for _, entries := range s.dirs {
		slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	}
	return s, nil
}

// addDirEntry records name in its parent directory, creating the parent
// chain on first sight.
func (s *zipFS) addDirEntry(name string, info memInfo) {
	dir := path.Dir(name)
	entries, known := s.dirs[dir] // "." always is: the recursion ends there
	s.dirs[dir] = append(entries, info)
	if !known {
		s.addDirEntry(dir, memInfo{name: path.Base(dir), mode: fs.ModeDir | 0o555})
	}
}

// Open implements fs.FS, for one guest's view: see view.
func (s *zipFS) Open(name string) (fs.File, error) {
	return s.open(name, nil)
}

// view is the archive as one guest sees it: every file it has open counts
// against its open-file limit.
func (s *zipFS) view(files *guestFiles) fs.FS { return zipView{s, files} }

type zipView struct {
	zip   *zipFS
	files *guestFiles
}

func (v zipView) Open(name string) (fs.File, error) { return v.zip.open(name, v.files) }

// open opens name, counting it in files (nil: uncounted).
func (s *zipFS) open(name string, files *guestFiles) (fs.File, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	entries, isDir := s.dirs[name]
	f, isFile := s.files[name]
	if !isDir && !isFile {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	if files != nil {
		if errno := files.acquire(); errno != 0 {
			return nil, &fs.PathError{Op: "open", Path: name, Err: errno}
		}
	}
	if isDir {
		return &memDir{info: memInfo{name: path.Base(name), mode: fs.ModeDir | 0o555}, entries: entries, closer: closer{files: files}}, nil
	}
	info := memInfo{name: path.Base(name), size: int64(f.UncompressedSize64), mode: 0o444}
	mf := &memFile{info: info, closer: closer{files: files}}
	if data, ok := s.data[name]; ok {
		mf.r = bytes.NewReader(data)
	} else {
		mf.inflated, mf.zf = s.inflated[name], f
	}
	return mf, nil
}

// get returns the entry's content, inflating it on the first call.
func (e *inflatedEntry) get(f *zip.File) ([]byte, error) {
	e.once.Do(func() {
		rc, err := f.Open()
		if err != nil {
			e.err = err
			return
		}
		defer rc.Close()
		e.data, e.err = io.ReadAll(io.LimitReader(rc, int64(f.UncompressedSize64)))
	})
	return e.data, e.err
}

// closer gives back an open file's slot, once.
type closer struct {
	files *guestFiles
	once  sync.Once
}

func (c *closer) Close() error {
	if c.files != nil {
		c.once.Do(c.files.release)
	}
	return nil
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
// bytes.Reader. A compressed entry is inflated only when first read: wazero
// stats a file by opening it, and CPython stats every source it imports.
type memFile struct {
	info     memInfo
	r        *bytes.Reader
	inflated *inflatedEntry // with zf, for a compressed entry not read yet
	zf       *zip.File
	closer
}

func (f *memFile) reader() (*bytes.Reader, error) {
	if f.r == nil {
		data, err := f.inflated.get(f.zf)
		if err != nil {
			return nil, &fs.PathError{Op: "read", Path: f.info.name, Err: err}
		}
		f.r = bytes.NewReader(data)
	}
	return f.r, nil
}

func (f *memFile) Stat() (fs.FileInfo, error) { return f.info, nil }

func (f *memFile) Read(p []byte) (int, error) {
	r, err := f.reader()
	if err != nil {
		return 0, err
	}
	return r.Read(p)
}

func (f *memFile) ReadAt(p []byte, off int64) (int, error) {
	r, err := f.reader()
	if err != nil {
		return 0, err
	}
	return r.ReadAt(p, off)
}

// Seek implements io.Seeker.
func (f *memFile) Seek(offset int64, whence int) (int64, error) {
	r, err := f.reader()
	if err != nil {
		return 0, err
	}
	return r.Seek(offset, whence)
}

// memDir is an open directory.
type memDir struct {
	info    memInfo
	entries []fs.DirEntry
	offset  int
	closer
}

func (d *memDir) Stat() (fs.FileInfo, error) { return d.info, nil }
func (d *memDir) Read([]byte) (int, error) {
	return 0, &fs.PathError{Op: "read", Path: d.info.name, Err: errors.New("is a directory")}
}

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
