package main

// The npm package, used as its users use it: installed into an empty prefix
// with a clean HOME, its launcher run for each exit status, on a platform it
// has no binary for, and stopped by a signal; then `npx -y
// ./capsule-VERSION.tgz serve` spawned by the MCP TypeScript SDK's stdio
// client, as an MCP host spawns it, with both tools called.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"
)

// npmFiles returns the files of an npm package tarball (under package/,
// as npm pack lays them out) and their modes.
func npmFiles(t *testing.T, path string) (map[string][]byte, map[string]int64) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return readTarballModes(t, data, "package")
}

// npmManifestOf decodes a package's package.json and checks what every
// package of the release shares: name, version, licence, no scripts.
func npmManifestOf(t *testing.T, files map[string][]byte, name, version string) map[string]any {
	t.Helper()
	var pj map[string]any
	if err := json.Unmarshal(files["package.json"], &pj); err != nil {
		t.Fatalf("%s: package.json: %v", name, err)
	}
	if pj["name"] != name || pj["version"] != version || pj["license"] != licence {
		t.Errorf("%s: package.json name %v version %v license %v", name, pj["name"], pj["version"], pj["license"])
	}
	if _, ok := pj["scripts"]; ok {
		t.Errorf("%s: package.json has scripts: %v", name, pj["scripts"])
	}
	return pj
}

// placeholder matches what the release tool fills in in the packages' texts.
var placeholder = regexp.MustCompile(`__[A-Z_]+__`)

// checkNPMFiles fails unless the package holds exactly the files want, with
// no placeholder left in its text files and capsule's licence and notices.
func checkNPMFiles(t *testing.T, pkg string, files map[string][]byte, want []string, rel *release) {
	t.Helper()
	var names []string
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	sort.Strings(want)
	if strings.Join(names, " ") != strings.Join(want, " ") {
		t.Errorf("%s holds %v, want %v", pkg, names, want)
	}
	if !bytes.Equal(files["LICENSE"], rel.Licence) || !bytes.Equal(files["THIRD_PARTY_NOTICES"], rel.notices()) || len(rel.notices()) < 10000 {
		t.Errorf("%s: LICENSE or THIRD_PARTY_NOTICES is not the release's (%d, %d bytes)", pkg, len(files["LICENSE"]), len(files["THIRD_PARTY_NOTICES"]))
	}
	for _, name := range []string{"README.md", "bin/capsule.js"} {
		if p := placeholder.Find(files[name]); p != nil {
			t.Errorf("%s: %s still has %s", pkg, name, p)
		}
	}
}

// TestNPMPackageContents: the main package has the launcher, a bin, no
// binary, no os/cpu, and every platform package as an optional dependency
// pinned to its own version; each platform package has its binary
// (executable), its SBOM, os and cpu, no bin; all have one version, no
// scripts, the licence and the notices.
func TestNPMPackageContents(t *testing.T) {
	r := testRelease(t)
	version := r.rels[0].Version
	platforms, err := npmPlatforms(r.rels)
	if err != nil {
		t.Fatal(err)
	}
	files, modes := npmFiles(t, r.artefact[npmFileName(version)])
	pj := npmManifestOf(t, files, npmName, version)
	if bin, _ := pj["bin"].(map[string]any); len(bin) != 1 || bin["capsule"] != "bin/capsule.js" {
		t.Errorf("package.json bin %v", pj["bin"])
	}
	if pj["os"] != nil || pj["cpu"] != nil {
		t.Errorf("the main package restricts os %v cpu %v: npm would refuse it with its own message", pj["os"], pj["cpu"])
	}
	wantDeps := map[string]any{}
	for _, p := range platforms {
		wantDeps[p.name] = version
	}
	if deps, _ := pj["optionalDependencies"].(map[string]any); fmt.Sprint(deps) != fmt.Sprint(wantDeps) {
		t.Errorf("optionalDependencies %v, want %v", pj["optionalDependencies"], wantDeps)
	}
	for _, field := range []string{"dependencies", "peerDependencies"} {
		if pj[field] != nil {
			t.Errorf("package.json has %s: %v", field, pj[field])
		}
	}
	if modes["bin/capsule.js"] != 0o755 || !bytes.HasPrefix(files["bin/capsule.js"], []byte("#!/usr/bin/env node\n")) {
		t.Errorf("bin/capsule.js: mode %o, not a node script", modes["bin/capsule.js"])
	}
	checkNPMFiles(t, npmName, files, []string{"package.json", "README.md", "LICENSE", "THIRD_PARTY_NOTICES", "bin/capsule.js"}, r.rels[0])

	for _, p := range platforms {
		files, modes := npmFiles(t, r.artefact[npmPlatformFileName(p.key, version)])
		pj := npmManifestOf(t, files, p.name, version)
		if fmt.Sprint(pj["os"]) != "[linux]" || fmt.Sprint(pj["cpu"]) != "["+p.arch+"]" || pj["bin"] != nil {
			t.Errorf("%s: os %v cpu %v bin %v, want [linux] [%s] and no bin", p.name, pj["os"], pj["cpu"], pj["bin"], p.arch)
		}
		if !bytes.Equal(files["capsule"], p.rel.Binary) || modes["capsule"] != 0o755 {
			t.Errorf("%s: capsule is not the %s binary with mode 0755 (mode %o)", p.name, p.rel.Arch, modes["capsule"])
		}
		var doc spdxDoc
		if err := json.Unmarshal(files["SBOM.spdx.json"], &doc); err != nil || doc.Name != p.rel.Name {
			t.Errorf("%s: SBOM.spdx.json: %v, document %q, want %q", p.name, err, doc.Name, p.rel.Name)
		}
		if !bytes.Contains(files["README.md"], []byte("Install `"+npmName+"`")) {
			t.Errorf("%s: README.md does not send the reader to %s:\n%s", p.name, npmName, files["README.md"])
		}
		checkNPMFiles(t, p.name, files, []string{"package.json", "README.md", "LICENSE", "THIRD_PARTY_NOTICES", "SBOM.spdx.json", "capsule"}, p.rel)
	}
}

