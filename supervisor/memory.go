package supervisor

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"capsule/runtimes"
)

// memoryCheckEvery is how often the watchdog reads a running worker's
// resident memory. A check costs one read of /proc/PID/statm (some
// microseconds); the first comes only after this long, so a quick call
// pays nothing.
const memoryCheckEvery = 50 * time.Millisecond

// workerBounds are the OS memory backstops of a worker of language (see
// runtimes.WorkerBounds).
func (s *Supervisor) workerBounds(language string) runtimes.Bounds {
	return runtimes.WorkerBounds(language, int64(s.cfg.Limits.Memory), int64(s.cfg.Limits.Scratch))
}

// watchMemory kills p when its resident memory passes its bound, the
// backstop for memory the host side of a worker holds for its guest
// outside the wasm cap. The returned function stops the watch.
func (s *Supervisor) watchMemory(p *process) (stop func()) {
	bound := p.memoryBound
	pid := p.cmd.Process.Pid
	var t *time.Timer
	t = time.AfterFunc(memoryCheckEvery, func() {
		rss, err := residentBytes(pid)
		if err != nil {
			return // the worker is gone
		}
		if rss > bound {
			p.memoryKilled.Store(true)
			s.log.Debug("worker over its memory bound: killed", "pid", pid, "rss", rss, "bound", bound)
			p.kill()
			return
		}
		t.Reset(memoryCheckEvery)
	})
	return func() { t.Stop() }
}

// residentBytes reads a process's resident set size from /proc/PID/statm.
func residentBytes(pid int) (int64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/statm")
	if err != nil {
		return 0, err
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0, fmt.Errorf("statm of %d: %q", pid, b)
	}
	pages, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return 0, err
	}
	return pages * int64(os.Getpagesize()), nil
}

// outOfMemoryMarkers are what the Go runtime writes to stderr when an
// allocation fails, here because the worker reached its RLIMIT_DATA.
var outOfMemoryMarkers = [][]byte{
	[]byte("fatal error: out of memory"),
	[]byte("runtime: out of memory"),
	[]byte("fatal error: runtime: cannot allocate memory"),
}

// stoppedForMemory reports whether a worker that ended without answering
// was stopped by one of the OS memory backstops: the watchdog, its
// cgroup's OOM killer, or its data rlimit.
func (p *process) stoppedForMemory() bool {
	if p.memoryKilled.Load() || p.cgroupOOM() {
		return true
	}
	tail := []byte(p.stderr.String())
	for _, m := range outOfMemoryMarkers {
		if bytes.Contains(tail, m) {
			return true
		}
	}
	return false
}

// memoryLimitError is how a worker stopped by an OS memory backstop ended.
type memoryLimitError struct {
	limit Size
	bound int64 // the worker's RSS bound
}

func (e *memoryLimitError) Error() string {
	return fmt.Sprintf("memory: limit of %s reached (the worker, runtime and scratch included, used more than its bound of %s and was stopped)",
		e.limit, Size(e.bound))
}
