package lockdown

import (
	"errors"
	"fmt"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// cpuMarginSeconds is added to the CPU limit on top of rounding up, so that
// the rlimit never ends a run the worker's own timer would have ended.
const cpuMarginSeconds = 1

// readImpliesExec is the personality flag that makes PROT_READ imply
// PROT_EXEC, which would defeat the filter's PROT_EXEC check.
const readImpliesExec = 0x0400000

// Apply locks the calling process down, in this order: rlimits and
// PR_SET_DUMPABLE 0; no_new_privs on all threads; Landlock on all threads;
// RLIMIT_NOFILE 0; the seccomp allowlist on all threads.
//
// Call it once, after the module is compiled (wazero cannot map new code
// afterwards: mmap/mprotect with PROT_EXEC fail with EPERM, and a compile
// panics), after every file, pipe and host module the worker needs is open
// or instantiated (no new file descriptor can be created, and open, socket,
// execve and most other syscalls kill the process), and before any
// untrusted byte is read. The process must be built with CGO_ENABLED=0.
//
// A layer the kernel does not offer (no Landlock, no seccomp, no allowlist
// for this architecture) is reported inactive and Apply goes on. Any other
// failure is returned as an error, with the report of what was applied so
// far: the worker must then refuse to run code, since its state is
// whatever the failed step left.
func Apply(opts Options) (Report, error) { return apply(opts, layerSet{}) }

// layerSet lets the package tests leave layers out, to show what each
// layer stops on its own. Apply always applies everything.
type layerSet struct {
	skipRlimits, skipNofile, skipLandlock, skipSeccomp bool
}

// apply is Apply with some layers possibly left out; a skipped layer is
// reported inactive.
func apply(opts Options, set layerSet) (Report, error) {
	var r Report
	if opts.CPUTime <= 0 {
		return r, errors.New("lockdown: Options.CPUTime must be positive")
	}
	step := func(name string, skip bool, f func() (string, error)) error {
		if skip {
			r.Layers = append(r.Layers, Layer{Name: name, Reason: "skipped"})
			return nil
		}
		start := time.Now()
		reason, err := f()
		l := Layer{Name: name, Active: err == nil, Reason: reason, Duration: time.Since(start)}
		if err != nil {
			l.Reason = err.Error()
		}
		r.Layers = append(r.Layers, l)
		if err != nil && !errors.Is(err, errLandlockUnavailable) && !errors.Is(err, errSeccompUnavailable) {
			return fmt.Errorf("lockdown: %s: %w", name, err)
		}
		return nil
	}
	if err := step(LayerRlimits, set.skipRlimits, func() (string, error) { return setRlimits(opts.CPUTime, opts.Data) }); err != nil {
		return r, err
	}
	if err := step(LayerNoNewPrivs, false, setNoNewPrivs); err != nil {
		return r, err
	}
	if err := step(LayerLandlock, set.skipLandlock, applyLandlock); err != nil {
		return r, err
	}
	// RLIMIT_NOFILE belongs to the rlimits layer but must come after
	// Landlock (which needs a ruleset fd) and after the netpoller exists
	// (it needs an epoll fd and an eventfd, created lazily by the first
	// timer); below about 7 descriptors Go's netpoller init crashes.
	if !set.skipNofile {
		start := time.Now()
		if err := closeFileDescriptorCreation(); err != nil {
			r.Layers[0].Active = false
			r.Layers[0].Reason = err.Error()
			return r, fmt.Errorf("lockdown: %s: %w", LayerRlimits, err)
		}
		r.Layers[0].Reason += ", NOFILE=0"
		r.Layers[0].Duration += time.Since(start)
	}
	if err := step(LayerSeccomp, set.skipSeccomp, func() (string, error) {
		if err := seccompAvailable(); err != nil {
			return "", fmt.Errorf("%w: %w", errSeccompUnavailable, err)
		}
		return installSeccomp()
	}); err != nil {
		return r, err
	}
	return r, nil
}

// errSeccompUnavailable marks a kernel or architecture without the seccomp
// features the filter needs, which Apply reports rather than fails on.
var errSeccompUnavailable = errors.New("unavailable")

// setRlimits sets CPU, FSIZE, CORE and, when data is positive, DATA (soft
// = hard: the hard CPU limit's SIGKILL is what ends the process; Go
// ignores the soft limit's SIGXCPU) and makes the process non-dumpable.
func setRlimits(cpu time.Duration, data uint64) (string, error) {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return "", fmt.Errorf("getrusage: %w", err)
	}
	used := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	cpuSeconds := uint64((used+cpu+time.Second-1)/time.Second) + cpuMarginSeconds
	cpuSet, err := lowerRlimit(unix.RLIMIT_CPU, cpuSeconds)
	if err != nil {
		return "", err
	}
	if _, err := lowerRlimit(unix.RLIMIT_FSIZE, 0); err != nil {
		return "", err
	}
	if _, err := lowerRlimit(unix.RLIMIT_CORE, 0); err != nil {
		return "", err
	}
	dataSet := ""
	if data > 0 {
		n, err := lowerRlimit(unix.RLIMIT_DATA, data)
		if err != nil {
			return "", err
		}
		dataSet = fmt.Sprintf(", DATA=%dMiB", n>>20)
	}
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return "", fmt.Errorf("prctl(PR_SET_DUMPABLE, 0): %w", err)
	}
	// A READ_IMPLIES_EXEC personality would turn every readable mapping
	// executable behind the seccomp PROT_EXEC check; Go binaries never set
	// it, so finding it means something is wrong.
	persona, _, e := unix.RawSyscall(unix.SYS_PERSONALITY, 0xffffffff, 0, 0)
	if e != 0 {
		return "", fmt.Errorf("personality: %w", e)
	}
	if persona&readImpliesExec != 0 {
		return "", errors.New("process has the READ_IMPLIES_EXEC personality")
	}
	return fmt.Sprintf("CPU=%ds, FSIZE=0, CORE=0%s, dumpable=0", cpuSet, dataSet), nil
}

