package supervisor

import (
	"bytes"
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"capsule/ipc"
	"capsule/runtimes"
	"capsule/worker"
)

// snapshotTimeout bounds a snapshot worker: it compiles the module (seconds
// into an empty cache) and starts the interpreter once.
const snapshotTimeout = 2 * time.Minute

// snapshots makes and keeps each language's interpreter snapshot (see
// runtimes/internal/snapshot): the image of an interpreter right after its
// start-up, which every worker maps instead of starting one.
//
// The image is made once by a trusted worker (ModeSnapshot: it reads no
// request), kept in the cache directory with its SHA-256 beside it, and
// held by the supervisor in a sealed memfd that every worker gets as a
// read-only descriptor: a file that was verified once and cannot change
// afterwards, whatever happens to the cache directory, and whose pages all
// workers share. An image whose bytes do not match its recorded SHA-256 is
// thrown away and made again; one made for another binary or other limits
// has another key, hence another file name, and is never looked at.
type snapshots struct {
	s  *Supervisor
	mu sync.Mutex
	by map[string]*snapshotEntry
}

type snapshotEntry struct {
	once sync.Once
	key  string
	// file is the interpreter snapshot and code the module's compiled
	// image (wazero's experimental.WithCompiledImage), both sealed and
	// read-only; nil when the language has none.
	file, code *os.File
}

func newSnapshots(s *Supervisor) *snapshots {
	return &snapshots{s: s, by: map[string]*snapshotEntry{}}
}

// get returns language's snapshot, compiled image and key, making them on
// the first call; concurrent callers wait for that. Without them (they
// could not be made: the reason is logged once) it returns nils, and
// workers compile through the file cache and start their interpreter cold.
func (ss *snapshots) get(language string) (snapshot, code *os.File, key string) {
	ss.mu.Lock()
	e, ok := ss.by[language]
	if !ok {
		e = &snapshotEntry{}
		ss.by[language] = e
	}
	ss.mu.Unlock()
	e.once.Do(func() {
		start := time.Now()
		key, files, made, err := ss.load(language)
		if err != nil {
			ss.s.log.Error("no interpreter snapshot: every worker starts its interpreter cold, which costs far more CPU",
				"language", language, "error", err)
			return
		}
		e.key, e.file, e.code = key, files[0], files[1]
		ss.s.log.Debug("interpreter snapshot ready", "language", language, "key", key, "made", made,
			"duration", time.Since(start))
	})
	return e.file, e.code, e.key
}

// close releases the images. Workers that have them keep their own
// descriptors.
func (ss *snapshots) close() {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	for _, e := range ss.by {
		e.once.Do(func() {})
		for _, f := range []*os.File{e.file, e.code} {
			if f != nil {
				f.Close()
			}
		}
	}
}

// artifacts are the file name prefixes of what a snapshot worker makes: the
// interpreter snapshot and the compiled image.
var artifacts = [2]string{"snapshot-", "code-"}

// load finds the snapshot and compiled image for language in the cache
// directory, verified, or makes them.
func (ss *snapshots) load(language string) (key string, files [2]*os.File, made bool, err error) {
	key, err = worker.SnapshotKey(language, uint64(ss.s.cfg.Limits.Memory))
	if err != nil {
		return "", files, false, err
	}
	// The compiled code also depends on the compiler (capsule's own
	// build, wazero's patches included) and the CPU.
	key += "-" + buildKey()
	if language == runtimes.Python && ss.s.packagesDigest != "" {
		// The snapshot's import state holds --python-path's packages.
		key += "-" + ss.s.packagesDigest[:16]
	}
	dir := ss.s.cfg.CacheDir
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
					ss.s.log.Warn("interpreter snapshot refused; making it again", "path", path, "error", err)
				}
				ok = false
				break
			}
			files[i] = f
		}
		if ok {
			return key, files, false, nil
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
	// The one slow step of a first start: tell whoever watches stderr.
	ss.s.log.Info("preparing the runtime: compiling it for this machine and starting its interpreter, once per binary; "+
		"later starts reuse the cache", "language", language, "cache", cacheOrNone(dir))
	start := time.Now()
	made2, workerCPU, err := ss.make(language, key)
	if err != nil {
		return "", files, false, err
	}
	madeAt := time.Now()
	defer func() {
		ss.s.log.Info("runtime prepared", "language", language, "duration_ms", millis(time.Since(start)),
			"worker_ms", millis(madeAt.Sub(start)), "worker_cpu_ms", millis(workerCPU),
			"store_and_seal_ms", millis(time.Since(madeAt)))
	}()
	for i, f := range made2 {
		if dir != "" {
			if err := storeImage(f, paths[i]); err != nil {
				// It works; only the next start pays for it again.
				ss.s.log.Warn("cannot keep the interpreter snapshot in the cache", "path", paths[i], "error", err)
			}
		}
		if files[i], err = seal(f); err != nil {
			return "", files, false, err
		}
	}
	return key, files, true, nil
}

