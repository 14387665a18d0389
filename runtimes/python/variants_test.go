package python

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"capsule/runtimes"
	"capsule/runtimes/python/bundletest"
)

func variantEngine(t *testing.T, name string) runtimes.Engine {
	t.Helper()
	return sharedEngine(t, engineKey{limit: defaultLimit, bundled: true, variant: name})
}

func TestVariantsFor(t *testing.T) {
	cases := []struct {
		modules []string
		want    []string
	}{
		{nil, nil},
		{[]string{"json", "re"}, nil},
		{[]string{"sympy"}, []string{"sympy"}},
		{[]string{"mpmath"}, []string{"sympy"}},
		{[]string{"networkx"}, []string{"networkx"}},
		{[]string{"bs4", "json"}, []string{"documents"}},
		{[]string{"networkx", "sympy"}, []string{"sympy", "networkx"}},
		{[]string{"numpy"}, []string{"numpy"}},
		{[]string{"json", "numpy", "sympy"}, []string{"sympy", "numpy"}},
	}
	for _, c := range cases {
		if got := VariantsFor(c.modules); !slices.Equal(got, c.want) {
			t.Errorf("VariantsFor(%q) = %q, want %q", c.modules, got, c.want)
		}
	}
}

// TestVariantDefinitions: every variant has a valid, distinct name and its
// own identity; its modules are bundled, and the preload imports each; its
// program is ASCII (it is quoted for Python with Go's rules).
func TestVariantDefinitions(t *testing.T) {
	bundled, err := BundledModules()
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{Identity(): true}
	for _, v := range Variants {
		if v.Name == "" || strings.Trim(v.Name, "abcdefghijklmnopqrstuvwxyz_") != "" {
			t.Errorf("variant name %q: want lowercase letters and _", v.Name)
		}
		id, err := VariantIdentity(v.Name)
		if err != nil || ids[id] {
			t.Errorf("variant %s: identity %q, %v: want one of its own", v.Name, id, err)
		}
		ids[id] = true
		for _, m := range v.Modules {
			if !slices.Contains(bundled, m) || !slices.Contains(v.Preload, m) {
				t.Errorf("variant %s picks module %s, which is not bundled or not preloaded", v.Name, m)
			}
		}
		for _, r := range v.program() {
			if r > 0x7e {
				t.Errorf("variant %s: its program is not ASCII", v.Name)
				break
			}
		}
	}
	if _, err := VariantIdentity("nope"); err == nil {
		t.Error("an unknown variant has an identity")
	}
	if _, err := Compile(context.Background(), runtimes.Config{MemoryLimitBytes: defaultLimit, Variant: "nope"}); err == nil {
		t.Error("compiled for an unknown variant")
	}
}

// TestVariantsHaveTheirModules: a variant's snapshot has its packages
// imported, so a call that imports them finds them in sys.modules.
func TestVariantsHaveTheirModules(t *testing.T) {
	for _, v := range Variants {
		t.Run(v.Name, func(t *testing.T) {
			probe := fmt.Sprintf("import sys\n[m in sys.modules for m in %s]", pyList(v.Preload))
			for engine, want := range map[string]bool{"plain": false, v.Name: true} {
				e := engineWithLimit(t, defaultLimit)
				if engine != "plain" {
					e = variantEngine(t, v.Name)
				}
				r := runIn(t, e, probe, nil)
				var got []bool
				if r.Error != nil || json.Unmarshal(r.Result, &got) != nil || len(got) != len(v.Preload) {
					t.Fatalf("%s: result %s, error %+v", engine, r.Result, r.Error)
				}
				for i, in := range got {
					if in != want {
						t.Errorf("%s: %s in sys.modules: %v, want %v", engine, v.Preload[i], in, want)
					}
				}
			}
		})
	}
}

