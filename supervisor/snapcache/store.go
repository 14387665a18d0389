package snapcache

import (
	"bytes"
	"crypto/hmac"
	"fmt"
	"hash"
	"io"
	"os"
)

// readVerified copies the image name in dirfd into a new sealed memfd,
// checking it against the size and MAC recorded beside it on the way. The
// image must be a regular file of at most max bytes.
func readVerified(dirfd int, name string, key []byte, max int64) (*os.File, error) {
	rec, err := readSmall(dirfd, name+macSuffix, 256)
	if err != nil {
		return nil, err
	}
	want, sum, err := parseMACRecord(rec)
	if err != nil {
		return nil, err
	}
	src, size, err := openRegular(dirfd, name, max)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	if size != want {
		return nil, fmt.Errorf("%s is %d bytes, not the %d recorded when it was made (corrupt or tampered with)", name, size, want)
	}
	f, err := newMemfd("capsule-snapshot")
	if err != nil {
		return nil, err
	}
	mac := newMAC(key, name, size)
	n, err := copySparse(f, io.LimitReader(src, size), mac)
	switch {
	case err != nil:
	case n != size:
		err = fmt.Errorf("%s: read %d bytes of %d", name, n, size)
	case !hmac.Equal(mac.Sum(nil), sum):
		err = fmt.Errorf("%s does not match the MAC recorded when it was made (corrupt, tampered with, or made by another capsule)", name)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return seal(f)
}

// storeImage writes the image in f to name in dirfd, with its size and MAC
// beside it, each through a new temporary file renamed into place.
func storeImage(f *os.File, dirfd int, name string, key []byte) error {
	size, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		return err
	}
	tmp, tmpName, err := createTemp(dirfd)
	if err != nil {
		return err
	}
	mac := newMAC(key, name, size)
	_, err = copySparse(tmp, io.NewSectionReader(f, 0, size), mac)
	if err := renameInto(dirfd, tmp, tmpName, name, err); err != nil {
		return err
	}
	return writeFile(dirfd, name+macSuffix, macRecord(size, mac.Sum(nil)))
}

// copySparse copies src to the empty file dst, leaving holes where src has
// whole zero blocks (most of an image is), writes what it copied to sum
// too, and returns how many bytes it copied.
func copySparse(dst *os.File, src io.Reader, sum hash.Hash) (int64, error) {
	const block = 64 << 10
	buf := make([]byte, block)
	zero := make([]byte, block)
	var off int64
	for {
		n, err := io.ReadFull(src, buf)
		if n > 0 {
			sum.Write(buf[:n])
			if !bytes.Equal(buf[:n], zero[:n]) {
				if _, err := dst.WriteAt(buf[:n], off); err != nil {
					return off, err
				}
			}
			off += int64(n)
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			break
		}
		if err != nil {
			return off, err
		}
	}
	return off, dst.Truncate(off)
}
