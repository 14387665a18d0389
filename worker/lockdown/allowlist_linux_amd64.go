package lockdown

import "golang.org/x/sys/unix"

// seccompArch is the AUDIT_ARCH value every syscall must carry: i386
// syscalls made with `int 0x80` carry AUDIT_ARCH_I386 and use different
// numbers (i386 execve is x86_64 munmap), so they are killed.
const seccompArch = unix.AUDIT_ARCH_X86_64

// seccompSyscallLimit kills every syscall number at or above it: the x32
// ABI shares AUDIT_ARCH_X86_64 and sets bit 30 (__X32_SYSCALL_BIT).
const seccompSyscallLimit = 0x40000000
