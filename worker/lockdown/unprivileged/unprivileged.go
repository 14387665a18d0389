//go:build linux

// Package unprivileged lets a package's tests, when run as root, run again
// as uid/gid 65534 in the same `go test`, so one run proves the hardening
// works both for a root supervisor and for one started by an ordinary user.
package unprivileged

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
)

// Env is set in the environment of the unprivileged re-run.
const Env = "CAPSULE_TEST_UNPRIVILEGED"

// ID is the uid and gid of the re-run: nobody/nogroup.
const ID = 65534

// Rerun runs every test of the calling test binary except the one calling
// it (named by self, e.g. "TestUnprivileged") as uid/gid ID. It skips when
// this already is the re-run, or when not running as root.
func Rerun(t *testing.T, self string) {
	t.Helper()
	if os.Getenv(Env) != "" {
		t.Skip("this is the unprivileged re-run")
	}
	if os.Geteuid() != 0 {
		t.Skip("not root: the suite already runs unprivileged")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// go test's build directory is private to root: copy the binary where
	// ID can execute it.
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
	args := []string{"-test.count=1", "-test.skip=^" + self + "$"}
	if testing.Verbose() {
		args = append(args, "-test.v")
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), Env+"=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: ID, Gid: ID}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("tests as uid %d failed: %v\n%s", ID, err, out)
	}
	t.Logf("tests as uid %d:\n%s", ID, out)
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
