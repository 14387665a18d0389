package main

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"strings"

	"capsule/cmd/capsule-release/archive"
)

var (
	//go:embed npm/capsule.js
	npmLauncher string
	//go:embed npm/README.md
	npmReadme string
)

// nodeArch maps GOARCH to node's process.arch.
var nodeArch = map[string]string{"amd64": "x64", "arm64": "arm64"}

// npmManifest is the package's package.json. It has no scripts: npm runs
// nothing at install time.
type npmManifest struct {
	Name        string            `json:"name"`
	Version     string            `json:"version"`
	Description string            `json:"description"`
	License     string            `json:"license"`
	Homepage    string            `json:"homepage"`
	Repository  map[string]string `json:"repository"`
	Bin         map[string]string `json:"bin"`
	Engines     map[string]string `json:"engines"`
	Keywords    []string          `json:"keywords"`
}

// npmFileName is the package tarball's name in the output directory.
func npmFileName(version string) string { return "capsule-" + version + ".tgz" }

// npmPackage returns the npm package tarball (the layout npm pack makes:
// every file under package/): package.json, the launcher bin/capsule.js,
// each release's binary and SBOM under linux-ARCH/ (ARCH as node names
// it), LICENSE, THIRD_PARTY_NOTICES and README.md.
func npmPackage(rels []*release) (namedFile, error) {
	first := rels[0]
	manifest := npmManifest{
		Name: npmName, Version: first.Version, Description: description, License: licence,
		Homepage:   sourceURL,
		Repository: map[string]string{"type": "git", "url": "git+" + sourceURL + ".git"},
		Bin:        map[string]string{"capsule": "bin/capsule.js"},
		Engines:    map[string]string{"node": ">=18"},
		Keywords:   []string{"mcp", "mcp-server", "sandbox", "code-interpreter", "python", "javascript", "webassembly"},
	}
	// As npm writes it: indented, and ">=" not escaped for HTML.
	var pj bytes.Buffer
	enc := json.NewEncoder(&pj)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(manifest); err != nil {
		return namedFile{}, err
	}
	binaries := map[string]string{}
	for _, rel := range rels {
		arch, ok := nodeArch[rel.Arch]
		if !ok {
			return namedFile{}, fmt.Errorf("npm: no node architecture for GOARCH %s", rel.Arch)
		}
		binaries["linux-"+arch] = "linux-" + arch
	}
	binariesJSON, _ := json.Marshal(binaries)
	fill := strings.NewReplacer("__NPM_NAME__", npmName, "__SOURCE_URL__", sourceURL, "__BINARIES__", string(binariesJSON)).Replace
	entries := []archive.Entry{
		{Name: "package/package.json", Mode: 0o644, Data: pj.Bytes()},
		{Name: "package/README.md", Mode: 0o644, Data: []byte(fill(npmReadme))},
		{Name: "package/LICENSE", Mode: 0o644, Data: first.Licence},
		{Name: "package/THIRD_PARTY_NOTICES", Mode: 0o644, Data: first.notices()},
		{Name: "package/bin/capsule.js", Mode: 0o755, Data: []byte(fill(npmLauncher))},
	}
	for _, rel := range rels {
		arch := nodeArch[rel.Arch]
		if string(rel.notices()) != string(first.notices()) {
			return namedFile{}, fmt.Errorf("npm: the %s and %s binaries contain different components", first.Arch, rel.Arch)
		}
		sbom, err := rel.sbom()
		if err != nil {
			return namedFile{}, err
		}
		entries = append(entries,
			archive.Entry{Name: "package/linux-" + arch + "/capsule", Mode: 0o755, Data: rel.Binary},
			archive.Entry{Name: "package/linux-" + arch + "/SBOM.spdx.json", Mode: 0o644, Data: sbom})
	}
	b, err := archive.TarGz(entries, first.Created)
	return namedFile{name: npmFileName(first.Version), data: b}, err
}
