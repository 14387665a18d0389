package ipc

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"capsule/runtimes/fileset"
)

// readAll feeds every frame in data to a receiver with lim, as the
// supervisor does with what a worker sends back.
func readAll(data []byte, lim fileset.Limits) ([]fileset.File, error) {
	r := NewFileReceiver(lim, true)
	in := NewReader(bytes.NewReader(data), 1<<20)
	for {
		f, err := in.Next()
		if err != nil {
			return r.Files()
		}
		if err := r.Add(f); err != nil {
			return nil, err
		}
	}
}

func TestFilesRoundTrip(t *testing.T) {
	big := bytes.Repeat([]byte("0123456789abcdef"), FileChunk/8+3) // three chunks
	files := []fileset.File{
		{Path: "a/big.csv", Data: big},
		{Path: "a/empty", Data: []byte{}},
		{Path: "b.bin", Data: []byte{0, 1, 2}, Binary: true},
		{Path: "c.png", Truncated: true, Size: 1 << 40},
	}
	var buf bytes.Buffer
	if err := NewWriter(&buf).WriteFiles(files); err != nil {
		t.Fatal(err)
	}
	got, err := readAll(buf.Bytes(), fileset.Limits{MaxBytes: int64(len(big)) + 3, MaxFiles: 3})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(files) {
		t.Fatalf("got %d files, want %d", len(got), len(files))
	}
	for i, f := range files {
		g := got[i]
		if g.Path != f.Path || !bytes.Equal(g.Data, f.Data) || g.Binary != f.Binary || g.Truncated != f.Truncated || g.Len() != f.Len() {
			t.Errorf("file %d: got %q (%d bytes, binary %v, truncated %v), want %q", i, g.Path, g.Len(), g.Binary, g.Truncated, f.Path)
		}
	}
}

// TestFileReceiverRefuses sends what a hostile worker might, and checks
// that each is refused with what is wrong.
func TestFileReceiverRefuses(t *testing.T) {
	lim := fileset.Limits{MaxBytes: 10, MaxFiles: 2}
	header := func(path string, size int64, truncated bool) []byte {
		return frame(TypeFile, `{"path":"`+path+`","size":`+strconv.FormatInt(size, 10)+`,"truncated":`+strconv.FormatBool(truncated)+`}`)
	}
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	tests := []struct {
		name string
		data []byte
		want string
	}{
		{"bad path", cat(header("../x", 1, false), frame(TypeFileData, "x")), `"..`},
		{"absolute path", header("/etc/passwd", 0, false), "absolute"},
		{"out of order", cat(header("b", 0, false), header("a", 0, false)), "out of order"},
		{"the same path twice", cat(header("a", 0, false), header("a", 0, false)), "out of order"},
		{"file and directory", cat(header("a", 0, false), header("a/b", 0, false)), "which is a file"},
		{"over the bytes", header("a", 11, false), "over the limits"},
		{"over the count", cat(header("a", 0, false), header("b", 0, false), header("c", 0, false)), "over the limits"},
		{"truncated needlessly", header("a", 1, true), "need not be"},
		{"negative size", header("a", -1, false), "beyond what may be listed"},
		{"data without header", frame(TypeFileData, "x"), "no file header"},
		{"more data than declared", cat(header("a", 1, false), frame(TypeFileData, "xy")), "no file header"},
		{"data for a truncated file", cat(header("a", 20, true), frame(TypeFileData, "x")), "no file header"},
		{"short file", cat(header("a", 3, false), frame(TypeFileData, "x")), "2 bytes short"},
		{"short file, then another", cat(header("a", 3, false), header("b", 0, false)), "3 bytes short"},
		{"unknown field", frame(TypeFile, `{"path":"a","size":0,"mode":1}`), "unknown field"},
		{"not a file frame", frame(TypeStdout, "x"), "not part of a file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := readAll(tt.data, lim)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want an error containing %q", err, tt.want)
			}
		})
	}
	// Files passed in are never truncated.
	r := NewFileReceiver(lim, false)
	f, _ := NewReader(bytes.NewReader(header("a", 20, true)), 1<<10).Next()
	if err := r.Add(f); err == nil {
		t.Fatal("a truncated file passed in was accepted")
	}
}

