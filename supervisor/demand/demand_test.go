package demand

import (
	"testing"
	"time"
)

func TestSize(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	cases := []struct {
		name  string
		calls []time.Duration // when the calls came
		start time.Duration   // how long starts take
		// inFlight calls were in flight at the last call.
		inFlight int
		now      time.Duration
		max      int
		want     int
	}{
		{name: "never called", now: time.Second, max: 2, want: 0},
		{name: "one call, just now", calls: []time.Duration{0}, start: 100 * time.Millisecond, now: time.Second, max: 2, want: 1},
		{name: "one call, under a half-life ago", calls: []time.Duration{0}, start: 100 * time.Millisecond, now: 50 * time.Second, max: 2, want: 1},
		{name: "one call, over a half-life ago", calls: []time.Duration{0}, start: 100 * time.Millisecond, now: 70 * time.Second, max: 2, want: 0},
		{name: "many calls, long ago", calls: every(40, 50*time.Millisecond), start: 100 * time.Millisecond, now: 10 * time.Minute, max: 2, want: 0},
		{name: "a call a second", calls: every(20, time.Second), start: 100 * time.Millisecond, now: 20 * time.Second, max: 2, want: 1},
		{name: "back to back", calls: every(40, 50*time.Millisecond), start: 100 * time.Millisecond, now: 2 * time.Second, max: 2, want: 2},
		{name: "back to back, capped", calls: every(40, 50*time.Millisecond), start: 100 * time.Millisecond, now: 2 * time.Second, max: 1, want: 1},
		{name: "back to back, no pool", calls: every(40, 50*time.Millisecond), start: 100 * time.Millisecond, now: 2 * time.Second, max: 0, want: 0},
		{name: "back to back, slow starts", calls: every(40, 50*time.Millisecond), start: time.Second, now: 2 * time.Second, max: 8, want: 8},
		{name: "a burst, then quiet for a while", calls: every(40, 50*time.Millisecond), start: 100 * time.Millisecond, now: 30 * time.Second, max: 2, want: 1},
		{name: "16 in flight", calls: every(16, 0), inFlight: 16, start: 100 * time.Millisecond, max: 32, want: 16},
		{name: "16 in flight, capped", calls: every(16, 0), inFlight: 16, start: 100 * time.Millisecond, max: 4, want: 4},
		{name: "16 in flight, a second ago", calls: every(16, 0), inFlight: 16, start: 10 * time.Millisecond, now: time.Second, max: 32, want: 10},
		{name: "16 in flight, 10 s ago", calls: every(16, 0), inFlight: 16, start: 100 * time.Millisecond, now: 10 * time.Second, max: 32, want: 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := New(c.max, time.Minute, time.Second)
			for range 20 {
				m.Started(c.start) // the moving average settles
			}
			for _, d := range c.calls {
				m.Called(at(d))
			}
			if c.inFlight > 0 {
				m.InFlight(at(c.calls[len(c.calls)-1]), c.inFlight)
			}
			if got := m.Size(at(c.now)); got != c.want {
				t.Errorf("Size = %d, want %d", got, c.want)
			}
		})
	}
}

// every is n call times, gap apart, from 0.
func every(n int, gap time.Duration) []time.Duration {
	var ts []time.Duration
	for i := range n {
		ts = append(ts, time.Duration(i)*gap)
	}
	return ts
}

// TestClockGoingBack: a time before the last update decays nothing and
// counts the call.
func TestClockGoingBack(t *testing.T) {
	m := New(2, time.Minute, 100*time.Millisecond)
	now := time.Unix(1_000_000, 0)
	m.Called(now)
	m.Called(now.Add(-time.Hour))
	if got := m.Size(now); got != 1 {
		t.Errorf("Size = %d, want 1", got)
	}
}
