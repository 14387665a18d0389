package main

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
)

// TestExecExitStatus runs `capsule exec` as a script would and checks its
// output and exit status: 0 ok, 1 code error, 2 usage, 3 limit.
func TestExecExitStatus(t *testing.T) {
	cases := []struct {
		name   string
		args   []string
		stdin  string
		status int
		stdout string
		stderr string
	}{
		{"python result", []string{"python", "-c", "print('hi')\n6 * 7"}, "", 0, "hi\n42\n", ""},
		{"javascript from stdin", []string{"javascript", "-"}, "console.log('js'); [1, 2]", 0, "js\n[ 1, 2 ]\n", ""},
		{"html characters stay readable", []string{"javascript", "-c", "'<b> & </b>'"}, "", 0, "'<b> & </b>'\n", ""},
		{"exception", []string{"python", "-c", "1 / 0"}, "", 1, "", "ZeroDivisionError"},
		{"timeout", []string{"python", "--timeout", "1s", "-c", "while True: pass"}, "", 3, "", "exceeded 1s"},
		{"unknown language", []string{"ruby", "-c", "1"}, "", 2, "", "unknown language"},
		{"no code", []string{"python"}, "", 2, "", "exactly one of"},
		{"bad flag", []string{"python", "--memory", "lots", "-c", "1"}, "", 2, "", "invalid size"},
		{"memory limit too small", []string{"python", "--memory", "1", "-c", "1"}, "", 2, "", "memory limit 1B is too small"},
		{"memory limit below the interpreters' need", []string{"javascript", "--memory", "1MiB", "-c", "1"}, "", 2, "", "memory limit 1MiB is too small: the interpreters need at least 32MiB"},
		{"max timeout below timeout", []string{"python", "--max-timeout", "3s", "--timeout", "30s", "-c", "1"}, "", 2, "", "max-timeout 3s is below timeout 30s"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cmd := exec.Command(capsuleBin, append([]string{"exec"}, c.args...)...)
			cmd.Env = serverEnv()
			cmd.Stdin = strings.NewReader(c.stdin)
			var stdout, stderr strings.Builder
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			status := 0
			var exit *exec.ExitError
			if errors.As(err, &exit) {
				status = exit.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if status != c.status || !strings.Contains(stdout.String(), c.stdout) || !strings.Contains(stderr.String(), c.stderr) {
				t.Fatalf("status %d stdout %q stderr %q; want %d, %q, %q", status, stdout.String(), stderr.String(), c.status, c.stdout, c.stderr)
			}
		})
	}
}

// TestUnworkableServeExits2: serve refuses at start, with the usage
// status and a message, what exec does (W7).
func TestUnworkableServeExits2(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--memory", "1MiB"}, "memory limit 1MiB is too small"},
		{[]string{"--memory", "16MiB"}, "memory limit 16MiB is too small"},
		{[]string{"--max-timeout", "3s", "--timeout", "30s"}, "max-timeout 3s is below timeout 30s"},
	} {
		cmd := exec.Command(capsuleBin, append([]string{"serve"}, c.args...)...)
		cmd.Env = serverEnv()
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(string(out), c.want) {
			t.Errorf("serve %v: err %v output %q; want exit status 2 with %q", c.args, err, out, c.want)
		}
	}
}

// TestUnsafeCacheRefused is W1 end to end: a server of an ordinary user
// refuses a cache directory that others can write, with the usage status
// and a message naming it; a root server falls back to a private one and
// still answers.
func TestUnsafeCacheRefused(t *testing.T) {
	home := t.TempDir()
	if err := os.Chmod(home, 0o777); err != nil {
		t.Fatal(err)
	}
	bin := capsuleBin
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		cmd := exec.Command(capsuleBin, "exec", "python", "-c", "1 + 1")
		cmd.Env = serverEnv("XDG_CACHE_HOME=" + home)
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "2") || !strings.Contains(string(out), "private one") {
			t.Errorf("root server: err %v output %q; want an answer and a warning about the private cache", err, out)
		}
		// The same as an ordinary user: a copy of the binary it may run.
		bin, _ = binaryFor(t, 65534)
		cred = &syscall.Credential{Uid: 65534, Gid: 65534}
	}
	for _, args := range [][]string{{"exec", "python", "-c", "1"}, {"serve"}} {
		cmd := exec.Command(bin, args...)
		cmd.Env = serverEnv("XDG_CACHE_HOME=" + home)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(string(out), "unsafe cache directory: "+home) {
			t.Errorf("capsule %s as an ordinary user: err %v output %q; want exit status 2 naming %s", args[0], err, out, home)
		}
	}
}

// TestWorkerRefusesToRunByHand: without its ipc pipes the worker says what
// it is and exits with the usage status.
func TestWorkerRefusesToRunByHand(t *testing.T) {
	out, err := exec.Command(capsuleBin, "worker").CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(string(out), "ipc pipes") {
		t.Fatalf("err %v output %q; want exit status 2 and a message about its ipc pipes", err, out)
	}
}

