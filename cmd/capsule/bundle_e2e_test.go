package main

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"capsule/runtimes/python/bundletest"
)

// pythonDescription is the execute_python tool's description.
func pythonDescription(t *testing.T, s *testServer) string {
	t.Helper()
	tools, err := s.c.ListTools(context.Background(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range tools.Tools {
		if tool.Name == "execute_python" {
			return tool.Description
		}
	}
	t.Fatal("no execute_python tool")
	return ""
}

// TestBundledPackagesOverMCP does every bundled package's task through the
// execute_python tool, whose description lists the packages.
func TestBundledPackagesOverMCP(t *testing.T) {
	s := startServer(t)
	desc := pythonDescription(t, s)
	for _, want := range []string{"Bundled pure-Python packages, importable by these names: attr/attrs 22.2.0, bs4 4.11.2,",
		"networkx 2.8.8", "sympy 1.11.1", "yaml 6.0."} {
		if !strings.Contains(desc, want) {
			t.Errorf("the description lacks %q:\n%s", want, desc)
		}
	}
	for _, task := range bundletest.Tasks {
		t.Run(task.Name, func(t *testing.T) {
			res, st := s.call(t, "execute_python", task.Code)
			check(t, res, st, expectation{})
			if !task.Done(st.Result) {
				t.Fatalf("result %s\nwant   %s", st.Result, task.Result)
			}
		})
	}
}

// TestBundledPackagesThroughExec does the same through `capsule exec`, the
// value printed as JSON by the code itself.
func TestBundledPackagesThroughExec(t *testing.T) {
	for _, task := range bundletest.Tasks {
		t.Run(task.Name, func(t *testing.T) {
			cmd := exec.Command(capsuleBin, "exec", "python", "-c", task.PrintingJSON())
			cmd.Env = serverEnv()
			out, err := cmd.Output()
			if err != nil {
				var exit *exec.ExitError
				if errors.As(err, &exit) {
					t.Fatalf("%v: %s", err, exit.Stderr)
				}
				t.Fatal(err)
			}
			if got := strings.TrimSpace(string(out)); !task.Done([]byte(got)) {
				t.Fatalf("printed %s\nwant    %s", got, task.Result)
			}
		})
	}
}

// TestBundledPackagesOff: --bundled-packages=false (or its variable) leaves
// only the standard library, also after a server with the bundle made its
// snapshot in the same cache.
func TestBundledPackagesOff(t *testing.T) {
	on := startServer(t)
	res, st := on.call(t, "execute_python", "import sys\nsys.path")
	check(t, res, st, expectation{result: `["/usr/local/lib/python3.11","/usr/lib/python3/dist-packages"]`})

	off := startServer(t, "--bundled-packages=false")
	if desc := pythonDescription(t, off); strings.Contains(desc, "Bundled") || strings.Contains(desc, "sympy") {
		t.Errorf("with the bundle off the description still lists it:\n%s", desc)
	}
	res, st = off.call(t, "execute_python", "import sys\nsys.path")
	check(t, res, st, expectation{result: `["/usr/local/lib/python3.11"]`})
	res, st = off.call(t, "execute_python", "import sympy")
	check(t, res, st, expectation{isError: true, errType: "ModuleNotFoundError", errContains: "sympy"})

	cmd := exec.Command(capsuleBin, "exec", "python", "-c", "import yaml")
	cmd.Env = serverEnv("CAPSULE_BUNDLED_PACKAGES=false")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(string(out), "No module named 'yaml'") {
		t.Fatalf("CAPSULE_BUNDLED_PACKAGES=false: err %v, output %q; want yaml not found", err, out)
	}
}
