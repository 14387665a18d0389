package supervisor

import (
	"context"
	"errors"
	"sync"
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
type pool struct {
	s    *Supervisor
	name snapcache.Name
	size int
	// demand, when not nil, sizes the pool instead of size (a variant's
	// pool: see variants.go).
	demand *demand.Meter
	idle   time.Duration

	mu       sync.Mutex
	ready    []*pooledWorker // oldest first
	starting int
	closed   bool
	// changed is closed (and replaced) whenever a worker becomes ready or
	// a start ends, to wake callers in takeWait.
	changed chan struct{}

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

// newPool starts keeping size ready workers of language. With size 0 it
// still starts one worker, to fill the compilation cache, and discards it.
func newPool(s *Supervisor, language string, size int, idle time.Duration) *pool {
	pl := emptyPool(s, snapcache.Name{Language: language}, idle)
	pl.size = size
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
		s:       s,
		name:    name,
		idle:    idle,
		warm:    make(chan struct{}),
		changed: make(chan struct{}),
		wake:    make(chan struct{}, 1),
		stop:    make(chan struct{}),
	}
}

// target is how many ready workers the pool keeps now.
func (pl *pool) target() int {
	if pl.demand == nil {
		return pl.size
	}
	return pl.demand.Size(time.Now())
}

// take returns a ready worker, or nil when none is ready.
func (pl *pool) take() *process {
	pl.mu.Lock()
	defer pl.mu.Unlock()
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

// takeWait returns a ready worker, waiting for one while the pool is
// warming up or starting some. It returns nil when the pool has none ready
// and none coming, or when ctx ends.
func (pl *pool) takeWait(ctx context.Context) *process {
	for {
		if p := pl.take(); p != nil {
			return p
		}
		pl.mu.Lock()
		changed := pl.changed
		warming := true
		select {
		case <-pl.warm:
			warming = false
		default:
		}
		coming := (pl.starting > 0 || warming) && !pl.closed
		pl.mu.Unlock()
		if !coming {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return nil
		}
	}
}

// notify wakes takeWait callers; pl.mu must be held.
func (pl *pool) notify() {
	close(pl.changed)
	pl.changed = make(chan struct{})
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
	pl.notify()
	pl.mu.Unlock()
	close(pl.stop)
	for _, w := range ready {
		w.p.close()
	}
}

// loop keeps the pool full: it starts workers when there are fewer than
// size ready or starting, and recycles those idle for too long.
func (pl *pool) loop() {
	backoff := time.Duration(0)
	tick := time.NewTicker(pl.idle / 4)
	defer tick.Stop()
	if pl.demand == nil {
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
		need := pl.target() - len(pl.ready) - pl.starting
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
	p, err := pl.s.startProcess(pl.name)
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
		pl.notify()
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
		keep := err == nil && !pl.closed && len(pl.ready) < pl.target()
		if keep {
			pl.ready = append(pl.ready, &pooledWorker{p: p, since: time.Now()})
		}
		closed := pl.closed
		pl.notify()
		pl.mu.Unlock()
		if err != nil && !closed {
			pl.s.log.Warn("pool: worker did not get ready", "snapshot", pl.name.String(), "error", err,
				"worker_stderr", p.stderr.String())
		}
		if !keep {
			p.close()
			if err == nil {
				pl.signal()
			}
			return
		}
		pl.signal()
		// Replace it if it dies while waiting.
		<-p.exited
		pl.remove(p)
	}()
	return true
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
// variant's pool empties once its calls have stopped.
func (pl *pool) shrink() {
	if pl.demand == nil {
		return
	}
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
