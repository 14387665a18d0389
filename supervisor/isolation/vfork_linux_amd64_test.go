package isolation

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// TestVforkLayout checks the offsets that vfork_linux_amd64.s hard-codes.
func TestVforkLayout(t *testing.T) {
	var p vforkProgram
	var s vforkStep
	for _, c := range []struct {
		name      string
		got, want uintptr
	}{
		{"cloneFlags", unsafe.Offsetof(p.cloneFlags), 0},
		{"steps", unsafe.Offsetof(p.steps), 8},
		{"nsteps", unsafe.Offsetof(p.nsteps), 16},
		{"blockAll", unsafe.Offsetof(p.blockAll), 24},
		{"oldMask", unsafe.Offsetof(p.oldMask), 32},
		{"failedStep", unsafe.Offsetof(p.failedStep), 40},
		{"errno", unsafe.Offsetof(p.errno), 48},
		{"sigScratch", unsafe.Offsetof(p.sigScratch), 56},
		{"sigDefault", unsafe.Offsetof(p.sigDefault), 88},
		{"goAhead", unsafe.Offsetof(p.goAhead), 120},
		{"execDone", unsafe.Offsetof(p.execDone), 124},
		{"step.op", unsafe.Offsetof(s.op), 0},
		{"step.trap", unsafe.Offsetof(s.trap), 8},
		{"step.args", unsafe.Offsetof(s.args), 16},
		{"step.mayFail", unsafe.Offsetof(s.mayFail), 64},
		{"step size", unsafe.Sizeof(s), 72},
	} {
		if c.got != c.want {
			t.Errorf("%s at %d, the assembly expects %d", c.name, c.got, c.want)
		}
	}
}

// workerLikeCmd is a command built the way the supervisor builds a worker's
// (supervisor/process.go): empty environment, Dir "/", stderr and two ipc
// pipes as files.
func workerLikeCmd(t *testing.T, mode string, attr *syscall.SysProcAttr) (*exec.Cmd, []*os.File) {
	t.Helper()
	cmd := helperCmd(t, mode, attr)
	cmd.Env = []string{helperEnv + "=" + mode}
	cmd.Dir = "/"
	var parentEnds []*os.File
	for range 2 {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.ExtraFiles = append(cmd.ExtraFiles, r)
		parentEnds = append(parentEnds, w)
	}
	t.Cleanup(func() {
		for _, f := range append(cmd.ExtraFiles, parentEnds...) {
			f.Close()
		}
	})
	return cmd, parentEnds
}

// TestVforkIsUsedForWorkers shows that this package's other tests, and the
// supervisor, start their children with the vfork spawner here: a
// worker-like command and the test helpers' commands are accepted.
func TestVforkIsUsedForWorkers(t *testing.T) {
	if err := vforkWorks(); err != nil {
		t.Fatalf("vfork spawner unusable on this kernel: %v", err)
	}
	attr, _ := SysProcAttr(Options{})
	cmd, _ := workerLikeCmd(t, "exit", attr)
	if err := vforkSupported(cmd); err != nil {
		t.Errorf("worker-like command: %v", err)
	}
	if err := vforkSupported(helperCmd(t, "sleep", attr)); err != nil {
		t.Errorf("helper command: %v", err)
	}
}

// procView is what the parent sees of a child in /proc: what isolation
// gave it, without the numbers that differ between any two processes.
type procView struct {
	status     map[string]string
	uidMap     string
	gidMap     string
	setgroups  string
	namespaces map[string]string
	pgidIsPid  bool
}

// statusFields are the /proc/<pid>/status lines that isolation decides.
var statusFields = []string{"Uid", "Gid", "Groups", "CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb",
	"NoNewPrivs", "Seccomp", "SigBlk", "SigIgn", "SigCgt"}

func readProcView(t *testing.T, pid int) procView {
	t.Helper()
	dir := fmt.Sprintf("/proc/%d/", pid)
	read := func(name string) string {
		b, err := os.ReadFile(dir + name)
		if err != nil {
			t.Fatal(err)
		}
		return strings.Join(strings.Fields(string(b)), " ")
	}
	v := procView{status: map[string]string{}, namespaces: map[string]string{},
		uidMap: read("uid_map"), gidMap: read("gid_map"), setgroups: read("setgroups")}
	b, err := os.ReadFile(dir + "status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, val, _ := strings.Cut(line, ":")
		if slices.Contains(statusFields, k) {
			v.status[k] = strings.TrimSpace(val)
		}
	}
	for _, n := range nsNames {
		l, err := os.Readlink(dir + "ns/" + n)
		if err != nil {
			t.Fatal(err)
		}
		v.namespaces[n] = l
	}
	pgid, err := syscall.Getpgid(pid)
	if err != nil {
		t.Fatal(err)
	}
	v.pgidIsPid = pgid == pid
	return v
}

