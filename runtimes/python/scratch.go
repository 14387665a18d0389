package python

import (
	"io"
	"io/fs"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
	"github.com/tetratelabs/wazero/sys"
)

// scratchFS is one guest's private, writable, in-memory directory tree
// (mounted at /tmp, the working directory). It starts empty, lives in the
// worker's Go memory and is gone when the worker exits; nothing of the host
// is behind it.
//
// Everything it holds counts against a byte budget: file contents by the
// blocks that hold them, and every name by a fixed entry cost plus its
// length, so neither big files nor millions of empty ones can grow the
// worker past the budget. A write that would go over fails with ENOSPC
// (see guestFiles.fail), and the answer names the scratch limit.
type scratchFS struct {
	experimentalsys.UnimplementedFS

	mu      sync.Mutex // the guest is one thread, but wazero closes files from another
	root    *scratchNode
	used    int64
	limit   int64
	nextIno uint64
	files   *guestFiles
	// free holds blocks given back, for reuse: the tree then never holds
	// more blocks than the budget, however often files come and go
	// (garbage awaiting collection would add to it: a fill-and-delete loop
	// held 50 MB more, measured).
	free [][]byte
}

// scratchEntryCost is what each file or directory costs besides its name
// and contents: about what its node and map entry take in Go memory.
const scratchEntryCost = 256

// scratchNode is a file or a directory.
type scratchNode struct {
	ino      uint64
	dir      bool
	perm     fs.FileMode
	blocks   [][]byte                // file contents; nil blocks are holes
	size     int64                   // file size
	children map[string]*scratchNode // directory entries
	nlink    int                     // names that lead here (0: unlinked)
	open     int                     // open handles
	atim     int64
	mtim     int64
	ctim     int64
}

// newScratchFS returns an empty tree that may hold limit bytes.
func newScratchFS(limit int64, files *guestFiles) *scratchFS {
	s := &scratchFS{limit: limit, files: files}
	s.root = s.newNode(true, 0o777)
	s.root.nlink = 1
	return s
}

func (s *scratchFS) newNode(dir bool, perm fs.FileMode) *scratchNode {
	s.nextIno++
	now := time.Now().UnixNano()
	n := &scratchNode{ino: s.nextIno, dir: dir, perm: perm & fs.ModePerm, atim: now, mtim: now, ctim: now}
	if dir {
		n.children = map[string]*scratchNode{}
	}
	return n
}

// charge takes n bytes from the budget, or fails with ENOSPC.
func (s *scratchFS) charge(n int64) experimentalsys.Errno {
	if n > s.limit-s.used {
		return s.files.fail(errnoNospc)
	}
	s.used += n
	return 0
}

// release frees an unlinked file's contents once nothing has it open.
func (s *scratchFS) release(n *scratchNode) {
	if n.nlink > 0 || n.open > 0 {
		return
	}
	s.dropBlocks(n, 0)
	n.size = 0
}

// scratchBlock is the unit file contents are kept and charged in, like a
// disk's block: a file grows without being copied, so the worker holds
// what is charged and no more (a contiguous buffer doubling as it grows
// held twice the file, measured, while the old copy awaited collection).
const scratchBlock = 4096

// dropBlocks frees the blocks from index keep on.
func (s *scratchFS) dropBlocks(n *scratchNode, keep int) {
	for _, b := range n.blocks[keep:] {
		if b != nil {
			s.used -= scratchBlock
			s.free = append(s.free, b)
		}
	}
	clear(n.blocks[keep:])
	n.blocks = n.blocks[:keep]
	if keep == 0 {
		n.blocks = nil
	}
}

// entryCost is what a name in a directory is charged.
func entryCost(name string) int64 { return scratchEntryCost + int64(len(name)) }

// lookup resolves a path relative to the tree's root ("." is the root). A
// trailing slash requires a directory.
func (s *scratchFS) lookup(p string) (*scratchNode, experimentalsys.Errno) {
	parent, name, errno := s.parentOf(p)
	if errno != 0 {
		return nil, errno
	}
	if name == "" {
		return parent, 0
	}
	n, ok := parent.children[name]
	if !ok {
		return nil, experimentalsys.ENOENT
	}
	if strings.HasSuffix(p, "/") && !n.dir {
		return nil, experimentalsys.ENOTDIR
	}
	return n, 0
}

