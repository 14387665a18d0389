package ipc

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

func TestWidenPipes(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	file, err := os.CreateTemp(t.TempDir(), "not-a-pipe")
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	WidenPipes(StdioPipeSize, r, file) // a file that is not a pipe is left alone
	size, err := unix.FcntlInt(w.Fd(), unix.F_GETPIPE_SZ, 0)
	if err != nil {
		t.Fatal(err)
	}
	if size != StdioPipeSize {
		t.Errorf("the pipe holds %d bytes, want %d", size, StdioPipeSize)
	}
}
