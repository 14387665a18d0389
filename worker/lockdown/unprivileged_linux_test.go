package lockdown

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
)

// unprivilegedEnv marks the re-run of the suite as uid 65534.
const unprivilegedEnv = "CAPSULE_TEST_UNPRIVILEGED"

// TestUnprivileged re-runs this package's tests as uid/gid 65534 when the
// suite runs as root, so that one `go test` proves both: the lockdown must
// work for a supervisor started by an ordinary user.
func TestUnprivileged(t *testing.T) {
	if os.Getenv(unprivilegedEnv) != "" {
		t.Skip("this is the unprivileged re-run")
	}
	if os.Geteuid() != 0 {
		t.Skip("not root: the suite already runs unprivileged")
	}
	runUnprivileged(t)
}

// runUnprivileged copies the test binary where uid 65534 can execute it
// (go test's build directory is private to root) and runs every other test
// there as 65534.
func runUnprivileged(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "capsule-unprivileged-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "test.bin")
	if err := copyExecutable(exe, bin); err != nil {
		t.Fatal(err)
	}
	args := []string{"-test.count=1", "-test.skip=^TestUnprivileged$"}
	if testing.Verbose() {
		args = append(args, "-test.v")
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), unprivilegedEnv+"=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("tests as uid 65534 failed: %v\n%s", err, out)
	}
	t.Logf("tests as uid 65534:\n%s", out)
}

func copyExecutable(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
