package supervisor

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"capsule/runtimes"
)

// fakeCgroup makes a directory that looks like a cgroup v2 to setupCgroups.
func fakeCgroup(t *testing.T, controllers, procs string, delegate bool) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range map[string]string{
		"cgroup.controllers":     controllers,
		"cgroup.procs":           procs,
		"cgroup.subtree_control": "",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if delegate {
		if err := unix.Setxattr(dir, "user.delegate", []byte("1"), 0); err != nil {
			t.Skipf("this file system takes no user xattrs: %v", err)
		}
	}
	return dir
}

func TestSetupCgroups(t *testing.T) {
	tests := []struct {
		name        string
		controllers string
		procs       string
		delegate    bool
		wantReason  string // empty: active
	}{
		{name: "delegated with memory", controllers: "cpu io memory pids", procs: "4242\n", delegate: true},
		{name: "delegated, already empty", controllers: "memory", delegate: true},
		{name: "no memory controller", controllers: "cpu pids", delegate: true, wantReason: "memory controller is not delegated"},
		{name: "not delegated", controllers: "memory", delegate: false, wantReason: "is not delegated"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !tt.delegate && os.Geteuid() != 0 {
				t.Skip("a temporary directory is owned by this non-root user, which counts as delegated")
			}
			dir := fakeCgroup(t, tt.controllers, tt.procs, tt.delegate)
			cg, st := setupCgroups(dir)
			if tt.wantReason != "" {
				if cg != nil || st.Active || !strings.Contains(st.Reason, tt.wantReason) {
					t.Fatalf("state %+v, want unavailable: %q", st, tt.wantReason)
				}
				return
			}
			if cg == nil || !st.Active {
				t.Fatalf("state %+v, want active", st)
			}
			if b, _ := os.ReadFile(filepath.Join(dir, "cgroup.subtree_control")); string(b) != "+memory" {
				t.Errorf("subtree_control = %q, want +memory", b)
			}
			if tt.procs != "" {
				if b, _ := os.ReadFile(filepath.Join(dir, "supervisor", "cgroup.procs")); string(b) != "4242" {
					t.Errorf("supervisor leaf procs = %q, want the cgroup's process moved there", b)
				}
			}
			w, err := cg.add(777, runtimes.WorkerBounds(runtimes.Python, 64<<20, 0).RSS)
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]string{"memory.max": "201326592", "cgroup.procs": "777", "memory.swap.max": "0"}
			for f, v := range want {
				if b, _ := os.ReadFile(filepath.Join(w.dir, f)); string(b) != v {
					t.Errorf("%s = %q, want %q", f, b, v)
				}
			}
			if int64(64<<20)+runtimes.WorkerRSSOverhead != 201326592 {
				t.Fatal("test assumes a 128MiB overhead")
			}
			if w.oomKilled() {
				t.Error("oomKilled without memory.events")
			}
			os.WriteFile(filepath.Join(w.dir, "memory.events"), []byte("low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\n"), 0o644)
			if !w.oomKilled() {
				t.Error("oom_kill 1 not seen")
			}
		})
	}
}

func TestStoppedForMemory(t *testing.T) {
	tests := []struct {
		name    string
		stderr  string
		watched bool
		want    bool
	}{
		{name: "rlimit: Go cannot allocate", stderr: "fatal error: runtime: cannot allocate memory\n\nruntime stack:\n" + strings.Repeat("goroutine dump\n", 2000), want: true},
		{name: "rlimit: Go out of memory", stderr: "runtime: out of memory: cannot allocate 4194304-byte block\nfatal error: out of memory\n", want: true},
		{name: "watchdog", watched: true, want: true},
		{name: "other crash", stderr: "panic: boom\n" + strings.Repeat("goroutine dump\n", 2000), want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &process{}
			p.stderr.Write([]byte(tt.stderr))
			p.memoryKilled.Store(tt.watched)
			if got := p.stoppedForMemory(); got != tt.want {
				t.Fatalf("stoppedForMemory = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestMemoryLimitAnswer(t *testing.T) {
	a := newCollector(100).answer(nil, &memoryLimitError{limit: 64 << 20})
	if a.Limit == nil || *a.Limit != runtimes.LimitMemory || a.Error.Type != "MemoryError" ||
		!strings.Contains(a.Error.Message, "memory: limit of 64MiB reached") {
		t.Fatalf("answer %+v %+v", a.Limit, a.Error)
	}
}
