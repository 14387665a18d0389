package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"capsule/runtimes/provenance"
)

const zeroSum = "0000000000000000000000000000000000000000000000000000000000000000"

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, text := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRuntimePartsNeedLicences: a runtime component without a licence text,
// or out of step between the binary and its build record, stops the
// release with a message naming it.
func TestRuntimePartsNeedLicences(t *testing.T) {
	wasm := "\x00asm"
	wasmSum := fmt.Sprintf("%x", sha256.Sum256([]byte(wasm)))
	zlibSource := "name=zlib\nkind=debian-source\nversion=1:1.2.13.dfsg-1\ndsc=zlib.dsc\ndsc_sha256=" + zeroSum + "\n"
	zlib := provenance.Component{Name: "zlib", Kind: provenance.KindDebianSource, Version: "1:1.2.13.dfsg-1", SHA256: zeroSum}
	xz := provenance.Component{Name: "xz-utils", Kind: provenance.KindDebianSource, Version: "5.4.1-1", SHA256: zeroSum}
	cases := []struct {
		name  string
		files map[string]string
		comps []provenance.Component
		sum   string
		err   string
	}{
		{name: "licensed", files: map[string]string{"sources/zlib/SOURCE": zlibSource, "sources/zlib/debian-copyright": "zlib licence"},
			comps: []provenance.Component{zlib}},
		{name: "no licence file", files: map[string]string{"sources/zlib/SOURCE": zlibSource},
			comps: []provenance.Component{zlib}, err: "zlib 1:1.2.13.dfsg-1 has no licence text"},
		{name: "empty licence file", files: map[string]string{"sources/zlib/SOURCE": zlibSource, "sources/zlib/COPYING": " \n"},
			comps: []provenance.Component{zlib}, err: "has no licence text"},
		{name: "component added to the build, binary not rebuilt", files: map[string]string{
			"sources/zlib/SOURCE": zlibSource, "sources/zlib/LICENSE": "x",
			"sources/xz-utils/SOURCE": strings.ReplaceAll(zlibSource, "zlib", "xz-utils"), "sources/xz-utils/COPYING": "x"},
			comps: []provenance.Component{zlib}, err: "records component xz-utils, which the binary does not embed"},
		{name: "binary embeds an unrecorded component", files: map[string]string{"sources/zlib/SOURCE": zlibSource, "sources/zlib/LICENSE": "x"},
			comps: []provenance.Component{xz, zlib}, err: "embeds component xz-utils"},
		{name: "asset differs from dist", files: map[string]string{"sources/zlib/SOURCE": zlibSource, "sources/zlib/LICENSE": "x"},
			comps: []provenance.Component{zlib}, sum: zeroSum, err: "rebuild the binary"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dist := t.TempDir()
			c.files["a.wasm"] = wasm
			writeFiles(t, dist, c.files)
			sum := wasmSum
			if c.sum != "" {
				sum = c.sum
			}
			rt := provenance.Runtime{Name: "python", Components: c.comps,
				Assets: []provenance.Asset{{Name: "a.wasm", SHA256: sum, Size: len(wasm)}}}
			comps, assets, err := runtimeParts(dist, rt)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err %v, want one containing %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(comps) != 1 || len(comps[0].Licences) != 1 || len(assets) != 1 || assets[0].GeneratedFrom[0] != comps[0].ID {
				t.Fatalf("components %+v assets %+v", comps, assets)
			}
		})
	}
}

// fakeToolchain serves module directories from a map.
type fakeToolchain struct {
	goroot string
	dirs   map[string]string // path@version → dir
	sums   map[string]string
}

func (f fakeToolchain) ModuleDir(path, version string) (string, string, error) {
	return f.dirs[path+"@"+version], f.sums[path+"@"+version], nil
}

func (f fakeToolchain) GOROOT() (string, string, error) { return f.goroot, "go1.99.0", nil }

