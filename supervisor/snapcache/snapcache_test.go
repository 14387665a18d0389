package snapcache

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"capsule/worker/lockdown/unprivileged"
)

// TestUnprivileged re-runs this package's tests as uid/gid 65534 when the
// suite runs as root: an ordinary user's server refuses what a root one
// falls back from.
func TestUnprivileged(t *testing.T) { unprivileged.Rerun(t, "TestUnprivileged") }

var python = Name{Language: "python"}

// fakeImage is what the fake snapshot worker writes: a header, a run of
// zeros (a hole once stored) and a tail, different for each key.
func fakeImage(key string, i int) []byte {
	b := make([]byte, 256<<10)
	copy(b, fmt.Sprintf("image %d of %s", i, key))
	copy(b[200<<10:], "tail")
	return b
}

// testWriter sends the cache's warnings to the test's log, so that a
// failure shows why the cache refused or could not make an entry.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

// harness is a cache directory and a snapshot worker that counts its runs.
type harness struct {
	root, dir string
	makes     atomic.Int32
	version   string // part of the key: another value is another entry
	// made counts the runs per name; failing names fail to be made.
	mu      sync.Mutex
	made    map[Name]int
	failing map[Name]bool
	// gotCode is the compiled image the last variant's worker was given.
	gotCode []byte
	// ownModule are the variants that run a module of their own
	// (Options.OwnModule).
	ownModule map[Name]bool
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	root := t.TempDir()
	return &harness{root: root, dir: filepath.Join(root, "capsule", "1.0"), version: "v1", made: map[Name]int{}, failing: map[Name]bool{},
		ownModule: map[Name]bool{numpy: true}}
}

func (h *harness) open(t *testing.T) (*Cache, error) {
	t.Helper()
	return h.openRetry(t, 0)
}

// openRetry is open with Options.RetryAfter.
func (h *harness) openRetry(t *testing.T, retryAfter time.Duration) (*Cache, error) {
	t.Helper()
	return Open(Options{
		RetryAfter: retryAfter,
		Dir:        h.dir,
		Root:       h.root,
		Key:        func(n Name) (string, error) { return n.String() + "-" + h.version, nil },
		MaxBytes:   1 << 20,
		OwnModule:  func(n Name) bool { return h.ownModule[n] },
		Log:        hclog.New(&hclog.LoggerOptions{Output: testWriter{t}, Level: hclog.Warn}),
		Make: func(_ context.Context, n Name, key string, image, code *os.File) (time.Duration, error) {
			h.makes.Add(1)
			h.mu.Lock()
			defer h.mu.Unlock()
			h.made[n]++
			if h.failing[n] {
				return 0, errors.New("failed on purpose")
			}
			files := []*os.File{image, code}
			if n.Variant != "" && !h.ownModule[n] {
				// A variant's worker loads its language's compiled image.
				b, err := io.ReadAll(io.NewSectionReader(code, 0, 1<<30))
				if err != nil {
					return 0, err
				}
				h.gotCode, files = b, files[:1]
			}
			for i, f := range files {
				if _, err := f.WriteAt(fakeImage(key, i), 0); err != nil {
					return 0, err
				}
			}
			return 0, nil
		},
	})
}

// get opens a cache, gets python's snapshot within a bounded time, checks
// its contents and closes the cache.
func (h *harness) get(t *testing.T) {
	t.Helper()
	h.getName(t, python)
}

// getName is get for any name; a variant's compiled image must be its
// language's.
func (h *harness) getName(t *testing.T, name Name) {
	t.Helper()
	c, err := h.open(t)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s := getWithin(t, c, name)
	if s == nil {
		t.Fatal("no snapshot")
	}
	codeKey := s.Key
	if name.Variant != "" && !h.ownModule[name] {
		base := getWithin(t, c, Name{Language: name.Language})
		if base == nil || base.Code != s.Code {
			t.Fatal("the variant does not share its language's compiled image")
		}
		codeKey = base.Key
	}
	for i, f := range []*os.File{s.Image, s.Code} {
		b, err := io.ReadAll(io.NewSectionReader(f, 0, 1<<30))
		if err != nil {
			t.Fatal(err)
		}
		want := fakeImage(s.Key, i)
		if i == 1 {
			want = fakeImage(codeKey, 1)
		}
		if !bytes.Equal(b, want) {
			t.Fatalf("file %d of the snapshot holds other bytes than were made", i)
		}
	}
}

