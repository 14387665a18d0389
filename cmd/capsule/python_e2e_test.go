package main

import (
	"archive/zip"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

const seedPython = `revenue = [12400, 15800, 14200, 18900, 21000, 19500]
growth = [b - a for a, b in zip(revenue, revenue[1:])]
best = max(range(len(growth)), key=lambda i: growth[i])
{"average": round(sum(revenue) / len(revenue), 2), "best_growth_month": best + 2, "growth": growth[best]}
`

func TestPythonEndToEnd(t *testing.T) {
	s := startServer(t, "--timeout", "3s", "--memory", "128MiB", "--scratch", "2MiB")
	cases := []expectation{
		{name: "seed example", code: seedPython,
			result: `{"average":16966.67,"best_growth_month":4,"growth":4700}`},
		{name: "print plus expression", code: "print('hello')\n6 * 7",
			stdoutExact: ptr("hello\n"), result: "42", text: "hello"},
		{name: "statement only", code: "x = 1 + 1", result: "null", stdoutExact: ptr("")},
		{name: "last expression None", code: "print('a')\nNone", result: "null", typ: "NoneType", repr: "None", stdoutExact: ptr("a\n")},
		{name: "unicode", code: "s = 'héllo wörld ✓ 日本'\nprint(s)\ns.upper()",
			stdout: "héllo wörld ✓ 日本", result: `"HÉLLO WÖRLD ✓ 日本"`},
		{name: "repr result", code: "class P:\n    def __repr__(self): return 'P()'\nP()", result: "null", typ: "P", repr: "P()", text: "[result]\nP()"},
		{name: "a set is its repr, not a string", code: "{1, 2}", result: "null", typ: "set", repr: "{1, 2}", text: "[result]\n{1, 2}"},
		{name: "syntax error", code: "def f(:\n  pass", isError: true, errType: "SyntaxError",
			traceContains: "def f(:"},
		{name: "exception with traceback", code: "def f(x):\n    return 1 / x\n\nprint('before')\nf(0)",
			isError: true, errType: "ZeroDivisionError", errContains: "division by zero",
			traceContains: "return 1 / x", stdout: "before"},
		{name: "traceback hides bootstrap", code: "raise ValueError('boom')", isError: true,
			errType: "ValueError", errContains: "boom", traceContains: "Traceback"},
		{name: "stderr", code: "import sys\nprint('oops', file=sys.stderr)", stderr: "oops\n", text: "[stderr]"},
		{name: "sys.exit is a normal end", code: "import sys\nprint('bye')\nsys.exit(0)", stdout: "bye"},
		{name: "sys.exit code", code: "import sys\nsys.exit(3)", text: "exit code 3"},
		{name: "open /etc/passwd fails", code: "open('/etc/passwd').read()", isError: true},
		{name: "socket connect fails", code: "import socket\nsocket.create_connection(('127.0.0.1', 80), timeout=1)",
			isError: true},
		{name: "pandas is absent", code: "import pandas", isError: true, errType: "ModuleNotFoundError",
			errContains: "pandas"},
		{name: "time.sleep sleeps", code: "import time\nt = time.monotonic()\ntime.sleep(0.2)\nround(time.monotonic() - t, 1) >= 0.2",
			result: "true", minDuration: 200 * time.Millisecond},
		{name: "asyncio sleep and gather", code: `import asyncio
async def job(n):
    await asyncio.sleep(0.05 * n)
    return n * 10
async def main():
    a = await asyncio.gather(job(1), job(2), job(3))
    b = await asyncio.wait_for(job(1), timeout=2)
    return a + [b]
asyncio.run(main())`, result: "[10,20,30,10]"},
		{name: "sqlite3 in memory", code: "import sqlite3\ndb = sqlite3.connect(':memory:')\ndb.execute('create table t(x)')\ndb.executemany('insert into t values (?)', [(1,), (2,), (3,)])\ndb.execute('select sum(x) from t').fetchone()[0]",
			result: "6"},
		{name: "zlib json decimal datetime", code: "import zlib, json, decimal, datetime\n[len(zlib.compress(b'a'*1000)) < 100, json.loads('[1]'), str(decimal.Decimal('0.1') + decimal.Decimal('0.2')), datetime.date(2024, 2, 29).isoformat()]",
			result: `[true,[1],"0.3","2024-02-29"]`},
		{name: "scratch directory round trip", code: "import csv, os, tempfile\nwith open('t.csv', 'w', newline='') as f:\n    csv.writer(f).writerows([[1, 'a'], [2, 'b']])\nwith tempfile.NamedTemporaryFile(dir='/tmp') as t:\n    pass\n[os.getcwd(), tempfile.gettempdir(), list(csv.reader(open('/tmp/t.csv')))]",
			result: `["/tmp","/tmp",[["1","a"],["2","b"]]]`},
		{name: "full scratch directory names the limit", code: "open('/tmp/big', 'wb').write(bytes(3 << 20))",
			isError: true, limit: "scratch", errContains: "scratch: limit of 2MiB reached"},
		{name: "the standard library is read-only", code: "f = open('/usr/local/lib/python3.11/os.py', 'a')\nf.write('x')\nf.flush()",
			isError: true, errContains: "Bad file descriptor"},
		{name: "lzma bz2 zoneinfo", code: "import lzma, bz2, zoneinfo, datetime\nd = datetime.datetime(2024, 7, 1, 12, tzinfo=zoneinfo.ZoneInfo('America/New_York'))\n[lzma.decompress(lzma.compress(b'x' * 100)) == b'x' * 100, bz2.decompress(bz2.compress(b'y' * 100)) == b'y' * 100, int(d.utcoffset().total_seconds()), 'Europe/Paris' in zoneinfo.available_timezones()]",
			result: `[true,true,-14400,true]`},
		{name: "threads are refused plainly", code: "import threading\nthreading.Thread(target=print).start()",
			isError: true, errContains: "thread"},
		{name: "infinite loop hits the timeout", code: "print('start')\nwhile True:\n    pass",
			isError: true, limit: "timeout", errContains: "timeout: execution exceeded 3s", stdout: "start"},
		{name: "memory bomb hits the memory limit", code: "a = []\nwhile True:\n    a.append(bytearray(1 << 20))",
			isError: true, limit: "memory", errContains: "128MiB"},
		{name: "print flood is truncated", code: "for i in range(3000):\n    print('x' * 1000)\n'done'",
			isError: true, limit: "output", truncated: true, result: `"done"`, text: "truncated"},
	}
	for _, e := range cases {
		t.Run(e.name, func(t *testing.T) {
			res, st := s.call(t, "execute_python", e.code)
			check(t, res, st, e)
		})
	}
}

func TestStateless(t *testing.T) {
	s := startServer(t)
	for _, c := range []struct {
		name, tool, define, use, errType, errContains string
	}{
		{"python globals", "execute_python", "secret_name = 42\nsecret_name", "secret_name", "NameError", "secret_name"},
		{"python files", "execute_python", "open('/tmp/secret_file', 'w').write('xy') * 21", "open('/tmp/secret_file').read()",
			"FileNotFoundError", "/tmp/secret_file"},
		{"javascript globals", "execute_javascript", "globalThis.secretName = 42; secretName", "secretName", "ReferenceError", "secretName"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, st := s.call(t, c.tool, c.define)
			if string(st.Result) != "42" {
				t.Fatalf("first call result %s", st.Result)
			}
			res, st := s.call(t, c.tool, c.use)
			check(t, res, st, expectation{isError: true, errType: c.errType, errContains: c.errContains})
		})
	}
}

