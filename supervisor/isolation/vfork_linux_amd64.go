package isolation

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

// The vfork spawner starts a process the way posix_spawn does: clone with
// CLONE_VM|CLONE_VFORK, so the child borrows the server's memory until its
// execve instead of copying the server's page tables, and the server takes
// no copy-on-write faults afterwards. Go's syscall package does this only
// without a new user namespace, because its child waits for the parent to
// write the uid/gid maps, which a suspended parent cannot do. Here the
// child writes its own maps, which the kernel allows when each map has one
// line naming the child's own effective id outside (see new_idmap_permitted
// in kernel/user_namespace.c).
//
// The child runs vforkExec's assembly only: it never touches the Go stack,
// the Go heap other than the program it is given, or any Go code. It runs
// with every signal blocked (blocked by the parent around the clone), so no
// Go signal handler can run in it on the parent's signal stack; it resets
// caught signals to SIG_DFL before it restores the mask, as
// runtime_AfterForkInChild does.

// Step operations interpreted by the child (vfork_linux_amd64.s).
const (
	opSyscall   = 1 // trap(args...); an error fails the spawn unless mayFail
	opWriteFile = 2 // open args[0] write-only, write args[2] bytes at args[1], close
	opSigReset  = 3 // every signal with a handler other than SIG_IGN gets SIG_DFL
	opWaitGo    = 4 // wait until the parent sets vforkProgram.goAhead, for at most the timespec at args[1]
)

// vforkStep is one action of the child. Pointers are stored as uintptr:
// the buffers they point to are kept alive by the vforkSpawn that owns the
// program.
type vforkStep struct {
	op      uintptr
	trap    uintptr
	args    [6]uintptr
	mayFail uintptr
}

// vforkProgram is everything the child reads and writes. It holds no Go
// pointers, so the child's writes need no write barrier. Field offsets are
// fixed by the assembly (checked by TestVforkLayout).
type vforkProgram struct {
	cloneFlags uintptr
	steps      uintptr // *vforkStep
	nsteps     uintptr
	blockAll   uintptr    // signal set with every signal
	oldMask    uintptr    // the thread's mask before the clone, set by the parent
	failedStep uintptr    // index of the step that failed, set by the child
	errno      uintptr    // its errno, or zero when the child reached execve
	sigScratch [4]uintptr // rt_sigaction's old action
	sigDefault [4]uintptr // SIG_DFL, no flags, empty mask
	// goAhead is set and woken by the parent once it has written the
	// maps, when the child does not write them itself (opWaitGo).
	goAhead uint32
	// execDone is the CLONE_CHILD_CLEARTID word: the kernel sets it to 0
	// and wakes it when the child execs or exits.
	execDone uint32
}

// vforkExec blocks every signal, clones with p.cloneFlags, restores the
// mask and returns the child's pid, or the clone's errno. The child runs
// p's steps and never returns. Implemented in vfork_linux_amd64.s.
//
//go:noescape
func vforkExec(p *vforkProgram) (pid uintptr, errno uintptr)

// vforkSpawn is one prepared spawn: the program, the buffers it points
// into, and what each step is called in an error.
type vforkSpawn struct {
	prog  vforkProgram
	steps []vforkStep
	names []string
	keep  [][]byte   // buffers the steps point to
	argv  []*byte    // execve's argv, NULL-terminated
	envv  []*byte    // execve's envp, NULL-terminated
	files []*os.File // sources of fds 0..n-1, nil means closed
	dups  []int      // the parent's CLOEXEC copies of files, all >= n
	open  []*os.File // files opened for the child (/dev/null), closed after
	path  string     // what is executed
	attr  *syscall.SysProcAttr
	// parentMaps is set when a map names a host id other than the
	// server's own: only the parent, with CAP_SETUID/CAP_SETGID where it
	// runs, may write that. The parent is then not suspended (no
	// CLONE_VFORK); the child waits for it to write the maps.
	parentMaps bool
}

// cString returns s as a NUL-terminated buffer kept alive by v.
func (v *vforkSpawn) cString(s string) (*byte, error) {
	b, err := syscall.BytePtrFromString(s)
	if err != nil {
		return nil, err
	}
	v.keep = append(v.keep, unsafe.Slice(b, len(s)+1))
	return b, nil
}

