//go:build !(linux && (amd64 || arm64))

package compiled

// Only linux/amd64 and linux/arm64 binaries embed images.
var (
	images map[string][]byte
	assets []byte
)
