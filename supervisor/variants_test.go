package supervisor

import (
	"slices"
	"strings"
	"testing"

	"capsule/runtimes"
	"capsule/supervisor/snapcache"
)

// TestPickVariant: a call starts from the variant its imports ask for,
// among those configured, and from the plain snapshot otherwise.
func TestPickVariant(t *testing.T) {
	vs := &variants{byName: map[string]*variant{}}
	for _, name := range []string{"sympy", "networkx"} {
		vs.byName[name] = &variant{name: snapcache.Name{Language: runtimes.Python, Variant: name}}
	}
	py := func(code string) Request { return Request{Language: runtimes.Python, Code: code} }
	cases := []struct {
		name string
		req  Request
		want string
	}{
		{"sympy", py("import sympy; x = sympy.Symbol('x'); sympy.expand((x + 1)**10)"), "sympy"},
		{"mpmath is sympy's", py("from mpmath import mp"), "sympy"},
		{"networkx", py("import networkx as nx\nnx.Graph()"), "networkx"},
		{"both: the heavier", py("import networkx\nimport sympy"), "sympy"},
		{"by importlib", py("import importlib\nnx = importlib.import_module('networkx')"), "networkx"},
		{"standard library only", py("import json, re\njson.dumps([1])"), ""},
		{"no import", py("1 + 1"), ""},
		{"only in a comment or a string", py("# import sympy\ns = 'import networkx'"), ""},
		{"a variant not configured", py("import openpyxl"), ""},
		{"JavaScript", Request{Language: runtimes.JavaScript, Code: "// import sympy\n1"}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := ""
			if v := vs.pick(c.req); v != nil {
				got = v.name.Variant
			}
			if got != c.want {
				t.Errorf("picked %q, want %q", got, c.want)
			}
		})
	}
	if (&variants{}).pick(py("import sympy")) != nil {
		t.Error("a server without variants picked one")
	}
}

func TestPythonVariantsFlag(t *testing.T) {
	cases := []struct {
		name    string
		env     map[string]string
		args    []string
		want    []string
		wantErr string
	}{
		{name: "default: all", want: []string{"sympy", "numpy", "documents", "networkx"}},
		{name: "some", args: []string{"--python-variants", "networkx, sympy,networkx"}, want: []string{"networkx", "sympy"}},
		{name: "none", env: map[string]string{"CAPSULE_PYTHON_VARIANTS": "none"}, want: nil},
		{name: "empty is none", args: []string{"--python-variants="}, want: nil},
		{name: "unknown", args: []string{"--python-variants", "pandas"}, wantErr: `unknown Python snapshot variant "pandas": the variants are sympy, numpy, documents, networkx`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := parseConfig(t, c.env, c.args)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err = %v, want %q", err, c.wantErr)
				}
				return
			}
			if err != nil || !slices.Equal(cfg.PythonVariants, c.want) {
				t.Fatalf("variants %q, %v; want %q", cfg.PythonVariants, err, c.want)
			}
		})
	}
}