// TestGoPartsNeedLicences: a Go module without a licence file, or whose
// go.sum hash differs from the module cache's, stops the release.
func TestGoPartsNeedLicences(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, root, map[string]string{
		"goroot/LICENSE":         "Go licence",
		"goroot/PATENTS":         "Go patents",
		"mod/a/LICENSE":          "a licence",
		"mod/b/README.md":        "no licence here",
		"mod/c/LICENSE.txt":      "c licence",
		"mod/c/NOTICE":           "c notice",
		"mod/c/licenses/foo.txt": "not at the top",
	})
	h1 := "h1:" + "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU="
	cases := []struct {
		name, module, dir, sum, err string
		licences                    int
	}{
		{name: "LICENSE", module: "example.com/a", dir: "mod/a", sum: h1, licences: 1},
		{name: "LICENSE.txt and NOTICE", module: "example.com/c", dir: "mod/c", sum: h1, licences: 2},
		{name: "no licence", module: "example.com/b", dir: "mod/b", sum: h1, err: "example.com/b v1.0.0 has no LICENSE"},
		{name: "sum differs", module: "example.com/a", dir: "mod/a", sum: "h1:other", err: "the module cache h1:other"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tc := fakeToolchain{goroot: filepath.Join(root, "goroot"),
				dirs: map[string]string{c.module + "@v1.0.0": filepath.Join(root, c.dir)},
				sums: map[string]string{c.module + "@v1.0.0": c.sum}}
			bi := &debug.BuildInfo{GoVersion: "go1.99.0", Deps: []*debug.Module{{Path: c.module, Version: "v1.0.0", Sum: h1}}}
			comps, err := goParts(bi, tc)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err %v, want one containing %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(comps) != 2 || comps[0].Name != "go" || len(comps[0].Licences) != 2 || len(comps[1].Licences) != c.licences {
				t.Fatalf("components %+v", comps)
			}
			if want := "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"; comps[1].SHA256 != want {
				t.Fatalf("h1 digest %s, want %s", comps[1].SHA256, want)
			}
		})
	}
}

// spdxDoc is what the test reads back from SBOM.spdx.json.
type spdxDoc struct {
	SPDXVersion string `json:"spdxVersion"`
	Name        string `json:"name"`
	Packages    []struct {
		Name, SPDXID, VersionInfo string
		LicenseDeclared           string `json:"licenseDeclared"`
		Checksums                 []struct{ Algorithm, ChecksumValue string }
	} `json:"packages"`
	Files []struct {
		FileName, SPDXID string
		Checksums        []struct{ Algorithm, ChecksumValue string }
	} `json:"files"`
	Relationships []struct {
		SPDXElementID      string `json:"spdxElementId"`
		RelationshipType   string `json:"relationshipType"`
		RelatedSPDXElement string `json:"relatedSpdxElement"`
	} `json:"relationships"`
}

