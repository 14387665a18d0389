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
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
)

// makeTimeout bounds a snapshot worker: it compiles the module (seconds
// into an empty cache) and starts the interpreter once.
const makeTimeout = 2 * time.Minute

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
// snapshot into snapshot and the compiled image into code, both empty
// memfds, and returns once the worker has exited. key is what the worker
// stamps the snapshot with. It must give up when ctx ends.
type Maker func(ctx context.Context, name Name, key string, snapshot, code *os.File) error

// Options configure a Cache.
type Options struct {
	// Dir is the cache directory; empty keeps nothing on disk (every
	// start makes the snapshots again).
	Dir string
	// Key returns the part of an entry's key that the supervisor knows:
	// the interpreter's identity, the limits it was made for, the
	// packages it imports. The cache adds the binary's build and the CPU.
	Key func(Name) (string, error)
	// Make runs a snapshot worker.
	Make Maker
	// Log receives what the cache refuses or cannot do.
	Log hclog.Logger
}

// Snapshot is one ready entry: sealed, read-only descriptors that a worker
// gets as its ipc.SnapshotFD and ipc.ImageFD.
type Snapshot struct {
	// Image is the interpreter snapshot, Code the compiled module.
	Image, Code *os.File
	// Key is the full key the snapshot was made and stamped with.
	Key string
}

// Cache holds the entries made or loaded so far.
type Cache struct {
	opts Options
	mu   sync.Mutex
	by   map[Name]*entry
}

type entry struct {
	once sync.Once
	snap *Snapshot
}

// New returns an empty cache.
func New(opts Options) *Cache {
	return &Cache{opts: opts, by: map[Name]*entry{}}
}

// Get returns name's snapshot, loading or making it on the first call;
// concurrent callers wait for that. Without one (it could not be made: the
// reason is logged once) it returns nil, and workers start their
// interpreter cold.
func (c *Cache) Get(name Name) *Snapshot {
	c.mu.Lock()
	e, ok := c.by[name]
	if !ok {
		e = &entry{}
		c.by[name] = e
	}
	c.mu.Unlock()
	e.once.Do(func() {
		start := time.Now()
		snap, made, err := c.load(name)
		if err != nil {
			c.opts.Log.Error("no interpreter snapshot: every worker starts its interpreter cold, which costs far more CPU",
				"snapshot", name.String(), "error", err)
			return
		}
		e.snap = snap
		c.opts.Log.Debug("interpreter snapshot ready", "snapshot", name.String(), "key", snap.Key, "made", made,
			"duration", time.Since(start))
	})
	return e.snap
}

// Close releases the sealed files. Workers that have them keep their own
// descriptors.
func (c *Cache) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range c.by {
		e.once.Do(func() {})
		if e.snap != nil {
			e.snap.Image.Close()
			e.snap.Code.Close()
		}
	}
}

// artifacts are the file name prefixes of what a snapshot worker makes: the
// interpreter snapshot and the compiled image.
var artifacts = [2]string{"snapshot-", "code-"}

// load finds name's snapshot and compiled image in the cache directory,
// verified, or makes them.
func (c *Cache) load(name Name) (snap *Snapshot, made bool, err error) {
	key, err := c.opts.Key(name)
	if err != nil {
		return nil, false, err
	}
	// The compiled code also depends on the compiler (capsule's own
	// build, wazero's patches included) and the CPU.
	key += "-" + buildKey()
	dir := c.opts.Dir
	var files [2]*os.File
	var paths [2]string
	for i, a := range artifacts {
		paths[i] = filepath.Join(dir, a+key+".img")
	}
	if dir != "" {
		ok := true
		for i, path := range paths {
			f, err := readVerified(path)
			if err != nil {
				if !errors.Is(err, os.ErrNotExist) {
					c.opts.Log.Warn("interpreter snapshot refused; making it again", "path", path, "error", err)
				}
				ok = false
				break
			}
			files[i] = f
		}
		if ok {
			return &Snapshot{Image: files[0], Code: files[1], Key: key}, false, nil
		}
		for i, path := range paths {
			if files[i] != nil {
				files[i].Close()
				files[i] = nil
			}
			_ = os.Remove(path)
			_ = os.Remove(path + ".sha256")
		}
	}
	made2, err := c.make(name, key)
	if err != nil {
		return nil, false, err
	}
	for i, f := range made2 {
		if dir != "" {
			if err := storeImage(f, paths[i]); err != nil {
				// It works; only the next start pays for it again.
				c.opts.Log.Warn("cannot keep the interpreter snapshot in the cache", "path", paths[i], "error", err)
			}
		}
		if files[i], err = seal(f); err != nil {
			return nil, false, err
		}
	}
	return &Snapshot{Image: files[0], Code: files[1], Key: key}, true, nil
}

// make runs a snapshot worker that writes the snapshot and the compiled
// image into new memfds.
func (c *Cache) make(name Name, key string) ([2]*os.File, error) {
	var files [2]*os.File
	closeAll := func() {
		for _, f := range files {
			if f != nil {
				f.Close()
			}
		}
	}
	for i := range files {
		f, err := newMemfd("capsule-" + artifacts[i] + name.String())
		if err != nil {
			closeAll()
			return files, err
		}
		files[i] = f
	}
	ctx, cancel := context.WithTimeout(context.Background(), makeTimeout)
	defer cancel()
	if err := c.opts.Make(ctx, name, key, files[0], files[1]); err != nil {
		closeAll()
		return files, fmt.Errorf("snapshot worker: %w", err)
	}
	return files, nil
}