// parentOf resolves all but the last element of p, returning the parent
// directory and the last name ("" when p is the root).
func (s *scratchFS) parentOf(p string) (*scratchNode, string, experimentalsys.Errno) {
	p = path.Clean("/" + p)[1:]
	if p == "" {
		return s.root, "", 0
	}
	dir := s.root
	elems := strings.Split(p, "/")
	for _, e := range elems[:len(elems)-1] {
		next, ok := dir.children[e]
		if !ok {
			return nil, "", experimentalsys.ENOENT
		}
		if !next.dir {
			return nil, "", experimentalsys.ENOTDIR
		}
		dir = next
	}
	return dir, elems[len(elems)-1], 0
}

// link names n in dir, charging the entry.
func (s *scratchFS) link(dir *scratchNode, name string, n *scratchNode) experimentalsys.Errno {
	if errno := s.charge(entryCost(name)); errno != 0 {
		return errno
	}
	dir.children[name] = n
	n.nlink++
	dir.mtim = time.Now().UnixNano()
	return 0
}

// unlink removes the name from dir and frees the node if it was the last.
func (s *scratchFS) unlink(dir *scratchNode, name string) {
	n := dir.children[name]
	delete(dir.children, name)
	s.used -= entryCost(name)
	n.nlink--
	dir.mtim = time.Now().UnixNano()
	s.release(n)
}

// OpenFile implements experimentalsys.FS.
func (s *scratchFS) OpenFile(p string, flag experimentalsys.Oflag, perm fs.FileMode) (experimentalsys.File, experimentalsys.Errno) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if errno := s.files.acquire(); errno != 0 {
		return nil, errno
	}
	f, errno := s.open(p, flag, perm)
	if errno != 0 {
		s.files.release()
		return nil, errno
	}
	return f, 0
}

func (s *scratchFS) open(p string, flag experimentalsys.Oflag, perm fs.FileMode) (experimentalsys.File, experimentalsys.Errno) {
	n, errno := s.lookup(p)
	switch {
	case errno == experimentalsys.ENOENT && flag&experimentalsys.O_CREAT != 0:
		parent, name, errno := s.parentOf(p)
		if errno != 0 {
			return nil, errno
		}
		if name == "" || strings.HasSuffix(p, "/") {
			return nil, experimentalsys.EISDIR
		}
		n = s.newNode(false, perm)
		if errno := s.link(parent, name, n); errno != 0 {
			return nil, errno
		}
	case errno != 0:
		return nil, errno
	case flag&(experimentalsys.O_CREAT|experimentalsys.O_EXCL) == experimentalsys.O_CREAT|experimentalsys.O_EXCL:
		return nil, experimentalsys.EEXIST
	}
	access := flag & (experimentalsys.O_RDONLY | experimentalsys.O_RDWR | experimentalsys.O_WRONLY)
	f := &scratchFile{fs: s, node: n,
		readable: access != experimentalsys.O_WRONLY,
		writable: access != experimentalsys.O_RDONLY,
		append:   flag&experimentalsys.O_APPEND != 0,
	}
	if n.dir {
		if f.writable {
			return nil, experimentalsys.EISDIR
		}
	} else {
		if flag&experimentalsys.O_DIRECTORY != 0 {
			return nil, experimentalsys.ENOTDIR
		}
		if flag&experimentalsys.O_TRUNC != 0 && f.writable {
			if errno := s.resize(n, 0); errno != 0 {
				return nil, errno
			}
		}
	}
	n.open++
	return f, 0
}

func (n *scratchNode) stat() sys.Stat_t {
	mode := n.perm
	size := n.size
	if n.dir {
		mode |= fs.ModeDir
		size = int64(len(n.children))
	}
	return sys.Stat_t{Dev: 1, Ino: n.ino, Mode: mode, Nlink: uint64(max(n.nlink, 0)), Size: size,
		Atim: n.atim, Mtim: n.mtim, Ctim: n.ctim}
}

// Stat implements experimentalsys.FS.
func (s *scratchFS) Stat(p string) (sys.Stat_t, experimentalsys.Errno) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, errno := s.lookup(p)
	if errno != 0 {
		return sys.Stat_t{}, errno
	}
	return n.stat(), 0
}

// Lstat implements experimentalsys.FS: there are no symbolic links.
func (s *scratchFS) Lstat(p string) (sys.Stat_t, experimentalsys.Errno) { return s.Stat(p) }

// Readlink implements experimentalsys.FS: nothing is a link.
func (s *scratchFS) Readlink(p string) (string, experimentalsys.Errno) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, errno := s.lookup(p); errno != 0 {
		return "", errno
	}
	return "", experimentalsys.EINVAL
}

