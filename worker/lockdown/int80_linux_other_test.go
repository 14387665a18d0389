//go:build linux && !amd64

package lockdown

import "errors"

// int80Getpid is x86 only; elsewhere the attack is reported as impossible,
// which makes the test skip it.
func int80Getpid(any) error { return errors.New("int 0x80 is x86 only") }
