// Package supervisor is capsule's engine: it runs each call, a Request,
// in a fresh, locked-down worker process and returns its Answer. It knows
// nothing of MCP; the tools, their arguments and the MCP answer are
// package supervisor/mcp's.
package supervisor

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/hashicorp/go-hclog"

	"capsule/runtimes"
	"capsule/runtimes/fileset"
	"capsule/supervisor/isolation"
	"capsule/supervisor/scarcity"
	"capsule/supervisor/snapcache"
	"capsule/worker/lockdown"
)

// workerThreads is about how many OS threads one worker takes (its Go
// runtime's), for the check of RLIMIT_NPROC at start.
const workerThreads = 8

// killGrace is how long past the deadline the supervisor waits for the
// worker's own timeout answer before killing it.
const killGrace = 500 * time.Millisecond

// Supervisor runs executions in worker processes.
type Supervisor struct {
	cfg        Config
	log        hclog.Logger
	executable string
	slots      chan struct{}
	spawner    *isolation.Spawner
	nextID     atomic.Uint64
	// pools holds the ready workers per language; nil without Prewarm.
	pools map[string]*pool
	// variants are Python's snapshot variants, with their own pools.
	variants *variants
	// snapshots holds each language's interpreter snapshot.
	snapshots *snapcache.Cache
	// waiting counts calls queued for a slot, against MaxQueue.
	waiting atomic.Int64
	// mu guards running, draining and drained, which let Shutdown wait
	// for running executions; stopped ends when Shutdown's grace
	// period ends, which kills them.
	mu       sync.Mutex
	running  int
	draining bool
	drained  chan struct{}
	stopped  context.Context
	stop     context.CancelFunc
	// grace is the shutdown grace Drain was given, for the answers of the
	// calls it ends.
	grace time.Duration
	// reaping counts used workers still being reaped.
	reaping sync.WaitGroup
	// cgroups gives each worker a memory cgroup of its own, or is nil;
	// cgroupState says which and why.
	cgroups     *cgroups
	cgroupState CgroupState
	// cacheDir is the compilation cache every worker gets as snapcache.FD,
	// or nil.
	cacheDir *os.File
	// pythonPackages names what --python-path offers, for the tool
	// description.
	pythonPackages []string
	// bundled lists the bundled packages when they are on, as Python's
	// Packages.Bundled names them, for the tool description.
	bundled []string
	// packagesDigest stands for what Python's imports see beyond the
	// runtime's own files (--python-path's packages, the bundle switched
	// off), part of Python's snapshot key; empty when there is nothing.
	packagesDigest string
}

// CheckProcessLimit reports an error wrapping ErrConfig when RLIMIT_NPROC
// cannot hold the server's threads and two workers' (root is not held to
// it): such a server could answer nothing.
func CheckProcessLimit() error {
	if err := scarcity.CheckLimit(workerThreads); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return nil
}

