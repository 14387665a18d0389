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
	"os"
	"os/exec"
	"path/filepath"
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

// TestNPMPackageContents: one name and version, a bin and no scripts; both
// binaries, executable, each with its SBOM; the licence and the notices.
func TestNPMPackageContents(t *testing.T) {
	r := testRelease(t)
	version := r.rels[0].Version
	files, modes := npmFiles(t, r.artefact[npmFileName(version)])
	var pj map[string]any
	if err := json.Unmarshal(files["package.json"], &pj); err != nil {
		t.Fatal(err)
	}
	if pj["name"] != npmName || pj["version"] != version || pj["license"] != licence {
		t.Errorf("package.json name %v version %v license %v", pj["name"], pj["version"], pj["license"])
	}
	if _, ok := pj["scripts"]; ok {
		t.Errorf("package.json has scripts: %v", pj["scripts"])
	}
	if bin, _ := pj["bin"].(map[string]any); bin["capsule"] != "bin/capsule.js" {
		t.Errorf("package.json bin %v", pj["bin"])
	}
	for _, rel := range r.rels {
		dir := "linux-" + nodeArch[rel.Arch] + "/"
		if !bytes.Equal(files[dir+"capsule"], rel.Binary) || modes[dir+"capsule"] != 0o755 {
			t.Errorf("%scapsule is not the %s binary with mode 0755 (mode %o)", dir, rel.Arch, modes[dir+"capsule"])
		}
		var doc spdxDoc
		if err := json.Unmarshal(files[dir+"SBOM.spdx.json"], &doc); err != nil || doc.Name != rel.Name {
			t.Errorf("%sSBOM.spdx.json: %v, document %q, want %q", dir, err, doc.Name, rel.Name)
		}
	}
	if modes["bin/capsule.js"] != 0o755 || !bytes.HasPrefix(files["bin/capsule.js"], []byte("#!/usr/bin/env node\n")) {
		t.Errorf("bin/capsule.js: mode %o, not a node script", modes["bin/capsule.js"])
	}
	if !bytes.Equal(files["LICENSE"], r.rels[0].Licence) || len(files["THIRD_PARTY_NOTICES"]) < 10000 {
		t.Errorf("LICENSE or THIRD_PARTY_NOTICES missing (%d, %d bytes)", len(files["LICENSE"]), len(files["THIRD_PARTY_NOTICES"]))
	}
	for _, name := range []string{"README.md", "bin/capsule.js"} {
		for _, placeholder := range []string{"__NPM_NAME__", "__SOURCE_URL__", "__BINARIES__"} {
			if bytes.Contains(files[name], []byte(placeholder)) {
				t.Errorf("%s still has %s", name, placeholder)
			}
		}
	}
}

// installedPackage installs the npm package into an empty prefix with a
// clean HOME and returns the launcher's path and the environment.
func installedPackage(t *testing.T, r *builtRelease) (string, []string) {
	needTool(t, "npm", "npm")
	home, prefix := t.TempDir(), t.TempDir()
	env := cleanEnv(home)
	tgz := r.artefact[npmFileName(r.rels[0].Version)]
	run(t, prefix, env, "npm", "install", "--prefix", prefix, "--no-audit", "--no-fund", "--no-save", tgz)
	launcher := filepath.Join(prefix, "node_modules", ".bin", "capsule")
	if _, err := os.Stat(launcher); err != nil {
		t.Fatalf("npm install made no bin: %v", err)
	}
	return launcher, env
}

// TestNPMLauncher: the installed launcher passes arguments, standard
// streams and the exit status through, explains an unsupported platform,
// and forwards SIGTERM and SIGINT to `capsule serve`, which drains and
// exits 0.
func TestNPMLauncher(t *testing.T) {
	r := testRelease(t)
	launcher, env := installedPackage(t, r)
	// JavaScript alone: its runtime compiles in a fraction of a second
	// into an empty cache (TestNPX runs Python through the package).
	env = append(env, "XDG_CACHE_HOME="+t.TempDir())
	cases := []struct {
		name   string
		node   []string // node options before the launcher
		args   []string
		stdin  string
		status int
		out    string
	}{
		{name: "version", args: []string{"version"}, out: "capsule " + r.rels[0].Version},
		{name: "stdin and stdout", args: []string{"exec", "javascript", "-"}, stdin: "console.log('from stdin'); 6 * 7", out: "from stdin"},
		{name: "code error", args: []string{"exec", "javascript", "-c", "null.x"}, status: 1, out: "TypeError"},
		{name: "usage error", args: []string{"exec", "cobol", "-c", "1"}, status: 2},
		{name: "limit", args: []string{"exec", "javascript", "--timeout", "200ms", "-c", "for (;;) {}"}, status: 3, out: "timeout"},
		{name: "unsupported platform", node: []string{"--require", writeArchOverride(t, "ia32")}, args: []string{"version"},
			status: 1, out: "no prebuilt binary for linux-ia32; this package has linux-arm64 and linux-x64"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cmd := exec.Command("node", append(append(c.node, launcher), c.args...)...)
			cmd.Env, cmd.Stdin = env, strings.NewReader(c.stdin)
			out, err := cmd.CombinedOutput()
			status := 0
			var exit *exec.ExitError
			if errors.As(err, &exit) {
				status = exit.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if status != c.status || !strings.Contains(string(out), c.out) {
				t.Fatalf("exit status %d, want %d; output should contain %q:\n%s", status, c.status, c.out, out)
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

// TestNPX: `npx -y ./capsule-VERSION.tgz serve` as an MCP host spawns it,
// with a clean HOME (empty npm cache, empty compilation cache), then again
// with the caches it left, and the launcher npx installed, without npx.
// The times are logged, not asserted.
func TestNPX(t *testing.T) {
	r := testRelease(t)
	call := mcpClient(t)
	cwd, home := t.TempDir(), t.TempDir()
	tgz := npmFileName(r.rels[0].Version)
	data, err := os.ReadFile(r.artefact[tgz])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cwd, tgz), data, 0o644); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"HOME": home, "PATH": os.Getenv("PATH")}
	for _, kv := range cleanEnv(home) {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	server := map[string]any{"command": "npx", "args": []string{"-y", "./" + tgz, "serve"}, "cwd": cwd, "env": env}
	for _, start := range []string{"first start, clean HOME", "later start"} {
		rep := call(t, server)
		t.Logf("npx, %s: initialize answered after %.0f ms, Python after %.0f ms, JavaScript after %.0f ms (from the spawn)",
			start, rep.MS["initialize"], rep.MS["python"], rep.MS["javascript"])
	}
	// npx reads a local tarball again at every start; from the registry it
	// runs the package it installed, as this does.
	launchers, _ := filepath.Glob(filepath.Join(home, ".npm", "_npx", "*", "node_modules", ".bin", "capsule"))
	if len(launchers) != 1 {
		t.Fatalf("npx installed %d launchers: %v", len(launchers), launchers)
	}
	server["command"], server["args"] = "node", []string{launchers[0], "serve"}
	for i := range 3 {
		rep := call(t, server)
		t.Logf("the launcher npx installed, later start %d: initialize answered after %.0f ms, Python after %.0f ms, JavaScript after %.0f ms",
			i+1, rep.MS["initialize"], rep.MS["python"], rep.MS["javascript"])
	}
}
