package supervisor

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

func TestHolds(t *testing.T) {
	image := bytes.Repeat([]byte("compiled image "), 100_000) // more than one read
	changed := bytes.Clone(image)
	changed[len(changed)-1] ^= 1
	for _, tc := range []struct {
		name     string
		contents []byte
		image    []byte
		want     bool
	}{
		{"the same bytes", image, image, true},
		{"the last byte differs", changed, image, false},
		{"shorter", image[:len(image)-1], image, false},
		{"longer", append(bytes.Clone(image), 0), image, false},
		{"no image given", image, nil, false},
		{"empty file, no image given", nil, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "code")
			if err := os.WriteFile(path, tc.contents, 0o600); err != nil {
				t.Fatal(err)
			}
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			got, err := holds(f, tc.image)
			if err != nil || got != tc.want {
				t.Fatalf("holds = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}
