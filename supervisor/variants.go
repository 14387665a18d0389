package supervisor

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"capsule/runtimes"
	"capsule/supervisor/demand"
	"capsule/supervisor/importscan"
	"capsule/supervisor/snapcache"
)

// variantStartGuess is how long a variant's worker start is taken to
// last until one has been measured (a restore of a larger image than the
// plain one's: 60 to 100 ms of CPU).
const variantStartGuess = 100 * time.Millisecond

// variants are the snapshot variants the server keeps ready (the
// language table's, as --python-variants chose them): each made on its
// first call, once every language's plain snapshot and first worker are
// ready, and kept in a pool sized by its own calls. Until then, and while
// it cannot be made (the cache retries after a backoff), its calls start
// from the plain snapshot: slower, never wrong. A variant with a module of
// its own is the exception: its calls cannot run on the plain interpreter,
// so a call that finds it not ready starts a worker of it itself, making
// its snapshot if need be (acquireWorker).
type variants struct {
	// closed ends when the supervisor closes: a snapshot being made is
	// given up, and no pool is started after it.
	closed context.Context
	close  context.CancelFunc
	// byName holds the configured variants; empty without any.
	byName map[string]*variant
}

// variant is one snapshot variant's state.
type variant struct {
	s      *Supervisor
	name   snapcache.Name
	demand *demand.Meter
	// making is set while makeSnapshot runs: one at a time, and another
	// after one that ended without a snapshot (the cache retries a failed
	// one after its backoff).
	making atomic.Bool
	// snap is set once the snapshot is ready, after pool.
	snap atomic.Pointer[snapcache.Snapshot]
	mu   sync.Mutex
	pool *pool // nil without a Python pool, or until the snapshot is ready
	shut bool
}

// newVariants sets up the configured variants. A one-shot command (no
// Prewarm) has none: making a variant would cost it more than it saves.
// Nor has a server without the bundled packages, whose modules they are.
func newVariants(s *Supervisor) *variants {
	vs := &variants{byName: map[string]*variant{}}
	vs.closed, vs.close = context.WithCancel(context.Background())
	if !s.cfg.Prewarm || !s.cfg.BundledPackages {
		return vs
	}
	for _, name := range s.cfg.PythonVariants {
		vs.byName[name] = &variant{
			s:      s,
			name:   snapcache.Name{Language: runtimes.Python, Variant: name},
			demand: demand.New(s.cfg.Pool[runtimes.Python], s.cfg.PoolIdle, variantStartGuess),
		}
	}
	return vs
}

// variantsFor names the variants req's imports ask for, best first (its
// language's VariantsFor); required says the first has a module of its
// own, the only one the call's imports work on. Without the bundled
// packages, whose modules the variants import, there are none.
func (s *Supervisor) variantsFor(req Request) (names []string, required bool) {
	l, ok := s.cfg.Languages.Lookup(req.Language)
	if !ok || l.VariantsFor == nil || !s.cfg.BundledPackages {
		return nil, false
	}
	return l.VariantsFor(importscan.Modules(req.Code))
}

// pick returns the first configured variant of names, or nil for none.
func (vs *variants) pick(names []string) *variant {
	for _, name := range names {
		if v := vs.byName[name]; v != nil {
			return v
		}
	}
	return nil
}

// shutdown gives up a snapshot being made and closes the variants' pools.
func (vs *variants) shutdown() {
	vs.close()
	for _, v := range vs.byName {
		v.mu.Lock()
		v.shut = true
		pl := v.pool
		v.mu.Unlock()
		if pl != nil {
			pl.close()
		}
	}
}

// variantWorker returns a ready worker started from the first configured
// variant of those req's imports ask for (variantsFor), or nil: none is
// configured, its snapshot is not ready yet (the call starts it being
// made), or its worker did not start. required names the variant req must
// run on when there is no such worker (one with a module of its own), and
// is the zero Name otherwise.
func (s *Supervisor) variantWorker(ctx context.Context, req Request) (p *process, required snapcache.Name) {
	names, mustRun := s.variantsFor(req)
	if mustRun {
		required = snapcache.Name{Language: req.Language, Variant: names[0]}
	}
	v := s.variants.pick(names)
	if v == nil {
		return nil, required
	}
	v.demand.Called(time.Now())
	if v.snap.Load() == nil {
		if v.making.CompareAndSwap(false, true) {
			go func() {
				defer v.making.Store(false)
				v.makeSnapshot()
			}()
		}
		return nil, required
	}
	if v.pool != nil {
		v.pool.signal() // its size may have grown with this call
		if p := v.pool.takeReady(ctx); p != nil {
			return p, required
		}
	}
	p, err := s.startWorker(ctx, v.name)
	if err != nil {
		s.log.Warn("a variant's worker did not start; the call starts another",
			"snapshot", v.name.String(), "error", err)
		return nil, required
	}
	return p, required
}

// makeSnapshot makes or loads the variant's snapshot once the plain
// snapshots are ready (a plain call never waits for a variant), then
// starts its pool.
func (v *variant) makeSnapshot() {
	s := v.s
	for _, pl := range s.pools {
		select {
		case <-pl.warm:
		case <-s.variants.closed.Done():
			return
		}
	}
	snap := s.snapshots.Get(v.name)
	if snap == nil {
		// The cache said why; calls keep starting from the plain
		// snapshot (or, for a variant with a module of its own, a
		// worker of it started cold), and a later one asks again.
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.shut {
		return
	}
	if s.cfg.Pool[runtimes.Python] > 0 {
		v.pool = newDemandPool(s, v.name, v.demand, s.cfg.PoolIdle)
	}
	v.snap.Store(snap)
	s.log.Info("snapshot variant ready", "snapshot", v.name.String())
}
