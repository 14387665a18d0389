package supervisor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"capsule/ipc"
)

// stderrTail is how much of a worker's own stderr is kept for the log: the
// end is where a Go runtime crash says what happened.
const stderrTail = 8 << 10

// process is one running worker, from start to reaping.
type process struct {
	cmd      *exec.Cmd
	language string
	toWorker *os.File // parent's end of fd 3
	fromWkr  *os.File // parent's end of fd 4
	in       *ipc.Reader
	out      *ipc.Writer
	stderr   tailBuffer
	// exited is closed once the process has been reaped; state then holds
	// its exit status.
	exited     chan struct{}
	state      *os.ProcessState
	killOnce   sync.Once
	killedByUs bool
}

// startProcess starts one worker for language and sends it its Setup frame.
// The worker is not ready until its Ready frame arrives (see awaitReady).
func (s *Supervisor) startProcess(language string) (*process, error) {
	toR, toW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("creating ipc pipe: %w", err)
	}
	fromR, fromW, err := os.Pipe()
	if err != nil {
		toR.Close()
		toW.Close()
		return nil, fmt.Errorf("creating ipc pipe: %w", err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		toR.Close()
		toW.Close()
		fromR.Close()
		fromW.Close()
		return nil, fmt.Errorf("creating stderr pipe: %w", err)
	}
	cmd := &exec.Cmd{
		Path:        s.executable,
		Args:        []string{"capsule", "worker"},
		Env:         []string{}, // nothing of the host's environment
		Dir:         "/",
		Stderr:      errW,
		ExtraFiles:  []*os.File{toR, fromW}, // become fds 3 and 4
		SysProcAttr: s.sysProcAttr(),
	}
	err = s.spawner.Start(cmd)
	// The child has its copies; the parent keeps only its own ends, so
	// that EOF arrives when the child dies.
	toR.Close()
	fromW.Close()
	errW.Close()
	if err != nil {
		toW.Close()
		fromR.Close()
		errR.Close()
		return nil, fmt.Errorf("starting worker: %w", err)
	}
	p := &process{
		cmd:      cmd,
		language: language,
		toWorker: toW,
		fromWkr:  fromR,
		in:       ipc.NewReader(fromR, s.maxFrame()),
		out:      ipc.NewWriter(toW),
		exited:   make(chan struct{}),
	}
	stderrDone := make(chan struct{})
	go func() {
		_, _ = io.Copy(&p.stderr, errR)
		errR.Close()
		close(stderrDone)
	}()
	go func() {
		// Reap as soon as it exits; wait for stderr so the tail is whole.
		_ = cmd.Wait()
		<-stderrDone
		p.state = cmd.ProcessState
		close(p.exited)
	}()
	setup := ipc.Setup{
		Protocol:     ipc.ProtocolVersion,
		Language:     language,
		MemoryBytes:  uint64(s.cfg.Limits.Memory),
		MaxOutput:    int64(s.cfg.Limits.MaxOutput),
		MaxTimeoutMS: s.cfg.Limits.MaxTimeout.Milliseconds(),
		CacheDir:     s.cfg.CacheDir,
		ScratchBytes: int64(s.cfg.Limits.Scratch),
		PythonPath:   s.cfg.PythonPath,
	}
	if err := p.out.WriteJSON(ipc.TypeSetup, setup); err != nil {
		p.close()
		return nil, fmt.Errorf("sending setup to worker: %w", err)
	}
	return p, nil
}

// awaitReady waits for the worker's answer to Setup: Ready, or Failure
// with the reason. It gives up after timeout or when ctx ends; the caller
// closes the process on error.
func (p *process) awaitReady(ctx context.Context, timeout time.Duration) error {
	ready := make(chan error, 1)
	go func() { ready <- p.readReady() }()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case err := <-ready:
		return err
	case <-timer.C:
		return fmt.Errorf("worker not ready after %s", timeout)
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (p *process) readReady() error {
	f, err := p.in.Next()
	if err != nil {
		return fmt.Errorf("worker did not get ready: %w", p.describeEnd(err))
	}
	switch f.Type {
	case ipc.TypeReady:
		var r ipc.Ready
		if err := ipc.DecodeJSON(f, &r); err != nil {
			return err
		}
		if r.Protocol != ipc.ProtocolVersion {
			return fmt.Errorf("worker speaks protocol %d, supervisor %d", r.Protocol, ipc.ProtocolVersion)
		}
		return nil
	case ipc.TypeFailure:
		var fl ipc.Failure
		if err := ipc.DecodeJSON(f, &fl); err != nil {
			return err
		}
		return errors.New(fl.Message)
	}
	return fmt.Errorf("worker sent a %s frame before ready", f.Type)
}

// kill ends the worker and everything it may have started: its process
// group (and, with a PID namespace, everything under it).
func (p *process) kill() {
	p.killOnce.Do(func() {
		select {
		case <-p.exited:
			return
		default:
		}
		p.killedByUs = true
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		_ = p.cmd.Process.Kill()
	})
}

// close kills the worker if it is still running, waits until it is reaped,
// and releases the pipes. It is safe to call more than once.
func (p *process) close() {
	p.kill()
	<-p.exited
	p.toWorker.Close()
	p.fromWkr.Close()
}

// describeEnd turns an error on the pipe into what happened to the
// worker: when the pipe simply closed, the worker ended, and how it ended
// is the news.
func (p *process) describeEnd(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, os.ErrClosed) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, errWorkerEnded) {
		return p.exitError()
	}
	return err
}

// exitError waits briefly for the worker to exit and says how it ended.
func (p *process) exitError() error {
	select {
	case <-p.exited:
	case <-time.After(2 * time.Second):
		p.kill()
		<-p.exited
	}
	return errors.New(exitReason(p.state))
}

// exitReason says in words how a worker ended without answering.
func exitReason(st *os.ProcessState) string {
	ws, ok := st.Sys().(syscall.WaitStatus)
	if !ok {
		return fmt.Sprintf("worker ended: %v", st)
	}
	switch {
	case ws.Signaled() && ws.Signal() == syscall.SIGSYS:
		return "worker was stopped by its seccomp filter (it attempted a forbidden system call)"
	case ws.Signaled() && ws.Signal() == syscall.SIGKILL:
		return "worker was killed (SIGKILL: CPU-time limit, out of memory, or killed from outside)"
	case ws.Signaled():
		return fmt.Sprintf("worker was killed by signal %s", ws.Signal())
	default:
		return fmt.Sprintf("worker exited with status %d without answering", ws.ExitStatus())
	}
}

// tailBuffer keeps the last stderrTail bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > stderrTail {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-stderrTail:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(bytes.TrimSpace(t.buf))
}
