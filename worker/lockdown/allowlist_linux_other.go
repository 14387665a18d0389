//go:build linux && !amd64 && !arm64

package lockdown

// No seccomp policy exists for this architecture: syscall numbers differ
// per architecture and an unmeasured list would either kill the worker or
// allow too much. The seccomp layer is reported unavailable; the other
// layers still apply.

const (
	seccompArch         = 0
	seccompSyscallLimit = 0
	sysClone            = 0
	sysClone3           = 0
	sysMmap             = 0
	sysMprotect         = 0
)

var allowedSyscalls []allowedSyscall