func TestReadFiles(t *testing.T) {
	files := []fileset.File{{Path: "a", Data: []byte("x")}, {Path: "b", Data: bytes.Repeat([]byte("y"), FileChunk+1), Binary: true}, {Path: "c", Data: []byte("zz")}}
	arena := make([]byte, 0, 1<<20)
	tests := []struct {
		name   string
		buffer BufferFunc
		inside []bool // whether each file's content is in arena
	}{
		{name: "the receiver's own memory", inside: []bool{false, false, false}},
		{name: "buffers given", buffer: func(size int64, binary bool) []byte {
			if !binary && size == 2 {
				return make([]byte, 0, 3) // the wrong size: not used
			}
			b := arena[len(arena) : len(arena) : len(arena)+int(size)]
			arena = arena[:len(arena)+int(size)]
			return b
		}, inside: []bool{true, true, false}},
	}
	for _, tt := range tests {
		var buf bytes.Buffer
		w := NewWriter(&buf)
		if err := w.WriteFiles(files); err != nil {
			t.Fatal(err)
		}
		_ = w.WriteJSON(TypeDone, Done{})
		in := NewReader(&buf, 1<<20)
		got, err := ReadFiles(in, 3, fileset.Limits{MaxBytes: 1 << 20, MaxFiles: 1 << 20}, tt.buffer)
		if err != nil || len(got) != 3 {
			t.Fatalf("%s: ReadFiles: %d files, %v", tt.name, len(got), err)
		}
		for i, f := range got {
			if !bytes.Equal(f.Data, files[i].Data) {
				t.Errorf("%s: file %s holds %d bytes, want %d", tt.name, f.Path, len(f.Data), len(files[i].Data))
			}
			p := unsafe.Pointer(unsafe.SliceData(f.Data))
			inArena := uintptr(p) >= uintptr(unsafe.Pointer(unsafe.SliceData(arena))) && uintptr(p) < uintptr(unsafe.Pointer(unsafe.SliceData(arena)))+uintptr(cap(arena))
			if inArena != tt.inside[i] {
				t.Errorf("%s: file %s in the buffer given: %v, want %v", tt.name, f.Path, inArena, tt.inside[i])
			}
		}
		if f, err := in.Next(); err != nil || f.Type != TypeDone {
			t.Fatalf("%s: after the files: %v %v; ReadFiles read too far", tt.name, f.Type, err)
		}
	}
}

// FuzzFileReceiver feeds arbitrary frames to the receiver of returned
// files, as a hostile worker would. It may refuse them, never panic, and
// what it accepts keeps every rule.
func FuzzFileReceiver(f *testing.F) {
	f.Add(append(frame(TypeFile, `{"path":"a.csv","size":2}`), frame(TypeFileData, "x,")...))
	f.Add(frame(TypeFile, `{"path":"b/c.png","size":99,"truncated":true}`))
	f.Add(append(frame(TypeFile, `{"path":"a","size":0}`), frame(TypeFile, `{"path":"a/b","size":0}`)...))
	lim := fileset.Limits{MaxBytes: 64, MaxFiles: 3}
	f.Fuzz(func(t *testing.T, data []byte) {
		files, err := readAll(data, lim)
		if err != nil {
			return
		}
		sent, set := 0, fileset.PathSet{}
		for i, file := range files {
			if fileset.CheckPath(file.Path) != nil || set.Add(file.Path) != nil {
				t.Fatalf("accepted the path %q", file.Path)
			}
			if i > 0 && fileset.Compare(files[i-1].Path, file.Path) >= 0 {
				t.Fatalf("accepted %q after %q", file.Path, files[i-1].Path)
			}
			if !file.Truncated {
				sent++
			}
		}
		if sent > lim.MaxFiles || fileset.TotalLen(files) > lim.MaxBytes {
			t.Fatalf("accepted %d files of %d bytes, over %+v", sent, fileset.TotalLen(files), lim)
		}
	})
}