func TestVersion(t *testing.T) {
	out, err := exec.Command(capsuleBin, "version").CombinedOutput()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"capsule ", "go go1.", "wazero v", "cpython 3.11.", "Debian source package python3.11 3.11.", "tzdata 20", "xz-utils ", "bzip2 ", "quickjs-ng ",
		"bundled packages", "python3-sympy 1.11.1-1 (BSD-3-Clause): sympy", "python3-chardet 5.1.0+dfsg-2 (LGPL-2.1-or-later): chardet"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("version output lacks %q:\n%s", want, out)
		}
	}
}

// TestVersionJSON: `capsule version --json` reports each embedded file with
// the SHA-256 of the file the build wrote, and the components and Go
// modules it was built from.
func TestVersionJSON(t *testing.T) {
	out, err := exec.Command(capsuleBin, "version", "--json").Output()
	if err != nil {
		t.Fatalf("version --json: %v\n%s", err, out)
	}
	var v struct {
		Capsule    struct{ Version, Commit string }
		Go, Wazero string
		Runtimes   map[string]struct {
			Assets     []struct{ Name, SHA256 string }
			Components []struct{ Name, Kind, Version, SHA256 string }
		}
		GoModules []struct{ Path, Version, Sum string } `json:"go_modules"`
	}
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if v.Capsule.Version == "" || !strings.HasPrefix(v.Go, "go1.") || !strings.HasPrefix(v.Wazero, "v") {
		t.Errorf("capsule %+v, go %q, wazero %q", v.Capsule, v.Go, v.Wazero)
	}
	wantAssets := map[string][]string{
		"python":     {"python.snap.wasm", "python.data", "python-numpy.snap.wasm", "python-numpy.data", "python311.zip", "tzdata.zip", "VERSION", "bundle/packages.zip"},
		"javascript": {"quickjs.snap.wasm", "quickjs.data", "VERSION"},
	}
	wantComponents := map[string][]string{
		"python":     {"python3.11", "zlib", "sqlite3", "wasi-libc", "python3-sympy", "python3-pypdf"},
		"javascript": {"@jitl/quickjs-ng-wasmfile-release-sync"},
	}
	for lang, files := range wantAssets {
		rt := v.Runtimes[lang]
		for _, f := range files {
			data, err := os.ReadFile(filepath.Join("..", "..", "runtimes", lang, "dist", f))
			if err != nil {
				t.Fatal(err)
			}
			want := fmt.Sprintf("%x", sha256.Sum256(data))
			found := false
			for _, a := range rt.Assets {
				if a.Name == f {
					found = true
					if a.SHA256 != want {
						t.Errorf("%s/%s: reported SHA-256 %s, the file has %s", lang, f, a.SHA256, want)
					}
				}
			}
			if !found {
				t.Errorf("%s: no asset %s in %+v", lang, f, rt.Assets)
			}
		}
		for _, name := range wantComponents[lang] {
			found := false
			for _, c := range rt.Components {
				if c.Name == name {
					found = c.Version != "" && len(c.SHA256) == 64
				}
			}
			if !found {
				t.Errorf("%s: no component %s with a version and a SHA-256 in %+v", lang, name, rt.Components)
			}
		}
	}
	found := false
	for _, m := range v.GoModules {
		// wazero is the upstream release with capsule's patches, prepared
		// by the build: no go.sum hash names it (runtimes/wazero/prepare.sh
		// pins upstream's).
		if m.Path == "github.com/tetratelabs/wazero" && m.Version == v.Wazero && v.Wazero == "v1.12.0+capsule-patches" {
			found = true
		}
		if m.Path != "github.com/tetratelabs/wazero" && !strings.HasPrefix(m.Sum, "h1:") {
			t.Errorf("go module %s has no go.sum hash", m.Path)
		}
	}
	if !found {
		t.Errorf("go_modules lacks the patched wazero: %+v", v.GoModules)
	}
}

func TestDoctor(t *testing.T) {
	out, err := exec.Command(capsuleBin, "doctor", "--json").Output()
	if err != nil {
		t.Fatalf("doctor: %v\n%s", err, out)
	}
	for _, layer := range []string{"seccomp", "landlock", "no_new_privs", "namespaces", "rlimits", "assets", "python", "javascript"} {
		if !strings.Contains(string(out), `"`+layer+`"`) {
			t.Errorf("doctor --json lacks %q:\n%s", layer, out)
		}
	}
	var layers map[string]struct {
		Active bool
		Reason string
	}
	if err := json.Unmarshal(out, &layers); err != nil {
		t.Fatal(err)
	}
	if a := layers["assets"]; !a.Active || !strings.Contains(a.Reason, "python/python.snap.wasm") {
		t.Errorf("assets layer %+v, want active and naming python/python.snap.wasm", a)
	}
	// Where each interpreter snapshot stands (issue 32).
	if s := layers["snapshots"]; !s.Active || !regexp.MustCompile(`javascript ready \((made now|loaded from the cache)\), python ready`).MatchString(s.Reason) {
		t.Errorf("snapshots layer %+v, want both ready", s)
	}
}