// npmArtefacts returns the paths of the release's npm packages: the main
// package first.
func npmArtefacts(t *testing.T, r *builtRelease) []string {
	t.Helper()
	platforms, err := npmPlatforms(r.rels)
	if err != nil {
		t.Fatal(err)
	}
	paths := []string{r.artefact[npmFileName(r.rels[0].Version)]}
	for _, p := range platforms {
		paths = append(paths, r.artefact[npmPlatformFileName(p.key, r.rels[0].Version)])
	}
	return paths
}

// installedPackage installs the main package's tarball into an empty
// prefix with a clean HOME, its platform package coming from reg, with
// npm's extra flags, and returns the launcher's path, the environment and
// the prefix.
func installedPackage(t *testing.T, r *builtRelease, reg *testRegistry, flags ...string) (launcher string, env []string, prefix string) {
	needTool(t, "npm", "npm")
	home := t.TempDir()
	prefix, env = t.TempDir(), reg.env(home)
	args := append([]string{"install", "--prefix", prefix, "--no-audit", "--no-fund", "--no-save"}, flags...)
	run(t, prefix, env, "npm", append(args, npmArtefacts(t, r)[0])...)
	launcher = filepath.Join(prefix, "node_modules", ".bin", "capsule")
	if _, err := os.Stat(launcher); err != nil {
		t.Fatalf("npm install made no bin: %v", err)
	}
	return launcher, env, prefix
}

