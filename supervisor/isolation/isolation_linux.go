package isolation

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
)

// namespaceFlags maps each namespace layer to its clone flag.
var namespaceFlags = map[string]uintptr{
	LayerUserNS:  syscall.CLONE_NEWUSER,
	LayerNetNS:   syscall.CLONE_NEWNET,
	LayerPIDNS:   syscall.CLONE_NEWPID,
	LayerIPCNS:   syscall.CLONE_NEWIPC,
	LayerUTSNS:   syscall.CLONE_NEWUTS,
	LayerMountNS: syscall.CLONE_NEWNS,
}

// probePath is what the probe child tries to execute. It does not exist:
// execve failing with ENOENT proves the child got through clone with the
// namespace flags and through the uid/gid mapping, which is all the probe
// needs to know, without depending on any binary being installed (the
// supervisor may be a test binary, so /proc/self/exe cannot serve).
const probePath = "/nonexistent/capsule-namespace-probe"

// probeResult is the cached outcome of the namespace probe.
type probeResult struct {
	flags   uintptr           // namespaces that work together
	reasons map[string]string // why each missing namespace is missing
}

var (
	probeOnce   sync.Once
	probeCached probeResult
	// probeFunc runs one probe child; tests replace it to simulate a
	// kernel that refuses namespaces.
	probeFunc = probeChild
)

// probeChild forks a child with the given clone flags, the mapping, and
// nothing else, and reports whether it reached execve. unshare cannot serve
// as a probe: CLONE_NEWUSER requires a single-threaded caller, which a Go
// process never is. The fork costs about a millisecond and happens once.
func probeChild(flags uintptr) error {
	attr := &syscall.ProcAttr{Sys: &syscall.SysProcAttr{Cloneflags: flags}}
	if flags&syscall.CLONE_NEWUSER != 0 {
		attr.Sys.UidMappings = []syscall.SysProcIDMap{{ContainerID: DefaultID, HostID: os.Getuid(), Size: 1}}
		attr.Sys.GidMappings = []syscall.SysProcIDMap{{ContainerID: DefaultID, HostID: os.Getgid(), Size: 1}}
		attr.Sys.GidMappingsEnableSetgroups = false
	}
	pid, err := syscall.ForkExec(probePath, []string{probePath}, attr)
	if err == nil {
		// Someone created the path; the child did start, so namespaces work.
		var ws syscall.WaitStatus
		syscall.Wait4(pid, &ws, 0, nil)
		return nil
	}
	if errors.Is(err, syscall.ENOENT) {
		return nil
	}
	return err
}

// probe finds out once which namespaces this kernel grants the supervisor.
// The common case (everything works) costs one probe child; otherwise the
// user namespace is probed alone and then with each other namespace, so
// the report can name exactly what is missing.
func probe() probeResult {
	probeOnce.Do(func() {
		all := uintptr(0)
		for _, f := range namespaceFlags {
			all |= f
		}
		if probeFunc(all) == nil {
			probeCached = probeResult{flags: all}
			return
		}
		res := probeResult{reasons: map[string]string{}}
		if err := probeFunc(syscall.CLONE_NEWUSER); err != nil {
			reason := "user namespaces refused: " + err.Error() + userNSHints()
			for _, name := range namespaceLayers {
				res.reasons[name] = reason
			}
			if os.Geteuid() == 0 {
				// Root could create the others without a user namespace,
				// but the worker would then run as real root.
				for _, name := range namespaceLayers[1:] {
					res.reasons[name] += " (not used without a user namespace: the worker would be real root)"
				}
			}
			probeCached = res
			return
		}
		res.flags = syscall.CLONE_NEWUSER
		for _, name := range namespaceLayers[1:] {
			f := namespaceFlags[name]
			if err := probeFunc(syscall.CLONE_NEWUSER | f); err != nil {
				res.reasons[name] = fmt.Sprintf("refused inside a user namespace: %v", err)
				continue
			}
			res.flags |= f
		}
		// The namespaces that worked one by one must also work together.
		if err := probeFunc(res.flags); err != nil {
			for _, name := range namespaceLayers[1:] {
				if res.flags&namespaceFlags[name] != 0 {
					res.reasons[name] = fmt.Sprintf("refused together with the others: %v", err)
				}
			}
			res.flags = syscall.CLONE_NEWUSER
		}
		probeCached = res
	})
	return probeCached
}

// userNSHints adds the sysctls that commonly disable user namespaces, when
// they are set to the disabling value.
func userNSHints() string {
	var hints []string
	for _, h := range []struct{ path, bad string }{
		{"/proc/sys/user/max_user_namespaces", "0"},
		{"/proc/sys/kernel/unprivileged_userns_clone", "0"},
		{"/proc/sys/kernel/apparmor_restrict_unprivileged_userns", "1"},
	} {
		if b, err := os.ReadFile(h.path); err == nil && strings.TrimSpace(string(b)) == h.bad {
			hints = append(hints, h.path+"="+h.bad)
		}
	}
	if len(hints) == 0 {
		return ""
	}
	return " (" + strings.Join(hints, ", ") + ")"
}

// SysProcAttr returns the attributes to start a worker with, and what they
// achieve. The namespace probe runs on the first call only (a fork of about
// a millisecond); later calls are cheap, and each returns a fresh value
// that the caller may modify.
//
// With every namespace available the worker gets new user, network, PID,
// IPC, UTS and mount namespaces; it is opts.UID/GID inside, mapped to the
// supervisor's uid/gid outside, so it accesses files as the supervisor's
// user but without any capability, and setgroups is denied. Namespaces the
// kernel refuses are left out and reported. Pdeathsig SIGKILL and Setpgid
// are always set; start the command through a Spawner (see the package
// documentation).
func SysProcAttr(opts Options) (*syscall.SysProcAttr, Report) {
	res := probe()
	uid, gid := opts.ids()
	attr := &syscall.SysProcAttr{
		Pdeathsig: syscall.SIGKILL,
		Setpgid:   true,
	}
	var r Report
	for _, name := range namespaceLayers {
		f := namespaceFlags[name]
		if res.flags&f == 0 {
			r.Layers = append(r.Layers, Layer{Name: name, Reason: res.reasons[name]})
			continue
		}
		attr.Cloneflags |= f
		reason := "new namespace"
		switch name {
		case LayerUserNS:
			hostUID, hostGID := opts.HostIDs(true)
			reason = fmt.Sprintf("uid %d gid %d inside, mapped to %d/%d outside, setgroups denied", uid, gid, hostUID, hostGID)
		case LayerNetNS:
			reason = "only a loopback interface, down"
		case LayerPIDNS:
			reason = "worker is pid 1; its death kills everything below it"
		}
		r.Layers = append(r.Layers, Layer{Name: name, Active: true, Reason: reason})
	}
	if attr.Cloneflags&syscall.CLONE_NEWUSER != 0 {
		hostUID, hostGID := opts.HostIDs(true)
		attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: hostUID, Size: 1}}
		attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: hostGID, Size: 1}}
		attr.GidMappingsEnableSetgroups = false
		// A new user namespace changes no credential: the child is still
		// the supervisor's host uid until it takes the mapped ids, which
		// is what makes it the chosen host uid (and drops every
		// capability it holds in the namespace).
		attr.Credential = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), NoSetGroups: true}
	}
	r.Layers = append(r.Layers,
		Layer{Name: LayerPdeathsig, Active: true, Reason: "SIGKILL when the starting thread exits"},
		Layer{Name: LayerSetpgid, Active: true, Reason: "own process group, for kill(-pgid)"},
	)
	return attr, r
}
