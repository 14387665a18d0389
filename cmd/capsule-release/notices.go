package main

import (
	"fmt"
	"strings"

	"capsule/runtimes/provenance"
)

const (
	ruleHeavy = "================================================================================"
	ruleLight = "--------------------------------------------------------------------------------"
)

// describe says in a few words what a component is and where it is inside
// the binary.
func (c component) describe() string {
	switch c.Kind {
	case provenance.KindDebianSource:
		return fmt.Sprintf("Debian source package %s, built into the %s runtime", c.Fields["dsc"], c.Runtime)
	case provenance.KindDebianBinary:
		return fmt.Sprintf("Debian package (source %s), linked into the %s runtime", c.Fields["source"], c.Runtime)
	case provenance.KindDebianBundled:
		return fmt.Sprintf("Debian package (source %s), its Python modules bundled with the %s runtime", c.Fields["source"], c.Runtime)
	case provenance.KindNPM:
		return fmt.Sprintf("npm package, embedded as the %s runtime", c.Runtime)
	case kindGo:
		return "the Go runtime and standard library, linked into the binary"
	default:
		return "Go module, linked into the binary"
	}
}

// sectionTitle is the first line of a component's section; the test finds
// sections by it.
func (c component) sectionTitle() string {
	return c.Name + " " + c.Version
}

// notices renders THIRD_PARTY_NOTICES: every component of the SBOM, in the
// same order, with its licence texts verbatim.
func (rel *release) notices() []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "capsule %s: third-party notices\n\n", rel.Version)
	b.WriteString("capsule itself is licensed under the Apache License 2.0 (LICENSE). The binary also\n" +
		"contains the components below, the same ones SBOM.spdx.json lists, each with the\n" +
		"licence texts shipped with its source, verbatim: for Debian packages debian/copyright\n" +
		"and the upstream LICENSE/COPYING files, for the npm package its LICENSE, for Go and\n" +
		"Go modules their LICENSE, COPYING, NOTICE and PATENTS files.\n\n")
	for i, c := range rel.Components {
		fmt.Fprintf(&b, "%3d. %s (%s)\n", i+1, c.sectionTitle(), c.Kind)
	}
	for i, c := range rel.Components {
		fmt.Fprintf(&b, "\n%s\n%d. %s\n   %s\n", ruleHeavy, i+1, c.sectionTitle(), c.describe())
		for _, l := range c.Licences {
			fmt.Fprintf(&b, "%s\n%s:\n\n%s", ruleLight, l.Name, l.Text)
			if !strings.HasSuffix(l.Text, "\n") {
				b.WriteByte('\n')
			}
		}
	}
	return []byte(b.String())
}
