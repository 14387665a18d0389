package main

// End-to-end tests of issue 32's edges: limits named in the text, argument
// errors with structuredContent, the files_in count, the CLI's messages,
// and quiet short sessions.

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestLimitNamedInText: whenever an answer has a limit, its text content
// (all that many hosts show the model) has one line naming the limit, its
// size and the flag or argument that changes it, even where the guest's
// own traceback says only MemoryError or ENOSPC; capsule exec prints the
// same line.
func TestLimitNamedInText(t *testing.T) {
	s := startServer(t, "--scratch", "1MiB", "--memory", "64MiB", "--max-output", "4KiB", "--timeout", "1s", "--max-timeout", "2s",
		"--max-files-out-count", "1", "--max-files-in-count", "2")
	cases := []struct {
		tool string
		args map[string]any
		line string // the limit line's start
		also []string
	}{
		{"execute_python", map[string]any{"code": "open('big', 'wb').write(b'x' * 2_000_000)"},
			"[limit] scratch: ", []string{"1MiB", "--scratch (CAPSULE_SCRATCH)"}},
		{"execute_python", map[string]any{"code": "x = bytearray(200 * 1024 * 1024)"},
			"[limit] memory: ", []string{"64MiB", "--memory (CAPSULE_MEMORY)"}},
		{"execute_javascript", map[string]any{"code": "const a = []; for (;;) a.push(new Array(1e6).fill(1))"},
			"[limit] memory: ", []string{"64MiB", "--memory"}},
		{"execute_python", map[string]any{"code": "print('x' * 10000)"},
			"[limit] output: ", []string{"4KiB", "--max-output (CAPSULE_MAX_OUTPUT)"}},
		{"execute_javascript", map[string]any{"code": "for (;;) {}"},
			"[limit] timeout: ", []string{"1s", "timeout_seconds", "up to 2s", "--max-timeout"}},
		{"execute_javascript", map[string]any{"code": "outputs['a.txt'] = 'a'; outputs['b.txt'] = 'b'"},
			"[limit] files_out: ", []string{"1 file,", "--max-files-out-count (CAPSULE_MAX_FILES_OUT_COUNT)"}},
		{"execute_python", map[string]any{"code": "1", "files": map[string]any{"a": "1", "b": "2", "c": "3"}},
			"[limit] files_in: ", []string{"2 files", "--max-files-in-count (CAPSULE_MAX_FILES_IN_COUNT)"}},
	}
	for _, tc := range cases {
		t.Run(tc.line, func(t *testing.T) {
			res, st := s.callArgs(t, tc.tool, tc.args)
			if !res.IsError || st.Limit == nil {
				t.Fatalf("isError %v limit %v; text:\n%s", res.IsError, st.Limit, text(res))
			}
			var line string
			for _, l := range strings.Split(text(res), "\n") {
				if strings.HasPrefix(l, tc.line) {
					line = l
				}
			}
			if line == "" {
				t.Fatalf("no line starting %q in the text:\n%s", tc.line, text(res))
			}
			for _, want := range tc.also {
				if !strings.Contains(line, want) {
					t.Errorf("the limit line %q lacks %q", line, want)
				}
			}
		})
	}

	cmd := exec.Command(capsuleBin, "exec", "python", "--scratch", "1MiB", "-c", "open('big', 'wb').write(b'x' * 2_000_000)")
	cmd.Env = serverEnv()
	out, _ := cmd.CombinedOutput()
	if cmd.ProcessState.ExitCode() != exitLimit || !strings.Contains(string(out), "capsule: [limit] scratch: ") ||
		!strings.Contains(string(out), "1MiB; --scratch (CAPSULE_SCRATCH) raises it") {
		t.Errorf("exec: exit %d, output:\n%s\nwant status 3 and the scratch limit named with its flag", cmd.ProcessState.ExitCode(), out)
	}
}

// TestArgumentErrorsTypeScriptClient: refused arguments come back as tool
// errors with structuredContent, which the TypeScript SDK checks against
// the tools' output schema, and the client stays connected.
func TestArgumentErrorsTypeScriptClient(t *testing.T) {
	calls := []tsCall{
		{Name: "execute_python", Arguments: map[string]any{"code": "1", "timeout_seconds": 0}},
		{Name: "execute_python", Arguments: map[string]any{"code": "1", "timeout_seconds": 10000}},
		{Name: "execute_javascript", Arguments: map[string]any{"code": "1", "nonsense": true}},
		{Name: "execute_javascript", Arguments: map[string]any{"code": 5}},
		{Name: "execute_python", Arguments: map[string]any{"code": "1", "files": map[string]any{"../x": "y"}}},
		{Name: "execute_python", Arguments: map[string]any{"code": "1", "files": map[string]any{"x.bin": map[string]any{"base64": "%%%"}}}},
		{Name: "execute_python", Arguments: map[string]any{"code": "6 * 7"}},
	}
	wants := []string{"is 0, below the smallest timeout", "above the most a call may ask for", `unknown argument "nonsense"`,
		`"code" must be a string`, `the path contains ".."`, "not valid base64"}
	r := runTSClient(t, tsStdio(nil, noPool...), calls)
	for i, want := range wants {
		var st structured
		err := json.Unmarshal(r[i].StructuredContent, &st)
		if r[i].Error != "" || !r[i].IsError || err != nil || st.Error == nil || st.Error.Type != "ArgumentError" ||
			!strings.Contains(st.Error.Message, want) || st.Limit != nil {
			t.Errorf("call %d: %+v (%v); want an ArgumentError with %q in structuredContent", i, r[i], err, want)
		}
	}
	if last := r[len(r)-1]; last.Error != "" || last.IsError || !strings.Contains(string(last.StructuredContent), `"result":42`) {
		t.Errorf("the call after the refused ones: %+v", last)
	}
}