func (v *vforkSpawn) add(name string, s vforkStep) {
	v.steps = append(v.steps, s)
	v.names = append(v.names, name)
}

func (v *vforkSpawn) addSyscall(name string, mayFail bool, trap uintptr, args ...uintptr) {
	s := vforkStep{op: opSyscall, trap: trap}
	copy(s.args[:], args)
	if mayFail {
		s.mayFail = 1
	}
	v.add(name, s)
}

func (v *vforkSpawn) addWriteFile(path, content string) error {
	p, err := v.cString(path)
	if err != nil {
		return err
	}
	buf := []byte(content)
	v.keep = append(v.keep, buf)
	v.add("writing "+path, vforkStep{op: opWriteFile, args: [6]uintptr{
		uintptr(unsafe.Pointer(p)), uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)),
	}})
	return nil
}

// vforkSupported says whether the vfork spawner can give cmd everything
// os/exec would, and if not, why not. Anything it does not know about in
// cmd.SysProcAttr sends cmd to os/exec, so new attributes are never
// silently dropped.
func vforkSupported(cmd *exec.Cmd) error {
	switch {
	case cmd.Process != nil:
		return errors.New("already started")
	case cmd.Err != nil:
		return errors.New("command has an error")
	case cmd.Cancel != nil || cmd.WaitDelay != 0:
		return errors.New("bound to a context")
	case !filepath.IsAbs(cmd.Path):
		return errors.New("relative path")
	}
	for _, s := range []any{cmd.Stdin, cmd.Stdout, cmd.Stderr} {
		if _, ok := s.(*os.File); s != nil && !ok {
			return errors.New("standard stream that is not a file")
		}
	}
	attr := cmd.SysProcAttr
	if attr == nil {
		return nil
	}
	rest := *attr
	rest.Cloneflags &^= allNamespaceFlags()
	rest.Pdeathsig, rest.Setpgid = 0, false
	for _, ids := range [][]syscall.SysProcIDMap{attr.UidMappings, attr.GidMappings} {
		switch {
		case ids == nil:
		case attr.Cloneflags&syscall.CLONE_NEWUSER == 0:
			return errors.New("id maps without a user namespace")
		case len(ids) != 1 || ids[0].Size != 1:
			return errors.New("id map of more than one id")
		}
	}
	rest.UidMappings, rest.GidMappings = nil, nil
	if c := attr.Credential; c != nil {
		if !c.NoSetGroups || len(c.Groups) > 0 {
			return errors.New("credential with supplementary groups")
		}
		rest.Credential = nil
	}
	if !reflect.DeepEqual(rest, syscall.SysProcAttr{}) {
		return errors.New("attributes beyond namespaces, id maps, credential, Pdeathsig and Setpgid")
	}
	return nil
}

// allNamespaceFlags is every clone flag of namespaceFlags.
func allNamespaceFlags() uintptr {
	var all uintptr
	for _, f := range namespaceFlags {
		all |= f
	}
	return all
}

