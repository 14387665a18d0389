package scarcity

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestClassify(t *testing.T) {
	tests := []struct {
		name   string
		err    error
		stderr string
		cause  string // empty: not a scarcity
	}{
		{"clone EAGAIN", fmt.Errorf("starting worker: %w", os.NewSyscallError("clone", syscall.EAGAIN)), "", "process limit"},
		{"worker runtime without threads", errors.New("worker exited with status 2 without answering"),
			"runtime: failed to create new OS thread (have 3 already; errno=11)\nfatal error: newosproc", "process limit"},
		{"clone ENOMEM", os.NewSyscallError("clone", syscall.ENOMEM), "", "out of memory"},
		{"pid namespace full", os.NewSyscallError("clone", syscall.ENOSPC), "", "pid namespace"},
		{"other errno", os.NewSyscallError("clone", syscall.EPERM), "", ""},
		{"worker failure", errors.New("python: compile: bad module"), "panic: boom", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Classify(tt.err, tt.stderr)
			var e *Error
			isScarce := errors.As(got, &e)
			if tt.cause == "" {
				if isScarce || got != tt.err {
					t.Fatalf("Classify = %v, want the error unchanged", got)
				}
				return
			}
			if !isScarce || !strings.Contains(e.Error(), tt.cause) || !strings.Contains(e.Error(), "try again") ||
				!errors.Is(got, tt.err) {
				t.Fatalf("Classify = %v, want a scarcity naming %q that wraps the error", got, tt.cause)
			}
		})
	}
}

// TestWaitExit: the wait returns when the process exits, not before, and
// leaves it to be reaped.
func TestWaitExit(t *testing.T) {
	cmd := exec.Command("sleep", "0.3")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	WaitExit(cmd.Process.Pid)
	if d := time.Since(start); d < 200*time.Millisecond {
		t.Errorf("WaitExit returned after %s, before the process exited", d)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("reaping after WaitExit: %v", err)
	}
}
