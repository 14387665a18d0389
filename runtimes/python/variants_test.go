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

// plainEngineFor is what a variant's calls are compared with: the plain
// interpreter, or for a variant with its own module that module without
// the variant's imports.
func plainEngineFor(t *testing.T, v Variant) runtimes.Engine {
	t.Helper()
	if v.OwnModule {
		return sharedEngine(t, engineKey{limit: defaultLimit, bundled: true, variant: v.Name, bare: true})
	}
	return engineWithLimit(t, defaultLimit)
}

// taskEngine is the engine a call that imports modules runs on in capsule
// (VariantsFor): the plain interpreter, or the module of the variant it
// requires.
func taskEngine(t *testing.T, modules []string) runtimes.Engine {
	t.Helper()
	if names, required := VariantsFor(modules); required {
		return variantEngine(t, names[0])
	}
	return engineWithLimit(t, defaultLimit)
}

func TestVariantsFor(t *testing.T) {
	cases := []struct {
		modules  []string
		want     []string
		required bool
	}{
		{nil, nil, false},
		{[]string{"json", "re"}, nil, false},
		{[]string{"sympy"}, []string{"sympy"}, false},
		{[]string{"mpmath"}, []string{"sympy"}, false},
		{[]string{"networkx"}, []string{"networkx"}, false},
		{[]string{"bs4", "json"}, []string{"documents"}, false},
		{[]string{"networkx", "sympy"}, []string{"sympy", "networkx"}, false},
		{[]string{"numpy"}, []string{"numpy"}, true},
		// numpy's module is the only one with numpy: whatever else is
		// imported, the call runs there.
		{[]string{"json", "numpy", "sympy"}, []string{"numpy"}, true},
		{[]string{"networkx", "numpy"}, []string{"numpy"}, true},
	}
	for _, c := range cases {
		got, required := VariantsFor(c.modules)
		if !slices.Equal(got, c.want) || required != c.required {
			t.Errorf("VariantsFor(%q) = %q, %t; want %q, %t", c.modules, got, required, c.want, c.required)
		}
	}
}

func TestModuleName(t *testing.T) {
	for name, want := range map[string]string{"": "python", "sympy": "python", "numpy": "python-numpy", "nosuch": "python"} {
		if got := Language().Module(name); got != want {
			t.Errorf("Language().Module(%q) = %q, want %q", name, got, want)
		}
		if got := OwnModule(name); got != (want != "python") {
			t.Errorf("OwnModule(%q) = %t", name, got)
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
				e := plainEngineFor(t, v)
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
//
// A variant with its own module is compared with that module started as
// the plain interpreter is; the tasks whose imports require another
// variant's module (numpy's, on the others) are left out, as no call that
// makes them runs there.
func TestVariantsBehaveAsPlain(t *testing.T) {
	for _, v := range Variants {
		t.Run(v.Name, func(t *testing.T) {
			plain := plainEngineFor(t, v)
			e := variantEngine(t, v.Name)
			codes := map[string]string{}
			for i, p := range variantProbes {
				if strings.Contains(p, "%s") {
					p = fmt.Sprintf(p, pyList(v.Preload))
				}
				codes[fmt.Sprintf("probe %d", i)] = p
			}
			for _, task := range bundletest.Tasks {
				if names, required := VariantsFor(task.Modules); !required || names[0] == v.Name {
					codes[task.Name] = task.Code
				}
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

// TestNumpyOnlyInItsModule: numpy's C code is in the numpy variant's
// module only. Elsewhere, code that reaches numpy without an import
// statement (which capsule would have seen) gets an ImportError that says
// what to do, not numpy's advice on broken installs; and packages that try
// numpy and do without it (openpyxl, sympy) still import.
func TestNumpyOnlyInItsModule(t *testing.T) {
	plain := engineWithLimit(t, defaultLimit)
	r := runIn(t, plain, `__import__("num" + "py")`, nil)
	if r.Error == nil || r.Error.Type != "ModuleNotFoundError" || !strings.Contains(r.Error.Message, "Add `import numpy` to the code") {
		t.Errorf("numpy reached on the plain interpreter: error %+v, result %s", r.Error, r.Result)
	}
	r = runIn(t, plain, `import importlib, sys
try:
    importlib.import_module("numpy")
except ImportError as e:
    caught = type(e).__name__
import openpyxl, sympy
[caught, "numpy" in sys.modules, "numpy.core._multiarray_umath" in sys.builtin_module_names]`, nil)
	if r.Error != nil || string(r.Result) != `["ModuleNotFoundError", false, false]` {
		t.Errorf("plain interpreter: result %s, error %+v", r.Result, r.Error)
	}
	bare := plainEngineFor(t, Variants[slices.IndexFunc(Variants, func(v Variant) bool { return v.Name == "numpy" })])
	r = runIn(t, bare, `m = __import__("num" + "py")
int(m.arange(4).sum())`, nil)
	if r.Error != nil || string(r.Result) != "6" {
		t.Errorf("numpy's module: result %s, error %+v", r.Result, r.Error)
	}
}

// TestResultRenderingSurvivesTheCodesMethods: rendering the result runs no
// code of the call's that could break the report: a metaclass that
// overrides __module__ is not asked, and an array subclass
// whose tolist raises costs the JSON, not the answer.
func TestResultRenderingSurvivesTheCodesMethods(t *testing.T) {
	cases := []struct {
		name, variant, code, typ string
	}{
		{"a metaclass's __module__", "", `class M(type):
    @property
    def __module__(cls):
        raise ValueError("module")
class C(metaclass=M):
    def __repr__(self):
        return "c"
C()`, "C"},
		{"an array subclass whose tolist raises", "numpy", `import numpy as np
class A(np.ndarray):
    def tolist(self):
        raise ValueError("tolist")
np.arange(3).view(A)`, "A"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := engineWithLimit(t, defaultLimit)
			if c.variant != "" {
				e = variantEngine(t, c.variant)
			}
			r := runIn(t, e, c.code, nil)
			if r.Error != nil || r.ResultType != c.typ || r.ResultRepr == "" || len(r.Result) != 0 {
				t.Errorf("error %+v, type %q, repr %q, result %s; want the type %q, a repr and no JSON", r.Error, r.ResultType, r.ResultRepr, r.Result, c.typ)
			}
		})
	}
}
