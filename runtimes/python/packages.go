package python

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path"
	"regexp"
	"slices"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"capsule/runtimes"
)

// PackagesDir is where an operator's --python-path is mounted, read-only,
// and put on sys.path (after the standard library, so it cannot shadow
// it).
const PackagesDir = "/usr/local/lib/python3.11/site-packages"

// Packages is an operator's set of extra pure-Python packages: a zip
// archive (mapped from its file, so the workers share its pages) or a
// directory (packed into an archive in memory at every worker's start; a
// zip is the better choice for anything large).
//
// The path is a jail: a directory is read without following any link that
// leads out of it, and an archive whose entries could not be served alike
// in every call is refused (see newZipFS). The supervisor opens it at
// start exactly as every worker will, so what passes there works in every
// call.
type Packages struct {
	// Names are the importable top-level packages and modules, sorted.
	Names   []string
	archive []byte
	mapped  bool
	fs      *zipFS
}

// maxPackagesBytes bounds a --python-path directory's files, all read
// into every worker's memory, and an archive's entries once inflated.
const maxPackagesBytes = 1 << 30

// compiledExtension matches the file names of compiled extension modules
// and native libraries: the sandbox runs WebAssembly only, and CPython
// here cannot load native code, so such a package could never work.
var compiledExtension = regexp.MustCompile(`(?i)\.(so|pyd|dylib|dll)(\.[0-9.]+)?$`)

// Digest is the SHA-256 of the packages as the guest sees them: an
// interpreter snapshot made with other packages is not used.
func (pk *Packages) Digest() string {
	sum := sha256.Sum256(pk.archive)
	return hex.EncodeToString(sum[:])
}

// OpenPackages reads the directory or zip archive at p, refusing it if it
// holds compiled extensions, links out of the directory, or entries the
// guest could not be served. Close releases it.
func OpenPackages(p string) (*Packages, error) {
	return OpenPackagesAs(p, nil)
}

// Reader is the host uid and gid that workers read the packages as.
type Reader struct{ UID, GID int }

// OpenPackagesAs is OpenPackages with a check that reader, when not nil,
// may also read everything it reads: a server that runs as root checks
// for the workers' unprivileged host uid, so that a file only root can
// read is refused at start rather than failing every call. The check
// reads the mode bits (no ACLs; workers have no supplementary groups).
func OpenPackagesAs(p string, reader *Reader) (*Packages, error) {
	pk, err := openPackages(p, reader)
	if err != nil {
		return nil, fmt.Errorf("python path %s: %w", p, err)
	}
	return pk, nil
}

func openPackages(p string, reader *Reader) (*Packages, error) {
	if err := reader.checkAncestors(p); err != nil {
		return nil, err
	}
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: p, Err: err}
	}
	f := os.NewFile(uintptr(fd), p)
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if err := reader.check(info, "."); err != nil {
		return nil, err
	}
	pk := &Packages{}
	switch {
	case info.IsDir():
		pk.archive, err = packDir(fd, reader)
	case info.Mode().IsRegular():
		pk.archive, err = mapFile(f, info.Size())
		pk.mapped = err == nil
	default:
		err = fmt.Errorf("not a directory or a regular file (%v)", info.Mode().Type())
	}
	if err != nil {
		return nil, err
	}
	if pk.fs, err = newZipFS(pk.archive); err != nil {
		pk.Close()
		return nil, fmt.Errorf("not a usable directory or zip archive: %w", err)
	}
	names := map[string]bool{}
	for name := range pk.fs.files {
		if compiledExtension.MatchString(name) {
			pk.Close()
			return nil, fmt.Errorf("holds a compiled extension (%s): only pure-Python packages can run in the sandbox", name)
		}
		if name, ok := topLevelName(name); ok {
			names[name] = true
		}
	}
	for name := range names {
		pk.Names = append(pk.Names, name)
	}
	slices.Sort(pk.Names)
	return pk, nil
}

// Verify reads every entry of the archive once, so that a corrupt entry, or
// one that inflates past the bound, is found at start rather than by the
// call that imports it.
func (pk *Packages) Verify() error {
	var total uint64
	for name, f := range pk.fs.files {
		total += f.UncompressedSize64
		if total > maxPackagesBytes {
			return fmt.Errorf("python path: its files inflate to more than %s", runtimes.FormatBytes(maxPackagesBytes))
		}
		rc, err := f.Open()
		if err == nil {
			_, err = io.Copy(io.Discard, io.LimitReader(rc, int64(f.UncompressedSize64)+1))
			rc.Close()
		}
		if err != nil {
			return fmt.Errorf("python path: entry %s cannot be read: %w", name, err)
		}
	}
	return nil
}

// topLevelName is the importable name an archive entry belongs to, if
// any: a package directory, or a module file at the top.
func topLevelName(entry string) (string, bool) {
	first, rest, nested := strings.Cut(entry, "/")
	switch {
	case nested && rest == "" && !strings.Contains(first, "."):
		return first, true // a directory entry
	case nested:
		// Metadata (*.dist-info, *.egg-info) and caches are not packages.
		if strings.Contains(first, ".") || first == "__pycache__" {
			return "", false
		}
		return first, true
	case strings.HasSuffix(first, ".py") && first != "__init__.py":
		return strings.TrimSuffix(first, ".py"), true
	}
	return "", false
}

