package supervisor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"capsule/ipc"
	"capsule/runtimes"
	"capsule/supervisor/snapcache"
)

// openCache opens the snapshot cache and the workers' compilation cache
// in its directory. An unsafe directory is a configuration error.
func (s *Supervisor) openCache() error {
	var err error
	s.snapshots, err = snapcache.Open(snapcache.Options{
		Dir:       s.cfg.CacheDir,
		Root:      userCacheRoot(),
		Key:       s.snapshotKey,
		OwnModule: s.ownModule,
		MaxBytes:  int64(s.cfg.Limits.Memory) + maxImageOverhead,
		Make:      s.makeSnapshot,
		Stopped:   s.stopped,
		Log:       s.log,
	})
	if errors.Is(err, snapcache.ErrUnsafeDir) {
		return fmt.Errorf("%w: %w; fix it, or point XDG_CACHE_HOME elsewhere", ErrConfig, err)
	}
	if err != nil {
		return err
	}
	uid, gid := workerHostIDs(s.cfg.Isolation)
	s.cacheDir, err = s.snapshots.WorkerDir(uid, gid)
	if snapcache.Unwritable(err) {
		// As with the snapshots: slower starts, not a server that cannot
		// start.
		s.log.Warn("the workers' compilation cache cannot be made: workers run without one", "error", err)
		return nil
	}
	if err != nil {
		s.snapshots.Close()
		return err
	}
	return nil
}

// maxImageOverhead bounds a stored file beyond the memory limit: an
// interpreter snapshot holds at most the guest's memory and a header, a
// compiled image the module's machine code (tens of megabytes).
const maxImageOverhead = 512 << 20

// userCacheRoot is the user's cache root, or "" when it has none.
func userCacheRoot() string {
	root, _ := os.UserCacheDir()
	return root
}

// CacheStatus says which cache directory the server uses and how much it
// holds; `capsule doctor` shows it.
func (s *Supervisor) CacheStatus() snapcache.Status { return s.snapshots.Status() }

// SnapshotStates says where each interpreter snapshot asked for so far
// stands (ready, being made, failed and when it is retried), in name
// order; `capsule doctor` shows it.
func (s *Supervisor) SnapshotStates() []snapcache.EntryState {
	states := s.snapshots.States()
	slices.SortFunc(states, func(a, b snapcache.EntryState) int { return strings.Compare(a.Name.String(), b.Name.String()) })
	return states
}

// ownModule reports whether name is a variant that runs a module of its
// own (numpy's): its entry has its own compiled image, made as a plain
// one's is, and its calls cannot start from the plain interpreter.
func (s *Supervisor) ownModule(name snapcache.Name) bool {
	l, _ := s.cfg.Languages.Lookup(name.Language)
	return l.HasOwnModule(name.Variant)
}

// snapshotKey is the part of a snapshot's key the supervisor knows: the
// interpreter and the variant's imports, the memory limit and, for Python,
// --python-path's packages, which the snapshot's import state holds.
func (s *Supervisor) snapshotKey(name snapcache.Name) (string, error) {
	l, ok := s.cfg.Languages.Lookup(name.Language)
	if !ok {
		return "", fmt.Errorf("unknown language %q", name.Language)
	}
	key, err := l.SnapshotKey(name.Variant, uint64(s.cfg.Limits.Memory))
	if err != nil {
		return "", err
	}
	if name.Language == runtimes.Python && s.packagesDigest != "" {
		key += "-" + s.packagesDigest[:16]
	}
	return key, nil
}

// makeSnapshot runs a snapshot worker (ipc.ModeSnapshot: trusted, it reads
// no request) that writes name's snapshot and compiled image into the two
// memfds, waits for it to exit, and returns the CPU time it used. The
// plain snapshot's compiled image is the binary's own where it has one and
// this CPU runs it (giveCompiledImage), and so is that of a variant with a
// module of its own; any other variant's worker is given the plain
// snapshot's, sealed. A variant's is given up when the supervisor closes,
// too.
func (s *Supervisor) makeSnapshot(ctx context.Context, name snapcache.Name, key string, image, code *os.File) (time.Duration, error) {
	var given []byte
	makesCode := name.Variant == "" || s.ownModule(name)
	if makesCode {
		var err error
		if given, err = s.giveCompiledImage(name, code); err != nil {
			return 0, err
		}
	}
	if name.Variant != "" {
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		defer cancel()
		defer context.AfterFunc(s.variants.closed, cancel)()
	}
	p, err := s.spawnWorker(name, ipc.ModeSnapshot, key, image, code)
	if err != nil {
		return 0, err
	}
	defer p.close()
	var cpu time.Duration
	err = p.awaitReady(ctx, snapshotStart)
	if err == nil {
		<-p.exited
		cpu = p.state.UserTime() + p.state.SystemTime()
		if !p.state.Success() {
			err = errors.New(exitReason(p.state))
		}
	}
	if err != nil {
		return cpu, fmt.Errorf("%w (worker stderr: %s)", err, p.stderr.String())
	}
	if makesCode {
		s.logCodeSource(name, code, given, p.stderr.String())
	}
	return cpu, nil
}