// buildKey identifies this binary's build and the CPU it runs on: a
// compiled image is valid for those only.
var buildKey = sync.OnceValue(func() string {
	h := sha256.New()
	if exe, err := os.Open("/proc/self/exe"); err == nil {
		if f, err := elf.NewFile(exe); err == nil {
			if sec := f.Section(".note.go.buildid"); sec != nil {
				b, _ := sec.Data()
				h.Write(b)
			}
		}
		exe.Close()
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.Lines(string(b)) {
			if strings.HasPrefix(line, "flags") {
				h.Write([]byte(line))
				break
			}
		}
	}
	return hex.EncodeToString(h.Sum(nil)[:8])
})

// millis is d in milliseconds, as the logs give durations.
func millis(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// cacheOrNone names the cache directory for the log.
func cacheOrNone(dir string) string {
	if dir == "" {
		return "none (neither XDG_CACHE_HOME nor HOME is set): every start prepares it again"
	}
	return dir
}

// make runs a snapshot worker that writes the snapshot and the compiled
// image into new memfds, and returns the worker's CPU time (compiling the
// module is nearly all of it).
func (ss *snapshots) make(language, key string) ([2]*os.File, time.Duration, error) {
	var files [2]*os.File
	closeAll := func() {
		for _, f := range files {
			if f != nil {
				f.Close()
			}
		}
	}
	for i := range files {
		f, err := newMemfd("capsule-" + artifacts[i] + language)
		if err != nil {
			closeAll()
			return files, 0, err
		}
		files[i] = f
	}
	p, err := ss.s.spawnWorker(language, ipc.ModeSnapshot, key, files[0], files[1])
	if err != nil {
		closeAll()
		return files, 0, err
	}
	var cpu time.Duration
	err = p.awaitReady(context.Background(), snapshotTimeout)
	if err == nil {
		<-p.exited
		cpu = p.state.UserTime() + p.state.SystemTime()
		if !p.state.Success() {
			err = errors.New(exitReason(p.state))
		}
	}
	p.close()
	if err != nil {
		closeAll()
		return files, 0, fmt.Errorf("snapshot worker: %w (worker stderr: %s)", err, p.stderr.String())
	}
	return files, cpu, nil
}

// readVerified copies the image at path into a new sealed memfd, checking
// it against the SHA-256 recorded beside it on the way.
func readVerified(path string) (*os.File, error) {
	want, err := os.ReadFile(path + ".sha256")
	if err != nil {
		return nil, err
	}
	src, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	f, err := newMemfd("capsule-snapshot")
	if err != nil {
		return nil, err
	}
	sum, err := copySparse(f, src)
	if err == nil && sum != strings.TrimSpace(string(want)) {
		err = fmt.Errorf("its SHA-256 is %s, not the %s recorded when it was made (corrupt or tampered with)", sum, strings.TrimSpace(string(want)))
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return seal(f)
}

// storeImage writes the image in f to path, with its SHA-256 beside it,
// each atomically.
func storeImage(f *os.File, path string) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".snapshot-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	sum, err := copySparse(tmp, io.NewSectionReader(f, 0, 1<<62))
	if err == nil {
		err = tmp.Close()
	}
	if err == nil {
		err = writeFileAtomic(path+".sha256", []byte(sum+"\n"))
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	return err
}

// copySparse copies src to the empty file dst, leaving holes where src has
// whole zero blocks (most of an image is), and returns the SHA-256 of
// what it copied.
func copySparse(dst *os.File, src io.Reader) (string, error) {
	const block = 64 << 10
	h := sha256.New()
	buf := make([]byte, block)
	zero := make([]byte, block)
	var off int64
	for {
		n, err := io.ReadFull(src, buf)
		if n > 0 {
			h.Write(buf[:n])
			if !bytes.Equal(buf[:n], zero[:n]) {
				if _, err := dst.WriteAt(buf[:n], off); err != nil {
					return "", err
				}
			}
			off += int64(n)
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			break
		}
		if err != nil {
			return "", err
		}
	}
	if err := dst.Truncate(off); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func writeFileAtomic(path string, b []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// newMemfd makes an empty memfd that can be sealed.
func newMemfd(name string) (*os.File, error) {
	fd, err := unix.MemfdCreate(name, unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return nil, fmt.Errorf("memfd_create: %w", err)
	}
	return os.NewFile(uintptr(fd), name), nil
}

// seal forbids any further change to the memfd f and returns a read-only
// descriptor of it in its place.
func seal(f *os.File) (*os.File, error) {
	defer f.Close()
	seals := unix.F_SEAL_SEAL | unix.F_SEAL_SHRINK | unix.F_SEAL_GROW | unix.F_SEAL_WRITE
	if _, err := unix.FcntlInt(f.Fd(), unix.F_ADD_SEALS, seals); err != nil {
		return nil, fmt.Errorf("sealing the snapshot: %w", err)
	}
	fd, err := unix.Open(fmt.Sprintf("/proc/self/fd/%d", f.Fd()), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("reopening the snapshot read-only: %w", err)
	}
	return os.NewFile(uintptr(fd), f.Name()), nil
}
