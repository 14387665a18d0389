package python

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// PackagesDir is where an operator's --python-path is mounted, read-only,
// and put on sys.path (after the standard library, so it cannot shadow
// it).
const PackagesDir = "/usr/local/lib/python3.11/site-packages"

// Packages is an operator's set of extra pure-Python packages: a zip
// archive (mapped from its file, so the workers share its pages) or a
// directory (packed into an archive in memory at every worker's start; a
// zip is the better choice for anything large).
type Packages struct {
	// Names are the importable top-level packages and modules, sorted.
	Names   []string
	archive []byte
	mapped  bool
}

// compiledExtension matches the file names of compiled extension modules
// and native libraries: the sandbox runs WebAssembly only, and CPython
// here cannot load native code, so such a package could never work.
var compiledExtension = regexp.MustCompile(`(?i)\.(so|pyd|dylib|dll)(\.[0-9.]+)?$`)

// Digest is the SHA-256 of the packages as the guest sees them: an
// interpreter snapshot made with other packages is not used.
func (pk *Packages) Digest() string {
	sum := sha256.Sum256(pk.archive)
	return hex.EncodeToString(sum[:])
}

// OpenPackages reads the directory or zip archive at p, refusing it if it
// holds compiled extensions. Close releases it.
func OpenPackages(p string) (*Packages, error) {
	info, err := os.Stat(p)
	if err != nil {
		return nil, fmt.Errorf("python path: %w", err)
	}
	pk := &Packages{}
	if info.IsDir() {
		pk.archive, err = packDir(p)
	} else {
		pk.archive, err = mapFile(p, info.Size())
		pk.mapped = err == nil
	}
	if err != nil {
		return nil, fmt.Errorf("python path %s: %w", p, err)
	}
	zr, err := zip.NewReader(bytes.NewReader(pk.archive), int64(len(pk.archive)))
	if err != nil {
		pk.Close()
		return nil, fmt.Errorf("python path %s: not a directory or a zip archive: %w", p, err)
	}
	names := map[string]bool{}
	for _, f := range zr.File {
		if compiledExtension.MatchString(f.Name) {
			pk.Close()
			return nil, fmt.Errorf("python path %s holds a compiled extension (%s): only pure-Python packages can run in the sandbox", p, f.Name)
		}
		if name, ok := topLevelName(f.Name); ok {
			names[name] = true
		}
	}
	for name := range names {
		pk.Names = append(pk.Names, name)
	}
	slices.Sort(pk.Names)
	return pk, nil
}

// topLevelName is the importable name an archive entry belongs to, if
// any: a package directory, or a module file at the top.
func topLevelName(entry string) (string, bool) {
	first, rest, nested := strings.Cut(entry, "/")
	switch {
	case nested && rest == "" && !strings.Contains(first, "."):
		return first, true // a directory entry
	case nested:
		// Metadata (*.dist-info, *.egg-info) and caches are not packages.
		if strings.Contains(first, ".") || first == "__pycache__" {
			return "", false
		}
		return first, true
	case strings.HasSuffix(first, ".py") && first != "__init__.py":
		return strings.TrimSuffix(first, ".py"), true
	}
	return "", false
}

// packDir stores the regular files under dir in a zip archive in memory.
func packDir(dir string) ([]byte, error) {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil || rel == "." || d.IsDir() {
			return err
		}
		info, err := os.Stat(p) // a link to a file counts as the file
		if err != nil || !info.Mode().IsRegular() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		w, err := zw.CreateHeader(&zip.FileHeader{Name: path.Clean(filepath.ToSlash(rel)), Method: zip.Store})
		if err != nil {
			return err
		}
		_, err = w.Write(data)
		return err
	})
	if err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// mapFile maps a file read-only and shared: every worker of the host then
// serves the same pages.
func mapFile(p string, size int64) ([]byte, error) {
	if size <= 0 || size > 1<<32 {
		return nil, fmt.Errorf("not a zip archive of a usable size (%d bytes)", size)
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return unix.Mmap(int(f.Fd()), 0, int(size), unix.PROT_READ, unix.MAP_SHARED)
}

// Close releases the archive.
func (pk *Packages) Close() {
	if pk.mapped && pk.archive != nil {
		_ = unix.Munmap(pk.archive)
	}
	pk.archive = nil
}
