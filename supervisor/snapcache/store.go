package snapcache

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// readVerified copies the image at path into a new sealed memfd, checking
// it against the SHA-256 recorded beside it on the way.
func readVerified(path string) (*os.File, error) {
	want, err := os.ReadFile(path + ".sha256")
	if err != nil {
		return nil, err
	}
	src, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	f, err := newMemfd("capsule-snapshot")
	if err != nil {
		return nil, err
	}
	sum, err := copySparse(f, src)
	if err == nil && sum != strings.TrimSpace(string(want)) {
		err = fmt.Errorf("its SHA-256 is %s, not the %s recorded when it was made (corrupt or tampered with)", sum, strings.TrimSpace(string(want)))
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return seal(f)
}

// storeImage writes the image in f to path, with its SHA-256 beside it,
// each atomically.
func storeImage(f *os.File, path string) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".snapshot-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	sum, err := copySparse(tmp, io.NewSectionReader(f, 0, 1<<62))
	if err == nil {
		err = tmp.Close()
	}
	if err == nil {
		err = writeFileAtomic(path+".sha256", []byte(sum+"\n"))
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	return err
}

// copySparse copies src to the empty file dst, leaving holes where src has
// whole zero blocks (most of an image is), and returns the SHA-256 of
// what it copied.
func copySparse(dst *os.File, src io.Reader) (string, error) {
	const block = 64 << 10
	h := sha256.New()
	buf := make([]byte, block)
	zero := make([]byte, block)
	var off int64
	for {
		n, err := io.ReadFull(src, buf)
		if n > 0 {
			h.Write(buf[:n])
			if !bytes.Equal(buf[:n], zero[:n]) {
				if _, err := dst.WriteAt(buf[:n], off); err != nil {
					return "", err
				}
			}
			off += int64(n)
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			break
		}
		if err != nil {
			return "", err
		}
	}
	if err := dst.Truncate(off); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func writeFileAtomic(path string, b []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
