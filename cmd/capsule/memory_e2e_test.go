package main

// The memory limit bounds the whole worker, not only the guest's linear
// memory: guests that make the host side of their runtime hold memory are
// stopped by the OS backstops (data rlimit, RSS watchdog, cgroup where
// delegated), answer with limit "memory", and never hold more than the
// limit plus the documented overhead.

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"capsule/runtimes"
)

// watchdogSlack is what a worker may grow by between two checks of the
// RSS watchdog (50 ms): a guest allocating host memory as fast as it can
// was measured at under 4 MiB per interval.
const watchdogSlack = 16 << 20

// peakRSS follows pid until it exits and returns its highest resident set
// size (VmHWM), in bytes.
func peakRSS(pid int) int64 {
	var peak int64
	for alive(pid) {
		if kb, err := strconv.ParseInt(strings.TrimSuffix(procStatus(pid, "VmHWM"), " kB"), 10, 64); err == nil {
			peak = max(peak, kb<<10)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return peak
}

// openUntilEMFILE is Python that opens a compressed stdlib source until the
// guest runs out of descriptors, keeping them all in fds.
const openUntilEMFILE = `import os
fds = []
try:
    while True:
        fds.append(os.open("/usr/local/lib/python3.11/pydoc_data/topics.py", os.O_RDONLY))
except OSError as e:
    assert e.errno == 33, e
`

func TestMemoryBombsStayBounded(t *testing.T) {
	const limit = 64 << 20
	// Both causes are fixed (shared stdlib files and at most 1,024 open
	// files; cleared timers free their host memory), so the bombs now end
	// at those bounds or at the deadline; what the test keeps proving is
	// that the worker stays within the limit plus the documented
	// overhead meanwhile, whatever stops it.
	bombs := []struct{ name, tool, code, end string }{
		// Each open decompressed a stdlib file into Go memory, outside the
		// wasm cap, and kept it (1 GB RSS in 15 s before the fixes). Opening
		// now stops at EMFILE within milliseconds, too soon to watch the
		// worker, so the bomb then reads every open file over and over
		// until the deadline.
		{"python open loop", "execute_python", openUntilEMFILE + `while True:
    for fd in fds:
        os.lseek(fd, 0, os.SEEK_SET)
        os.read(fd, 1 << 20)`, "timeout: execution exceeded 20s"},
		// Each cancelled timer kept host state (7 MB/s of Go memory).
		{"javascript timer loop", "execute_javascript",
			`let n=0; for(;;){ clearTimeout(setTimeout(()=>{}, 1e9)); n++ }`, "timeout: execution exceeded 20s"},
	}
	for _, b := range bombs {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			s := startServer(t, append(noPool, "--memory", "64MiB", "--timeout", "20s", "--max-timeout", "20s")...)
			settle(t, s)
			type answer struct {
				res *mcp.CallToolResult
				st  structured
			}
			got := make(chan answer, 1)
			go func() {
				res, st := s.callArgs(t, b.tool, map[string]any{"code": b.code})
				got <- answer{res, st}
			}()
			pid := lockedWorker(t, s)
			peak := peakRSS(pid)
			var a answer
			select {
			case a = <-got:
			case <-time.After(2 * time.Minute):
				t.Fatal("no answer")
			}
			memory := a.st.Limit != nil && *a.st.Limit == runtimes.LimitMemory && a.st.Error != nil &&
				strings.Contains(a.st.Error.Message, "memory: limit of 64MiB")
			if !a.res.IsError || a.st.Error == nil || !(memory || strings.Contains(a.st.Error.Message, b.end)) {
				t.Fatalf("answer: limit %s, error %+v; want %q, or limit memory naming 64MiB", fmtLimit(a.st.Limit), a.st.Error, b.end)
			}
			bound := int64(limit + runtimes.WorkerRSSOverhead + watchdogSlack)
			t.Logf("peak RSS %d MiB, bound %d MiB, answered after %.1f s", peak>>20, bound>>20, a.st.DurationMS/1000)
			if peak > bound {
				t.Fatalf("worker peaked at %d MiB resident, over the limit + overhead of %d MiB", peak>>20, bound>>20)
			}
			// The server carries on.
			if _, st := s.call(t, b.tool, "1 + 1"); string(st.Result) != "2" {
				t.Fatalf("after the bomb, 1 + 1 = %s", st.Result)
			}
		})
	}
}

// TestScratchCountedInBounds is W5: with --scratch 256MiB --memory 64MiB,
// filling /tmp was killed at 193 MiB and answered as a memory limit. The
// backstops now allow memory + scratch + overhead, so filling scratch ends
// with limit scratch, and the worker stays within that bound.
func TestScratchCountedInBounds(t *testing.T) {
	s := startServer(t, append(noPool, "--memory", "64MiB", "--scratch", "256MiB", "--timeout", "60s")...)
	settle(t, s)
	fills := []struct{ name, code string }{
		{"one file", "with open('big', 'wb') as f:\n    while True:\n        f.write(bytes(1 << 20))"},
		{"many files", "import os\ni = 0\nwhile True:\n    with open(f'f{i}', 'wb') as f:\n        f.write(os.urandom(1 << 20))\n    i += 1"},
	}
	for _, f := range fills {
		t.Run(f.name, func(t *testing.T) {
			_, st := s.call(t, "execute_python", f.code)
			if st.Limit == nil || *st.Limit != runtimes.LimitScratch || st.Error == nil ||
				!strings.Contains(st.Error.Message, "scratch: limit of 256MiB reached") {
				t.Fatalf("answer: limit %s, error %+v; want limit scratch naming 256MiB", fmtLimit(st.Limit), st.Error)
			}
		})
	}
}
