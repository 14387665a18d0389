// Package languages is the table of the languages capsule runs: each
// runtime's own description (runtimes.Language), in the order the tools
// are listed. cmd/capsule hands it, with the binary's compiled images, to
// the supervisor, its MCP edge and the worker; runtimes/compiled/write
// compiles its modules. Adding a language adds its runtime here.
package languages

import (
	"capsule/runtimes"
	"capsule/runtimes/javascript"
	"capsule/runtimes/python"
)

// All are the languages, without compiled images (package compiled, which
// embeds them, is built from what runtimes/compiled/write makes of this
// table).
func All() runtimes.Languages {
	return runtimes.Languages{python.Language(), javascript.Language()}
}