// New returns a Supervisor that starts workers from executable (normally
// /proc/self/exe).
func New(cfg Config, log hclog.Logger, executable string) (*Supervisor, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	// Before the hardening probe, whose namespaces a too small limit
	// refuses, so that its warning does not bury the cause.
	if err := CheckProcessLimit(); err != nil {
		return nil, err
	}
	if err := checkHardening(cfg, log); err != nil {
		return nil, err
	}
	// While the process limit still allows it (see package scarcity).
	scarcity.ReserveThreads(scarcity.Threads())
	packages, packagesDigest, err := checkPythonPath(&cfg)
	if err != nil {
		// Every Python call would fail on it.
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	var bundled []string
	if cfg.BundledPackages {
		if py, ok := cfg.Languages.Lookup(runtimes.Python); ok && py.Packages != nil {
			if bundled, err = py.Packages.Bundled(); err != nil {
				return nil, err
			}
		}
	} else {
		packagesDigest = withoutBundle(packagesDigest)
	}
	s := &Supervisor{
		pythonPackages: packages,
		bundled:        bundled,
		packagesDigest: packagesDigest,
		cfg:            cfg,
		log:            log,
		executable:     executable,
		slots:          make(chan struct{}, cfg.MaxConcurrency),
		spawner:        isolation.NewSpawner(),
		pools:          map[string]*pool{},
		drained:        make(chan struct{}),
	}
	s.stopped, s.stop = context.WithCancel(context.Background())
	s.variants = newVariants(s)
	if err := s.openCache(); err != nil {
		return nil, err
	}
	if dir, err := ownCgroup(); err != nil {
		s.cgroupState = CgroupState{Reason: err.Error()}
	} else {
		s.cgroups, s.cgroupState = setupCgroups(dir)
	}
	if s.cgroups == nil {
		log.Debug("workers get no memory cgroup of their own; the data rlimit and the RSS watchdog bound them", "reason", s.cgroupState.Reason)
	}
	if cfg.Prewarm {
		// Each language's first pooled worker compiles its module into
		// the cache, in parallel with the first calls.
		for _, l := range cfg.Languages {
			s.pools[l.Name] = newPool(s, l.Name, cfg.Pool[l.Name], cfg.MaxConcurrency, cfg.PoolIdle)
		}
	}
	return s, nil
}

// Shutdown lets running executions finish until ctx ends, then kills their
// workers, and closes the supervisor. Calls that arrive meanwhile are
// refused. It returns ctx's error when it had to kill.
func (s *Supervisor) Shutdown(ctx context.Context) error {
	for _, pl := range s.pools {
		pl.close()
	}
	s.variants.shutdown()
	s.mu.Lock()
	s.draining = true
	finished := s.drained
	if s.running == 0 {
		finished = make(chan struct{})
		close(finished)
	}
	s.mu.Unlock()
	var err error
	select {
	case <-finished:
	case <-ctx.Done():
		err = ctx.Err()
	}
	s.stop()
	<-finished
	s.Close()
	return err
}

// Drain shuts the supervisor down as Shutdown does, with grace for the
// running calls to finish; a call still running when it is over is
// answered with limit "shutdown", naming grace.
func (s *Supervisor) Drain(grace time.Duration) error {
	s.mu.Lock()
	s.grace = grace
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	return s.Shutdown(ctx)
}

// shutdownAnswer is the answer of a call that the shutdown ended.
func (s *Supervisor) shutdownAnswer(col *collector) *Answer {
	s.mu.Lock()
	grace := s.grace
	s.mu.Unlock()
	msg := "shutdown: the server shut down before the call finished; its worker was killed"
	if grace > 0 {
		msg = fmt.Sprintf("shutdown: the server shut down and the call did not finish within its %s grace period (--shutdown-grace); its worker was killed", grace)
	}
	a := col.answer(nil, nil)
	limit := runtimes.LimitShutdown
	a.Limit = &limit
	a.Error = &runtimes.ErrorInfo{Type: "ShutdownError", Message: msg}
	return a
}

// Config is the configuration the supervisor runs with, its defaults
// applied (a --max-timeout left unset has risen to --timeout).
func (s *Supervisor) Config() Config { return s.cfg }

// PythonPackages are what Python calls import beyond the standard
// library: the bundled packages (none when they are off), each as
// "module/module version", and the names --python-path offers.
func (s *Supervisor) PythonPackages() (bundled, extra []string) {
	return s.bundled, s.pythonPackages
}

// Refuse is the answer to a call refused before it ran, for err: one
// that passes in more files than --max-files-in-count allows (a
// *FilesCountError) hits the files_in limit, named with its note; any
// other error is an ArgumentError.
func (s *Supervisor) Refuse(language string, err error) *Answer {
	var tooMany *FilesCountError
	if errors.As(err, &tooMany) {
		a := filesCountAnswer(tooMany)
		a.limitNote = s.limitNote(a, language, 0)
		return a
	}
	return errorAnswer("ArgumentError", err.Error())
}

// Cgroup says whether each worker gets a memory cgroup of its own.
func (s *Supervisor) Cgroup() CgroupState { return s.cgroupState }

// Ready reports whether the supervisor should be sent calls: each
// language's first worker has started, so the compilation cache is filled
// and a call does not wait seconds for a compile, and it is not shutting
// down.
func (s *Supervisor) Ready() bool {
	for _, pl := range s.pools {
		select {
		case <-pl.warm:
		default:
			return false
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.draining
}

// freeSlots is how many executions could start now without waiting.
func (s *Supervisor) freeSlots() int {
	return cap(s.slots) - len(s.slots)
}

// begin counts a new execution, unless the supervisor is shutting down.
func (s *Supervisor) begin() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.draining {
		return false
	}
	s.running++
	return true
}

// end counts an execution out, and tells a waiting Shutdown when it was
// the last.
func (s *Supervisor) end() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.running--
	if s.running == 0 && s.draining {
		close(s.drained)
	}
}

// Close kills the pooled workers and stops the supervisor's helper thread.
// Running executions are not waited for.
func (s *Supervisor) Close() {
	for _, pl := range s.pools {
		pl.close()
	}
	s.variants.shutdown()
	s.reaping.Wait()
	s.spawner.Close()
	s.snapshots.Close()
	if s.cacheDir != nil {
		s.cacheDir.Close()
	}
}

// checkHardening logs one warning naming the OS hardening layers this
// machine cannot give workers, or refuses to start when they are required.
// The layers are Hardening's, so that the warning, the refusal and capsule
// doctor name the same ones.
func checkHardening(cfg Config, log hclog.Logger) error {
	missing, reasons := missingHardening(Hardening(cfg.Isolation))
	if len(missing) == 0 {
		return nil
	}
	if cfg.RequireHardening {
		return fmt.Errorf("hardening required but unavailable: %s (%s)", strings.Join(missing, ", "), reasons)
	}
	log.Warn("running without some OS hardening layers; --require-hardening makes this fatal",
		"missing", strings.Join(missing, ", "), "details", reasons)
	return nil
}

// LayerHostIDs names the check that workers do not run as host root.
const LayerHostIDs = "worker_host_ids"

// WorkerHostIDs says which host uid and gid workers run as, and counts it
// a missing hardening layer when that is root: outside its namespace the
// worker would then own every root file the kernel lets it reach.
func WorkerHostIDs(opts isolation.Options) lockdown.Layer {
	uid, gid := workerHostIDs(opts)
	l := lockdown.Layer{Name: LayerHostIDs, Active: uid != 0 && gid != 0,
		Reason: fmt.Sprintf("workers run as host uid %d gid %d", uid, gid)}
	if !l.Active {
		l.Reason += ": host root; set --worker-host-uid and --worker-host-gid to an unprivileged pair"
	}
	return l
}

// workerHostIDs are the host uid and gid workers run as.
func workerHostIDs(opts isolation.Options) (uid, gid int) {
	_, iso := isolation.SysProcAttr(opts)
	userNS, _ := iso.Layer(isolation.LayerUserNS)
	return opts.HostIDs(userNS.Active)
}

func (s *Supervisor) sysProcAttr() *syscall.SysProcAttr {
	attr, _ := isolation.SysProcAttr(s.cfg.Isolation)
	return attr
}

// maxFrame is the largest frame accepted from a worker: an output chunk is
// far smaller, and the worker bounds its Done frame's result and error to
// the output limit each.
func (s *Supervisor) maxFrame() int {
	return 3*int(s.cfg.Limits.MaxOutput) + 64<<10
}

// Request is one execution asked of the supervisor.
type Request struct {
	Language string
	Code     string
	// Inputs is an optional JSON object given to the code as `inputs`.
	Inputs json.RawMessage
	// Timeout replaces the configured timeout when positive; it is capped
	// at Limits.MaxTimeout (the tools refuse more before they get here).
	Timeout time.Duration
	// Files are passed in: Python finds them in /tmp, JavaScript in the
	// global `files`.
	Files []fileset.File
}

// Execute runs req in a fresh worker and reports how it went. It never
// returns an error: whatever happens is described in the Answer.
func (s *Supervisor) Execute(ctx context.Context, req Request) *Answer {
	start := time.Now()
	id := s.nextID.Add(1)
	timeout := s.cfg.Limits.Timeout
	if req.Timeout > 0 {
		timeout = min(req.Timeout, s.cfg.Limits.MaxTimeout)
	}
	a := s.execute(ctx, req, timeout)
	a.limitNote = s.limitNote(a, req.Language, timeout)
	a.DurationMS = float64(time.Since(start).Microseconds()) / 1000
	s.logExecution(id, req, a)
	return a
}

func (s *Supervisor) execute(ctx context.Context, req Request, timeout time.Duration) *Answer {
	// Characters, not bytes: the input schema's maxLength counts them, and
	// a call the schema admits must not be refused for its encoding.
	if n := utf8.RuneCountInString(req.Code); int64(n) > int64(s.cfg.Limits.MaxCode) {
		return limitAnswer(runtimes.LimitCodeSize, "CodeSizeError",
			fmt.Sprintf("code_size: the code is %d characters, over the limit of %d (--max-code)", n, int64(s.cfg.Limits.MaxCode)))
	}
	if n := len(req.Inputs); int64(n) > int64(s.cfg.Limits.MaxCode) {
		return limitAnswer(runtimes.LimitCodeSize, "CodeSizeError",
			fmt.Sprintf("code_size: the inputs are %d bytes of JSON, over the %s limit", n, s.cfg.Limits.MaxCode))
	}
	if !utf8.ValidString(req.Code) {
		return errorAnswer("InvalidCode", "the code is not valid UTF-8")
	}
	if a := s.checkFiles(req); a != nil {
		return a
	}
	if !s.begin() {
		return errorAnswer("ServerStopping", "the server is shutting down; no new calls are taken")
	}
	defer s.end()
	if n := s.waiting.Add(1); s.cfg.MaxQueue > 0 && n > int64(s.cfg.MaxQueue) {
		s.waiting.Add(-1)
		return errorAnswer("ServerBusy", fmt.Sprintf("the server is busy: %d calls are already waiting for a worker; try again shortly", s.cfg.MaxQueue))
	}
	select {
	case s.slots <- struct{}{}:
		s.waiting.Add(-1)
	case <-ctx.Done():
		s.waiting.Add(-1)
		return errorAnswer("Cancelled", "the call was cancelled while waiting for a free worker")
	case <-s.stopped.Done():
		s.waiting.Add(-1)
		return s.shutdownAnswer(newCollector(0))
	}
	defer func() { <-s.slots }()

	p, err := s.acquireWorker(ctx, req)
	var scarce *scarcity.Error
	if errors.As(err, &scarce) {
		return errorAnswer("ServerBusy", fmt.Sprintf("%s: no worker could be started: %v", req.Language, err))
	}
	if err != nil {
		return errorAnswer("WorkerError", fmt.Sprintf("%s: could not start a worker: %v", req.Language, err))
	}
	// The answer does not wait for the worker's exit: it has said Done, or
	// has been killed. Reaping happens in the background; Close waits for it.
	defer s.release(p)
	a := s.run(ctx, p, req, timeout)
	a.variant = p.variant
	return a
}

// release reaps a used worker in the background.
func (s *Supervisor) release(p *process) {
	if p.ended != nil {
		p.ended()
	}
	s.reaping.Add(1)
	go func() {
		defer s.reaping.Done()
		p.close()
	}()
}

// acquireWorker returns a worker that is ready for req: one started from
// the snapshot variant its imports ask for when there is one, else one
// from the language's pool (ready, or a start under way that no other
// call waits for), else a new one, started at once: the call holds an
// execution slot, and queueing behind a refill that other calls wait for
// too would leave that slot idle. A call whose imports require a
// variant's own module (numpy's) always runs on it, its pool or not.
func (s *Supervisor) acquireWorker(ctx context.Context, req Request) (*process, error) {
	p, required := s.variantWorker(ctx, req)
	if p != nil {
		return p, nil
	}
	if required.Variant != "" {
		return s.startWorkerRetrying(ctx, required)
	}
	plain := snapcache.Name{Language: req.Language}
	pl := s.pools[req.Language]
	if pl == nil {
		return s.startWorkerRetrying(ctx, plain)
	}
	pl.arrive()
	p = pl.takeReady(ctx)
	if p == nil {
		var err error
		if p, err = s.startWorkerRetrying(ctx, plain); err != nil {
			pl.leave()
			return nil, err
		}
	}
	p.ended = pl.leave
	return p, nil
}

// startWorkerRetrying starts a worker from the snapshot name, trying
// again when the start failed for want of a host resource.
func (s *Supervisor) startWorkerRetrying(ctx context.Context, name snapcache.Name) (*process, error) {
	var err error
	for attempt := 1; ; attempt++ {
		var p *process
		if p, err = s.startWorker(ctx, name); err == nil {
			return p, nil
		}
		var scarce *scarcity.Error
		retry := (errors.As(err, &scarce) && !errors.Is(err, errTooSlow)) || errors.Is(err, errStalled)
		if !retry || attempt == startAttempts || ctx.Err() != nil {
			return nil, err
		}
		s.log.Warn("worker did not start; trying again", "snapshot", name.String(), "attempt", attempt, "error", err)
		select {
		case <-time.After(time.Duration(attempt) * startRetryDelay):
		case <-ctx.Done():
			return nil, err
		}
	}
}

// startAttempts is how often a call tries to start its worker when the
// start failed for want of a host resource (not CPU) or stalled; startRetryDelay
// is the pause before the second try, doubled for the third.
const (
	startAttempts   = 3
	startRetryDelay = 200 * time.Millisecond
)

// startWorker starts one worker from the snapshot name (a language's, or
// a variant's) and waits until it is ready. An error says why, in terms of
// the host's resources where they were short (see package scarcity).
func (s *Supervisor) startWorker(ctx context.Context, name snapcache.Name) (*process, error) {
	p, err := s.startProcess(name)
	if err != nil {
		return nil, err
	}
	if err := p.awaitReady(ctx, runStart); err != nil {
		p.close()
		stderr := p.stderr.String()
		if stderr != "" {
			s.log.Debug("worker stderr", "snapshot", name.String(), "stderr", stderr)
		}
		return nil, scarcity.Classify(err, stderr)
	}
	return p, nil
}

// logExecution writes the one log line every execution gets. The code
// itself is logged only at trace level; its hash identifies it otherwise.
func (s *Supervisor) logExecution(id uint64, req Request, a *Answer) {
	sum := sha256.Sum256([]byte(req.Code))
	outcome := "ok"
	switch {
	case a.Limit != nil:
		outcome = "limit"
	case a.Error != nil:
		outcome = "error"
	}
	args := []any{
		"id", id,
		"language", req.Language,
		"code_sha256", hex.EncodeToString(sum[:]),
		"duration_ms", a.DurationMS,
		"outcome", outcome,
	}
	if a.Limit != nil {
		args = append(args, "limit", *a.Limit)
	}
	if a.Error != nil {
		args = append(args, "error_type", a.Error.Type)
	}
	if a.variant != "" {
		args = append(args, "variant", a.variant)
	}
	if s.log.IsDebug() {
		for _, p := range a.workerCPU {
			args = append(args, "worker_cpu_"+p.Phase+"_ms", float64(p.Micros)/1000)
		}
	}
	if s.log.IsTrace() {
		args = append(args, "code", req.Code)
	}
	s.log.Info("execution", args...)
}

// withoutBundle turns the digest of --python-path's packages (empty for
// none) into one that also says the bundled packages are off: the
// snapshot's sys.path and import caches differ then. With the bundle on,
// the default, the digest stays as it is: the runtime's identity covers
// the bundle.
func withoutBundle(packagesDigest string) string {
	sum := sha256.Sum256([]byte("bundled-packages=false\x00" + packagesDigest))
	return hex.EncodeToString(sum[:])
}

// checkPythonPath makes cfg.PythonPath absolute (workers start in /) and
// checks it the way every worker will load it, as the workers' host uid,
// so a directory that does not exist, holds compiled extensions, links
// out of itself or holds what those workers cannot read, or an archive
// with unsafe, duplicate or corrupt entries, is refused at start rather
// than failing every call. It returns the importable names it offers.
func checkPythonPath(cfg *Config) ([]string, string, error) {
	if cfg.PythonPath == "" {
		return nil, "", nil
	}
	abs, err := filepath.Abs(cfg.PythonPath)
	if err != nil {
		return nil, "", fmt.Errorf("python path: %w", err)
	}
	cfg.PythonPath = abs
	py, ok := cfg.Languages.Lookup(runtimes.Python)
	if !ok || py.Packages == nil {
		return nil, "", fmt.Errorf("python path %s: this server runs no Python that takes packages", abs)
	}
	var reader *runtimes.IDs
	if uid, gid := workerHostIDs(cfg.Isolation); uid != os.Geteuid() || gid != os.Getegid() {
		reader = &runtimes.IDs{UID: uid, GID: gid}
	}
	names, digest, err := py.Packages.Open(abs, reader)
	if err != nil {
		return nil, "", err
	}
	if len(names) == 0 {
		return nil, "", fmt.Errorf("python path %s holds no importable package or module", abs)
	}
	return names, digest, nil
}
