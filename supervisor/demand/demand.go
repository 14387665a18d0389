// Package demand sizes a pool of ready workers by how much it has been
// asked of lately: enough workers that a call rarely finds none ready
// while calls keep coming, none once they have stopped.
//
// A Meter keeps two exponentially decaying counts of the calls: a short
// one, whose rate with Little's law says how many workers are starting at
// any moment (the arrival rate times how long a start takes), and a long
// one, which says whether the pool is still in use at all. It also keeps
// the recent peak of calls in flight, decaying as the short count does:
// calls that keep that many in flight each want a worker ready when they
// call again, before the rate has caught up with them.
package demand

import (
	"math"
	"sync"
	"time"
)

// rateWindow is the time constant of the short count: the rate it gives
// follows a change in the arrival rate within a few seconds.
const rateWindow = 2 * time.Second

// Meter measures the demand for one pool. It is safe for concurrent use.
type Meter struct {
	// halfLife is the long count's: after a call, the pool stays in use
	// for about one half-life.
	halfLife time.Duration
	max      int

	mu          sync.Mutex
	last        time.Time // of the last update
	short, long float64
	// peak is the most calls in flight lately (InFlight), decaying.
	peak  float64
	start time.Duration // moving average of a worker's start
}

// New returns a Meter for a pool of at most max workers that empties once
// it has not been called for about halfLife. startGuess is how long a
// worker's start takes until Started has measured it.
func New(max int, halfLife, startGuess time.Duration) *Meter {
	return &Meter{halfLife: halfLife, max: max, start: startGuess}
}

// decay brings both counts to now; m.mu is held.
func (m *Meter) decay(now time.Time) {
	if !m.last.IsZero() {
		if dt := now.Sub(m.last); dt > 0 {
			fast := math.Exp(-float64(dt) / float64(rateWindow))
			m.short *= fast
			m.peak *= fast
			m.long *= math.Exp2(-float64(dt) / float64(m.halfLife))
		}
	}
	if now.After(m.last) {
		m.last = now
	}
}

// Called records a call at now.
func (m *Meter) Called(now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.decay(now)
	m.short++
	m.long++
}

// InFlight records that n calls were in flight at now.
func (m *Meter) InFlight(now time.Time, n int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.decay(now)
	m.peak = max(m.peak, float64(n))
}

// Started records how long one worker's start took.
func (m *Meter) Started(d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.start += (d - m.start) / 4
}

// Size is how many ready workers the pool should keep at now: none once
// the long count has fallen below half a call (about halfLife after the
// last one); otherwise one, plus twice as many as the current rate of calls
// keeps starting (the headroom keeps the pool from running dry between
// calls that come close together), and at least as many as calls were in
// flight lately (InFlight), at most max.
func (m *Meter) Size(now time.Time) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.decay(now)
	if m.long < 0.5 || m.max == 0 {
		return 0
	}
	rate := m.short / rateWindow.Seconds()
	n := max(1+int(2*rate*m.start.Seconds()), int(math.Round(m.peak)))
	return min(n, m.max)
}
