package lockdown

import "golang.org/x/sys/unix"

// The arm64 policy is allowlist_linux.go; it has been built and unit-tested
// but not measured under load on arm64 hardware.

// seccompArch is the AUDIT_ARCH value every syscall must carry; AArch32
// compat syscalls carry AUDIT_ARCH_ARM and are killed.
const seccompArch = unix.AUDIT_ARCH_AARCH64

// seccompSyscallLimit disables the number limit: arm64 has no x32-like ABI
// sharing its AUDIT_ARCH.
const seccompSyscallLimit = 0
