package lockdown

import (
	"encoding/binary"
	"slices"
	"testing"

	"golang.org/x/sys/unix"
)

// runBPF is a minimal classic-BPF interpreter for the instructions the
// filter uses (LD|W|ABS, JMP JEQ/JGE/JSET with K, RET K), so that the
// filter's decisions can be checked for inputs a live process cannot
// safely try (a thread-creating clone with namespace flags, foreign
// architectures).
func runBPF(t *testing.T, prog []unix.SockFilter, data []byte) uint32 {
	t.Helper()
	var acc uint32
	for pc := 0; pc < len(prog); pc++ {
		ins := prog[pc]
		switch ins.Code {
		case unix.BPF_LD | unix.BPF_W | unix.BPF_ABS:
			acc = binary.LittleEndian.Uint32(data[ins.K:])
		case unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K:
			pc += jumpBy(acc == ins.K, ins)
		case unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K:
			pc += jumpBy(acc >= ins.K, ins)
		case unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K:
			pc += jumpBy(acc&ins.K != 0, ins)
		case unix.BPF_RET | unix.BPF_K:
			return ins.K
		default:
			t.Fatalf("unexpected BPF instruction %#x at %d", ins.Code, pc)
		}
	}
	t.Fatal("BPF program fell off its end")
	return 0
}

func jumpBy(cond bool, ins unix.SockFilter) int {
	if cond {
		return int(ins.Jt)
	}
	return int(ins.Jf)
}

// seccompData encodes struct seccomp_data.
func seccompData(arch uint32, nr int, args ...uint64) []byte {
	b := make([]byte, 64)
	binary.LittleEndian.PutUint32(b[0:], uint32(nr))
	binary.LittleEndian.PutUint32(b[4:], arch)
	for i, a := range args {
		binary.LittleEndian.PutUint64(b[16+8*i:], a)
	}
	return b
}

func TestFilterDecisions(t *testing.T) {
	if seccompArch == 0 {
		t.Skip(errNoPolicy)
	}
	prog, err := buildFilter()
	if err != nil {
		t.Fatal(err)
	}
	goThread := uint64(unix.CLONE_VM | unix.CLONE_FS | unix.CLONE_FILES | unix.CLONE_SIGHAND | unix.CLONE_SYSVSEM | unix.CLONE_THREAD)
	tests := []struct {
		name string
		data []byte
		want uint32
	}{
		{"go thread clone", seccompData(seccompArch, sysClone, goThread), retAllow},
		{"go thread clone with settls", seccompData(seccompArch, sysClone, goThread|unix.CLONE_SETTLS), retAllow},
		{"fork", seccompData(seccompArch, sysClone, uint64(unix.SIGCHLD)), retKill},
		{"vfork-style clone", seccompData(seccompArch, sysClone, unix.CLONE_VM|unix.CLONE_VFORK|uint64(unix.SIGCHLD)), retKill},
		{"thread with new netns", seccompData(seccompArch, sysClone, goThread|unix.CLONE_NEWNET), retKill},
		{"thread with new userns", seccompData(seccompArch, sysClone, goThread|unix.CLONE_NEWUSER), retKill},
		{"clone3", seccompData(seccompArch, sysClone3, 0), retENOSYS},
		{"mmap rw", seccompData(seccompArch, sysMmap, 0, 4096, unix.PROT_READ|unix.PROT_WRITE), retAllow},
		{"mmap rx", seccompData(seccompArch, sysMmap, 0, 4096, unix.PROT_READ|unix.PROT_EXEC), retEPERM},
		{"mmap exec high bits", seccompData(seccompArch, sysMmap, 0, 4096, 1<<32|unix.PROT_EXEC), retEPERM},
		{"mprotect rw", seccompData(seccompArch, sysMprotect, 0, 4096, unix.PROT_READ|unix.PROT_WRITE), retAllow},
		{"mprotect rx", seccompData(seccompArch, sysMprotect, 0, 4096, unix.PROT_READ|unix.PROT_EXEC), retEPERM},
		{"openat", seccompData(seccompArch, unix.SYS_OPENAT), retKill},
		{"execve", seccompData(seccompArch, unix.SYS_EXECVE), retKill},
		{"socket", seccompData(seccompArch, unix.SYS_SOCKET), retKill},
		{"ptrace", seccompData(seccompArch, unix.SYS_PTRACE), retKill},
		{"kill", seccompData(seccompArch, unix.SYS_KILL), retKill},
		{"pkey_mprotect", seccompData(seccompArch, unix.SYS_PKEY_MPROTECT), retKill},
		{"unshare", seccompData(seccompArch, unix.SYS_UNSHARE), retKill},
		{"seccomp", seccompData(seccompArch, unix.SYS_SECCOMP), retKill},
		{"foreign arch write", seccompData(0x40000003 /* AUDIT_ARCH_I386 */, unix.SYS_WRITE), retKill},
		{"number past the table", seccompData(seccompArch, 1000), retKill},
	}
	if seccompSyscallLimit != 0 {
		tests = append(tests, struct {
			name string
			data []byte
			want uint32
		}{"x32 write", seccompData(seccompArch, seccompSyscallLimit|unix.SYS_WRITE), retKill})
	}
	for _, s := range allowedSyscalls {
		tests = append(tests, struct {
			name string
			data []byte
			want uint32
		}{"allowed " + s.name, seccompData(seccompArch, s.nr), retAllow})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := runBPF(t, prog, tt.data); got != tt.want {
				t.Errorf("filter returned %#x, want %#x", got, tt.want)
			}
		})
	}
}

func TestAllowlistHasNoDuplicatesOrSpecials(t *testing.T) {
	seen := map[int]string{}
	for _, s := range allowedSyscalls {
		if prev, ok := seen[s.nr]; ok {
			t.Errorf("%s (%d) listed twice (also as %s)", s.name, s.nr, prev)
		}
		seen[s.nr] = s.name
		if slices.Contains([]int{sysClone, sysClone3, sysMmap, sysMprotect}, s.nr) {
			t.Errorf("%s must only be reached through its argument check", s.name)
		}
		if s.why == "" {
			t.Errorf("%s has no reason", s.name)
		}
	}
}

func TestLandlockRulesetPerABI(t *testing.T) {
	tests := []struct {
		abi                   int
		fs, net, scoped, size uint64
	}{
		{1, 0x1fff, 0, 0, 8},
		{2, 0x3fff, 0, 0, 8},
		{3, 0x7fff, 0, 0, 8},
		{4, 0x7fff, 3, 0, 16},
		{5, 0xffff, 3, 0, 16},
		{6, 0xffff, 3, 3, 24},
		{7, 0xffff, 3, 3, 24},
		{99, 0xffff, 3, 3, 24},
	}
	for _, tt := range tests {
		attr, size := landlockRuleset(tt.abi)
		if attr.handledAccessFS != tt.fs || attr.handledAccessNet != tt.net || attr.scoped != tt.scoped || uint64(size) != tt.size {
			t.Errorf("ABI %d: got fs=%#x net=%#x scoped=%#x size=%d, want fs=%#x net=%#x scoped=%#x size=%d",
				tt.abi, attr.handledAccessFS, attr.handledAccessNet, attr.scoped, size, tt.fs, tt.net, tt.scoped, tt.size)
		}
	}
}
