package supervisor

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"capsule/runtimes"
)

// cgroups puts each worker in a cgroup v2 of its own whose memory.max is
// its RSS bound (runtimes.WorkerBounds), where the supervisor runs in a
// delegated cgroup with the memory controller (systemd: Delegate=yes; see
// docs/deploy.md). The kernel then bounds everything the worker holds,
// page cache and kernel memory included, which neither the rlimit nor the
// watchdog sees.
//
// Because a cgroup v2 with processes cannot hand controllers to children,
// the supervisor first moves itself into a leaf, "supervisor", below the
// delegated cgroup; the workers' cgroups are its siblings, "worker-N".
type cgroups struct {
	dir    string // the delegated cgroup
	nextID atomic.Uint64
}

// CgroupState says whether workers get their own memory cgroup, and why
// not when they do not; `capsule doctor` shows it.
type CgroupState struct {
	Active bool
	Reason string
}

// cgroupMounts are where cgroup v2 is found: the unified hierarchy, or the
// unified part of a hybrid one.
var cgroupMounts = []string{"/sys/fs/cgroup", "/sys/fs/cgroup/unified"}

// ownCgroup finds the supervisor's cgroup v2 directory.
func ownCgroup() (string, error) {
	f, err := os.Open("/proc/self/cgroup")
	if err != nil {
		return "", err
	}
	defer f.Close()
	path := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if p, ok := strings.CutPrefix(sc.Text(), "0::"); ok {
			path = p
		}
	}
	if path == "" {
		return "", errors.New("no cgroup v2 entry in /proc/self/cgroup (cgroup v1 only)")
	}
	for _, m := range cgroupMounts {
		var st unix.Statfs_t
		if unix.Statfs(m, &st) == nil && st.Type == unix.CGROUP2_SUPER_MAGIC {
			return filepath.Join(m, path), nil
		}
	}
	return "", errors.New("cgroup v2 is not mounted at /sys/fs/cgroup or /sys/fs/cgroup/unified")
}

// setupCgroups prepares dir, the supervisor's own cgroup, for worker
// cgroups, or says why it cannot. It moves the supervisor into dir's
// "supervisor" leaf when dir still holds processes.
func setupCgroups(dir string) (*cgroups, CgroupState) {
	controllers, err := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
	if err != nil {
		return nil, CgroupState{Reason: fmt.Sprintf("cannot read %s: %v", dir, err)}
	}
	if !strings.Contains(" "+strings.TrimSpace(string(controllers))+" ", " memory ") {
		return nil, CgroupState{Reason: fmt.Sprintf("the memory controller is not delegated to %s (controllers: %q); run capsule under systemd with Delegate=yes, see docs/deploy.md",
			dir, strings.TrimSpace(string(controllers)))}
	}
	if !delegated(dir) {
		return nil, CgroupState{Reason: fmt.Sprintf("%s is not delegated to capsule (no trusted.delegate or user.delegate mark, not owned by our non-root user); run capsule under systemd with Delegate=yes, see docs/deploy.md", dir)}
	}
	if err := unix.Access(dir, unix.W_OK); err != nil {
		return nil, CgroupState{Reason: fmt.Sprintf("%s is not writable by the supervisor (not delegated): %v", dir, err)}
	}
	procs, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return nil, CgroupState{Reason: fmt.Sprintf("cannot read %s/cgroup.procs: %v", dir, err)}
	}
	if len(strings.TrimSpace(string(procs))) > 0 {
		leaf := filepath.Join(dir, "supervisor")
		if err := os.Mkdir(leaf, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			return nil, CgroupState{Reason: fmt.Sprintf("creating %s: %v", leaf, err)}
		}
		// Every process of the cgroup moves, so that dir is left empty:
		// the supervisor, and anything its unit started beside it.
		for _, pid := range strings.Fields(string(procs)) {
			if err := os.WriteFile(filepath.Join(leaf, "cgroup.procs"), []byte(pid), 0o644); err != nil {
				return nil, CgroupState{Reason: fmt.Sprintf("moving process %s into %s: %v", pid, leaf, err)}
			}
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte("+memory"), 0o644); err != nil {
		return nil, CgroupState{Reason: fmt.Sprintf("enabling the memory controller for %s's children: %v", dir, err)}
	}
	cg := &cgroups{dir: dir}
	return cg, CgroupState{Active: true, Reason: fmt.Sprintf("each worker in its own cgroup under %s with memory.max at the memory limit + scratch (Python) + %s, swap 0",
		dir, Size(runtimes.WorkerRSSOverhead))}
}

// delegated reports whether dir was handed to us to manage: systemd marks
// a cgroup it delegates (Delegate=yes) with the trusted.delegate extended
// attribute (user.delegate for a user manager), and a cgroup delegated by
// hand to an unprivileged user is owned by it. A cgroup that is merely
// writable, as every cgroup is to root, is not: moving processes around
// in it would fight whoever manages it.
func delegated(dir string) bool {
	for _, attr := range []string{"trusted.delegate", "user.delegate"} {
		if _, err := unix.Getxattr(dir, attr, nil); err == nil {
			return true
		}
	}
	var st unix.Stat_t
	return os.Geteuid() != 0 && unix.Stat(dir, &st) == nil && int(st.Uid) == os.Geteuid()
}

// workerCgroup is one worker's cgroup.
type workerCgroup struct{ dir string }

// add creates a cgroup of memory.max max for the worker pid and moves it
// there.
func (c *cgroups) add(pid int, max int64) (*workerCgroup, error) {
	dir := filepath.Join(c.dir, fmt.Sprintf("worker-%d-%d", os.Getpid(), c.nextID.Add(1)))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating the worker's cgroup: %w", err)
	}
	w := &workerCgroup{dir: dir}
	// No swap: memory.max must stop the worker, not push it to disk.
	// Kernels without swap accounting have no such file, which is fine.
	_ = os.WriteFile(filepath.Join(dir, "memory.swap.max"), []byte("0"), 0o644)
	for _, f := range []struct{ name, value string }{
		{"memory.max", strconv.FormatInt(max, 10)},
		{"cgroup.procs", strconv.Itoa(pid)},
	} {
		if err := os.WriteFile(filepath.Join(dir, f.name), []byte(f.value), 0o644); err != nil {
			w.remove()
			return nil, fmt.Errorf("setting the worker's cgroup %s: %w", f.name, err)
		}
	}
	return w, nil
}

// oomKilled reports whether the kernel's OOM killer acted in the cgroup.
func (w *workerCgroup) oomKilled() bool {
	b, err := os.ReadFile(filepath.Join(w.dir, "memory.events"))
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "oom_kill "); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			return n > 0
		}
	}
	return false
}

// remove deletes the cgroup once its process is gone.
func (w *workerCgroup) remove() { _ = os.Remove(w.dir) }

// cgroupOOM reports whether the worker's cgroup OOM-killed it.
func (p *process) cgroupOOM() bool { return p.cgroup != nil && p.cgroup.oomKilled() }