// variantProbes are calls whose every visible effect (result, output,
// error) must be the same whichever snapshot they start from, as long as
// they import what the variant has imported (or nothing of it: then only
// sys.modules may differ). %s is the variant's preloaded modules.
var variantProbes = []string{
	// The interpreter's global state, after the variant's imports.
	`import sys, os, warnings, decimal, builtins, gc
for m in %s:
    __import__(m)
[sys.getrecursionlimit(), repr(warnings.filters), repr(decimal.getcontext()), sys.path,
 [type(f).__name__ for f in sys.meta_path], len(sys.path_hooks), os.getcwd(), sorted(os.environ.items()),
 sorted(vars(builtins)), os.listdir("/tmp"), sorted(k for k in globals() if not k.startswith("__")), gc.isenabled(),
 gc.get_threshold(), sys.getswitchinterval(), sys.get_int_max_str_digits(), repr(sys.flags), repr(sys.displayhook),
 repr(sys.excepthook), sys.gettrace() is None, sys.getprofile() is None, sys.stdout.encoding, repr(0.1)]`,
	// Seeded randomness is reproducible, the standard library's and sympy's.
	`import random
random.seed(7)
from sympy.core.random import seed, random as srandom
seed(7)
[random.random(), srandom(), random.getrandbits(32)]`,
	// sympy's numbering of dummies and its caches start where an import
	// leaves them. (A dummy's dummy_index is random per process.)
	`import sympy
d = sympy.Dummy()
x, y = sympy.symbols("x y")
[str(d), str(sympy.factor(x**2 - y**2)), sympy.srepr(sympy.expand((x + 1)**3)),
 sympy.cacheit(lambda a: a)(3), str(sympy.solve(x**2 - 2, x))]`,
	// Errors and tracebacks.
	`import networkx as nx
nx.shortest_path(nx.Graph([(1, 2)]), 1, 3)`,
	// No name of the warm-up's is left for the code to see.
	`[name in dir() for name in ("x", "sympy", "_warm_up")]`,
	// A plain call that imports nothing of the variant.
	`import json
print("hello")
json.dumps({"a": [1, 2.5, None]})`,
}

// TestVariantsBehaveAsPlain is the proof that a wrong guess only costs
// time: every probe, and every bundled package's task (on every variant,
// whether it imports the variant's packages or others), answers the same
// on each variant as on the plain interpreter.
func TestVariantsBehaveAsPlain(t *testing.T) {
	plain := engineWithLimit(t, defaultLimit)
	for _, v := range Variants {
		t.Run(v.Name, func(t *testing.T) {
			e := variantEngine(t, v.Name)
			codes := map[string]string{}
			for i, p := range variantProbes {
				if strings.Contains(p, "%s") {
					p = fmt.Sprintf(p, pyList(v.Preload))
				}
				codes[fmt.Sprintf("probe %d", i)] = p
			}
			for _, task := range bundletest.Tasks {
				codes[task.Name] = task.Code
			}
			for name, code := range codes {
				want, got := runIn(t, plain, code, nil), runIn(t, e, code, nil)
				if !sameOutcome(want, got) {
					t.Errorf("%s: the variant answered\n%s\nthe plain interpreter\n%s", name, describe(got), describe(want))
				}
			}
		})
	}
}

// TestVariantRandomness: every random generator in a variant's snapshot
// (random's own, and those its packages made at import) draws other numbers
// in every call, as in calls that import the packages themselves.
func TestVariantRandomness(t *testing.T) {
	const code = `import gc, random
gens = [g for g in gc.get_objects() if isinstance(g, random.Random)]
[len(gens), [g.random() for g in gens]]`
	for _, v := range Variants {
		t.Run(v.Name, func(t *testing.T) {
			e := variantEngine(t, v.Name)
			var draws [2][]float64
			for i := range draws {
				r := runIn(t, e, code, nil)
				var got [2]json.RawMessage
				if r.Error != nil || json.Unmarshal(r.Result, &got) != nil || json.Unmarshal(got[1], &draws[i]) != nil {
					t.Fatalf("result %s, error %+v", r.Result, r.Error)
				}
			}
			if len(draws[0]) < 1 || len(draws[0]) != len(draws[1]) {
				t.Fatalf("generators found: %d and %d", len(draws[0]), len(draws[1]))
			}
			for i := range draws[0] {
				if draws[0][i] == draws[1][i] {
					t.Errorf("generator %d of %d drew %v in two calls", i, len(draws[0]), draws[0][i])
				}
			}
		})
	}
}

// pyList is a Python list literal of names.
func pyList(names []string) string {
	return `["` + strings.Join(names, `", "`) + `"]`
}

func sameOutcome(a, b result) bool {
	return string(a.Result) == string(b.Result) && a.stdout == b.stdout && a.stderr == b.stderr &&
		a.Limit == b.Limit && a.ExitCode == b.ExitCode && (a.Error == nil) == (b.Error == nil) &&
		(a.Error == nil || *a.Error == *b.Error)
}

func describe(r result) string {
	return fmt.Sprintf("result %s, stdout %q, stderr %q, limit %q, exit %d, error %+v", r.Result, r.stdout, r.stderr, r.Limit, r.ExitCode, r.Error)
}