// TestVforkMatchesExec starts the same worker-like child with the vfork
// spawner and with os/exec and compares what isolation gave each, as the
// parent sees it in /proc.
func TestVforkMatchesExec(t *testing.T) {
	attr, report := SysProcAttr(Options{})
	requireComplete(t, report)
	parentNS, err := namespaces()
	if err != nil {
		t.Fatal(err)
	}
	spawner := NewSpawner()
	defer spawner.Close()
	views := map[bool]procView{}
	for _, disabled := range []bool{false, true} {
		vforkDisabled = disabled
		a := *attr
		cmd, _ := workerLikeCmd(t, "ready-sleep", &a)
		out, err := cmd.StdoutPipe() // an *os.File: the vfork spawner takes it
		if err != nil {
			t.Fatal(err)
		}
		if err := spawner.Start(cmd); err != nil {
			t.Fatalf("vforkDisabled=%v: %v", disabled, err)
		}
		if _, err := bufio.NewReader(out).ReadString('\n'); err != nil {
			t.Fatalf("vforkDisabled=%v: child did not get ready: %v", disabled, err)
		}
		views[disabled] = readProcView(t, cmd.Process.Pid)
		// Both children live until both are read: the kernel reuses a
		// dead namespace's inode number.
		defer cmd.Wait()
		defer syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	vforkDisabled = false
	vf, ex := views[false], views[true]
	t.Logf("vfork: %+v", vf)
	for _, f := range statusFields {
		if vf.status[f] != ex.status[f] {
			t.Errorf("status %s: vfork %q, os/exec %q", f, vf.status[f], ex.status[f])
		}
	}
	for _, c := range []struct{ name, vfork, exec string }{
		{"uid_map", vf.uidMap, ex.uidMap}, {"gid_map", vf.gidMap, ex.gidMap}, {"setgroups", vf.setgroups, ex.setgroups},
	} {
		if c.vfork != c.exec {
			t.Errorf("%s: vfork %q, os/exec %q", c.name, c.vfork, c.exec)
		}
	}
	want := fmt.Sprintf("%d %d 1", DefaultID, os.Getuid())
	if vf.uidMap != want || vf.setgroups != "deny" {
		t.Errorf("vfork child: uid_map %q (want %q), setgroups %q", vf.uidMap, want, vf.setgroups)
	}
	for _, n := range nsNames {
		if vf.namespaces[n] == parentNS[n] || vf.namespaces[n] == ex.namespaces[n] {
			t.Errorf("%s namespace of the vfork child not its own: %s (parent %s, os/exec child %s)",
				n, vf.namespaces[n], parentNS[n], ex.namespaces[n])
		}
	}
	if !vf.pgidIsPid || !ex.pgidIsPid {
		t.Errorf("own process group: vfork %v, os/exec %v", vf.pgidIsPid, ex.pgidIsPid)
	}
}

// TestVforkForeignHostID starts a child whose ids map to another host id
// than the server's, as a root server maps its workers to an unprivileged
// user: the parent writes the maps while the child waits (no CLONE_VFORK).
// The child must match an os/exec child.
func TestVforkForeignHostID(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mapping to another host id needs CAP_SETUID: run as root")
	}
	const hostID = 65534
	attr, report := SysProcAttr(Options{})
	requireComplete(t, report)
	attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: 1000, HostID: hostID, Size: 1}}
	attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: 1000, HostID: hostID, Size: 1}}
	attr.Credential = &syscall.Credential{Uid: 1000, Gid: 1000, NoSetGroups: true}
	sleep, err := exec.LookPath("sleep") // the test binary may not be readable by hostID
	if err != nil {
		t.Skip("no sleep executable")
	}
	spawner := NewSpawner()
	defer spawner.Close()
	views := map[bool]procView{}
	for _, disabled := range []bool{false, true} {
		vforkDisabled = disabled
		a := *attr
		cmd := &exec.Cmd{Path: sleep, Args: []string{"sleep", "60"}, Env: []string{}, SysProcAttr: &a}
		if !disabled {
			v, err := prepareVfork(cmd)
			if err != nil {
				t.Fatal(err)
			}
			parentMaps := v.parentMaps
			v.release()
			if !parentMaps {
				t.Fatal("a map to another host id was left to the child")
			}
		}
		if err := spawner.Start(cmd); err != nil {
			t.Fatalf("vforkDisabled=%v: %v", disabled, err)
		}
		// sleep has no start-up to wait for: what /proc shows is settled
		// once execve has returned, which Start waits for either way.
		views[disabled] = readProcView(t, cmd.Process.Pid)
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
	}
	vforkDisabled = false
	vf, ex := views[false], views[true]
	if want := fmt.Sprintf("1000 %d 1", hostID); vf.uidMap != want || vf.gidMap != want {
		t.Errorf("maps %q / %q, want %q", vf.uidMap, vf.gidMap, want)
	}
	if !reflect.DeepEqual(vf.status, ex.status) || vf.uidMap != ex.uidMap || vf.gidMap != ex.gidMap || vf.setgroups != ex.setgroups {
		t.Errorf("vfork child %+v\nos/exec child %+v", vf, ex)
	}
	// The child keeps the server's credentials outside (Uid 0 here), as
	// with os/exec: the map alone does not change them.
}

