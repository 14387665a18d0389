package main

import (
	"bytes"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"time"

	"capsule/runtimes/provenance"
)

// Component kinds besides provenance's.
const (
	kindGoModule = "go-module"
	kindGo       = "go" // the Go runtime and standard library
)

// licenceText is one licence file of a component, verbatim.
type licenceText struct {
	Name string // as shown in the notices, e.g. "debian/copyright"
	Text string
}

// component is one third-party part of the binary: one SBOM package and one
// section of the notices.
type component struct {
	ID      string // SPDXID
	Name    string
	Version string
	Kind    string
	// Runtime is the language whose embedded files were built from it, or
	// empty for what the Go build links.
	Runtime string
	// SHA256 pins the component: .dsc, .deb or npm tarball, or for a Go
	// module the digest of its go.sum h1 hash.
	SHA256   string
	Fields   map[string]string // the SOURCE keys of a runtime component
	GoSum    string            // the go.sum hash of a Go module
	Licences []licenceText
}

// asset is one file a runtime embeds.
type asset struct {
	ID            string // SPDXID
	Runtime, Name string
	Size          int
	SHA256, SHA1  string
	GeneratedFrom []string // SPDXIDs of the runtime's components
}

// release is everything the tarball describes.
type release struct {
	Name       string // capsule-VERSION-linux-ARCH
	Arch       string // GOARCH
	Version    string
	Commit     string
	Modified   bool // built with uncommitted changes
	Created    time.Time
	Binary     []byte
	Licence    []byte
	Components []component
	Assets     []asset
}

// toolchain is what collect asks the Go command; tests replace it.
type toolchain interface {
	// ModuleDir returns the module cache directory of path@version and the
	// go.sum hash the go command verified it against.
	ModuleDir(path, version string) (dir, sum string, err error)
	// GOROOT returns the toolchain's root and version ("go1.26.8").
	GOROOT() (root, version string, err error)
}

// goToolchain asks the go command on PATH.
type goToolchain struct{}

func (goToolchain) ModuleDir(path, version string) (string, string, error) {
	out, err := exec.Command("go", "mod", "download", "-json", path+"@"+version).Output()
	if err != nil {
		return "", "", fmt.Errorf("go mod download %s@%s: %w", path, version, err)
	}
	var m struct{ Dir, Sum, Error string }
	if err := json.Unmarshal(out, &m); err != nil {
		return "", "", fmt.Errorf("go mod download %s@%s: %w", path, version, err)
	}
	if m.Error != "" {
		return "", "", fmt.Errorf("go mod download %s@%s: %s", path, version, m.Error)
	}
	return m.Dir, m.Sum, nil
}

