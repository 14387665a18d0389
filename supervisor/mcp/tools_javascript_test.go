package mcp

import (
	"strings"
	"testing"

	"capsule/runtimes"
)

// TestJavaScriptDescriptionStatesTheEngine: the tool description says what
// runtimes/javascript's TestEngineLacks and TestLastValue prove: what the
// engine lacks, what is awaited, how the result is rendered.
func TestJavaScriptDescriptionStatesTheEngine(t *testing.T) {
	var about string
	for _, l := range languages {
		if l.name == runtimes.JavaScript {
			about = l.about
		}
	}
	for _, want := range []string{
		"plain script", "top-level await works", "no ES modules", "import/export are SyntaxErrors",
		"import() rejects", "no Atomics", "a native Promise is awaited", "other thenables are not",
		"without calling toJSON, getters or any other code of the value", "as node's REPL shows it",
	} {
		if !strings.Contains(about, want) {
			t.Errorf("the JavaScript description does not say %q: %s", want, about)
		}
	}
}
