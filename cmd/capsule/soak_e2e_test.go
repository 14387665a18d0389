package main

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// soakCall is one kind of call in a soak, with what its answer must be.
type soakCall struct {
	name, tool string
	args       map[string]any
	// ok checks the answer; a named limit where the call asks for one is
	// an answer, anything else a lost call.
	ok func(st structured) bool
}

func resultIs(want string) func(structured) bool {
	return func(st structured) bool { return st.Error == nil && string(st.Result) == want }
}

// soakCalls are the mixed calls of a soak: trivial and realistic Python,
// JavaScript, output, the scratch directory, a raised exception and a
// timeout.
var soakCalls = []soakCall{
	{"python trivial", "execute_python", map[string]any{"code": "1 + 1"}, resultIs("2")},
	{"python realistic", "execute_python", map[string]any{"code": "import json, statistics, collections, datetime, re\n" +
		"rows = [{'m': i % 12, 'v': (i * 37) % 101} for i in range(200)]\n" +
		"by = collections.defaultdict(list)\nfor r in rows: by[r['m']].append(r['v'])\n" +
		"round(statistics.mean(max(v) for v in by.values()), 2)"}, resultIs("94.17")},
	{"javascript trivial", "execute_javascript", map[string]any{"code": "1 + 1"}, resultIs("2")},
	{"javascript async", "execute_javascript", map[string]any{"code": "await new Promise(r => setTimeout(() => r(6 * 7), 5))"}, resultIs("42")},
	{"python output", "execute_python", map[string]any{"code": "print('x' * 10)"}, func(st structured) bool {
		return st.Error == nil && st.Stdout == strings.Repeat("x", 10)+"\n"
	}},
	{"python scratch", "execute_python", map[string]any{"code": "open('f', 'w').write('abc')\nopen('f').read()"}, resultIs(`"abc"`)},
	{"python exception", "execute_python", map[string]any{"code": "1 / 0"}, func(st structured) bool {
		return st.Error != nil && st.Error.Type == "ZeroDivisionError" && st.Limit == nil
	}},
	{"python timeout", "execute_python", map[string]any{"code": "while True: pass", "timeout_seconds": 0.3}, func(st structured) bool {
		return st.Limit != nil && *st.Limit == "timeout"
	}},
}

// cpuHogs starts n processes that spin forever and returns a function that
// kills them.
func cpuHogs(t *testing.T, n int) func() {
	t.Helper()
	var hogs []*exec.Cmd
	for range n {
		cmd := exec.Command("sh", "-c", "while :; do :; done")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		hogs = append(hogs, cmd)
	}
	return func() {
		for _, h := range hogs {
			h.Process.Kill()
			h.Wait()
		}
	}
}

// soak sends calls mixed calls, inFlight at a time, until all are
// answered or the time is up (then no new one starts), while two busy
// loops per CPU compete for the machine. It fails the test on any answer
// that is not the one expected.
func soak(t *testing.T, s *testServer, calls, inFlight int, limit time.Duration) {
	stop := cpuHogs(t, 2*runtime.NumCPU())
	defer stop()
	start := time.Now()
	var next, answered atomic.Int64
	var mu sync.Mutex
	failures := map[string]int{}
	var slowest time.Duration
	var wg sync.WaitGroup
	for range inFlight {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= calls || time.Since(start) > limit {
					return
				}
				c := soakCalls[i%len(soakCalls)]
				began := time.Now()
				_, st := s.callArgs(t, c.tool, c.args)
				took := time.Since(began)
				answered.Add(1)
				mu.Lock()
				slowest = max(slowest, took)
				if !c.ok(st) {
					key := fmt.Sprintf("%s: result %s, limit %s, error %+v", c.name, st.Result, fmtLimit(st.Limit), st.Error)
					failures[key]++
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	t.Logf("%d calls answered in %.1f s under %d busy loops; slowest %.1f s", answered.Load(),
		time.Since(start).Seconds(), 2*runtime.NumCPU(), slowest.Seconds())
	for f, n := range failures {
		t.Errorf("%d× %s", n, f)
	}
	if answered.Load() < int64(calls)/2 {
		t.Errorf("only %d of %d calls answered in %s", answered.Load(), calls, limit)
	}
}

// TestSoakUnderCPUContention: a few hundred mixed calls while two busy
// loops per CPU starve the machine, to a server with its pools and to one
// that starts a worker per call, and not one is lost: every answer is the
// code's own, or a limit the call asked for. Bounded to about a minute;
// `make bench` runs a longer one (CAPSULE_SOAK_CALLS).
func TestSoakUnderCPUContention(t *testing.T) {
	if testing.Short() {
		t.Skip("a minute of CPU contention")
	}
	calls := 300
	if n, err := fmt.Sscan(os.Getenv("CAPSULE_SOAK_CALLS"), &calls); n == 1 && err == nil {
		t.Logf("CAPSULE_SOAK_CALLS=%d", calls)
	}
	for _, tc := range []struct {
		name  string
		flags []string
	}{
		{"pools", nil},
		{"a worker per call", noPool},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startServer(t, tc.flags...)
			s.call(t, "execute_python", "1")
			s.call(t, "execute_javascript", "1")
			soak(t, s, calls/2, 8, time.Duration(calls)*100*time.Millisecond)
		})
	}
}