// prepareVfork builds the child's program for cmd, which vforkSupported
// accepted: id maps, process group, parent-death signal, working
// directory, fds 0..2 and cmd.ExtraFiles in place and every other fd
// closed, signals back to default, execve.
func prepareVfork(cmd *exec.Cmd) (v *vforkSpawn, err error) {
	v = &vforkSpawn{path: cmd.Path, attr: cmd.SysProcAttr}
	if v.attr == nil {
		v.attr = &syscall.SysProcAttr{}
	}
	defer func() {
		if err != nil {
			v.release()
		}
	}()
	v.prog.cloneFlags = syscall.CLONE_VM | syscall.CLONE_VFORK | uintptr(syscall.SIGCHLD) | v.attr.Cloneflags
	v.prog.blockAll = ^uintptr(0)

	v.parentMaps = !ownID(v.attr.UidMappings, os.Geteuid()) || !ownID(v.attr.GidMappings, os.Getegid())
	if v.parentMaps {
		v.prog.cloneFlags = v.prog.cloneFlags&^syscall.CLONE_VFORK | syscall.CLONE_CHILD_CLEARTID
		v.prog.execDone = 1
	} else {
		for _, f := range v.idMapFiles() {
			if err := v.addWriteFile("/proc/self/"+f.name, f.content); err != nil {
				return nil, err
			}
		}
	}
	if v.attr.Setpgid {
		v.addSyscall("setpgid", false, syscall.SYS_SETPGID, 0, 0)
	}
	if v.parentMaps {
		// The child runs beside the parent, with a copy of every one of
		// its descriptors until close_range. Should the server die before
		// it says go, the child must not wait forever holding them (a
		// test's stderr pipe stayed open for 20 minutes): it dies with
		// the parent, and gives up after waitGoTimeout regardless. The
		// change of ids below clears the death signal; it is set again
		// after them.
		v.addSyscall("prctl(PR_SET_PDEATHSIG) while waiting", false, syscall.SYS_PRCTL, syscall.PR_SET_PDEATHSIG, uintptr(syscall.SIGKILL))
		ts := syscall.NsecToTimespec(int64(waitGoTimeout))
		tsBuf := unsafe.Slice((*byte)(unsafe.Pointer(&ts)), unsafe.Sizeof(ts))
		buf := append([]byte(nil), tsBuf...)
		v.keep = append(v.keep, buf)
		v.add("waiting for the id maps", vforkStep{op: opWaitGo, args: [6]uintptr{
			uintptr(unsafe.Pointer(&v.prog.goAhead)), uintptr(unsafe.Pointer(&buf[0])),
		}})
	}
	if c := v.attr.Credential; c != nil {
		// As os/exec does (setgroups is denied in the namespace, hence
		// NoSetGroups): the ids inside, which the maps make the chosen
		// host ids. Before Pdeathsig, which a change of ids clears.
		v.addSyscall("setgid", false, syscall.SYS_SETGID, uintptr(c.Gid))
		v.addSyscall("setuid", false, syscall.SYS_SETUID, uintptr(c.Uid))
	}
	if v.attr.Pdeathsig != 0 {
		// The parent thread is suspended in clone until execve, so it can
		// only die with the whole server before this step; then the
		// worker's ipc pipes are closed and it exits on reading them.
		v.addSyscall("prctl(PR_SET_PDEATHSIG)", false, syscall.SYS_PRCTL, syscall.PR_SET_PDEATHSIG, uintptr(v.attr.Pdeathsig))
	}
	if cmd.Dir != "" {
		dir, err := v.cString(cmd.Dir)
		if err != nil {
			return nil, err
		}
		v.addSyscall("chdir "+cmd.Dir, false, syscall.SYS_CHDIR, uintptr(unsafe.Pointer(dir)))
	}

	if err := v.prepareFiles(cmd); err != nil {
		return nil, err
	}
	for i, fd := range v.dups {
		if fd < 0 {
			v.addSyscall("close", true, syscall.SYS_CLOSE, uintptr(i))
			continue
		}
		v.addSyscall(fmt.Sprintf("dup3 to fd %d", i), false, syscall.SYS_DUP3, uintptr(fd), uintptr(i), 0)
	}
	// Without close_range (Linux < 5.9) only close-on-exec applies, as
	// with os/exec.
	v.addSyscall("close_range", true, sysCloseRange, uintptr(len(v.dups)), ^uintptr(0)>>32, 0)

	v.add("resetting signal handlers", vforkStep{op: opSigReset})
	v.addSyscall("restoring the signal mask", false, syscall.SYS_RT_SIGPROCMASK,
		sigSetMask, uintptr(unsafe.Pointer(&v.prog.oldMask)), 0, 8)

	path, err := v.cString(cmd.Path)
	if err != nil {
		return nil, err
	}
	if v.argv, err = v.cStrings(cmd.Args, cmd.Path); err != nil {
		return nil, err
	}
	env, err := v.cStrings(cmd.Environ(), "")
	if err != nil {
		return nil, err
	}
	v.envv = env
	v.addSyscall("execve", false, syscall.SYS_EXECVE,
		uintptr(unsafe.Pointer(path)), uintptr(unsafe.Pointer(&v.argv[0])), uintptr(unsafe.Pointer(&v.envv[0])))

	v.prog.steps = uintptr(unsafe.Pointer(&v.steps[0]))
	v.prog.nsteps = uintptr(len(v.steps))
	return v, nil
}

// waitGoTimeout bounds how long a child waits for its parent to write its
// id maps: microseconds normally; seconds only on a host so loaded that
// the spawn had better fail.
const waitGoTimeout = 10 * time.Second