// getWithin is c.Get(name), failing the test after 20 seconds.
func getWithin(t *testing.T, c *Cache, name Name) *Snapshot {
	t.Helper()
	got := make(chan *Snapshot, 1)
	go func() { got <- c.Get(name) }()
	select {
	case s := <-got:
		return s
	case <-time.After(20 * time.Second):
		t.Fatal("Get did not return within 20s")
		return nil
	}
}

// files lists the snapshot files in the harness's directory.
func (h *harness) files(t *testing.T, pattern string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(h.dir, pattern))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestMadeOnceThenLoaded(t *testing.T) {
	h := newHarness(t)
	h.get(t)
	h.get(t)
	if n := h.makes.Load(); n != 1 {
		t.Fatalf("made %d times, want once and then loaded", n)
	}
	if imgs := h.files(t, "*.img"); len(imgs) != 2 {
		t.Fatalf("stored %v, want a snapshot and a compiled image", imgs)
	}
	st, err := os.Stat(filepath.Join(h.dir, keyFile))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v, %v; want mode 0600", st, err)
	}
}

// TestTamperedImageRefused is W1: an image edited by someone who also
// recomputes the hash recorded beside it (the old format's SHA-256, or the
// size the record states) is refused and made again; so is an image
// copied from another cache directory, whose MAC key differs.
func TestTamperedImageRefused(t *testing.T) {
	h := newHarness(t)
	h.get(t)
	img := h.files(t, "snapshot-*.img")[0]
	b, err := os.ReadFile(img)
	if err != nil {
		t.Fatal(err)
	}
	copy(b, "PWNED!")
	sum := sha256.Sum256(b)
	if err := os.WriteFile(img, b, 0o600); err != nil {
		t.Fatal(err)
	}
	rec := fmt.Sprintf("v1 %d %s\n", len(b), hex.EncodeToString(sum[:]))
	if err := os.WriteFile(img+macSuffix, []byte(rec), 0o600); err != nil {
		t.Fatal(err)
	}
	h.get(t)
	if n := h.makes.Load(); n != 2 {
		t.Fatalf("made %d times: the tampered image was loaded", n)
	}

	other := newHarness(t)
	other.get(t)
	for _, f := range other.files(t, "*.img*") {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(h.dir, filepath.Base(f)), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	h.get(t)
	if n := h.makes.Load(); n != 3 {
		t.Fatalf("made %d times: an image signed with another cache's key was loaded", n)
	}
}

// TestUnsafeDirectory is W1: a cache directory, or one between the user's
// cache root and it, that someone else could write is refused by an
// ordinary user's server; a root server uses a private directory instead.
func TestUnsafeDirectory(t *testing.T) {
	cases := []struct {
		name  string
		root  bool // needs root to set up
		spoil func(h *harness) error
	}{
		{"world-writable directory", false, func(h *harness) error { return os.Chmod(h.dir, 0o777) }},
		{"group-writable parent", false, func(h *harness) error { return os.Chmod(filepath.Dir(h.dir), 0o770) }},
		{"world-writable cache root", false, func(h *harness) error { return os.Chmod(h.root, 0o777) }},
		{"sticky but group-writable parent", false, func(h *harness) error { return os.Chmod(filepath.Dir(h.dir), os.ModeSticky|0o770) }},
		{"directory owned by nobody", true, func(h *harness) error { return os.Chown(h.dir, 65534, 65534) }},
		{"directory is a symbolic link", false, func(h *harness) error {
			elsewhere := filepath.Join(h.root, "elsewhere")
			if err := os.Mkdir(elsewhere, 0o700); err != nil {
				return err
			}
			if err := os.RemoveAll(h.dir); err != nil {
				return err
			}
			return os.Symlink(elsewhere, h.dir)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.root && os.Geteuid() != 0 {
				t.Skip("needs root to set up")
			}
			h := newHarness(t)
			if err := os.MkdirAll(h.dir, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := tc.spoil(h); err != nil {
				t.Fatal(err)
			}
			c, err := h.open(t)
			if os.Geteuid() != 0 {
				if !errors.Is(err, ErrUnsafeDir) {
					t.Fatalf("opened an unsafe cache directory: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			st := c.Status()
			private := st.Dir
			if st.Fallback == "" || private == h.dir || !strings.Contains(st.Fallback, "unsafe") {
				t.Errorf("status %+v: want a fallback to a private directory", st)
			}
			c.Get(python)
			if len(h.files(t, "*.img")) != 0 {
				t.Error("the unsafe directory was written to")
			}
			c.Close()
			if _, err := os.Stat(private); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the private directory %s outlived the cache: %v", private, err)
			}
		})
	}
}

// TestStickyRoot: a cache root that others may write but that is sticky
// (a tmpfs mounted 1777, as in docs/deploy.md's container) is accepted:
// nobody else can rename or remove the directories capsule makes in it.
func TestStickyRoot(t *testing.T) {
	h := newHarness(t)
	if err := os.Chmod(h.root, os.ModeSticky|0o777); err != nil {
		t.Fatal(err)
	}
	c, err := h.open(t)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if st := c.Status(); st.Fallback != "" || st.Dir != h.dir {
		t.Fatalf("status %+v: want the configured directory", st)
	}
}

// TestHostileFiles is W2: whatever stands in place of a stored file (a
// link to an endless device, a FIFO, a huge file) is refused unread and
// without blocking, and the entry is made again.
func TestHostileFiles(t *testing.T) {
	fifo := func(path string) error { os.Remove(path); return syscall.Mkfifo(path, 0o600) }
	zero := func(path string) error { os.Remove(path); return os.Symlink("/dev/zero", path) }
	huge := func(path string) error { return os.Truncate(path, 1<<40) }
	cases := []struct {
		name  string
		file  string // glob of the file to replace
		plant func(path string) error
	}{
		{"record links to /dev/zero", "snapshot-*.img.mac", zero},
		{"record is a FIFO", "snapshot-*.img.mac", fifo},
		{"record is huge", "code-*.img.mac", huge},
		{"image is a FIFO", "snapshot-*.img", fifo},
		{"image links to /dev/zero", "code-*.img", zero},
		{"image is huge", "snapshot-*.img", huge},
		{"key file links to /dev/zero", keyFile, zero},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.get(t)
			if err := tc.plant(h.files(t, tc.file)[0]); err != nil {
				t.Fatal(err)
			}
			h.get(t) // bounded in time, checks the bytes
			if n := h.makes.Load(); n != 2 {
				t.Fatalf("made %d times, want the refused entry made again", n)
			}
			h.get(t)
			if n := h.makes.Load(); n != 2 {
				t.Fatalf("made %d times: the entry made again was not kept", n)
			}
		})
	}
}

// TestPlantedLinksNotFollowed is W3: links planted at the names the cache
// writes (the old format's temporary names included) are never written
// through.
func TestPlantedLinksNotFollowed(t *testing.T) {
	h := newHarness(t)
	h.get(t)
	victim := filepath.Join(h.root, "victim")
	if err := os.WriteFile(victim, []byte("precious"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, img := range h.files(t, "*.img") {
		os.Remove(img)
		for _, name := range []string{img, img + macSuffix, img + ".sha256.tmp", img + macSuffix + ".tmp", img + ".sha256"} {
			os.Remove(name)
			if err := os.Symlink(victim, name); err != nil {
				t.Fatal(err)
			}
		}
	}
	h.get(t)
	if b, err := os.ReadFile(victim); err != nil || string(b) != "precious" {
		t.Fatalf("the victim now holds %q (%v)", b, err)
	}
	h.get(t)
	if n := h.makes.Load(); n != 2 {
		t.Fatalf("made %d times, want twice", n)
	}
}

// TestOldEntriesPruned is W7: making an entry keeps only the Keep newest of
// its name, and removes the old format's files; other names are left.
func TestOldEntriesPruned(t *testing.T) {
	h := newHarness(t)
	if err := os.MkdirAll(h.dir, 0o700); err != nil {
		t.Fatal(err)
	}
	legacy := filepath.Join(h.dir, "snapshot-python-0123456789abcdef-fedcba9876543210.img")
	for _, f := range []string{legacy, legacy + ".sha256"} {
		if err := os.WriteFile(f, []byte("old"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	c, err := h.open(t)
	if err != nil {
		t.Fatal(err)
	}
	if c.Get(Name{Language: "python", Variant: "sympy"}) == nil {
		t.Fatal("no variant snapshot")
	}
	c.Close()
	for i := range Keep + 2 {
		h.version = fmt.Sprintf("v%d", i)
		h.get(t)
		time.Sleep(10 * time.Millisecond) // distinct modification times
	}
	if got := h.files(t, "snapshot-python.*.img"); len(got) != Keep {
		t.Errorf("%d python snapshots kept, want %d: %v", len(got), Keep, got)
	}
	if got := h.files(t, "code-python.*.img.mac"); len(got) != Keep {
		t.Errorf("%d python code records kept, want %d: %v", len(got), Keep, got)
	}
	if got := h.files(t, "snapshot-python-sympy.*.img"); len(got) != 1 {
		t.Errorf("the variant's snapshot was pruned with python's: %v", got)
	}
	if got := h.files(t, "*.sha256"); len(got) != 0 {
		t.Errorf("old-format files left: %v", got)
	}
	// The newest is still loaded, not made again.
	makes := h.makes.Load()
	h.get(t)
	if h.makes.Load() != makes {
		t.Error("the newest entry was pruned")
	}
	c, err = h.open(t)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if st := c.Status(); st.Snapshots != Keep+1 || st.Bytes <= 0 || st.Dir != h.dir || st.Fallback != "" {
		t.Errorf("status %+v, want %d snapshots in %s", st, Keep+1, h.dir)
	}
}

// TestKeyFileChecked: a key file others could read is replaced, and what
// it signed is made again.
func TestKeyFileChecked(t *testing.T) {
	h := newHarness(t)
	h.get(t)
	if err := os.Chmod(filepath.Join(h.dir, keyFile), 0o644); err != nil {
		t.Fatal(err)
	}
	h.get(t)
	if n := h.makes.Load(); n != 2 {
		t.Fatalf("made %d times, want the entry made again under a new key", n)
	}
	st, err := os.Stat(filepath.Join(h.dir, keyFile))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("key file %v, %v: want a new one of mode 0600", st, err)
	}
}

func TestInvalidNames(t *testing.T) {
	h := newHarness(t)
	c, err := h.open(t)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, n := range []Name{{Language: "../x"}, {Language: "python", Variant: "a.b"}, {Language: "Python"}, {}} {
		if c.Get(n) != nil {
			t.Errorf("%+v: made an entry for an invalid name", n)
		}
	}
}

var sympy = Name{Language: "python", Variant: "sympy"}

// TestVariants: a variant is made once its language's plain entry is
// ready, whose compiled image its worker is given and which it shares; it
// keeps only its own snapshot, verified like any; a tampered one is made
// again, alone.
func TestVariants(t *testing.T) {
	h := newHarness(t)
	h.getName(t, sympy)
	if h.made[python] != 1 || h.made[sympy] != 1 {
		t.Fatalf("made %v, want the plain entry and the variant once each", h.made)
	}
	if !bytes.Equal(h.gotCode, fakeImage(h.keyOf(t, python), 1)) {
		t.Fatal("the variant's worker was not given the plain entry's compiled image")
	}
	if got := h.files(t, "*.img"); len(got) != 3 || len(h.files(t, "code-python-sympy.*")) != 0 {
		t.Fatalf("stored %v, want the plain snapshot and compiled image and the variant's snapshot", got)
	}
	h.getName(t, sympy)
	if h.made[python] != 1 || h.made[sympy] != 1 {
		t.Fatalf("made %v: a filled cache made them again", h.made)
	}

	img := h.files(t, "snapshot-python-sympy.*.img")[0]
	b, err := os.ReadFile(img)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)-1] ^= 1
	if err := os.WriteFile(img, b, 0o600); err != nil {
		t.Fatal(err)
	}
	h.getName(t, sympy)
	if h.made[python] != 1 || h.made[sympy] != 2 {
		t.Fatalf("made %v, want the tampered variant made again, and only it", h.made)
	}
}

var numpy = Name{Language: "python", Variant: "numpy"}

// TestVariantWithOwnModule: a variant that runs a module of its own is
// made as a plain entry is, without its language's plain entry (which it
// does not need, and which may have failed), and keeps its own compiled
// image beside its snapshot.
func TestVariantWithOwnModule(t *testing.T) {
	h := newHarness(t)
	h.failing[python] = true
	h.getName(t, numpy)
	if h.made[python] != 0 || h.made[numpy] != 1 {
		t.Fatalf("made %v, want the variant alone, once", h.made)
	}
	if len(h.files(t, "snapshot-python-numpy.*.img")) != 1 || len(h.files(t, "code-python-numpy.*.img")) != 1 {
		t.Fatalf("stored %v, want the variant's snapshot and compiled image", h.files(t, "*.img"))
	}
	h.getName(t, numpy)
	if h.made[numpy] != 1 {
		t.Fatalf("made %v: a filled cache made it again", h.made)
	}
}

// keyOf is the full key of name in h's cache.
func (h *harness) keyOf(t *testing.T, name Name) string {
	t.Helper()
	c, err := h.open(t)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	key, err := c.fullKey(name)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

// TestVariantWithoutPlain: without its language's plain entry, a variant
// is not made (nothing to build on), and Get says so with nil.
func TestVariantWithoutPlain(t *testing.T) {
	h := newHarness(t)
	h.failing[python] = true
	c, err := h.open(t)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if getWithin(t, c, sympy) != nil {
		t.Fatal("a variant without a plain entry")
	}
	if h.made[sympy] != 0 {
		t.Fatal("the variant's worker ran without a compiled image")
	}
}

// TestCloseWhileMaking: Close gives up an entry being made (through
// Options.Stopped) and returns; a variant's worker that was waiting for
// its plain entry does not hold it up.
func TestCloseWhileMaking(t *testing.T) {
	h := newHarness(t)
	stopped, stop := context.WithCancel(context.Background())
	entered := make(chan struct{})
	c, err := Open(Options{
		Dir: h.dir, Root: h.root, MaxBytes: 1 << 20, Log: hclog.NewNullLogger(), Stopped: stopped,
		Key: func(n Name) (string, error) { return n.String(), nil },
		Make: func(ctx context.Context, n Name, key string, image, code *os.File) (time.Duration, error) {
			close(entered)
			<-ctx.Done()
			return 0, ctx.Err()
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan *Snapshot, 1)
	go func() { got <- c.Get(sympy) }()
	<-entered
	stop()
	closed := make(chan struct{})
	go func() { c.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(20 * time.Second):
		t.Fatal("Close did not return within 20s")
	}
	if <-got != nil {
		t.Fatal("a snapshot from a worker that was given up")
	}
	if c.Get(Name{Language: "javascript"}) != nil {
		t.Fatal("a closed cache made a new entry")
	}
}

// TestFailedEntryRetried: an entry whose snapshot worker failed (killed,
// starved) is not given up for the server's life. Calls within the backoff
// get nil at once; the first call after it starts another attempt in the
// background, without waiting for it; each failure doubles the backoff;
// once an attempt succeeds, every call gets the snapshot. States says
// where each entry stands.
func TestFailedEntryRetried(t *testing.T) {
	h := newHarness(t)
	h.failing[python] = true
	const backoff = 50 * time.Millisecond
	c, err := h.openRetry(t, backoff)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if getWithin(t, c, python) != nil {
		t.Fatal("a snapshot from a failing worker")
	}
	state := func() EntryState {
		for _, st := range c.States() {
			if st.Name == python {
				return st
			}
		}
		t.Fatal("States does not list python")
		return EntryState{}
	}
	if st := state(); st.Ready || st.Failures != 1 || st.Err == "" || !st.RetryAt.After(time.Now()) {
		t.Fatalf("after one failure: %+v", st)
	}
	// Within the backoff: no new attempt.
	if getWithin(t, c, python) != nil || h.madeCount(python) != 1 {
		t.Fatalf("made %d times within the backoff", h.madeCount(python))
	}
	// After it: one more attempt, which fails again, and the backoff
	// doubles.
	time.Sleep(backoff + 10*time.Millisecond)
	getWithin(t, c, python)
	waitFor(t, func() bool { st := state(); return st.Failures == 2 && !st.Making })
	if st := state(); time.Until(st.RetryAt) <= backoff {
		t.Errorf("after two failures the next attempt is due in %v, want about %v", time.Until(st.RetryAt), 2*backoff)
	}
	// The worker works again: the next attempt after the backoff makes it.
	h.mu.Lock()
	h.failing[python] = false
	h.mu.Unlock()
	var snap *Snapshot
	waitFor(t, func() bool { snap = getWithin(t, c, python); return snap != nil })
	if st := state(); !st.Ready || !st.Made || st.Failures != 2 {
		t.Errorf("once made: %+v", st)
	}
	if n := h.madeCount(python); n != 3 {
		t.Errorf("made %d times, want 3: two failures and the success", n)
	}
}

// TestRetryBackoffBounded: the backoff doubles from RetryAfter and stops
// at MaxRetryAfter.
func TestRetryBackoffBounded(t *testing.T) {
	c := &Cache{opts: Options{RetryAfter: time.Second}}
	for n, want := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 5: 16 * time.Second, 9: 256 * time.Second, 10: MaxRetryAfter, 1000: MaxRetryAfter} {
		if got := c.retryAfter(n); got != want {
			t.Errorf("retryAfter(%d) = %v, want %v", n, got, want)
		}
	}
	if got := (&Cache{}).retryAfter(1); got != DefaultRetryAfter {
		t.Errorf("the default first backoff is %v, want %v", got, DefaultRetryAfter)
	}
}

// madeCount is how many times name's worker ran.
func (h *harness) madeCount(name Name) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.made[name]
}

// waitFor polls cond for up to 20 seconds.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatal("the condition did not hold within 20s")
}

// readOnlyDir returns a directory the test's user cannot write: a
// read-only tmpfs for root (whom permissions do not stop), a directory of
// mode 0500 for anyone else. It skips the test where neither can be had.
func readOnlyDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "ro")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() != 0 {
		if err := os.Chmod(dir, 0o500); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Chmod(dir, 0o700) })
		return dir
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_RDONLY, "mode=0700"); err != nil {
		t.Skipf("cannot mount a read-only tmpfs as root: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(dir, syscall.MNT_DETACH) })
	return dir
}

// TestUnwritableDirRunsWithout: a cache directory that cannot be written
// (or created) is not fatal: the cache runs without one, says why once in
// the log and in Status, and still makes every snapshot in memory.
func TestUnwritableDirRunsWithout(t *testing.T) {
	ro := readOnlyDir(t)
	for _, dir := range []string{ro, filepath.Join(ro, "capsule", "1.0")} { // existing, and to be created
		h := newHarness(t)
		h.root, h.dir = ro, dir
		var log strings.Builder
		c, err := Open(Options{
			Dir: h.dir, Root: h.root, MaxBytes: 1 << 20,
			Log: hclog.New(&hclog.LoggerOptions{Output: &log, Level: hclog.Warn}),
			Key: func(n Name) (string, error) { return n.String(), nil },
			Make: func(_ context.Context, n Name, key string, image, code *os.File) (time.Duration, error) {
				for i, f := range []*os.File{image, code} {
					if _, err := f.WriteAt(fakeImage(key, i), 0); err != nil {
						return 0, err
					}
				}
				return 0, nil
			},
		})
		if err != nil {
			t.Fatalf("%s: Open: %v, want a cache without a directory", dir, err)
		}
		if getWithin(t, c, python) == nil {
			t.Errorf("%s: no snapshot without a cache directory", dir)
		}
		wd, err := c.WorkerDir(65534, 65534)
		if wd != nil || err != nil {
			t.Errorf("%s: WorkerDir = %v, %v; want none", dir, wd, err)
		}
		st := c.Status()
		c.Close()
		if st.Dir != "" || !strings.Contains(st.Unusable, "read-only file system") && !strings.Contains(st.Unusable, "permission denied") {
			t.Errorf("%s: status %+v, want no directory and why", dir, st)
		}
		if n := strings.Count(log.String(), "[WARN]"); n != 1 || !strings.Contains(log.String(), "cannot be written") {
			t.Errorf("%s: %d warnings, want one saying the directory cannot be written:\n%s", dir, n, log.String())
		}
	}
}
