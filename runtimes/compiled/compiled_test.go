package compiled

import (
	"runtime"
	"testing"
)

// The images the binary embeds are those the build recorded, one per
// runtime, on the one platform that has them.
func TestEmbedded(t *testing.T) {
	want := 0
	if runtime.GOOS == "linux" && runtime.GOARCH == "amd64" {
		want = 2
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
