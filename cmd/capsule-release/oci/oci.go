// Package oci writes a single-layer container image as an OCI image layout
// in one tar file (an "OCI archive", which podman load and skopeo read), so
// an image can be built without a container daemon and with the same bytes
// every time: the layer and the archive are written by package archive
// (fixed time, owners and order; gzip without a time stamp), and every
// JSON document is marshalled from structs and sorted maps.
//
// The archive also carries the manifest.json that `docker save` writes
// beside the layout, naming the same blobs, for tools that read only that.
//
// Specifications: the OCI image layout, manifest, image index and image
// configuration of the OCI image format specification v1.1.
package oci

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"capsule/cmd/capsule-release/archive"
)

// Media types of the documents and the layer.
const (
	MediaTypeIndex     = "application/vnd.oci.image.index.v1+json"
	MediaTypeManifest  = "application/vnd.oci.image.manifest.v1+json"
	MediaTypeConfig    = "application/vnd.oci.image.config.v1+json"
	MediaTypeLayerGzip = "application/vnd.oci.image.layer.v1.tar+gzip"
)

// Descriptor points at a blob.
type Descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int64             `json:"size"`
	Platform    *Platform         `json:"platform,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// Platform is the system an image runs on.
type Platform struct {
	Architecture string `json:"architecture"`
	OS           string `json:"os"`
	Variant      string `json:"variant,omitempty"`
}

// Config is the execution part of an image configuration: what a runtime
// starts and how.
type Config struct {
	User       string            `json:"User,omitempty"`
	Env        []string          `json:"Env,omitempty"`
	Entrypoint []string          `json:"Entrypoint,omitempty"`
	Cmd        []string          `json:"Cmd,omitempty"`
	WorkingDir string            `json:"WorkingDir,omitempty"`
	Labels     map[string]string `json:"Labels,omitempty"`
	StopSignal string            `json:"StopSignal,omitempty"`
}

// Image is a one-layer image for Linux.
type Image struct {
	// Name and Tag name the image when it is loaded (Name:Tag).
	Name, Tag string
	// Arch is the GOARCH it runs on, which is also the OCI architecture.
	Arch string
	// Created stamps the configuration, the history and every tar header.
	Created time.Time
	// Files is the layer's contents, in order; directories come before
	// what they hold.
	Files []archive.Entry
	// Config is what a runtime starts.
	Config Config
	// Annotations go on the manifest and on its descriptor in index.json.
	Annotations map[string]string
}

type imageConfig struct {
	Created      string    `json:"created"`
	Architecture string    `json:"architecture"`
	Variant      string    `json:"variant,omitempty"`
	OS           string    `json:"os"`
	Config       Config    `json:"config"`
	RootFS       rootFS    `json:"rootfs"`
	History      []history `json:"history"`
}

type rootFS struct {
	Type    string   `json:"type"`
	DiffIDs []string `json:"diff_ids"`
}

type history struct {
	Created   string `json:"created"`
	CreatedBy string `json:"created_by"`
}

type manifest struct {
	SchemaVersion int               `json:"schemaVersion"`
	MediaType     string            `json:"mediaType"`
	Config        Descriptor        `json:"config"`
	Layers        []Descriptor      `json:"layers"`
	Annotations   map[string]string `json:"annotations,omitempty"`
}

type index struct {
	SchemaVersion int          `json:"schemaVersion"`
	MediaType     string       `json:"mediaType"`
	Manifests     []Descriptor `json:"manifests"`
}

// dockerManifest is one entry of `docker save`'s manifest.json.
type dockerManifest struct {
	Config   string
	RepoTags []string
	Layers   []string
}

// RefNameAnnotation names a manifest in an image layout's index.json.
const RefNameAnnotation = "org.opencontainers.image.ref.name"

// blob is one content-addressed file of the layout.
type blob struct {
	digest string // sha256:HEX
	data   []byte
}

func newBlob(data []byte) blob {
	return blob{digest: fmt.Sprintf("sha256:%x", sha256.Sum256(data)), data: data}
}

func (b blob) path() string { return "blobs/sha256/" + b.digest[len("sha256:"):] }

func (b blob) descriptor(mediaType string) Descriptor {
	return Descriptor{MediaType: mediaType, Digest: b.digest, Size: int64(len(b.data))}
}

// Archive returns the image as an OCI image layout in a tar file, and the
// manifest's digest (what a registry and `podman inspect` call the image's
// digest).
func (img *Image) Archive() ([]byte, string, error) {
	layerTar, err := archive.Tar(img.Files, img.Created)
	if err != nil {
		return nil, "", err
	}
	layer := newBlob(archive.Gzip(layerTar))
	platform := Platform{Architecture: img.Arch, OS: "linux"}
	if img.Arch == "arm64" {
		platform.Variant = "v8"
	}
	created := img.Created.UTC().Format(time.RFC3339)
	cfg, err := json.Marshal(imageConfig{
		Created: created, Architecture: platform.Architecture, Variant: platform.Variant, OS: platform.OS,
		Config:  img.Config,
		RootFS:  rootFS{Type: "layers", DiffIDs: []string{newBlob(layerTar).digest}},
		History: []history{{Created: created, CreatedBy: "capsule-release (one layer, written without a container daemon)"}},
	})
	if err != nil {
		return nil, "", err
	}
	config := newBlob(cfg)
	man, err := json.Marshal(manifest{
		SchemaVersion: 2, MediaType: MediaTypeManifest,
		Config:      config.descriptor(MediaTypeConfig),
		Layers:      []Descriptor{layer.descriptor(MediaTypeLayerGzip)},
		Annotations: img.Annotations,
	})
	if err != nil {
		return nil, "", err
	}
	mani := newBlob(man)
	desc := mani.descriptor(MediaTypeManifest)
	desc.Platform = &platform
	desc.Annotations = map[string]string{RefNameAnnotation: img.Name + ":" + img.Tag}
	for k, v := range img.Annotations {
		desc.Annotations[k] = v
	}
	idx, err := json.Marshal(index{SchemaVersion: 2, MediaType: MediaTypeIndex, Manifests: []Descriptor{desc}})
	if err != nil {
		return nil, "", err
	}
	docker, err := json.Marshal([]dockerManifest{{Config: config.path(), RepoTags: []string{img.Name + ":" + img.Tag},
		Layers: []string{layer.path()}}})
	if err != nil {
		return nil, "", err
	}

	blobs := []blob{layer, config, mani}
	sort.Slice(blobs, func(i, j int) bool { return blobs[i].digest < blobs[j].digest })
	entries := []archive.Entry{{Name: "blobs/", Mode: 0o755}, {Name: "blobs/sha256/", Mode: 0o755}}
	for _, b := range blobs {
		entries = append(entries, archive.Entry{Name: b.path(), Mode: 0o644, Data: b.data})
	}
	entries = append(entries,
		archive.Entry{Name: "index.json", Mode: 0o644, Data: idx},
		archive.Entry{Name: "manifest.json", Mode: 0o644, Data: docker},
		archive.Entry{Name: "oci-layout", Mode: 0o644, Data: []byte(`{"imageLayoutVersion":"1.0.0"}`)})
	tarball, err := archive.Tar(entries, img.Created)
	return tarball, mani.digest, err
}
