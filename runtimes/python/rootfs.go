package python

import (
	"io"
	"io/fs"
	"maps"
	"path"
	"slices"
	"strings"

	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
	"github.com/tetratelabs/wazero/sys"
)

// rootFS is the guest's "/", its only preopened directory: every path
// the guest names, absolute or relative to its working directory, comes
// here, so that paths behave as on Linux. (With a preopen per mount and
// none at "/", wasi-libc found no preopen for a path such as /dev/null, /
// or /nonexistent and failed with ENOTCAPABLE, errno 76, which Python
// raises as PermissionError and which pathlib's exists() does not take
// for "no such file".)
//
// It holds only what the sandbox has, none of it the host's: the mounts
// (the standard library, the time zones, the packages, the scratch
// directory), each reached with the mount's prefix taken off; the
// directories above the mounts (/, /usr, /usr/local, ...), made up here,
// each listing the next step down to a mount; and /dev, holding only
// /dev/null (reads are empty, writes discarded). Any other path does not
// exist (ENOENT). Nothing outside the mounts can be created, changed or
// removed (EROFS). wazero resolves ".." before a path gets here (and
// refuses, with EPERM, one that climbs above /), and resolve cleans it
// again, so no mount ever sees a path that leaves it.
type rootFS struct {
	experimentalsys.UnimplementedFS
	// mounts are the file systems below, longest directory first, so that
	// the first that holds a path is the most specific (the operator's
	// packages are inside the standard library's directory).
	mounts []rootMount
	// dirs are the made-up directories, by path relative to / ("" is /),
	// with their entries in name order.
	dirs map[string][]experimentalsys.Dirent
	// inos are the made-up directories' inode numbers, in path order so
	// that they are the same in every instance.
	inos  map[string]uint64
	files *guestFiles
}

// rootMount is a file system mounted at dir, relative to / ("usr/share/zoneinfo").
type rootMount struct {
	dir string
	fs  experimentalsys.FS
}

const (
	// devNullPath is /dev/null, relative to /.
	devNullPath = "dev/null"
	// rootDev is the device number of rootFS's own entries (the scratch
	// directory's is 1).
	rootDev = 2
	// devNullIno is /dev/null's inode; the directories' are 1 up.
	devNullIno = 1 << 20
)

// newRootFS returns the root above mounts (guest path → file system).
func newRootFS(mounts map[string]experimentalsys.FS, files *guestFiles) *rootFS {
	r := &rootFS{dirs: map[string][]experimentalsys.Dirent{"": nil, "dev": nil}, files: files}
	for dir, fsys := range mounts {
		r.mounts = append(r.mounts, rootMount{dir: strings.Trim(path.Clean(dir), "/"), fs: fsys})
	}
	slices.SortFunc(r.mounts, func(a, b rootMount) int { return len(b.dir) - len(a.dir) })
	entries := map[string]map[string]fs.FileMode{"": {"dev": fs.ModeDir}, "dev": {"null": fs.ModeDevice | fs.ModeCharDevice}}
	for _, m := range r.mounts {
		// Each directory above the mount lists the next step down, unless
		// another mount holds it (that mount lists it, or not).
		for p := m.dir; p != ""; p = parentDir(p) {
			parent := parentDir(p)
			if _, inside := r.mountOf(parent); inside {
				break
			}
			if entries[parent] == nil {
				entries[parent] = map[string]fs.FileMode{}
			}
			entries[parent][path.Base(p)] = fs.ModeDir
		}
	}
	for dir, names := range entries {
		list := make([]experimentalsys.Dirent, 0, len(names))
		for name, typ := range names {
			list = append(list, experimentalsys.Dirent{Name: name, Type: typ})
		}
		slices.SortFunc(list, func(a, b experimentalsys.Dirent) int { return strings.Compare(a.Name, b.Name) })
		r.dirs[dir] = list
	}
	dirs := slices.Sorted(maps.Keys(r.dirs))
	r.inos = make(map[string]uint64, len(dirs))
	for i, dir := range dirs {
		r.inos[dir] = uint64(i + 1)
	}
	for dir, list := range r.dirs {
		for i := range list {
			child := path.Join(dir, list[i].Name)
			if ino, ok := r.inos[child]; ok {
				list[i].Ino = ino
			} else if child == devNullPath {
				list[i].Ino = devNullIno
			}
		}
	}
	return r
}

// parentDir is p's parent, relative to / ("" for a top-level name).
func parentDir(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[:i]
	}
	return ""
}