// TestReleaseOfTheRealBinary builds capsule from this tree and releases it.
// It fails when a component the build declares (every runtimes/*/dist/
// sources/*/SOURCE) or a Go module linked in is missing from the SBOM or
// has no licence text in THIRD_PARTY_NOTICES, and when the tarball's
// SHA256SUMS or its reproducibility break.
func TestReleaseOfTheRealBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds capsule")
	}
	tmp := t.TempDir()
	bin := filepath.Join(tmp, "capsule")
	// The commit stamp as the Makefile sets it; the release takes its time.
	build := exec.Command("go", "build", "-trimpath", "-buildvcs=false", "-o", bin,
		"-ldflags", "-X main.commit=0123456789abcdef -X main.commitUnix=1796223955", "capsule/cmd/capsule")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	root := filepath.Join("..", "..")
	rels, err := collect([]string{bin}, root, goToolchain{})
	if err != nil {
		t.Fatal(err)
	}
	rel := rels[0]
	var tarballs [2][]byte
	for i := range tarballs {
		out := filepath.Join(tmp, fmt.Sprint("out", i))
		tarball, err := rel.tarball()
		if err != nil {
			t.Fatal(err)
		}
		if err := writeArtefacts(out, []namedFile{tarball}); err != nil {
			t.Fatal(err)
		}
		if tarballs[i], err = os.ReadFile(filepath.Join(out, tarball.name)); err != nil {
			t.Fatal(err)
		}
		sums, _ := os.ReadFile(filepath.Join(out, "SHA256SUMS"))
		if want := fmt.Sprintf("%x  %s\n", sha256.Sum256(tarballs[i]), tarball.name); string(sums) != want {
			t.Fatalf("SHA256SUMS %q, want %q", sums, want)
		}
	}
	if !bytes.Equal(tarballs[0], tarballs[1]) {
		t.Fatal("two releases of the same binary differ")
	}
	if want := "2026-12-02T15:05:55Z"; rel.Created.Format(time.RFC3339) != want || rel.Commit != "0123456789abcdef" {
		t.Errorf("release time %v commit %q, want the binary's commit stamp (%s, 0123456789abcdef)", rel.Created, rel.Commit, want)
	}
	files := readTarball(t, tarballs[0], rel.Name)
	for _, name := range []string{"capsule", "LICENSE", "THIRD_PARTY_NOTICES", "SBOM.spdx.json", "SHA256SUMS"} {
		if _, ok := files[name]; !ok {
			t.Fatalf("tarball lacks %s", name)
		}
	}
	for _, line := range strings.Split(strings.TrimSpace(string(files["SHA256SUMS"])), "\n") {
		sum, name, _ := strings.Cut(line, "  ")
		if got := fmt.Sprintf("%x", sha256.Sum256(files[name])); got != sum {
			t.Errorf("SHA256SUMS says %s for %s, it has %s", sum, name, got)
		}
	}

	var doc spdxDoc
	if err := json.Unmarshal(files["SBOM.spdx.json"], &doc); err != nil {
		t.Fatal(err)
	}
	if doc.SPDXVersion != "SPDX-2.3" {
		t.Errorf("spdxVersion %q", doc.SPDXVersion)
	}
	ids := map[string]bool{"SPDXRef-DOCUMENT": true}
	pkgs := map[string][]string{} // name → SHA256 checksums
	licences := map[string]string{}
	for _, p := range doc.Packages {
		licences[p.Name] = p.LicenseDeclared
		if ids[p.SPDXID] {
			t.Errorf("SPDXID %s used twice", p.SPDXID)
		}
		ids[p.SPDXID] = true
		for _, c := range p.Checksums {
			if c.Algorithm == "SHA256" {
				pkgs[p.Name] = append(pkgs[p.Name], c.ChecksumValue)
			}
		}
		if _, ok := pkgs[p.Name]; !ok {
			pkgs[p.Name] = nil
		}
	}
	for _, f := range doc.Files {
		ids[f.SPDXID] = true
	}
	for _, r := range doc.Relationships {
		if !ids[r.SPDXElementID] || !ids[r.RelatedSPDXElement] {
			t.Errorf("relationship %+v names an unknown element", r)
		}
	}

	// Every component a runtime build declared is in the SBOM, pinned by
	// its hash, and has a section with a licence text in the notices.
	notices := string(files["THIRD_PARTY_NOTICES"])
	sources, _ := filepath.Glob(filepath.Join(root, "runtimes", "*", "dist", "sources", "*", "SOURCE"))
	bundled, _ := filepath.Glob(filepath.Join(root, "runtimes", "*", "dist", "*", "sources", "*", "SOURCE"))
	if len(bundled) < 20 {
		t.Fatalf("only %d bundled packages recorded: %v", len(bundled), bundled)
	}
	sources = append(sources, bundled...)
	if len(sources) < 4 {
		t.Fatalf("only %d runtime components recorded: %v", len(sources), sources)
	}
	for _, s := range sources {
		b, err := os.ReadFile(s)
		if err != nil {
			t.Fatal(err)
		}
		c, err := provenance.ParseSource(string(b))
		if err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		if !contains(pkgs[c.Name], c.SHA256) {
			t.Errorf("SBOM lacks %s %s with SHA-256 %s", c.Name, c.Version, c.SHA256)
		}
		checkSection(t, notices, c.Name+" "+c.Version)
		// A bundled package declares its licence.
		if c.Kind == provenance.KindDebianBundled && (licences[c.Name] == "" || licences[c.Name] != c.Fields["license"]) {
			t.Errorf("SBOM declares licence %q for %s, its record says %q", licences[c.Name], c.Name, c.Fields["license"])
		}
	}
	// So is every Go module linked into the binary, with its go.sum hash.
	list, err := exec.Command("go", "list", "-deps", "-f", "{{with .Module}}{{if not .Main}}{{.Path}} {{.Version}}{{end}}{{end}}", "capsule/cmd/capsule").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(list)), "\n") {
		if line == "" {
			continue
		}
		path, version, _ := strings.Cut(line, " ")
		if path == "github.com/tetratelabs/wazero" {
			version += "+capsule-patches" // upstream plus runtimes/wazero/patches
		}
		if len(pkgs[path]) != 1 {
			t.Errorf("SBOM lacks Go module %s with a checksum", path)
		}
		checkSection(t, notices, path+" "+version)
	}
	// And every embedded file, with the hash doctor checks.
	for _, a := range rel.Assets {
		found := false
		for _, f := range doc.Files {
			for _, c := range f.Checksums {
				found = found || (f.FileName == "./runtimes/"+a.Runtime+"/dist/"+a.Name && c.Algorithm == "SHA256" && c.ChecksumValue == a.SHA256)
			}
		}
		if !found {
			t.Errorf("SBOM lacks embedded file %s/%s with SHA-256 %s", a.Runtime, a.Name, a.SHA256)
		}
	}
	if len(rel.Assets) < 4 {
		t.Errorf("only %d embedded files: %+v", len(rel.Assets), rel.Assets)
	}
}

