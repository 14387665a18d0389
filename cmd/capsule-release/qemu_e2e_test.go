package main

// The arm64 release binary, run on an amd64 machine by Debian's
// qemu-user-static: `version`, `doctor`, and code in both runtimes. A
// worker is the binary started again (/proc/self/exe), so the kernel must
// hand arm64 binaries to qemu itself: binfmt_misc, which the test sets up
// as the qemu-user-static package's own entry when it runs as root.
//
// qemu-user translates system calls rather than emulating a kernel, so the
// lockdown layers it cannot pass on (seccomp filters, Landlock, clone with
// namespace flags) are reported unavailable by the binary's own probes and
// the workers run without them; the test checks that this is said, and
// that the layers qemu does pass on (no_new_privs, rlimits) are active.

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

const (
	binfmtDir   = "/proc/sys/fs/binfmt_misc"
	binfmtEntry = binfmtDir + "/qemu-aarch64"
	// binfmtConf is qemu-user-static's registration line for arm64.
	binfmtConf = "/usr/lib/binfmt.d/qemu-aarch64.conf"
)

// ensureBinfmt makes the kernel run arm64 binaries with qemu, or skips.
func ensureBinfmt(t *testing.T) {
	if b, err := os.ReadFile(binfmtEntry); err == nil {
		if strings.HasPrefix(string(b), "enabled") {
			return
		}
		if os.Geteuid() == 0 && os.WriteFile(binfmtEntry, []byte("1"), 0) == nil {
			return
		}
		t.Skipf("%s is disabled and cannot be enabled here: the workers of an arm64 binary cannot start", binfmtEntry)
	}
	if os.Geteuid() != 0 {
		t.Skipf("no %s and the test is not root: register qemu-user-static's entry (update-binfmts --enable qemu-aarch64) to run the arm64 workers", binfmtEntry)
	}
	if _, err := os.Stat(binfmtDir + "/register"); err != nil {
		if err := unix.Mount("binfmt_misc", binfmtDir, "binfmt_misc", 0, ""); err != nil {
			t.Skipf("binfmt_misc is not mounted and cannot be (%v): the workers of an arm64 binary cannot start", err)
		}
	}
	conf, err := os.ReadFile(binfmtConf)
	if err != nil {
		t.Skipf("qemu-user-static installed no %s (%v)", binfmtConf, err)
	}
	if err := os.WriteFile(binfmtDir+"/register", []byte(strings.TrimSpace(string(conf))), 0); err != nil {
		t.Skipf("registering %s with binfmt_misc: %v", binfmtConf, err)
	}
	t.Logf("registered qemu-user-static's arm64 entry with binfmt_misc (%s)", binfmtEntry)
}

// TestArm64UnderQEMU runs the arm64 release binary under qemu-user.
func TestArm64UnderQEMU(t *testing.T) {
	r := testRelease(t)
	if runtime.GOARCH == "arm64" {
		t.Skip("this machine is arm64: every other test runs the arm64 binary natively")
	}
	qemu := needTool(t, "qemu-aarch64-static", "qemu-user-static")
	bin := r.bins["arm64"]
	env := append(os.Environ(), "XDG_CACHE_HOME="+t.TempDir())
	capsule := func(t *testing.T, args ...string) (string, int) {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Env = env
		out, err := cmd.Output()
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return string(out) + string(exit.Stderr), exit.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return string(out), 0
	}

	if out := run(t, "", env, qemu, bin, "version"); !strings.HasPrefix(out, "capsule "+r.rels[0].Version+" ") {
		t.Fatalf("qemu-aarch64-static capsule version: %s", out)
	}
	ensureBinfmt(t)

	// exec first, from the empty cache: the snapshot worker takes the
	// module's code from the binary's arm64 image (the log says
	// code=embedded) rather than compiling it, which under emulation took
	// minutes.
	cases := []struct{ lang, code, out string }{
		{"python", "import sys, platform\nprint(sys.implementation.name, platform.machine() or 'wasm32')\nsum(range(10))", "45"},
		{"javascript", "console.log('quickjs', typeof process); 6 * 7", "42"},
	}
	for _, c := range cases {
		cmd := exec.Command(bin, "exec", c.lang, "-c", c.code)
		cmd.Env = append(env, "CAPSULE_LOG_LEVEL=info")
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), c.out) {
			t.Errorf("capsule exec %s under qemu: %v\n%s", c.lang, err, out)
		}
		if !strings.Contains(string(out), "language="+c.lang+" code=embedded") {
			t.Errorf("capsule exec %s under qemu did not load the binary's compiled image (no code=embedded in its log):\n%s", c.lang, out)
		}
	}
	out, status := capsule(t, "doctor", "--json")
	var doc doctorReport
	if err := json.Unmarshal([]byte(out), &doc); err != nil || status != 0 {
		t.Fatalf("capsule doctor --json under qemu: status %d, %v\n%s", status, err, out)
	}
	var missing []string
	for _, layer := range []string{"seccomp", "landlock", "no_new_privs", "namespaces", "worker_host_ids", "rlimits"} {
		t.Logf("arm64 under qemu: %-16s active %-5v %s", layer, doc[layer].Active, doc[layer].Reason)
		if !doc[layer].Active {
			missing = append(missing, layer)
		}
	}
	for _, layer := range []string{"no_new_privs", "rlimits", "assets", "python", "javascript"} {
		if !doc[layer].Active {
			t.Errorf("%s is unavailable under qemu: %s", layer, doc[layer].Reason)
		}
	}

	// A layer qemu cannot pass on is missing, not silently absent:
	// --require-hardening refuses to run without it.
	if len(missing) > 0 {
		out, status := capsule(t, "exec", "javascript", "--require-hardening", "-c", "1")
		if status == 0 || !strings.Contains(out, missing[0]) {
			t.Errorf("exec --require-hardening under qemu without %v: status %d\n%s", missing, status, out)
		}
	}
}
