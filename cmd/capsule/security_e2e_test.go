package main

// Proof that the OS layers hold, seen from outside a live worker, and that
// hostile code and misbehaving workers always get a clear answer while the
// server keeps serving and leaks nothing.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// children lists the live child processes of pid.
func children(pid int) []int {
	var out []int
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(f); err == nil && alive(n) {
				out = append(out, n)
			}
		}
	}
	return out
}

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] != 'Z' && s[i+2] != 'X'
}

func fdCount(t testing.TB, pid int) int {
	t.Helper()
	entries, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatalf("reading fds of %d: %v", pid, err)
	}
	return len(entries)
}

// eventually polls cond for up to d.
func eventually(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// procStatus reads one field of /proc/PID/status.
func procStatus(pid int, field string) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// runningWorker starts code in the background and returns the pid of the
// worker running it (the server runs without a pool, so it is the only
// child) and a channel closed when the call has answered.
func runningWorker(t *testing.T, s *testServer, tool, code string) (int, <-chan struct{}) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		// Not s.call: the call may fail on purpose (the server is killed).
		req := mcp.CallToolRequest{}
		req.Params.Name = tool
		req.Params.Arguments = map[string]any{"code": code}
		_, _ = s.c.CallTool(context.Background(), req)
	}()
	return lockedWorker(t, s), done
}

// lockedWorker waits for the server's one worker to be past its lockdown
// and returns its pid.
func lockedWorker(t *testing.T, s *testServer) int {
	t.Helper()
	var pid int
	if !eventually(20*time.Second, func() bool {
		for _, c := range children(s.cmd.Process.Pid) {
			if procStatus(c, "Seccomp") == "2" {
				pid = c
				return true
			}
		}
		return false
	}) {
		t.Fatalf("no locked-down worker appeared; children: %v", children(s.cmd.Process.Pid))
	}
	return pid
}

var noPool = []string{"--pool-python", "0", "--pool-javascript", "0"}

// settle waits for the start-up warm-up workers to finish.
func settle(t *testing.T, s *testServer) {
	t.Helper()
	s.call(t, "execute_python", "1")
	s.call(t, "execute_javascript", "1")
	workersGone(t, s)
}

// workersGone waits until the server has no children, so that the next
// worker found is the next call's and not one still exiting.
func workersGone(t *testing.T, s *testServer) {
	t.Helper()
	if !eventually(20*time.Second, func() bool { return len(children(s.cmd.Process.Pid)) == 0 }) {
		t.Fatalf("workers still running: %v", children(s.cmd.Process.Pid))
	}
}

func TestLiveWorkerIsLockedDown(t *testing.T) {
	s := startServer(t, noPool...)
	settle(t, s)
	for _, tc := range []struct{ tool, code string }{
		{"execute_python", "import time\ntime.sleep(3)"},
		{"execute_javascript", "await new Promise(r => setTimeout(r, 3000))"},
	} {
		t.Run(tc.tool, func(t *testing.T) {
			// The worker found must be this call's, not the last one's
			// still exiting.
			workersGone(t, s)
			pid, done := runningWorker(t, s, tc.tool, tc.code)
			if got := procStatus(pid, "Seccomp"); got != "2" {
				t.Errorf("Seccomp = %q, want 2 (filter mode)", got)
			}
			if got := procStatus(pid, "NoNewPrivs"); got != "1" {
				t.Errorf("NoNewPrivs = %q, want 1", got)
			}
			for _, ns := range []string{"user", "net", "pid", "ipc", "uts", "mnt"} {
				mine, _ := os.Readlink("/proc/self/ns/" + ns)
				theirs, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/%s", pid, ns))
				if err != nil || theirs == mine {
					t.Errorf("%s namespace: worker %q, test %q (%v): want its own", ns, theirs, mine, err)
				}
			}
			uidMap, _ := os.ReadFile(fmt.Sprintf("/proc/%d/uid_map", pid))
			if f := strings.Fields(string(uidMap)); len(f) != 3 || f[0] != "65534" || f[2] != "1" {
				t.Errorf("uid_map = %q, want 65534 mapped alone", uidMap)
			} else if os.Geteuid() == 0 && f[1] == "0" {
				t.Errorf("uid_map = %q: served as root, the worker is host root", uidMap)
			}
			if uid := procStatus(pid, "Uid"); os.Geteuid() == 0 && strings.Fields(uid)[0] == "0" {
				t.Errorf("Uid = %q: served as root, the worker runs as host root", uid)
			}
			if got := procStatus(pid, "NSpid"); !strings.HasSuffix(got, "\t1") && !strings.HasSuffix(got, " 1") {
				t.Errorf("NSpid = %q, want pid 1 in its own namespace", got)
			}
			<-done
		})
	}
}

