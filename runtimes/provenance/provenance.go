// Package provenance says what a runtime embeds and where it came from, as
// recorded by the runtime's build (runtimes/python/build.sh,
// runtimes/javascript/fetch.sh) in its dist/ directory:
//
//   - ASSETS: the SHA-256 of every file the build produced for embedding,
//     in sha256sum format, written when the files were made;
//   - sources/NAME/SOURCE: one component the files were built from (a
//     Debian source or binary package, an npm package) as key=value lines;
//     the other files in sources/NAME/ are its licence texts, which the
//     release tooling (cmd/capsule-release) turns into THIRD_PARTY_NOTICES.
//
// Python's bundled packages (runtimes/python/bundle.sh) have an ASSETS
// file and sources/ of their own in dist/bundle, which add to Python's.
//
// The binary carries ASSETS and the SOURCE files, so `capsule version`
// reports them and `capsule doctor` can check that the embedded bytes are
// the ones the build recorded.
package provenance

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"
)

// Component kinds, the "kind" key of a SOURCE file.
const (
	KindDebianSource = "debian-source" // built here from a Debian source package
	KindDebianBinary = "debian-binary" // linked in from an installed Debian package
	KindNPM          = "npm"           // taken from an npm package tarball
	// KindDebianBundled is a Debian binary package of Python modules whose
	// files are bundled (compiled to bytecode) for import by guest code.
	KindDebianBundled = "debian-bundled"
)

// Component is one thing a runtime's embedded files were made from.
type Component struct {
	// Name is the package name (Debian source or binary package, npm name).
	Name string `json:"name"`
	// Kind is one of the Kind constants.
	Kind string `json:"kind"`
	// Version is the package version as its registry spells it.
	Version string `json:"version"`
	// SHA256 is the hex SHA-256 of the file that pins the component: the
	// .dsc of a Debian source package, the .deb of a binary package, the
	// tarball of an npm package. Only a binary package may lack it: its
	// hash comes from the machine's apt index, which may have dropped the
	// installed version.
	SHA256 string `json:"sha256"`
	// Fields holds every key of the SOURCE file, the above included.
	Fields map[string]string `json:"fields"`
}

// pinKeys names, per kind, the SOURCE key that holds Component.SHA256.
var pinKeys = map[string]string{
	KindDebianSource:  "dsc_sha256",
	KindDebianBinary:  "deb_sha256",
	KindNPM:           "tarball_sha256",
	KindDebianBundled: "deb_sha256",
}

// ParseSource parses a SOURCE file. Name, kind, version and, except for a
// Debian binary package, the kind's pinning hash are required.
func ParseSource(text string) (Component, error) {
	fields := map[string]string{}
	for n, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			return Component{}, fmt.Errorf("line %d: %q is not key=value", n+1, line)
		}
		fields[k] = v
	}
	c := Component{Name: fields["name"], Kind: fields["kind"], Version: fields["version"], Fields: fields}
	pin, known := pinKeys[c.Kind]
	switch {
	case c.Name == "":
		return Component{}, fmt.Errorf("no name")
	case !known:
		return Component{}, fmt.Errorf("%s: unknown kind %q", c.Name, c.Kind)
	case c.Version == "":
		return Component{}, fmt.Errorf("%s: no version", c.Name)
	case !isSHA256(fields[pin]) && (c.Kind != KindDebianBinary || fields[pin] != ""):
		return Component{}, fmt.Errorf("%s: %s is %q, not a hex SHA-256", c.Name, pin, fields[pin])
	}
	c.SHA256 = fields[pin]
	return c, nil
}

