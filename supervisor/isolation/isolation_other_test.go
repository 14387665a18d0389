//go:build !linux

package isolation

import "testing"

func TestUnavailableOutsideLinux(t *testing.T) {
	_, r := SysProcAttr(Options{})
	if len(r.Layers) != 8 || len(r.Missing()) != 8 {
		t.Errorf("report %s, want 8 unavailable features", r)
	}
}
