package supervisor

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"capsule/supervisor/demand"
	"capsule/supervisor/isolation"
	"capsule/supervisor/snapcache"
)

// pool keeps ready workers of one language, or of one of its snapshot
// variants: module loaded, lockdown applied, interpreter started, waiting
// for their one request. A worker is never reused: each is taken once,
// runs one request and exits, and the pool starts another in the
// background.
//
// How many it keeps follows demand: the recent rate of calls and how many
// are in flight (package demand), never fewer than floor (a language's
// --pool-* flag; none for a variant's pool), never more than the meter's
// maximum (--max-concurrency for a language). A call never waits for a
// start that another call waits for, nor for a start when none is under
// way: one that finds the pool empty takes over a start under way that no
// other call waits for (it began earlier, so it is ready sooner than a new
// one), or else starts its own worker at once (see acquireWorker). The
// pool's refills run beside the calls, as many at once as there are free
// execution slots (and at least floor).
type pool struct {
	s     *Supervisor
	name  snapcache.Name
	floor int
	// demand, when not nil, raises the pool's size above floor while calls
	// come; nil for a language whose pool is off (floor 0).
	demand *demand.Meter
	idle   time.Duration
	// inFlight counts the calls of the pool's language that took a worker
	// from it or started their own, until they end (arrive, leave).
	inFlight atomic.Int64
	// start starts a worker of name (Supervisor.startProcess; the pool's
	// tests start stand-ins).
	start func(name snapcache.Name) (*process, error)

	mu       sync.Mutex
	ready    []*pooledWorker // oldest first
	starting int
	closed   bool
	// waiters are the calls waiting in takeReady, oldest first: each is
	// handed the next worker that gets ready, or nil when the start it
	// waited for is not coming after all. Once the pool is warm there are
	// never more of them than starts under way.
	waiters []chan *process

	// warm is closed once the first worker of this language got ready (or
	// failed to): from then on the compilation cache is filled, and a call
	// that starts its own worker does not compile the module a second time.
	warm     chan struct{}
	warmOnce sync.Once
	wake     chan struct{}
	stop     chan struct{}
}

// refillDelay is how long after a take the pool starts a replacement
// while it still has ready workers.
const refillDelay = 30 * time.Millisecond

type pooledWorker struct {
	p     *process
	since time.Time
}

// plainStartGuess is how long a language's worker start is taken to last
// until one has been measured (a restore of the plain image: 10 to 30 ms
// of CPU).
const plainStartGuess = 30 * time.Millisecond

// newPool starts keeping ready workers of language: at least floor, more
// while calls come, up to max. With floor 0 it keeps none, and still starts
// one worker, to fill the compilation cache, and discards it.
func newPool(s *Supervisor, language string, floor, max int, idle time.Duration) *pool {
	pl := emptyPool(s, snapcache.Name{Language: language}, idle)
	pl.floor = floor
	if floor > 0 {
		pl.demand = demand.New(max, idle, plainStartGuess)
	}
	go pl.loop()
	return pl
}

// newDemandPool keeps ready workers of name as many as d says. The
// compilation cache is filled by then (the plain pools' first workers did
// it): the pool is warm from the start.
func newDemandPool(s *Supervisor, name snapcache.Name, d *demand.Meter, idle time.Duration) *pool {
	pl := emptyPool(s, name, idle)
	pl.demand = d
	pl.warmOnce.Do(func() { close(pl.warm) })
	go pl.loop()
	return pl
}

// emptyPool is a pool of name with nothing started and no size set, for
// newPool and newDemandPool to size and start.
func emptyPool(s *Supervisor, name snapcache.Name, idle time.Duration) *pool {
	return &pool{
		s:     s,
		start: s.startProcess,
		name:  name,
		idle:  idle,
		warm:  make(chan struct{}),
		wake:  make(chan struct{}, 1),
		stop:  make(chan struct{}),
	}
}

// target is how many ready workers the pool keeps now.
func (pl *pool) target() int {
	if pl.demand == nil {
		return pl.floor
	}
	return max(pl.floor, pl.demand.Size(time.Now()))
}

// arrive records a call of the pool's language for its demand and counts
// it in flight until leave. It does not wake the loop: the take that
// follows does, and a wake-up per call is CPU a trivial call notices.
func (pl *pool) arrive() {
	n := pl.inFlight.Add(1)
	if pl.demand != nil {
		now := time.Now()
		pl.demand.Called(now)
		pl.demand.InFlight(now, int(n))
	}
}

