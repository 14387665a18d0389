package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"capsule/runtimes"
	"capsule/runtimes/compiled"
	"capsule/supervisor"
	"capsule/supervisor/isolation"
	"capsule/supervisor/snapcache"
)

// doctorLayer is one line of `capsule doctor`.
type doctorLayer struct {
	Name   string `json:"-"`
	Active bool   `json:"active"`
	Reason string `json:"reason"`
	// Needs says what the host must allow, for a hardening layer.
	Needs string `json:"needs,omitempty"`
	// Hardening layers make --require-hardening fail; runtimes always do;
	// informational lines never do.
	hardening bool
	info      bool
}

func doctor(args []string) int {
	fs := newFlagSet("doctor", "capsule doctor [--json] [flags]\n\n"+
		"Checks each hardening layer, the embedded runtime files against the SHA-256 their build\n"+
		"recorded (assets), and each runtime (loading, then one trivial execution).\n"+
		"Exit status 1 when the assets or a runtime fail, or when a layer is unavailable and\n"+
		"--require-hardening is set.")
	e := NewEnvFlags(fs)
	var c commonFlags
	c.register(e, fs)
	asJSON := fs.Bool("json", false, "print a JSON object keyed by layer name")
	c.logLevel = "error"
	if status, ok := parse(e, args); !ok {
		return status
	}
	if status, ok := c.validate("doctor"); !ok {
		return status
	}
	layers := hardeningLayers(c.cfg.Isolation)
	// The runtimes are checked through the real path, hardening included,
	// but a missing layer must not stop the doctor from reporting.
	requireHardening := c.cfg.RequireHardening
	c.cfg.RequireHardening = false
	sup, err := c.newSupervisor(c.logger("capsule"))
	if err != nil {
		return startFailed("doctor", err)
	}
	defer sup.Close()
	cg := sup.Cgroup()
	layers = append(layers, doctorLayer{Name: "memory_cgroup", Active: cg.Active, Reason: cg.Reason, info: true})
	layers = append(layers, checkAssets())
	for _, lang := range languages().Names() {
		layers = append(layers, checkRuntime(sup, lang))
	}
	layers = append(layers, cacheLayer(sup), snapshotLayer(sup)) // after the runtimes filled them

	status := exitOK
	for _, l := range layers {
		if !l.Active && !l.info && (!l.hardening || requireHardening) {
			status = exitCodeError
		}
	}
	if *asJSON {
		m := make(map[string]doctorLayer, len(layers))
		for _, l := range layers {
			m[l.Name] = l
		}
		b, _ := json.MarshalIndent(m, "", "  ")
		fmt.Println(string(b))
		return status
	}
	for _, l := range layers {
		state := "active"
		if !l.Active {
			state = "unavailable"
		}
		reason := l.Reason
		if !l.Active && l.Needs != "" {
			reason += "; needs " + l.Needs
		}
		fmt.Printf("%-16s %-12s %s\n", l.Name, state, reason)
	}
	return status
}

// hardeningLayers reports the OS layers a worker would get on this machine:
// supervisor.Hardening's, the same that --require-hardening requires.
func hardeningLayers(opts isolation.Options) []doctorLayer {
	var out []doctorLayer
	for _, h := range supervisor.Hardening(opts) {
		out = append(out, doctorLayer{Name: h.Name, Active: h.Active, Reason: h.Reason, Needs: h.Needs, hardening: true})
	}
	return out
}

