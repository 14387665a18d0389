package isolation

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// helperEnv makes the test binary act as a worker: "inspect" prints what
// it sees of its own isolation, "sleep" waits to be killed, "exit" exits.
const helperEnv = "CAPSULE_ISOLATION_HELPER"

// init keeps a helper's main goroutine on the main thread: the parent-death
// signal that inspect reads is per thread, and only the thread that
// execve'd has it.
func init() {
	if os.Getenv(helperEnv) != "" {
		runtime.LockOSThread()
	}
}

func TestMain(m *testing.M) {
	switch os.Getenv(helperEnv) {
	case "":
		os.Exit(m.Run())
	case "inspect":
		if err := json.NewEncoder(os.Stdout).Encode(inspect()); err != nil {
			os.Exit(2)
		}
		os.Exit(0)
	case "sleep":
		time.Sleep(time.Minute)
		os.Exit(0)
	case "ready-sleep":
		// Say when the runtime is up, so that what the parent reads in
		// /proc is settled.
		os.Stdout.Write([]byte("ready\n"))
		time.Sleep(time.Minute)
		os.Exit(0)
	case "fds":
		fmt.Println(openFDs())
		os.Exit(0)
	case "spawn-sleeper":
		// A supervisor in miniature: start a sleeper through a Spawner,
		// say its pid, and die without any clean-up.
		exe, _ := os.Executable()
		child := exec.Command(exe)
		child.Env = append(os.Environ(), helperEnv+"=sleep")
		child.SysProcAttr, _ = SysProcAttr(Options{})
		if err := NewSpawner().Start(child); err != nil {
			os.Exit(2)
		}
		fmt.Println(child.Process.Pid)
		os.Exit(0)
	default:
		os.Exit(0)
	}
}

// openFDs lists the open file descriptors below 1024, by asking each
// one (reading /proc/self/fd would open one more), leaving out those of
// the Go runtime's own: its poller and the cgroup CPU limit files it
// keeps open.
func openFDs() []int {
	var fds []int
	for fd := 0; fd < 1024; fd++ {
		if _, _, e := syscall.RawSyscall(syscall.SYS_FCNTL, uintptr(fd), syscall.F_GETFD, 0); e != 0 {
			continue
		}
		target, _ := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", fd))
		if target == "anon_inode:[eventpoll]" || target == "anon_inode:[eventfd]" ||
			strings.HasPrefix(target, "/sys/fs/cgroup/") {
			continue
		}
		fds = append(fds, fd)
	}
	return fds
}

// view is what a child sees of itself.
type view struct {
	PID, UID, GID, Pdeathsig int
	Namespaces               map[string]string
	Interfaces               []string // non-loopback interfaces
	Err                      string   `json:",omitempty"`
}

var nsNames = []string{"user", "net", "pid", "ipc", "uts", "mnt"}

func namespaces() (map[string]string, error) {
	out := map[string]string{}
	for _, n := range nsNames {
		l, err := os.Readlink("/proc/self/ns/" + n)
		if err != nil {
			return nil, err
		}
		out[n] = l
	}
	return out, nil
}

func inspect() view {
	v := view{PID: os.Getpid(), UID: os.Getuid(), GID: os.Getgid()}
	var sig int32
	if _, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_GET_PDEATHSIG, uintptr(unsafe.Pointer(&sig)), 0); e != 0 {
		v.Err = "PR_GET_PDEATHSIG: " + e.Error()
	}
	v.Pdeathsig = int(sig)
	ns, err := namespaces()
	if err != nil {
		v.Err = err.Error()
	}
	v.Namespaces = ns
	ifaces, err := net.Interfaces()
	if err != nil {
		v.Err = err.Error()
	}
	for _, i := range ifaces {
		if i.Flags&net.FlagLoopback == 0 {
			v.Interfaces = append(v.Interfaces, i.Name)
		}
	}
	return v
}

// helperCmd returns a command running the test binary in a helper mode.
func helperCmd(t testing.TB, mode string, attr *syscall.SysProcAttr) *exec.Cmd {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), helperEnv+"="+mode)
	cmd.SysProcAttr = attr
	return cmd
}

func requireComplete(t *testing.T, r Report) {
	t.Helper()
	if !r.Complete() {
		if os.Getenv("CAPSULE_REQUIRE_HARDENING") != "" {
			t.Fatalf("isolation incomplete: %s", r)
		}
		t.Skipf("isolation incomplete here: %s", r)
	}
}

