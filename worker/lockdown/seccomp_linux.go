package lockdown

import (
	"errors"
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// allowedSyscall is one entry of the seccomp allowlist.
type allowedSyscall struct {
	nr   int
	name string
	// why names who needs the syscall; it documents the list and shows up
	// in nothing at run time.
	why string
}

// Offsets into struct seccomp_data, which is what a seccomp filter reads:
// int nr; __u32 arch; __u64 instruction_pointer; __u64 args[6].
// Arguments are read as their low 32 bits (little-endian), which hold every
// flag the filter checks.
const (
	offNr   = 0
	offArch = 4
)

// offArgLo is the offset of the low 32 bits of argument i.
func offArgLo(i int) uint32 { return 16 + 8*uint32(i) }

// Flags the filter inspects.
const (
	cloneThread = unix.CLONE_THREAD
	// cloneNamespaces must all be clear in a thread-creating clone: the
	// worker is root in its user namespace, so a thread could otherwise
	// get fresh namespaces.
	cloneNamespaces = unix.CLONE_NEWNS | unix.CLONE_NEWCGROUP | unix.CLONE_NEWUTS |
		unix.CLONE_NEWIPC | unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNET
	protExec = unix.PROT_EXEC
)

// Filter return values.
const (
	retKill   = unix.SECCOMP_RET_KILL_PROCESS
	retAllow  = unix.SECCOMP_RET_ALLOW
	retEPERM  = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
	retENOSYS = unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)
)

// bpfProgram assembles classic BPF with forward jumps to named labels, so
// the filter reads top to bottom instead of as hand-counted offsets.
type bpfProgram struct {
	ins    []unix.SockFilter
	labels map[string]int
	jumps  []bpfJump
}

// bpfJump is a conditional jump whose targets are resolved at the end.
type bpfJump struct {
	at     int
	jt, jf string // "" means the next instruction
}

func (p *bpfProgram) load(off uint32) {
	p.ins = append(p.ins, unix.SockFilter{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: off})
}

func (p *bpfProgram) jump(op uint16, k uint32, jt, jf string) {
	p.jumps = append(p.jumps, bpfJump{at: len(p.ins), jt: jt, jf: jf})
	p.ins = append(p.ins, unix.SockFilter{Code: unix.BPF_JMP | op | unix.BPF_K, K: k})
}

func (p *bpfProgram) ret(k uint32) {
	p.ins = append(p.ins, unix.SockFilter{Code: unix.BPF_RET | unix.BPF_K, K: k})
}

func (p *bpfProgram) label(name string) {
	if p.labels == nil {
		p.labels = map[string]int{}
	}
	p.labels[name] = len(p.ins)
}

// assemble resolves the labels. cBPF jumps are forward only and at most
// 255 instructions long; the filter is far shorter, so overflow is a bug.
func (p *bpfProgram) assemble() ([]unix.SockFilter, error) {
	offset := func(at int, name string) (uint8, error) {
		if name == "" {
			return 0, nil
		}
		to, ok := p.labels[name]
		if !ok {
			return 0, fmt.Errorf("bpf: undefined label %q", name)
		}
		d := to - at - 1
		if d < 0 || d > 255 {
			return 0, fmt.Errorf("bpf: jump from %d to %q out of range", at, name)
		}
		return uint8(d), nil
	}
	for _, j := range p.jumps {
		jt, err := offset(j.at, j.jt)
		if err != nil {
			return nil, err
		}
		jf, err := offset(j.at, j.jf)
		if err != nil {
			return nil, err
		}
		p.ins[j.at].Jt, p.ins[j.at].Jf = jt, jf
	}
	if len(p.ins) > unix.BPF_MAXINSNS {
		return nil, fmt.Errorf("bpf: %d instructions", len(p.ins))
	}
	return p.ins, nil
}

// buildFilter returns the worker's seccomp program for this architecture.
func buildFilter() ([]unix.SockFilter, error) {
	if seccompArch == 0 {
		return nil, errNoPolicy
	}
	var p bpfProgram
	// Wrong architecture (i386 via int 0x80, AArch32): kill.
	p.load(offArch)
	p.jump(unix.BPF_JEQ, uint32(seccompArch), "", "kill")
	p.load(offNr)
	if seccompSyscallLimit != 0 {
		// x32 syscalls: kill.
		p.jump(unix.BPF_JGE, seccompSyscallLimit, "kill", "")
	}
	p.jump(unix.BPF_JEQ, uint32(sysClone), "clone", "")
	p.jump(unix.BPF_JEQ, uint32(sysClone3), "enosys", "")
	p.jump(unix.BPF_JEQ, uint32(sysMmap), "prot", "")
	p.jump(unix.BPF_JEQ, uint32(sysMprotect), "prot", "")
	for _, s := range allowedSyscalls {
		p.jump(unix.BPF_JEQ, uint32(s.nr), "allow", "")
	}
	// Anything else: kill.
	p.ret(retKill)

	// clone: threads only. The flags are argument 0 on amd64 and arm64.
	p.label("clone")
	p.load(offArgLo(0))
	p.jump(unix.BPF_JSET, cloneThread, "", "kill")
	p.jump(unix.BPF_JSET, cloneNamespaces, "kill", "allow")

	// mmap and mprotect: prot is argument 2 of both.
	p.label("prot")
	p.load(offArgLo(2))
	p.jump(unix.BPF_JSET, protExec, "eperm", "allow")

	p.label("allow")
	p.ret(retAllow)
	// cBPF only jumps forward, so the checks above share a kill at the end.
	p.label("kill")
	p.ret(retKill)
	p.label("eperm")
	p.ret(retEPERM)
	p.label("enosys")
	p.ret(retENOSYS)
	return p.assemble()
}

// errNoPolicy means there is no allowlist for this architecture.
var errNoPolicy = errors.New("no syscall allowlist for GOARCH=" + runtime.GOARCH)

// seccompAvailable reports whether the kernel can take the filter: seccomp
// filters at all (PR_GET_SECCOMP fails with EINVAL without
// CONFIG_SECCOMP), and SECCOMP_RET_KILL_PROCESS (Linux 4.14).
func seccompAvailable() error {
	if seccompArch == 0 {
		return errNoPolicy
	}
	if _, err := unix.PrctlRetInt(unix.PR_GET_SECCOMP, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("kernel without seccomp: prctl(PR_GET_SECCOMP): %w", err)
	}
	action := uint32(retKill)
	_, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_GET_ACTION_AVAIL, 0, uintptr(unsafe.Pointer(&action)))
	if e != 0 {
		return fmt.Errorf("kernel without SECCOMP_RET_KILL_PROCESS: %w", e)
	}
	return nil
}

// installSeccomp installs the filter on every thread of the process
// (SECCOMP_FILTER_FLAG_TSYNC; without it only the calling thread would be
// filtered). The caller must hold no_new_privs.
func installSeccomp() (string, error) {
	filter, err := buildFilter()
	if err != nil {
		return "", err
	}
	prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	r, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&prog)))
	runtime.KeepAlive(filter)
	if e != 0 {
		return "", fmt.Errorf("seccomp(SET_MODE_FILTER, TSYNC): %w", e)
	}
	if r != 0 {
		// TSYNC returns the id of a thread it could not synchronise.
		return "", fmt.Errorf("seccomp TSYNC failed on thread %d", r)
	}
	return fmt.Sprintf("%d syscalls allowed, clone threads only, no PROT_EXEC, %d BPF instructions, TSYNC, default kill process",
		len(allowedSyscalls), len(filter)), nil
}
