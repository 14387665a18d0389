package main

import (
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"

	"capsule/runtimes/provenance"
)

// SPDX 2.3 JSON, the subset the release writes.
type spdxDocument struct {
	SPDXVersion       string             `json:"spdxVersion"`
	DataLicense       string             `json:"dataLicense"`
	SPDXID            string             `json:"SPDXID"`
	Name              string             `json:"name"`
	DocumentNamespace string             `json:"documentNamespace"`
	CreationInfo      spdxCreationInfo   `json:"creationInfo"`
	Packages          []spdxPackage      `json:"packages"`
	Files             []spdxFile         `json:"files"`
	Relationships     []spdxRelationship `json:"relationships"`
}

type spdxCreationInfo struct {
	Created  string   `json:"created"`
	Creators []string `json:"creators"`
	Comment  string   `json:"comment,omitempty"`
}

type spdxChecksum struct {
	Algorithm     string `json:"algorithm"`
	ChecksumValue string `json:"checksumValue"`
}

type spdxExternalRef struct {
	ReferenceCategory string `json:"referenceCategory"`
	ReferenceType     string `json:"referenceType"`
	ReferenceLocator  string `json:"referenceLocator"`
}

type spdxPackage struct {
	Name                  string            `json:"name"`
	SPDXID                string            `json:"SPDXID"`
	VersionInfo           string            `json:"versionInfo,omitempty"`
	PackageFileName       string            `json:"packageFileName,omitempty"`
	DownloadLocation      string            `json:"downloadLocation"`
	FilesAnalyzed         bool              `json:"filesAnalyzed"`
	Checksums             []spdxChecksum    `json:"checksums,omitempty"`
	Homepage              string            `json:"homepage,omitempty"`
	SourceInfo            string            `json:"sourceInfo,omitempty"`
	LicenseConcluded      string            `json:"licenseConcluded"`
	LicenseDeclared       string            `json:"licenseDeclared"`
	LicenseComments       string            `json:"licenseComments,omitempty"`
	CopyrightText         string            `json:"copyrightText"`
	Comment               string            `json:"comment,omitempty"`
	ExternalRefs          []spdxExternalRef `json:"externalRefs,omitempty"`
	PrimaryPackagePurpose string            `json:"primaryPackagePurpose,omitempty"`
}

type spdxFile struct {
	FileName         string         `json:"fileName"`
	SPDXID           string         `json:"SPDXID"`
	Checksums        []spdxChecksum `json:"checksums"`
	LicenseConcluded string         `json:"licenseConcluded"`
	CopyrightText    string         `json:"copyrightText"`
	Comment          string         `json:"comment,omitempty"`
}

type spdxRelationship struct {
	SPDXElementID      string `json:"spdxElementId"`
	RelationshipType   string `json:"relationshipType"`
	RelatedSPDXElement string `json:"relatedSpdxElement"`
}

const (
	noAssertion   = "NOASSERTION"
	capsuleID     = "SPDXRef-Package-capsule"
	noticesHint   = "The licence texts shipped with its source are in THIRD_PARTY_NOTICES; no SPDX expression is concluded from them."
	namespaceBase = "https://capsule.invalid/spdx/"
)

