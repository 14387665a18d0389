package isolation

import (
	"errors"
	"os/exec"
	"runtime"
	"sync"
)

// ErrSpawnerClosed is returned by Spawner.Start after Close.
var ErrSpawnerClosed = errors.New("isolation: spawner closed")

// Spawner starts processes from one dedicated OS thread.
//
// A child's Pdeathsig is delivered when the thread that forked it exits.
// The Go runtime may retire any thread that is not locked, so the
// supervisor must fork every worker from a thread that outlives it: the
// Spawner's goroutine locks its thread for its whole life and only runs
// cmd.Start on it. Waiting, I/O and killing can happen on any goroutine.
//
// Close ends the thread, which sends every still-running child that was
// started with Pdeathsig its signal: closing the Spawner is also a way to
// kill all workers at once.
type Spawner struct {
	reqs      chan spawnRequest
	done      chan struct{}
	closeOnce sync.Once
	mu        sync.RWMutex
	closed    bool
}

type spawnRequest struct {
	cmd   *exec.Cmd
	reply chan error
}

// NewSpawner starts the spawner's thread.
func NewSpawner() *Spawner {
	s := &Spawner{reqs: make(chan spawnRequest), done: make(chan struct{})}
	ready := make(chan struct{})
	go s.loop(ready)
	<-ready
	return s
}

func (s *Spawner) loop(ready chan<- struct{}) {
	// Never unlocked: when this goroutine returns, the runtime terminates
	// the thread instead of reusing it, which is what fires Pdeathsig.
	runtime.LockOSThread()
	close(ready)
	defer close(s.done)
	for req := range s.reqs {
		req.reply <- startCmd(req.cmd)
	}
}

// Start starts cmd on the spawner's thread and returns its error. On
// linux/amd64 it uses the vfork spawner when it can (see startCmd), else
// cmd.Start; either way cmd.Wait and cmd.Process work as after cmd.Start.
func (s *Spawner) Start(cmd *exec.Cmd) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return ErrSpawnerClosed
	}
	reply := make(chan error, 1)
	s.reqs <- spawnRequest{cmd: cmd, reply: reply}
	return <-reply
}

// Close stops the spawner: Start calls in progress finish first, then its
// goroutine ends. The runtime then terminates its thread, which sends the
// children their Pdeathsig, unless the thread is the process's main
// thread, which the runtime keeps until the process exits. Either way every
// child dies by the time the process does. Close is idempotent.
func (s *Spawner) Close() {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closed = true
		close(s.reqs)
		s.mu.Unlock()
	})
	<-s.done
}
