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
	//go:embed npm/platform-README.md
	npmPlatformReadme string
)

// nodeArch maps GOARCH to node's process.arch.
var nodeArch = map[string]string{"amd64": "x64", "arm64": "arm64"}

// npmManifest is a package's package.json, the main package's or a
// platform package's (the fields the other has are omitted). Neither has
// scripts: npm runs nothing at install time.
type npmManifest struct {
	Name        string            `json:"name"`
	Version     string            `json:"version"`
	Description string            `json:"description"`
	License     string            `json:"license"`
	Homepage    string            `json:"homepage"`
	Repository  map[string]string `json:"repository"`
	Bin         map[string]string `json:"bin,omitempty"`
	Engines     map[string]string `json:"engines,omitempty"`
	OS          []string          `json:"os,omitempty"`
	CPU         []string          `json:"cpu,omitempty"`
	// PreferUnplugged asks Yarn's Plug'n'Play to put the package on disk,
	// where its binary can be run.
	PreferUnplugged      bool              `json:"preferUnplugged,omitempty"`
	OptionalDependencies map[string]string `json:"optionalDependencies,omitempty"`
	Keywords             []string          `json:"keywords,omitempty"`
}

// npmPlatform is one platform package: the binary of one release.
type npmPlatform struct {
	rel  *release
	key  string // process.platform-process.arch, e.g. linux-x64
	arch string // process.arch
	name string // the package's name, e.g. @capsule-run/mcp-server-linux-x64
}

// npmFileName is the main package tarball's name in the output directory.
func npmFileName(version string) string { return "capsule-" + version + ".tgz" }

// npmPlatformFileName is a platform package tarball's name in the output
// directory; key is process.platform-process.arch.
func npmPlatformFileName(key, version string) string {
	return "capsule-" + key + "-" + version + ".tgz"
}

// npmPlatforms returns the platform package of each release, in order.
func npmPlatforms(rels []*release) ([]npmPlatform, error) {
	var out []npmPlatform
	for _, rel := range rels {
		arch, ok := nodeArch[rel.Arch]
		if !ok {
			return nil, fmt.Errorf("npm: no node architecture for GOARCH %s", rel.Arch)
		}
		if rel.Version != rels[0].Version {
			return nil, fmt.Errorf("npm: the %s binary is version %s, the %s binary %s", rel.Arch, rel.Version, rels[0].Arch, rels[0].Version)
		}
		key := "linux-" + arch
		out = append(out, npmPlatform{rel: rel, key: key, arch: arch, name: npmName + "-" + key})
	}
	return out, nil
}

// npmPackages returns the npm package tarballs (each in the layout npm
// pack makes: every file under package/): first the main package, which
// holds the launcher and depends on every platform package as an optional
// dependency, then one platform package per release, which holds that
// binary. npm installs only the platform package whose os and cpu match
// the machine.
func npmPackages(rels []*release) ([]namedFile, error) {
	platforms, err := npmPlatforms(rels)
	if err != nil {
		return nil, err
	}
	main, err := npmMainPackage(rels[0], platforms)
	if err != nil {
		return nil, err
	}
	out := []namedFile{main}
	for _, p := range platforms {
		pkg, err := npmPlatformPackage(p, rels[0])
		if err != nil {
			return nil, err
		}
		out = append(out, pkg)
	}
	return out, nil
}

// npmMainPackage returns the main package: package.json, the launcher
// bin/capsule.js, LICENSE, THIRD_PARTY_NOTICES and README.md.
func npmMainPackage(first *release, platforms []npmPlatform) (namedFile, error) {
	deps := map[string]string{}
	packages := map[string]string{} // process.platform-process.arch → package
	for _, p := range platforms {
		deps[p.name] = first.Version // exactly this version: the launcher and its binary are one release
		packages[p.key] = p.name
	}
	pj, err := packageJSON(npmManifest{
		Name: npmName, Version: first.Version, Description: description, License: licence,
		Homepage: sourceURL, Repository: repository(),
		Bin:                  map[string]string{"capsule": "bin/capsule.js"},
		Engines:              map[string]string{"node": ">=18"},
		OptionalDependencies: deps,
		Keywords:             []string{"mcp", "mcp-server", "sandbox", "code-interpreter", "python", "javascript", "webassembly"},
	})
	if err != nil {
		return namedFile{}, err
	}
	packagesJSON, _ := json.Marshal(packages)
	fill := strings.NewReplacer("__NPM_NAME__", npmName, "__SOURCE_URL__", sourceURL,
		"__PACKAGES__", string(packagesJSON), "__VERSION__", first.Version).Replace
	return npmTarball(npmFileName(first.Version), first, []namedFile{
		{"package.json", 0o644, pj},
		{"README.md", 0o644, []byte(fill(npmReadme))},
		{"LICENSE", 0o644, first.Licence},
		{"THIRD_PARTY_NOTICES", 0o644, first.notices()},
		{"bin/capsule.js", 0o755, []byte(fill(npmLauncher))},
	})
}

// npmPlatformPackage returns p's package: package.json (os and cpu, no bin:
// only the main package's launcher runs it), the binary capsule, its SBOM,
// LICENSE, THIRD_PARTY_NOTICES and README.md.
func npmPlatformPackage(p npmPlatform, first *release) (namedFile, error) {
	if string(p.rel.notices()) != string(first.notices()) {
		return namedFile{}, fmt.Errorf("npm: the %s and %s binaries contain different components", first.Arch, p.rel.Arch)
	}
	pj, err := packageJSON(npmManifest{
		Name: p.name, Version: p.rel.Version,
		Description: fmt.Sprintf("capsule's prebuilt binary for Linux on %s, installed and run by %s", p.arch, npmName),
		License:     licence, Homepage: sourceURL, Repository: repository(),
		OS: []string{"linux"}, CPU: []string{p.arch}, PreferUnplugged: true,
	})
	if err != nil {
		return namedFile{}, err
	}
	sbom, err := p.rel.sbom()
	if err != nil {
		return namedFile{}, err
	}
	fill := strings.NewReplacer("__NPM_NAME__", npmName, "__PACKAGE__", p.name, "__ARCH__", p.arch,
		"__SOURCE_URL__", sourceURL).Replace
	return npmTarball(npmPlatformFileName(p.key, p.rel.Version), p.rel, []namedFile{
		{"package.json", 0o644, pj},
		{"README.md", 0o644, []byte(fill(npmPlatformReadme))},
		{"LICENSE", 0o644, p.rel.Licence},
		{"THIRD_PARTY_NOTICES", 0o644, p.rel.notices()},
		{"SBOM.spdx.json", 0o644, sbom},
		{"capsule", 0o755, p.rel.Binary},
	})
}

// repository is package.json's repository field.
func repository() map[string]string {
	return map[string]string{"type": "git", "url": "git+" + sourceURL + ".git"}
}

// packageJSON renders m as npm writes package.json: indented, and ">=" not
// escaped for HTML.
func packageJSON(m npmManifest) ([]byte, error) {
	var pj bytes.Buffer
	enc := json.NewEncoder(&pj)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	err := enc.Encode(m)
	return pj.Bytes(), err
}

// npmTarball packs files under package/ with the release's time.
func npmTarball(name string, rel *release, files []namedFile) (namedFile, error) {
	entries := make([]archive.Entry, len(files))
	for i, f := range files {
		entries[i] = archive.Entry{Name: "package/" + f.name, Mode: f.mode, Data: f.data}
	}
	b, err := archive.TarGz(entries, rel.Created)
	return namedFile{name: name, data: b}, err
}
