package main

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/cpu"
)

// snapshotFiles lists the interpreter snapshots in a cache home.
func snapshotFiles(t *testing.T, home string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(home, "capsule", "*", "snapshot-*.img"))
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// TestSnapshotLifecycle starts servers on one cache directory and checks
// that each language's snapshot is made once, reused, and made again when
// it is missing, tampered with, or made for other limits; and that calls
// started from one snapshot never share random numbers.
func TestSnapshotLifecycle(t *testing.T) {
	home := t.TempDir()
	env := []string{"XDG_CACHE_HOME=" + home}
	random := map[string]string{
		"execute_python":     "import random; random.random()",
		"execute_javascript": "Math.random()",
	}
	calls := func(s *testServer) map[string]string {
		t.Helper()
		out := map[string]string{}
		for tool, code := range random {
			_, st := s.call(t, tool, code)
			if st.Error != nil || len(st.Result) == 0 {
				t.Fatalf("%s: %+v", tool, st)
			}
			out[tool] = string(st.Result)
		}
		return out
	}

	s := startServerEnv(t, env, "--log-level", "debug")
	first, second := calls(s), calls(s)
	for tool := range random {
		if first[tool] == second[tool] {
			t.Errorf("%s: two calls from one snapshot both drew %s", tool, first[tool])
		}
	}
	s.c.Close()
	s.cmd.Wait()
	files := snapshotFiles(t, home)
	if len(files) != 2 {
		var all []string
		filepath.Walk(home, func(p string, _ os.FileInfo, _ error) error { all = append(all, p); return nil })
		t.Fatalf("snapshots %v, want one per language; the cache holds %v", files, all)
	}
	if !strings.Contains(s.stderr.String(), "made=true") {
		t.Errorf("the first server did not make its snapshots:\n%s", s.stderr.String())
	}

	// Reused as they are.
	s = startServerEnv(t, env, "--log-level", "debug")
	calls(s)
	s.c.Close()
	s.cmd.Wait()
	if log := s.stderr.String(); strings.Contains(log, "made=true") || !strings.Contains(log, "made=false") {
		t.Errorf("a server with a filled cache made its snapshots again:\n%s", log)
	}

	// Tampered with: a byte of the image changes; missing: one is deleted.
	tampered, deleted := files[0], files[1]
	f, err := os.OpenFile(tampered, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 1)
	const off = 64<<10 + 70000 // in the memory image, past the header
	if _, err := f.ReadAt(b, off); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0x5a
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := os.Remove(deleted); err != nil {
		t.Fatal(err)
	}
	s = startServerEnv(t, env, "--log-level", "debug")
	calls(s)
	s.c.Close()
	s.cmd.Wait()
	log := s.stderr.String()
	if !strings.Contains(log, "interpreter snapshot refused") || !strings.Contains(log, "tampered") {
		t.Errorf("the tampered snapshot was not refused:\n%s", log)
	}
	if strings.Count(log, "made=true") != 2 {
		t.Errorf("want both snapshots made again (one tampered, one missing):\n%s", log)
	}
	if len(snapshotFiles(t, home)) != 2 {
		t.Errorf("snapshots %v after remaking, want 2", snapshotFiles(t, home))
	}

	// Other limits: another memory limit is another snapshot.
	s = startServerEnv(t, env, "--log-level", "debug", "--memory", "96MiB")
	calls(s)
	s.c.Close()
	s.cmd.Wait()
	if n := len(snapshotFiles(t, home)); n != 4 {
		t.Errorf("%d snapshots after a server with another memory limit, want 4", n)
	}
}

// TestColdStartSaysWhatItDoes: with an empty cache, serve says on stderr
// that it is preparing each runtime, where the cache is, and when each is
// ready, so that a first start that takes seconds is not a mystery.
func TestColdStartSaysWhatItDoes(t *testing.T) {
	home := t.TempDir()
	s := startServerEnv(t, []string{"XDG_CACHE_HOME=" + home})
	res, st := s.call(t, "execute_python", "1 + 1")
	check(t, res, st, expectation{result: "2"})
	for _, language := range []string{"python", "javascript"} {
		want := "runtime prepared: language=" + language
		if !eventually(60*time.Second, func() bool { return strings.Contains(s.stderr.String(), want) }) {
			t.Errorf("stderr lacks %q:\n%s", want, s.stderr.String())
		}
		if !strings.Contains(s.stderr.String(), "preparing the runtime: loading its compiled code (compiling it where the binary has none this CPU runs) and starting its interpreter, once per binary; later starts reuse the cache: language="+language+" cache="+home) {
			t.Errorf("stderr does not say that it prepares %s, nor where the cache is:\n%s", language, s.stderr.String())
		}
	}
}

// TestColdStartCode: with an empty cache, each runtime's snapshot worker
// loads the module from the binary's compiled image and compiles nothing,
// where the binary has one (linux/amd64) and the CPU runs it; forced to
// compile (as on a CPU that cannot), it compiles, and the runtimes answer
// the same. The server logs which it did, once per module (numpy's too).
func TestColdStartCode(t *testing.T) {
	embedded := runtime.GOOS == "linux" && runtime.GOARCH == "amd64" &&
		// wazero's baseline CPU features, as x/sys/cpu reports them.
		cpu.X86.HasSSE41 && cpu.X86.HasBMI1 && cpu.X86.HasBMI2 && cpu.X86.HasPOPCNT
	for _, tc := range []struct {
		name string
		env  []string
		want string
	}{
		{"as built", nil, map[bool]string{true: "embedded", false: "compiled"}[embedded]},
		{"forced to compile", []string{"CAPSULE_TEST_COMPILE_AT_START=1"}, "compiled"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startServerEnv(t, append([]string{"XDG_CACHE_HOME=" + t.TempDir()}, tc.env...))
			res, st := s.call(t, "execute_python", "6 * 7")
			check(t, res, st, expectation{result: "42"})
			res, st = s.call(t, "execute_javascript", "6 * 7")
			check(t, res, st, expectation{result: "42"})
			// The numpy variant's own module, made on its first call.
			res, st = s.call(t, "execute_python", "import numpy\nint(numpy.int64(6) * 7)")
			check(t, res, st, expectation{result: "42"})
			for _, language := range []string{"python", "javascript", "python module=python-numpy"} {
				want := "language=" + language + " code=" + tc.want
				if !eventually(60*time.Second, func() bool { return strings.Contains(s.stderr.String(), want) }) {
					t.Errorf("stderr lacks %q:\n%s", want, s.stderr.String())
				}
			}
		})
	}
}
