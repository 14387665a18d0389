//go:build !linux

package lockdown

import (
	"errors"
	"testing"
)

func TestUnavailableOutsideLinux(t *testing.T) {
	r, err := Apply(Options{CPUTime: 1})
	if !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("Apply: %v, want ErrUnsupported", err)
	}
	for _, rep := range []Report{r, Probe()} {
		if len(rep.Layers) != 4 || len(rep.Missing()) != 4 {
			t.Errorf("report %s, want 4 unavailable layers", rep)
		}
	}
}