// Mkdir implements experimentalsys.FS.
func (s *scratchFS) Mkdir(p string, perm fs.FileMode) experimentalsys.Errno {
	s.mu.Lock()
	defer s.mu.Unlock()
	parent, name, errno := s.parentOf(p)
	if errno != 0 {
		return errno
	}
	if _, ok := parent.children[name]; ok || name == "" {
		return experimentalsys.EEXIST
	}
	return s.link(parent, name, s.newNode(true, perm))
}

// Chmod implements experimentalsys.FS. Permissions are recorded and shown,
// not enforced: the guest is the only user.
func (s *scratchFS) Chmod(p string, perm fs.FileMode) experimentalsys.Errno {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, errno := s.lookup(p)
	if errno != 0 {
		return errno
	}
	n.perm = perm & fs.ModePerm
	n.ctim = time.Now().UnixNano()
	return 0
}

// Rename implements experimentalsys.FS with POSIX rename's rules.
func (s *scratchFS) Rename(from, to string) experimentalsys.Errno {
	s.mu.Lock()
	defer s.mu.Unlock()
	fromDir, fromName, errno := s.parentOf(from)
	if errno != 0 {
		return errno
	}
	n, ok := fromDir.children[fromName]
	if !ok {
		return experimentalsys.ENOENT
	}
	toDir, toName, errno := s.parentOf(to)
	if errno != 0 {
		return errno
	}
	if fromName == "" || toName == "" {
		return experimentalsys.EPERM
	}
	// A directory cannot move into itself or below.
	for d := toDir; n.dir && d != nil; d = s.parentDir(d) {
		if d == n {
			return experimentalsys.EINVAL
		}
	}
	if old, ok := toDir.children[toName]; ok {
		if old == n {
			return 0
		}
		switch {
		case n.dir && !old.dir:
			return experimentalsys.ENOTDIR
		case !n.dir && old.dir:
			return experimentalsys.EISDIR
		case old.dir && len(old.children) > 0:
			return experimentalsys.ENOTEMPTY
		}
		s.unlink(toDir, toName)
	}
	// Charge the new name before giving up the old one, so a failure
	// leaves the tree as it was.
	if errno := s.link(toDir, toName, n); errno != 0 {
		return errno
	}
	s.unlink(fromDir, fromName)
	n.ctim = time.Now().UnixNano()
	return 0
}

// parentDir finds d's parent by search: renames of directories are rare
// and trees small, so no parent pointers are kept.
func (s *scratchFS) parentDir(d *scratchNode) *scratchNode {
	if d == s.root {
		return nil
	}
	var found *scratchNode
	var walk func(dir *scratchNode) bool
	walk = func(dir *scratchNode) bool {
		for _, c := range dir.children {
			if c == d {
				found = dir
				return true
			}
			if c.dir && walk(c) {
				return true
			}
		}
		return false
	}
	walk(s.root)
	return found
}

// Rmdir implements experimentalsys.FS.
func (s *scratchFS) Rmdir(p string) experimentalsys.Errno {
	s.mu.Lock()
	defer s.mu.Unlock()
	parent, name, errno := s.parentOf(p)
	if errno != 0 {
		return errno
	}
	if name == "" {
		return experimentalsys.EPERM
	}
	n, ok := parent.children[name]
	switch {
	case !ok:
		return experimentalsys.ENOENT
	case !n.dir:
		return experimentalsys.ENOTDIR
	case len(n.children) > 0:
		return experimentalsys.ENOTEMPTY
	}
	s.unlink(parent, name)
	return 0
}

// Unlink implements experimentalsys.FS.
func (s *scratchFS) Unlink(p string) experimentalsys.Errno {
	s.mu.Lock()
	defer s.mu.Unlock()
	parent, name, errno := s.parentOf(p)
	if errno != 0 {
		return errno
	}
	n, ok := parent.children[name]
	switch {
	case !ok:
		return experimentalsys.ENOENT
	case n.dir:
		return experimentalsys.EISDIR
	}
	s.unlink(parent, name)
	return 0
}

// Link implements experimentalsys.FS: a second name for a file.
func (s *scratchFS) Link(oldPath, newPath string) experimentalsys.Errno {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, errno := s.lookup(oldPath)
	if errno != 0 {
		return errno
	}
	if n.dir {
		return experimentalsys.EPERM
	}
	parent, name, errno := s.parentOf(newPath)
	if errno != 0 {
		return errno
	}
	if _, ok := parent.children[name]; ok || name == "" {
		return experimentalsys.EEXIST
	}
	return s.link(parent, name, n)
}