// ownID reports whether the map (of at most one id, see vforkSupported)
// is absent or maps to id, the server's own.
func ownID(m []syscall.SysProcIDMap, id int) bool {
	return len(m) == 0 || m[0].HostID == id
}

// idMapFile is one file of /proc/<pid>/ that sets up a user namespace.
type idMapFile struct{ name, content string }

// idMapFiles returns the files to write, in an order that works for an
// unprivileged writer: setgroups is denied before gid_map is written.
func (v *vforkSpawn) idMapFiles() []idMapFile {
	var files []idMapFile
	if m := v.attr.GidMappings; m != nil {
		files = append(files,
			idMapFile{"setgroups", "deny"},
			idMapFile{"gid_map", fmt.Sprintf("%d %d 1\n", m[0].ContainerID, m[0].HostID)})
	}
	if m := v.attr.UidMappings; m != nil {
		files = append(files, idMapFile{"uid_map", fmt.Sprintf("%d %d 1\n", m[0].ContainerID, m[0].HostID)})
	}
	return files
}

// sysCloseRange is close_range(2), which package syscall does not name.
const sysCloseRange = 436

// sigSetMask is rt_sigprocmask's SIG_SETMASK.
const sigSetMask = 2

// cStrings returns ss (or, when empty, just dflt if not "") as a
// NULL-terminated array of C strings kept alive by v.
func (v *vforkSpawn) cStrings(ss []string, dflt string) ([]*byte, error) {
	if len(ss) == 0 && dflt != "" {
		ss = []string{dflt}
	}
	out := make([]*byte, 0, len(ss)+1)
	for _, s := range ss {
		b, err := v.cString(s)
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return append(out, nil), nil
}

// prepareFiles duplicates the child's fds 0..n-1 into close-on-exec fds
// numbered n or above, so the child's dup3 calls can never overwrite a
// source they still need, whatever numbers the sources have.
func (v *vforkSpawn) prepareFiles(cmd *exec.Cmd) error {
	for _, s := range []any{cmd.Stdin, cmd.Stdout, cmd.Stderr} {
		f, _ := s.(*os.File)
		if f == nil {
			// As os/exec: a missing standard stream is /dev/null.
			var err error
			if f, err = os.OpenFile(os.DevNull, os.O_RDWR, 0); err != nil {
				return err
			}
			v.open = append(v.open, f)
		}
		v.files = append(v.files, f)
	}
	v.files = append(v.files, cmd.ExtraFiles...)
	n := len(v.files)
	for _, f := range v.files {
		if f == nil {
			v.dups = append(v.dups, -1)
			continue
		}
		fd, _, errno := syscall.Syscall(syscall.SYS_FCNTL, f.Fd(), syscall.F_DUPFD_CLOEXEC, uintptr(n))
		if errno != 0 {
			return fmt.Errorf("duplicating fd %d for the child: %w", f.Fd(), errno)
		}
		v.dups = append(v.dups, int(fd))
	}
	return nil
}

// release closes what prepareVfork opened and lets the buffers go.
func (v *vforkSpawn) release() {
	for _, fd := range v.dups {
		if fd >= 0 {
			syscall.Close(fd)
		}
	}
	v.dups = nil
	for _, f := range v.open {
		f.Close()
	}
	v.open = nil
	runtime.KeepAlive(v.files)
}

// run clones the child and returns its pid, or the error of the step that
// failed in it (the child has then been reaped).
func (v *vforkSpawn) run() (int, error) {
	// No fd may be created without close-on-exec while the child's fd
	// table is copied; this is what ForkLock is for.
	syscall.ForkLock.Lock()
	pid, errno := vforkExec(&v.prog)
	syscall.ForkLock.Unlock()
	if errno != 0 {
		return 0, os.NewSyscallError("clone", syscall.Errno(errno))
	}
	if v.parentMaps {
		// The child runs beside us, sharing our memory: it must be
		// released and then waited for until it stops reading v.
		mapErr := v.writeIDMaps(int(pid))
		if mapErr != nil {
			syscall.Kill(int(pid), syscall.SIGKILL)
		}
		atomic.StoreUint32(&v.prog.goAhead, 1)
		futex(&v.prog.goAhead, futexWake, 1)
		for atomic.LoadUint32(&v.prog.execDone) != 0 {
			futex(&v.prog.execDone, futexWait, 1)
		}
		if mapErr != nil {
			reap(int(pid))
			return 0, fmt.Errorf("starting %s: %w", v.path, mapErr)
		}
	}
	// Everything the child read is in v; it is done with it now.
	runtime.KeepAlive(v)
	if v.prog.errno == 0 {
		return int(pid), nil
	}
	reap(int(pid))
	step := int(v.prog.failedStep)
	err := syscall.Errno(v.prog.errno)
	if step >= len(v.names) {
		return 0, fmt.Errorf("starting %s: the child ran past its program: %w", v.path, err)
	}
	if v.names[step] == "execve" {
		// The same error os/exec returns, so callers test it alike.
		return 0, &os.PathError{Op: "fork/exec", Path: v.path, Err: err}
	}
	return 0, fmt.Errorf("starting %s: %s in the child: %w", v.path, v.names[step], err)
}

// writeIDMaps writes the child's id maps from the parent.
func (v *vforkSpawn) writeIDMaps(pid int) error {
	for _, f := range v.idMapFiles() {
		path := fmt.Sprintf("/proc/%d/%s", pid, f.name)
		if err := os.WriteFile(path, []byte(f.content), 0); err != nil {
			return fmt.Errorf("writing %s: %w", path, err)
		}
	}
	return nil
}

// reap waits for the child pid, which has exited or is about to.
func reap(pid int) {
	var ws syscall.WaitStatus
	for {
		if _, err := syscall.Wait4(pid, &ws, 0, nil); err != syscall.EINTR {
			return
		}
	}
}

// futex operations, shared (not FUTEX_PRIVATE_FLAG): the kernel's
// CLONE_CHILD_CLEARTID wake-up is a shared one.
const (
	futexWait = 0
	futexWake = 1
)

// futex waits on *addr while it holds val, or wakes val waiters.
func futex(addr *uint32, op, val uintptr) {
	syscall.Syscall6(syscall.SYS_FUTEX, uintptr(unsafe.Pointer(addr)), op, val, 0, 0, 0)
}

// startVfork starts cmd with the vfork spawner and sets cmd.Process, so
// that cmd.Wait, cmd.Process.Kill and the rest work as after cmd.Start.
func startVfork(cmd *exec.Cmd) error {
	v, err := prepareVfork(cmd)
	if err != nil {
		return fmt.Errorf("preparing to start %s: %w", cmd.Path, err)
	}
	defer v.release()
	pid, err := v.run()
	if err != nil {
		return err
	}
	// pidfd_open succeeds on a child that already exited: it stays a
	// zombie until cmd.Wait reaps it.
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	cmd.Process = p
	return nil
}

var (
	vforkProbeOnce sync.Once
	vforkProbeErr  error
	// vforkDisabled makes startCmd use os/exec always; tests and the
	// benchmark set it to compare the two ways.
	vforkDisabled bool
)

// vforkWorks finds out once whether this kernel lets the vfork spawner's
// child create the namespaces the probe granted and write its own id
// maps: it starts a child on probePath, which must fail in execve with
// ENOENT.
func vforkWorks() error {
	vforkProbeOnce.Do(func() {
		attr, _ := SysProcAttr(Options{})
		attr.UidMappings, attr.GidMappings = nil, nil
		if attr.Cloneflags&syscall.CLONE_NEWUSER != 0 {
			attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: DefaultID, HostID: os.Geteuid(), Size: 1}}
			attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: DefaultID, HostID: os.Getegid(), Size: 1}}
		}
		attr.Pdeathsig = 0 // the probe may run on any thread
		cmd := &exec.Cmd{Path: probePath, Args: []string{probePath}, Env: []string{}, SysProcAttr: attr}
		err := startVfork(cmd)
		switch {
		case errors.Is(err, syscall.ENOENT):
			vforkProbeErr = nil
		case err == nil:
			cmd.Wait()
			vforkProbeErr = nil
		default:
			vforkProbeErr = err
		}
	})
	return vforkProbeErr
}

// startCmd is the one place that decides how a worker is started: with the
// vfork spawner when it can honour everything cmd asks for and works on
// this kernel, else with cmd.Start.
func startCmd(cmd *exec.Cmd) error {
	if vforkDisabled || vforkSupported(cmd) != nil || vforkWorks() != nil {
		return cmd.Start()
	}
	return startVfork(cmd)
}
