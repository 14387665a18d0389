package main

import (
	"slices"
	"syscall"
	"testing"
	"time"
)

// readyWorkers waits until the server has exactly n workers, all past
// their lockdown (a ready pooled worker waits under its seccomp filter).
func readyWorkers(t *testing.T, s *testServer, n int) []int {
	t.Helper()
	var ready []int
	if !eventually(30*time.Second, func() bool {
		ready = ready[:0]
		for _, c := range children(s.cmd.Process.Pid) {
			if procStatus(c, "Seccomp") == "2" {
				ready = append(ready, c)
			}
		}
		return len(ready) == n
	}) {
		t.Fatalf("want %d ready workers, have %v (children %v)", n, ready, children(s.cmd.Process.Pid))
	}
	slices.Sort(ready)
	return ready
}

func TestPoolKeepsReadyWorkers(t *testing.T) {
	s := startServer(t, "--pool-python", "2", "--pool-javascript", "1")
	first := readyWorkers(t, s, 3)

	// A call takes a ready worker, which exits after its one request; the
	// pool starts another.
	_, st := s.call(t, "execute_python", "21 * 2")
	if string(st.Result) != "42" {
		t.Fatalf("result %s", st.Result)
	}
	// The answer comes before the used worker has exited, and the refill
	// starts shortly after: wait for the set to change.
	var after []int
	if !eventually(30*time.Second, func() bool {
		after = readyWorkers(t, s, 3)
		return !slices.Equal(first, after)
	}) {
		t.Fatalf("the same workers %v are still waiting: one should have been used up and replaced", after)
	}

	// A ready worker that dies while waiting is replaced.
	victim := after[0]
	if err := syscall.Kill(victim, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if !eventually(30*time.Second, func() bool {
		return !slices.Contains(readyWorkers(t, s, 3), victim)
	}) {
		t.Fatalf("killed worker %d was not replaced", victim)
	}
}

func TestPoolRecyclesIdleWorkers(t *testing.T) {
	s := startServer(t, "--pool-python", "1", "--pool-javascript", "0", "--pool-idle", "3s")
	// Wait out the JavaScript warm-up worker, so the one left is Python's.
	s.call(t, "execute_javascript", "1")
	time.Sleep(500 * time.Millisecond)
	first := readyWorkers(t, s, 1)
	if !eventually(15*time.Second, func() bool {
		now := readyWorkers(t, s, 1)
		return now[0] != first[0]
	}) {
		t.Fatalf("worker %d was not recycled after its idle time", first[0])
	}
}

func TestPoolDisabled(t *testing.T) {
	s := startServer(t, noPool...)
	settle(t, s) // the warm-up workers exit and none are kept
	_, st := s.call(t, "execute_javascript", "'still works'")
	if string(st.Result) != `"still works"` {
		t.Fatalf("result %s", st.Result)
	}
}
