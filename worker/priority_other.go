//go:build !linux

package worker

// lowerPriority does nothing where workers do not run.
func lowerPriority() error { return nil }