func TestChildIsIsolated(t *testing.T) {
	parentNS, err := namespaces()
	if err != nil {
		t.Fatal(err)
	}
	spawner := NewSpawner()
	defer spawner.Close()
	tests := []struct {
		name     string
		opts     Options
		uid, gid int
	}{
		{"default ids", Options{}, DefaultID, DefaultID},
		{"chosen ids", Options{UID: 1000, GID: 2000}, 1000, 2000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			attr, report := SysProcAttr(tt.opts)
			requireComplete(t, report)
			cmd := helperCmd(t, "inspect", attr)
			out, err := startAndWait(spawner, cmd)
			if err != nil {
				t.Fatalf("child: %v\n%s", err, out)
			}
			var v view
			if err := json.Unmarshal(out, &v); err != nil {
				t.Fatalf("child printed %q: %v", out, err)
			}
			if v.Err != "" {
				t.Fatalf("child: %s", v.Err)
			}
			if v.PID != 1 {
				t.Errorf("pid inside = %d, want 1", v.PID)
			}
			if v.UID != tt.uid || v.GID != tt.gid {
				t.Errorf("uid/gid inside = %d/%d, want %d/%d", v.UID, v.GID, tt.uid, tt.gid)
			}
			if len(v.Interfaces) != 0 {
				t.Errorf("non-loopback interfaces inside: %v", v.Interfaces)
			}
			if v.Pdeathsig != int(syscall.SIGKILL) {
				t.Errorf("pdeathsig inside = %d, want SIGKILL", v.Pdeathsig)
			}
			for _, n := range nsNames {
				if v.Namespaces[n] == parentNS[n] {
					t.Errorf("%s namespace shared with the parent: %s", n, v.Namespaces[n])
				}
			}
			if pgid, err := syscall.Getpgid(cmd.Process.Pid); err == nil && pgid != cmd.Process.Pid {
				// The child may be gone already; only a live mismatch counts.
				t.Errorf("pgid = %d, want the child's pid %d", pgid, cmd.Process.Pid)
			}
		})
	}
}

// startAndWait starts cmd through the spawner and returns its stdout.
func startAndWait(s *Spawner, cmd *exec.Cmd) ([]byte, error) {
	var stdout, stderr lockedBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := s.Start(cmd); err != nil {
		return nil, err
	}
	if err := cmd.Wait(); err != nil {
		return stderr.Bytes(), err
	}
	return stdout.Bytes(), nil
}

// lockedBuffer collects output written from os/exec's copying goroutine.
type lockedBuffer struct {
	mu  sync.Mutex
	buf []byte
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	return len(p), nil
}

func (b *lockedBuffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.buf)
}