// checkSection fails unless notices has a section titled title followed by
// at least one licence text.
func checkSection(t *testing.T, notices, title string) {
	t.Helper()
	_, after, ok := strings.Cut(notices, "\n"+ruleHeavy+"\n")
	for ok {
		var section string
		section, after, ok = strings.Cut(after, "\n"+ruleHeavy+"\n")
		_, heading, _ := strings.Cut(section, ". ")
		if strings.HasPrefix(heading, title+"\n") {
			if !strings.Contains(section, ruleLight+"\n") {
				t.Errorf("THIRD_PARTY_NOTICES: %s has no licence text", title)
			}
			return
		}
	}
	t.Errorf("THIRD_PARTY_NOTICES has no section for %s", title)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// readTarball returns the files under dir/ in a .tar.gz, and checks that
// every header is fixed: release time, owner 0.
func readTarball(t *testing.T, data []byte, dir string) map[string][]byte {
	files, _ := readTarballModes(t, data, dir)
	return files
}

// readTarballModes is readTarball, with each file's mode.
func readTarballModes(t *testing.T, data []byte, dir string) (map[string][]byte, map[string]int64) {
	t.Helper()
	gz, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	files, modes := map[string][]byte{}, map[string]int64{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Uid != 0 || h.Gid != 0 || h.ModTime.IsZero() {
			t.Errorf("%s: uid %d gid %d mtime %v", h.Name, h.Uid, h.Gid, h.ModTime)
		}
		name, ok := strings.CutPrefix(h.Name, dir+"/")
		if !ok {
			t.Fatalf("%s is outside %s/", h.Name, dir)
		}
		if h.Typeflag == tar.TypeReg {
			b, _ := io.ReadAll(tr)
			files[name], modes[name] = b, h.Mode
		}
	}
	return files, modes
}