// TestVforkFDs checks that the child gets exactly fds 0-2 and ExtraFiles,
// even when the server holds a descriptor without close-on-exec.
func TestVforkFDs(t *testing.T) {
	attr, _ := SysProcAttr(Options{})
	// A descriptor that os/exec would leak: dup does not set O_CLOEXEC.
	leak, err := syscall.Dup(0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(leak)
	spawner := NewSpawner()
	defer spawner.Close()
	tests := []struct {
		name  string
		extra func(t *testing.T) []*os.File
		want  string
	}{
		{"no extra files", func(*testing.T) []*os.File { return nil }, "[0 1 2]"},
		{"two ipc pipes", func(t *testing.T) []*os.File {
			cmd, _ := workerLikeCmd(t, "fds", attr)
			return cmd.ExtraFiles
		}, "[0 1 2 3 4]"},
		{"a hole", func(t *testing.T) []*os.File {
			cmd, _ := workerLikeCmd(t, "fds", attr)
			return []*os.File{cmd.ExtraFiles[1], nil, cmd.ExtraFiles[0]}
		}, "[0 1 2 3 5]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := *attr
			cmd := helperCmd(t, "fds", &a)
			cmd.ExtraFiles = tt.extra(t)
			if err := vforkSupported(cmd); err != nil {
				t.Fatal(err)
			}
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := spawner.Start(cmd); err != nil {
				t.Fatal(err)
			}
			line, _ := bufio.NewReader(out).ReadString('\n')
			if err := cmd.Wait(); err != nil {
				t.Fatal(err)
			}
			if got := strings.TrimSpace(line); got != tt.want {
				t.Errorf("child's fds %s, want %s (server leaks fd %d without close-on-exec)", got, tt.want, leak)
			}
		})
	}
}

// TestVforkErrors makes a step in the child fail and checks that Start
// names it, with the errno, and that the failed child is reaped.
func TestVforkErrors(t *testing.T) {
	attr, _ := SysProcAttr(Options{})
	spawner := NewSpawner()
	defer spawner.Close()
	tests := []struct {
		name    string
		modify  func(*exec.Cmd)
		errno   error
		mention string
	}{
		{"missing executable", func(c *exec.Cmd) { c.Path = "/nonexistent/capsule-worker" }, syscall.ENOENT, "fork/exec /nonexistent/capsule-worker"},
		{"not executable", func(c *exec.Cmd) { c.Path = "/proc/self/status" }, syscall.EACCES, "fork/exec"},
		{"missing directory", func(c *exec.Cmd) { c.Dir = "/nonexistent" }, syscall.ENOENT, "chdir /nonexistent in the child"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := *attr
			cmd := helperCmd(t, "exit", &a)
			tt.modify(cmd)
			if err := vforkSupported(cmd); err != nil {
				t.Fatal(err)
			}
			err := spawner.Start(cmd)
			if !errors.Is(err, tt.errno) || !strings.Contains(fmt.Sprint(err), tt.mention) {
				t.Fatalf("Start: %v, want %v mentioning %q", err, tt.errno, tt.mention)
			}
			if tt.errno == syscall.ENOENT && !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("Start: %v is not fs.ErrNotExist, as os/exec's error is", err)
			}
			var ws syscall.WaitStatus
			if pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil); err != syscall.ECHILD {
				t.Errorf("a child is left over (pid %d, %v): the failed child was not reaped", pid, err)
			}
		})
	}
}

