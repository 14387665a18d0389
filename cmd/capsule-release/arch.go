package main

import (
	"bytes"
	"debug/buildinfo"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
)

// builtBinary is one capsule binary handed to the release, for one
// architecture.
type builtBinary struct {
	path string
	data []byte
	info *debug.BuildInfo
	arch string // GOARCH
}

// readBinary reads a binary and its Go build information, which Go can
// read from a binary of any architecture.
func readBinary(path string) (*builtBinary, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	bi, err := buildinfo.Read(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	b := &builtBinary{path: path, data: data, info: bi}
	for _, s := range bi.Settings {
		switch s.Key {
		case "GOARCH":
			b.arch = s.Value
		case "GOOS":
			if s.Value != "linux" {
				return nil, fmt.Errorf("%s is built for %q; releases are for linux", path, s.Value)
			}
		}
	}
	if b.arch == "" {
		return nil, fmt.Errorf("%s records no GOARCH", path)
	}
	return b, nil
}

// collect gathers one release per binary, sorted by architecture. The
// binaries must be one build for several architectures. The one for this
// machine's architecture is asked for its record (`capsule version --json`:
// version, commit, embedded files and their components); every other
// binary must have been built from the same module graph with the same
// flags, and embed the same runtime files byte for byte, so the record
// holds for it too and the release never runs a foreign binary.
func collect(paths []string, root string, tc toolchain) ([]*release, error) {
	var bins []*builtBinary
	var native *builtBinary
	for _, p := range paths {
		b, err := readBinary(p)
		if err != nil {
			return nil, err
		}
		for _, other := range bins {
			if other.arch == b.arch {
				return nil, fmt.Errorf("%s and %s are both for %s", other.path, b.path, b.arch)
			}
		}
		if b.arch == runtime.GOARCH {
			native = b
		}
		bins = append(bins, b)
	}
	if native == nil {
		return nil, fmt.Errorf("none of %s is for this machine's architecture (%s): the release reads its record from `capsule version --json` of the native binary",
			strings.Join(paths, ", "), runtime.GOARCH)
	}
	first, err := collectNative(native, root, tc)
	if err != nil {
		return nil, err
	}
	var rels []*release
	for _, b := range bins {
		if err := sameBuild(native, b); err != nil {
			return nil, err
		}
		rel := *first
		rel.Name = strings.TrimSuffix(first.Name, first.Arch) + b.arch
		rel.Arch, rel.Binary = b.arch, b.data
		if err := rel.checkEmbedded(root); err != nil {
			return nil, fmt.Errorf("%s: %w", b.path, err)
		}
		rels = append(rels, &rel)
	}
	sort.Slice(rels, func(i, j int) bool { return rels[i].Arch < rels[j].Arch })
	return rels, nil
}

// archSettings are the build settings that differ between the binaries of
// one build for several architectures.
var archSettings = []string{"GOARCH", "GO386", "GOAMD64", "GOARM", "GOARM64", "GOMIPS", "GOMIPS64", "GOPPC64", "GORISCV64"}

// sameBuild fails unless b was built like native apart from the
// architecture: Go version, main module, every dependency with its hash and
// replacement, and every build setting (flags, -ldflags with the commit
// stamp, CGO_ENABLED, -trimpath).
func sameBuild(native, b *builtBinary) error {
	describe := func(bi *debug.BuildInfo) string {
		var lines []string
		lines = append(lines, "go "+bi.GoVersion, "path "+bi.Path, "main "+bi.Main.Path+" "+bi.Main.Version)
		for _, m := range bi.Deps {
			line := "dep " + m.Path + " " + m.Version + " " + m.Sum
			if m.Replace != nil {
				line += " => " + m.Replace.Path + " " + m.Replace.Version + " " + m.Replace.Sum
			}
			lines = append(lines, line)
		}
		for _, s := range bi.Settings {
			if !slices.Contains(archSettings, s.Key) {
				lines = append(lines, "setting "+s.Key+"="+s.Value)
			}
		}
		sort.Strings(lines)
		return strings.Join(lines, "\n")
	}
	a, c := strings.Split(describe(native.info), "\n"), strings.Split(describe(b.info), "\n")
	for _, line := range a {
		if !slices.Contains(c, line) {
			return fmt.Errorf("%s was not built like %s: it lacks %q; build every architecture from one tree with the same flags (make dist)", b.path, native.path, line)
		}
	}
	for _, line := range c {
		if !slices.Contains(a, line) {
			return fmt.Errorf("%s was not built like %s: it has %q; build every architecture from one tree with the same flags (make dist)", b.path, native.path, line)
		}
	}
	return nil
}

// checkEmbedded fails unless the binary holds, byte for byte, every runtime
// file the release lists and each runtime's ASSETS record: Go embeds files
// as they are, so a binary built from other runtime files lacks them.
func (rel *release) checkEmbedded(root string) error {
	seen := map[string]bool{}
	for _, a := range rel.Assets {
		dist := filepath.Join(root, "runtimes", a.Runtime, "dist")
		names := []string{a.Name}
		if !seen[a.Runtime] {
			seen[a.Runtime] = true
			names = append(names, "ASSETS")
		}
		for _, name := range names {
			data, err := os.ReadFile(filepath.Join(dist, name))
			if err != nil {
				return err
			}
			if !bytes.Contains(rel.Binary, data) {
				return fmt.Errorf("the binary does not embed %s/%s as it is in %s; rebuild every architecture from one tree (make dist)", a.Runtime, name, dist)
			}
		}
	}
	return nil
}