func TestServerKilledLeavesNoWorker(t *testing.T) {
	s := startServer(t, noPool...)
	settle(t, s)
	pid, _ := runningWorker(t, s, "execute_python", "while True:\n    pass")
	if err := s.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	if !eventually(5*time.Second, func() bool { return !alive(pid) }) {
		t.Fatalf("worker %d survived the server's SIGKILL", pid)
	}
}

func TestTimeoutKillsProcessGroup(t *testing.T) {
	s := startServer(t, append(noPool, "--timeout", "1s")...)
	settle(t, s)
	pid, done := runningWorker(t, s, "execute_python", "while True:\n    pass")
	pgid, err := syscall.Getpgid(pid)
	if err != nil || pgid != pid {
		t.Fatalf("worker %d is in process group %d (%v), want its own", pid, pgid, err)
	}
	<-done
	if !eventually(5*time.Second, func() bool { return syscall.Kill(-pgid, 0) == syscall.ESRCH }) {
		t.Fatalf("process group %d still has members after the timeout", pgid)
	}
}

// abuse is one hostile input. check, when set, looks at the answer beyond
// "it is a clear answer".
type abuse struct {
	name  string
	tool  string
	code  string
	raw   json.RawMessage // arguments sent as they are, instead of code
	check func(t *testing.T, st structured)
}

func (a abuse) call(t *testing.T, s *testServer) (*mcp.CallToolResult, structured) {
	if a.raw != nil {
		return s.callArgs(t, a.tool, a.raw)
	}
	return s.call(t, a.tool, a.code)
}

func wantLimit(limit string) func(*testing.T, structured) {
	return func(t *testing.T, st structured) {
		if st.Limit == nil || *st.Limit != limit {
			t.Errorf("limit = %s, want %s; error %+v", fmtLimit(st.Limit), limit, st.Error)
		}
	}
}

func fmtLimit(l *string) string {
	if l == nil {
		return "null"
	}
	return *l
}

func wantError(t *testing.T, st structured) {
	if st.Error == nil {
		t.Errorf("want an error, got result %s stdout %q", st.Result, st.Stdout)
	}
}

