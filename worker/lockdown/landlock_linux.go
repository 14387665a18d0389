package lockdown

import (
	"errors"
	"fmt"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// landlockMaxABI is the newest Landlock ABI whose rights this package
// knows. A newer kernel is asked for this ABI's rights only: handling a
// right the kernel does not know is EINVAL, and handling fewer is safe
// (the unknown rights simply stay unrestricted, as on an older kernel).
const landlockMaxABI = 7

// rulesetAttr is struct landlock_ruleset_attr up to ABI 6. x/sys's
// LandlockRulesetAttr also carries fields of later ABIs; this one is sized
// per ABI so an older kernel gets exactly the struct it knows.
type rulesetAttr struct {
	handledAccessFS  uint64
	handledAccessNet uint64
	scoped           uint64
}

// landlockFSRights returns every filesystem right of the given ABI.
func landlockFSRights(abi int) uint64 {
	// ABI 1: execute through make_sym (bits 0-12).
	rights := uint64(unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_WRITE_FILE |
		unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_READ_DIR |
		unix.LANDLOCK_ACCESS_FS_REMOVE_DIR | unix.LANDLOCK_ACCESS_FS_REMOVE_FILE |
		unix.LANDLOCK_ACCESS_FS_MAKE_CHAR | unix.LANDLOCK_ACCESS_FS_MAKE_DIR |
		unix.LANDLOCK_ACCESS_FS_MAKE_REG | unix.LANDLOCK_ACCESS_FS_MAKE_SOCK |
		unix.LANDLOCK_ACCESS_FS_MAKE_FIFO | unix.LANDLOCK_ACCESS_FS_MAKE_BLOCK |
		unix.LANDLOCK_ACCESS_FS_MAKE_SYM)
	if abi >= 2 {
		rights |= unix.LANDLOCK_ACCESS_FS_REFER
	}
	if abi >= 3 {
		rights |= unix.LANDLOCK_ACCESS_FS_TRUNCATE
	}
	if abi >= 5 {
		rights |= unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
	}
	return rights
}

// landlockABI returns the kernel's Landlock ABI version, or an error
// wrapping errLandlockUnavailable when the kernel lacks or disabled it.
func landlockABI() (int, error) {
	r, _, e := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	switch e {
	case 0:
		return int(r), nil
	case unix.ENOSYS:
		return 0, fmt.Errorf("%w: kernel without Landlock (ENOSYS)", errLandlockUnavailable)
	case unix.EOPNOTSUPP:
		return 0, fmt.Errorf("%w: Landlock disabled at boot (EOPNOTSUPP; add landlock to lsm=)", errLandlockUnavailable)
	case unix.EPERM:
		// The kernel never refuses the version query; a container
		// runtime's seccomp profile that does not know Landlock does.
		return 0, fmt.Errorf("%w: landlock_create_ruleset blocked (EPERM), probably by a container's seccomp profile", errLandlockUnavailable)
	default:
		return 0, fmt.Errorf("landlock_create_ruleset(VERSION): %w", e)
	}
}

// errLandlockUnavailable marks a kernel refusal, which Apply reports rather
// than fails on.
var errLandlockUnavailable = errors.New("unavailable")

// landlockRuleset describes the ruleset used for an ABI: every known right
// handled and no rule, so nothing handled is allowed.
func landlockRuleset(abi int) (attr rulesetAttr, size uintptr) {
	if abi > landlockMaxABI {
		abi = landlockMaxABI
	}
	attr.handledAccessFS = landlockFSRights(abi)
	size = 8
	if abi >= 4 {
		attr.handledAccessNet = unix.LANDLOCK_ACCESS_NET_BIND_TCP | unix.LANDLOCK_ACCESS_NET_CONNECT_TCP
		size = 16
	}
	if abi >= 6 {
		attr.scoped = unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | unix.LANDLOCK_SCOPE_SIGNAL
		size = 24
	}
	return attr, size
}

// applyLandlock restricts every thread with a ruleset that allows nothing.
// no_new_privs must already be set on every thread.
func applyLandlock() (string, error) {
	abi, err := landlockABI()
	if err != nil {
		return "", err
	}
	attr, size := landlockRuleset(abi)
	fd, _, e := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), size, 0)
	if e != 0 {
		return "", fmt.Errorf("landlock_create_ruleset(ABI %d): %w", abi, e)
	}
	defer unix.Close(int(fd))
	// Landlock domains are per thread, and Go runs goroutines on any of
	// its threads: restrict all of them at once. Threads created later
	// inherit the domain from their creator.
	if _, _, e := syscall.AllThreadsSyscall(unix.SYS_LANDLOCK_RESTRICT_SELF, fd, 0, 0); e != 0 {
		return "", fmt.Errorf("landlock_restrict_self on all threads: %w", allThreadsError(e))
	}
	reason := fmt.Sprintf("ABI %d: all filesystem access denied", abi)
	if abi >= 4 {
		reason += ", TCP bind/connect denied"
	} else {
		reason += ", TCP not covered (ABI < 4)"
	}
	if abi >= 6 {
		reason += ", abstract unix sockets and signals scoped"
	} else {
		reason += ", no scopes (ABI < 6)"
	}
	return reason, nil
}

// allThreadsError explains ENOTSUP from AllThreadsSyscall, which is what Go
// returns in a cgo binary.
func allThreadsError(e syscall.Errno) error {
	if e == syscall.ENOTSUP {
		return fmt.Errorf("%w (Go refuses AllThreadsSyscall with cgo: build with CGO_ENABLED=0)", e)
	}
	return e
}
