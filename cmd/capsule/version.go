package main

import (
	"fmt"
	"os"
	"runtime"
	"runtime/debug"

	"capsule/runtimes/javascript"
	"capsule/runtimes/python"
	"capsule/supervisor"
)

func version(args []string) int {
	fs := newFlagSet("version", "capsule version")
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	cpython, debian := python.Versions()
	pkg, quickjs := javascript.Versions()
	fmt.Fprintf(os.Stdout, "capsule %s\n", supervisor.Version)
	fmt.Fprintf(os.Stdout, "go %s\n", runtime.Version())
	fmt.Fprintf(os.Stdout, "wazero %s\n", moduleVersion("github.com/tetratelabs/wazero"))
	fmt.Fprintf(os.Stdout, "cpython %s (Debian source package python3.11 %s, wasm32-wasi)\n", cpython, debian)
	for _, lib := range python.Libraries() {
		// Built into the Python runtime from Debian source packages.
		fmt.Fprintf(os.Stdout, "  %s (Debian source package)\n", lib)
	}
	fmt.Fprintf(os.Stdout, "quickjs-ng %s (npm @jitl/quickjs-ng-wasmfile-release-sync %s)\n", quickjs, pkg)
	return exitOK
}

func moduleVersion(path string) string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, m := range bi.Deps {
			if m.Path == path {
				return m.Version
			}
		}
	}
	return "unknown"
}
