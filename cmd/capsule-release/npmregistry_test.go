package main

import (
	"crypto/sha1"
	"crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// testRegistry is an npm registry on 127.0.0.1 that serves the release's
// npm packages, which are not published: for each a packument (the
// document npm asks a registry for by name: versions, dist-tags, and per
// version the package.json with the tarball's address, sha512 integrity
// and sha1 shasum) and its tarball. Anything else is 404, so a test that
// points npm at it (npm_config_registry) needs no network and fetches
// nothing it did not mean to.
type testRegistry struct {
	URL    string // with a trailing slash, as npm_config_registry takes it
	mu     sync.Mutex
	served []string // the paths of the tarballs served, in order
}

// startRegistry serves the npm package tarballs at paths until the test
// ends.
func startRegistry(t *testing.T, paths ...string) *testRegistry {
	t.Helper()
	reg := &testRegistry{}
	docs := map[string][]byte{} // URL path → packument or tarball
	tarballs := map[string]bool{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// npm asks for @scope%2fname; the URL's Path has it decoded.
		doc, ok := docs[r.URL.Path]
		if !ok || r.Method != http.MethodGet {
			http.Error(w, `{"error":"Not found"}`, http.StatusNotFound)
			return
		}
		if tarballs[r.URL.Path] {
			reg.mu.Lock()
			reg.served = append(reg.served, r.URL.Path)
			reg.mu.Unlock()
			w.Header().Set("Content-Type", "application/octet-stream")
		} else {
			w.Header().Set("Content-Type", "application/json")
		}
		w.Write(doc)
	}))
	t.Cleanup(srv.Close)
	reg.URL = srv.URL + "/"
	for _, path := range paths {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		files, _ := readTarballModes(t, data, "package")
		var manifest map[string]any
		if err := json.Unmarshal(files["package.json"], &manifest); err != nil {
			t.Fatalf("%s: package.json: %v", filepath.Base(path), err)
		}
		name, _ := manifest["name"].(string)
		version, _ := manifest["version"].(string)
		tarPath := registryTarballPath(name, version)
		s512, s1 := sha512.Sum512(data), sha1.Sum(data)
		manifest["_id"] = name + "@" + version
		manifest["dist"] = map[string]string{"tarball": srv.URL + tarPath,
			"integrity": "sha512-" + base64.StdEncoding.EncodeToString(s512[:]), "shasum": fmt.Sprintf("%x", s1)}
		packument, _ := json.Marshal(map[string]any{"name": name, "dist-tags": map[string]string{"latest": version},
			"versions": map[string]any{version: manifest}})
		docs["/"+name], docs[tarPath], tarballs[tarPath] = packument, data, true
	}
	return reg
}

// registryTarballPath is where the registry serves a package's tarball:
// where npm's public registry does, /@scope/name/-/name-version.tgz.
func registryTarballPath(name, version string) string {
	_, base, _ := strings.Cut(name, "/")
	return "/" + name + "/-/" + base + "-" + version + ".tgz"
}

// servedTarballs returns the paths of the tarballs npm fetched so far.
func (reg *testRegistry) servedTarballs() []string {
	reg.mu.Lock()
	defer reg.mu.Unlock()
	return append([]string(nil), reg.served...)
}

// env returns an environment with HOME set to home (a new, empty
// directory), the PATH, npm pointed at the registry and extra: no proxy,
// no npmrc of the caller's, no other registry.
func (reg *testRegistry) env(home string, extra ...string) []string {
	env := []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "npm_config_registry=" + reg.URL}
	return append(env, extra...)
}
