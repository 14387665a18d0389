package worker

import (
	"fmt"
	"time"

	"capsule/ipc"
	"capsule/runtimes"
	"capsule/worker/lockdown"
)

// cpuMargin is added to the longest execution for the CPU-time rlimit: the
// rlimit is a backstop behind the worker's own timer and the supervisor's
// kill, and must never be what ends a well-behaved run.
const cpuMargin = 5 * time.Second

// harden is where the worker puts the OS between itself and the guest. It
// runs after the module is compiled and before any untrusted byte is read.
func harden(setup *ipc.Setup) error {
	if err := closeInheritedFiles(); err != nil {
		return fmt.Errorf("closing inherited descriptors: %w", err)
	}
	_, err := lockdown.Apply(lockdown.Options{
		CPUTime: time.Duration(setup.MaxTimeoutMS)*time.Millisecond + cpuMargin,
		Data:    uint64(runtimes.WorkerBounds(setup.Language, int64(setup.MemoryBytes), setup.ScratchBytes).Data),
	})
	return err
}
