package supervisor

import (
	"testing"

	"capsule/runtimes"
	"capsule/runtimes/javascript"
	"capsule/runtimes/python"
	"capsule/supervisor/snapcache"
)

// testLanguages are the languages the supervisor is tested with, as
// cmd/capsule makes them (without compiled images).
var testLanguages = runtimes.Languages{python.Language(), javascript.Language()}

// TestPickVariant: a call starts from the variant its imports ask for,
// among those configured, and from the plain snapshot otherwise; one that
// imports numpy requires numpy's module, configured or not.
func TestPickVariant(t *testing.T) {
	s := &Supervisor{cfg: Config{BundledPackages: true, Languages: testLanguages}}
	vs := &variants{byName: map[string]*variant{}}
	for _, name := range []string{"sympy", "networkx"} {
		vs.byName[name] = &variant{name: snapcache.Name{Language: runtimes.Python, Variant: name}}
	}
	py := func(code string) Request { return Request{Language: runtimes.Python, Code: code} }
	cases := []struct {
		name     string
		req      Request
		want     string
		required bool
	}{
		{"sympy", py("import sympy; x = sympy.Symbol('x'); sympy.expand((x + 1)**10)"), "sympy", false},
		{"mpmath is sympy's", py("from mpmath import mp"), "sympy", false},
		{"networkx", py("import networkx as nx\nnx.Graph()"), "networkx", false},
		{"both: the heavier", py("import networkx\nimport sympy"), "sympy", false},
		{"by importlib", py("import importlib\nnx = importlib.import_module('networkx')"), "networkx", false},
		{"standard library only", py("import json, re\njson.dumps([1])"), "", false},
		{"no import", py("1 + 1"), "", false},
		{"only in a comment or a string", py("# import sympy\ns = 'import networkx'"), "", false},
		{"a variant not configured", py("import openpyxl"), "", false},
		{"JavaScript", Request{Language: runtimes.JavaScript, Code: "// import sympy\n1"}, "", false},
		{"numpy, not configured", py("import numpy as np\nnp.ones(3)"), "", true},
		{"numpy with sympy: numpy's module", py("import sympy\nfrom numpy import linalg"), "", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			names, required := s.variantsFor(c.req)
			got := ""
			if v := vs.pick(names); v != nil {
				got = v.name.Variant
			}
			if got != c.want || required != c.required {
				t.Errorf("picked %q, required %t; want %q, %t", got, required, c.want, c.required)
			}
		})
	}
	if names, _ := s.variantsFor(py("import sympy")); (&variants{}).pick(names) != nil {
		t.Error("a server without variants picked one")
	}
	s.cfg.BundledPackages = false
	if names, required := s.variantsFor(py("import numpy")); names != nil || required {
		t.Errorf("without the bundled packages: variants %q, required %t", names, required)
	}
}
