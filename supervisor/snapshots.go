package supervisor

import (
	"context"
	"errors"
	"fmt"
	"os"

	"capsule/ipc"
	"capsule/runtimes"
	"capsule/supervisor/snapcache"
	"capsule/worker"
)

// snapshotKey is the part of a snapshot's key the supervisor knows: the
// interpreter, the memory limit and, for Python, --python-path's packages,
// which the snapshot's import state holds.
func (s *Supervisor) snapshotKey(name snapcache.Name) (string, error) {
	key, err := worker.SnapshotKey(name.Language, uint64(s.cfg.Limits.Memory))
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
// memfds, and waits for it to exit.
func (s *Supervisor) makeSnapshot(ctx context.Context, name snapcache.Name, key string, image, code *os.File) error {
	p, err := s.spawnWorker(name.Language, ipc.ModeSnapshot, key, image, code)
	if err != nil {
		return err
	}
	defer p.close()
	err = p.awaitReady(ctx, readyTimeout)
	if err == nil {
		<-p.exited
		if !p.state.Success() {
			err = errors.New(exitReason(p.state))
		}
	}
	if err != nil {
		return fmt.Errorf("%w (worker stderr: %s)", err, p.stderr.String())
	}
	return nil
}
