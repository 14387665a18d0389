package supervisor

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"capsule/ipc"
	"capsule/supervisor/scarcity"
	"capsule/supervisor/snapcache"
)

// stderrTail is how much of a worker's own stderr is kept for the log: the
// end is where a Go runtime crash says what happened.
const stderrTail = 8 << 10

// workerEnv is a worker's whole environment: nothing of the host's, only
// settings for the worker's own Go runtime (a guest never sees them; its
// environment is the runtime's, see runtimes/). A worker lives for one call
// and allocates little after its start, so collecting garbage is wasted
// CPU: collection is off until the Go heap reaches 64 MiB.
var workerEnv = []string{"GOGC=off", "GOMEMLIMIT=64MiB"}

// process is one running worker, from start to reaping.
type process struct {
	cmd      *exec.Cmd
	language string
	// variant is the snapshot variant the worker started from, or "".
	variant  string
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
	// memoryKilled is set when the memory watchdog killed the worker.
	memoryKilled atomic.Bool
	// memoryLimit is the configured limit, for the answer that names it;
	// memoryBound the most resident memory the worker may hold.
	memoryLimit Size
	memoryBound int64
	// cgroup is the worker's own cgroup, or nil.
	cgroup *workerCgroup
	// ended, when not nil, is called once the call the worker ran has
	// ended: its pool counts the calls in flight (pool.leave).
	ended func()
}

// startProcess starts one worker from the interpreter snapshot name (a
// language's, or a variant's) and sends it its Setup frame. The worker is
// not ready until its Ready frame arrives (see awaitReady). The first call
// for a name makes its snapshot (and waits for it).
func (s *Supervisor) startProcess(name snapcache.Name) (*process, error) {
	snap := s.snapshots.Get(name)
	if snap == nil {
		return s.spawnWorker(name, ipc.ModeRun, "", nil, nil)
	}
	return s.spawnWorker(name, ipc.ModeRun, snap.Key, snap.Image, snap.Code)
}

// spawnWorker starts a worker in mode for name's language. image and code,
// when not nil, become its ipc.SnapshotFD and ipc.ImageFD: name's snapshot
// (named key) and the compiled image to start from, or to write.
func (s *Supervisor) spawnWorker(name snapcache.Name, mode, key string, image, code *os.File) (*process, error) {
	pipes, err := newWorkerPipes()
	if err != nil {
		return nil, err
	}
	// fds 3 and 4, snapcache.FD, ipc.SnapshotFD and ipc.ImageFD; a nil
	// entry is closed in the child.
	files := []*os.File{pipes.toR, pipes.fromW, nil, nil, nil}
	cacheDir := ""
	if s.cacheDir != nil {
		files[snapcache.FD-3] = s.cacheDir
		cacheDir = snapcache.WorkerPath
	}
	if image != nil && code != nil {
		files[ipc.SnapshotFD-3] = image
		files[ipc.ImageFD-3] = code
	} else {
		// A cold start. A variant's interpreter would import its packages
		// at every start; its calls start from the plain interpreter
		// instead, unless the variant runs a module of its own, whose
		// packages import nowhere else.
		key = ""
		if !s.ownModule(name) {
			name.Variant = ""
		}
	}
	cmd := &exec.Cmd{
		Path:        s.executable,
		Args:        []string{"capsule", "worker"},
		Env:         slices.Concat(workerEnv, faultEnv()), // nothing of the host's environment
		Dir:         "/",
		Stderr:      pipes.errW,
		ExtraFiles:  files,
		SysProcAttr: s.sysProcAttr(),
	}
	err = s.spawner.Start(cmd)
	// The child has its copies; the parent keeps only its own ends, so
	// that EOF arrives when the child dies.
	closeFiles(pipes.toR, pipes.fromW, pipes.errW)
	if err != nil {
		closeFiles(pipes.toW, pipes.fromR, pipes.errR)
		return nil, fmt.Errorf("starting worker: %w", scarcity.Classify(err, ""))
	}
	p := &process{
		cmd:         cmd,
		language:    name.Language,
		variant:     name.Variant,
		toWorker:    pipes.toW,
		fromWkr:     pipes.fromR,
		in:          ipc.NewReader(pipes.fromR, s.maxFrame()),
		out:         ipc.NewWriter(pipes.toW),
		exited:      make(chan struct{}),
		memoryLimit: s.cfg.Limits.Memory,
		memoryBound: s.workerBounds(name.Language).RSS,
	}
	stderrDone := p.collectStderr(pipes.errR)
	if s.cgroups != nil {
		// Before Setup: the worker reads no code until after it.
		if p.cgroup, err = s.cgroups.add(cmd.Process.Pid, p.memoryBound); err != nil {
			s.log.Warn("worker runs without its memory cgroup", "error", err)
		}
	}
	go p.reap(stderrDone)
	if err := p.out.WriteJSON(ipc.TypeSetup, s.setupFor(name, mode, key, cacheDir)); err != nil {
		p.close()
		return nil, fmt.Errorf("sending setup to worker: %w", err)
	}
	return p, nil
}

