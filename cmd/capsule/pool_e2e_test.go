package main

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
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

// startDelay is the extra time every worker's start takes in the tests
// below (CAPSULE_FAULT_START_DELAY, worker/faults.go): a sleep, not CPU, so
// that how the pool overlaps starts shows on a machine of any size, and
// dominates the CPU a call costs (tens of milliseconds, or some hundreds
// when 16 starts share two loaded cores).
const startDelay = time.Second

// startDelayedServer starts a server whose workers each take startDelay
// longer to start, with 16 execution slots whatever the machine's cores,
// and waits until its first call has been answered and its pools have had
// time to fill.
func startDelayedServer(t *testing.T, tool string) *testServer {
	t.Helper()
	s := startServerEnv(t, []string{"CAPSULE_FAULT_START_DELAY=" + startDelay.String()}, "--max-concurrency", "16")
	s.call(t, tool, "1")
	time.Sleep(2 * startDelay)
	return s
}

// timedCall makes one call of "6 * 7" from any goroutine and returns how
// long it took, or what went wrong.
func timedCall(s *testServer, tool string) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	req := mcp.CallToolRequest{}
	req.Params.Name = tool
	req.Params.Arguments = map[string]any{"code": "6 * 7"}
	began := time.Now()
	res, err := s.c.CallTool(ctx, req)
	took := time.Since(began)
	if err != nil {
		return took, err
	}
	if got := text(res); res.IsError || !strings.Contains(got, "42") {
		return took, fmt.Errorf("answer %q, want 42", got)
	}
	return took, nil
}

// TestPoolStartsOverlap: with every start made startDelay slower, calls
// that find the pool empty do not queue behind its refills. With 16 calls
// in flight the starts overlap about 16 at a time, where a pool that made
// calls wait for its own refills of 2 overlapped 2; and a back-to-back
// sequence waits for at most one start at a time, and rarely: the pool
// grows with the rate of calls, where one of 2 left every second call
// waiting for a start.
func TestPoolStartsOverlap(t *testing.T) {
	for _, l := range []struct{ name, tool string }{
		{"python", "execute_python"},
		{"javascript", "execute_javascript"},
	} {
		t.Run(l.name+"/16 in flight", func(t *testing.T) {
			s := startDelayedServer(t, l.tool)
			const inFlight, each = 16, 3
			errs := make(chan error, inFlight)
			began := time.Now()
			for range inFlight {
				go func() {
					for range each {
						if _, err := timedCall(s, l.tool); err != nil {
							errs <- err
							return
						}
					}
					errs <- nil
				}()
			}
			for range inFlight {
				if err := <-errs; err != nil {
					t.Fatal(err)
				}
			}
			took := time.Since(began)
			// How many starts ran at once, on average: every call needed
			// one, and each takes at least startDelay.
			overlap := float64(inFlight*each) * startDelay.Seconds() / took.Seconds()
			t.Logf("%d calls, %d in flight, in %s: %.1f starts at once on average", inFlight*each, inFlight, took.Round(time.Millisecond), overlap)
			if overlap < inFlight/2 {
				t.Errorf("starts overlapped %.1f at a time, want at least %d of the %d calls in flight: calls waited for each other's starts", overlap, inFlight/2, inFlight)
			}
		})
		t.Run(l.name+"/back to back", func(t *testing.T) {
			s := startDelayedServer(t, l.tool)
			const calls = 60
			var waited int
			var slowest time.Duration
			began := time.Now()
			for range calls {
				took, err := timedCall(s, l.tool)
				if err != nil {
					t.Fatal(err)
				}
				slowest = max(slowest, took)
				if took >= startDelay/2 {
					waited++
				}
			}
			t.Logf("%d calls back to back in %s: %d waited for a start, the slowest %s", calls,
				time.Since(began).Round(time.Millisecond), waited, slowest.Round(time.Millisecond))
			if slowest >= 2*startDelay {
				t.Errorf("a call took %s: it waited for more than one start (each %s)", slowest.Round(time.Millisecond), startDelay)
			}
			if waited > calls/4 {
				t.Errorf("%d of %d calls back to back waited for a start, want at most %d: the pool did not grow with the rate of calls", waited, calls, calls/4)
			}
		})
	}
}

// rssOf is the resident memory of pid, in bytes (0 when it is gone).
func rssOf(pid int) int64 {
	kb, _ := strconv.ParseInt(strings.TrimSuffix(procStatus(pid, "VmRSS"), " kB"), 10, 64)
	return kb << 10
}

// TestBurstStaysBounded: a burst of 64 calls at once, half Python, half
// JavaScript, is answered in full, and the workers alive at any moment stay
// within what the execution slots and the pools' maximum allow (ready
// workers are memory), however many calls wait. Once the calls stop, the
// pools fall back to their floor of 2 each (here after a --pool-idle of 2s
// rather than the default minute).
func TestBurstStaysBounded(t *testing.T) {
	const burst = 64
	for _, slots := range []int{runtime.NumCPU(), 8} {
		t.Run(fmt.Sprintf("%d slots", slots), func(t *testing.T) {
			s := startServer(t, "--max-concurrency", strconv.Itoa(slots), "--pool-idle", "2s")
			s.call(t, "execute_python", "1")
			s.call(t, "execute_javascript", "1")
			// Each slot runs a worker; each language's pool keeps at most
			// one ready or starting per slot (and 2 with fewer slots); and
			// each of those may have a predecessor that has answered, or
			// been ended, and not yet exited.
			bound := 2 * (slots + 2*max(2, slots))
			var peakWorkers int
			var peakRSS int64
			stop := make(chan struct{})
			sampled := make(chan struct{})
			go func() {
				defer close(sampled)
				server := s.cmd.Process.Pid
				for {
					kids := children(server)
					rss := rssOf(server)
					for _, k := range kids {
						rss += rssOf(k)
					}
					peakWorkers, peakRSS = max(peakWorkers, len(kids)), max(peakRSS, rss)
					select {
					case <-stop:
						return
					case <-time.After(10 * time.Millisecond):
					}
				}
			}()
			errs := make(chan error, burst)
			began := time.Now()
			for i := range burst {
				tool := []string{"execute_python", "execute_javascript"}[i%2]
				go func() {
					_, err := timedCall(s, tool)
					errs <- err
				}()
			}
			for range burst {
				if err := <-errs; err != nil {
					t.Errorf("a call of the burst: %v", err)
				}
			}
			took := time.Since(began)
			close(stop)
			<-sampled
			t.Logf("%d calls answered in %s; at most %d workers (bound %d), %d MiB resident, server and workers together",
				burst, took.Round(time.Millisecond), peakWorkers, bound, peakRSS>>20)
			if peakWorkers > bound {
				t.Errorf("%d workers were alive at once, want at most %d with %d slots", peakWorkers, bound, slots)
			}
			// Back to the floor of 2 per language, and no more for a while
			// (recycling ends an idle worker before it starts its
			// replacement).
			server := s.cmd.Process.Pid
			if !eventually(30*time.Second, func() bool { return len(children(server)) <= 4 }) {
				t.Fatalf("the server still has %d workers 30 s after the burst, want the pools' floor of 2 each", len(children(server)))
			}
			for range 100 {
				if n := len(children(server)); n > 4 {
					t.Fatalf("the server has %d workers after the burst, want the pools' floor of 2 each", n)
				}
				time.Sleep(30 * time.Millisecond)
			}
		})
	}
}
