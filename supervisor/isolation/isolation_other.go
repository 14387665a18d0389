//go:build !linux

package isolation

import "syscall"

// SysProcAttr returns empty attributes outside Linux, where namespaces,
// Pdeathsig and this package's process-group handling do not exist; the
// report lists every feature as unavailable.
func SysProcAttr(opts Options) (*syscall.SysProcAttr, Report) {
	var r Report
	for _, name := range append(append([]string{}, namespaceLayers...), LayerPdeathsig, LayerSetpgid) {
		r.Layers = append(r.Layers, Layer{Name: name, Reason: "not Linux"})
	}
	return &syscall.SysProcAttr{}, r
}
