package python

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"capsule/runtimes"
	"capsule/runtimes/internal/runtimetest"
	"capsule/runtimes/python/bundletest"
)

// TestBundledPackageTasks does real work with every bundled package in the
// sandbox, and fails when a bundled module has no task.
func TestBundledPackageTasks(t *testing.T) {
	modules, err := BundledModules()
	if err != nil {
		t.Fatal(err)
	}
	covered := map[string]bool{}
	for _, task := range bundletest.Tasks {
		for _, m := range task.Modules {
			covered[m] = true
		}
		t.Run(task.Name, func(t *testing.T) {
			r := runIn(t, taskEngine(t, task.Modules), task.Code, nil)
			if r.Error != nil {
				t.Fatalf("error %s: %s\n%s", r.Error.Type, r.Error.Message, r.Error.Traceback)
			}
			if !task.Done(r.Result) {
				t.Fatalf("result %s\nwant   %s", r.Result, task.Result)
			}
		})
	}
	for _, m := range modules {
		if !covered[m] {
			t.Errorf("bundled module %s has no task in bundletest.Tasks", m)
		}
	}
}

// TestBundleOnSysPath: the bundle comes after the standard library, which it
// cannot shadow; it is read-only; its modules come with their sources, so
// tracebacks through them show their lines.
func TestBundleOnSysPath(t *testing.T) {
	cases := []struct {
		name, code, want, errType, traceback string
	}{
		{name: "after the standard library", code: "import sys, json, yaml\n[sys.path, json.__file__, yaml.__file__]",
			want: `[["/usr/local/lib/python3.11","/usr/lib/python3/dist-packages"],"/usr/local/lib/python3.11/json/__init__.py","/usr/lib/python3/dist-packages/yaml/__init__.py"]`},
		{name: "read-only", code: "f = open('/usr/lib/python3/dist-packages/six.py', 'a')\nf.write('x')\nf.flush()", errType: "OSError"},
		{name: "no new files", code: "open('/usr/lib/python3/dist-packages/evil.py', 'w')", errType: "FileNotFoundError"},
		{name: "tracebacks show the package's source", code: "import yaml\nyaml.safe_load('a: [')", errType: "yaml.parser.ParserError",
			traceback: `File "/usr/lib/python3/dist-packages/yaml/parser.py", line`},
		{name: "metadata", code: "import importlib.metadata as m\n[m.version('sympy'), m.version('networkx')]", want: `["1.11.1","2.8.8"]`},
		{name: "no compiled extensions", code: "import markupsafe, yaml\n[markupsafe.escape.__module__, yaml.__with_libyaml__]", want: `["markupsafe._native",false]`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := run(t, defaultLimit, c.code, nil)
			if c.errType == "" {
				if r.Error != nil || compact(t, r.Result) != c.want {
					t.Fatalf("result %s, error %+v; want %s", r.Result, r.Error, c.want)
				}
				return
			}
			if r.Error == nil || r.Error.Type != c.errType || !strings.Contains(r.Error.Traceback, c.traceback) {
				t.Fatalf("error %+v, want %s with a traceback containing %q", r.Error, c.errType, c.traceback)
			}
		})
	}
}

// TestBundledPackagesOff: with the bundle off, nothing of it is importable.
func TestBundledPackagesOff(t *testing.T) {
	e := sharedEngine(t, engineKey{limit: defaultLimit, bundled: false})
	r := runIn(t, e, "import sys\nprint(sys.path)\nimport sympy", nil)
	if r.Error == nil || r.Error.Type != "ModuleNotFoundError" || r.stdout != "['/usr/local/lib/python3.11']\n" {
		t.Fatalf("error %+v, stdout %q; want sympy not found and the standard library alone on sys.path", r.Error, r.stdout)
	}
	r = runIn(t, e, "import os\nos.path.exists('/usr/lib/python3/dist-packages')", nil)
	if string(r.Result) != "false" {
		t.Fatalf("the bundle's directory exists with the bundle off: %s %+v", r.Result, r.Error)
	}
}

// TestPythonPathAfterBundle: an operator's package comes after the bundle,
// so it cannot replace a bundled module either.
func TestPythonPathAfterBundle(t *testing.T) {
	path := filepath.Join(t.TempDir(), "packages.zip")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	zw := zip.NewWriter(f)
	for name, body := range map[string]string{"six.py": "SHADOW = True\n", "operator_tool.py": "VALUE = 7\n"} {
		w, err := zw.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte(body))
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	e, err := runtimetest.Restored(Compile, runtimes.Config{MemoryLimitBytes: defaultLimit, CacheDir: cacheDir,
		BundledPackages: true, PythonPath: path})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(context.Background())
	r := runIn(t, e, "import sys, six, operator_tool\n[sys.path[1:], hasattr(six, 'SHADOW'), operator_tool.VALUE]", nil)
	want := `[["/usr/lib/python3/dist-packages","/usr/local/lib/python3.11/site-packages"],false,7]`
	if r.Error != nil || compact(t, r.Result) != want {
		t.Fatalf("result %s, error %+v; want %s", r.Result, r.Error, want)
	}
}

// TestPlainCallLeavesBundleAlone: a call that imports only the standard
// library does not pay for indexing the bundle; the first bundled import
// does.
func TestPlainCallLeavesBundleAlone(t *testing.T) {
	e, err := runtimetest.Restored(Compile, runtimes.Config{MemoryLimitBytes: defaultLimit, CacheDir: cacheDir, BundledPackages: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(context.Background())
	bundle := e.(*engine).bundleFS
	r := runIn(t, e, "import json, csv, decimal, sqlite3, email.message, xml.etree.ElementTree\njson.dumps([1])", nil)
	if r.Error != nil || bundle.used.Load() {
		t.Fatalf("error %+v; bundle indexed: %v", r.Error, bundle.used.Load())
	}
	r = runIn(t, e, "import six\nsix.PY3", nil)
	if r.Error != nil || !bundle.used.Load() {
		t.Fatalf("error %+v; bundle indexed: %v", r.Error, bundle.used.Load())
	}
}

// compact is the result as the server sends it: JSON without spaces.
func compact(t *testing.T, result json.RawMessage) string {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, result); err != nil {
		t.Fatalf("result %q: %v", result, err)
	}
	return b.String()
}

// TestBundled: every package has a version, a licence and modules, and the
// versions the tool description shows are upstream's.
func TestBundled(t *testing.T) {
	pkgs, err := Bundled()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]string{}
	for _, p := range pkgs {
		names[p.Name] = p.UpstreamVersion()
		if p.Version == "" || p.Licence == "" || len(p.Modules) == 0 {
			t.Errorf("incomplete record %+v", p)
		}
	}
	for _, name := range []string{"python3-sympy", "python3-networkx", "python3-pypdf", "python3-openpyxl", "python3-six"} {
		if _, ok := names[name]; !ok {
			t.Errorf("%s is not bundled: %v", name, names)
		}
	}
	for v, want := range map[string]string{"1:2.0-3": "2.0", "5.1.0+dfsg-2": "5.1.0", "3.1.2-1+deb12u3": "3.1.2", "1.0": "1.0", "0.5.1-5": "0.5.1"} {
		if got := (BundledPackage{Version: v}).UpstreamVersion(); got != want {
			t.Errorf("UpstreamVersion(%q) = %q, want %q", v, got, want)
		}
	}
	modules, _ := BundledModules()
	if !slices.IsSorted(modules) || !slices.Contains(modules, "sympy") || slices.Contains(modules, "_yaml") {
		t.Errorf("modules %v", modules)
	}
}