// workerPipes are the three pipes to a worker: its ipc input (fd 3), its
// ipc output (fd 4) and its stderr, each with the parent's and the
// child's end.
type workerPipes struct {
	toR, toW, fromR, fromW, errR, errW *os.File
}

// newWorkerPipes makes a worker's pipes, or none.
func newWorkerPipes() (*workerPipes, error) {
	var ends [6]*os.File
	for i, what := range []string{"ipc", "ipc", "stderr"} {
		r, w, err := os.Pipe()
		if err != nil {
			closeFiles(ends[:2*i]...)
			return nil, fmt.Errorf("creating %s pipe: %w", what, err)
		}
		ends[2*i], ends[2*i+1] = r, w
	}
	return &workerPipes{toR: ends[0], toW: ends[1], fromR: ends[2], fromW: ends[3], errR: ends[4], errW: ends[5]}, nil
}

// closeFiles closes each of files.
func closeFiles(files ...*os.File) {
	for _, f := range files {
		f.Close()
	}
}

// collectStderr keeps the tail of the worker's stderr from errR until it
// closes, which the returned channel then says.
func (p *process) collectStderr(errR *os.File) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		_, _ = io.Copy(&p.stderr, errR)
		errR.Close()
		close(done)
	}()
	return done
}

// reap waits for the worker to exit, and for its stderr to close so that
// the tail is whole, then records its exit status and closes p.exited.
// The wait is the poller's: a thread blocked in wait4 per worker would
// make the server's threads grow with its workers.
func (p *process) reap(stderrDone <-chan struct{}) {
	scarcity.WaitExit(p.cmd.Process.Pid)
	_ = p.cmd.Wait()
	<-stderrDone
	p.state = p.cmd.ProcessState
	close(p.exited)
}

// setupFor is the Setup frame of a worker in mode for name, starting from
// the snapshot named key (none when empty), with cacheDir the compilation
// cache's path as the worker sees it.
func (s *Supervisor) setupFor(name snapcache.Name, mode, key, cacheDir string) ipc.Setup {
	setup := ipc.Setup{
		Protocol:         ipc.ProtocolVersion,
		Language:         name.Language,
		MemoryBytes:      uint64(s.cfg.Limits.Memory),
		MaxOutput:        int64(s.cfg.Limits.MaxOutput),
		MaxTimeoutMS:     s.cfg.Limits.MaxTimeout.Milliseconds(),
		CacheDir:         cacheDir,
		Mode:             mode,
		SnapshotKey:      key,
		ScratchBytes:     int64(s.cfg.Limits.Scratch),
		PythonPath:       s.cfg.PythonPath,
		MaxFilesIn:       int64(s.cfg.Limits.MaxFilesIn),
		MaxFilesOut:      int64(s.cfg.Limits.MaxFilesOut),
		MaxFilesOutCount: s.cfg.Limits.MaxFilesOutCount,
		BundledPackages:  s.cfg.BundledPackages,
		Variant:          name.Variant,
	}
	return setup
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
	if p.cgroup != nil {
		p.cgroup.remove()
	}
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

// exitError waits briefly for the worker to exit and says how it ended:
// a *memoryLimitError when an OS memory backstop stopped it, a
// *scarcity.Error when the host's process limit did.
func (p *process) exitError() error {
	select {
	case <-p.exited:
	case <-time.After(2 * time.Second):
		p.kill()
		<-p.exited
	}
	if p.stoppedForMemory() {
		return &memoryLimitError{limit: p.memoryLimit, bound: p.memoryBound}
	}
	// A worker whose Go runtime could not make a thread met the host's
	// process limit: a *scarcity.Error.
	return scarcity.Classify(errors.New(exitReason(p.state)), p.stderr.String())
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

// tailBuffer keeps the first stderrHead and the last stderrTail bytes
// written to it: a Go runtime crash says what happened first, then dumps
// every goroutine, and a panic's own goroutine comes last.
type tailBuffer struct {
	mu      sync.Mutex
	head    []byte
	buf     []byte
	dropped bool
}

// stderrHead is how much of the start of a worker's stderr is kept.
const stderrHead = 1 << 10

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(p)
	if room := stderrHead - len(t.head); room > 0 {
		k := min(room, len(p))
		t.head = append(t.head, p[:k]...)
		p = p[k:]
	}
	t.buf = append(t.buf, p...)
	if len(t.buf) > stderrTail {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-stderrTail:]...)
		t.dropped = true
	}
	return n, nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	sep := ""
	if t.dropped {
		sep = "\n[...]\n"
	}
	return string(bytes.TrimSpace([]byte(string(t.head) + sep + string(t.buf))))
}
