package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// A snippet is CPU-bound code that times its own compute and ends with
// the elapsed milliseconds as its last expression (Python: elapsed_ms;
// JavaScript: elapsed), so the same text runs under capsule and natively
// and process start-up is never part of the number. Python counts CPU
// time (time.process_time: capsule serves the worker's), so that the
// rows hold on a machine busy with other work; QuickJS has no CPU clock.
type snippet struct {
	name string
	tool string
	code string
}

var pythonSnippets = []snippet{
	{
		name: "int loop, 3e6 iterations",
		tool: toolPython,
		code: `import time
t0 = time.process_time()
s = 0
for i in range(3_000_000):
    s += i % 7
elapsed_ms = (time.process_time() - t0) * 1000
elapsed_ms`,
	},
	{
		name: "str/dict, 3e5 words",
		tool: toolPython,
		code: `import time
t0 = time.process_time()
counts = {}
words = []
for i in range(300_000):
    w = "w" + str(i * 7919 % 10007)
    counts[w] = counts.get(w, 0) + 1
    words.append(w.upper())
text = " ".join(words)
top = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:10]
n = len(text.split())
elapsed_ms = (time.process_time() - t0) * 1000
elapsed_ms`,
	},
	{
		// Function calls: frames, argument passing, small-int compares.
		name: "recursive fib(25), 10 times",
		tool: toolPython,
		code: `import time
def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)
t0 = time.process_time()
for _ in range(10):
    fib(25)
elapsed_ms = (time.process_time() - t0) * 1000
elapsed_ms`,
	},
	{
		// Floats: the n-body step of the Computer Language Benchmarks
		// Game (Sun and the four giant planets), in plain lists.
		name: "n-body, 5 bodies, 2e4 steps",
		tool: toolPython,
		code: `import time
def nbody(steps):
    pi = 3.141592653589793
    sm, dpy = 4 * pi * pi, 365.24
    bodies = [  # x, y, z, vx, vy, vz, mass
        [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, sm],
        [4.84143144246472090e+00, -1.16032004402742839e+00, -1.03622044471123109e-01,
         1.66007664274403694e-03 * dpy, 7.69901118419740425e-03 * dpy,
         -6.90460016972063023e-05 * dpy, 9.54791938424326609e-04 * sm],
        [8.34336671824457987e+00, 4.12479856412430479e+00, -4.03523417114321381e-01,
         -2.76742510726862411e-03 * dpy, 4.99852801234917238e-03 * dpy,
         2.30417297573763929e-05 * dpy, 2.85885980666130812e-04 * sm],
        [1.28943695621391310e+01, -1.51111514016986312e+01, -2.23307578892655734e-01,
         2.96460137564761618e-03 * dpy, 2.37847173959480950e-03 * dpy,
         -2.96589568540237556e-05 * dpy, 4.36624404335156298e-05 * sm],
        [1.53796971148509165e+01, -2.59193146099879641e+01, 1.79258772950371181e-01,
         2.68067772490389322e-03 * dpy, 1.62824170038242295e-03 * dpy,
         -9.51592254519715870e-05 * dpy, 5.15138902046611451e-05 * sm],
    ]
    pairs = [(bodies[i], bodies[j]) for i in range(5) for j in range(i + 1, 5)]
    dt = 0.01
    for _ in range(steps):
        for b1, b2 in pairs:
            dx, dy, dz = b1[0] - b2[0], b1[1] - b2[1], b1[2] - b2[2]
            d2 = dx * dx + dy * dy + dz * dz
            mag = dt / (d2 * d2 ** 0.5)
            m1, m2 = b1[6] * mag, b2[6] * mag
            b1[3] -= dx * m2; b1[4] -= dy * m2; b1[5] -= dz * m2
            b2[3] += dx * m1; b2[4] += dy * m1; b2[5] += dz * m1
        for b in bodies:
            b[0] += dt * b[3]; b[1] += dt * b[4]; b[2] += dt * b[5]
    return bodies[0][0]
t0 = time.process_time()
nbody(20_000)
elapsed_ms = (time.process_time() - t0) * 1000
elapsed_ms`,
	},
}

