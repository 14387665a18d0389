// Package snapcache makes and keeps each interpreter snapshot: the image of
// an interpreter right after its start-up (see runtimes/internal/snapshot),
// which every worker maps instead of starting one, and the compiled image
// of its module.
//
// An entry is made once by a trusted snapshot worker (it reads no request;
// the supervisor runs it through Options.Make), kept in the cache directory
// and held in a sealed memfd that every worker gets as a read-only
// descriptor: a file that was verified once and cannot change afterwards,
// whatever happens to the cache directory, and whose pages all workers
// share. One made for another binary or other limits has another key,
// hence another file name, and is never looked at.
package snapcache

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"golang.org/x/sys/unix"
)

// makeTimeout is the last bound on a snapshot worker, which compiles the
// module (over ten seconds of CPU into an empty cache, minutes of wall
// time on a saturated host) and starts the interpreter once; the Maker
// bounds it by its progress well before.
const makeTimeout = 20 * time.Minute

// Name names one entry: a language's interpreter, or a variant of it (the
// same interpreter with more modules imported before the image is taken).
// Every entry is made, verified and sealed alike.
type Name struct {
	Language string
	// Variant is empty for the language's plain interpreter.
	Variant string
}

// String is the name as it appears in file names and logs: the language,
// then the variant if any.
func (n Name) String() string {
	if n.Variant == "" {
		return n.Language
	}
	return n.Language + "-" + n.Variant
}

// Maker runs a snapshot worker for name that writes the interpreter
// snapshot into snapshot, an empty memfd, and returns once the worker has
// exited, with the CPU time it used. code is the compiled image: an empty
// memfd the worker writes it into (compiling the module is then nearly all
// of the CPU), or for a variant its language's sealed one, which the worker
// loads the module from. key is what the worker stamps the snapshot with.
// It must give up when ctx ends.
type Maker func(ctx context.Context, name Name, key string, snapshot, code *os.File) (cpu time.Duration, err error)

// Options configure a Cache.
type Options struct {
	// Dir is the cache directory; empty keeps nothing on disk (every
	// start makes the snapshots again).
	Dir string
	// Root is the user's cache root above Dir (os.UserCacheDir): Dir
	// and every directory between Root and it are checked. When Dir is
	// not below Root, only Dir itself is.
	Root string
	// Key returns the part of an entry's key that the supervisor knows:
	// the interpreter's identity, the limits it was made for, the
	// packages it imports. The cache adds the binary's build and the CPU.
	Key func(Name) (string, error)
	// OwnModule, when not nil, says which variants run a module of their
	// own: such an entry makes and keeps its compiled image as a plain
	// one does. Every other variant shares its language's plain entry's.
	OwnModule func(Name) bool
	// MaxBytes bounds each stored file: a larger one is refused unread.
	MaxBytes int64
	// Make runs a snapshot worker.
	Make Maker
	// Stopped, when not nil, ends when the server stops: a snapshot being
	// made is then given up, so that a stop never waits for it.
	Stopped context.Context
	// Log receives what the cache refuses or cannot do.
	Log hclog.Logger
	// RetryAfter is how long after a first failure to make an entry the
	// next call tries again; each further failure doubles it, up to
	// MaxRetryAfter. Zero means DefaultRetryAfter.
	RetryAfter time.Duration
}

// DefaultRetryAfter and MaxRetryAfter bound the backoff between attempts
// to make an entry that could not be made: a snapshot worker killed or
// starved once must not leave every later worker starting cold until the
// server restarts, and one that fails for good must not be retried in a
// loop.
const (
	DefaultRetryAfter = time.Second
	MaxRetryAfter     = 5 * time.Minute
)

// Snapshot is one ready entry: sealed, read-only descriptors that a worker
// gets as its ipc.SnapshotFD and ipc.ImageFD.
type Snapshot struct {
	// Image is the interpreter snapshot, Code the compiled module.
	Image, Code *os.File
	// Key is the full key the snapshot was made and stamped with.
	Key string
	// shared says Code is another entry's (a variant's language's).
	shared bool
}