func (goToolchain) GOROOT() (string, string, error) {
	out, err := exec.Command("go", "env", "GOROOT", "GOVERSION").Output()
	if err != nil {
		return "", "", fmt.Errorf("go env: %w", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 2 {
		return "", "", fmt.Errorf("go env GOROOT GOVERSION printed %q", out)
	}
	return lines[0], lines[1], nil
}

// versionJSON is the part of `capsule version --json` the release uses.
type versionJSON struct {
	Capsule struct {
		Version    string `json:"version"`
		Commit     string `json:"commit"`
		CommitTime string `json:"commit_time"`
		Modified   bool   `json:"modified"`
	} `json:"capsule"`
	Runtimes map[string]provenance.Runtime `json:"runtimes"`
}

// collectNative gathers the release's contents for the binary at bin, which
// runs on this machine, built from the tree at root.
func collectNative(bin *builtBinary, root string, tc toolchain) (*release, error) {
	binary, bi := bin.data, bin.info
	out, err := exec.Command(bin.path, "version", "--json").Output()
	if err != nil {
		return nil, fmt.Errorf("%s version --json: %w", bin.path, err)
	}
	var v versionJSON
	if err := json.Unmarshal(out, &v); err != nil {
		return nil, fmt.Errorf("%s version --json: %w", bin.path, err)
	}
	rel := &release{
		Name:     fmt.Sprintf("capsule-%s-linux-%s", v.Capsule.Version, bin.arch),
		Arch:     bin.arch,
		Version:  v.Capsule.Version,
		Commit:   v.Capsule.Commit,
		Modified: v.Capsule.Modified,
		Binary:   binary,
	}
	if rel.Created, err = releaseTime(v.Capsule.CommitTime); err != nil {
		return nil, err
	}
	if rel.Licence, err = os.ReadFile(filepath.Join(root, "LICENSE")); err != nil {
		return nil, fmt.Errorf("capsule's own licence: %w", err)
	}

	langs := make([]string, 0, len(v.Runtimes))
	for lang := range v.Runtimes {
		langs = append(langs, lang)
	}
	sort.Strings(langs)
	for _, lang := range langs {
		rt := v.Runtimes[lang]
		rt.Name = lang
		comps, assets, err := runtimeParts(filepath.Join(root, "runtimes", lang, "dist"), rt)
		if err != nil {
			return nil, err
		}
		rel.Components = append(rel.Components, comps...)
		rel.Assets = append(rel.Assets, assets...)
	}

	goComps, err := goParts(bi, tc)
	if err != nil {
		return nil, err
	}
	rel.Components = append(rel.Components, goComps...)
	return rel, nil
}

// releaseTime is SOURCE_DATE_EPOCH when set, else the commit's time: never
// the clock, so two releases of one commit are the same bytes.
func releaseTime(commitTime string) (time.Time, error) {
	if s := os.Getenv("SOURCE_DATE_EPOCH"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH=%q: %w", s, err)
		}
		return time.Unix(n, 0).UTC(), nil
	}
	t, err := time.Parse(time.RFC3339, commitTime)
	if err != nil {
		return time.Time{}, fmt.Errorf("the binary has no commit time (%q): build it in a git checkout or set SOURCE_DATE_EPOCH", commitTime)
	}
	return t.UTC(), nil
}

// runtimeParts checks the runtime's embedded files against its dist
// directory and reads each component's licence texts from dist/sources
// (and dist/*/sources: Python's bundled packages are in dist/bundle).
func runtimeParts(dist string, rt provenance.Runtime) ([]component, []asset, error) {
	dirs := map[string]string{} // component name → its sources directory
	matches, _ := filepath.Glob(filepath.Join(dist, "sources", "*", "SOURCE"))
	nested, _ := filepath.Glob(filepath.Join(dist, "*", "sources", "*", "SOURCE"))
	for _, m := range append(matches, nested...) {
		b, err := os.ReadFile(m)
		if err != nil {
			return nil, nil, err
		}
		c, err := provenance.ParseSource(string(b))
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", m, err)
		}
		dirs[c.Name] = filepath.Dir(m)
	}
	var comps []component
	var ids []string
	for _, c := range rt.Components {
		dir, ok := dirs[c.Name]
		if !ok {
			return nil, nil, fmt.Errorf("%s: the binary embeds component %s but %s has no sources/ directory for it; rebuild the runtime", rt.Name, c.Name, dist)
		}
		delete(dirs, c.Name)
		lic, err := readLicences(dir, func(name string) bool { return name != "SOURCE" })
		if err != nil {
			return nil, nil, err
		}
		if len(lic) == 0 {
			return nil, nil, fmt.Errorf("%s: component %s %s has no licence text in %s: its build step must copy the licence files there (record_source does for Debian packages)", rt.Name, c.Name, c.Version, dir)
		}
		id := spdxID("Package", rt.Name, c.Kind, c.Name)
		ids = append(ids, id)
		comps = append(comps, component{ID: id, Name: c.Name, Version: c.Version, Kind: c.Kind, Runtime: rt.Name,
			SHA256: c.SHA256, Fields: c.Fields, Licences: lic})
	}
	for name := range dirs {
		return nil, nil, fmt.Errorf("%s: %s records component %s, which the binary does not embed; rebuild the binary (make build)", rt.Name, dist, name)
	}
	var assets []asset
	for _, a := range rt.Assets {
		data, err := os.ReadFile(filepath.Join(dist, a.Name))
		if err != nil {
			return nil, nil, err
		}
		s256, s1 := sha256.Sum256(data), sha1.Sum(data)
		if hex.EncodeToString(s256[:]) != a.SHA256 {
			return nil, nil, fmt.Errorf("%s/%s: the binary embeds SHA-256 %s but %s has %x; rebuild the binary (make build)", rt.Name, a.Name, a.SHA256, dist, s256)
		}
		assets = append(assets, asset{ID: spdxID("File", rt.Name, a.Name), Runtime: rt.Name, Name: a.Name,
			Size: len(data), SHA256: a.SHA256, SHA1: hex.EncodeToString(s1[:]), GeneratedFrom: ids})
	}
	return comps, assets, nil
}