// TestNPMLauncher: the launcher npm installed (its platform package from
// the test registry, and only this machine's) passes arguments, standard
// streams and the exit status through, explains an unsupported platform, a
// platform package left out (--omit=optional) and one of another version,
// and forwards SIGTERM and SIGINT to `capsule serve`, which drains and
// exits 0.
func TestNPMLauncher(t *testing.T) {
	r := testRelease(t)
	reg := startRegistry(t, npmArtefacts(t, r)...)
	launcher, env, _ := installedPackage(t, r, reg)
	// Only this machine's platform package, and no other, came from the
	// registry: npm read os and cpu from the packuments.
	arch := nodeArch[runtime.GOARCH]
	platform := npmName + "-linux-" + arch
	if got, want := strings.Join(reg.servedTarballs(), " "), registryTarballPath(platform, r.rels[0].Version); got != want {
		t.Errorf("npm fetched %q, want %q", got, want)
	}
	// Left out, and then present but of another version (the launcher
	// checks the version before it looks for the binary).
	omitted, omittedEnv, omittedPrefix := installedPackage(t, r, reg, "--omit=optional")
	if _, err := os.Stat(filepath.Join(omittedPrefix, "node_modules", platform)); err == nil {
		t.Fatalf("npm install --omit=optional installed %s", platform)
	}
	other := filepath.Join(t.TempDir(), "node_modules", platform)
	writeFiles(t, other, map[string]string{"package.json": `{"name": "` + platform + `", "version": "9.9.9"}`})
	// JavaScript alone: its runtime compiles in a fraction of a second
	// into an empty cache (TestNPX runs Python through the package).
	env = append(env, "XDG_CACHE_HOME="+t.TempDir())
	cases := []struct {
		name     string
		launcher string
		env      []string
		node     []string // node options before the launcher
		args     []string
		stdin    string
		status   int
		out      []string
	}{
		{name: "version", args: []string{"version"}, out: []string{"capsule " + r.rels[0].Version}},
		{name: "stdin and stdout", args: []string{"exec", "javascript", "-"}, stdin: "console.log('from stdin'); 6 * 7", out: []string{"from stdin"}},
		{name: "code error", args: []string{"exec", "javascript", "-c", "null.x"}, status: 1, out: []string{"TypeError"}},
		{name: "usage error", args: []string{"exec", "cobol", "-c", "1"}, status: 2},
		{name: "limit", args: []string{"exec", "javascript", "--timeout", "200ms", "-c", "for (;;) {}"}, status: 3, out: []string{"timeout"}},
		{name: "unsupported platform", node: []string{"--require", writeArchOverride(t, "ia32")}, args: []string{"version"},
			status: 1, out: []string{"no prebuilt binary for linux-ia32; there are binaries for linux-arm64 and linux-x64"}},
		{name: "platform package left out", launcher: omitted, env: omittedEnv, args: []string{"version"}, status: 1, out: []string{
			"the package " + platform + ", which holds the binary for linux-" + arch + ", is not installed",
			"--omit=optional", "npm install " + platform + "@" + r.rels[0].Version}},
		{name: "platform package of another version", launcher: omitted, env: append(omittedEnv, "NODE_PATH="+filepath.Dir(filepath.Dir(other))),
			args: []string{"version"}, status: 1, out: []string{
				platform + " is version 9.9.9, but this launcher (" + npmName + ") is " + r.rels[0].Version,
				"npm install " + platform + "@" + r.rels[0].Version}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.launcher == "" {
				c.launcher, c.env = launcher, env
			}
			cmd := exec.Command("node", append(append(c.node, c.launcher), c.args...)...)
			cmd.Env, cmd.Stdin = c.env, strings.NewReader(c.stdin)
			out, err := cmd.CombinedOutput()
			status := 0
			var exit *exec.ExitError
			if errors.As(err, &exit) {
				status = exit.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if status != c.status {
				t.Fatalf("exit status %d, want %d:\n%s", status, c.status, out)
			}
			for _, want := range c.out {
				if !strings.Contains(string(out), want) {
					t.Errorf("output should contain %q:\n%s", want, out)
				}
			}
		})
	}
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run("forwards "+sig.String(), func(t *testing.T) { checkForwards(t, launcher, env, sig) })
	}
}