func abuseCorpus() []abuse {
	// Over the 1MiB code limit, within the message limit (a larger
	// message is refused by the transport: TestStdioOversizedMessage).
	big := strings.Repeat("x = 1\n", 2<<20/6+1)
	py := func(name, code string, check func(*testing.T, structured)) abuse {
		return abuse{name: "python/" + name, tool: "execute_python", code: code, check: check}
	}
	js := func(name, code string, check func(*testing.T, structured)) abuse {
		return abuse{name: "javascript/" + name, tool: "execute_javascript", code: code, check: check}
	}
	return []abuse{
		py("read host file", "open('/etc/passwd').read()", wantError),
		py("read /proc", "open('/proc/self/environ').read()", wantError),
		py("write host file", "open('/etc/capsule-pwned', 'w').write('x')", wantError),
		// /tmp is the call's private in-memory directory: writing there
		// works, and touches nothing of the host's /tmp.
		py("write host /tmp", "open('/tmp/capsule-pwned', 'w').write('x')", func(t *testing.T, st structured) {
			if _, err := os.Stat("/tmp/capsule-pwned"); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the host's /tmp/capsule-pwned exists (%v) after a guest wrote its own", err)
			}
		}),
		// / is the sandbox's own (the runtime's rootFS): its /dev holds only
		// null, its /tmp is the call's, its /usr the runtime's files.
		py("list host dirs", "import os\n[sorted(os.listdir('/')), os.listdir('/dev'), [p for p in ('/etc', '/proc', '/home', '/root', '/sys') if os.path.exists(p)]]",
			func(t *testing.T, st structured) {
				if st.Error != nil || string(st.Result) != `[["dev","tmp","usr"],["null"],[]]` {
					t.Errorf("/ shows %s (error %+v), want only the sandbox's dev, tmp and usr", st.Result, st.Error)
				}
			}),
		py("socket connect", "import socket\ns = socket.socket()\ns.connect(('127.0.0.1', 22))", wantError),
		py("environment", "import os\ndict(os.environ)", nil),
		py("subprocess", "import subprocess\nsubprocess.run(['/bin/ls'])", wantError),
		py("os.system", "import os\nos.system('ls')", nil),
		py("fork", "import os\nos.fork()", wantError),
		py("infinite loop", "while True:\n    pass", wantLimit("timeout")),
		py("memory bomb", "a = []\nwhile True:\n    a.append(' ' * (1 << 20))", wantLimit("memory")),
		py("string doubling", "s = 'x'\nwhile True:\n    s += s", wantLimit("memory")),
		py("deep recursion", "def f(n):\n    return f(n + 1)\nf(0)", wantError),
		py("stdout flood", "while True:\n    print('y' * 1000)", wantLimit("timeout")),
		// Twice the output limit: enough to cross it, and little enough to
		// end well inside the timeout on a busy machine.
		py("stderr flood", "import sys\nfor i in range(2 * 10**4):\n    sys.stderr.write('z' * 100)", wantLimit("output")),
		py("2 MB of code", big, wantLimit("code_size")),
		py("NUL byte", "x = 1\x00\n", wantError),
		py("lone surrogate", "s = '\xed\xa0\x80'\nlen(s)", nil),
		{name: "python/lone surrogate escape", tool: "execute_python",
			raw: json.RawMessage(`{"code": "s = '\ud800'\nlen(s)"}`)},
		py("sys.exit", "import sys\nsys.exit(5)", nil),
		js("read host file", "[typeof require, typeof std, typeof os, typeof Deno]", nil),
		js("module import", "await import('os')", wantError),
		js("fetch", "await fetch('http://127.0.0.1/')", wantError),
		js("environment", "typeof process === 'undefined' ? 'none' : JSON.stringify(process.env)", nil),
		js("eval escape", "(function(){ return this })().constructor.constructor('return typeof process')()", nil),
		js("infinite loop", "for (;;) {}", wantLimit("timeout")),
		js("memory bomb", "const a = []; for (;;) a.push(new Float64Array(1 << 20))", wantLimit("memory")),
		js("string doubling", "let s = 'x'; for (;;) s += s", wantError),
		js("deep recursion", "const f = n => f(n + 1) + 1; f(0)", wantError),
		js("stdout flood", "for (;;) console.log('y'.repeat(1000))", wantLimit("timeout")),
		js("stderr flood", "for (let i = 0; i < 2e4; i++) console.error('z'.repeat(100))", wantLimit("output")),
		js("2 MB of code", big, wantLimit("code_size")),
		js("NUL byte", "let x = 1\x00", wantError),
		js("lone surrogate", "'\xed\xa0\x80'.length", nil),
		{name: "javascript/lone surrogate escape", tool: "execute_javascript",
			raw: json.RawMessage(`{"code": "'\ud800'.length"}`)},
	}
}

func TestAbuseCorpus(t *testing.T) {
	s := startServer(t, append(noPool, "--timeout", "2s", "--memory", "64MiB")...)
	settle(t, s)
	server := s.cmd.Process.Pid
	fdsBefore := fdCount(t, server)

	corpus := abuseCorpus()
	for _, a := range corpus {
		t.Run(a.name, func(t *testing.T) {
			res, st := a.call(t, s)
			if res.IsError && (st.Error == nil || st.Error.Message == "" && st.Error.Traceback == "") {
				t.Errorf("an error answer without a message: %q", text(res))
			}
			if strings.Contains(text(res), canary) {
				t.Errorf("the host environment leaked into the answer: %q", text(res))
			}
			if a.check != nil {
				a.check(t, st)
			}
		})
	}

	t.Run("64 concurrent calls", func(t *testing.T) {
		var wg sync.WaitGroup
		for i := 0; i < 64; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				a := corpus[i%len(corpus)]
				res, st := a.call(t, s)
				if strings.Contains(text(res), canary) {
					t.Errorf("%s: the host environment leaked", a.name)
				}
				// Under contention a flood may hit the timeout before the
				// output limit: only a clear answer is required here.
				if res.IsError && (st.Error == nil || st.Error.Message == "" && st.Error.Traceback == "") {
					t.Errorf("%s: an error answer without a message: %q", a.name, text(res))
				}
			}(i)
		}
		wg.Wait()
	})

	assertHealthy(t, s, fdsBefore)
}