// Cache holds the entries made or loaded so far, and the verified cache
// directory they are kept in.
type Cache struct {
	opts Options
	// dir is the verified cache directory, nil without one; every file
	// operation is relative to it. private says it is a directory this
	// server made for itself (removed at Close), fallback why.
	dir      *os.File
	private  bool
	fallback string
	// unusable says why the configured directory is not used: it cannot
	// be written (a read-only file system, no permission).
	unusable string
	// key is the MAC key of the stored images.
	key []byte
	mu  sync.Mutex
	by  map[Name]*entry
	// closed refuses new entries: Close is releasing the files.
	closed bool
}

// entry is one name's state, under Cache.mu: ready (snap), being made
// (making), or failed (failures, err) and waiting until retryAt.
type entry struct {
	snap *Snapshot
	made bool // snap was made by this server, not loaded
	// making is closed when the attempt under way ends; nil when none is.
	making   chan struct{}
	failures int
	err      error
	retryAt  time.Time
}

// Open checks the cache directory (see openDir) and reads or creates its
// MAC key. An unsafe directory is an error wrapping ErrUnsafeDir, except
// for root, which falls back to a private directory it creates and logs
// why: a root server must not load what another user could have written.
func Open(opts Options) (*Cache, error) {
	c := &Cache{opts: opts, by: map[Name]*entry{}}
	if opts.Dir == "" {
		return c, nil
	}
	dir, err := openDir(opts.Root, opts.Dir)
	if errors.Is(err, ErrUnsafeDir) && os.Geteuid() == 0 {
		c.fallback = err.Error()
		if dir, err = privateDir(); err == nil {
			c.private = true
			opts.Log.Warn("the cache directory is unsafe: using a private one of this server's, so every start makes the snapshots again",
				"reason", c.fallback, "dir", dir.Name())
		}
	}
	if err == nil {
		err = checkWritable(dir)
		if err != nil {
			dir.Close()
		}
	}
	if Unwritable(err) {
		// A read-only file system (a container's read-only root), or a
		// directory the server may not write: it works without a cache,
		// only each start makes the snapshots again.
		c.unusable = err.Error()
		opts.Log.Warn("the cache directory cannot be written: running without a cache, so every start makes the snapshots again; "+
			"point XDG_CACHE_HOME at a writable directory to keep them", "dir", opts.Dir, "error", err)
		return c, nil
	}
	if err != nil {
		return nil, err
	}
	c.dir = dir
	if c.key, err = loadKey(int(dir.Fd())); err != nil {
		c.Close()
		return nil, fmt.Errorf("cache directory %s: %w", dir.Name(), err)
	}
	return c, nil
}

// Unwritable reports whether err says a directory cannot be written: a
// read-only file system, or no permission. An unsafe directory is not
// merely unwritable.
func Unwritable(err error) bool {
	return err != nil && !errors.Is(err, ErrUnsafeDir) &&
		(errors.Is(err, unix.EROFS) || errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM))
}

// checkWritable creates and removes a file in dir, so that a directory the
// server cannot write is found at the start, once, rather than by each
// snapshot it fails to keep.
func checkWritable(dir *os.File) error {
	var b [8]byte
	_, _ = rand.Read(b[:])
	name := ".write-check-" + hex.EncodeToString(b[:])
	fd, err := unix.Openat(int(dir.Fd()), name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return fmt.Errorf("writing in %s: %w", dir.Name(), err)
	}
	unix.Close(fd)
	return unix.Unlinkat(int(dir.Fd()), name, 0)
}

