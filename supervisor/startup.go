package supervisor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"capsule/supervisor/scarcity"
)

// A worker's start-up (Setup to Ready) is bounded by the progress it
// makes, not by a fixed wall-clock time. Compiling CPython's module into
// an empty cache takes over ten seconds of CPU; on a host whose CPUs are
// saturated (two busy loops per core) that is minutes of wall time, and a
// fixed minute killed the worker mid-compile, threw the compile away, and
// made the next start begin it again: calls were lost for as long as the
// load lasted. A worker that gets CPU is starved, not hung, and is waited
// for; one whose CPU time stands still is blocked, and one that uses far
// more CPU than a start needs is looping.

// startLimits bound one worker's start-up.
type startLimits struct {
	// CPU is the most CPU time the worker may use without getting ready.
	CPU time.Duration
	// Stall is how long its CPU time may stand still.
	Stall time.Duration
	// Wall is the longest the start may take, however it progresses.
	Wall time.Duration
}

var (
	// runStart bounds a worker started for a call or the pool: from the
	// snapshot it needs tens of milliseconds of CPU, without one (its
	// compile included) about fifteen seconds.
	runStart = startLimits{CPU: time.Minute, Stall: 30 * time.Second, Wall: 3 * time.Minute}
	// snapshotStart bounds a snapshot worker, which compiles the module
	// into an empty cache and starts the interpreter once.
	snapshotStart = startLimits{CPU: 5 * time.Minute, Stall: time.Minute, Wall: 15 * time.Minute}
)

// startCheckEvery is how often a starting worker's progress is read.
const startCheckEvery = 500 * time.Millisecond

// errStalled marks a start that made no progress: worth another try.
// errTooSlow marks one that progressed but outlasted its wall bound on
// saturated CPUs: another try would only add to the load.
var (
	errStalled = errors.New("stalled")
	errTooSlow = errors.New("worker start-up too slow")
)

// awaitReady waits for the worker's answer to Setup: Ready, or Failure
// with the reason, within lim, or until ctx ends. A start that ran out of
// wall time while the host's CPUs are saturated is a *scarcity.Error; one
// that stalled wraps errStalled. The caller closes the process on error.
func (p *process) awaitReady(ctx context.Context, lim startLimits) error {
	ready := make(chan error, 1)
	go func() { ready <- p.readReady() }()
	tick := time.NewTicker(startCheckEvery)
	defer tick.Stop()
	start := time.Now()
	var cpu time.Duration
	progressed := start
	for {
		select {
		case err := <-ready:
			return err
		case <-ctx.Done():
			return ctx.Err()
		case now := <-tick.C:
			used, err := processCPU(p.cmd.Process.Pid)
			if err != nil {
				continue // it exited: readReady says how
			}
			if used > cpu {
				cpu, progressed = used, now
			}
			switch {
			case cpu > lim.CPU:
				return fmt.Errorf("worker not ready after using %s of CPU, far more than a start needs (looping)", cpu.Round(time.Millisecond))
			case now.Sub(progressed) > lim.Stall:
				return fmt.Errorf("worker not ready after %s: it used no CPU for the last %s (blocked): %w",
					now.Sub(start).Round(time.Second), lim.Stall, errStalled)
			case now.Sub(start) > lim.Wall:
				return &scarcity.Error{
					Cause: fmt.Sprintf("the host's CPUs are saturated (%s): a worker got %s of CPU in %s without getting ready",
						loadAverage(), cpu.Round(time.Millisecond), lim.Wall),
					Err: errTooSlow,
				}
			}
		}
	}
}

// clockTick is the unit of /proc/PID/stat's CPU times (USER_HZ, 100 on
// every Linux architecture Go supports).
const clockTick = 10 * time.Millisecond

// processCPU is the CPU time pid has used, all its threads, from
// /proc/PID/stat.
func processCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	// The command name may hold spaces and parentheses: fields count from
	// the last ')'. utime and stime are fields 14 and 15.
	i := strings.LastIndexByte(string(b), ')')
	f := strings.Fields(string(b[i+1:]))
	if i < 0 || len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %q", pid, b)
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, err
	}
	return time.Duration(utime+stime) * clockTick, nil
}

// loadAverage describes the host's load for an error message.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if err != nil || len(f) < 3 {
		return fmt.Sprintf("%d CPUs", runtime.NumCPU())
	}
	return fmt.Sprintf("load average %s, %s, %s on %d CPUs", f[0], f[1], f[2], runtime.NumCPU())
}