// packDir stores the regular files of the directory open as root in a zip
// archive in memory. Every name is opened beneath root (openat2 with
// RESOLVE_BENEATH): a link that stays inside the tree is followed, one that
// leads out of it (to /etc/passwd, say) is refused, and so are FIFOs,
// devices, a link loop and more than
// maxPackagesBytes of files.
func packDir(root int, reader *Reader) ([]byte, error) {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	w := dirWalker{root: root, zw: zw, seen: map[[2]uint64]bool{}, reader: reader}
	if err := w.walk(".", root); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

type dirWalker struct {
	root   int
	zw     *zip.Writer
	seen   map[[2]uint64]bool // the directories being walked, by device and inode
	total  int64
	reader *Reader
}

// walk adds the directory rel, open as fd, and everything below it.
func (w *dirWalker) walk(rel string, fd int) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	id := [2]uint64{st.Dev, st.Ino}
	if w.seen[id] {
		return fmt.Errorf("%s: a link loop (the directory is inside itself)", rel)
	}
	w.seen[id] = true
	defer delete(w.seen, id)
	dup, err := unix.Dup(fd)
	if err != nil {
		return err
	}
	d := os.NewFile(uintptr(dup), rel)
	entries, err := d.ReadDir(-1)
	d.Close()
	if err != nil {
		return fmt.Errorf("%s: %w", rel, err)
	}
	for _, e := range entries {
		if err := w.add(path.Join(rel, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

// add adds the file or directory rel.
func (w *dirWalker) add(rel string) error {
	fd, err := openBeneath(w.root, rel)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(fd), rel)
	defer f.Close()
	info, err := f.Stat()
	if err == nil {
		err = w.reader.check(info, rel)
	}
	switch {
	case err != nil:
		return err
	case info.IsDir():
		return w.walk(rel, fd)
	case !info.Mode().IsRegular():
		return fmt.Errorf("%s is not a regular file or a directory (%v)", rel, info.Mode().Type())
	}
	if w.total += info.Size(); w.total > maxPackagesBytes {
		return fmt.Errorf("its files hold more than %s; use a zip archive", runtimes.FormatBytes(maxPackagesBytes))
	}
	zf, err := w.zw.CreateHeader(&zip.FileHeader{Name: rel, Method: zip.Store})
	if err != nil {
		return err
	}
	n, err := io.Copy(zf, io.LimitReader(f, info.Size()+1))
	if err == nil && n != info.Size() {
		err = fmt.Errorf("changed size while read")
	}
	if err != nil {
		return fmt.Errorf("reading %s: %w", rel, err)
	}
	return nil
}

// openBeneath opens rel, which must resolve inside the directory root.
func openBeneath(root int, rel string) (int, error) {
	fd, err := unix.Openat2(root, rel, &unix.OpenHow{
		Flags:   unix.O_RDONLY | unix.O_NONBLOCK | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS,
	})
	switch {
	case err == unix.ENOSYS:
		// Before Linux 5.6: no link is followed at all.
		fd, err = unix.Openat(root, rel, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
		if err == unix.ELOOP {
			return -1, fmt.Errorf("%s is a symbolic link, which this kernel cannot confine to the directory", rel)
		}
	case err == unix.EXDEV || err == unix.ELOOP:
		return -1, fmt.Errorf("%s is a link that leads out of the directory", rel)
	}
	if err != nil {
		return -1, &os.PathError{Op: "open", Path: rel, Err: err}
	}
	return fd, nil
}

// mapFile maps a file read-only and shared: every worker of the host then
// serves the same pages.
func mapFile(f *os.File, size int64) ([]byte, error) {
	if size <= 0 || size > 1<<32 {
		return nil, fmt.Errorf("not a zip archive of a usable size (%d bytes)", size)
	}
	return unix.Mmap(int(f.Fd()), 0, int(size), unix.PROT_READ, unix.MAP_SHARED)
}

// Close releases the archive.
func (pk *Packages) Close() {
	if pk.mapped && pk.archive != nil {
		_ = unix.Munmap(pk.archive)
	}
	pk.archive = nil
}

// check reports an error unless r may read the file or list and enter
// the directory described by info; a nil r may read anything.
func (r *Reader) check(info os.FileInfo, rel string) error {
	need := uint32(4) // read
	if info.IsDir() {
		need = 5 // read and search
	}
	if r == nil || r.may(info, need) {
		return nil
	}
	return fmt.Errorf("%s is not readable by the workers' host uid %d gid %d (mode %v): make it readable by them", rel, r.UID, r.GID, info.Mode())
}

// checkAncestors checks that r may search every directory above p.
func (r *Reader) checkAncestors(p string) error {
	if r == nil {
		return nil
	}
	for dir := path.Dir(p); ; dir = path.Dir(dir) {
		info, err := os.Stat(dir)
		if err != nil {
			return err
		}
		if !r.may(info, 1) {
			return fmt.Errorf("%s cannot be entered by the workers' host uid %d gid %d (mode %v)", dir, r.UID, r.GID, info.Mode())
		}
		if dir == "/" || dir == "." {
			return nil
		}
	}
}

// may reports whether the mode bits of info grant r every bit of need
// (4 read, 2 write, 1 search), as the kernel picks owner, group or
// other bits; uid 0 may do anything.
func (r *Reader) may(info os.FileInfo, need uint32) bool {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok || r.UID == 0 {
		return true
	}
	perm := uint32(info.Mode().Perm())
	switch {
	case int(st.Uid) == r.UID:
		perm >>= 6
	case int(st.Gid) == r.GID:
		perm >>= 3
	}
	return perm&need == need
}