// sbom builds the SPDX document. Every value comes from rel, so the same
// release gives the same bytes.
func (rel *release) sbom() ([]byte, error) {
	binSum := sha256.Sum256(rel.Binary)
	binSHA1 := sha1.Sum(rel.Binary)
	doc := spdxDocument{
		SPDXVersion:       "SPDX-2.3",
		DataLicense:       "CC0-1.0",
		SPDXID:            "SPDXRef-DOCUMENT",
		Name:              rel.Name,
		DocumentNamespace: namespaceBase + rel.Name + "-" + hex.EncodeToString(binSum[:]),
		CreationInfo: spdxCreationInfo{
			Created:  rel.Created.Format("2006-01-02T15:04:05Z"),
			Creators: []string{"Tool: capsule-release-" + rel.Version},
			Comment: "Generated from the binary's own record (capsule version --json, Go build information) " +
				"and the runtimes' build records. The creation time is the commit's.",
		},
	}
	capsulePkg := spdxPackage{
		Name: "capsule", SPDXID: capsuleID, VersionInfo: rel.Version, PackageFileName: "capsule",
		DownloadLocation: noAssertion, FilesAnalyzed: false,
		Checksums: []spdxChecksum{
			{Algorithm: "SHA256", ChecksumValue: hex.EncodeToString(binSum[:])},
			{Algorithm: "SHA1", ChecksumValue: hex.EncodeToString(binSHA1[:])},
		},
		LicenseConcluded: "Apache-2.0", LicenseDeclared: "Apache-2.0", CopyrightText: noAssertion,
		PrimaryPackagePurpose: "APPLICATION",
	}
	if rel.Commit != "" {
		capsulePkg.SourceInfo = "built from commit " + rel.Commit
	}
	doc.Packages = append(doc.Packages, capsulePkg)
	doc.Relationships = append(doc.Relationships, spdxRelationship{"SPDXRef-DOCUMENT", "DESCRIBES", capsuleID})

	for _, c := range rel.Components {
		p, err := c.spdxPackage()
		if err != nil {
			return nil, err
		}
		doc.Packages = append(doc.Packages, p)
		rel := "CONTAINS" // built into an embedded runtime file
		if c.Kind == kindGo || c.Kind == kindGoModule {
			rel = "STATIC_LINK"
		}
		doc.Relationships = append(doc.Relationships, spdxRelationship{capsuleID, rel, c.ID})
	}
	for _, a := range rel.Assets {
		doc.Files = append(doc.Files, spdxFile{
			FileName: "./runtimes/" + a.Runtime + "/dist/" + a.Name,
			SPDXID:   a.ID,
			Checksums: []spdxChecksum{
				{Algorithm: "SHA256", ChecksumValue: a.SHA256},
				{Algorithm: "SHA1", ChecksumValue: a.SHA1},
			},
			LicenseConcluded: noAssertion,
			CopyrightText:    noAssertion,
			Comment: fmt.Sprintf("Embedded in the binary (%d bytes); `capsule doctor` checks it against this SHA-256 (layer assets).",
				a.Size),
		})
		doc.Relationships = append(doc.Relationships, spdxRelationship{capsuleID, "CONTAINS", a.ID})
		for _, from := range a.GeneratedFrom {
			doc.Relationships = append(doc.Relationships, spdxRelationship{a.ID, "GENERATED_FROM", from})
		}
	}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// spdxPackage describes one component.
func (c component) spdxPackage() (spdxPackage, error) {
	p := spdxPackage{
		Name: c.Name, SPDXID: c.ID, VersionInfo: c.Version, DownloadLocation: noAssertion,
		LicenseConcluded: noAssertion, LicenseDeclared: noAssertion, LicenseComments: noticesHint,
		CopyrightText: noAssertion, PrimaryPackagePurpose: "LIBRARY",
	}
	sha256Sum := func(v string) { p.Checksums = append(p.Checksums, spdxChecksum{"SHA256", v}) }
	purl := func(s string) {
		p.ExternalRefs = append(p.ExternalRefs, spdxExternalRef{"PACKAGE-MANAGER", "purl", s})
	}
	switch c.Kind {
	case provenance.KindDebianSource:
		p.PackageFileName = c.Fields["dsc"]
		sha256Sum(c.SHA256)
		p.Homepage = c.Fields["homepage"]
		p.PrimaryPackagePurpose = "SOURCE"
		p.SourceInfo = fmt.Sprintf("Debian source package, built for wasm32-wasi into the %s runtime; the checksum is its .dsc's", c.Runtime)
		purl("pkg:deb/debian/" + c.Name + "@" + purlEscape(c.Version) + "?arch=source")
	case provenance.KindDebianBinary:
		p.SourceInfo = fmt.Sprintf("Debian binary package (source package %s), linked into the %s runtime; ", c.Fields["source"], c.Runtime)
		if c.SHA256 != "" {
			sha256Sum(c.SHA256)
			p.SourceInfo += "the checksum is its .deb's"
		} else {
			p.SourceInfo += "its .deb's hash was not in the build machine's apt index"
		}
		// Code compiled from the package's source (wasi-libc's time zone
		// code) is pinned by that source's .dsc.
		if dsc := c.Fields["source_dsc_sha256"]; dsc != "" {
			p.SourceInfo += fmt.Sprintf("; code compiled from its source package %s (SHA-256 %s) too", c.Fields["source_dsc"], dsc)
		}
		purl("pkg:deb/debian/" + c.Name + "@" + purlEscape(c.Version))
	case provenance.KindDebianBundled:
		sha256Sum(c.SHA256)
		p.PackageFileName = c.Fields["deb"]
		p.Homepage = c.Fields["homepage"]
		p.SourceInfo = fmt.Sprintf("Debian binary package (source package %s); its Python modules (%s), compiled to "+
			"bytecode, are bundled in the %s runtime's bundle/packages.zip; the checksum is its .deb's",
			c.Fields["source"], c.Fields["modules"], c.Runtime)
		p.LicenseDeclared = c.Fields["license"]
		if c.Fields["license_from"] == "debian-copyright" {
			p.LicenseComments = "The licence of the Files: * stanza of its debian/copyright. " + noticesHint
		} else {
			p.LicenseComments = "As capsule's build recipe records it: its debian/copyright is not machine-readable. " + noticesHint
		}
		purl("pkg:deb/debian/" + c.Name + "@" + purlEscape(c.Version))
	case provenance.KindNPM:
		sha256Sum(c.SHA256)
		integrity, ok := strings.CutPrefix(c.Fields["integrity"], "sha512-")
		d, err := base64.StdEncoding.DecodeString(integrity)
		if !ok || err != nil {
			return p, fmt.Errorf("%s: integrity %q is not sha512-BASE64", c.Name, c.Fields["integrity"])
		}
		p.Checksums = append(p.Checksums, spdxChecksum{"SHA512", hex.EncodeToString(d)})
		p.SourceInfo = fmt.Sprintf("npm package tarball (integrity %s), embedded in the %s runtime", c.Fields["integrity"], c.Runtime)
		if contains := c.Fields["contains"]; contains != "" {
			p.SourceInfo += "; contains " + contains
		}
		if lic := c.Fields["license"]; lic != "" {
			p.LicenseDeclared = lic
			p.LicenseComments = "Declared in the package's package.json. " + noticesHint
		}
		scope, name, scoped := strings.Cut(strings.TrimPrefix(c.Name, "@"), "/")
		if scoped {
			purl("pkg:npm/%40" + scope + "/" + name + "@" + purlEscape(c.Version))
		} else {
			purl("pkg:npm/" + c.Name + "@" + purlEscape(c.Version))
		}
	case kindGo:
		p.SourceInfo = "the Go runtime and standard library, linked into the binary"
		p.LicenseDeclared = "BSD-3-Clause"
		p.LicenseComments = "Go's LICENSE is the BSD 3-clause licence; its text and PATENTS are in THIRD_PARTY_NOTICES."
		purl("pkg:golang/stdlib@" + purlEscape(c.Version))
	case kindGoModule:
		sha256Sum(c.SHA256)
		p.SourceInfo = "Go module linked into the binary; the checksum is the digest of its go.sum hash " + c.GoSum
		purl("pkg:golang/" + c.Name + "@" + purlEscape(c.Version))
	default:
		return p, fmt.Errorf("%s: unknown kind %q", c.Name, c.Kind)
	}
	return p, nil
}

// purlEscape percent-encodes a version for a package URL.
func purlEscape(s string) string {
	return strings.ReplaceAll(url.PathEscape(s), "+", "%2B")
}
