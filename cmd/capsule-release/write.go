package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
)

// releaseFile is one file of the tarball.
type releaseFile struct {
	name string
	mode int64
	data []byte
}

// files returns the tarball's files in their fixed order, SHA256SUMS last.
func (rel *release) files() ([]releaseFile, error) {
	sbom, err := rel.sbom()
	if err != nil {
		return nil, err
	}
	files := []releaseFile{
		{"capsule", 0o755, rel.Binary},
		{"LICENSE", 0o644, rel.Licence},
		{"THIRD_PARTY_NOTICES", 0o644, rel.notices()},
		{"SBOM.spdx.json", 0o644, sbom},
	}
	var sums bytes.Buffer
	for _, f := range files {
		fmt.Fprintf(&sums, "%x  %s\n", sha256.Sum256(f.data), f.name)
	}
	return append(files, releaseFile{"SHA256SUMS", 0o644, sums.Bytes()}), nil
}

// write writes OUT/NAME.tar.gz and OUT/SHA256SUMS and returns the tarball's
// path. Every header carries the release time, owner 0 and a fixed mode,
// and gzip records no name or time, so the tarball is reproducible.
func (rel *release) write(out string) (string, error) {
	files, err := rel.files()
	if err != nil {
		return "", err
	}
	var buf bytes.Buffer
	gz, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	tw := tar.NewWriter(gz)
	hdr := func(name string, typ byte, mode, size int64) *tar.Header {
		return &tar.Header{Typeflag: typ, Name: name, Mode: mode, Size: size, ModTime: rel.Created,
			Format: tar.FormatUSTAR}
	}
	if err := tw.WriteHeader(hdr(rel.Name+"/", tar.TypeDir, 0o755, 0)); err != nil {
		return "", err
	}
	for _, f := range files {
		if err := tw.WriteHeader(hdr(rel.Name+"/"+f.name, tar.TypeReg, f.mode, int64(len(f.data)))); err != nil {
			return "", err
		}
		if _, err := tw.Write(f.data); err != nil {
			return "", err
		}
	}
	if err := tw.Close(); err != nil {
		return "", err
	}
	if err := gz.Close(); err != nil {
		return "", err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return "", err
	}
	tarball := filepath.Join(out, rel.Name+".tar.gz")
	if err := writeFile(tarball, buf.Bytes()); err != nil {
		return "", err
	}
	sums := fmt.Sprintf("%x  %s\n", sha256.Sum256(buf.Bytes()), filepath.Base(tarball))
	return tarball, writeFile(filepath.Join(out, "SHA256SUMS"), []byte(sums))
}

// writeFile replaces path atomically.
func writeFile(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