// clean resolves p against /: "..", "." and repeated slashes go, and ".."
// at / stays at /. The result is relative to / ("" for / itself).
func clean(p string) string { return path.Clean("/" + p)[1:] }

// mountOf finds the mount that holds p (cleaned): the most specific, as
// mounts are sorted longest first.
func (r *rootFS) mountOf(p string) (rootMount, bool) {
	for _, m := range r.mounts {
		if p == m.dir || strings.HasPrefix(p, m.dir+"/") {
			return m, true
		}
	}
	return rootMount{}, false
}

// target is what a path names: a mount's file system and the path within
// it, or one of rootFS's own entries.
type target struct {
	mount   experimentalsys.FS // non-nil: rel is in mount
	rel     string
	dir     string // with isDir: a made-up directory
	isDir   bool
	devNull bool
}

// resolve finds what p names, or fails with ENOENT (or ENOTDIR when a
// file stands where p needs a directory).
func (r *rootFS) resolve(p string) (target, experimentalsys.Errno) {
	c := clean(p)
	if m, ok := r.mountOf(c); ok {
		rel := strings.TrimPrefix(strings.TrimPrefix(c, m.dir), "/")
		if rel == "" {
			rel = "."
		}
		if strings.HasSuffix(p, "/") && rel != "." {
			rel += "/" // a trailing slash asks for a directory; the mount checks
		}
		return target{mount: m.fs, rel: rel}, 0
	}
	if _, ok := r.dirs[c]; ok {
		return target{dir: c, isDir: true}, 0
	}
	if c == devNullPath {
		if strings.HasSuffix(p, "/") {
			return target{}, experimentalsys.ENOTDIR
		}
		return target{devNull: true}, 0
	}
	if strings.HasPrefix(c, devNullPath+"/") {
		return target{}, experimentalsys.ENOTDIR
	}
	return target{}, experimentalsys.ENOENT
}

// readOnly is the error for changing p, which is not in a mount: EROFS
// when p or its parent is one of rootFS's own entries, else what resolving
// it fails with.
func (r *rootFS) readOnly(p string) experimentalsys.Errno {
	if _, errno := r.resolve(p); errno == 0 {
		return experimentalsys.EROFS
	}
	parent := parentDir(clean(p))
	if t, errno := r.resolve(parent); errno != 0 {
		return errno
	} else if !t.isDir {
		return experimentalsys.ENOTDIR
	}
	return experimentalsys.EROFS
}

func (r *rootFS) dirStat(dir string) sys.Stat_t {
	return sys.Stat_t{Dev: rootDev, Ino: r.inos[dir], Mode: fs.ModeDir | 0o555, Nlink: 2, Size: int64(len(r.dirs[dir]))}
}

func devNullStat() sys.Stat_t {
	return sys.Stat_t{Dev: rootDev, Ino: devNullIno, Mode: fs.ModeDevice | fs.ModeCharDevice | 0o666, Nlink: 1}
}

// OpenFile implements experimentalsys.FS.
func (r *rootFS) OpenFile(p string, flag experimentalsys.Oflag, perm fs.FileMode) (experimentalsys.File, experimentalsys.Errno) {
	t, errno := r.resolve(p)
	if t.mount != nil {
		return t.mount.OpenFile(t.rel, flag, perm)
	}
	if errno == experimentalsys.ENOENT && flag&experimentalsys.O_CREAT != 0 {
		return nil, r.readOnly(p)
	}
	if errno != 0 {
		return nil, errno
	}
	access := flag & (experimentalsys.O_RDONLY | experimentalsys.O_RDWR | experimentalsys.O_WRONLY)
	switch {
	case flag&(experimentalsys.O_CREAT|experimentalsys.O_EXCL) == experimentalsys.O_CREAT|experimentalsys.O_EXCL:
		return nil, experimentalsys.EEXIST
	case t.isDir && access != experimentalsys.O_RDONLY:
		return nil, experimentalsys.EISDIR
	case t.devNull && flag&experimentalsys.O_DIRECTORY != 0:
		return nil, experimentalsys.ENOTDIR
	}
	if errno := r.files.acquire(); errno != 0 {
		return nil, errno
	}
	if t.devNull {
		return &devNullFile{closer: closer{files: r.files}}, 0
	}
	return &rootDirFile{stat: r.dirStat(t.dir), entries: r.dirs[t.dir], closer: closer{files: r.files}}, 0
}

