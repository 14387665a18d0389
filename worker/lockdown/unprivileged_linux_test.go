package lockdown

import (
	"testing"

	"capsule/worker/lockdown/unprivileged"
)

// TestUnprivileged re-runs this package's tests as uid/gid 65534 when the
// suite runs as root: the lockdown must work for a supervisor started by an
// ordinary user too.
func TestUnprivileged(t *testing.T) { unprivileged.Rerun(t, "TestUnprivileged") }