// assertHealthy checks that the server still answers correctly, that no
// worker process remains, and that its open files are back to fdsBefore.
func assertHealthy(t *testing.T, s *testServer, fdsBefore int) {
	t.Helper()
	_, st := s.call(t, "execute_python", "sum(range(10))")
	if string(st.Result) != "45" {
		t.Errorf("a normal Python call after the corpus: result %s", st.Result)
	}
	_, st = s.call(t, "execute_javascript", "[1, 2, 3].map(x => x * 2)")
	if string(st.Result) != "[2,4,6]" {
		t.Errorf("a normal JavaScript call after the corpus: result %s", st.Result)
	}
	server := s.cmd.Process.Pid
	if !eventually(10*time.Second, func() bool { return len(children(server)) == 0 }) {
		t.Errorf("worker processes remain: %v", children(server))
	}
	var fds int
	if !eventually(10*time.Second, func() bool { fds = fdCount(t, server); return fds <= fdsBefore }) {
		t.Errorf("server has %d open files, %d before", fds, fdsBefore)
	}
}

func TestThousandSequentialCalls(t *testing.T) {
	if testing.Short() {
		t.Skip("1,000 calls")
	}
	s := startServer(t, noPool...)
	settle(t, s)
	fdsBefore := fdCount(t, s.cmd.Process.Pid)
	for i := 0; i < 1000; i++ {
		tool, code, want := "execute_javascript", fmt.Sprintf("%d + 1", i), fmt.Sprint(i+1)
		if i%10 == 0 {
			tool, code = "execute_python", fmt.Sprintf("%d + 1", i)
		}
		_, st := s.call(t, tool, code)
		if string(st.Result) != want {
			t.Fatalf("call %d (%s): result %s, want %s", i, tool, st.Result, want)
		}
	}
	assertHealthy(t, s, fdsBefore)
}

func TestWorkerFaults(t *testing.T) {
	s := startServer(t, append(noPool, "--timeout", "10s")...)
	settle(t, s)
	fdsBefore := fdCount(t, s.cmd.Process.Pid)
	cases := []struct {
		name string
		code string
		want string
	}{
		{"oversized frame", "#capsule-fault:oversized-frame", "exceeds the maximum frame size"},
		{"malformed frame", "#capsule-fault:malformed-frame", "bad frame"},
		{"unknown frame", "#capsule-fault:unknown-frame", "unknown frame type"},
		{"crash", "#capsule-fault:crash", "exited with status 7"},
		{"never answers", "#capsule-fault:never-answer", "timeout: execution exceeded 10s"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, st := s.call(t, "execute_python", c.code)
			if !res.IsError || st.Error == nil || !strings.Contains(st.Error.Message, c.want) {
				t.Fatalf("isError=%v error=%+v, want an error naming %q", res.IsError, st.Error, c.want)
			}
		})
	}
	t.Run("killed mid-call", func(t *testing.T) {
		// The worker the previous case timed out may still be exiting
		// (a large address space takes a while to tear down under load);
		// killing that one instead would leave this call to finish.
		workersGone(t, s)
		done := make(chan structured, 1)
		go func() {
			_, st := s.call(t, "execute_python", "import time\nprint('before', flush=True)\ntime.sleep(9)")
			done <- st
		}()
		pid := lockedWorker(t, s)
		// Past the worker's start-up, while the code sleeps.
		time.Sleep(3 * time.Second)
		_ = syscall.Kill(pid, syscall.SIGKILL)
		st := <-done
		if st.Error == nil || !strings.Contains(st.Error.Message, "killed") {
			t.Fatalf("error = %+v, want one saying the worker was killed", st.Error)
		}
		if !strings.Contains(st.Stdout, "before") {
			t.Errorf("stdout = %q: what was printed before the kill is lost", st.Stdout)
		}
	})
	assertHealthy(t, s, fdsBefore)
}