// Stat implements experimentalsys.FS.
func (r *rootFS) Stat(p string) (sys.Stat_t, experimentalsys.Errno) {
	t, errno := r.resolve(p)
	switch {
	case t.mount != nil:
		return t.mount.Stat(t.rel)
	case errno != 0:
		return sys.Stat_t{}, errno
	case t.devNull:
		return devNullStat(), 0
	}
	return r.dirStat(t.dir), 0
}

// Lstat implements experimentalsys.FS.
func (r *rootFS) Lstat(p string) (sys.Stat_t, experimentalsys.Errno) {
	if t, _ := r.resolve(p); t.mount != nil {
		return t.mount.Lstat(t.rel)
	}
	return r.Stat(p)
}

// Readlink implements experimentalsys.FS: none of rootFS's own entries is
// a link.
func (r *rootFS) Readlink(p string) (string, experimentalsys.Errno) {
	t, errno := r.resolve(p)
	switch {
	case t.mount != nil:
		return t.mount.Readlink(t.rel)
	case errno != 0:
		return "", errno
	}
	return "", experimentalsys.EINVAL
}

// change runs op on p's mount, or fails as changing rootFS's own entries
// does.
func (r *rootFS) change(p string, op func(fsys experimentalsys.FS, rel string) experimentalsys.Errno) experimentalsys.Errno {
	if t, _ := r.resolve(p); t.mount != nil {
		return op(t.mount, t.rel)
	}
	return r.readOnly(p)
}

// Mkdir implements experimentalsys.FS.
func (r *rootFS) Mkdir(p string, perm fs.FileMode) experimentalsys.Errno {
	if t, errno := r.resolve(p); errno == 0 && t.mount == nil {
		return experimentalsys.EEXIST
	}
	return r.change(p, func(fsys experimentalsys.FS, rel string) experimentalsys.Errno { return fsys.Mkdir(rel, perm) })
}

// Chmod implements experimentalsys.FS.
func (r *rootFS) Chmod(p string, perm fs.FileMode) experimentalsys.Errno {
	return r.change(p, func(fsys experimentalsys.FS, rel string) experimentalsys.Errno { return fsys.Chmod(rel, perm) })
}

// Rmdir implements experimentalsys.FS.
func (r *rootFS) Rmdir(p string) experimentalsys.Errno {
	return r.change(p, func(fsys experimentalsys.FS, rel string) experimentalsys.Errno { return fsys.Rmdir(rel) })
}

// Unlink implements experimentalsys.FS.
func (r *rootFS) Unlink(p string) experimentalsys.Errno {
	return r.change(p, func(fsys experimentalsys.FS, rel string) experimentalsys.Errno { return fsys.Unlink(rel) })
}

// Utimens implements experimentalsys.FS.
func (r *rootFS) Utimens(p string, atim, mtim int64) experimentalsys.Errno {
	return r.change(p, func(fsys experimentalsys.FS, rel string) experimentalsys.Errno { return fsys.Utimens(rel, atim, mtim) })
}

// Symlink implements experimentalsys.FS.
func (r *rootFS) Symlink(oldPath, link string) experimentalsys.Errno {
	return r.change(link, func(fsys experimentalsys.FS, rel string) experimentalsys.Errno { return fsys.Symlink(oldPath, rel) })
}

// Rename implements experimentalsys.FS: within one mount; across two,
// EXDEV, as between two Linux file systems.
func (r *rootFS) Rename(from, to string) experimentalsys.Errno {
	return r.twoPaths(from, to, func(fsys experimentalsys.FS, a, b string) experimentalsys.Errno { return fsys.Rename(a, b) })
}

// Link implements experimentalsys.FS, within one mount like Rename.
func (r *rootFS) Link(oldPath, newPath string) experimentalsys.Errno {
	return r.twoPaths(oldPath, newPath, func(fsys experimentalsys.FS, a, b string) experimentalsys.Errno { return fsys.Link(a, b) })
}

func (r *rootFS) twoPaths(from, to string, op func(fsys experimentalsys.FS, a, b string) experimentalsys.Errno) experimentalsys.Errno {
	tf, errno := r.resolve(from)
	if errno != 0 {
		return errno
	}
	tt, _ := r.resolve(to)
	switch {
	case tf.mount == nil:
		return experimentalsys.EROFS
	case tt.mount == nil:
		if errno := r.readOnly(to); errno != experimentalsys.EROFS {
			return errno
		}
		return r.files.fail(errnoXdev)
	}
	mf, _ := r.mountOf(clean(from))
	mt, _ := r.mountOf(clean(to))
	if mf.dir != mt.dir {
		return r.files.fail(errnoXdev)
	}
	return op(tf.mount, tf.rel, tt.rel)
}

