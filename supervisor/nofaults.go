//go:build !capsule_faults

package supervisor

// faultEnv adds nothing to a worker's environment in production builds;
// see faults.go.
func faultEnv() []string { return nil }
