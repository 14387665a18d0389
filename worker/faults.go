//go:build capsule_faults

package worker

import (
	"os"
	"strings"
	"time"

	"capsule/ipc"
)

// injectFault lets tests make a worker misbehave on purpose. It is compiled
// only with the capsule_faults build tag, which production builds never set.
// The fault is chosen by the code's first line.
func injectFault(code string, out *ipc.Writer) {
	const prefix = "#capsule-fault:"
	if !strings.HasPrefix(code, prefix) {
		return
	}
	switch strings.TrimSpace(strings.SplitN(code[len(prefix):], "\n", 2)[0]) {
	case "oversized-frame":
		_ = out.WriteFrame(ipc.TypeStdout, make([]byte, 64<<20))
	case "malformed-frame":
		_ = out.WriteFrame(ipc.TypeDone, []byte(`{"result":`))
	case "unknown-frame":
		_ = out.WriteFrame(ipc.Type('Z'), []byte("{}"))
	case "never-answer":
		for {
			time.Sleep(time.Hour)
		}
	case "crash":
		os.Exit(7)
	default:
		return
	}
	os.Exit(0)
}
