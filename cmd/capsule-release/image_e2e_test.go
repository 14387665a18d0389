package main

// The container image, used as its users use it: loaded into podman from
// the OCI archive; `capsule doctor` inside a default container, one under
// Docker's (and Kubernetes' RuntimeDefault) seccomp rules for namespaces,
// and one with the flag that gives them back, each compared with the table
// in docs/deploy.md; an MCP call over stdio with `podman run -i --rm
// oci-archive:FILE`; and one over HTTP with a token.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"golang.org/x/sys/unix"
)

const deployDoc = "../../docs/deploy.md"

// podman runs podman as this machine allows.
type podman struct {
	path string
	// global options: the OCI runtime, where crun cannot run.
	global []string
	// runOpts go into every `podman run`.
	runOpts []string
}

func newPodman(t *testing.T) *podman {
	p := &podman{path: needTool(t, "podman", "podman")}
	// crun refuses a hybrid cgroup hierarchy (cgroup v1 controllers with a
	// cgroup2 mount beside them); runc runs there.
	var st unix.Statfs_t
	if err := unix.Statfs("/sys/fs/cgroup", &st); err == nil && st.Type != unix.CGROUP2_SUPER_MAGIC {
		if _, err := os.Stat("/sys/fs/cgroup/unified/cgroup.controllers"); err == nil {
			needTool(t, "runc", "runc")
			p.global = []string{"--runtime", "runc"}
		}
	}
	// A root podman raises a container's RLIMIT_NOFILE and RLIMIT_NPROC,
	// which needs CAP_SYS_RESOURCE, which sandboxes (CI) may withhold: the
	// containers get this process's own open-file limit and at most 4096
	// processes (ample for a server and its workers), values never above
	// what it has, which need no privilege to set.
	var nofile, nproc unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &nofile); err != nil {
		t.Fatal(err)
	}
	if err := unix.Getrlimit(unix.RLIMIT_NPROC, &nproc); err != nil {
		t.Fatal(err)
	}
	// As README says (TestREADMEPodmanOptions).
	procs := min(nproc.Cur, nproc.Max, 4096)
	p.runOpts = []string{"--ulimit", fmt.Sprintf("nofile=%d:%d", nofile.Cur, nofile.Max),
		"--ulimit", fmt.Sprintf("nproc=%d:%d", procs, procs)}
	return p
}

// args returns podman's arguments for a subcommand; for "run", extra go
// after the run options.
func (p *podman) args(sub string, extra ...string) []string {
	args := append(append([]string{}, p.global...), sub)
	if sub == "run" {
		args = append(args, p.runOpts...)
	}
	return append(args, extra...)
}

