package worker

import (
	"context"
	"fmt"

	"capsule/runtimes"
)

// compile loads language's module from the table, through the file
// compilation cache when cfg names one.
func compile(ctx context.Context, languages runtimes.Languages, language string, cfg runtimes.Config) (runtimes.Engine, error) {
	l, err := lookup(languages, language)
	if err != nil {
		return nil, err
	}
	return l.Compile(ctx, cfg)
}

// lookup returns the language named language from the table.
func lookup(languages runtimes.Languages, language string) (runtimes.Language, error) {
	l, ok := languages.Lookup(language)
	if !ok || l.Compile == nil {
		return runtimes.Language{}, fmt.Errorf("unknown language %q", language)
	}
	return l, nil
}
