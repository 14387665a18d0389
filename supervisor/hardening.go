package supervisor

import (
	"fmt"
	"strings"

	"capsule/runtimes"
	"capsule/supervisor/isolation"
	"capsule/worker/lockdown"
)

// LayerNamespaces is the hardening layer of a worker's namespaces, its own
// process group and its death with the server (isolation's layers).
const LayerNamespaces = "namespaces"

// HardeningLayer is one OS hardening layer of the workers on this machine:
// a line of `capsule doctor`, and one of the layers --require-hardening
// requires.
type HardeningLayer struct {
	// Name is the layer's name in capsule doctor, its JSON and the logs.
	Name string
	// Needs says what the host must allow for the layer to hold.
	Needs string
	// Active is true when the layer holds for workers started here.
	Active bool
	// Reason says what the layer applies, or why it is unavailable.
	Reason string
	// Missing names the probes of the layer that failed (such as user_ns
	// for namespaces); empty when Active.
	Missing []string
}

// hardeningLayers is the one table of the OS hardening layers: their
// names, in the order capsule doctor prints them, what each needs of the
// host, and which probes make it up (worker/lockdown's for what a worker
// applies to itself, supervisor/isolation's for how it is started, and
// WorkerHostIDs). Hardening reads it; capsule doctor prints what Hardening
// returns, and --require-hardening (checkHardening) refuses to start
// unless every layer is active. A probe that belongs to no layer here is a
// test failure (TestHardeningOwnsEveryProbe).
var hardeningLayers = []struct {
	name, needs string
	probes      []string
}{
	{lockdown.LayerSeccomp,
		"seccomp-bpf in the kernel, not refused by a container's seccomp profile",
		[]string{lockdown.LayerSeccomp}},
	{lockdown.LayerLandlock,
		"Linux 5.13 or later with Landlock enabled (lsm=landlock), landlock_create_ruleset allowed by a container's seccomp profile, and a binary built with CGO_ENABLED=0",
		[]string{lockdown.LayerLandlock}},
	{lockdown.LayerNoNewPrivs,
		"a binary built with CGO_ENABLED=0 (Go refuses AllThreadsSyscall with cgo)",
		[]string{lockdown.LayerNoNewPrivs}},
	{LayerNamespaces,
		"new user, network, PID, IPC, UTS and mount namespaces: unprivileged user namespaces (or root), not taken away by a container's seccomp profile (docker's default: run with --security-opt seccomp=unconfined)",
		[]string{isolation.LayerUserNS, isolation.LayerNetNS, isolation.LayerPIDNS, isolation.LayerIPCNS,
			isolation.LayerUTSNS, isolation.LayerMountNS, isolation.LayerPdeathsig, isolation.LayerSetpgid}},
	{LayerHostIDs,
		"workers that are not host root: a server run as root keeps --worker-host-uid and --worker-host-gid away from 0",
		[]string{LayerHostIDs}},
	{lockdown.LayerRlimits,
		"nothing: setrlimit and PR_SET_DUMPABLE need no privilege",
		[]string{lockdown.LayerRlimits}},
}

// Hardening probes this machine and returns each OS hardening layer a
// worker started with opts gets, in the order capsule doctor prints them.
func Hardening(opts isolation.Options) []HardeningLayer {
	probes := hardeningProbes(opts)
	out := make([]HardeningLayer, 0, len(hardeningLayers))
	for _, def := range hardeningLayers {
		h := HardeningLayer{Name: def.name, Needs: def.needs, Active: true}
		var reasons []string
		for _, name := range def.probes {
			p, ok := probes[name]
			if !ok {
				p = lockdown.Layer{Name: name, Reason: "not probed"}
			}
			if !p.Active {
				h.Active = false
				h.Missing = append(h.Missing, name)
			}
			if r := probeReason(def.name, p); r != "" {
				reasons = append(reasons, r)
			}
		}
		h.Reason = strings.Join(reasons, ", ")
		if def.name == lockdown.LayerRlimits {
			h.Reason += fmt.Sprintf("; memory backstops: DATA at the memory limit + scratch (Python) + %s, worker RSS watchdog at the limit + scratch (Python) + %s",
				Size(runtimes.WorkerDataOverhead), Size(runtimes.WorkerRSSOverhead))
		}
		out = append(out, h)
	}
	return out
}

// hardeningProbes runs every probe the layers are made of, by name.
func hardeningProbes(opts isolation.Options) map[string]lockdown.Layer {
	probes := map[string]lockdown.Layer{}
	_, iso := isolation.SysProcAttr(opts)
	for _, l := range append(iso.Layers, lockdown.Probe().Layers...) {
		probes[l.Name] = l
	}
	probes[LayerHostIDs] = WorkerHostIDs(opts)
	return probes
}

// probeReason is how one probe reads in its layer's line: alone, its
// reason; among the namespaces, each namespace's short name and state,
// and the process-group and parent-death probes only when they failed.
func probeReason(layer string, p lockdown.Layer) string {
	switch {
	case layer != LayerNamespaces:
		return p.Reason
	case !p.Active:
		return strings.TrimSuffix(p.Name, "_ns") + " unavailable: " + p.Reason
	case strings.HasSuffix(p.Name, "_ns"):
		return strings.TrimSuffix(p.Name, "_ns") + " active"
	}
	return ""
}

// missingHardening returns the names of the layers that are not active,
// each with the probes that failed, and every layer's reason, for the
// start-up warning and --require-hardening's refusal.
func missingHardening(layers []HardeningLayer) (missing []string, reasons string) {
	var all []string
	for _, l := range layers {
		if !l.Active {
			name := l.Name
			if len(l.Missing) != 1 || l.Missing[0] != l.Name {
				name += " (" + strings.Join(l.Missing, ", ") + ")"
			}
			missing = append(missing, name)
			all = append(all, fmt.Sprintf("%s: %s; needs %s", l.Name, l.Reason, l.Needs))
		}
	}
	return missing, strings.Join(all, "; ")
}
