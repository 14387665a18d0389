// Package isolation starts capsule workers in their own namespaces.
//
// SysProcAttr returns the attributes for exec.Cmd: new user, network, PID,
// IPC, UTS and mount namespaces, the worker's uid/gid mapped to an
// unprivileged id inside, a parent-death signal and its own process group.
// Where the kernel refuses namespaces, it falls back to the parent-death
// signal and process group alone and says so in its Report; the supervisor
// logs one warning naming what is missing and, with --require-hardening,
// refuses to start.
//
// Pdeathsig fires when the *thread* that started the child exits, not the
// process. Go threads come and go, so a worker started from an ordinary
// goroutine can be killed at a random moment when the runtime retires the
// thread it happened to run on. Start workers through a Spawner, which
// runs cmd.Start on one OS thread that lives as long as the server.
//
// The supervisor ends a worker with kill(-pgid, SIGKILL) (the process
// group from Setpgid). With the PID namespace the worker is its
// namespace's init, so when it dies the kernel kills everything below it.
package isolation

import (
	"os"

	"capsule/worker/lockdown"
)

// Layer names, as used in Layer.Name.
const (
	LayerUserNS    = "user_ns"
	LayerNetNS     = "net_ns"
	LayerPIDNS     = "pid_ns"
	LayerIPCNS     = "ipc_ns"
	LayerUTSNS     = "uts_ns"
	LayerMountNS   = "mount_ns"
	LayerPdeathsig = "pdeathsig"
	LayerSetpgid   = "setpgid"
)

// DefaultID is the uid and gid a worker has inside its user namespace when
// Options leaves them zero: nobody/nogroup.
const DefaultID = 65534

// Options configures SysProcAttr.
type Options struct {
	// UID and GID are the worker's ids inside its user namespace; both map
	// to the supervisor's own uid/gid outside (a mapping of size 1, so no
	// other id exists in the namespace). Zero means DefaultID: root inside
	// would keep every capability in the namespace across execve, which a
	// worker never needs. Ignored when user namespaces are unavailable.
	UID, GID int
	// HostUID and HostGID are the host ids the worker's ids map to. Zero
	// means the supervisor's own, the only ids an unprivileged supervisor
	// can map; a root supervisor should name an unprivileged pair, or its
	// workers are host root outside their namespace.
	HostUID, HostGID int
}

// HostIDs returns the host uid and gid a worker runs as: the mapped ids
// with a user namespace, the supervisor's own without one.
func (o Options) HostIDs(userNS bool) (uid, gid int) {
	uid, gid = os.Getuid(), os.Getgid()
	if !userNS {
		return uid, gid
	}
	if o.HostUID != 0 {
		uid = o.HostUID
	}
	if o.HostGID != 0 {
		gid = o.HostGID
	}
	return uid, gid
}

// Report says which isolation features the returned attributes carry: the
// namespaces (user, net, pid, ipc, uts, mount), then pdeathsig and setpgid.
// It is the same type as the worker's lockdown report, so the supervisor
// and `capsule doctor` treat every hardening layer alike.
type Report = lockdown.Report

// Layer is one isolation feature.
type Layer = lockdown.Layer

// namespaceLayers is the order namespaces appear in a Report.
var namespaceLayers = []string{LayerUserNS, LayerNetNS, LayerPIDNS, LayerIPCNS, LayerUTSNS, LayerMountNS}

// ids returns the in-namespace ids, with zero meaning DefaultID.
func (o Options) ids() (uid, gid int) {
	uid, gid = o.UID, o.GID
	if uid == 0 {
		uid = DefaultID
	}
	if gid == 0 {
		gid = DefaultID
	}
	return uid, gid
}