// Symlink implements experimentalsys.FS: not supported, so that no path
// can ever be made to lead elsewhere.
func (s *scratchFS) Symlink(_, _ string) experimentalsys.Errno { return experimentalsys.EPERM }

// Utimens implements experimentalsys.FS.
func (s *scratchFS) Utimens(p string, atim, mtim int64) experimentalsys.Errno {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, errno := s.lookup(p)
	if errno != 0 {
		return errno
	}
	n.utimens(atim, mtim)
	return 0
}

func (n *scratchNode) utimens(atim, mtim int64) {
	if atim != experimentalsys.UTIME_OMIT {
		n.atim = atim
	}
	if mtim != experimentalsys.UTIME_OMIT {
		n.mtim = mtim
	}
	n.ctim = time.Now().UnixNano()
}

// newBlock returns a zeroed block, reusing a freed one if there is one.
func (s *scratchFS) newBlock() []byte {
	if n := len(s.free); n > 0 {
		b := s.free[n-1]
		s.free[n-1] = nil
		s.free = s.free[:n-1]
		clear(b)
		return b
	}
	return make([]byte, scratchBlock)
}

// resize makes the file size bytes long. Growth adds holes, which take
// no block until written; a shrink frees the blocks past the end and
// zeroes the rest of the last one, so a later growth reads zeros.
func (s *scratchFS) resize(n *scratchNode, size int64) experimentalsys.Errno {
	if size > s.limit {
		return s.files.fail(errnoNospc) // no file can be bigger than the directory
	}
	nblocks := int((size + scratchBlock - 1) / scratchBlock)
	if size < n.size {
		s.dropBlocks(n, nblocks)
		if tail := size % scratchBlock; tail != 0 && n.blocks[nblocks-1] != nil {
			clear(n.blocks[nblocks-1][tail:])
		}
	} else if nblocks > len(n.blocks) {
		n.blocks = append(n.blocks, make([][]byte, nblocks-len(n.blocks))...)
	}
	n.size = size
	n.mtim = time.Now().UnixNano()
	n.ctim = n.mtim
	return 0
}

var _ experimentalsys.File = (*scratchFile)(nil)

// scratchFile is an open file or directory of a scratchFS.
type scratchFile struct {
	experimentalsys.UnimplementedFile
	fs                 *scratchFS
	node               *scratchNode
	offset             int64
	readable, writable bool
	append             bool
	closed             bool
	dirents            []experimentalsys.Dirent // a directory's listing, read from Readdir
}

func (f *scratchFile) Dev() (uint64, experimentalsys.Errno) { return 1, 0 }
func (f *scratchFile) Ino() (sys.Inode, experimentalsys.Errno) {
	return f.node.ino, 0
}
func (f *scratchFile) IsDir() (bool, experimentalsys.Errno) { return f.node.dir, 0 }
func (f *scratchFile) IsAppend() bool                       { return f.append }
func (f *scratchFile) SetAppend(enable bool) experimentalsys.Errno {
	f.append = enable
	return 0
}

func (f *scratchFile) Stat() (sys.Stat_t, experimentalsys.Errno) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	return f.node.stat(), 0
}

func (f *scratchFile) Read(buf []byte) (int, experimentalsys.Errno) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	n, errno := f.readAt(buf, f.offset)
	f.offset += int64(n)
	return n, errno
}

func (f *scratchFile) Pread(buf []byte, off int64) (int, experimentalsys.Errno) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if off < 0 {
		return 0, experimentalsys.EINVAL
	}
	return f.readAt(buf, off)
}

func (f *scratchFile) readAt(buf []byte, off int64) (int, experimentalsys.Errno) {
	switch {
	case f.node.dir:
		return 0, experimentalsys.EISDIR
	case !f.readable:
		return 0, experimentalsys.EBADF
	case off >= f.node.size:
		return 0, 0
	}
	f.node.atim = time.Now().UnixNano()
	buf = buf[:min(int64(len(buf)), f.node.size-off)]
	for done := 0; done < len(buf); {
		at := off + int64(done)
		block, in := f.node.blocks[at/scratchBlock], int(at%scratchBlock)
		n := min(len(buf)-done, scratchBlock-in)
		if block == nil {
			clear(buf[done : done+n])
		} else {
			copy(buf[done:done+n], block[in:])
		}
		done += n
	}
	return len(buf), 0
}