// TestWorkerDropsLeakedDescriptors: a descriptor the server's parent leaked
// without close-on-exec (here /etc/hostname at fd 7, as a shell may leave
// one) does not reach the guest: the worker closes it before its lockdown.
func TestWorkerDropsLeakedDescriptors(t *testing.T) {
	leaked, err := os.Open("/etc/hostname")
	if err != nil {
		t.Skipf("no /etc/hostname to leak: %v", err)
	}
	defer leaked.Close()
	var cmd *exec.Cmd
	stderr := newSyncBuffer()
	c, err := client.NewStdioMCPClientWithOptions(capsuleBin, nil, append([]string{"serve"}, noPool...),
		transport.WithCommandStderrWriter(stderr),
		transport.WithCommandFunc(func(ctx context.Context, command string, env, args []string) (*exec.Cmd, error) {
			cmd = exec.CommandContext(ctx, command, args...)
			cmd.Env = serverEnv()
			// fds 3..6 are /dev/null, fd 7 the leaked file, none close-on-exec.
			null, err := os.Open(os.DevNull)
			if err != nil {
				return nil, err
			}
			cmd.ExtraFiles = []*os.File{null, null, null, null, leaked}
			return cmd, nil
		}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatal(err)
	}
	s := &testServer{c: c, cmd: cmd, stderr: stderr}
	if target, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/7", cmd.Process.Pid)); target != "/etc/hostname" {
		t.Fatalf("the server's fd 7 is %q: the test did not leak /etc/hostname", target)
	}
	settle(t, s)
	pid, done := runningWorker(t, s, "execute_python", "import time\ntime.sleep(2)")
	entries, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	var fds []string
	for _, e := range entries {
		target, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, e.Name()))
		fds = append(fds, e.Name()+"→"+target)
		if target == "/etc/hostname" {
			t.Errorf("the worker holds the leaked /etc/hostname at fd %s", e.Name())
		}
	}
	t.Logf("worker descriptors: %v", fds)
	<-done
}

// TestOpenFileBombIsBounded is issue 10's attack: a guest holding open
// descriptors to a compressed stdlib source, each of which once cost the
// worker its inflated size (756 KB) of Go memory. Now the descriptors are
// bounded (EMFILE past 1024) and the inflated file is shared, so the
// worker's peak RSS stays near an ordinary worker's.
func TestOpenFileBombIsBounded(t *testing.T) {
	s := startServer(t, append([]string{"--memory", "64MiB", "--timeout", "20s"}, noPool...)...)
	settle(t, s)
	answer := make(chan structured, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, st := s.call(t, "execute_python", openUntilEMFILE+`import time
for fd in fds:
    os.read(fd, 1)
time.sleep(2)
len(fds)`)
		answer <- st
	}()
	pid := lockedWorker(t, s)
	peak := 0
	for running := true; running; {
		select {
		case <-done:
			running = false
		case <-time.After(50 * time.Millisecond):
		}
		var kb int
		if _, err := fmt.Sscanf(procStatus(pid, "VmHWM"), "%d kB", &kb); err == nil {
			peak = max(peak, kb)
		}
	}
	// 1,024 descriptors less those the interpreter and the mounts hold.
	if st := <-answer; st.Error != nil || len(st.Result) != 4 || string(st.Result) < "1000" || string(st.Result) > "1024" {
		t.Fatalf("the bomb answered %s, error %+v; want about 1,020 descriptors", st.Result, st.Error)
	}
	// 1,024 inflated copies would be 775 MB; the worker itself (compiled
	// module, 64 MiB guest, runtime) stays well under 250 MB.
	if peak == 0 || peak > 250<<10 {
		t.Fatalf("worker peak RSS %d kB with 1,024 open descriptors of one source file", peak)
	}
	t.Logf("worker peak RSS %d kB", peak)
}