// ReadComponents reads every sources/*/SOURCE file of fsys, sorted by name.
func ReadComponents(fsys fs.FS, dir string) ([]Component, error) {
	matches, err := fs.Glob(fsys, path.Join(dir, "*", "SOURCE"))
	if err != nil {
		return nil, err
	}
	var out []Component
	for _, m := range matches {
		b, err := fs.ReadFile(fsys, m)
		if err != nil {
			return nil, err
		}
		c, err := ParseSource(string(b))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", m, err)
		}
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// ParseSums parses sha256sum output into file name → hex SHA-256.
func ParseSums(text string) (map[string]string, error) {
	sums := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(text))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if strings.TrimSpace(line) == "" {
			continue
		}
		sum, name, ok := strings.Cut(line, "  ")
		if !ok || !isSHA256(sum) || name == "" {
			return nil, fmt.Errorf("line %d: %q is not \"SHA256  NAME\"", n, line)
		}
		if _, dup := sums[name]; dup {
			return nil, fmt.Errorf("line %d: %s listed twice", n, name)
		}
		sums[name] = sum
	}
	return sums, sc.Err()
}

// Asset is one embedded file.
type Asset struct {
	// Name is the file's name in the runtime's dist/ directory.
	Name string `json:"name"`
	// SHA256 is the hash the build recorded for it.
	SHA256 string `json:"sha256"`
	// Size is the embedded length in bytes.
	Size int `json:"size"`
	data []byte
}

// Runtime is what one runtime embeds and what it was built from.
type Runtime struct {
	// Name is the runtime's language name.
	Name string `json:"-"`
	// Assets are the embedded files, sorted by name.
	Assets []Asset `json:"assets"`
	// Components are what the assets were built from, sorted by name.
	Components []Component `json:"components"`
}

// New describes a runtime from its embedded files (dist/ name → bytes), the
// text of its ASSETS files and the file system holding its */SOURCE files
// under sourcesDirs. It fails when the embedded files and ASSETS do not name the same
// files, so a file that the build adds but the runtime does not embed (or
// the reverse) cannot go unnoticed.
func New(name string, embedded map[string][]byte, sums string, sources fs.FS, sourcesDirs ...string) (Runtime, error) {
	recorded, err := ParseSums(sums)
	if err != nil {
		return Runtime{}, fmt.Errorf("%s: ASSETS: %w", name, err)
	}
	r := Runtime{Name: name}
	for file, data := range embedded {
		sum, ok := recorded[file]
		if !ok {
			return Runtime{}, fmt.Errorf("%s: %s is embedded but its build recorded no hash for it in ASSETS", name, file)
		}
		r.Assets = append(r.Assets, Asset{Name: file, SHA256: sum, Size: len(data), data: data})
	}
	for file := range recorded {
		if _, ok := embedded[file]; !ok {
			return Runtime{}, fmt.Errorf("%s: the build recorded %s in ASSETS but the binary does not embed it; embed it and list it in the runtime's Provenance", name, file)
		}
	}
	sort.Slice(r.Assets, func(i, j int) bool { return r.Assets[i].Name < r.Assets[j].Name })
	for _, dir := range sourcesDirs {
		comps, err := ReadComponents(sources, dir)
		if err != nil {
			return Runtime{}, fmt.Errorf("%s: %w", name, err)
		}
		if len(comps) == 0 {
			return Runtime{}, fmt.Errorf("%s: no component recorded under %s", name, dir)
		}
		r.Components = append(r.Components, comps...)
	}
	sort.Slice(r.Components, func(i, j int) bool { return r.Components[i].Name < r.Components[j].Name })
	return r, nil
}

// Verify hashes every embedded asset and compares it with the hash the build
// recorded. It returns one error per mismatch.
func (r Runtime) Verify() []error {
	var errs []error
	for _, a := range r.Assets {
		got := sha256.Sum256(a.data)
		if hex.EncodeToString(got[:]) != a.SHA256 {
			errs = append(errs, fmt.Errorf("%s/%s: embedded bytes have SHA-256 %x, the build recorded %s", r.Name, a.Name, got, a.SHA256))
		}
	}
	return errs
}

func isSHA256(s string) bool {
	if len(s) != 64 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}