// fileOffset is int64. Seek takes it by this name because go vet's
// stdmethods check would hold Seek to io.Seeker's error result, while
// wazero's File interface asks for its Errno.
type fileOffset = int64

func (f *scratchFile) Seek(offset fileOffset, whence int) (int64, experimentalsys.Errno) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	base := int64(0)
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		base = f.offset
	case io.SeekEnd:
		base = f.node.size
	default:
		return 0, experimentalsys.EINVAL
	}
	if base+offset < 0 {
		return 0, experimentalsys.EINVAL
	}
	f.offset = base + offset
	if f.node.dir && f.offset == 0 {
		f.dirents = nil // rewinddir: list afresh
	}
	return f.offset, 0
}

// Readdir lists a directory. The listing is taken when first read (and
// again after a rewind), in name order.
func (f *scratchFile) Readdir(n int) ([]experimentalsys.Dirent, experimentalsys.Errno) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if !f.node.dir {
		return nil, experimentalsys.ENOTDIR
	}
	if f.dirents == nil {
		f.dirents = make([]experimentalsys.Dirent, 0, len(f.node.children))
		for name, c := range f.node.children {
			typ := fs.FileMode(0)
			if c.dir {
				typ = fs.ModeDir
			}
			f.dirents = append(f.dirents, experimentalsys.Dirent{Ino: c.ino, Name: name, Type: typ})
		}
		slices.SortFunc(f.dirents, func(a, b experimentalsys.Dirent) int { return strings.Compare(a.Name, b.Name) })
	}
	if n <= 0 || n > len(f.dirents) {
		n = len(f.dirents)
	}
	out := f.dirents[:n:n]
	f.dirents = f.dirents[n:]
	return out, 0
}

func (f *scratchFile) Write(buf []byte) (int, experimentalsys.Errno) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	off := f.offset
	if f.append {
		off = f.node.size
	}
	n, errno := f.writeAt(buf, off)
	f.offset = off + int64(n)
	return n, errno
}

func (f *scratchFile) Pwrite(buf []byte, off int64) (int, experimentalsys.Errno) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if off < 0 {
		return 0, experimentalsys.EINVAL
	}
	return f.writeAt(buf, off)
}

func (f *scratchFile) writeAt(buf []byte, off int64) (int, experimentalsys.Errno) {
	switch {
	case f.node.dir:
		return 0, experimentalsys.EISDIR
	case !f.writable:
		return 0, experimentalsys.EBADF
	case len(buf) == 0:
		return 0, 0
	}
	end := off + int64(len(buf))
	if end > f.fs.limit {
		return 0, f.fs.files.fail(errnoNospc)
	}
	// Charge the blocks the write fills in before changing anything, so
	// a write that does not fit leaves the file as it was.
	first, last := int(off/scratchBlock), int((end-1)/scratchBlock)
	missing := int64(0)
	for i := first; i <= last; i++ {
		if i >= len(f.node.blocks) || f.node.blocks[i] == nil {
			missing++
		}
	}
	if errno := f.fs.charge(missing * scratchBlock); errno != 0 {
		return 0, errno
	}
	if end > f.node.size {
		f.fs.resize(f.node, end) // within the limit, checked above
	}
	for done := 0; done < len(buf); {
		at := off + int64(done)
		i, in := int(at/scratchBlock), int(at%scratchBlock)
		if f.node.blocks[i] == nil {
			f.node.blocks[i] = f.fs.newBlock()
		}
		done += copy(f.node.blocks[i][in:], buf[done:])
	}
	f.node.mtim = time.Now().UnixNano()
	return len(buf), 0
}

func (f *scratchFile) Truncate(size int64) experimentalsys.Errno {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	switch {
	case f.node.dir:
		return experimentalsys.EISDIR
	case !f.writable:
		return experimentalsys.EBADF
	case size < 0:
		return experimentalsys.EINVAL
	}
	return f.fs.resize(f.node, size)
}

func (f *scratchFile) Sync() experimentalsys.Errno     { return 0 }
func (f *scratchFile) Datasync() experimentalsys.Errno { return 0 }

func (f *scratchFile) Utimens(atim, mtim int64) experimentalsys.Errno {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	f.node.utimens(atim, mtim)
	return 0
}

func (f *scratchFile) Close() experimentalsys.Errno {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if f.closed {
		return 0
	}
	f.closed = true
	f.node.open--
	f.fs.release(f.node)
	f.fs.files.release()
	return 0
}