// cacheLayer says which snapshot cache directory the server uses, why it
// is a private fallback if it is one, and how much it holds.
func cacheLayer(sup *supervisor.Supervisor) doctorLayer {
	st := sup.CacheStatus()
	l := doctorLayer{Name: "cache", Active: st.Dir != "" && st.Fallback == "", info: true}
	switch {
	case st.Dir == "" && st.Unusable != "":
		l.Reason = fmt.Sprintf("the cache directory cannot be written (%s): running without one, every start makes the snapshots again; point XDG_CACHE_HOME at a writable directory", st.Unusable)
	case st.Dir == "":
		l.Reason = "no cache directory (no user cache directory): every start makes the snapshots again"
	case st.Fallback != "":
		l.Reason = fmt.Sprintf("private fallback %s, removed when the server stops (%s)", st.Dir, st.Fallback)
	default:
		l.Reason = fmt.Sprintf("%s: owner and mode checked, images verified by MAC", st.Dir)
	}
	if st.Dir != "" {
		l.Reason += fmt.Sprintf("; %s on disk, %d interpreter snapshots (the newest %d of each kept)",
			runtimes.FormatBytes(st.Bytes), st.Snapshots, snapcache.Keep)
	}
	return l
}

// snapshotLayer says where each interpreter snapshot stands after the
// runtimes ran: ready (loaded from the cache, or made now), or failed,
// with the error and when the next attempt may begin. Without its
// snapshot a runtime still works, at far more CPU per call.
func snapshotLayer(sup *supervisor.Supervisor) doctorLayer {
	l := doctorLayer{Name: "snapshots", Active: true, info: true}
	var parts []string
	for _, st := range sup.SnapshotStates() {
		var part string
		switch {
		case st.Ready && st.Made:
			part = "ready (made now)"
		case st.Ready:
			part = "ready (loaded from the cache)"
		case st.Making:
			part = "being made"
		default:
			l.Active = false
			part = fmt.Sprintf("failed %s: %s; every worker starts its interpreter cold; retried from %s",
				supervisor.Count(int64(st.Failures), "time", "times"), st.Err, st.RetryAt.UTC().Format(time.TimeOnly))
		}
		if st.Ready && st.Failures > 0 {
			part += fmt.Sprintf(" after %s", supervisor.Count(int64(st.Failures), "failed attempt", "failed attempts"))
		}
		parts = append(parts, st.Name.String()+" "+part)
	}
	if len(parts) == 0 {
		parts = []string{"none asked for"}
	}
	l.Reason = strings.Join(parts, ", ")
	return l
}

// checkAssets hashes every embedded runtime file and compares it with the
// hash its build recorded, which `capsule version --json` and the release's
// SBOM also list.
func checkAssets() doctorLayer {
	l := doctorLayer{Name: "assets"}
	rts, err := runtimeProvenance()
	if err != nil {
		l.Reason = err.Error()
		return l
	}
	var errs []string
	var names []string
	for _, r := range rts {
		for _, err := range r.Verify() {
			errs = append(errs, err.Error())
		}
		for _, a := range r.Assets {
			names = append(names, r.Name+"/"+a.Name)
		}
	}
	for _, err := range compiled.Verify() {
		errs = append(errs, err.Error())
	}
	for _, name := range compiled.Names() {
		names = append(names, "compiled/"+name)
	}
	if len(errs) > 0 {
		l.Reason = strings.Join(errs, "; ")
		return l
	}
	l.Active = true
	l.Reason = fmt.Sprintf("%d embedded files match the SHA-256 their build recorded (%s)", len(names), strings.Join(names, ", "))
	if targets := compiled.Targets(); len(targets) > 0 {
		l.Reason += "; compiled for: " + strings.Join(targets, "; ")
	}
	return l
}

// checkRuntime loads a runtime in a real worker and runs 1+1.
func checkRuntime(sup *supervisor.Supervisor, lang string) doctorLayer {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	a := sup.Execute(ctx, supervisor.Request{Language: lang, Code: "1 + 1"})
	l := doctorLayer{Name: lang}
	switch {
	case a.Error != nil:
		l.Reason = fmt.Sprintf("1 + 1 failed: %s: %s", a.Error.Type, a.Error.Message)
	case string(a.Result) != "2":
		l.Reason = fmt.Sprintf("1 + 1 gave %s", a.Result)
	default:
		l.Active = true
		l.Reason = fmt.Sprintf("loaded and ran 1 + 1 in a locked-down worker in %.0f ms", a.DurationMS)
	}
	return l
}