// rootDirFile is one of rootFS's own directories, open.
type rootDirFile struct {
	experimentalsys.UnimplementedFile
	stat    sys.Stat_t
	entries []experimentalsys.Dirent
	offset  int
	closer
}

func (d *rootDirFile) Dev() (uint64, experimentalsys.Errno)    { return d.stat.Dev, 0 }
func (d *rootDirFile) Ino() (sys.Inode, experimentalsys.Errno) { return d.stat.Ino, 0 }
func (d *rootDirFile) IsDir() (bool, experimentalsys.Errno)    { return true, 0 }
func (d *rootDirFile) Stat() (sys.Stat_t, experimentalsys.Errno) {
	return d.stat, 0
}
func (d *rootDirFile) Read([]byte) (int, experimentalsys.Errno) { return 0, experimentalsys.EISDIR }
func (d *rootDirFile) Pread([]byte, int64) (int, experimentalsys.Errno) {
	return 0, experimentalsys.EISDIR
}
func (d *rootDirFile) Write([]byte) (int, experimentalsys.Errno) { return 0, experimentalsys.EISDIR }
func (d *rootDirFile) Pwrite([]byte, int64) (int, experimentalsys.Errno) {
	return 0, experimentalsys.EISDIR
}
func (d *rootDirFile) Truncate(int64) experimentalsys.Errno       { return experimentalsys.EISDIR }
func (d *rootDirFile) Utimens(int64, int64) experimentalsys.Errno { return experimentalsys.EROFS }
func (d *rootDirFile) Sync() experimentalsys.Errno                { return 0 }
func (d *rootDirFile) Datasync() experimentalsys.Errno            { return 0 }
func (d *rootDirFile) Close() experimentalsys.Errno               { d.closer.Close(); return 0 }

// Seek rewinds the listing (rewinddir); it is the only seek a directory
// takes.
func (d *rootDirFile) Seek(offset fileOffset, whence int) (int64, experimentalsys.Errno) {
	if offset != 0 || whence != io.SeekStart {
		return 0, experimentalsys.EINVAL
	}
	d.offset = 0
	return 0, 0
}

// Readdir implements experimentalsys.File.
func (d *rootDirFile) Readdir(n int) ([]experimentalsys.Dirent, experimentalsys.Errno) {
	rest := d.entries[d.offset:]
	if n <= 0 || n > len(rest) {
		n = len(rest)
	}
	d.offset += n
	return slices.Clone(rest[:n]), 0
}

// devNullFile is /dev/null, open: reads find the end at once, writes are
// taken whole and discarded, and it never grows.
type devNullFile struct {
	experimentalsys.UnimplementedFile
	append bool
	closer
}

func (f *devNullFile) Dev() (uint64, experimentalsys.Errno)    { return rootDev, 0 }
func (f *devNullFile) Ino() (sys.Inode, experimentalsys.Errno) { return devNullIno, 0 }
func (f *devNullFile) IsDir() (bool, experimentalsys.Errno)    { return false, 0 }
func (f *devNullFile) IsAppend() bool                          { return f.append }
func (f *devNullFile) SetAppend(enable bool) experimentalsys.Errno {
	f.append = enable
	return 0
}
func (f *devNullFile) Stat() (sys.Stat_t, experimentalsys.Errno)        { return devNullStat(), 0 }
func (f *devNullFile) Read([]byte) (int, experimentalsys.Errno)         { return 0, 0 }
func (f *devNullFile) Pread([]byte, int64) (int, experimentalsys.Errno) { return 0, 0 }
func (f *devNullFile) Seek(fileOffset, int) (int64, experimentalsys.Errno) {
	return 0, 0
}
func (f *devNullFile) Readdir(int) ([]experimentalsys.Dirent, experimentalsys.Errno) {
	return nil, experimentalsys.ENOTDIR
}
func (f *devNullFile) Write(b []byte) (int, experimentalsys.Errno)           { return len(b), 0 }
func (f *devNullFile) Pwrite(b []byte, _ int64) (int, experimentalsys.Errno) { return len(b), 0 }
func (f *devNullFile) Truncate(int64) experimentalsys.Errno                  { return 0 }
func (f *devNullFile) Sync() experimentalsys.Errno                           { return 0 }
func (f *devNullFile) Datasync() experimentalsys.Errno                       { return 0 }
func (f *devNullFile) Utimens(int64, int64) experimentalsys.Errno            { return 0 }
func (f *devNullFile) Close() experimentalsys.Errno                          { f.closer.Close(); return 0 }
