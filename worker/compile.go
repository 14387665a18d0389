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

// ownModules say, by language, whether a variant runs a module of its own
// rather than the plain interpreter's (python.OwnModule).
var ownModules = map[string]func(variant string) bool{
	runtimes.Python: python.OwnModule,
}

// OwnModule reports whether language's variant runs a module of its own:
// its snapshot worker then loads (or compiles) that module as a plain one
// does, instead of the plain snapshot's compiled image.
func OwnModule(language, variant string) bool {
	own := ownModules[language]
	return variant != "" && own != nil && own(variant)
}

// identities give each language's snapshot identity, for a variant (""
// for the plain interpreter).
var identities = map[string]func(variant string) (string, error){
	runtimes.Python: python.VariantIdentity,
	runtimes.JavaScript: func(variant string) (string, error) {
		if variant != "" {
			return "", fmt.Errorf("javascript has no snapshot variant %q", variant)
		}
		return javascript.Identity(), nil
	},
}

// SnapshotKey names the interpreter snapshot of language, or of one of its
// variants, for a memory limit: it changes with anything the image depends
// on (the runtime's module, data and start-up program, the variant's
// imports, the limit, the architecture, and whether the compiled code has
// bounds checks or relies on guard pages), so an image made by another
// binary or for other limits is never used.
func SnapshotKey(language, variant string, memoryBytes uint64) (string, error) {
	identity, ok := identities[language]
	if !ok {
		return "", fmt.Errorf("unknown language %q", language)
	}
	id, err := identity(variant)
	if err != nil {
		return "", err
	}
	h := sha256.Sum256(fmt.Appendf(nil, "%s\x00%d\x00%s\x00guard-pages=%t", id, memoryBytes, runtime.GOARCH, runtimes.GuardPages()))
	return language + "-" + hex.EncodeToString(h[:16]), nil
}
