package worker

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"runtime"

	"capsule/runtimes"
	"capsule/runtimes/javascript"
	"capsule/runtimes/python"
)

var compilers = map[string]func(context.Context, runtimes.Config) (runtimes.Engine, error){
	runtimes.Python:     python.Compile,
	runtimes.JavaScript: javascript.Compile,
}

// Compile loads language's module, through the file compilation cache when
// cfg names one. The supervisor calls it too, at start, to fill the cache.
func Compile(ctx context.Context, language string, cfg runtimes.Config) (runtimes.Engine, error) {
	c, ok := compilers[language]
	if !ok {
		return nil, fmt.Errorf("unknown language %q", language)
	}
	return c(ctx, cfg)
}

var identities = map[string]func() string{
	runtimes.Python:     python.Identity,
	runtimes.JavaScript: javascript.Identity,
}

// SnapshotKey names the interpreter snapshot of language for a memory
// limit: it changes with anything the image depends on (the runtime's
// module, data and start-up program, the limit, the architecture, and
// whether the compiled code has bounds checks or relies on guard pages), so
// an image made by another binary or for other limits is never used.
func SnapshotKey(language string, memoryBytes uint64) (string, error) {
	id, ok := identities[language]
	if !ok {
		return "", fmt.Errorf("unknown language %q", language)
	}
	h := sha256.Sum256(fmt.Appendf(nil, "%s\x00%d\x00%s\x00guard-pages=%t", id(), memoryBytes, runtime.GOARCH, runtimes.GuardPages()))
	return language + "-" + hex.EncodeToString(h[:16]), nil
}