// writeArchOverride writes a node preload script that makes process.arch
// arch, and returns its path.
func writeArchOverride(t *testing.T, arch string) string {
	p := filepath.Join(t.TempDir(), "arch.cjs")
	js := "Object.defineProperty(process, 'arch', { value: '" + arch + "' });\n"
	if err := os.WriteFile(p, []byte(js), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// checkForwards starts `capsule serve` through the launcher, waits until it
// serves, sends sig to the launcher alone and expects the server to drain
// and both to exit 0.
func checkForwards(t *testing.T, launcher string, env []string, sig syscall.Signal) {
	cmd := exec.Command("node", launcher, "serve")
	cmd.Env = env
	stdin, err := cmd.StdinPipe() // held open: the server must stop for the signal, not for EOF
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 100)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	var log strings.Builder
	waitFor := func(text string) {
		deadline := time.After(2 * time.Minute)
		for {
			select {
			case line, ok := <-lines:
				if !ok {
					t.Fatalf("stderr ended before %q:\n%s", text, log.String())
				}
				log.WriteString(line + "\n")
				if strings.Contains(line, text) {
					return
				}
			case <-deadline:
				cmd.Process.Kill()
				t.Fatalf("no %q after 2 minutes:\n%s", text, log.String())
			}
		}
	}
	waitFor("serving MCP on stdio")
	if err := cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	waitFor("stopped")
	for range lines {
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("after %v the launcher exited with %v, want 0:\n%s", sig, err, log.String())
	}
	if !strings.Contains(log.String(), "shutting down") {
		t.Errorf("the server did not drain after %v:\n%s", sig, log.String())
	}
}

// mcpClientReport is what testdata/mcp-client/client.mjs prints.
type mcpClientReport struct {
	MS     map[string]float64 `json:"ms"`
	Server struct{ Name, Version string }
	Tools  []string `json:"tools"`
	Calls  map[string]struct {
		IsError    bool `json:"isError"`
		Structured struct {
			Stdout string          `json:"stdout"`
			Result json.RawMessage `json:"result"`
		} `json:"structured"`
	} `json:"calls"`
	Error string `json:"error"`
}

// mcpClient installs the MCP TypeScript SDK from testdata/mcp-client's lock
// file (pinned versions and hashes) and returns a function that runs the
// client against a server command and checks its report.
func mcpClient(t *testing.T) func(t *testing.T, server map[string]any) mcpClientReport {
	needTool(t, "npm", "npm")
	dir := t.TempDir()
	for _, f := range []string{"package.json", "package-lock.json", "client.mjs"} {
		b, err := os.ReadFile(filepath.Join("testdata", "mcp-client", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run(t, dir, cleanEnv(t.TempDir()), "npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund")
	return func(t *testing.T, server map[string]any) mcpClientReport {
		t.Helper()
		arg, _ := json.Marshal(server)
		cmd := exec.Command("node", filepath.Join(dir, "client.mjs"), string(arg))
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		var rep mcpClientReport
		if jerr := json.Unmarshal(out, &rep); err != nil || jerr != nil {
			t.Fatalf("client: %v %v\n%s\nstderr:\n%s", err, jerr, out, stderr.String())
		}
		if rep.Error != "" {
			t.Fatalf("client: %s\nstderr:\n%s", rep.Error, stderr.String())
		}
		want := map[string]string{"python": "45", "javascript": "42"}
		for lang, result := range want {
			c := rep.Calls[lang]
			if c.IsError || string(c.Structured.Result) != result || !strings.HasPrefix(c.Structured.Stdout, "hello from") {
				t.Errorf("%s call: %+v, want result %s", lang, c, result)
			}
		}
		if rep.Server.Name != "capsule" || strings.Join(rep.Tools, ",") != "execute_javascript,execute_python" {
			t.Errorf("server %+v tools %v", rep.Server, rep.Tools)
		}
		return rep
	}
}

// TestNPX: the two ways to start the package with npx, each spawned as an
// MCP host spawns it, with both tools called: `npx -y
// ./capsule-VERSION.tgz serve` (the main package from its tarball, the
// platform package from the registry) and `npx -y @capsule-run/mcp-server
// serve` (both from the registry, as users start it). The registry is the
// test's own on 127.0.0.1, so this runs offline. Each form starts first
// with a clean HOME (empty npm cache, empty compilation cache), then again
// with the caches it left; then the launcher npx installed is started
// without npx. The times are logged, not asserted.
func TestNPX(t *testing.T) {
	r := testRelease(t)
	call := mcpClient(t)
	paths := npmArtefacts(t, r)
	reg := startRegistry(t, paths...)
	tgz := filepath.Base(paths[0])
	data, err := os.ReadFile(paths[0])
	if err != nil {
		t.Fatal(err)
	}
	specs := []string{"./" + tgz, npmName}
	for _, spec := range specs {
		cwd, home := t.TempDir(), t.TempDir()
		if err := os.WriteFile(filepath.Join(cwd, tgz), data, 0o644); err != nil {
			t.Fatal(err)
		}
		env := map[string]string{}
		for _, kv := range reg.env(home) {
			k, v, _ := strings.Cut(kv, "=")
			env[k] = v
		}
		server := map[string]any{"command": "npx", "args": []string{"-y", spec, "serve"}, "cwd": cwd, "env": env}
		for _, start := range []string{"first start, clean HOME", "later start"} {
			rep := call(t, server)
			t.Logf("npx -y %s serve, %s: initialize answered after %.0f ms, Python after %.0f ms, JavaScript after %.0f ms (from the spawn)",
				spec, start, rep.MS["initialize"], rep.MS["python"], rep.MS["javascript"])
		}
		launchers, _ := filepath.Glob(filepath.Join(home, ".npm", "_npx", "*", "node_modules", ".bin", "capsule"))
		if len(launchers) != 1 {
			t.Fatalf("npx -y %s installed %d launchers: %v", spec, len(launchers), launchers)
		}
		if spec == npmName {
			// The launcher as npx runs it once npm has checked the
			// registry: the part of a later start that is capsule's.
			server["command"], server["args"] = "node", []string{launchers[0], "serve"}
			for i := range 3 {
				rep := call(t, server)
				t.Logf("the launcher npx installed, later start %d: initialize answered after %.0f ms, Python after %.0f ms, JavaScript after %.0f ms",
					i+1, rep.MS["initialize"], rep.MS["python"], rep.MS["javascript"])
			}
		}
	}
	// Each first start fetched this machine's platform package, and no
	// other; the main package came from the registry for the package name
	// alone; the later starts fetched nothing.
	arch, version := nodeArch[runtime.GOARCH], r.rels[0].Version
	want := map[string]int{registryTarballPath(npmName+"-linux-"+arch, version): len(specs), registryTarballPath(npmName, version): 1}
	got := map[string]int{}
	for _, p := range reg.servedTarballs() {
		got[p]++
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("npm fetched %v, want %v", got, want)
	}
}
