//go:build !(linux && amd64)

package compiled

// Only linux/amd64 binaries embed images.
var (
	images map[string][]byte
	assets []byte
)
