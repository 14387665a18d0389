package supervisor

import (
	"context"
	"io"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"capsule/ipc"
	"capsule/supervisor/demand"
	"capsule/supervisor/snapcache"
)

// standInEnv makes the test binary a stand-in worker (standIn): the pool
// tests need processes that get ready after a set time, not interpreters.
const standInEnv = "CAPSULE_POOL_TEST_STAND_IN"

func TestMain(m *testing.M) {
	if delay, ok := os.LookupEnv(standInEnv); ok {
		standIn(delay)
	}
	os.Exit(m.Run())
}

// standIn says Ready on the worker's output pipe after delay, then waits
// for its input pipe to close, and exits.
func standIn(delay string) {
	d, _ := time.ParseDuration(delay)
	time.Sleep(d)
	if err := ipc.NewWriter(os.NewFile(4, "out")).WriteJSON(ipc.TypeReady, ipc.Ready{Protocol: ipc.ProtocolVersion}); err != nil {
		os.Exit(1)
	}
	_, _ = io.Copy(io.Discard, os.NewFile(3, "in"))
	os.Exit(0)
}

// standIns starts stand-in workers that get ready after delay, and keeps
// them all, to check at the end that none was left running.
type standIns struct {
	delay time.Duration
	mu    sync.Mutex
	all   []*process
}

func (st *standIns) start(name snapcache.Name) (*process, error) {
	pipes, err := newWorkerPipes()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), standInEnv+"="+st.delay.String())
	cmd.ExtraFiles = []*os.File{pipes.toR, pipes.fromW}
	cmd.Stderr = pipes.errW
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // process.kill ends its group
	err = cmd.Start()
	closeFiles(pipes.toR, pipes.fromW, pipes.errW)
	if err != nil {
		closeFiles(pipes.toW, pipes.fromR, pipes.errR)
		return nil, err
	}
	p := &process{cmd: cmd, language: name.Language, toWorker: pipes.toW, fromWkr: pipes.fromR,
		in: ipc.NewReader(pipes.fromR, 1<<20), out: ipc.NewWriter(pipes.toW), exited: make(chan struct{})}
	go p.reap(p.collectStderr(pipes.errR))
	st.mu.Lock()
	st.all = append(st.all, p)
	st.mu.Unlock()
	return p, nil
}

// leftRunning counts the stand-ins that have not exited within a while.
func (st *standIns) leftRunning() int {
	st.mu.Lock()
	defer st.mu.Unlock()
	n := 0
	for _, p := range st.all {
		select {
		case <-p.exited:
		case <-time.After(5 * time.Second):
			n++
		}
	}
	return n
}

// testPool is a language pool of floor ready stand-ins at least, with
// slots execution slots, started and warm.
func testPool(t *testing.T, st *standIns, floor, slots int) *pool {
	t.Helper()
	s := &Supervisor{slots: make(chan struct{}, slots), log: hclog.NewNullLogger()}
	pl := emptyPool(s, snapcache.Name{Language: "python"}, time.Minute)
	pl.start = st.start
	pl.floor = floor
	pl.demand = demand.New(slots, time.Minute, st.delay)
	go pl.loop()
	select {
	case <-pl.warm:
	case <-time.After(30 * time.Second):
		t.Fatal("the pool's first stand-in did not get ready")
	}
	return pl
}

// call is a call's way to a worker, as acquireWorker takes it: a ready
// one or a start under way from the pool, else its own.
func (pl *pool) call(ctx context.Context) (p *process, own bool, err error) {
	pl.arrive()
	defer pl.leave()
	if p := pl.takeReady(ctx); p != nil {
		return p, false, nil
	}
	p, err = pl.start(pl.name)
	if err == nil {
		if err = p.awaitReady(ctx, runStart); err != nil {
			p.close()
		}
	}
	return p, true, err
}

// TestPoolBurst: 16 calls at once on a pool of 2 each get a worker; at no
// moment do more calls wait than there are starts under way (no call
// queues behind a start another waits for); and closing the pool leaves
// no worker running.
func TestPoolBurst(t *testing.T) {
	st := &standIns{delay: 200 * time.Millisecond}
	pl := testPool(t, st, 2, 16)
	if !eventually(10*time.Second, func() bool { pl.mu.Lock(); defer pl.mu.Unlock(); return len(pl.ready) == 2 }) {
		t.Fatal("the pool did not get its 2 ready workers")
	}
	const calls = 16
	var own atomic.Int64
	var worst atomic.Int64 // most waiters beyond the starts under way
	done := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			pl.mu.Lock()
			worst.Store(max(worst.Load(), int64(len(pl.waiters)-pl.starting)))
			pl.mu.Unlock()
			select {
			case <-done:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	var wg sync.WaitGroup
	for range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p, started, err := pl.call(context.Background())
			if err != nil {
				t.Errorf("a call got no worker: %v", err)
				return
			}
			if started {
				own.Add(1)
			}
			p.close()
		}()
	}
	wg.Wait()
	close(done)
	<-sampled
	t.Logf("%d of %d calls started their own worker", own.Load(), calls)
	if w := worst.Load(); w > 0 {
		t.Errorf("at one moment %d more calls waited than there were starts under way", w)
	}
	pl.mu.Lock()
	waiters := len(pl.waiters)
	pl.mu.Unlock()
	if waiters != 0 {
		t.Errorf("%d callers still listed as waiting after every call got its worker", waiters)
	}
	pl.close()
	if n := st.leftRunning(); n > 0 {
		t.Errorf("%d workers still running after the pool closed", n)
	}
}

// TestPoolWaiterCancelled: a call that waits for a start under way and is
// cancelled gets nothing, and the worker it waited for is kept ready, not
// lost; a call after it takes that worker.
func TestPoolWaiterCancelled(t *testing.T) {
	st := &standIns{delay: 200 * time.Millisecond}
	pl := testPool(t, st, 1, 4)
	// Take the ready one; the pool starts its replacement.
	first, _, err := pl.call(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer first.close()
	if !eventually(10*time.Second, func() bool { pl.mu.Lock(); defer pl.mu.Unlock(); return pl.starting > 0 || len(pl.ready) > 0 }) {
		t.Fatal("the pool did not start a replacement")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if p := pl.takeReady(ctx); p != nil {
		p.close()
		t.Log("the replacement was ready before the cancelled call came; nothing to wait for")
	}
	p, own, err := pl.call(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer p.close()
	if own {
		t.Error("the call after the cancelled one started its own worker; the pool's replacement was lost")
	}
	pl.close()
	p.close()
	first.close()
	if n := st.leftRunning(); n > 0 {
		t.Errorf("%d workers still running after the pool closed", n)
	}
}

// eventually polls cond for up to d.
func eventually(d time.Duration, cond func() bool) bool {
	for deadline := time.Now().Add(d); ; time.Sleep(10 * time.Millisecond) {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}
