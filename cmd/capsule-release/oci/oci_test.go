package oci

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"testing"
	"time"

	"capsule/cmd/capsule-release/archive"
)

func testImage(arch string) *Image {
	return &Image{
		Name: "capsule", Tag: "1.2.3", Arch: arch, Created: time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC),
		Files: []archive.Entry{
			{Name: "cache/", Mode: 0o700, UID: 65532, GID: 65532},
			{Name: "capsule", Mode: 0o755, Data: []byte("\x7fELF binary")},
		},
		Config:      Config{User: "65532:65532", Entrypoint: []string{"/capsule"}, Cmd: []string{"serve"}, Labels: map[string]string{"b": "2", "a": "1"}},
		Annotations: map[string]string{"org.opencontainers.image.version": "1.2.3"},
	}
}

// readTar returns a tar file's regular files and checks every header is
// stamped with when and owned as the entries say.
func readTar(t *testing.T, data []byte, when time.Time) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	tr := tar.NewReader(bytes.NewReader(data))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		if !h.ModTime.Equal(when) || h.Uname != "" || h.Gname != "" {
			t.Errorf("%s: mtime %v uname %q gname %q", h.Name, h.ModTime, h.Uname, h.Gname)
		}
		if h.Typeflag == tar.TypeReg {
			files[h.Name], _ = io.ReadAll(tr)
		}
	}
}

func blobOf(t *testing.T, files map[string][]byte, d Descriptor) []byte {
	t.Helper()
	var hexDigest string
	if _, err := fmt.Sscanf(d.Digest, "sha256:%s", &hexDigest); err != nil {
		t.Fatalf("digest %q", d.Digest)
	}
	b, ok := files["blobs/sha256/"+hexDigest]
	if !ok {
		t.Fatalf("no blob %s", d.Digest)
	}
	if fmt.Sprintf("sha256:%x", sha256.Sum256(b)) != d.Digest || int64(len(b)) != d.Size {
		t.Fatalf("blob %s: digest or size %d does not match", d.Digest, d.Size)
	}
	return b
}

// TestArchive: the layout's documents point at blobs that hash to their
// digests, the configuration names the uncompressed layer, the layer holds
// the files with their owners, and the same image gives the same bytes.
func TestArchive(t *testing.T) {
	for _, arch := range []string{"amd64", "arm64"} {
		t.Run(arch, func(t *testing.T) {
			img := testImage(arch)
			data, digest, err := img.Archive()
			if err != nil {
				t.Fatal(err)
			}
			again, digest2, _ := testImage(arch).Archive()
			if !bytes.Equal(data, again) || digest != digest2 {
				t.Fatal("two archives of the same image differ")
			}
			files := readTar(t, data, img.Created)
			if string(files["oci-layout"]) != `{"imageLayoutVersion":"1.0.0"}` {
				t.Errorf("oci-layout %q", files["oci-layout"])
			}
			var idx index
			if err := json.Unmarshal(files["index.json"], &idx); err != nil || len(idx.Manifests) != 1 {
				t.Fatalf("index.json: %v %s", err, files["index.json"])
			}
			desc := idx.Manifests[0]
			if desc.Digest != digest || desc.Platform.Architecture != arch || desc.Platform.OS != "linux" ||
				desc.Annotations[RefNameAnnotation] != "capsule:1.2.3" {
				t.Errorf("index descriptor %+v", desc)
			}
			if (arch == "arm64") != (desc.Platform.Variant == "v8") {
				t.Errorf("%s: variant %q", arch, desc.Platform.Variant)
			}
			var man manifest
			if err := json.Unmarshal(blobOf(t, files, desc), &man); err != nil {
				t.Fatal(err)
			}
			var cfg imageConfig
			if err := json.Unmarshal(blobOf(t, files, man.Config), &cfg); err != nil {
				t.Fatal(err)
			}
			if cfg.Architecture != arch || cfg.OS != "linux" || cfg.Config.User != "65532:65532" || cfg.Config.Labels["a"] != "1" ||
				cfg.Created != "2026-12-03T10:00:00Z" {
				t.Errorf("config %+v", cfg)
			}
			gz, err := gzip.NewReader(bytes.NewReader(blobOf(t, files, man.Layers[0])))
			if err != nil {
				t.Fatal(err)
			}
			layer, _ := io.ReadAll(gz)
			if fmt.Sprintf("sha256:%x", sha256.Sum256(layer)) != cfg.RootFS.DiffIDs[0] {
				t.Error("diff_id is not the uncompressed layer's digest")
			}
			tr := tar.NewReader(bytes.NewReader(layer))
			var names []string
			for {
				h, err := tr.Next()
				if err != nil {
					break
				}
				names = append(names, fmt.Sprintf("%s %o %d:%d", h.Name, h.Mode, h.Uid, h.Gid))
			}
			if fmt.Sprint(names) != "[cache/ 700 65532:65532 capsule 755 0:0]" {
				t.Errorf("layer %v", names)
			}
			var docker []dockerManifest
			if err := json.Unmarshal(files["manifest.json"], &docker); err != nil || len(docker) != 1 ||
				docker[0].RepoTags[0] != "capsule:1.2.3" || files[docker[0].Config] == nil || files[docker[0].Layers[0]] == nil {
				t.Errorf("manifest.json: %v %s", err, files["manifest.json"])
			}
		})
	}
}
