//go:build !capsule_faults

package worker

import "capsule/ipc"

// injectFault does nothing in production builds; see faults.go.
func injectFault(string, *ipc.Writer) {}
