//go:build !linux

package lockdown

import (
	"errors"
	"fmt"
)

// Apply is unavailable outside Linux: it returns a report with every layer
// unavailable and an error wrapping errors.ErrUnsupported, so that a worker
// refuses to run untrusted code rather than run it unconfined.
func Apply(opts Options) (Report, error) {
	return unavailableReport("not Linux"), fmt.Errorf("lockdown unavailable: not Linux: %w", errors.ErrUnsupported)
}

// Probe reports every layer unavailable outside Linux.
func Probe() Report { return unavailableReport("not Linux") }

// unavailableReport is the report of a platform where no layer exists.
func unavailableReport(reason string) Report {
	names := []string{LayerRlimits, LayerNoNewPrivs, LayerLandlock, LayerSeccomp}
	r := Report{Layers: make([]Layer, len(names))}
	for i, n := range names {
		r.Layers[i] = Layer{Name: n, Reason: reason}
	}
	return r
}
