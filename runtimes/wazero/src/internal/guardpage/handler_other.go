//go:build !(linux && amd64)

package guardpage

import "errors"

// Supported reports whether this platform has the fault handler: only
// linux/amd64 has one, elsewhere memories keep their bounds checks.
const Supported = false

func install() error {
	return errors.New("guard pages: no fault handler for this platform")
}
