package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// scarcityUID is the ordinary user the process-limit test serves as: one
// of its own, so that nothing else on the machine counts against its
// RLIMIT_NPROC.
const scarcityUID = 54321

// binaryFor copies the binary under test where uid may run it, and makes
// it a cache directory of its own.
func binaryFor(t *testing.T, uid int) (bin, cacheHome string) {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	bin = filepath.Join(dir, "capsule")
	b, err := os.ReadFile(capsuleBin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	cacheHome = filepath.Join(dir, "cache")
	if err := os.Mkdir(cacheHome, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(cacheHome, uid, uid); err != nil {
		t.Fatal(err)
	}
	return bin, cacheHome
}

// limitedUser prepares to serve as scarcityUID under prlimit: it returns
// prlimit's path, a binary that user may run and a cache home of its own.
// It skips unless the test runs as root and prlimit is there.
func limitedUser(t *testing.T) (prlimit, bin, cacheHome string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to serve as a user of its own")
	}
	prlimit, err := exec.LookPath("prlimit")
	if err != nil {
		t.Skip("no prlimit")
	}
	bin, cacheHome = binaryFor(t, scarcityUID)
	return prlimit, bin, cacheHome
}

// TestProcessLimitIsAnAnswer is W4: a server of an ordinary user whose
// RLIMIT_NPROC is used up (by its own workers here) answers the calls it
// cannot start a worker for with a retryable error that names the cause,
// instead of dying with "failed to create new OS thread", and serves
// again once workers end.
func TestProcessLimitIsAnAnswer(t *testing.T) {
	prlimit, bin, cacheHome := limitedUser(t)
	const nproc = "60"
	s := startServerHook(t, []string{"XDG_CACHE_HOME=" + cacheHome}, func(cmd *exec.Cmd) {
		cmd.Args = append([]string{"prlimit", "--nproc=" + nproc, "--", bin}, cmd.Args[1:]...)
		cmd.Path = prlimit
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: scarcityUID, Gid: scarcityUID}}
	}, "--max-concurrency", "16", "--max-queue", "0", "--timeout", "20s", "--pool-python", "0")
	s.call(t, "execute_javascript", "1") // the snapshot is made

	// Calls that hold their workers while more arrive, until the limit.
	const calls = 24
	var wg sync.WaitGroup
	answers := make([]structured, calls)
	for i := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, answers[i] = s.call(t, "execute_javascript", "const end = Date.now() + 3000; while (Date.now() < end) {} 1")
		}()
	}
	wg.Wait()
	ok, refused := 0, 0
	for _, a := range answers {
		switch {
		case a.Error == nil && string(a.Result) == "1":
			ok++
		case a.Error != nil && a.Error.Type == "ServerBusy" && strings.Contains(a.Error.Message, "process limit") &&
			strings.Contains(a.Error.Message, "try again"):
			refused++
		default:
			t.Errorf("answer %s %+v: want 1, or a ServerBusy error naming the process limit", a.Result, a.Error)
		}
	}
	t.Logf("%d answered, %d refused at the process limit of %s", ok, refused, nproc)
	if refused == 0 {
		t.Errorf("no call met the process limit of %s: the test did not reach it", nproc)
	}
	// The server is still up and serves again.
	if _, st := s.call(t, "execute_javascript", "1 + 1"); string(st.Result) != "2" {
		t.Fatalf("after the limit, 1 + 1 = %s %+v", st.Result, st.Error)
	}
	if log := s.stderr.String(); strings.Contains(log, "fatal error") && !strings.Contains(log, "| fatal error") {
		t.Fatalf("the server itself crashed (a worker's crash is quoted with '|'):\n%s", log)
	}
}

// TestProcessLimitTooLowExits2: a process limit that cannot hold the
// server's threads and two workers is refused at start (W7), for every
// command that starts workers, down to the smallest limit under which Go's
// runtime reaches capsule's code at all (issue 32): exit status 2 and one
// line naming the limit, before anything else (the hardening probe's
// warning, a runtime crash) could bury it. At 4 or less, Go's runtime may
// fail in its own start (it makes a varying number of threads there),
// before any package of the program is initialised.
func TestProcessLimitTooLowExits2(t *testing.T) {
	prlimit, bin, cacheHome := limitedUser(t)
	for _, tc := range []struct {
		nproc string
		args  []string
	}{
		{"12", []string{"serve"}}, {"8", []string{"serve", "--http", "127.0.0.1:0"}}, {"5", []string{"serve"}},
		{"6", []string{"exec", "python", "-c", "1"}}, {"6", []string{"doctor"}},
	} {
		// The limit counts every thread of the user: those of an earlier
		// test's workers must be gone, or Go's runtime fails at 4 and 5.
		if !eventually(30*time.Second, func() bool { return userThreads(scarcityUID) == 0 }) {
			t.Fatalf("uid %d still has %d threads", scarcityUID, userThreads(scarcityUID))
		}
		cmd := exec.Command(prlimit, "--nproc="+tc.nproc, "--", bin)
		cmd.Args = append(cmd.Args, tc.args...)
		cmd.Env = serverEnv("XDG_CACHE_HOME=" + cacheHome)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: scarcityUID, Gid: scarcityUID}}
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		want := "capsule: invalid configuration: RLIMIT_NPROC is " + tc.nproc + ": the server needs "
		if !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.HasPrefix(string(out), want) || strings.Count(string(out), "\n") != 1 ||
			!strings.Contains(string(out), "(ulimit -u)") {
			t.Errorf("%v at RLIMIT_NPROC %s: err %v output %q; want exit status 2 and one line %q...", tc.args, tc.nproc, err, out, want)
		}
	}
}

// userThreads counts the threads of uid's processes, all of which count
// against its RLIMIT_NPROC.
func userThreads(uid int) int {
	n := 0
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		var st syscall.Stat_t
		if syscall.Stat(d, &st) != nil || int(st.Uid) != uid {
			continue
		}
		tasks, _ := filepath.Glob(d + "/task/*")
		n += len(tasks)
	}
	return n
}
