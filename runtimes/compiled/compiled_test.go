package compiled

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"runtime"
	"strings"
	"testing"

	"github.com/tetratelabs/wazero/experimental"
)

// The images the binary embeds are those the build recorded, one per
// module (each language's, and the numpy variant's own), on the platforms
// that have them, each compiled for the
// binary's architecture and the baseline CPU features.
func TestEmbedded(t *testing.T) {
	want := 0
	if runtime.GOOS == "linux" && (runtime.GOARCH == "amd64" || runtime.GOARCH == "arm64") {
		want = 3
	}
	if got := len(Names()); got != want {
		t.Fatalf("%d images embedded (%v), want %d", got, Names(), want)
	}
	for _, name := range Names() {
		if len(Image(name[:len(name)-len(".image")])) == 0 {
			t.Errorf("%s is empty", name)
		}
	}
	if errs := Verify(); len(errs) != 0 {
		t.Fatal(errs)
	}
	for _, name := range Names() {
		target, err := ReadTarget(Image(name[:len(name)-len(".image")]))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if target.GOARCH != runtime.GOARCH || !target.Baseline || target.GuardPages != experimental.MemoryGuardPagesSupported {
			t.Errorf("%s was compiled for %s, want linux/%s, the baseline, guard pages %v", name, target, runtime.GOARCH, experimental.MemoryGuardPagesSupported)
		}
	}
}

// An image whose header names another architecture is refused even when
// its bytes are those the build recorded.
func TestVerifyRefusesAnotherArchitecture(t *testing.T) {
	if images == nil {
		t.Skip("no images on this platform")
	}
	saved, savedAssets := images["javascript"], assets
	defer func() { images["javascript"], assets = saved, savedAssets }()
	other := map[string]string{"amd64": "arm64", "arm64": "amd64"}[runtime.GOARCH]
	changed := bytes.Replace(saved, []byte(runtime.GOARCH), []byte(other), 1)
	savedSum, sum := sha256.Sum256(saved), sha256.Sum256(changed)
	assets = []byte(strings.Replace(string(assets), hex.EncodeToString(savedSum[:]), hex.EncodeToString(sum[:]), 1))
	images["javascript"] = changed
	errs := Verify()
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "compiled for linux/"+other) {
		t.Fatalf("Verify = %v, want one error naming linux/%s", errs, other)
	}
}

func TestReadTarget(t *testing.T) {
	header := func(arch string, cpu uint64, flags byte) []byte {
		b := append([]byte("WZIMAGE1"), 7)
		b = append(b, "v1.12.0"...)
		b = append(b, byte(len(arch)))
		b = append(b, arch...)
		b = binary.LittleEndian.AppendUint64(b, cpu)
		b = binary.LittleEndian.AppendUint64(b, 0xff)
		return append(b, flags)
	}
	for _, c := range []struct {
		name  string
		image []byte
		want  Target
		err   string
	}{
		{"arm64 baseline with guard pages", header("arm64", 0, 6), Target{GOARCH: "arm64", Baseline: true, GuardPages: true}, ""},
		{"amd64 baseline", header("amd64", 0x1c, 4), Target{GOARCH: "amd64", CPUFeatures: 0x1c, Baseline: true}, ""},
		{"host features", header("amd64", 0x3c, 1), Target{GOARCH: "amd64", CPUFeatures: 0x3c}, ""},
		{"bad magic", []byte("WZIMAGE2xxxxxxxxxxxxxxxxxxxxxxxxx"), Target{}, "bad magic"},
		{"truncated version", []byte("WZIMAGE1\x09v1"), Target{}, "truncated"},
		{"truncated flags", header("arm64", 0, 6)[:30], Target{}, "truncated"},
		{"empty", nil, Target{}, "bad magic"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := ReadTarget(c.image)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("ReadTarget = %v, %v, want an error with %q", got, err, c.err)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("ReadTarget = %+v, %v, want %+v", got, err, c.want)
			}
		})
	}
}

func TestVerifyRefusesChangedBytes(t *testing.T) {
	if images == nil {
		t.Skip("no images on this platform")
	}
	saved := images["javascript"]
	defer func() { images["javascript"] = saved }()
	changed := append([]byte(nil), saved...)
	changed[len(changed)/2] ^= 1
	images["javascript"] = changed
	if errs := Verify(); len(errs) != 1 {
		t.Fatalf("Verify = %v, want one error for javascript.image", errs)
	}
}