// leave counts a call that arrive counted out again.
func (pl *pool) leave() {
	pl.inFlight.Add(-1)
}

// take returns a ready worker, or nil when none is ready; pl.mu is held.
func (pl *pool) take() *process {
	for len(pl.ready) > 0 {
		w := pl.ready[0]
		pl.ready = pl.ready[1:]
		select {
		case <-w.p.exited:
			continue // died while waiting; the monitor refills
		default:
		}
		if len(pl.ready) == 0 {
			pl.signal()
		} else {
			// Starting a worker forks the server and costs the CPU the
			// call about to run needs: while others are ready, refill
			// once the call has likely answered.
			time.AfterFunc(refillDelay, pl.signal)
		}
		return w.p
	}
	return nil
}

// takeReady returns a ready worker, or nil when none is ready and none
// is coming for this caller, or when ctx ends. It waits for a start under
// way only while the pool is warming up (the first worker fills the
// compilation cache, and a worker started beside it would compile the
// module a second time) or when there are more starts under way than
// callers waiting for them: such a start began before the caller came,
// so it is ready sooner than one the caller would start now. It never
// waits for a start that another caller waits for: that is how a pool
// that was emptied by a burst of calls made them queue behind its refills.
func (pl *pool) takeReady(ctx context.Context) *process {
	pl.mu.Lock()
	p := pl.take()
	if p == nil {
		pl.signal() // empty: refill, to the target this call may have raised
	}
	if p != nil || pl.closed || (pl.isWarm() && pl.starting <= len(pl.waiters)) {
		pl.mu.Unlock()
		return p
	}
	handed := make(chan *process, 1)
	pl.waiters = append(pl.waiters, handed)
	pl.mu.Unlock()
	select {
	case p := <-handed:
		return p
	case <-ctx.Done():
	}
	pl.mu.Lock()
	defer pl.mu.Unlock()
	if i := slices.Index(pl.waiters, handed); i >= 0 {
		pl.waiters = slices.Delete(pl.waiters, i, i+1)
		return nil
	}
	// Handed a worker as ctx ended: it goes back to the pool.
	switch p := <-handed; {
	case p == nil:
	case pl.closed:
		go p.close()
	default:
		pl.ready = append([]*pooledWorker{{p: p, since: time.Now()}}, pl.ready...)
		go pl.monitor(p)
	}
	return nil
}

// isWarm reports whether the pool's first worker has got ready (or
// failed to).
func (pl *pool) isWarm() bool {
	select {
	case <-pl.warm:
		return true
	default:
		return false
	}
}

// releaseWaiters tells the newest waiters that no worker is coming for
// them, while there are more of them than starts under way (once warm),
// or all of them once the pool is closed; pl.mu is held.
func (pl *pool) releaseWaiters() {
	for len(pl.waiters) > 0 && (pl.closed || (pl.isWarm() && len(pl.waiters) > pl.starting)) {
		last := len(pl.waiters) - 1
		pl.waiters[last] <- nil
		pl.waiters = pl.waiters[:last]
	}
}

func (pl *pool) signal() {
	select {
	case pl.wake <- struct{}{}:
	default:
	}
}

// close stops refilling and kills the ready workers.
func (pl *pool) close() {
	pl.mu.Lock()
	if pl.closed {
		pl.mu.Unlock()
		return
	}
	pl.closed = true
	ready := pl.ready
	pl.ready = nil
	pl.releaseWaiters()
	pl.mu.Unlock()
	close(pl.stop)
	for _, w := range ready {
		w.p.close()
	}
}

// loop keeps the pool full: it starts workers when there are fewer than
// its target ready or starting, as many at once as there are free
// execution slots (at least floor, and one), ends those beyond the
// target, and recycles those idle for too long.
func (pl *pool) loop() {
	backoff := time.Duration(0)
	tick := time.NewTicker(pl.idle / 4)
	defer tick.Stop()
	select {
	case <-pl.warm: // a variant's pool: the cache is filled
	default:
		pl.startOne() // the first worker fills the compilation cache alone
	}
	for {
		select {
		case <-pl.stop:
			return
		case <-pl.wake:
		case <-tick.C:
			pl.recycleIdle()
			pl.shrink()
		}
		select {
		case <-pl.warm:
		default:
			continue // still warming up: one worker at a time
		}
		pl.mu.Lock()
		// Starts that callers wait for will not be ready workers.
		unclaimed := pl.starting - len(pl.waiters)
		need := min(pl.target()-len(pl.ready)-unclaimed, max(1, pl.floor, pl.s.freeSlots())-pl.starting)
		pl.mu.Unlock()
		for i := 0; i < need; i++ {
			if !pl.startOne() {
				// Starting failed: do not spin; try again later.
				backoff = min(max(2*backoff, 100*time.Millisecond), 10*time.Second)
				select {
				case <-time.After(backoff):
					pl.signal()
				case <-pl.stop:
					return
				}
				break
			}
			backoff = 0
		}
	}
}