func TestConcurrent(t *testing.T) {
	s := startServer(t)
	for _, c := range []struct {
		tool, format string
		n            int
	}{
		{"execute_python", "print(%d)\n%d * 2", 8},
		{"execute_javascript", "console.log(%d); %d * 2", 16},
	} {
		t.Run(c.tool, func(t *testing.T) {
			var wg sync.WaitGroup
			for i := 0; i < c.n; i++ {
				wg.Add(1)
				go func(i int) {
					defer wg.Done()
					res, st := s.call(t, c.tool, fmt.Sprintf(c.format, i, i))
					check(t, res, st, expectation{stdoutExact: ptr(fmt.Sprintf("%d\n", i)), result: fmt.Sprint(i * 2)})
				}(i)
			}
			wg.Wait()
		})
	}
}

func TestBadArguments(t *testing.T) {
	s := startServer(t)
	cases := []struct {
		name string
		args any
		want string
	}{
		{"missing code", map[string]any{}, "missing required argument \"code\""},
		{"code not a string", map[string]any{"code": 12}, "must be a string"},
		{"unknown argument", map[string]any{"code": "1", "extra": true}, "unknown argument"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, _ := s.callArgs(t, "execute_python", c.args)
			if !res.IsError || !strings.Contains(text(res), c.want) {
				t.Fatalf("isError=%v text=%q, want an error containing %q", res.IsError, text(res), c.want)
			}
		})
	}
	// The server keeps serving.
	_, st := s.call(t, "execute_python", "1 + 1")
	if string(st.Result) != "2" {
		t.Fatalf("after bad arguments: result %s", st.Result)
	}
}