// Get returns name's snapshot, loading or making it on the first call;
// concurrent callers wait for that. Without one it returns nil, and
// workers start their interpreter cold (or, for a variant that shares its
// language's module, from the plain snapshot). An entry that could not be made (the reason is logged) is
// tried again by the first call after its backoff (Options.RetryAfter), in
// the background: that call and those during the attempt do not wait.
func (c *Cache) Get(name Name) *Snapshot {
	c.mu.Lock()
	e, ok := c.by[name]
	if !ok && c.closed {
		c.mu.Unlock()
		return nil
	}
	if !ok {
		e = &entry{}
		c.by[name] = e
	}
	for e.snap == nil && e.making != nil && e.failures == 0 {
		// The first attempt: wait for it, as a first start always has.
		making := e.making
		c.mu.Unlock()
		<-making
		c.mu.Lock()
	}
	switch {
	case e.snap != nil || e.making != nil || c.closed || c.stopped():
		snap := e.snap
		c.mu.Unlock()
		return snap
	case e.failures == 0:
		e.making = make(chan struct{})
		c.mu.Unlock()
		c.attempt(name, e)
		c.mu.Lock()
		snap := e.snap
		c.mu.Unlock()
		return snap
	case time.Now().Before(e.retryAt):
		c.mu.Unlock()
		return nil
	}
	e.making = make(chan struct{})
	c.mu.Unlock()
	go c.attempt(name, e)
	return nil
}

// attempt loads or makes name's entry once and records how it went; the
// caller has set e.making.
func (c *Cache) attempt(name Name, e *entry) {
	start := time.Now()
	snap, made, err := c.load(name)
	c.mu.Lock()
	defer c.mu.Unlock()
	defer func() {
		close(e.making)
		e.making = nil
	}()
	if err != nil {
		e.failures++
		e.err = err
		wait := c.retryAfter(e.failures)
		e.retryAt = time.Now().Add(wait)
		what := "no interpreter snapshot: every worker starts its interpreter cold, which costs far more CPU"
		switch {
		case !c.sharesCode(name) && name.Variant != "":
			what = "no snapshot of this variant: its calls start its interpreter cold and import its packages, which costs them far more CPU"
		case name.Variant != "":
			what = "no snapshot of this variant: calls that would start from it start from the plain one, which costs them far more CPU"
		}
		if c.closed || c.stopped() {
			c.opts.Log.Debug("snapshot given up: the server is stopping", "snapshot", name.String(), "error", err)
			return
		}
		c.opts.Log.Error(what+"; the first call after the backoff tries again", "snapshot", name.String(), "error", err,
			"attempts", e.failures, "retry_after", wait)
		return
	}
	e.snap, e.made = snap, made
	if e.failures > 0 {
		c.opts.Log.Info("interpreter snapshot ready after failed attempts", "snapshot", name.String(), "failed_attempts", e.failures)
	}
	c.opts.Log.Debug("interpreter snapshot ready", "snapshot", name.String(), "key", snap.Key, "made", made,
		"duration", time.Since(start))
}

// retryAfter is the backoff after the nth failure in a row.
func (c *Cache) retryAfter(n int) time.Duration {
	d := c.opts.RetryAfter
	if d <= 0 {
		d = DefaultRetryAfter
	}
	for i := 1; i < n && d < MaxRetryAfter; i++ {
		d *= 2
	}
	return min(d, MaxRetryAfter)
}

// stopped reports whether the server is stopping (Options.Stopped).
func (c *Cache) stopped() bool {
	return c.opts.Stopped != nil && c.opts.Stopped.Err() != nil
}

// EntryState is what `capsule doctor` shows of one entry.
type EntryState struct {
	Name Name
	// Ready says a snapshot is held; Made that this server made it
	// rather than loading it from the cache directory.
	Ready, Made bool
	// Making says an attempt is under way.
	Making bool
	// Failures counts the failed attempts (in a row, or before it became
	// ready); Err is the last one's error and RetryAt when the next may
	// begin.
	Failures int
	Err      string
	RetryAt  time.Time
}

// States are the entries asked for so far, in no particular order.
func (c *Cache) States() []EntryState {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []EntryState
	for n, e := range c.by {
		st := EntryState{Name: n, Ready: e.snap != nil, Made: e.made, Making: e.making != nil, Failures: e.failures}
		if e.err != nil {
			st.Err = e.err.Error()
		}
		if e.snap == nil {
			st.RetryAt = e.retryAt
		}
		out = append(out, st)
	}
	return out
}