// lowerRlimit sets soft and hard limits to v, or to the current hard limit
// if that is lower (an unprivileged process cannot raise it).
func lowerRlimit(resource int, v uint64) (uint64, error) {
	var cur unix.Rlimit
	if err := unix.Prlimit(0, resource, nil, &cur); err != nil {
		return 0, fmt.Errorf("getrlimit(%d): %w", resource, err)
	}
	if cur.Max != unix.RLIM_INFINITY && cur.Max < v {
		v = cur.Max
	}
	if err := unix.Prlimit(0, resource, &unix.Rlimit{Cur: v, Max: v}, nil); err != nil {
		return 0, fmt.Errorf("setrlimit(%d, %d): %w", resource, v, err)
	}
	return v, nil
}

// setNoNewPrivs sets PR_SET_NO_NEW_PRIVS on every thread: Landlock and
// seccomp require it of an unprivileged caller, thread by thread.
func setNoNewPrivs() (string, error) {
	if _, _, e := syscall.AllThreadsSyscall6(unix.SYS_PRCTL, unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0, 0); e != 0 {
		return "", fmt.Errorf("prctl(PR_SET_NO_NEW_PRIVS) on all threads: %w", allThreadsError(e))
	}
	return "all threads", nil
}

// closeFileDescriptorCreation makes sure the netpoller exists, then sets
// RLIMIT_NOFILE to 0 so that no new descriptor can ever be created.
func closeFileDescriptorCreation() error {
	// A func timer goes into the timer heap at once (channel timers only
	// when someone waits on them), and the heap's first use initialises
	// the netpoller (epoll_create1 + eventfd2). Unlike a Sleep this does
	// not wait for the timer granularity.
	time.AfterFunc(time.Hour, func() {}).Stop()
	_, err := lowerRlimit(unix.RLIMIT_NOFILE, 0)
	return err
}

// Probe reports what Apply would achieve here without applying anything:
// it checks the Landlock ABI, seccomp's availability and the architecture's
// allowlist, and whether AllThreadsSyscall works (it does not in cgo
// binaries). It is cheap and side-effect free, for `capsule doctor` and for
// the supervisor's start-up warning.
func Probe() Report {
	r := Report{Layers: []Layer{
		{Name: LayerRlimits, Active: true, Reason: "setrlimit and PR_SET_DUMPABLE need no privilege"},
	}}
	// getpid returns the same value on every thread, as AllThreadsSyscall
	// requires; only the cgo refusal can make this fail.
	if _, _, e := syscall.AllThreadsSyscall(unix.SYS_GETPID, 0, 0, 0); e != 0 {
		err := allThreadsError(e)
		r.Layers = append(r.Layers,
			Layer{Name: LayerNoNewPrivs, Reason: err.Error()},
			Layer{Name: LayerLandlock, Reason: err.Error()})
	} else {
		r.Layers = append(r.Layers, Layer{Name: LayerNoNewPrivs, Active: true, Reason: "all threads"})
		if abi, err := landlockABI(); err != nil {
			r.Layers = append(r.Layers, Layer{Name: LayerLandlock, Reason: err.Error()})
		} else {
			r.Layers = append(r.Layers, Layer{Name: LayerLandlock, Active: true, Reason: fmt.Sprintf("ABI %d", abi)})
		}
	}
	if err := seccompAvailable(); err != nil {
		r.Layers = append(r.Layers, Layer{Name: LayerSeccomp, Reason: err.Error()})
	} else {
		r.Layers = append(r.Layers, Layer{Name: LayerSeccomp, Active: true, Reason: fmt.Sprintf("%d syscalls allowed", len(allowedSyscalls))})
	}
	return r
}