func TestCodeSizeLimit(t *testing.T) {
	s := startServer(t, "--max-code", "1KiB")
	res, st := s.call(t, "execute_python", "x = 1\n"+strings.Repeat("#", 2048))
	check(t, res, st, expectation{isError: true, limit: "code_size", errContains: "over the limit of 1024"})
}

// writePackage writes a small pure-Python package, and a module next to
// it, under dir.
func writePackage(t *testing.T, dir string) {
	t.Helper()
	for name, body := range map[string]string{
		"greet/__init__.py":            "from .words import hello\n",
		"greet/words.py":               "def hello(name):\n    return 'hello, ' + name\n",
		"tally.py":                     "def total(xs):\n    return sum(xs)\n",
		"greet-1.0.dist-info/METADATA": "Name: greet\n",
	} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestPythonPath builds a package as a directory and, by the README's
// recipe, as a zip, and imports it through --python-path.
func TestPythonPath(t *testing.T) {
	dir := t.TempDir()
	// Served as root, workers read the packages as host uid 65534: the
	// operator's directory must be readable by it, as the README says.
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	tree := filepath.Join(dir, "pkgs")
	writePackage(t, tree)
	zipPath := filepath.Join(dir, "packages.zip")
	zipCmd := exec.Command("python3", "-m", "zipfile", "-c", zipPath, ".")
	zipCmd.Dir = tree
	if out, err := zipCmd.CombinedOutput(); err != nil {
		t.Fatalf("zipping the package: %v\n%s", err, out)
	}
	for _, path := range []string{tree, zipPath} {
		t.Run(filepath.Base(path), func(t *testing.T) {
			s := startServer(t, "--python-path", path)
			tools, err := s.c.ListTools(context.Background(), mcp.ListToolsRequest{})
			if err != nil {
				t.Fatal(err)
			}
			for _, tool := range tools.Tools {
				if tool.Name == "execute_python" && !strings.Contains(tool.Description, "Extra packages, importable: greet, tally.") {
					t.Errorf("description does not list the packages: %s", tool.Description)
				}
			}
			res, st := s.call(t, "execute_python", "import greet, tally\n[greet.hello('capsule'), tally.total([1, 2]), greet.__file__]")
			check(t, res, st, expectation{result: `["hello, capsule",3,"/usr/local/lib/python3.11/site-packages/greet/__init__.py"]`})
			res, st = s.call(t, "execute_python", "f = open('/usr/local/lib/python3.11/site-packages/tally.py', 'a')\nf.write('x')\nf.flush()")
			check(t, res, st, expectation{isError: true})
		})
	}
}

// readableTempDir is a temporary directory that the workers' host uid
// (65534 when served as root) may enter, as the packages must be.
func readableTempDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// writeZip writes a zip archive of the given entries, in order, names as
// they are (a hostile archive's included).
func writeZip(t *testing.T, path string, entries [][2]string) {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, e := range entries {
		w, err := zw.Create(e[0])
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte(e[1]))
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestPythonPathRefused checks that capsule will not start with a python
// path that cannot work, or that would let a guest out of it (W6), and
// that it exits with the usage status, as documented for every
// configuration that cannot work (W7).
func TestPythonPathRefused(t *testing.T) {
	dir := readableTempDir(t)
	newTree := func(name string) string {
		tree := filepath.Join(dir, name)
		writePackage(t, tree)
		return tree
	}
	so := newTree("so")
	if err := os.WriteFile(filepath.Join(so, "greet", "_speedups.cpython-311-x86_64-linux-gnu.so"), []byte("\x7fELF"), 0o644); err != nil {
		t.Fatal(err)
	}
	linkOut := newTree("link-out")
	if err := os.Symlink("/etc/passwd", filepath.Join(linkOut, "greet", "passwd.py")); err != nil {
		t.Fatal(err)
	}
	dirLinkOut := newTree("dir-link-out")
	if err := os.Symlink("/etc", filepath.Join(dirLinkOut, "etc")); err != nil {
		t.Fatal(err)
	}
	loop := newTree("loop")
	if err := os.Symlink("..", filepath.Join(loop, "greet", "up")); err != nil {
		t.Fatal(err)
	}
	fifo := newTree("fifo")
	if err := syscall.Mkfifo(filepath.Join(fifo, "pipe.py"), 0o644); err != nil {
		t.Fatal(err)
	}
	zips := map[string][][2]string{
		"dotdot.zip":    {{"ok.py", "x = 1"}, {"../evil.py", "x = 2"}},
		"absolute.zip":  {{"/abs.py", "x = 1"}},
		"duplicate.zip": {{"dup.py", "x = 1"}, {"dup.py", "x = 2"}},
		"file-dir.zip":  {{"pkg", "x = 1"}, {"pkg/mod.py", "x = 2"}},
	}
	for name, entries := range zips {
		writeZip(t, filepath.Join(dir, name), entries)
	}
	cases := []struct{ path, want string }{
		{so, "compiled extension (greet/_speedups.cpython-311-x86_64-linux-gnu.so)"},
		{filepath.Join(dir, "missing"), "no such file or directory"},
		{filepath.Join(so, "tally.py"), "not a usable directory or zip archive"},
		{linkOut, "greet/passwd.py is a link that leads out of the directory"},
		{dirLinkOut, "etc is a link that leads out of the directory"},
		{loop, "a link loop"},
		{fifo, "pipe.py is not a regular file"},
		{filepath.Join(dir, "dotdot.zip"), `invalid path "../evil.py"`},
		{filepath.Join(dir, "absolute.zip"), `invalid path "/abs.py"`},
		{filepath.Join(dir, "duplicate.zip"), `holds "dup.py" twice`},
		{filepath.Join(dir, "file-dir.zip"), `holds "pkg" both as a file and as a directory`},
	}
	if os.Geteuid() == 0 {
		// Served as root, workers read the packages as host uid 65534.
		rootOnly := newTree("root-only")
		if err := os.Chmod(filepath.Join(rootOnly, "tally.py"), 0o600); err != nil {
			t.Fatal(err)
		}
		cases = append(cases, struct{ path, want string }{rootOnly, "tally.py is not readable by the workers' host uid 65534"})
	}
	for _, c := range cases {
		t.Run(filepath.Base(c.path), func(t *testing.T) {
			for _, args := range [][]string{{"exec", "python", "-c", "1"}, {"serve"}} {
				cmd := exec.Command(capsuleBin, append(args, "--python-path", c.path)...)
				cmd.Env = serverEnv()
				out, err := cmd.CombinedOutput()
				var exit *exec.ExitError
				if !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(string(out), c.want) {
					t.Errorf("capsule %s --python-path %s: err %v, output %q; want exit status 2 with %q", args[0], c.path, err, out, c.want)
				}
			}
		})
	}
}

// TestPythonPathLinksInside: a link that stays inside the package
// directory is followed, and what passed the start-up check imports in
// every call.
func TestPythonPathLinksInside(t *testing.T) {
	dir := readableTempDir(t)
	tree := filepath.Join(dir, "pkgs")
	writePackage(t, tree)
	if err := os.Symlink("tally.py", filepath.Join(tree, "alias.py")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("greet", filepath.Join(tree, "salute")); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, "--python-path", tree)
	for range 3 {
		res, st := s.call(t, "execute_python", "import alias, salute.words\n[alias.total([2, 3]), salute.words.hello('x')]")
		check(t, res, st, expectation{result: `[5,"hello, x"]`})
	}
}
