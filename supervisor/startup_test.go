package supervisor

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"capsule/ipc"
	"capsule/supervisor/scarcity"
)

// TestStartBoundedByProgress: a start that uses no CPU is a stall, one that
// uses more CPU than allowed is a loop, and one that progresses but
// outlasts the wall bound is a scarcity naming the load; none is ended by
// a fixed minute.
func TestStartBoundedByProgress(t *testing.T) {
	tests := []struct {
		name    string
		command []string
		lim     startLimits
		check   func(error) bool
	}{
		{"blocked", []string{"sleep", "30"}, startLimits{CPU: time.Minute, Stall: time.Second, Wall: time.Minute},
			func(err error) bool { return errors.Is(err, errStalled) }},
		{"looping", []string{"sh", "-c", "while :; do :; done"}, startLimits{CPU: 300 * time.Millisecond, Stall: time.Minute, Wall: time.Minute},
			func(err error) bool { return err != nil && strings.Contains(err.Error(), "looping") }},
		{"slow", []string{"sh", "-c", "while :; do :; done"}, startLimits{CPU: time.Minute, Stall: time.Minute, Wall: 1500 * time.Millisecond},
			func(err error) bool {
				var s *scarcity.Error
				return errors.As(err, &s) && strings.Contains(err.Error(), "load average")
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			defer w.Close() // the worker never says Ready
			cmd := exec.Command(tt.command[0], tt.command[1:]...)
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { cmd.Process.Kill(); cmd.Wait() }()
			p := &process{cmd: cmd, in: ipc.NewReader(r, 1<<10), exited: make(chan struct{})}
			start := time.Now()
			err = p.awaitReady(context.Background(), tt.lim)
			if !tt.check(err) {
				t.Fatalf("after %s: %v", time.Since(start).Round(time.Millisecond), err)
			}
		})
	}
}