// do runs a podman subcommand and returns its standard output.
func (p *podman) do(t *testing.T, sub string, extra ...string) string {
	t.Helper()
	cmd := exec.Command(p.path, p.args(sub, extra...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("podman %s: %v\n%s%s", strings.Join(p.args(sub, extra...), " "), err, out, stderr.String())
	}
	return string(out)
}

func randomName(prefix string) string {
	b := make([]byte, 6)
	rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// TestImage loads the image of this machine's architecture into podman and
// uses it.
func TestImage(t *testing.T) {
	r := testRelease(t)
	var rel *release
	for _, x := range r.rels {
		if x.Arch == runtime.GOARCH {
			rel = x
		}
	}
	p := newPodman(t)
	p.do(t, "load", "-i", r.artefact[rel.imageFileName()])
	image := "localhost/" + imageName + ":" + rel.Version // the name the archive's index gives it
	t.Cleanup(func() { exec.Command(p.path, p.args("rmi", "-f", image)...).Run() })
	checkImageConfig(t, p, image, rel)

	// The compilation cache lives in a volume, so the runtimes compile once
	// for all the containers below (a volume starts as a copy of the image's
	// /cache, owned by the image's user).
	volume := randomName("capsule-test-cache-")
	p.do(t, "volume", "create", volume)
	t.Cleanup(func() { exec.Command(p.path, p.args("volume", "rm", "-f", volume)...).Run() })
	cache := volume + ":/cache"

	t.Run("doctor", func(t *testing.T) { checkDoctorInContainers(t, p, image, cache, r) })
	t.Run("stdio", func(t *testing.T) {
		call := mcpClient(t)
		env := map[string]string{"PATH": os.Getenv("PATH"), "HOME": os.Getenv("HOME")}
		// README's one-liner as it is written, with the options README
		// says this host needs (TestREADMEPodmanOptions), the test's
		// volume and the archive it built.
		args := p.args("run", readmeOneLiner(t, cache, r.artefact[rel.imageFileName()])...)
		rep := call(t, map[string]any{"command": p.path, "args": args, "env": env})
		t.Logf("podman run -i --rm --network none oci-archive:..., cache filled: initialize answered after %.0f ms, Python after %.0f ms, JavaScript after %.0f ms",
			rep.MS["initialize"], rep.MS["python"], rep.MS["javascript"])
	})
	t.Run("http", func(t *testing.T) { checkHTTP(t, p, image, cache) })
}

// readmeOneLiner returns the options of README's podman one-liner after
// "podman run", with its volume replaced by volume and its archive by
// archive.
func readmeOneLiner(t *testing.T, volume, archive string) []string {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	line := regexp.MustCompile(`(?m)^podman run -i .*oci-archive:\S+$`).FindString(string(b))
	if line == "" {
		t.Fatal("README.md has no line 'podman run -i ... oci-archive:...'")
	}
	var args []string
	for _, f := range strings.Fields(line)[2:] {
		switch {
		case strings.HasSuffix(f, ":/cache"):
			f = volume
		case strings.HasPrefix(f, "oci-archive:"):
			f = "oci-archive:" + archive
		}
		args = append(args, f)
	}
	return args
}

// TestREADMEPodmanOptions: every option newPodman adds for a host that
// needs it (runc on a hybrid cgroup hierarchy, limits a root podman
// without CAP_SYS_RESOURCE can set) is the one README tells users to add,
// so that the image test runs README's one-liner with nothing a user
// would not know to add. It needs no podman.
func TestREADMEPodmanOptions(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"`--runtime runc` before `run`",
		"apt-get install runc",
		"`--ulimit nofile=$(ulimit -n):$(ulimit -Hn) --ulimit nproc=4096:4096`",
		"cgroups in hybrid mode not supported",
		"setrlimit `RLIMIT_NOFILE`: Operation not",
	} {
		if !strings.Contains(string(b), want) {
			t.Errorf("README.md does not say %q", want)
		}
	}
	line := strings.Join(readmeOneLiner(t, "VOLUME", "ARCHIVE"), " ")
	if line != "-i --rm --network none -v VOLUME oci-archive:ARCHIVE" {
		t.Errorf("README's one-liner is now %q: check what the image test runs", line)
	}
}

// checkImageConfig: non-root, /capsule serve, the labels, and the digest
// the archive's index names.
func checkImageConfig(t *testing.T, p *podman, image string, rel *release) {
	var inspected []struct {
		Digest string
		Config struct {
			User       string
			Entrypoint []string
			Cmd        []string
			Labels     map[string]string
		}
	}
	if err := json.Unmarshal([]byte(p.do(t, "image", "inspect", image)), &inspected); err != nil || len(inspected) != 1 {
		t.Fatalf("podman image inspect: %v", err)
	}
	img, err := rel.image()
	if err != nil {
		t.Fatal(err)
	}
	_, digest, err := img.Archive()
	if err != nil {
		t.Fatal(err)
	}
	got := inspected[0]
	if got.Digest != digest {
		t.Errorf("podman has digest %s, the archive %s", got.Digest, digest)
	}
	if got.Config.User != "65532:65532" || strings.Join(got.Config.Entrypoint, " ") != "/capsule" || strings.Join(got.Config.Cmd, " ") != "serve" {
		t.Errorf("user %q entrypoint %q cmd %q", got.Config.User, got.Config.Entrypoint, got.Config.Cmd)
	}
	for k, v := range map[string]string{"version": rel.Version, "source": sourceURL, "licenses": licence, "revision": rel.Commit} {
		if got.Config.Labels["org.opencontainers.image."+k] != v {
			t.Errorf("label org.opencontainers.image.%s = %q, want %q", k, got.Config.Labels["org.opencontainers.image."+k], v)
		}
	}
}

// doctorReport is `capsule doctor --json`.
type doctorReport map[string]struct {
	Active bool
	Reason string
}

func parseDoctor(t *testing.T, out string) doctorReport {
	t.Helper()
	var d doctorReport
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		t.Fatalf("capsule doctor --json: %v\n%s", err, out)
	}
	return d
}

