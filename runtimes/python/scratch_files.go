package python

import (
	"slices"
	"strings"

	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"

	"capsule/runtimes/fileset"
)

// What the host puts into a guest's scratch directory and takes out of it:
// the files passed in and the files returned. Each operation holds the
// tree's lock throughout, so a file is read whole even while a guest that
// outlived its deadline goes on writing.

// putFile makes a file passed in at p, with the directories it needs,
// charged to the budget as the guest's own writes are. It takes data:
// every whole block of it becomes a block of the file, uncopied (on a
// fresh worker's new pages, copying megabytes costs more than anything
// else about a file passed in); the last part block is copied, so that
// each block has a whole block's room.
func (s *scratchFS) putFile(p string, data []byte) experimentalsys.Errno {
	s.mu.Lock()
	defer s.mu.Unlock()
	elems := strings.Split(p, "/")
	dir := s.root
	for _, e := range elems[:len(elems)-1] {
		next, ok := dir.children[e]
		if !ok {
			next = s.newNode(true, 0o755)
			if errno := s.link(dir, e, next); errno != 0 {
				return errno
			}
		}
		if !next.dir {
			return experimentalsys.ENOTDIR
		}
		dir = next
	}
	name := elems[len(elems)-1]
	if _, ok := dir.children[name]; ok {
		return experimentalsys.EEXIST
	}
	n := s.newNode(false, 0o644)
	if errno := s.link(dir, name, n); errno != 0 {
		return errno
	}
	nblocks := (len(data) + scratchBlock - 1) / scratchBlock
	if errno := s.charge(int64(nblocks) * scratchBlock); errno != 0 {
		return errno
	}
	if errno := s.resize(n, int64(len(data))); errno != 0 {
		return errno
	}
	for i := range nblocks {
		lo, hi := i*scratchBlock, (i+1)*scratchBlock
		if hi <= len(data) {
			n.blocks[i] = data[lo:hi:hi]
		} else {
			n.blocks[i] = s.newBlock()
			copy(n.blocks[i], data[lo:])
		}
	}
	return 0
}

// scratchEntry is a regular file found under a directory.
type scratchEntry struct {
	path string // relative to the directory walked
	size int64
}

// outputWalk lists the regular files under a directory in path order
// (fileset.Compare): each directory's names sorted, then walked. It keeps
// the first fileset.MaxListed files and counts the rest, and it does not
// go below fileset.MaxDepth levels or fileset.MaxPathBytes bytes, saying
// where it stopped: the tree is the guest's, as large and deep as its
// budget allows.
type outputWalk struct {
	files    []scratchEntry
	unlisted int64
	tooDeep  []string // directories not walked into
}

// listFiles walks dir, a path relative to the tree's root; a missing
// directory lists nothing.
func (s *scratchFS) listFiles(dir string) *outputWalk {
	s.mu.Lock()
	defer s.mu.Unlock()
	w := &outputWalk{}
	if n, errno := s.lookup(dir); errno == 0 && n.dir {
		w.walk(n, "", 0)
	}
	return w
}

func (w *outputWalk) walk(dir *scratchNode, prefix string, depth int) {
	names := make([]string, 0, len(dir.children))
	for name := range dir.children {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		n, p := dir.children[name], prefix+name
		switch {
		case !n.dir && len(w.files) < fileset.MaxListed:
			w.files = append(w.files, scratchEntry{path: p, size: n.size})
		case !n.dir:
			w.unlisted++
		case depth+1 >= fileset.MaxDepth || len(p) >= fileset.MaxPathBytes:
			if len(n.children) > 0 && len(w.tooDeep) < fileset.MaxListed {
				w.tooDeep = append(w.tooDeep, p)
			}
		default:
			w.walk(n, p+"/", depth+1)
		}
	}
}

// readFile returns up to max bytes of the file at p: a guest still
// running may have shrunk or grown it since it was listed.
func (s *scratchFS) readFile(p string, max int64) ([]byte, experimentalsys.Errno) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, errno := s.lookup(p)
	if errno != 0 {
		return nil, errno
	}
	if n.dir {
		return nil, experimentalsys.EISDIR
	}
	buf := make([]byte, min(n.size, max))
	got, errno := (&scratchFile{fs: s, node: n, readable: true}).readAt(buf, 0)
	return buf[:got], errno
}
