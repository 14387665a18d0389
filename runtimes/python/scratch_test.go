package python

import (
	"bytes"
	"fmt"
	"io"
	"testing"

	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
)

const (
	rdonly = experimentalsys.O_RDONLY
	rdwr   = experimentalsys.O_RDWR
	create = experimentalsys.O_CREAT | experimentalsys.O_RDWR
)

func mustOpen(t *testing.T, s *scratchFS, p string, flag experimentalsys.Oflag) experimentalsys.File {
	t.Helper()
	f, errno := s.OpenFile(p, flag, 0o644)
	if errno != 0 {
		t.Fatalf("open %s: %v", p, errno)
	}
	return f
}

func writeFile(t *testing.T, s *scratchFS, p string, data []byte) {
	t.Helper()
	f := mustOpen(t, s, p, create|experimentalsys.O_TRUNC)
	defer f.Close()
	if n, errno := f.Write(data); errno != 0 || n != len(data) {
		t.Fatalf("write %s: %d, %v", p, n, errno)
	}
}

func readFile(t *testing.T, s *scratchFS, p string) []byte {
	t.Helper()
	f := mustOpen(t, s, p, rdonly)
	defer f.Close()
	var out []byte
	buf := make([]byte, 5)
	for {
		n, errno := f.Read(buf)
		if errno != 0 {
			t.Fatalf("read %s: %v", p, errno)
		}
		if n == 0 {
			return out
		}
		out = append(out, buf[:n]...)
	}
}

func TestScratchFS(t *testing.T) {
	files := &guestFiles{}
	s := newScratchFS(1<<20, files)

	writeFile(t, s, "a.txt", []byte("hello"))
	if got := readFile(t, s, "a.txt"); string(got) != "hello" {
		t.Fatalf("read back %q", got)
	}
	if errno := s.Mkdir("d", 0o755); errno != 0 {
		t.Fatal(errno)
	}
	if errno := s.Mkdir("d", 0o755); errno != experimentalsys.EEXIST {
		t.Fatalf("mkdir twice: %v", errno)
	}
	writeFile(t, s, "d/b.txt", []byte("b"))
	if _, errno := s.OpenFile("d/b.txt", create|experimentalsys.O_EXCL, 0o644); errno != experimentalsys.EEXIST {
		t.Fatalf("O_EXCL on an existing file: %v", errno)
	}
	if _, errno := s.OpenFile("nope/x", create, 0o644); errno != experimentalsys.ENOENT {
		t.Fatalf("create in a missing directory: %v", errno)
	}
	if _, errno := s.OpenFile("a.txt/x", rdonly, 0); errno != experimentalsys.ENOTDIR {
		t.Fatalf("a file as a directory: %v", errno)
	}
	if _, errno := s.OpenFile("d", rdwr, 0); errno != experimentalsys.EISDIR {
		t.Fatalf("a directory opened for writing: %v", errno)
	}

	// Writing past the end leaves zeros, also where a truncation cut.
	f := mustOpen(t, s, "a.txt", rdwr)
	if errno := f.Truncate(2); errno != 0 {
		t.Fatal(errno)
	}
	if _, errno := f.Pwrite([]byte("!"), 4); errno != 0 {
		t.Fatal(errno)
	}
	f.Close()
	if got := readFile(t, s, "a.txt"); !bytes.Equal(got, []byte("he\x00\x00!")) {
		t.Fatalf("after truncate and pwrite: %q", got)
	}
	// Append mode writes at the end whatever the offset.
	f = mustOpen(t, s, "a.txt", rdwr|experimentalsys.O_APPEND)
	if _, errno := f.Seek(0, io.SeekStart); errno != 0 {
		t.Fatal(errno)
	}
	f.Write([]byte("?"))
	f.Close()
	if got := readFile(t, s, "a.txt"); string(got) != "he\x00\x00!?" {
		t.Fatalf("after append: %q", got)
	}

	// A write far past the end leaves a hole that reads as zeros and is
	// not charged; one past the whole budget is refused outright.
	used := s.used
	f = mustOpen(t, s, "sparse", create)
	if _, errno := f.Pwrite([]byte("z"), 100*scratchBlock); errno != 0 {
		t.Fatal(errno)
	}
	if charged := s.used - used - entryCost("sparse"); charged != scratchBlock {
		t.Fatalf("a one-byte write after a hole charged %d bytes", charged)
	}
	if _, errno := f.Pwrite([]byte("z"), 1<<40); errno == 0 || files.pending.Swap(0) != errnoNospc {
		t.Fatalf("a write past the budget: %v", errno)
	}
	f.Close()
	if got := readFile(t, s, "sparse"); len(got) != 100*scratchBlock+1 || got[0] != 0 || got[len(got)-1] != 'z' {
		t.Fatalf("sparse file: %d bytes", len(got))
	}
	s.Unlink("sparse")

	// Rename over a file, into a directory; a directory not into itself.
	if errno := s.Rename("a.txt", "d/b.txt"); errno != 0 {
		t.Fatal(errno)
	}
	if _, errno := s.Stat("a.txt"); errno != experimentalsys.ENOENT {
		t.Fatalf("old name after rename: %v", errno)
	}
	if errno := s.Mkdir("d/e", 0o755); errno != 0 {
		t.Fatal(errno)
	}
	if errno := s.Rename("d", "d/e/f"); errno != experimentalsys.EINVAL {
		t.Fatalf("directory into itself: %v", errno)
	}
	if errno := s.Rmdir("d"); errno != experimentalsys.ENOTEMPTY {
		t.Fatalf("rmdir of a non-empty directory: %v", errno)
	}
	if errno := s.Symlink("/etc/passwd", "p"); errno == 0 {
		t.Fatal("a symbolic link was made")
	}

	// Listing, in name order, after a rewind too.
	dir := mustOpen(t, s, "d", rdonly)
	for range 2 {
		ents, errno := dir.Readdir(-1)
		if errno != 0 || len(ents) != 2 || ents[0].Name != "b.txt" || ents[1].Name != "e" || !ents[1].IsDir() {
			t.Fatalf("readdir: %v, %v", ents, errno)
		}
		dir.Seek(0, io.SeekStart)
	}
	dir.Close()

	// Everything removed gives its bytes back.
	for _, errno := range []experimentalsys.Errno{s.Unlink("d/b.txt"), s.Rmdir("d/e"), s.Rmdir("d")} {
		if errno != 0 {
			t.Fatal(errno)
		}
	}
	if s.used != 0 || files.open.Load() != 0 {
		t.Fatalf("empty tree: %d bytes used, %d files open", s.used, files.open.Load())
	}
}

