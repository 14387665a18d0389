package javascript

import (
	"strings"
	"testing"
)

// TestDescriptionStatesTheEngine: the tool description says what
// TestEngineLacks and TestLastValue prove: what the engine lacks, what is
// awaited, how the result is rendered.
func TestDescriptionStatesTheEngine(t *testing.T) {
	about := Language().Tool.About
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
