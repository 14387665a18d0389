package importscan

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestModules(t *testing.T) {
	cases := []struct {
		name, code string
		want       []string
	}{
		{"plain", "import sympy", []string{"sympy"}},
		{"dotted, aliased, several", "import sympy.core as sc, networkx as nx, os.path", []string{"sympy", "networkx", "os"}},
		{"from", "from sympy import Symbol, expand", []string{"sympy"}},
		{"from dotted", "from networkx.algorithms import shortest_path as sp", []string{"networkx"}},
		{"from with parentheses", "from openpyxl import (\n  Workbook,\n  load_workbook,\n)\nimport bs4", []string{"openpyxl", "bs4"}},
		{"from star", "from sympy import *; import json", []string{"sympy", "json"}},
		{"statements after an import", "import a\nb = 1\nimport c", []string{"a", "c"}},
		{"in a block", "def f():\n    import sympy\n    return sympy\nif x: import networkx", []string{"sympy", "networkx"}},
		{"try/except", "try:\n import tomllib\nexcept ImportError:\n import tomli as tomllib", []string{"tomllib", "tomli"}},
		{"semicolons", "import sympy; x = sympy.Symbol('x'); sympy.expand((x + 1)**10)", []string{"sympy"}},
		{"__import__", "m = __import__('networkx')", []string{"networkx"}},
		{"import_module", "import importlib\nimportlib.import_module(\"sympy.core\")", []string{"importlib", "sympy"}},
		{"from importlib", "from importlib import import_module as im\nimport_module('pypdf')", []string{"importlib", "pypdf"}},
		{"string prefixes", "__import__(u'a'); __import__(r'b'); __import__(b'c'); __import__(f'd')", []string{"a", "b"}},
		{"variable", "name = 'sympy'\n__import__(name)", nil},
		{"relative", "from . import sympy\nfrom .networkx import x\nfrom ..a.b import c", nil},
		{"relative import_module", "import_module('.sympy', 'pkg')", nil},
		{"comment", "# import sympy\nx = 1  # from networkx import Graph", nil},
		{"string", "s = 'import sympy'\nt = \"from networkx import x\"", nil},
		{"triple-quoted", "'''\nimport sympy\n'''\n\"\"\"from networkx import x\n\"\"\"\nimport json", []string{"json"}},
		{"escaped quotes", `s = 'it\'s import sympy'` + "\nimport json", []string{"json"}},
		{"raw string with an escaped quote", `s = r'\' import sympy'` + "\nimport json", []string{"json"}},
		{"f-string", "s = f\"{x} import sympy\"\nimport json", []string{"json"}},
		{"yield from and raise from", "def g():\n    yield from range(3)\nraise E from err\nimport json", []string{"json"}},
		{"names that only contain the keywords", "important = 1\nfromage = 2\nreimport(x)", nil},
		{"line continuation", "import sympy, \\\n    networkx", []string{"sympy", "networkx"}},
		{"duplicates", "import sympy\nimport sympy\nfrom sympy import x", []string{"sympy"}},
		{"unterminated string", "s = 'import sympy\nimport json", []string{"json"}},
		{"unterminated triple", "import json\ns = '''import sympy", []string{"json"}},
		{"number", "x = 1.5e3j\nimport json", []string{"json"}},
		{"non-ASCII names", "import modülé\nimport json", []string{"modülé", "json"}},
		{"invalid import_module argument", "import_module('a b'); import_module('1x'); import_module('')", nil},
		{"empty", "", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Modules(tc.code); !slices.Equal(got, tc.want) {
				t.Errorf("Modules(%q) = %q, want %q", tc.code, got, tc.want)
			}
		})
	}
}

func TestMaxModules(t *testing.T) {
	var b strings.Builder
	for i := range 2 * MaxModules {
		b.WriteString("import m")
		b.WriteString(strings.Repeat("x", i%7))
		b.WriteString(string(rune('a' + i%26)))
		b.WriteString(string(rune('a' + i/26)))
		b.WriteByte('\n')
	}
	if n := len(Modules(b.String())); n != MaxModules {
		t.Fatalf("%d modules, want the bound %d", n, MaxModules)
	}
}

// FuzzModules checks that the scan never panics, returns only names that
// could be modules, at most MaxModules of them once each, and always finds
// an import written before whatever the rest of the code holds.
func FuzzModules(f *testing.F) {
	for _, seed := range []string{"import sympy", "from a.b import (c, d)", "__import__('x')", "'''", "s = r'\\'",
		"f'{x}'", "from . import x", "import_module(\"a.b\")"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, code string) {
		got := Modules(code)
		if len(got) > MaxModules {
			t.Fatalf("%d modules", len(got))
		}
		seen := map[string]bool{}
		for _, m := range got {
			if !isIdentifier(m) || seen[m] {
				t.Fatalf("Modules(%q) returned %q", code, got)
			}
			if utf8.ValidString(code) && !utf8.ValidString(m) {
				t.Fatalf("Modules(%q) cut a character: %q", code, m)
			}
			seen[m] = true
		}
		if first := Modules("import capsule_probe\n" + code); len(first) == 0 || first[0] != "capsule_probe" {
			t.Fatalf("an import before %q was not found first: %q", code, first)
		}
	})
}

func BenchmarkModules(b *testing.B) {
	code := strings.Repeat("import sympy\nx = 'a string' # a comment\nfor i in range(10):\n    print(i, \"\"\"doc\"\"\")\n", 4096)
	b.SetBytes(int64(len(code)))
	for b.Loop() {
		Modules(code)
	}
}
