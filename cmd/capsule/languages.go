package main

import (
	"capsule/runtimes"
	"capsule/runtimes/compiled"
	"capsule/runtimes/javascript"
	"capsule/runtimes/python"
)

// languages is the table of languages this binary runs, in the order the
// tools are listed: each runtime's own description, with the compiled
// image the binary embeds for it. The supervisor, its MCP edge and the
// worker take it from here; adding a language adds its runtime here.
func languages() runtimes.Languages {
	ls := runtimes.Languages{python.Language(), javascript.Language()}
	for i := range ls {
		ls[i].Image = compiled.Image(ls[i].Name)
	}
	return ls
}
