package main

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"

	"capsule/cmd/capsule-release/archive"
)

// namedFile is one file of a tarball, or one artefact of the output
// directory (where the mode is not used).
type namedFile struct {
	name string
	mode int64
	data []byte
}

// sha256sums renders files' hashes in sha256sum's format, in their order.
func sha256sums(files []namedFile) []byte {
	var sums bytes.Buffer
	for _, f := range files {
		fmt.Fprintf(&sums, "%x  %s\n", sha256.Sum256(f.data), f.name)
	}
	return sums.Bytes()
}

// files returns the tarball's files in their fixed order, SHA256SUMS last.
func (rel *release) files() ([]namedFile, error) {
	sbom, err := rel.sbom()
	if err != nil {
		return nil, err
	}
	files := []namedFile{
		{"capsule", 0o755, rel.Binary},
		{"LICENSE", 0o644, rel.Licence},
		{"THIRD_PARTY_NOTICES", 0o644, rel.notices()},
		{"SBOM.spdx.json", 0o644, sbom},
	}
	return append(files, namedFile{"SHA256SUMS", 0o644, sha256sums(files)}), nil
}

// tarball returns NAME.tar.gz: the files under NAME/, every header with the
// release time, owner 0 and a fixed mode (package archive), so the tarball
// is reproducible.
func (rel *release) tarball() (namedFile, error) {
	files, err := rel.files()
	if err != nil {
		return namedFile{}, err
	}
	entries := []archive.Entry{{Name: rel.Name + "/", Mode: 0o755}}
	for _, f := range files {
		entries = append(entries, archive.Entry{Name: rel.Name + "/" + f.name, Mode: f.mode, Data: f.data})
	}
	b, err := archive.TarGz(entries, rel.Created)
	return namedFile{name: rel.Name + ".tar.gz", data: b}, err
}

// writeArtefacts writes each artefact into out, then OUT/SHA256SUMS with
// the hashes of them all, in their order.
func writeArtefacts(out string, arts []namedFile) error {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	for _, a := range arts {
		if err := writeFile(filepath.Join(out, a.name), a.data); err != nil {
			return err
		}
	}
	return writeFile(filepath.Join(out, "SHA256SUMS"), sha256sums(arts))
}

// writeFile replaces path atomically.
func writeFile(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
