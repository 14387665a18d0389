package python

import (
	_ "embed" // the bundle's build outputs
	"fmt"
	"io/fs"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"capsule/runtimes/provenance"
)

// The bundled packages (bundle.sh): pure-Python packages from Debian's
// binary packages, compiled to bytecode for this interpreter, in one zip
// whose SOURCE records (embedded with the runtime's own, see Provenance)
// say which package gave which modules under which licence.
var (
	//go:embed dist/bundle/packages.zip
	bundleZip []byte
	//go:embed dist/bundle/ASSETS
	bundleSums string
)

// BundleDir is where the bundled packages are mounted, read-only, when
// Config.BundledPackages is set: Debian's own place for them. It comes on
// sys.path after the standard library and before PackagesDir, so neither
// the bundle nor an operator's package can shadow the standard library.
const BundleDir = "/usr/lib/python3/dist-packages"

// bundleSourcesDir holds the bundled packages' SOURCE records.
const bundleSourcesDir = "dist/bundle/sources"

// BundledPackage is one Debian package of the bundle.
type BundledPackage struct {
	// Name and Version are the Debian binary package's.
	Name, Version string
	// Licence is the SPDX licence of its Python code.
	Licence string
	// Modules are the top-level names it makes importable, sorted.
	Modules []string
}

// UpstreamVersion is the version of the package's Python code: Debian's
// version without its epoch, its Debian revision and its repacking
// suffix (+dfsg, +ds).
func (p BundledPackage) UpstreamVersion() string {
	v := p.Version
	if _, rest, ok := strings.Cut(v, ":"); ok {
		v = rest
	}
	if i := strings.LastIndexByte(v, '-'); i > 0 {
		v = v[:i]
	}
	return repackSuffix.ReplaceAllString(v, "")
}

// repackSuffix matches Debian's marks of a repacked upstream tarball.
var repackSuffix = regexp.MustCompile(`\+(dfsg|ds)[0-9.]*$`)

// Bundled lists the bundled packages, sorted by name.
var Bundled = sync.OnceValues(func() ([]BundledPackage, error) {
	comps, err := provenance.ReadComponents(sourceFiles, bundleSourcesDir)
	if err != nil {
		return nil, fmt.Errorf("python: bundled packages: %w", err)
	}
	var out []BundledPackage
	for _, c := range comps {
		if c.Kind != provenance.KindDebianBundled {
			return nil, fmt.Errorf("python: bundled package %s has kind %q, not %q", c.Name, c.Kind, provenance.KindDebianBundled)
		}
		p := BundledPackage{Name: c.Name, Version: c.Version, Licence: c.Fields["license"]}
		for m := range strings.SplitSeq(c.Fields["modules"], ",") {
			if m != "" {
				p.Modules = append(p.Modules, m)
			}
		}
		if len(p.Modules) == 0 || p.Licence == "" {
			return nil, fmt.Errorf("python: bundled package %s records no modules or no licence", c.Name)
		}
		slices.Sort(p.Modules)
		out = append(out, p)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("python: no bundled package recorded (rebuild with runtimes/python/bundle.sh)")
	}
	return out, nil
})

// BundledModules is every top-level name the bundle makes importable,
// sorted: what a call may import besides the standard library.
func BundledModules() ([]string, error) {
	pkgs, err := Bundled()
	if err != nil {
		return nil, err
	}
	var names []string
	for _, p := range pkgs {
		names = append(names, p.Modules...)
	}
	// numpy's Python package is in the bundle too; its C is in the
	// interpreter, and its record is the runtime's (build.sh).
	if NumpyVersion() != "" {
		names = append(names, "numpy")
	}
	slices.Sort(names)
	return slices.Compact(names), nil
}

// lazyZipFS is a zipFS indexed on first use. Indexing the bundle's 3,300
// entries costs a worker some 5 ms of CPU (BenchmarkIndexBundle), which a
// call that imports nothing from it must not pay: such a call never looks
// at the bundle's directory, since its imports are found in the standard
// library, first on sys.path.
type lazyZipFS struct {
	archive []byte
	once    sync.Once
	index   *zipFS
	err     error
	used    atomic.Bool // indexed (for tests)
}

func newLazyZipFS(archive []byte) *lazyZipFS { return &lazyZipFS{archive: archive} }

// get indexes the archive the first time.
func (l *lazyZipFS) get() (*zipFS, error) {
	l.once.Do(func() {
		l.used.Store(true)
		l.index, l.err = newZipFS(l.archive)
	})
	return l.index, l.err
}

// view is the archive as one guest sees it (see zipFS.view).
func (l *lazyZipFS) view(files *guestFiles) fs.FS { return lazyView{l, files} }

type lazyView struct {
	lazy  *lazyZipFS
	files *guestFiles
}

func (v lazyView) Open(name string) (fs.File, error) {
	z, err := v.lazy.get()
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	return z.open(name, v.files)
}
