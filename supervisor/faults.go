//go:build capsule_faults

package supervisor

import "os"

// startDelayEnv names the test-only delay of a worker's start (see
// worker/faults.go): in a capsule_faults build the server passes it on from
// its own environment to its workers, whose environment is otherwise only
// workerEnv. Production builds never read it.
const startDelayEnv = "CAPSULE_FAULT_START_DELAY"

// faultEnv is what a worker's environment gets on top of workerEnv.
func faultEnv() []string {
	if v, ok := os.LookupEnv(startDelayEnv); ok {
		return []string{startDelayEnv + "=" + v}
	}
	return nil
}
