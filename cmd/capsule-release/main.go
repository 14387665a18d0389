// Command capsule-release packs capsule binaries, one build for several
// architectures, into what users install (make dist, make image):
//
//	dist/capsule-VERSION-linux-ARCH.tar.gz, one per architecture:
//	    capsule-VERSION-linux-ARCH/capsule               the binary
//	    capsule-VERSION-linux-ARCH/LICENSE               capsule's licence (Apache-2.0)
//	    capsule-VERSION-linux-ARCH/THIRD_PARTY_NOTICES   the licence texts of everything inside
//	    capsule-VERSION-linux-ARCH/SBOM.spdx.json        SPDX 2.3: what is inside, pinned by hashes
//	    capsule-VERSION-linux-ARCH/SHA256SUMS            the hashes of the four files above
//	dist/capsule-VERSION.tgz                             the npm package: the launcher, which runs
//	                                                     the binary of the platform package npm chose
//	dist/capsule-linux-ARCH-VERSION.tgz                  an npm platform package: one binary and its SBOM
//	                                                     (ARCH as node names it: x64, arm64)
//	dist/capsule-VERSION-linux-ARCH.oci.tar              with -image: the container image, an OCI archive
//	dist/SHA256SUMS                                      the hashes of all the above
//
// The component list comes from the binary itself (`capsule version --json`
// of the binary for this machine, and the Go build information of each);
// the licence texts come from where the build found each component: the
// runtimes' dist/sources/NAME/ directories (copied by the runtime builds
// from the Debian source packages and the npm tarball), the Go module cache
// and GOROOT. SBOM and notices are written from one list, and a component
// without a licence text stops the release.
//
// The output is reproducible: every time stamp is the commit's (or
// SOURCE_DATE_EPOCH's), file order, owners and modes are fixed.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// binFlags is the repeatable -bin flag.
type binFlags []string

func (b *binFlags) String() string     { return strings.Join(*b, ",") }
func (b *binFlags) Set(s string) error { *b = append(*b, s); return nil }

func main() {
	var bins binFlags
	flag.Var(&bins, "bin", "a capsule binary to release, once per architecture (default bin/capsule); one must be for this machine")
	root := flag.String("root", ".", "the capsule source tree the binaries were built from (LICENSE, runtimes/*/dist)")
	out := flag.String("out", "dist", "directory to write the artefacts and SHA256SUMS into")
	withImage := flag.Bool("image", false, "also write each architecture's container image as an OCI archive")
	allowModified := flag.Bool("allow-modified", false, "release binaries built with uncommitted changes (not reproducible by anyone else)")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: capsule-release [-bin FILE]... [-root DIR] [-out DIR] [-image]\n\n"+
			"Writes OUT/capsule-VERSION-linux-ARCH.tar.gz per binary (binary, LICENSE, THIRD_PARTY_NOTICES,\n"+
			"SBOM.spdx.json, SHA256SUMS), the npm package OUT/capsule-VERSION.tgz and its platform\n"+
			"packages OUT/capsule-linux-ARCH-VERSION.tgz, with -image the\n"+
			"container images OUT/capsule-VERSION-linux-ARCH.oci.tar, and OUT/SHA256SUMS.\n\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 0 {
		flag.Usage()
		os.Exit(2)
	}
	if len(bins) == 0 {
		bins = binFlags{"bin/capsule"}
	}
	if err := makeRelease(bins, *root, *out, *withImage, *allowModified); err != nil {
		fmt.Fprintln(os.Stderr, "capsule-release:", err)
		os.Exit(1)
	}
}

// makeRelease writes every artefact of the binaries into out.
func makeRelease(bins []string, root, out string, withImage, allowModified bool) error {
	rels, err := collect(bins, root, goToolchain{})
	if err != nil {
		return err
	}
	if rels[0].Modified && !allowModified {
		return fmt.Errorf("%s built with uncommitted changes, so nobody can rebuild them from commit %s; "+
			"commit them and run make dist again (or pass -allow-modified for a test release)", strings.Join(bins, ", "), rels[0].Commit)
	}
	arts, digests, err := artefacts(rels, withImage)
	if err != nil {
		return err
	}
	if err := writeArtefacts(out, arts); err != nil {
		return err
	}
	for _, a := range arts {
		fmt.Fprintf(os.Stderr, "capsule-release: wrote %s%s\n", filepath.Join(out, a.name), digests[a.name])
	}
	fmt.Fprintf(os.Stderr, "capsule-release: %d components; hashes in %s\n", len(rels[0].Components), filepath.Join(out, "SHA256SUMS"))
	return nil
}

// artefacts makes every file of the release, in the order SHA256SUMS lists
// them: the tarballs, the npm packages, the images. digests says, for an
// image, its manifest digest.
func artefacts(rels []*release, withImage bool) (arts []namedFile, digests map[string]string, err error) {
	for _, rel := range rels {
		t, err := rel.tarball()
		if err != nil {
			return nil, nil, err
		}
		arts = append(arts, t)
	}
	pkgs, err := npmPackages(rels)
	if err != nil {
		return nil, nil, err
	}
	arts = append(arts, pkgs...)
	digests = map[string]string{}
	for _, rel := range rels {
		if !withImage {
			break
		}
		img, err := rel.image()
		if err != nil {
			return nil, nil, err
		}
		data, digest, err := img.Archive()
		if err != nil {
			return nil, nil, err
		}
		name := rel.imageFileName()
		arts = append(arts, namedFile{name: name, data: data})
		digests[name] = fmt.Sprintf(" (image %s:%s for linux/%s, digest %s)", img.Name, img.Tag, rel.Arch, digest)
	}
	return arts, digests, nil
}
