package main

// What the end-to-end tests of the packaging share: one release of the real
// binaries for every architecture (built once per test binary), installing
// the tools a test needs, and an environment with a clean HOME.

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// releaseArchs are the architectures `make dist` releases.
var releaseArchs = []string{"amd64", "arm64"}

// builtRelease is what `make image` writes, made by the tests themselves.
type builtRelease struct {
	dir      string // the output directory, as dist/
	rels     []*release
	bins     map[string]string // GOARCH → binary
	artefact map[string]string // artefact name → path
}

var (
	releaseOnce sync.Once
	releaseDir  string
	released    *builtRelease
	releaseErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if releaseDir != "" {
		os.RemoveAll(releaseDir)
	}
	os.Exit(code)
}

// testRelease builds capsule for every release architecture (as make
// release-binaries does, with a fixed commit stamp) and writes every
// artefact, image included, once for all the tests of this package.
func testRelease(t *testing.T) *builtRelease {
	t.Helper()
	if testing.Short() {
		t.Skip("builds capsule for every release architecture")
	}
	releaseOnce.Do(func() {
		releaseDir, releaseErr = os.MkdirTemp("", "capsule-release-test-")
		if releaseErr != nil {
			return
		}
		released, releaseErr = buildTestRelease(releaseDir)
	})
	if releaseErr != nil {
		t.Fatal(releaseErr)
	}
	return released
}

func buildTestRelease(dir string) (*builtRelease, error) {
	b := &builtRelease{dir: filepath.Join(dir, "dist"), bins: map[string]string{}, artefact: map[string]string{}}
	var paths []string
	for _, arch := range releaseArchs {
		bin := filepath.Join(dir, "linux-"+arch, "capsule")
		build := exec.Command("go", "build", "-trimpath", "-buildvcs=false", "-o", bin,
			"-ldflags", "-X main.commit=0123456789abcdef -X main.commitUnix=1796223955", "capsule/cmd/capsule")
		build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOARCH="+arch)
		if out, err := build.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("GOARCH=%s go build: %v\n%s", arch, err, out)
		}
		b.bins[arch] = bin
		paths = append(paths, bin)
	}
	var err error
	if b.rels, err = collect(paths, filepath.Join("..", ".."), goToolchain{}); err != nil {
		return nil, err
	}
	arts, _, err := artefacts(b.rels, true)
	if err != nil {
		return nil, err
	}
	if err := writeArtefacts(b.dir, arts); err != nil {
		return nil, err
	}
	for _, a := range arts {
		b.artefact[a.name] = filepath.Join(b.dir, a.name)
	}
	return b, nil
}

// needTool returns the path of command, installing Debian's package pkg
// first when it is missing and the test runs as root (as the build installs
// its tools); it skips the test, saying why, only where it cannot be
// installed.
func needTool(t *testing.T, command, pkg string) string {
	t.Helper()
	if p, err := exec.LookPath(command); err == nil {
		return p
	}
	if os.Geteuid() != 0 {
		t.Skipf("%s is not installed and the test is not root: install it with apt-get install %s", command, pkg)
	}
	if _, err := exec.LookPath("apt-get"); err != nil {
		t.Skipf("%s is not installed and there is no apt-get to install Debian's %s", command, pkg)
	}
	t.Logf("apt-get install %s (for %s)", pkg, command)
	aptGet := func(args ...string) ([]byte, error) {
		cmd := exec.Command("apt-get", args...)
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		return cmd.CombinedOutput()
	}
	install := []string{"install", "-y", "--no-install-recommends", pkg}
	if _, err := aptGet(install...); err != nil {
		// Perhaps an old package list: update it and try once more.
		if out, err := aptGet("update"); err != nil {
			t.Fatalf("apt-get update: %v\n%s", err, out)
		}
		if out, err := aptGet(install...); err != nil {
			t.Fatalf("apt-get install %s: %v\n%s", pkg, err, out)
		}
	}
	p, err := exec.LookPath(command)
	if err != nil {
		t.Fatalf("apt-get installed %s but there is no %s", pkg, command)
	}
	return p
}

// passedEnv are the variables a clean environment keeps: the path, and how
// this machine reaches the package registries.
var passedEnv = regexp.MustCompile(`(?i)^(PATH|https?_proxy|no_proxy|npm_config_registry)=`)

// cleanEnv returns an environment with nothing of the caller's but
// passedEnv, HOME set to home (a new, empty directory) and extra.
func cleanEnv(home string, extra ...string) []string {
	env := []string{"HOME=" + home}
	for _, kv := range os.Environ() {
		if passedEnv.MatchString(kv) {
			env = append(env, kv)
		}
	}
	return append(env, extra...)
}

// run runs a command, failing the test with its output when it fails.
func run(t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir, cmd.Env = dir, env
	start := time.Now()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v (after %v)\n%s", name, strings.Join(args, " "), err, time.Since(start).Round(time.Millisecond), out)
	}
	return string(out)
}
