package main

import (
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"capsule/runtimes/javascript"
	"capsule/runtimes/provenance"
	"capsule/runtimes/python"
	"capsule/supervisor"
)

// The commit the binary was built from, set by the Makefile with -X: Go's
// own VCS stamp does not see git worktrees and can be turned off by GOFLAGS,
// and a stamp that depends on the environment would make two builds of one
// commit differ.
var (
	commit     string // full hash
	commitUnix string // commit time, Unix seconds
	modified   string // "true" when built with uncommitted changes
)

// versionInfo is `capsule version --json`: what this binary is and what it
// embeds, for a reviewer to compare with the release's SBOM.
type versionInfo struct {
	Capsule struct {
		Version string `json:"version"`
		// Commit, CommitTime (RFC 3339, UTC) and Modified say what the
		// binary was built from; empty when built without the Makefile
		// outside a git checkout.
		Commit     string `json:"commit"`
		CommitTime string `json:"commit_time"`
		Modified   bool   `json:"modified"`
	} `json:"capsule"`
	Go     string `json:"go"`
	Wazero string `json:"wazero"`
	// Runtimes maps a language to its embedded files (with the SHA-256 its
	// build recorded) and the components they were built from.
	Runtimes map[string]provenance.Runtime `json:"runtimes"`
	// GoModules are the modules compiled in, with their go.sum hashes.
	GoModules []goModule `json:"go_modules"`
}

// goModule is one Go module of the build.
type goModule struct {
	Path    string `json:"path"`
	Version string `json:"version"`
	Sum     string `json:"sum"`
}

// runtimeProvenance is each embedded runtime's provenance, in a fixed order.
func runtimeProvenance() ([]provenance.Runtime, error) {
	var out []provenance.Runtime
	for _, get := range []func() (provenance.Runtime, error){python.Provenance, javascript.Provenance} {
		r, err := get()
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// collectVersionInfo reads everything but the runtimes, which only --json
// needs: the plain output must not depend on the runtimes' records.
func collectVersionInfo() versionInfo {
	var v versionInfo
	v.Capsule.Version = supervisor.Version
	v.Go = runtime.Version()
	v.Wazero = "unknown"
	v.Capsule.Commit, v.Capsule.Modified = commit, modified == "true"
	if n, err := strconv.ParseInt(commitUnix, 10, 64); err == nil {
		v.Capsule.CommitTime = time.Unix(n, 0).UTC().Format(time.RFC3339)
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if v.Capsule.Commit == "" {
			for _, s := range bi.Settings {
				switch s.Key {
				case "vcs.revision":
					v.Capsule.Commit = s.Value
				case "vcs.time":
					v.Capsule.CommitTime = s.Value
				case "vcs.modified":
					v.Capsule.Modified = s.Value == "true"
				}
			}
		}
		for _, m := range bi.Deps {
			version := m.Version
			switch {
			case m.Replace != nil && strings.HasPrefix(m.Replace.Path, "."):
				// The upstream release with capsule's patch set, as
				// the build prepares it (runtimes/wazero).
				version += "+capsule-patches"
			case m.Replace != nil:
				m = m.Replace
				version = m.Version
			}
			v.GoModules = append(v.GoModules, goModule{Path: m.Path, Version: version, Sum: m.Sum})
			if m.Path == "github.com/tetratelabs/wazero" {
				v.Wazero = version
			}
		}
	}
	return v
}

func version(args []string) int {
	fs := newFlagSet("version", "capsule version [--json]\n\n"+
		"Prints capsule's version and commit, Go, wazero and the embedded runtimes, with Python's bundled\n"+
		"packages and their licences. With --json, also each embedded file with the SHA-256 its build\n"+
		"recorded, the components it was built from (version and the SHA-256 that pins each) and the Go\n"+
		"modules with their go.sum hashes.")
	asJSON := fs.Bool("json", false, "print everything as one JSON object")
	if status, ok := parseFlags(fs, func() error { return fs.Parse(args) }); !ok {
		return status
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "capsule version: unexpected argument %q\nRun 'capsule version --help' for its flags.\n", fs.Arg(0))
		return exitUsage
	}
	info := collectVersionInfo()
	if *asJSON {
		rts, err := runtimeProvenance()
		if err != nil {
			fmt.Fprintln(os.Stderr, "capsule version:", err)
			return exitCodeError
		}
		info.Runtimes = map[string]provenance.Runtime{}
		for _, r := range rts {
			info.Runtimes[r.Name] = r
		}
		b, _ := json.MarshalIndent(info, "", "  ")
		fmt.Println(string(b))
		return exitOK
	}
	cpython, debian := python.Versions()
	pkg, quickjs := javascript.Versions()
	built := info.Capsule.Commit
	if built == "" {
		built = "unknown"
	} else if info.Capsule.Modified {
		built += " with uncommitted changes"
	}
	fmt.Printf("capsule %s (commit %s)\n", info.Capsule.Version, built)
	fmt.Printf("go %s\n", info.Go)
	fmt.Printf("wazero %s\n", info.Wazero)
	fmt.Printf("cpython %s (Debian source package python3.11 %s, wasm32-wasi)\n", cpython, debian)
	for _, lib := range python.Libraries() {
		// Built into the Python runtime from Debian source packages.
		fmt.Printf("  %s (Debian source package)\n", lib)
	}
	bundled, err := python.Bundled()
	if err != nil {
		fmt.Fprintln(os.Stderr, "capsule version:", err)
		return exitCodeError
	}
	fmt.Println("  bundled packages (Debian binary packages; import names after the colon):")
	for _, p := range bundled {
		fmt.Printf("    %s %s (%s): %s\n", p.Name, p.Version, p.Licence, strings.Join(p.Modules, ", "))
	}
	fmt.Printf("quickjs-ng %s (npm @jitl/quickjs-ng-wasmfile-release-sync %s)\n", quickjs, pkg)
	return exitOK
}