// TestFilesInCount: more files than --max-files-in-count (default 256)
// are refused before a worker starts, with limit files_in naming the
// flag, over MCP and in exec; more than 1,024 (which once failed as a
// WorkerError) too.
func TestFilesInCount(t *testing.T) {
	s := startServer(t, noPool...)
	many := func(n int) map[string]any {
		files := map[string]any{}
		for i := range n {
			files[fmt.Sprintf("f%05d.txt", i)] = ""
		}
		return files
	}
	for _, n := range []int{257, 1025, 5000} {
		res, st := s.callArgs(t, "execute_python", map[string]any{"code": "1", "files": many(n)})
		check(t, res, st, expectation{isError: true, limit: "files_in", errType: "FilesInLimitError",
			errContains: fmt.Sprintf("files_in: %d files are passed in, over the limit of 256 per call (--max-files-in-count)", n),
			text:        "--max-files-in-count (CAPSULE_MAX_FILES_IN_COUNT)"})
	}
	// Refused in the tool handler: no execution was even begun.
	if log := s.stderr.String(); strings.Contains(log, "execution:") {
		t.Errorf("a refused call reached a worker:\n%s", log)
	}
	res, st := s.callArgs(t, "execute_python", map[string]any{"code": "import os\nlen(os.listdir('.'))", "files": many(256)})
	check(t, res, st, expectation{result: "257"}) // and outputs/

	dir := t.TempDir()
	args := []string{"exec", "python", "--max-files-in-count", "2", "-c", "1"}
	for i := range 3 {
		p := filepath.Join(dir, fmt.Sprint(i))
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		args = append(args, "--file", p)
	}
	cmd := exec.Command(capsuleBin, args...)
	cmd.Env = serverEnv()
	out, _ := cmd.CombinedOutput()
	if cmd.ProcessState.ExitCode() != exitUsage || !strings.Contains(string(out), "3 files are given, over the limit of 2 (--max-files-in-count)") {
		t.Errorf("exec with 3 files: exit %d, output %q", cmd.ProcessState.ExitCode(), out)
	}
}

// TestCLIMessages: --version, version --help, one line and a hint for a
// bad flag (not the whole usage), and "1 file".
func TestCLIMessages(t *testing.T) {
	run := func(args ...string) (string, string, int) {
		cmd := exec.Command(capsuleBin, args...)
		cmd.Env = serverEnv()
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		var exit *exec.ExitError
		if err != nil && !errors.As(err, &exit) {
			t.Fatal(err)
		}
		return stdout.String(), stderr.String(), cmd.ProcessState.ExitCode()
	}
	for _, tc := range []struct {
		args   []string
		status int
		stdout string
		stderr string // the whole of stderr
	}{
		{[]string{"--version"}, 0, "capsule 0.", ""},
		{[]string{"version", "--help"}, 0, "Usage: capsule version [--json]", ""},
		{[]string{"serve", "--help"}, 0, "-max-files-in-count value", ""},
		{[]string{"serve", "--bogus"}, 2, "", "capsule serve: unknown flag --bogus\nRun 'capsule serve --help' for its flags.\n"},
		{[]string{"exec", "python", "--memory", "lots", "-c", "1"}, 2, "",
			"capsule exec: invalid value \"lots\" for flag -memory: invalid size \"lots\": want a whole number with an optional unit (B, KiB, MiB, GiB, KB, MB, GB)\nRun 'capsule exec --help' for its flags.\n"},
		{[]string{"doctor", "--nope"}, 2, "", "capsule doctor: unknown flag --nope\nRun 'capsule doctor --help' for its flags.\n"},
		{[]string{"version", "--nope"}, 2, "", "capsule version: unknown flag --nope\nRun 'capsule version --help' for its flags.\n"},
		{[]string{"frobnicate"}, 2, "", "capsule: unknown command \"frobnicate\": the commands are serve, exec, doctor and version\nRun 'capsule --help' for more.\n"},
		{[]string{"exec", "javascript", "-c", "outputs['a.txt'] = 'x'"}, 0, "", "capsule: the code returned 1 file; --outputs DIR writes them\n"},
	} {
		stdout, stderr, status := run(tc.args...)
		if status != tc.status || !strings.Contains(stdout, tc.stdout) || stderr != tc.stderr {
			t.Errorf("capsule %v: status %d, stdout %q, stderr %q; want %d, %q, stderr %q",
				tc.args, status, stdout, stderr, tc.status, tc.stdout, tc.stderr)
		}
	}
}