// startOne starts a worker in the background. It reports false when the
// process could not even be started.
func (pl *pool) startOne() bool {
	p, err := pl.start(pl.name)
	if err != nil {
		pl.mu.Lock()
		closing := pl.closed
		pl.mu.Unlock()
		if closing || errors.Is(err, isolation.ErrSpawnerClosed) {
			// The server is shutting down (a short stdio session ends as
			// soon as it begins): no worker is wanted, nothing failed.
			pl.s.log.Debug("pool: not starting a worker: shutting down", "snapshot", pl.name.String())
		} else {
			pl.s.log.Warn("pool: cannot start worker", "snapshot", pl.name.String(), "error", err)
		}
		pl.mu.Lock()
		pl.warmOnce.Do(func() { close(pl.warm) })
		pl.releaseWaiters()
		pl.mu.Unlock()
		return false
	}
	pl.mu.Lock()
	pl.starting++
	pl.mu.Unlock()
	go func() {
		began := time.Now()
		err := p.awaitReady(context.Background(), runStart)
		if err == nil && pl.demand != nil {
			pl.demand.Started(time.Since(began))
		}
		pl.mu.Lock()
		pl.warmOnce.Do(func() { close(pl.warm) })
		pl.starting--
		handed, keep := false, false
		if err == nil && !pl.closed {
			if len(pl.waiters) > 0 {
				// Sent under pl.mu, so that a waiter whose ctx ends
				// either is still listed or has its worker.
				pl.waiters[0] <- p
				pl.waiters = pl.waiters[1:]
				handed = true
			} else if len(pl.ready) < pl.target() {
				pl.ready = append(pl.ready, &pooledWorker{p: p, since: time.Now()})
				keep = true
			}
		}
		pl.releaseWaiters()
		closed := pl.closed
		pl.mu.Unlock()
		if err != nil && !closed {
			pl.s.log.Warn("pool: worker did not get ready", "snapshot", pl.name.String(), "error", err,
				"worker_stderr", p.stderr.String())
		}
		switch {
		case handed:
			pl.signal() // taken: refill
		case keep:
			pl.signal()
			pl.monitor(p)
		default:
			p.close()
			if err == nil {
				pl.signal()
			}
		}
	}()
	return true
}

// monitor replaces p, a ready worker, if it dies while waiting.
func (pl *pool) monitor(p *process) {
	<-p.exited
	pl.remove(p)
}

// remove drops p from the ready list, if it is still there, and refills.
func (pl *pool) remove(p *process) {
	pl.mu.Lock()
	for i, w := range pl.ready {
		if w.p == p {
			pl.ready = append(pl.ready[:i], pl.ready[i+1:]...)
			break
		}
	}
	pl.mu.Unlock()
	pl.signal()
}

// shrink ends the oldest ready workers beyond the pool's target: a
// language's pool falls back to its floor, and a variant's empties, once
// their calls have stopped.
func (pl *pool) shrink() {
	pl.mu.Lock()
	extra := len(pl.ready) - pl.target()
	var old []*process
	for i := 0; i < extra; i++ {
		old = append(old, pl.ready[i].p)
	}
	if extra > 0 {
		pl.ready = pl.ready[extra:]
	}
	pl.mu.Unlock()
	for _, p := range old {
		p.close()
	}
}

// recycleIdle ends workers that have waited longer than the idle limit, so
// no process lives for long; the loop starts fresh ones.
func (pl *pool) recycleIdle() {
	var old []*process
	pl.mu.Lock()
	keep := pl.ready[:0]
	for _, w := range pl.ready {
		if time.Since(w.since) > pl.idle {
			old = append(old, w.p)
		} else {
			keep = append(keep, w)
		}
	}
	pl.ready = keep
	pl.mu.Unlock()
	for _, p := range old {
		p.close()
	}
}
