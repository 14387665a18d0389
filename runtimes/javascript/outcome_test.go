package javascript

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/tetratelabs/wazero/sys"

	"capsule/runtimes"
)

// TestOutcome covers the endings that JavaScript cannot easily provoke: a
// trap, an exit, and a trap after a refused heap growth.
func TestOutcome(t *testing.T) {
	e := testEngine(t)
	start := time.Now()
	jsErr := &runtimes.ErrorInfo{Type: "InternalError", Message: "out of memory", Traceback: "InternalError: out of memory"}
	tests := []struct {
		name          string
		memoryRefused bool
		jsErr         *runtimes.ErrorInfo
		trap          error
		wantType      string
		wantLimit     string
		wantExit      int
	}{
		{name: "trap", trap: errors.New("wasm error: unreachable"), wantType: "RuntimeError"},
		{name: "exit", trap: sys.NewExitError(3), wantExit: 3},
		{name: "trap at the memory limit", memoryRefused: true, trap: errNoMemory, wantType: "MemoryError", wantLimit: runtimes.LimitMemory},
		{name: "error at the memory limit", memoryRefused: true, jsErr: jsErr, wantType: "MemoryError", wantLimit: runtimes.LimitMemory},
		{name: "plain error", jsErr: jsErr, wantType: "InternalError"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := &instance{eng: e, memoryRefused: tt.memoryRefused}
			o := in.outcome(start, renderedValue{}, tt.jsErr, tt.trap)
			gotType := ""
			if o.Error != nil {
				gotType = o.Error.Type
			}
			if gotType != tt.wantType || o.Limit != tt.wantLimit || o.ExitCode != tt.wantExit {
				t.Errorf("outcome = %+v (error %+v), want type %q limit %q exit %d", o, o.Error, tt.wantType, tt.wantLimit, tt.wantExit)
			}
		})
	}
}

// TestCancelledRun: a context cancelled without a deadline stops the
// script too, through the same interrupt handler.
func TestCancelledRun(t *testing.T) {
	in, _, _ := testInstance(t, testEngine(t))
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	o := in.Run(ctx, runtimes.Request{Code: "while (true) {}"})
	if o.Limit != runtimes.LimitTimeout {
		t.Errorf("outcome %+v, want a timeout", o)
	}
}