// containerLayers reads the table of docs/deploy.md that says, per layer,
// whether it holds in a default podman container and under Docker's
// default seccomp profile: layer → [podman, docker] → "active" or
// "unavailable".
func containerLayers(t *testing.T) map[string][2]string {
	doc, err := os.ReadFile(deployDoc)
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| `([a-z_]+)` \\| (active|unavailable)\\b[^|]*\\| (active|unavailable)\\b[^|]*\\|")
	_, table, ok := strings.Cut(string(doc), "<!-- container layers: checked by cmd/capsule-release/image_e2e_test.go -->")
	if !ok {
		t.Fatalf("%s has no container layer table", deployDoc)
	}
	table, _, _ = strings.Cut(table, "\n\n")
	layers := map[string][2]string{}
	for _, m := range row.FindAllStringSubmatch(table, -1) {
		layers[m[1]] = [2]string{m[2], m[3]}
	}
	if len(layers) < 7 {
		t.Fatalf("%s: container layer table has %d rows: %v", deployDoc, len(layers), layers)
	}
	return layers
}

// dockerSeccompProfile writes podman's default seccomp profile with
// Docker's rules for creating namespaces, which Kubernetes' RuntimeDefault
// (containerd, CRI-O) shares, for a process without CAP_SYS_ADMIN: clone
// only without namespace flags, clone3 ENOSYS (so that libraries fall back
// to clone), unshare EPERM. podman's own default allows all three.
func dockerSeccompProfile(t *testing.T) string {
	const podmanDefault = "/usr/share/containers/seccomp.json"
	b, err := os.ReadFile(podmanDefault)
	if err != nil {
		t.Fatalf("podman's default seccomp profile: %v", err)
	}
	var profile map[string]any
	if err := json.Unmarshal(b, &profile); err != nil {
		t.Fatal(err)
	}
	restricted := map[string]bool{"clone": true, "clone3": true, "unshare": true}
	var rules []any
	for _, r := range profile["syscalls"].([]any) {
		rule := r.(map[string]any)
		var names []any
		for _, n := range rule["names"].([]any) {
			if !restricted[n.(string)] {
				names = append(names, n)
			}
		}
		if len(names) > 0 {
			rule["names"] = names
			rules = append(rules, rule)
		}
	}
	const namespaceFlags = unix.CLONE_NEWNS | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC | unix.CLONE_NEWUSER |
		unix.CLONE_NEWPID | unix.CLONE_NEWNET | unix.CLONE_NEWCGROUP
	rules = append(rules,
		map[string]any{"names": []string{"clone"}, "action": "SCMP_ACT_ALLOW",
			"args": []any{map[string]any{"index": 0, "value": namespaceFlags, "valueTwo": 0, "op": "SCMP_CMP_MASKED_EQ"}}},
		map[string]any{"names": []string{"clone3"}, "action": "SCMP_ACT_ERRNO", "errnoRet": int(unix.ENOSYS)},
		map[string]any{"names": []string{"unshare"}, "action": "SCMP_ACT_ERRNO", "errnoRet": int(unix.EPERM)})
	profile["syscalls"] = rules
	out, _ := json.Marshal(profile)
	p := filepath.Join(t.TempDir(), "docker-namespace-rules.json")
	if err := os.WriteFile(p, out, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// checkDoctorInContainers compares `capsule doctor` in containers with
// docs/deploy.md. A layer the table calls active must be active in the
// container exactly when it is on this machine outside (a kernel without
// Landlock has none in a container either); one it calls unavailable must
// be unavailable. Both runtimes must run in every container.
func checkDoctorInContainers(t *testing.T, p *podman, image, cache string, r *builtRelease) {
	cmd := exec.Command(r.bins[runtime.GOARCH], "doctor", "--json")
	cmd.Env = append(os.Environ(), "XDG_CACHE_HOME="+t.TempDir())
	out, _ := cmd.Output()
	host := parseDoctor(t, string(out))
	table := containerLayers(t)
	configs := []struct {
		name   string
		column int // of the table; -1: every layer as on the host
		opts   []string
	}{
		{"podman run (default)", 0, nil},
		{"Docker's default seccomp rules", 1, []string{"--security-opt", "seccomp=" + dockerSeccompProfile(t)}},
		{"--security-opt seccomp=unconfined", -1, []string{"--security-opt", "seccomp=unconfined"}},
	}
	for _, c := range configs {
		t.Run(c.name, func(t *testing.T) {
			args := append(append([]string{"--rm", "-v", cache}, c.opts...), image, "doctor", "--json")
			got := parseDoctor(t, p.do(t, "run", args...))
			for layer, states := range table {
				want := host[layer].Active
				if c.column >= 0 && states[c.column] == "unavailable" {
					want = false
				}
				if got[layer].Active != want {
					t.Errorf("%s: active %v, want %v (docs/deploy.md: %v; outside: %v): %s",
						layer, got[layer].Active, want, states, host[layer].Active, got[layer].Reason)
				}
			}
			for _, lang := range []string{"python", "javascript", "assets"} {
				if !got[lang].Active {
					t.Errorf("%s: %s", lang, got[lang].Reason)
				}
			}
		})
	}
}

// checkHTTP serves MCP over HTTP from a container with a token and calls
// a tool through a published port; without the token the server says 401.
func checkHTTP(t *testing.T, p *podman, image, cache string) {
	token := randomName("token-")
	name := randomName("capsule-test-http-")
	p.do(t, "run", "-d", "--rm", "--name", name, "-v", cache, "-p", "127.0.0.1::8080",
		"-e", "CAPSULE_AUTH_TOKEN="+token, image, "serve", "--http", "0.0.0.0:8080")
	t.Cleanup(func() { exec.Command(p.path, p.args("rm", "-f", "-t", "0", name)...).Run() })
	addr := strings.TrimSpace(p.do(t, "port", name, "8080"))
	base := "http://" + addr
	deadline := time.Now().Add(3 * time.Minute)
	for {
		resp, err := http.Get(base + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			logs, _ := exec.Command(p.path, p.args("logs", name)...).CombinedOutput()
			t.Fatalf("%s/readyz did not answer 200 in 3 minutes (%v):\n%s", base, err, logs)
		}
		time.Sleep(200 * time.Millisecond)
	}
	req, _ := http.NewRequest(http.MethodPost, base+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	req.Header.Set("Content-Type", "application/json")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a request without the token: %v %v, want 401", resp.Status, err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := client.NewStreamableHttpClient(base+"/mcp", transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "capsule-image-test", Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatalf("initialize: %v", err)
	}
	req2 := mcp.CallToolRequest{}
	req2.Params.Name = "execute_python"
	req2.Params.Arguments = map[string]any{"code": "print('over HTTP')\n6 * 7"}
	res, err := c.CallTool(ctx, req2)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(res.StructuredContent)
	if res.IsError || !strings.Contains(string(b), `"result":42`) || !strings.Contains(string(b), `"stdout":"over HTTP\n"`) {
		t.Errorf("execute_python over HTTP: %s", b)
	}
}