func TestScratchFSBudget(t *testing.T) {
	const limit = 64 << 10
	files := &guestFiles{}
	s := newScratchFS(limit, files)
	f := mustOpen(t, s, "big", create)
	chunk := bytes.Repeat([]byte("x"), 1000)
	written := 0
	for {
		n, errno := f.Write(chunk)
		if errno != 0 {
			if pending := files.pending.Swap(0); pending != errnoNospc || !files.scratchFull.Load() {
				t.Fatalf("write past the budget: %v, pending errno %d", errno, pending)
			}
			break
		}
		written += n
	}
	// All but the last, partial block and the name's cost is usable.
	if written > limit || written < limit-scratchBlock-len(chunk)-scratchEntryCost {
		t.Fatalf("wrote %d bytes with a budget of %d", written, limit)
	}
	// Many empty files cost too.
	empty := newScratchFS(limit, &guestFiles{})
	n := 0
	for ; n < limit; n++ {
		g, errno := empty.OpenFile(fmt.Sprint(n), create, 0o644)
		if errno != 0 {
			break
		}
		g.Close()
	}
	if n == 0 || n > limit/scratchEntryCost {
		t.Fatalf("%d empty files fit in a budget of %d", n, limit)
	}
	// Unlinked while open, the file keeps its bytes until closed.
	if errno := s.Unlink("big"); errno != 0 {
		t.Fatal(errno)
	}
	if _, errno := f.Pwrite([]byte("y"), 0); errno != 0 {
		t.Fatalf("write to an open, unlinked file: %v", errno)
	}
	used := s.used
	f.Close()
	if s.used >= used-int64(written) {
		t.Fatalf("closing the unlinked file freed %d of its %d bytes", used-s.used, written)
	}
	writeFile(t, s, "again", chunk)
}

// TestPutFileAdoptsBlocks: a file passed in keeps the whole blocks of the
// bytes it was given, uncopied, and copies the last part block; it is
// charged as written, reads back whole, and a write into it, past its end
// too, behaves as in any file.
func TestPutFileAdoptsBlocks(t *testing.T) {
	s := newScratchFS(1<<20, &guestFiles{})
	data := bytes.Repeat([]byte("0123456789"), 1000) // two whole blocks and a part
	if errno := s.putFile("in/data.csv", data); errno != 0 {
		t.Fatal(errno)
	}
	n, _ := s.lookup("in/data.csv")
	if len(n.blocks) != 3 || &n.blocks[0][0] != &data[0] || &n.blocks[1][0] != &data[scratchBlock] || &n.blocks[2][0] == &data[2*scratchBlock] {
		t.Fatalf("blocks: %d, the whole ones not adopted or the part one not copied", len(n.blocks))
	}
	for i, b := range n.blocks {
		if len(b) != scratchBlock || cap(b) != scratchBlock {
			t.Fatalf("block %d: %d bytes, room for %d", i, len(b), cap(b))
		}
	}
	if min := int64(3 * scratchBlock); s.used < min {
		t.Fatalf("%d bytes charged for three blocks", s.used)
	}
	want := append(bytes.Clone(data[:scratchBlock-2]), []byte("ABCD")...)
	want = append(want, data[scratchBlock+2:]...)
	want = append(want, []byte("tail")...)
	f := mustOpen(t, s, "in/data.csv", experimentalsys.O_RDWR)
	if _, errno := f.Pwrite([]byte("ABCD"), scratchBlock-2); errno != 0 {
		t.Fatal(errno)
	}
	if _, errno := f.Pwrite([]byte("tail"), int64(len(data))); errno != 0 {
		t.Fatal(errno)
	}
	f.Close()
	got, errno := s.readFile("in/data.csv", 1<<20)
	if errno != 0 || !bytes.Equal(got, want) {
		t.Fatalf("read back %d bytes (%v), want %d", len(got), errno, len(want))
	}
}