// TestShortStdioSessionIsQuiet: a stdio session that ends at once (stdin
// closed before the pools have started their workers) logs no warning
// about workers it did not start.
func TestShortStdioSessionIsQuiet(t *testing.T) {
	for i := range 5 {
		cmd := exec.Command(capsuleBin, "serve")
		cmd.Env = serverEnv()
		cmd.Stdin = strings.NewReader("")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("session %d: %v\n%s", i, err, out)
		}
		for _, line := range strings.Split(string(out), "\n") {
			if strings.Contains(line, "[WARN]") && strings.Contains(line, "pool:") {
				t.Errorf("session %d logged %q", i, line)
			}
		}
	}
}

// TestReadOnlyCache: a cache directory on a read-only file system (a
// container's read-only root, here a read-only bind mount of a filled
// cache) is not fatal: exec and serve run without a cache and warn once.
// It needs root, to mount.
func TestReadOnlyCache(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a read-only file system")
	}
	home := t.TempDir()
	fill := exec.Command(capsuleBin, "exec", "python", "-c", "1")
	fill.Env = serverEnv("XDG_CACHE_HOME=" + home)
	if out, err := fill.CombinedOutput(); err != nil {
		t.Fatalf("filling the cache: %v\n%s", err, out)
	}
	if err := syscall.Mount(home, home, "", syscall.MS_BIND, ""); err != nil {
		t.Skipf("cannot bind-mount: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(home, syscall.MNT_DETACH) })
	if err := syscall.Mount(home, home, "", syscall.MS_REMOUNT|syscall.MS_BIND|syscall.MS_RDONLY, ""); err != nil {
		t.Skipf("cannot remount read-only: %v", err)
	}
	cmd := exec.Command(capsuleBin, "exec", "python", "-c", "6 * 7")
	cmd.Env = serverEnv("XDG_CACHE_HOME=" + home)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err != nil || stdout.String() != "42\n" || strings.Count(stderr.String(), "[WARN]") != 1 ||
		!strings.Contains(stderr.String(), "the cache directory cannot be written: running without a cache") {
		t.Errorf("exec on a read-only cache: %v, stdout %q, stderr:\n%s\nwant 42 and one warning", err, stdout.String(), stderr.String())
	}
	s := startServerEnv(t, []string{"XDG_CACHE_HOME=" + home})
	res, st := s.call(t, "execute_javascript", "6 * 7")
	check(t, res, st, expectation{result: "42"})
}

// TestKilledSnapshotWorkerRetried: a snapshot worker killed during the
// first start (as the OOM killer or an operator might) no longer leaves
// the server without an interpreter snapshot until it restarts: calls go
// on, cold, and the snapshot is made again after a backoff.
func TestKilledSnapshotWorkerRetried(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir()) // an empty cache: the snapshots are made at start
	r := startRawStdio(t, append([]string{"--log-level", "debug"}, noPool...)...)
	server := r.cmd.Process.Pid
	failed := func() bool {
		return strings.Contains(r.stderr.String(), "no interpreter snapshot") && strings.Contains(r.stderr.String(), "snapshot=python")
	}
	killed := 0
	eventually(60*time.Second, func() bool {
		for _, pid := range children(server) {
			if cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); strings.Contains(string(cmdline), "worker") {
				if syscall.Kill(pid, syscall.SIGKILL) == nil {
					killed++
				}
			}
		}
		return failed() || strings.Contains(r.stderr.String(), "interpreter snapshot ready: snapshot=python")
	})
	if !failed() {
		t.Skipf("the Python snapshot worker finished before it could be killed (%d workers killed)", killed)
	}
	id := 1
	if !eventually(60*time.Second, func() bool {
		r.send(t, toolCall(id, "execute_python", "6 * 7"))
		m := r.expect(t, float64(id))
		id++
		if res, _ := m["result"].(map[string]any); res["isError"] == true {
			t.Fatalf("a call while the snapshot is missing failed: %v", m)
		}
		return strings.Contains(r.stderr.String(), "interpreter snapshot ready after failed attempts: snapshot=python")
	}) {
		t.Fatal("the Python snapshot was not made again within a minute")
	}
	t.Logf("killed %d workers; the snapshot was made again after %d calls", killed, id-1)
}