var jsSnippets = []snippet{
	{
		name: "int loop, 3e6 iterations",
		tool: toolJavaScript,
		code: `const t0 = performance.now();
let s = 0;
for (let i = 0; i < 3000000; i++) { s = (s + i % 7) | 0; }
const elapsed = performance.now() - t0;
elapsed`,
	},
	{
		name: "string/Map, 2e5 words",
		tool: toolJavaScript,
		code: `const t0 = performance.now();
const counts = new Map();
const words = [];
for (let i = 0; i < 200000; i++) {
  const w = "w" + (i * 7919 % 10007);
  counts.set(w, (counts.get(w) || 0) + 1);
  words.push(w.toUpperCase());
}
const text = words.join(" ");
const top = [...counts.entries()].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)).slice(0, 10);
const n = text.split(" ").length;
const elapsed = performance.now() - t0;
elapsed`,
	},
}

// computeRow is one snippet's medians, in milliseconds: under capsule
// (timed inside the snippet, and the call's duration_ms) and under each
// reference runner (timed inside the snippet; NaN when skipped).
type computeRow struct {
	snippet   snippet
	capsule   float64
	call      float64
	reference map[string]float64
}

// refDebianPython is the reference runner for the Python targets:
// Debian's own build (PGO, LTO, computed gotos), the python3.11 that
// users of this distribution run. refPython is whatever python3 is first
// on PATH, which may be a plainer build (pyenv's has no PGO or LTO).
const refDebianPython = "Debian python3.11"

// Reference runners.
const (
	refPython  = "python3"
	refQuickJS = "node + QuickJS-NG wasm"
	refNode    = "node"
)

// runCapsuleSnippet runs sn reps times through s and returns the medians
// of the in-snippet time and of duration_ms.
func runCapsuleSnippet(s *server, sn snippet, reps int) (inner, call float64, err error) {
	var ins, calls []float64
	for range reps {
		a, err := s.call(sn.tool, sn.code)
		if err != nil {
			return 0, 0, err
		}
		v, err := a.resultFloat()
		if err != nil {
			return 0, 0, fmt.Errorf("%s: %w", sn.name, err)
		}
		ins = append(ins, v)
		calls = append(calls, a.durationMS())
		time.Sleep(time.Second) // the pool replaces the worker
	}
	return median(ins), median(calls), nil
}

// runRef runs a command reps times; each prints the elapsed milliseconds
// as the last line of its stdout. It returns the median.
func runRef(reps int, name string, args ...string) (float64, error) {
	var xs []float64
	for range reps {
		cmd := exec.Command(name, args...)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			return math.NaN(), fmt.Errorf("%s: %w: %s", name, err, strings.TrimSpace(errb.String()))
		}
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		v, err := strconv.ParseFloat(strings.TrimSpace(lines[len(lines)-1]), 64)
		if err != nil {
			return math.NaN(), fmt.Errorf("%s printed %q, not milliseconds", name, out.String())
		}
		xs = append(xs, v)
	}
	return median(xs), nil
}

// nodeRunner is the script that runs a snippet file under node: either
// inside QuickJS-NG compiled to wasm (quickjs-emscripten, the same
// release-sync variant capsule embeds) or directly in V8. It prints the
// snippet's completion value, the elapsed milliseconds.
const nodeRunner = `"use strict";
const fs = require("fs");
const [mode, file] = process.argv.slice(2);
const code = fs.readFileSync(file, "utf8");
if (mode === "node") {
  console.log(String((0, eval)(code)));
} else {
  const { newQuickJSWASMModuleFromVariant } = require("quickjs-emscripten-core");
  const variant = require("@jitl/quickjs-ng-wasmfile-release-sync");
  newQuickJSWASMModuleFromVariant(variant).then((mod) => {
    const vm = mod.newContext();
    const h = vm.unwrapResult(vm.evalCode(code));
    const v = vm.dump(h);
    h.dispose();
    vm.dispose();
    console.log(String(v));
  }).catch((e) => { console.error(e); process.exit(1); });
}
`

