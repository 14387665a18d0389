package snapcache

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// The integrity of a stored image is an HMAC-SHA256 over the file's name,
// this binary's build key, its size and its bytes, under a random key that
// the server creates in the cache directory as a 0600 file of its own.
// Unlike a plain hash beside the image, it cannot be recomputed by whoever
// edits an image without the key; and an image made by another binary, or
// copied from another cache, does not verify.

// keyFile holds the MAC key; keyBytes is its size.
const (
	keyFile  = "mac.key"
	keyBytes = 32
)

// loadKey reads the MAC key in dirfd, or creates it. A key file that is
// not a 0600 regular file of the server's user of the right size is
// replaced: the images it signed are then refused and made again.
func loadKey(dirfd int) ([]byte, error) {
	for range 2 {
		b, err := readKey(dirfd)
		if err == nil {
			return b, nil
		}
		if !errors.Is(err, os.ErrNotExist) {
			if err := unix.Unlinkat(dirfd, keyFile, 0); err != nil && !errors.Is(err, unix.ENOENT) {
				return nil, fmt.Errorf("removing the unusable %s: %w", keyFile, err)
			}
		}
		key := make([]byte, keyBytes)
		if _, err := rand.Read(key); err != nil {
			return nil, err
		}
		fd, err := unix.Openat(dirfd, keyFile, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
		if errors.Is(err, unix.EEXIST) {
			continue // another server made it meanwhile: read theirs
		}
		if err != nil {
			return nil, fmt.Errorf("creating %s: %w", keyFile, err)
		}
		f := os.NewFile(uintptr(fd), keyFile)
		_, err = f.Write(key)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return nil, fmt.Errorf("writing %s: %w", keyFile, err)
		}
		return key, nil
	}
	return nil, fmt.Errorf("%s keeps changing under the server", keyFile)
}

// readKey reads the key file, checking its mode and size.
func readKey(dirfd int) ([]byte, error) {
	f, size, err := openRegular(dirfd, keyFile, keyBytes)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.Mode().Perm()&0o077 != 0 || size != keyBytes {
		return nil, fmt.Errorf("%s has mode %v and %d bytes, not 0600 and %d", keyFile, st.Mode().Perm(), size, keyBytes)
	}
	b := make([]byte, keyBytes)
	if _, err := f.ReadAt(b, 0); err != nil {
		return nil, err
	}
	return b, nil
}

// newMAC starts the MAC of the file name of size bytes; the file's bytes
// follow.
func newMAC(key []byte, name string, size int64) hash.Hash {
	m := hmac.New(sha256.New, key)
	fmt.Fprintf(m, "capsule snapshot cache v1\x00%s\x00%s\x00%d\x00", name, buildKey(), size)
	return m
}

// macSuffix names the file that holds an image's size and MAC.
const macSuffix = ".mac"

// macRecord is what a .mac file holds: "v1 SIZE HEX\n".
func macRecord(size int64, sum []byte) []byte {
	return fmt.Appendf(nil, "v1 %d %x\n", size, sum)
}

// parseMACRecord reads a .mac file's contents.
func parseMACRecord(b []byte) (size int64, sum []byte, err error) {
	f := strings.Fields(string(b))
	if len(f) == 3 && f[0] == "v1" {
		size, err = strconv.ParseInt(f[1], 10, 64)
		if err == nil {
			sum, err = hex.DecodeString(f[2])
		}
		if err == nil && size >= 0 && len(sum) == sha256.Size {
			return size, sum, nil
		}
	}
	return 0, nil, fmt.Errorf("malformed MAC record %q", b)
}
