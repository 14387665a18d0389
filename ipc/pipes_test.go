package ipc

import (
	"errors"
	"os"
	"testing"
	"time"

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
	// The pipe keeps working deadlines: the supervisor ends a stuck call
	// by them, and Fd would have made the file blocking.
	if err := r.SetReadDeadline(time.Now().Add(10 * time.Millisecond)); err != nil {
		t.Fatalf("the widened pipe takes no deadline: %v", err)
	}
	read := make(chan error, 1)
	go func() {
		_, err := r.Read(make([]byte, 1))
		read <- err
	}()
	select {
	case err := <-read:
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("a read past the deadline: %v, want a deadline error", err)
		}
	case <-time.After(5 * time.Second):
		w.Close() // let the read end
		t.Fatal("a read past the deadline still blocks: the pipe was made blocking")
	}
	size, err := unix.FcntlInt(w.Fd(), unix.F_GETPIPE_SZ, 0)
	if err != nil {
		t.Fatal(err)
	}
	if size != StdioPipeSize {
		t.Errorf("the pipe holds %d bytes, want %d", size, StdioPipeSize)
	}
}