// Close releases the sealed files and the directory, and removes a
// private directory, once the entries being made are done (Options.Stopped
// gives them up). Workers that have the files keep their own descriptors.
func (c *Cache) Close() {
	c.mu.Lock()
	c.closed = true
	// Wait for the attempts under way (Options.Stopped gives them up);
	// a variant being made gets its plain entry meanwhile.
	for {
		var making chan struct{}
		for _, e := range c.by {
			if e.making != nil {
				making = e.making
				break
			}
		}
		if making == nil {
			break
		}
		c.mu.Unlock()
		<-making
		c.mu.Lock()
	}
	defer c.mu.Unlock()
	for _, e := range c.by {
		if e.snap != nil {
			e.snap.Image.Close()
			if !e.snap.shared {
				e.snap.Code.Close()
			}
		}
	}
	if c.dir != nil {
		if c.private {
			os.RemoveAll(c.dir.Name())
		}
		c.dir.Close()
		c.dir = nil
	}
}

// artifacts are the file name prefixes of what a snapshot worker makes: the
// interpreter snapshot and the compiled image.
var artifacts = [2]string{"snapshot-", "code-"}

// fullKey is name's whole key: its name, then a hash of the supervisor's
// part and of the build key, since the compiled code also depends on the
// compiler (capsule's own build, wazero's patches included) and the CPU.
// Files are named ARTIFACT + key + ".img"; the dot keeps one name's files
// apart from another's ("python." is no prefix of "python-sympy.").
func (c *Cache) fullKey(name Name) (string, error) {
	if !validName(name.Language) || (name.Variant != "" && !validName(name.Variant)) {
		return "", fmt.Errorf("invalid snapshot name %q: want lower-case letters, digits and _", name.String())
	}
	part, err := c.opts.Key(name)
	if err != nil {
		return "", err
	}
	h := sha256.Sum256([]byte(part + "\x00" + buildKey()))
	return name.String() + "." + hex.EncodeToString(h[:16]), nil
}

func validName(s string) bool {
	for _, r := range s {
		if (r < 'a' || r > 'z') && (r < '0' || r > '9') && r != '_' {
			return false
		}
	}
	return s != ""
}

// ownFiles are the artifacts an entry keeps of its own. A variant runs the
// same module as its language's plain interpreter, unless it has its own
// (Options.OwnModule), so it shares that entry's compiled image and keeps
// only its snapshot.
func (c *Cache) ownFiles(name Name) []string {
	if c.sharesCode(name) {
		return artifacts[:1]
	}
	return artifacts[:]
}

// sharesCode reports whether name's entry uses its language's plain
// entry's compiled image.
func (c *Cache) sharesCode(name Name) bool {
	return name.Variant != "" && (c.opts.OwnModule == nil || !c.opts.OwnModule(name))
}

// load finds name's snapshot and compiled image in the cache directory,
// verified, or makes them. A variant's compiled image is its language's
// plain entry's, which is loaded or made first.
func (c *Cache) load(name Name) (snap *Snapshot, made bool, err error) {
	key, err := c.fullKey(name)
	if err != nil {
		return nil, false, err
	}
	var base *Snapshot
	if c.sharesCode(name) {
		if base = c.Get(Name{Language: name.Language}); base == nil {
			return nil, false, fmt.Errorf("a variant needs the compiled image of %s's plain snapshot, which could not be made", name.Language)
		}
	}
	kinds := c.ownFiles(name)
	names := make([]string, len(kinds))
	for i, a := range kinds {
		names[i] = a + key + ".img"
	}
	if c.dir != nil {
		files, err := c.read(names)
		if err == nil {
			c.touch(names[0])
			return newSnapshot(files, base, key), false, nil
		}
		if !errors.Is(err, os.ErrNotExist) {
			c.opts.Log.Warn("interpreter snapshot refused; making it again", "dir", c.dir.Name(), "error", err)
		}
		for _, n := range names {
			c.remove(n)
			c.remove(n + macSuffix)
		}
	}
	// The one slow step of a first start: tell whoever watches stderr.
	c.opts.Log.Info(preparing(name), name.logArgs("cache", c.dirOrNone())...)
	start := time.Now()
	files, cpu, err := c.make(name, key, base)
	if err != nil {
		return nil, false, err
	}
	madeAt := time.Now()
	defer func() {
		c.opts.Log.Info("runtime prepared", name.logArgs("duration_ms", millis(time.Since(start)),
			"worker_ms", millis(madeAt.Sub(start)), "worker_cpu_ms", millis(cpu),
			"store_and_seal_ms", millis(time.Since(madeAt)))...)
	}()
	for i, f := range files {
		if c.dir != nil {
			if err := storeImage(f, int(c.dir.Fd()), names[i], c.key); err != nil {
				// It works; only the next start pays for it again.
				c.opts.Log.Warn("cannot keep the interpreter snapshot in the cache", "dir", c.dir.Name(), "error", err)
			}
		}
		if files[i], err = seal(f); err != nil {
			closeFiles(files[i+1:])
			closeFiles(files[:i])
			return nil, false, err
		}
	}
	if c.dir != nil {
		c.prune(name)
	}
	return newSnapshot(files, base, key), true, nil
}

