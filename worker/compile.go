package worker

import (
	"context"
	"fmt"

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
