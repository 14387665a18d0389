// Command capsule-release packs a built capsule binary into the release
// tarball a security reviewer can check (make dist):
//
//	dist/capsule-VERSION-linux-ARCH.tar.gz
//	    capsule-VERSION-linux-ARCH/capsule               the binary
//	    capsule-VERSION-linux-ARCH/LICENSE               capsule's licence (Apache-2.0)
//	    capsule-VERSION-linux-ARCH/THIRD_PARTY_NOTICES   the licence texts of everything inside
//	    capsule-VERSION-linux-ARCH/SBOM.spdx.json        SPDX 2.3: what is inside, pinned by hashes
//	    capsule-VERSION-linux-ARCH/SHA256SUMS            the hashes of the four files above
//	dist/SHA256SUMS                                      the hash of the tarball
//
// The component list comes from the binary itself (`capsule version --json`
// and its Go build information); the licence texts come from where the
// build found each component: the runtimes' dist/sources/NAME/ directories
// (copied by the runtime builds from the Debian source packages and the npm
// tarball), the Go module cache and GOROOT. SBOM and notices are written
// from one list, and a component without a licence text stops the release.
//
// The output is reproducible: every time stamp is the commit's (or
// SOURCE_DATE_EPOCH's), file order and modes are fixed.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
)

func main() {
	bin := flag.String("bin", "bin/capsule", "the capsule binary to release")
	root := flag.String("root", ".", "the capsule source tree the binary was built from (LICENSE, runtimes/*/dist)")
	out := flag.String("out", "dist", "directory to write the tarball and SHA256SUMS into")
	allowModified := flag.Bool("allow-modified", false, "release a binary built with uncommitted changes (not reproducible by anyone else)")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: capsule-release [-bin FILE] [-root DIR] [-out DIR]\n\n"+
			"Writes OUT/capsule-VERSION-linux-ARCH.tar.gz (binary, LICENSE, THIRD_PARTY_NOTICES,\n"+
			"SBOM.spdx.json, SHA256SUMS) and OUT/SHA256SUMS.\n\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 0 {
		flag.Usage()
		os.Exit(2)
	}
	rel, err := collect(*bin, *root, goToolchain{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "capsule-release:", err)
		os.Exit(1)
	}
	if rel.Modified && !*allowModified {
		fmt.Fprintf(os.Stderr, "capsule-release: %s was built with uncommitted changes, so nobody can rebuild it from commit %s; "+
			"commit them and run make dist again (or pass -allow-modified for a test release)\n", *bin, rel.Commit)
		os.Exit(1)
	}
	tarball, err := rel.write(*out)
	if err != nil {
		fmt.Fprintln(os.Stderr, "capsule-release:", err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "capsule-release: wrote %s (%d components) and %s\n",
		tarball, len(rel.Components), filepath.Join(*out, "SHA256SUMS"))
}
