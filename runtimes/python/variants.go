package python

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"capsule/runtimes"
	"capsule/runtimes/internal/snapshot"
)

// Variant is an interpreter snapshot with heavy bundled packages already
// imported and warmed up, besides the plain one: a call that imports them
// starts from it and finds them in sys.modules. A variant is the plain
// interpreter plus those imports, so a call that does not use them runs on
// it the same, only with more memory already in use (see RATIONALE.md).
//
// A variant whose packages need C code (numpy's extension modules) runs a
// module of its own, the plain interpreter with that code linked in
// (OwnModule), so that plain workers do not carry it. Its packages then
// import nowhere else: a call that imports them runs on it, always.
type Variant struct {
	// Name names the snapshot (python-NAME): lower-case letters, digits
	// and _.
	Name string
	// OwnModule says the variant runs its own module, built with its
	// packages' C code (build.sh: python-NAME.snap.wasm), instead of the
	// plain interpreter's.
	OwnModule bool
	// Modules are the top-level modules whose import picks the variant.
	Modules []string
	// Preload is what the snapshot worker imports, submodules included.
	Preload []string
	// WarmUp is run after the imports, in a namespace of its own that is
	// then dropped: what a first call would otherwise pay for (lazy imports,
	// caches the package builds on first use), left undone only where it
	// shows (sympy's expression cache is cleared again).
	WarmUp string
}

// Variants are the snapshot variants, in the order VariantsFor prefers them:
// numpy first, the only one whose module has numpy's C code, then the
// heaviest import first. Import costs and image sizes are in RATIONALE.md.
var Variants = []Variant{
	{
		Name:      "numpy",
		OwnModule: true,
		Modules:   []string{"numpy"},
		// numpy's __init__ imports its subpackages (linalg, fft, random,
		// polynomial, ma...); the warm-up runs what a first array, its
		// repr and a ufunc would otherwise set up in the call.
		Preload: []string{"numpy"},
		WarmUp: `import numpy
a = numpy.arange(6.0).reshape(2, 3)
repr(a + 1); str(a.sum(axis=0)); repr(numpy.float64(1.5))
`,
	},
	{
		Name:    "sympy",
		Modules: []string{"sympy", "mpmath"},
		// What solve, integrate, simplify and nsolve import on their
		// first use, imported rather than run: running them would leave
		// dummies numbered and caches filled that a call could see.
		// Not sympy.integrals.manualintegrate, which numbers two dummies
		// as it is imported: a call that makes one without integrating
		// first would see another name than after a plain import.
		Preload: []string{"sympy", "mpmath", "sympy.assumptions.wrapper", "sympy.sets.setexpr",
			"sympy.sets.handlers.issubset", "sympy.integrals.heurisch", "sympy.integrals.risch",
			"sympy.integrals.prde", "sympy.integrals.rde", "sympy.polys.polymatrix", "sympy.physics.units",
			"sympy.codegen.ast"},
		// The first expand imports 16 more modules (sympy.combinatorics,
		// sympy.tensor...) and builds what every later one uses;
		// clear_cache leaves no expression of the warm-up for a call to
		// find.
		WarmUp: `import sympy
x = sympy.Symbol("x")
sympy.expand((x + 1)**3)
sympy.core.cache.clear_cache()
`,
	},
	{
		Name:    "documents",
		Modules: []string{"openpyxl", "bs4", "pypdf", "soupsieve", "html5lib"},
		Preload: []string{"openpyxl", "bs4", "pypdf", "soupsieve", "html5lib"},
	},
	{
		Name:    "networkx",
		Modules: []string{"networkx"},
		Preload: []string{"networkx"},
	},
}

// VariantNames names every variant, in the order of Variants.
func VariantNames() []string {
	var names []string
	for _, v := range Variants {
		names = append(names, v.Name)
	}
	return names
}

// VariantsFor names the variants for a call that imports modules
// (top-level names), best first (the order of Variants): those that have
// one of them imported. None means the plain interpreter. When one of them
// has its own module, it is the only one named: the call's imports work on
// no other (required is then true, and the call must run on it).
func VariantsFor(modules []string) (names []string, required bool) {
	for _, v := range Variants {
		if !slices.ContainsFunc(modules, func(m string) bool { return slices.Contains(v.Modules, m) }) {
			continue
		}
		if v.OwnModule {
			return []string{v.Name}, true
		}
		names = append(names, v.Name)
	}
	return names, false
}

// OwnModule reports whether the variant named runs a module of its own
// (Variant.OwnModule): its snapshot worker is given that module's
// compiled image (runtimes.Language.Module names it), not the plain
// interpreter's. The plain interpreter ("") and unknown names have none.
func OwnModule(name string) bool {
	v, err := variant(name)
	return err == nil && v != nil && v.OwnModule
}

// wasmModule is one of the embedded interpreter modules: the code without
// its data segments, and the data (snapshot.PrepareModule).
type wasmModule struct{ wasm, data []byte }

// module is the module the variant runs (nil: the plain interpreter).
func (v *Variant) module() wasmModule {
	if v != nil && v.OwnModule {
		// The only variant with a module of its own so far; a second
		// one would make this a table.
		return wasmModule{numpyWasm, numpyModuleData}
	}
	return wasmModule{pythonWasm, moduleData}
}

// variant finds a variant by name; "" is the plain interpreter (nil).
func variant(name string) (*Variant, error) {
	if name == "" {
		return nil, nil
	}
	for i := range Variants {
		if Variants[i].Name == name {
			return &Variants[i], nil
		}
	}
	return nil, fmt.Errorf("python: no snapshot variant %q", name)
}

// program is what capsule_init runs for the variant: the bootstrap, then
// the variant's imports and warm-up (bootstrap.py's _preload).
func (v *Variant) program() string {
	if v == nil {
		return bootstrap
	}
	var b strings.Builder
	b.WriteString(bootstrap)
	b.WriteString("\n_preload((")
	for _, m := range v.Preload {
		b.WriteString(strconv.Quote(m) + ", ")
	}
	b.WriteString("), " + strconv.Quote(v.WarmUp) + ")\n")
	return b.String()
}

// variantIdentities caches VariantIdentity: each hashes the embedded files.
var variantIdentities sync.Map

// VariantIdentity is Identity for a variant's snapshot: it also covers the
// variant's imports and warm-up. The plain interpreter ("") has Identity.
func VariantIdentity(name string) (string, error) {
	v, err := variant(name)
	if err != nil || v == nil {
		return Identity(), err
	}
	if id, ok := variantIdentities.Load(name); ok {
		return id.(string), nil
	}
	parts := [][]byte{[]byte(Identity()), []byte(v.program())}
	if v.OwnModule {
		m := v.module()
		parts = append(parts, m.wasm, m.data)
	}
	id := snapshot.Identity(runtimes.Python, parts...)
	variantIdentities.Store(name, id)
	return id, nil
}