// goLicenceFile matches the files of a Go module (or GOROOT) that carry its
// licence terms.
var goLicenceFile = regexp.MustCompile(`(?i)^(licen[cs]e|copying|notice|patents|unlicense)([.-].*)?$`)

// goParts lists Go and every module linked into the binary, with their
// licence texts from GOROOT and the module cache.
func goParts(bi *debug.BuildInfo, tc toolchain) ([]component, error) {
	goroot, gover, err := tc.GOROOT()
	if err != nil {
		return nil, err
	}
	if gover != bi.GoVersion {
		return nil, fmt.Errorf("the binary was built by %s but the go command is %s: its licence files may differ; release with the same toolchain", bi.GoVersion, gover)
	}
	lic, err := readLicences(goroot, goLicenceFile.MatchString)
	if err != nil || len(lic) == 0 {
		return nil, fmt.Errorf("no licence file in GOROOT %s (%v)", goroot, err)
	}
	comps := []component{{ID: spdxID("Package", "go"), Name: "go", Version: bi.GoVersion, Kind: kindGo, Licences: lic}}
	deps := append([]*debug.Module(nil), bi.Deps...)
	sort.Slice(deps, func(i, j int) bool { return deps[i].Path < deps[j].Path })
	for _, m := range deps {
		patched := false
		switch {
		case m.Replace != nil && strings.HasPrefix(m.Replace.Path, "."):
			// The upstream release with capsule's patches applied by
			// the build (wazero, see runtimes/wazero): the release names
			// the upstream version it is, and its pristine module's hash.
			patched = true
		case m.Replace != nil:
			m = m.Replace
		}
		dir, sum, err := tc.ModuleDir(m.Path, m.Version)
		if err != nil {
			return nil, err
		}
		version := m.Version
		if patched {
			m = &debug.Module{Path: m.Path, Version: m.Version, Sum: sum}
			version += "+capsule-patches"
		}
		if sum != m.Sum {
			return nil, fmt.Errorf("%s %s: the binary records %s, the module cache %s", m.Path, m.Version, m.Sum, sum)
		}
		lic, err := readLicences(dir, goLicenceFile.MatchString)
		if err != nil {
			return nil, err
		}
		if len(lic) == 0 {
			//lint:ignore ST1005 "Go" is a proper noun, not a capitalised sentence.
			return nil, fmt.Errorf("Go module %s %s has no LICENSE, COPYING or NOTICE file in %s", m.Path, m.Version, dir)
		}
		digest, err := h1Digest(m.Sum)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", m.Path, m.Version, err)
		}
		comps = append(comps, component{ID: spdxID("Package", "go", m.Path), Name: m.Path, Version: version,
			Kind: kindGoModule, GoSum: m.Sum, SHA256: digest, Licences: lic})
	}
	return comps, nil
}

// h1Digest turns a go.sum "h1:" hash (base64 SHA-256 of the module's file
// list) into hex.
func h1Digest(sum string) (string, error) {
	b64, ok := strings.CutPrefix(sum, "h1:")
	d, err := base64.StdEncoding.DecodeString(b64)
	if !ok || err != nil || len(d) != sha256.Size {
		return "", fmt.Errorf("go.sum hash %q is not h1: and a base64 SHA-256", sum)
	}
	return hex.EncodeToString(d), nil
}

// readLicences reads the non-empty regular files of dir whose names match,
// sorted by name.
func readLicences(dir string, match func(string) bool) ([]licenceText, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []licenceText
	for _, e := range entries {
		if !e.Type().IsRegular() || !match(e.Name()) {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		if len(bytes.TrimSpace(b)) == 0 {
			continue
		}
		name := e.Name()
		if name == "debian-copyright" {
			name = "debian/copyright"
		}
		out = append(out, licenceText{Name: name, Text: string(b)})
	}
	return out, nil
}

// spdxID makes an SPDX identifier from parts: letters, digits, '.' and '-'.
func spdxID(parts ...string) string {
	var b strings.Builder
	b.WriteString("SPDXRef")
	for _, p := range parts {
		b.WriteByte('-')
		for _, r := range p {
			if r < 128 && (r == '.' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
				b.WriteRune(r)
			} else {
				b.WriteByte('-')
			}
		}
	}
	return b.String()
}