// newSnapshot is the entry of an entry's own files (the snapshot, and the
// compiled image unless base, the plain entry of a variant, has it).
func newSnapshot(files []*os.File, base *Snapshot, key string) *Snapshot {
	s := &Snapshot{Image: files[0], Key: key}
	if base != nil {
		s.Code, s.shared = base.Code, true
	} else {
		s.Code = files[1]
	}
	return s
}

func closeFiles(files []*os.File) {
	for _, f := range files {
		if f != nil {
			f.Close()
		}
	}
}

// read reads the stored files of an entry, verified.
func (c *Cache) read(names []string) ([]*os.File, error) {
	files := make([]*os.File, len(names))
	for i, n := range names {
		f, err := readVerified(int(c.dir.Fd()), n, c.key, c.opts.MaxBytes)
		if err != nil {
			closeFiles(files)
			return nil, err
		}
		files[i] = f
	}
	return files, nil
}

// make runs a snapshot worker that writes the snapshot, and the compiled
// image unless base has it, into new memfds, and returns them with the
// worker's CPU time.
func (c *Cache) make(name Name, key string, base *Snapshot) ([]*os.File, time.Duration, error) {
	kinds := c.ownFiles(name)
	files := make([]*os.File, len(kinds))
	for i, a := range kinds {
		f, err := newMemfd("capsule-" + a + name.String())
		if err != nil {
			closeFiles(files)
			return nil, 0, err
		}
		files[i] = f
	}
	code := base.codeOr(files)
	parent := c.opts.Stopped
	if parent == nil {
		parent = context.Background()
	}
	ctx, cancel := context.WithTimeout(parent, makeTimeout)
	defer cancel()
	cpu, err := c.opts.Make(ctx, name, key, files[0], code)
	if err != nil {
		closeFiles(files)
		return nil, 0, fmt.Errorf("snapshot worker: %w", err)
	}
	return files, cpu, nil
}

// codeOr is the compiled image a snapshot worker gets: base's, sealed,
// when there is a base, otherwise the new memfd it writes the image to.
func (base *Snapshot) codeOr(files []*os.File) *os.File {
	if base != nil {
		return base.Code
	}
	return files[1]
}

// logArgs are the log fields that name an entry, followed by more.
func (n Name) logArgs(more ...any) []any {
	args := []any{"language", n.Language}
	if n.Variant != "" {
		args = append(args, "variant", n.Variant)
	}
	return append(args, more...)
}

// dirOrNone names the cache directory for the log.
func (c *Cache) dirOrNone() string {
	if c.dir == nil && c.unusable != "" {
		return "none (the cache directory cannot be written): every start prepares it again"
	}
	if c.dir == nil {
		return "none (neither XDG_CACHE_HOME nor HOME is set): every start prepares it again"
	}
	return c.dir.Name()
}

// millis is d in milliseconds, as the logs give durations.
func millis(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// preparing is the log line that says name's entry is being made: the
// slow step of a first start for a plain entry (it compiles the module),
// of a variant's first call for a variant (it imports the packages).
func preparing(n Name) string {
	if n.Variant != "" {
		return "preparing a snapshot variant: starting the interpreter and importing its packages, once per binary; later starts reuse the cache"
	}
	return "preparing the runtime: loading its compiled code (compiling it where the binary has none this CPU runs) and starting its interpreter, once per binary; " +
		"later starts reuse the cache"
}
