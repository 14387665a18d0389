package snapcache

import (
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Keep is how many entries of one name the cache directory keeps: the
// newest made or used. Each is tens of megabytes, and every new binary or
// memory limit makes new ones.
const Keep = 3

// staleTemp is how old a temporary file must be before pruning takes it
// for the leftover of a server that died while writing.
const staleTemp = time.Hour

// prune removes name's entries beyond the Keep newest (by the time their
// snapshot was last made or used), leftovers of older versions of the
// cache's format, and stale temporary files.
func (c *Cache) prune(name Name) {
	entries, err := c.list()
	if err != nil {
		c.opts.Log.Warn("cannot list the cache directory to remove old snapshots", "error", err)
		return
	}
	type stem struct {
		name string
		used time.Time
	}
	var stems []stem
	for _, e := range entries {
		n := e.Name()
		switch {
		case strings.HasPrefix(n, tempPrefix):
			if info, err := e.Info(); err == nil && time.Since(info.ModTime()) > staleTemp {
				c.remove(n)
			}
		case legacyFile(n):
			c.remove(n)
		default:
			s, ok := strings.CutPrefix(n, artifacts[0])
			s, img := strings.CutSuffix(s, ".img")
			if !ok || !img || !strings.HasPrefix(s, name.String()+".") {
				continue
			}
			if info, err := e.Info(); err == nil {
				stems = append(stems, stem{s, info.ModTime()})
			}
		}
	}
	sort.Slice(stems, func(i, j int) bool { return stems[i].used.After(stems[j].used) })
	for _, s := range stems[min(Keep, len(stems)):] {
		for _, a := range artifacts {
			c.remove(a + s.name + ".img")
			c.remove(a + s.name + ".img" + macSuffix)
		}
	}
}

// legacyFile reports whether n is an image or hash file of the cache's
// first format: "snapshot-LANGUAGE-KEY.img" with a ".sha256" beside it.
func legacyFile(n string) bool {
	for _, a := range artifacts {
		if s, ok := strings.CutPrefix(n, a); ok {
			s = strings.TrimSuffix(s, ".sha256")
			if s, ok := strings.CutSuffix(s, ".img"); ok && !strings.Contains(s, ".") {
				return true
			}
		}
	}
	return false
}

func (c *Cache) list() ([]os.DirEntry, error) {
	fd, err := unix.Openat(int(c.dir.Fd()), ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	d := os.NewFile(uintptr(fd), c.dir.Name())
	defer d.Close()
	return d.ReadDir(-1)
}

func (c *Cache) remove(name string) {
	if err := unix.Unlinkat(int(c.dir.Fd()), name, 0); err != nil && err != unix.ENOENT {
		c.opts.Log.Warn("cannot remove an old file from the cache", "file", name, "error", err)
	}
}

// touch marks name as just used, so that pruning keeps it.
func (c *Cache) touch(name string) {
	_ = unix.UtimesNanoAt(int(c.dir.Fd()), name, nil, unix.AT_SYMLINK_NOFOLLOW)
}

// Status is what `capsule doctor` shows of the cache.
type Status struct {
	// Dir is the directory in use; empty when nothing is kept on disk.
	Dir string
	// Fallback says why Dir is a private directory of this server rather
	// than the configured one; empty when it is the configured one.
	Fallback string
	// Unusable says why no directory is in use although one was
	// configured (it cannot be written); empty otherwise.
	Unusable string
	// Bytes is the disk space the directory's files take (images are
	// sparse), the workers' compilation cache included; Snapshots counts
	// the interpreter snapshots kept.
	Bytes     int64
	Snapshots int
}

// Status measures the cache directory.
func (c *Cache) Status() Status {
	st := Status{Fallback: c.fallback, Unusable: c.unusable}
	if c.dir == nil {
		return st
	}
	st.Dir = c.dir.Name()
	_ = filepath.WalkDir(st.Dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if info, err := d.Info(); err == nil {
			if sys, ok := info.Sys().(*syscall.Stat_t); ok {
				st.Bytes += sys.Blocks * 512
			}
		}
		if !d.IsDir() && filepath.Dir(path) == st.Dir && strings.HasPrefix(d.Name(), artifacts[0]) &&
			strings.HasSuffix(d.Name(), ".img") {
			st.Snapshots++
		}
		return nil
	})
	return st
}
