package lockdown

import "golang.org/x/sys/unix"

// The arm64 seccomp policy mirrors allowlist_linux_amd64.go entry for entry
// (see there for why each syscall is allowed); it has been built and
// unit-tested but not measured under load on arm64 hardware.

// seccompArch is the AUDIT_ARCH value every syscall must carry; AArch32
// compat syscalls carry AUDIT_ARCH_ARM and are killed.
const seccompArch = unix.AUDIT_ARCH_AARCH64

// seccompSyscallLimit disables the number limit: arm64 has no x32-like ABI
// sharing its AUDIT_ARCH.
const seccompSyscallLimit = 0

// Syscalls that get special treatment rather than a plain allow.
const (
	sysClone    = unix.SYS_CLONE
	sysClone3   = unix.SYS_CLONE3
	sysMmap     = unix.SYS_MMAP
	sysMprotect = unix.SYS_MPROTECT
)

// allowedSyscalls are allowed unconditionally.
var allowedSyscalls = []allowedSyscall{
	{unix.SYS_MUNMAP, "munmap", "Go runtime: heap and stack release"},
	{unix.SYS_MADVISE, "madvise", "Go runtime: GC scavenger returning memory"},
	{unix.SYS_FUTEX, "futex", "Go runtime: M sleep/wake"},
	{unix.SYS_SCHED_YIELD, "sched_yield", "Go runtime: osyield"},
	{unix.SYS_NANOSLEEP, "nanosleep", "Go runtime: usleep"},
	{unix.SYS_CLOCK_NANOSLEEP, "clock_nanosleep", "sleep fallback"},
	{unix.SYS_CLOCK_GETTIME, "clock_gettime", "time: vDSO fallback"},
	{unix.SYS_RESTART_SYSCALL, "restart_syscall", "kernel: resumes interrupted timed sleeps"},
	{unix.SYS_SCHED_GETAFFINITY, "sched_getaffinity", "Go runtime: GOMAXPROCS update"},
	{unix.SYS_PREAD64, "pread64", "Go runtime: cgroup CPU limit read"},
	{unix.SYS_RT_SIGRETURN, "rt_sigreturn", "Go runtime: signal handler return"},
	{unix.SYS_RT_SIGPROCMASK, "rt_sigprocmask", "Go runtime: minit"},
	{unix.SYS_SIGALTSTACK, "sigaltstack", "Go runtime: minit"},
	{unix.SYS_GETPID, "getpid", "Go runtime: signalM"},
	{unix.SYS_GETTID, "gettid", "Go runtime: new Ms"},
	{unix.SYS_TGKILL, "tgkill", "Go runtime: async preemption"},
	{unix.SYS_EXIT, "exit", "Go runtime: thread exit"},
	{unix.SYS_EXIT_GROUP, "exit_group", "worker exit"},
	{unix.SYS_EPOLL_PWAIT, "epoll_pwait", "netpoller"},
	{unix.SYS_EPOLL_CTL, "epoll_ctl", "netpoller: deregistration on Close"},
	{unix.SYS_READ, "read", "worker pipe; netpoller eventfd"},
	{unix.SYS_WRITE, "write", "worker pipe; netpoller eventfd"},
	{unix.SYS_CLOSE, "close", "worker: closing its pipes"},
	{unix.SYS_FCNTL, "fcntl", "wazero: stdio O_NONBLOCK"},
	{unix.SYS_FSTAT, "fstat", "wazero: stdio file type"},
	{unix.SYS_GETRANDOM, "getrandom", "WASI random_get; Go random fallback"},
}
