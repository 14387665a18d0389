package main

import (
	"strconv"
	"time"

	"capsule/cmd/capsule-release/archive"
	"capsule/cmd/capsule-release/oci"
)

// imageUID is the image's user and group: not root, and not a uid a host
// is likely to have given anyone (the "nonroot" of distroless images).
const imageUID = 65532

// imageFileName is the image archive's name in the output directory.
func (rel *release) imageFileName() string { return rel.Name + ".oci.tar" }

// image returns the container image of the release: the static binary at
// /capsule on an empty base, run as imageUID with its compilation cache in
// /cache (the one directory it owns), `capsule serve` on stdio by default,
// with the licence, notices and SBOM under /usr/share/doc/capsule. The
// labels say what it is; SECURITY.md and docs/deploy.md say how to run it.
func (rel *release) image() (oci.Image, error) {
	files, err := rel.files()
	if err != nil {
		return oci.Image{}, err
	}
	id := strconv.Itoa(imageUID)
	entries := []archive.Entry{
		{Name: "cache/", Mode: 0o700, UID: imageUID, GID: imageUID},
		{Name: "capsule", Mode: 0o755, Data: rel.Binary},
		{Name: "etc/", Mode: 0o755},
		{Name: "etc/group", Mode: 0o644, Data: []byte("root:x:0:\ncapsule:x:" + id + ":\n")},
		{Name: "etc/passwd", Mode: 0o644, Data: []byte("root:x:0:0:root:/:/sbin/nologin\n" +
			"capsule:x:" + id + ":" + id + ":capsule:/cache:/sbin/nologin\n")},
		{Name: "usr/", Mode: 0o755},
		{Name: "usr/share/", Mode: 0o755},
		{Name: "usr/share/doc/", Mode: 0o755},
		{Name: "usr/share/doc/capsule/", Mode: 0o755},
	}
	for _, f := range files {
		if f.name != "capsule" {
			entries = append(entries, archive.Entry{Name: "usr/share/doc/capsule/" + f.name, Mode: 0o644, Data: f.data})
		}
	}
	labels := map[string]string{
		"org.opencontainers.image.title":       imageName,
		"org.opencontainers.image.description": description,
		"org.opencontainers.image.version":     rel.Version,
		"org.opencontainers.image.revision":    rel.Commit,
		"org.opencontainers.image.source":      sourceURL,
		"org.opencontainers.image.licenses":    licence,
		"org.opencontainers.image.created":     rel.Created.UTC().Format(time.RFC3339),
	}
	return oci.Image{
		Name: imageName, Tag: rel.Version, Arch: rel.Arch, Created: rel.Created, Files: entries,
		Config: oci.Config{
			User:       id + ":" + id,
			Env:        []string{"XDG_CACHE_HOME=/cache"},
			Entrypoint: []string{"/capsule"},
			Cmd:        []string{"serve"},
			WorkingDir: "/",
			Labels:     labels,
			StopSignal: "SIGTERM",
		},
		Annotations: labels,
	}, nil
}