func TestSetpgid(t *testing.T) {
	attr, _ := SysProcAttr(Options{})
	spawner := NewSpawner()
	defer spawner.Close()
	cmd := helperCmd(t, "sleep", attr)
	if err := spawner.Start(cmd); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer cmd.Process.Kill()
	pgid, err := syscall.Getpgid(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	if pgid != cmd.Process.Pid {
		t.Errorf("pgid = %d, want %d", pgid, cmd.Process.Pid)
	}
	// kill(-pgid) is how the supervisor ends a worker.
	if err := syscall.Kill(-pgid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
}

// TestServerDeathKillsChildren shows Pdeathsig at work: when the process
// that started a worker through a Spawner dies, the worker dies too.
func TestServerDeathKillsChildren(t *testing.T) {
	out, err := helperCmd(t, "spawn-sleeper", nil).Output()
	if err != nil {
		t.Fatal(err)
	}
	var pid int
	if _, err := fmt.Sscan(string(out), &pid); err != nil {
		t.Fatalf("helper printed %q", out)
	}
	deadline := time.Now().Add(10 * time.Second)
	for running(pid) {
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("worker %d still alive 10s after its parent died", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// running reports whether pid exists and is not a zombie.
func running(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	return i >= 0 && i+2 < len(b) && b[i+2] != 'Z' && b[i+2] != 'X'
}

func TestStartAfterClose(t *testing.T) {
	attr, _ := SysProcAttr(Options{})
	spawner := NewSpawner()
	spawner.Close()
	if err := spawner.Start(helperCmd(t, "exit", attr)); !errors.Is(err, ErrSpawnerClosed) {
		t.Errorf("Start after Close: %v, want ErrSpawnerClosed", err)
	}
}

// withProbe runs f with the namespace probe replaced by fake, then restores
// the real probe.
func withProbe(t *testing.T, fake func(uintptr) error, f func()) {
	t.Helper()
	probeOnce, probeFunc = sync.Once{}, fake
	defer func() { probeOnce, probeFunc = sync.Once{}, probeChild }()
	f()
}

func TestFallback(t *testing.T) {
	tests := []struct {
		name    string
		refuse  uintptr // clone flags whose presence makes the fake probe fail
		err     error
		missing []string
	}{
		{"user namespaces refused", syscall.CLONE_NEWUSER, syscall.EPERM, []string{LayerUserNS, LayerNetNS, LayerPIDNS, LayerIPCNS, LayerUTSNS, LayerMountNS}},
		{"net namespaces exhausted", syscall.CLONE_NEWNET, syscall.ENOSPC, []string{LayerNetNS}},
		{"nothing refused", 0, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var calls int
			fake := func(flags uintptr) error {
				calls++
				if flags&tt.refuse != 0 {
					return tt.err
				}
				return nil
			}
			withProbe(t, fake, func() {
				attr, r := SysProcAttr(Options{})
				SysProcAttr(Options{}) // cached: no second probe
				if !slices.Equal(r.Missing(), tt.missing) {
					t.Errorf("missing %v, want %v (%s)", r.Missing(), tt.missing, r)
				}
				for _, name := range tt.missing {
					l, _ := r.Layer(name)
					if l.Reason == "" {
						t.Errorf("%s missing without a reason", name)
					}
				}
				for _, name := range namespaceLayers {
					l, _ := r.Layer(name)
					if got := attr.Cloneflags&namespaceFlags[name] != 0; got != l.Active {
						t.Errorf("%s: flag set=%v but report active=%v", name, got, l.Active)
					}
				}
				if attr.Pdeathsig != syscall.SIGKILL || !attr.Setpgid {
					t.Errorf("fallback lost Pdeathsig/Setpgid: %+v", attr)
				}
				if (attr.Cloneflags&syscall.CLONE_NEWUSER != 0) != (attr.UidMappings != nil) {
					t.Errorf("uid mapping without user namespace or vice versa: %+v", attr)
				}
				if tt.refuse == 0 && calls != 1 {
					t.Errorf("probe ran %d children, want 1", calls)
				}
				t.Logf("%s: %d probe children; %s", tt.name, calls, r)
			})
		})
	}
}

// TestFallbackStartsChild starts a real child with the attributes of a
// kernel without user namespaces.
func TestFallbackStartsChild(t *testing.T) {
	withProbe(t, func(uintptr) error { return syscall.EPERM }, func() {
		attr, _ := SysProcAttr(Options{})
		spawner := NewSpawner()
		defer spawner.Close()
		out, err := startAndWait(spawner, helperCmd(t, "inspect", attr))
		if err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		var v view
		if err := json.Unmarshal(out, &v); err != nil {
			t.Fatal(err)
		}
		if v.Pdeathsig != int(syscall.SIGKILL) || v.PID == 1 {
			t.Errorf("fallback child: %+v", v)
		}
	})
}

func TestRealProbe(t *testing.T) {
	start := time.Now()
	withProbe(t, probeChild, func() {
		_, r := SysProcAttr(Options{})
		t.Logf("probe took %v: %s", time.Since(start), r)
	})
}

// TestStartCost measures starting and reaping a trivial child (/bin/true,
// else the test binary in a mode that exits at once) with and without the
// namespaces, alternating the two so that machine noise hits both alike.
func TestStartCost(t *testing.T) {
	isolated, r := SysProcAttr(Options{})
	requireComplete(t, r)
	spawner := NewSpawner()
	defer spawner.Close()
	newCmd := func(attr *syscall.SysProcAttr) *exec.Cmd {
		if _, err := os.Stat("/bin/true"); err == nil {
			cmd := exec.Command("/bin/true")
			cmd.SysProcAttr = attr
			return cmd
		}
		return helperCmd(t, "exit", attr)
	}
	variants := []struct {
		name string
		attr func() *syscall.SysProcAttr
		ds   []time.Duration
	}{
		{name: "pdeathsig+setpgid only", attr: func() *syscall.SysProcAttr {
			return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
		}},
		{name: "all namespaces", attr: func() *syscall.SysProcAttr { a := *isolated; return &a }},
	}
	const runs = 40
	for i := 0; i < runs; i++ {
		for j := range variants {
			cmd := newCmd(variants[j].attr())
			start := time.Now()
			if _, err := startAndWait(spawner, cmd); err != nil {
				t.Fatal(err)
			}
			variants[j].ds = append(variants[j].ds, time.Since(start))
		}
	}
	for _, v := range variants {
		slices.Sort(v.ds)
		t.Logf("%-24s %s start+exit+wait: median %v, p90 %v over %d", v.name, newCmd(nil).Path, v.ds[runs/2], v.ds[runs*9/10], runs)
	}
}

func ExampleSpawner() {
	// Once, when the supervisor starts:
	spawner := NewSpawner()
	defer spawner.Close()
	if _, report := SysProcAttr(Options{}); len(report.Missing()) > 0 {
		fmt.Println("warning: worker isolation missing:", report.Missing())
	}

	// For every worker:
	attr, _ := SysProcAttr(Options{})
	cmd := exec.Command("/proc/self/exe", "worker")
	cmd.SysProcAttr = attr
	if err := spawner.Start(cmd); err != nil {
		return
	}
	// Wait and kill(-pgid, SIGKILL) from any goroutine.
	_ = cmd.Wait()
}
