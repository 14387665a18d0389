//go:build !(linux && amd64)

package isolation

import "os/exec"

// startCmd starts cmd with os/exec: the vfork spawner
// (vfork_linux_amd64.go) exists for linux/amd64 only.
func startCmd(cmd *exec.Cmd) error { return cmd.Start() }
