package main

import (
	"capsule/runtimes"
	"capsule/runtimes/compiled"
	table "capsule/runtimes/languages"
)

// languages is the table of languages this binary runs (package
// languages), with the compiled images the binary embeds. The supervisor,
// its MCP edge and the worker take it from here.
func languages() runtimes.Languages {
	ls := table.All()
	for i := range ls {
		ls[i].Image = compiled.Image
	}
	return ls
}
