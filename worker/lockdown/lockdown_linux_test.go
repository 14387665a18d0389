package lockdown

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"golang.org/x/sys/unix"
)

// The attack tests re-run the test binary as a helper process: Apply cannot
// be undone, so every attempt gets a fresh process. helperEnv selects what
// the helper does: "MODE:ATTACK".
const (
	helperEnv  = "CAPSULE_LOCKDOWN_HELPER"
	connectEnv = "CAPSULE_LOCKDOWN_CONNECT"
	// dropEnv names an allowlist entry the wasm helper leaves out, for
	// TestAllowlistEntriesNeeded.
	dropEnv = "CAPSULE_LOCKDOWN_DROP"
	// testCPUTime is the CPUTime every helper applies.
	testCPUTime = 10 * time.Second
)

// Lockdown modes a helper can apply. "full" is Apply; the others leave
// layers out to show what the remaining ones stop on their own.
var modes = map[string]*layerSet{
	"none":       nil,
	"full":       {},
	"no-seccomp": {skipSeccomp: true},
	"landlock":   {skipRlimits: true, skipNofile: true, skipSeccomp: true},
}

func TestMain(m *testing.M) {
	if v := os.Getenv(helperEnv); v != "" {
		os.Exit(helperMain(v))
	}
	// The lockdown applies no_new_privs and seccomp to every thread with
	// AllThreadsSyscall, which Go refuses in a binary linked with cgo:
	// these tests need a build without it, as capsule does (the Makefile
	// exports CGO_ENABLED=0). One failure that says so, rather than one per
	// test.
	if _, _, e := syscall.AllThreadsSyscall(unix.SYS_PRCTL, unix.PR_GET_NO_NEW_PRIVS, 0, 0); e == syscall.ENOTSUP {
		fmt.Fprintln(os.Stderr, "worker/lockdown: this test binary is linked with cgo, under which Go refuses the lockdown's AllThreadsSyscall: "+
			"run it as make does, CGO_ENABLED=0 go test ./worker/...")
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// helperLine is what a helper prints on stdout, one JSON line each: first
// the lockdown report, then the attack's outcome (unless it was killed).
type helperLine struct {
	Report  *Report `json:",omitempty"`
	ApplyNS int64   `json:",omitempty"`
	Outcome string  `json:",omitempty"`
}

// attackCase is one escape attempt. prepare runs before the lockdown (things a
// worker would legitimately have, like a socket for connect to use) and
// returns the state run needs; run is the attempt itself and returns nil if
// it succeeded.
type attackCase struct {
	prepare func() (any, error)
	run     func(state any) error
}

// outcomeOK is printed when an attack succeeded.
const outcomeOK = "ok"

var attacks = map[string]attackCase{
	"open-file": {run: func(any) error {
		fd, err := unix.Open("/etc/passwd", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err == nil {
			unix.Close(fd)
		}
		return err
	}},
	"open-dir": {run: func(any) error {
		fd, err := unix.Open("/", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err == nil {
			unix.Close(fd)
		}
		return err
	}},
	"list-open-dir": {
		prepare: func() (any, error) { return unix.Open("/", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0) },
		run: func(s any) error {
			_, err := unix.Getdents(s.(int), make([]byte, 4096))
			return err
		},
	},
	"socket": {run: func(any) error {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err == nil {
			unix.Close(fd)
		}
		return err
	}},
	"connect": {
		prepare: func() (any, error) { return unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0) },
		run: func(s any) error {
			host, port, err := net.SplitHostPort(os.Getenv(connectEnv))
			if err != nil {
				return err
			}
			p, _ := strconv.Atoi(port)
			sa := &unix.SockaddrInet4{Port: p}
			copy(sa.Addr[:], net.ParseIP(host).To4())
			return unix.Connect(s.(int), sa)
		},
	},
	"execve": {run: func(any) error {
		// On success the helper becomes echo, which prints the outcome.
		return unix.Exec("/bin/echo", []string{"echo", `{"Outcome":"ok"}`}, nil)
	}},
	"fork": {run: func(any) error { return rawFork(unix.SYS_CLONE, uintptr(unix.SIGCHLD), 0) }},
	"clone3": {run: func(any) error {
		args := struct{ flags, pidfd, childTID, parentTID, exitSignal, stack, stackSize, tls uint64 }{exitSignal: uint64(unix.SIGCHLD)}
		return rawFork(unix.SYS_CLONE3, uintptr(unsafe.Pointer(&args)), unsafe.Sizeof(args))
	}},
	"ptrace": {
		// The victim is the helper's own child, so that Yama's
		// ptrace_scope=1 would not be what stops the attempt; it was
		// started before the lockdown, so it is outside the Landlock
		// domain.
		prepare: func() (any, error) {
			victim := exec.Command("/proc/self/exe")
			victim.Env = append(os.Environ(), helperEnv+"=victim:")
			victim.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
			return victim, victim.Start()
		},
		run: func(s any) error {
			pid := s.(*exec.Cmd).Process.Pid
			if err := unix.PtraceAttach(pid); err != nil {
				return err
			}
			var ws unix.WaitStatus
			unix.Wait4(pid, &ws, unix.WALL, nil)
			return unix.PtraceDetach(pid)
		},
	},
	"mmap-exec": {run: func(any) error {
		b, err := unix.Mmap(-1, 0, 4096, unix.PROT_READ|unix.PROT_EXEC, unix.MAP_PRIVATE|unix.MAP_ANON)
		if err == nil {
			unix.Munmap(b)
		}
		return err
	}},
	"mprotect-exec": {
		prepare: func() (any, error) {
			return unix.Mmap(-1, 0, 4096, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
		},
		run: func(s any) error { return unix.Mprotect(s.([]byte), unix.PROT_READ|unix.PROT_EXEC) },
	},
	// What growing a guard-page guest memory does (runtimes/internal/
	// guestmem): a PROT_NONE reservation made before the lockdown, opened
	// page by page afterwards; and the same opening asked to be executable.
	"open-guest-memory": {
		prepare: reserveGuestMemory,
		run: func(s any) error {
			b := s.([]byte)[:1<<16]
			if err := unix.Mprotect(b, unix.PROT_READ|unix.PROT_WRITE); err != nil {
				return err
			}
			b[len(b)-1] = 1
			return nil
		},
	},
	"open-guest-memory-exec": {
		prepare: reserveGuestMemory,
		run: func(s any) error {
			return unix.Mprotect(s.([]byte)[:1<<16], unix.PROT_READ|unix.PROT_WRITE|unix.PROT_EXEC)
		},
	},
	"int80":       {run: int80Getpid},
	"kill-parent": {run: func(any) error { return unix.Kill(os.Getppid(), 0) }},
}

// reserveGuestMemory reserves address space as a guard-page guest memory
// does: 8 GiB and 64 KiB, inaccessible.
func reserveGuestMemory() (any, error) {
	return unix.Mmap(-1, 0, 8<<30+64<<10, unix.PROT_NONE, unix.MAP_PRIVATE|unix.MAP_ANON|unix.MAP_NORESERVE)
}

// rawFork forks with a raw clone or clone3 and has the child exit at once;
// it is what an escaped guest would do, without the Go runtime's help.
func rawFork(nr, a1, a2 uintptr) error {
	pid, _, e := syscall.RawSyscall6(nr, a1, a2, 0, 0, 0, 0)
	if e != 0 {
		return e
	}
	if pid == 0 {
		syscall.RawSyscall(unix.SYS_EXIT_GROUP, 0, 0, 0)
	}
	var ws unix.WaitStatus
	_, err := unix.Wait4(int(pid), &ws, 0, nil)
	return err
}

// helperMain runs in the helper process and returns its exit code.
func helperMain(v string) int {
	mode, name, _ := strings.Cut(v, ":")
	switch mode {
	case "victim":
		time.Sleep(time.Minute)
		return 0
	case "wasm":
		return wasmHelper(name)
	case "cpu":
		// The smallest limit Apply sets: CPU used so far, rounded up, plus
		// the margin; two spinning goroutines reach it in about a second.
		if _, err := Apply(Options{CPUTime: time.Nanosecond}); err != nil {
			fmt.Fprintf(os.Stderr, "apply: %v\n", err)
			return 3
		}
		for i := 0; i < 2; i++ {
			go func() {
				//lint:ignore SA5002 the loop spins on purpose, to reach RLIMIT_CPU.
				for {
				}
			}()
		}
		time.Sleep(time.Minute)
		return 0
	}
	set, ok := modes[mode]
	a, known := attacks[name]
	if !ok || !known {
		fmt.Fprintf(os.Stderr, "unknown helper %q\n", v)
		return 2
	}
	var state any
	if a.prepare != nil {
		var err error
		if state, err = a.prepare(); err != nil {
			fmt.Fprintf(os.Stderr, "prepare: %v\n", err)
			return 2
		}
	}
	out := json.NewEncoder(os.Stdout)
	if set != nil {
		start := time.Now()
		r, err := apply(Options{CPUTime: testCPUTime}, *set)
		elapsed := time.Since(start)
		if err != nil {
			fmt.Fprintf(os.Stderr, "apply: %v\n", err)
			return 3
		}
		out.Encode(helperLine{Report: &r, ApplyNS: elapsed.Nanoseconds()})
	}
	outcome := outcomeOK
	if err := a.run(state); err != nil {
		var errno syscall.Errno
		if errors.As(err, &errno) {
			outcome = unix.ErrnoName(errno)
		} else {
			outcome = err.Error()
		}
	}
	out.Encode(helperLine{Outcome: outcome})
	return 0
}

// helperResult is what the test saw of one helper run.
type helperResult struct {
	report  *Report
	apply   time.Duration
	outcome string         // errno name, "ok", or "" if killed
	signal  syscall.Signal // the signal that killed the helper, if any
	stderr  string
}

func (r helperResult) String() string {
	if r.signal != 0 {
		return "killed by " + unix.SignalName(r.signal)
	}
	return r.outcome
}

// runHelper runs the test binary as a helper and collects its lines.
func runHelper(t *testing.T, v string, env ...string) helperResult {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(append(os.Environ(), helperEnv+"="+v), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	res := helperResult{stderr: stderr.String()}
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit):
		ws := exit.Sys().(syscall.WaitStatus)
		if !ws.Signaled() {
			t.Fatalf("helper %s exited %d: %s", v, ws.ExitStatus(), stderr.String())
		}
		res.signal = ws.Signal()
	default:
		t.Fatalf("helper %s: %v", v, err)
	}
	sc := bufio.NewScanner(&stdout)
	for sc.Scan() {
		var l helperLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("helper %s printed %q: %v", v, sc.Text(), err)
		}
		if l.Report != nil {
			res.report, res.apply = l.Report, time.Duration(l.ApplyNS)
		}
		if l.Outcome != "" {
			res.outcome = l.Outcome
		}
	}
	return res
}

// Expected outcomes. A stopped attack either dies by SIGSYS (seccomp's
// KILL_PROCESS) or fails with an errno that names the layer.
const (
	bySeccompKill = "killed by SIGSYS"
	allowed       = outcomeOK
	notCovered    = "" // the layers of this mode do not claim to stop it
)

func TestAttacksAreDenied(t *testing.T) {
	abi, abiErr := landlockABI()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	connect := connectEnv + "=" + ln.Addr().String()

	// Each attack: what the helper sees with no lockdown (proving the
	// attack works at all), with the whole lockdown, and with layers left
	// out. In "full" nearly everything dies by SIGSYS because seccomp sees
	// the syscall before any other layer; "no-seccomp" and "landlock" show
	// the layers underneath.
	// minABI is the Landlock ABI the partial modes need.
	tests := []struct {
		attack    string
		full      string
		noSeccomp string // Landlock + rlimits (NOFILE=0) + NNP
		landlock  string // Landlock + NNP only
		minABI    int
	}{
		{"open-file", bySeccompKill, "EMFILE", "EACCES", 1},
		{"open-dir", bySeccompKill, "EMFILE", "EACCES", 1},
		{"list-open-dir", bySeccompKill, notCovered, notCovered, 0},
		{"socket", bySeccompKill, "EMFILE", notCovered, 1},
		{"connect", bySeccompKill, "EACCES", "EACCES", 4},
		{"execve", bySeccompKill, "EACCES", "EACCES", 1},
		{"fork", bySeccompKill, notCovered, notCovered, 0},
		{"clone3", "ENOSYS", notCovered, notCovered, 0},
		{"ptrace", bySeccompKill, "EPERM", "EPERM", 1},
		{"mmap-exec", "EPERM", notCovered, notCovered, 0},
		{"mprotect-exec", "EPERM", notCovered, notCovered, 0},
		{"int80", bySeccompKill, notCovered, notCovered, 0},
		{"kill-parent", bySeccompKill, "EPERM", "EPERM", 6},
	}
	for _, tt := range tests {
		t.Run(tt.attack, func(t *testing.T) {
			base := runHelper(t, "none:"+tt.attack, connect)
			if base.String() != allowed {
				t.Skipf("attack does not work here even without the lockdown (%s; %s)", base, base.stderr)
			}
			for _, m := range []struct{ mode, want string }{
				{"full", tt.full}, {"no-seccomp", tt.noSeccomp}, {"landlock", tt.landlock},
			} {
				if m.want == notCovered {
					continue
				}
				t.Run(m.mode, func(t *testing.T) {
					if m.mode != "full" && abiErr != nil {
						t.Skipf("landlock: %v", abiErr)
					}
					if m.mode != "full" && abi < tt.minABI {
						t.Skipf("needs Landlock ABI %d, kernel has %d", tt.minABI, abi)
					}
					got := runHelper(t, m.mode+":"+tt.attack, connect)
					if got.String() != m.want {
						t.Errorf("%s under %s: got %s, want %s (stderr: %s)", tt.attack, m.mode, got, m.want, got.stderr)
					}
				})
			}
		})
	}
}

// TestGuestMemoryOpensAfterApply: under the whole lockdown a worker can
// still grow a guard-page guest memory (mprotect to read-write of part of a
// reservation made before), and still cannot make it executable.
func TestGuestMemoryOpensAfterApply(t *testing.T) {
	for _, tt := range []struct{ attack, want string }{
		{"open-guest-memory", allowed},
		{"open-guest-memory-exec", "EPERM"},
	} {
		if got := runHelper(t, "full:"+tt.attack); got.String() != tt.want {
			t.Errorf("%s: got %s, want %s (stderr: %s)", tt.attack, got, tt.want, got.stderr)
		}
	}
}

func TestApplyReport(t *testing.T) {
	got := runHelper(t, "full:kill-parent")
	if got.report == nil {
		t.Fatalf("no report (%s)", got.stderr)
	}
	names := []string{LayerRlimits, LayerNoNewPrivs, LayerLandlock, LayerSeccomp}
	if len(got.report.Layers) != len(names) {
		t.Fatalf("report has %d layers, want %d: %v", len(got.report.Layers), len(names), got.report)
	}
	probe := Probe()
	for i, name := range names {
		layer := got.report.Layers[i]
		if layer.Name != name {
			t.Errorf("layer %d is %q, want %q", i, layer.Name, name)
		}
		want, _ := probe.Layer(name)
		if layer.Active != want.Active {
			t.Errorf("%s: Apply says active=%v (%s), Probe says %v (%s)", name, layer.Active, layer.Reason, want.Active, want.Reason)
		}
		t.Logf("%-13s active=%-5v %8v  %s", layer.Name, layer.Active, layer.Duration, layer.Reason)
	}
	t.Logf("Apply took %v in all", got.apply)
}

func TestApplyRejectsZeroCPUTime(t *testing.T) {
	if _, err := Apply(Options{}); err == nil {
		t.Fatal("Apply without CPUTime succeeded (and locked down the test process)")
	}
}

func TestProbe(t *testing.T) {
	r := Probe()
	for _, l := range r.Layers {
		t.Logf("%-13s active=%-5v %s", l.Name, l.Active, l.Reason)
	}
	if len(r.Layers) != 4 {
		t.Fatalf("Probe reported %d layers, want 4", len(r.Layers))
	}
	// This project's machines have every layer; elsewhere Probe may
	// legitimately report gaps, so only log them there.
	if os.Getenv("CAPSULE_REQUIRE_HARDENING") != "" && !r.Complete() {
		t.Errorf("missing layers: %v", r.Missing())
	}
}

// TestCPULimitKills shows the RLIMIT_CPU backstop: a worker that spins
// past its CPU time dies by SIGKILL (soft = hard, so no ignorable SIGXCPU
// first).
func TestCPULimitKills(t *testing.T) {
	start := time.Now()
	got := runHelper(t, "cpu:")
	if got.signal != syscall.SIGKILL {
		t.Fatalf("spinning helper: %s, want killed by SIGKILL (stderr: %s)", got, got.stderr)
	}
	t.Logf("killed by the CPU limit after %v wall time", time.Since(start))
}

// TestApplyCost measures the whole lockdown, and each layer, in fresh
// processes (Apply can only run once per process) and logs medians.
func TestApplyCost(t *testing.T) {
	const runs = 30
	var total []time.Duration
	perLayer := map[string][]time.Duration{}
	for i := 0; i < runs; i++ {
		got := runHelper(t, "full:mmap-exec")
		if got.report == nil {
			t.Fatalf("no report (%s)", got.stderr)
		}
		total = append(total, got.apply)
		for _, l := range got.report.Layers {
			perLayer[l.Name] = append(perLayer[l.Name], l.Duration)
		}
	}
	median := func(d []time.Duration) (time.Duration, time.Duration) {
		slices.Sort(d)
		return d[len(d)/2], d[len(d)*9/10]
	}
	m, p90 := median(total)
	t.Logf("Apply over %d processes: median %v, p90 %v", runs, m, p90)
	for _, name := range []string{LayerRlimits, LayerNoNewPrivs, LayerLandlock, LayerSeccomp} {
		m, p90 := median(perLayer[name])
		t.Logf("  %-13s median %v, p90 %v", name, m, p90)
	}
}

// TestWazeroRunsAfterApply is the positive test: a module compiled before
// Apply instantiates and runs after it, many times, concurrently, with
// timers, GC pressure, new threads, preemption, a context timeout and
// output through a pipe, and nothing gets killed.
func TestWazeroRunsAfterApply(t *testing.T) {
	got := runHelper(t, "wasm:")
	if got.signal != 0 || got.outcome != outcomeOK {
		t.Fatalf("wasm helper: %s\nstderr:\n%s", got, got.stderr)
	}
	t.Logf("Apply took %v; %s", got.apply, strings.TrimSpace(got.stderr))
}

// TestAllowlistEntriesNeeded is a measurement, not a check: it runs the
// wasm workload once without each allowlist entry and logs which absences
// kill it. Set CAPSULE_LOCKDOWN_MEASURE=1 to run it (about 2 s per entry).
// An entry that survives one run may still be needed rarely (exit,
// restart_syscall, munmap).
func TestAllowlistEntriesNeeded(t *testing.T) {
	if os.Getenv("CAPSULE_LOCKDOWN_MEASURE") == "" {
		t.Skip("set CAPSULE_LOCKDOWN_MEASURE=1 to measure")
	}
	for _, s := range allowedSyscalls {
		got := runHelper(t, "wasm:", dropEnv+"="+s.name)
		verdict := "needed"
		if got.signal == 0 && got.outcome == outcomeOK {
			verdict = "not hit in this run"
		}
		t.Logf("without %-18s %-20s (%s)", s.name, verdict, got)
	}
}

// wasmHelper is the helper side of TestWazeroRunsAfterApply.
func wasmHelper(string) int {
	fail := func(format string, args ...any) int {
		fmt.Fprintf(os.Stderr, format+"\n", args...)
		return 1
	}
	ctx := context.Background()
	// Everything that needs files, fds or executable memory happens here,
	// before the lockdown, as in the worker.
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigCompiler().WithCloseOnContextDone(true))
	wasi_snapshot_preview1.MustInstantiate(ctx, rt)
	compiled, err := rt.CompileModule(ctx, guestWasm)
	if err != nil {
		return fail("compile: %v", err)
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return fail("pipe: %v", err)
	}
	var guestBytes atomic.Int64
	readDone := make(chan struct{})
	go func() {
		n, _ := io.Copy(io.Discard, pr)
		guestBytes.Store(n)
		close(readDone)
	}()

	if drop := os.Getenv(dropEnv); drop != "" {
		kept := allowedSyscalls[:0]
		for _, s := range allowedSyscalls {
			if s.name != drop {
				kept = append(kept, s)
			}
		}
		allowedSyscalls = kept
	}
	start := time.Now()
	r, err := Apply(Options{CPUTime: testCPUTime})
	elapsed := time.Since(start)
	if err != nil {
		return fail("apply: %v", err)
	}
	out := json.NewEncoder(os.Stdout)
	out.Encode(helperLine{Report: &r, ApplyNS: elapsed.Nanoseconds()})

	const workers, rounds = 8, 25
	var wg sync.WaitGroup
	errs := make(chan error, workers+8)
	stop := make(chan struct{})
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < rounds; i++ {
				mod, err := rt.InstantiateModule(ctx, compiled, wazero.NewModuleConfig().
					WithName("").WithStdout(pw).WithStderr(pw).WithRandSource(rand.Reader))
				if err != nil {
					errs <- fmt.Errorf("instantiate: %w", err)
					return
				}
				if _, err := mod.ExportedFunction("run").Call(ctx, 200_000); err != nil {
					errs <- fmt.Errorf("run: %w", err)
					return
				}
				mod.Close(ctx)
				time.Sleep(time.Duration(i%3) * time.Millisecond)
			}
		}()
	}
	// A guest that loops forever, ended by a context deadline the way
	// the worker ends a timed-out execution.
	wg.Add(1)
	go func() {
		defer wg.Done()
		mod, err := rt.InstantiateModule(ctx, compiled, wazero.NewModuleConfig().WithName("").WithStdout(pw))
		if err != nil {
			errs <- err
			return
		}
		tctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		defer cancel()
		if _, err := mod.ExportedFunction("run").Call(tctx, 0xffffffff); err == nil {
			errs <- errors.New("endless guest returned without error")
		}
	}()
	// Threads locked by goroutines force the runtime to clone new Ms under
	// the filter; garbage and forced GCs drive the scavenger (madvise)
	// and stop-the-world preemption; tickers and timers use the netpoller.
	var bg sync.WaitGroup
	for i := 0; i < 4; i++ {
		bg.Add(1)
		go func() {
			defer bg.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			ticker := time.NewTicker(3 * time.Millisecond)
			defer ticker.Stop()
			var keep [][]byte
			for {
				select {
				case <-stop:
					return
				case <-ticker.C:
					keep = append(keep, make([]byte, 256<<10))
					if len(keep) > 16 {
						keep = nil
					}
				case <-time.After(time.Millisecond):
				}
			}
		}()
	}
	// A goroutine that ends while locked takes its thread with it: the
	// thread exits with the exit syscall.
	for i := 0; i < 2; i++ {
		bg.Add(1)
		go func() {
			defer bg.Done()
			runtime.LockOSThread()
			time.Sleep(5 * time.Millisecond)
		}()
	}
	bg.Add(1)
	go func() {
		defer bg.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
				runtime.GC()
				debug.FreeOSMemory()
			}
		}
	}()
	// Keep running past Go's periodic GOMAXPROCS update (sched_getaffinity,
	// pread64) and sysmon's work.
	minEnd := time.After(1500 * time.Millisecond)
	wg.Wait()
	<-minEnd
	close(stop)
	bg.Wait()
	close(errs)
	for err := range errs {
		return fail("%v", err)
	}
	pw.Close()
	<-readDone
	pr.Close()
	if want := int64(workers * rounds * 3); guestBytes.Load() != want {
		return fail("guests wrote %d bytes, want %d", guestBytes.Load(), want)
	}
	fmt.Fprintf(os.Stderr, "%d instantiations and runs after Apply, %d bytes through the pipe", workers*rounds, guestBytes.Load())
	out.Encode(helperLine{Outcome: outcomeOK})
	return 0
}