// TestVforkSupported checks the selection: whatever the vfork spawner
// cannot do exactly as os/exec would goes to os/exec.
func TestVforkSupported(t *testing.T) {
	attr, _ := SysProcAttr(Options{})
	euid := os.Geteuid()
	tests := []struct {
		name   string
		modify func(*exec.Cmd)
		ok     bool
	}{
		{"worker attributes", func(*exec.Cmd) {}, true},
		{"no attributes", func(c *exec.Cmd) { c.SysProcAttr = nil }, true},
		{"inherited environment", func(c *exec.Cmd) { c.Env = nil }, true},
		{"chroot", func(c *exec.Cmd) { c.SysProcAttr.Chroot = "/tmp" }, false},
		{"credential", func(c *exec.Cmd) {
			c.SysProcAttr.Credential = &syscall.Credential{Uid: 1, Gid: 1, NoSetGroups: true}
		}, true},
		{"credential with groups", func(c *exec.Cmd) { c.SysProcAttr.Credential = &syscall.Credential{Uid: 1} }, false},
		{"foreign host uid", func(c *exec.Cmd) {
			c.SysProcAttr.Cloneflags |= syscall.CLONE_NEWUSER
			c.SysProcAttr.UidMappings = []syscall.SysProcIDMap{{ContainerID: 1, HostID: euid + 1, Size: 1}}
		}, true},
		{"wide map", func(c *exec.Cmd) {
			c.SysProcAttr.Cloneflags |= syscall.CLONE_NEWUSER
			c.SysProcAttr.UidMappings = []syscall.SysProcIDMap{{ContainerID: 1, HostID: euid, Size: 2}}
		}, false},
		{"map without user namespace", func(c *exec.Cmd) {
			c.SysProcAttr.Cloneflags &^= syscall.CLONE_NEWUSER
			c.SysProcAttr.UidMappings = []syscall.SysProcIDMap{{ContainerID: 1, HostID: euid, Size: 1}}
		}, false},
		{"time namespace", func(c *exec.Cmd) { c.SysProcAttr.Cloneflags |= 0x80 }, false},
		{"buffer as stdout", func(c *exec.Cmd) { c.Stdout = &bytes.Buffer{} }, false},
		{"relative path", func(c *exec.Cmd) { c.Path = "capsule" }, false},
		{"lookup error", func(c *exec.Cmd) { c.Err = errors.New("not found") }, false},
		{"context", func(c *exec.Cmd) { c.Cancel = func() error { return nil } }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := *attr
			cmd := helperCmd(t, "exit", &a)
			tt.modify(cmd)
			if err := vforkSupported(cmd); (err == nil) != tt.ok {
				t.Errorf("vforkSupported: %v, want ok=%v", err, tt.ok)
			}
		})
	}
	ctxCmd := exec.CommandContext(context.Background(), "/bin/true")
	if vforkSupported(ctxCmd) == nil {
		t.Error("a command bound to a context went to the vfork spawner, which would not watch the context")
	}
}

// BenchmarkSpawn measures what starting and reaping one isolated child
// costs the server, with the vfork spawner and with os/exec, with and
// without a 256 MiB heap that fork must copy the page tables of.
// cpu-µs/op is the server process's own CPU (user+system, children
// excluded), which is what a worker start costs the server.
func BenchmarkSpawn(b *testing.B) {
	attr, report := SysProcAttr(Options{})
	if !report.Complete() {
		b.Skipf("isolation incomplete: %s", report)
	}
	path := "/bin/true"
	if _, err := os.Stat(path); err != nil {
		b.Skip("no /bin/true")
	}
	spawner := NewSpawner()
	defer spawner.Close()
	var ballast []byte
	for _, heap := range []int{0, 256} {
		if heap > 0 {
			ballast = make([]byte, heap<<20)
			for i := 0; i < len(ballast); i += 4096 {
				ballast[i] = 1
			}
		}
		for _, method := range []struct {
			name     string
			disabled bool
		}{{"vfork", false}, {"os-exec", true}} {
			b.Run(fmt.Sprintf("%s/heap=%dMiB", method.name, heap), func(b *testing.B) {
				vforkDisabled = method.disabled
				defer func() { vforkDisabled = false }()
				before := serverCPU()
				for b.Loop() {
					a := *attr
					cmd := &exec.Cmd{Path: path, Args: []string{path}, Env: []string{}, SysProcAttr: &a}
					if err := spawner.Start(cmd); err != nil {
						b.Fatal(err)
					}
					if err := cmd.Wait(); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64((serverCPU()-before).Microseconds())/float64(b.N), "cpu-µs/op")
			})
		}
	}
	ballast[0]++
}

// serverCPU is this process's user+system CPU time, children excluded.
func serverCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