// quickjsPackages are the npm packages the QuickJS-in-node reference
// needs, pinned to the versions capsule's runtime comes from.
var quickjsPackages = []string{
	"quickjs-emscripten-core@0.32.0",
	"@jitl/quickjs-ng-wasmfile-release-sync@0.32.0",
}

// nodeSetup prepares dir for the node references: the runner script, and
// with withQuickJS the pinned packages installed with npm. It returns the
// installed variant's version, for the report.
func nodeSetup(dir string, withQuickJS bool) (string, error) {
	if err := os.WriteFile(filepath.Join(dir, "runner.js"), []byte(nodeRunner), 0o644); err != nil {
		return "", err
	}
	if !withQuickJS {
		return "", nil
	}
	if _, err := exec.LookPath("npm"); err != nil {
		return "", errors.New("npm not found")
	}
	if err := os.WriteFile(filepath.Join(dir, "package.json"), []byte(`{"private": true}`+"\n"), 0o644); err != nil {
		return "", err
	}
	args := append([]string{"install", "--no-audit", "--no-fund", "--silent", "--save-exact"}, quickjsPackages...)
	cmd := exec.Command("npm", args...)
	cmd.Dir = dir
	var errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &errb, &errb
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("npm install: %w: %s", err, strings.TrimSpace(errb.String()))
	}
	var versions []string
	for _, p := range []string{"quickjs-emscripten-core", "@jitl/quickjs-ng-wasmfile-release-sync", "@jitl/quickjs-ffi-types"} {
		b, err := os.ReadFile(filepath.Join(dir, "node_modules", p, "package.json"))
		if err != nil {
			return "", fmt.Errorf("npm install left no %s: %w", p, err)
		}
		var pj struct{ Version string }
		if err := json.Unmarshal(b, &pj); err != nil {
			return "", err
		}
		versions = append(versions, p+"@"+pj.Version)
	}
	return strings.Join(versions, ", "), nil
}

// debianPython is the path of Debian's python3.11.
const debianPython = "/usr/bin/python3.11"

// ensureDebianPython returns "" when debianPython is installed, installing
// Debian's python3.11 package first when it is missing and the bench runs
// as root (the Python build installs it too); otherwise it returns why
// the reference is skipped.
func ensureDebianPython() string {
	return ensureDebianPackage("python3.11", debianPython+" is missing", func() bool {
		_, err := os.Stat(debianPython)
		return err == nil
	})
}

// ensureDebianPackage returns "" when present reports true, installing
// Debian's package pkg first when it does not and the bench runs as root;
// otherwise it returns why the reference that needs it is skipped. missing
// says what present found lacking.
func ensureDebianPackage(pkg, missing string, present func() bool) string {
	if present() {
		return ""
	}
	if os.Geteuid() != 0 {
		return "skipped: " + missing + "; install it with apt-get install " + pkg
	}
	logf("apt-get install %s (a native reference)", pkg)
	cmd := exec.Command("apt-get", "install", "-y", "--no-install-recommends", pkg)
	cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Sprintf("skipped: apt-get install %s: %v: %s", pkg, err, lastLine(out))
	}
	if !present() {
		return "skipped: " + pkg + " installed, but " + missing
	}
	return ""
}

// lastLine returns the last non-empty line of out.
func lastLine(out []byte) string {
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return lines[len(lines)-1]
}

// commandVersion returns the first line of `name --version`, or "".
func commandVersion(name string) string {
	out, err := exec.Command(name, "--version").CombinedOutput()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(strings.SplitN(string(out), "\n", 2)[0])
}
