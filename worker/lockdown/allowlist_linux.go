//go:build linux && (amd64 || arm64)

package lockdown

import "golang.org/x/sys/unix"

// This file is the whole seccomp policy of a locked-down worker, the same
// syscalls on x86_64 and arm64 (their numbers come from x/sys per
// architecture; allowlist_linux_$GOARCH.go only names the architecture).
// Everything not listed here kills the process (SECCOMP_RET_KILL_PROCESS).
// The worker at that point is a pure-Go process running already compiled
// wazero code: it only computes, allocates, schedules goroutines, sleeps,
// and talks over pipes it opened before the lockdown. Adding an entry
// widens what a wazero escape can do, so say who needs it.
//
// Measured (TestAllowlistEntriesNeeded, CAPSULE_LOCKDOWN_MEASURE=1: the
// wazero workload of TestWazeroRunsAfterApply once without each entry):
// every entry's absence killed the worker except munmap, clock_nanosleep,
// clock_gettime and restart_syscall, which that workload did not reach.
// They stay: munmap was seen once under load in earlier measurements, the
// clock calls are the Go runtime's fallbacks when the vDSO is unusable, and
// restart_syscall is issued by the kernel itself when a timed futex or
// nanosleep is interrupted by a signal (Go's SIGURG preemption), so it
// shows up rarely and would then kill a healthy worker.

// Syscalls that get special treatment rather than a plain allow.
const (
	// sysClone is allowed only to create threads (CLONE_THREAD set and no
	// namespace flag): the Go runtime starts Ms with it; a fork is killed.
	sysClone = unix.SYS_CLONE
	// sysClone3 answers ENOSYS: its flags live in memory the filter cannot
	// read, and ENOSYS makes callers (glibc, Go's os/exec) fall back to
	// clone, which the filter can check.
	sysClone3 = unix.SYS_CLONE3
	// sysMmap and sysMprotect answer EPERM when PROT_EXEC is asked for, so
	// no new machine code can be mapped; without PROT_EXEC they are the Go
	// heap and stacks (mmap) and wazero/Go guard handling (mprotect).
	sysMmap     = unix.SYS_MMAP
	sysMprotect = unix.SYS_MPROTECT
)

// allowedSyscalls are allowed unconditionally.
var allowedSyscalls = []allowedSyscall{
	// Go runtime: memory.
	{unix.SYS_MUNMAP, "munmap", "Go runtime: heap and stack release"},
	{unix.SYS_MADVISE, "madvise", "Go runtime: GC scavenger returning memory"},

	// Go runtime: scheduling and locks.
	{unix.SYS_FUTEX, "futex", "Go runtime: M sleep/wake (notesleep, lock_futex)"},
	{unix.SYS_SCHED_YIELD, "sched_yield", "Go runtime: osyield in spinning and GC"},
	{unix.SYS_NANOSLEEP, "nanosleep", "Go runtime: usleep in sysmon and spinning"},
	{unix.SYS_CLOCK_NANOSLEEP, "clock_nanosleep", "sleep fallback; harmless"},
	{unix.SYS_CLOCK_GETTIME, "clock_gettime", "time: vDSO fallback when the vDSO is missing"},
	{unix.SYS_RESTART_SYSCALL, "restart_syscall", "kernel: resumes a futex/nanosleep with a timeout interrupted by a signal (Go installs handlers with SA_RESTART)"},
	{unix.SYS_SCHED_GETAFFINITY, "sched_getaffinity", "Go runtime: periodic GOMAXPROCS update (Go 1.25+)"},
	{unix.SYS_PREAD64, "pread64", "Go runtime: periodic cgroup CPU limit read on an fd opened at start (Go 1.25+)"},

	// Go runtime: threads and signals.
	{unix.SYS_RT_SIGRETURN, "rt_sigreturn", "Go runtime: return from signal handlers (SIGURG preemption)"},
	{unix.SYS_RT_SIGPROCMASK, "rt_sigprocmask", "Go runtime: signal mask of new threads (minit)"},
	{unix.SYS_SIGALTSTACK, "sigaltstack", "Go runtime: signal stack of new threads (minit)"},
	{unix.SYS_GETPID, "getpid", "Go runtime: preemption signal target (signalM)"},
	{unix.SYS_GETTID, "gettid", "Go runtime: thread id of new Ms"},
	{unix.SYS_TGKILL, "tgkill", "Go runtime: async preemption (SIGURG to its own threads)"},
	{unix.SYS_EXIT, "exit", "Go runtime: thread exit (denying it makes Go spin)"},
	{unix.SYS_EXIT_GROUP, "exit_group", "worker exit (os.Exit, crash)"},

	// Netpoller and the worker's pipes (opened before the lockdown).
	{unix.SYS_EPOLL_PWAIT, "epoll_pwait", "netpoller: waiting for pipes and timers"},
	{unix.SYS_EPOLL_CTL, "epoll_ctl", "netpoller: os.File.Close of a pipe deregisters it"},
	{unix.SYS_READ, "read", "worker: request pipe; netpoller: its eventfd"},
	{unix.SYS_WRITE, "write", "worker: response pipe; netpoller: eventfd wakeup"},
	{unix.SYS_CLOSE, "close", "worker: closing its pipes at the end (can only drop access)"},

	// wazero.
	{unix.SYS_FCNTL, "fcntl", "wazero: O_NONBLOCK on *os.File stdio at every instantiation"},
	{unix.SYS_FSTAT, "fstat", "wazero: stdio file type at every instantiation"},
	{unix.SYS_GETRANDOM, "getrandom", "WASI random_get; Go runtime/crypto random (vDSO fallback)"},
}
