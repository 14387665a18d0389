package javascript

import (
	"fmt"

	"capsule/runtimes"
)

// Language describes JavaScript to the rest of capsule
// (runtimes.Language): its tool, its compile step and its snapshot. It
// has no snapshot variants and no packages.
func Language() runtimes.Language {
	return runtimes.Language{
		Name: runtimes.JavaScript,
		Tool: runtimes.Tool{
			Name:     "execute_javascript",
			Title:    "Run JavaScript",
			InputsIn: "a global in JavaScript",
			About: "Runs JavaScript (QuickJS-NG engine, ES2023) as a fresh plain script in global scope; " +
				"top-level await works. console.log/info/debug write to stdout, console.error/warn to stderr; " +
				"setTimeout, setInterval, queueMicrotask work. No Node or browser APIs beyond console and timers " +
				"(no require, process, fetch), no ES modules (import/export are SyntaxErrors, import() rejects), " +
				"no Atomics. stdout, stderr and the value of the last expression come back: a native Promise is " +
				"awaited (other thenables are not); the value is shown as node's REPL shows it, and as exact JSON " +
				"for plain objects and arrays of JSON values, without calling toJSON, getters or any other code of the value.",
			Colours: [2]string{"#f7df1e", "#323330"},
		},
		Files: runtimes.Files{
			Argument: "given to the code as the frozen global `files`: path → string, or Uint8Array for base64 content",
			Usage: "Files: `files` passes files in (see its description), which the code reads from the global `files`. " +
				"To return files, set entries of the global `outputs` object to a string or a Uint8Array; %s" +
				"Example: files={\"sales.csv\": \"region,amount\\nnorth,10\\nsouth,5\\n\"} and code " +
				"`const t = {}; for (const l of files['sales.csv'].trim().split('\\n').slice(1)) { const [r, a] = l.split(','); " +
				"t[r] = (t[r] || 0) + Number(a); } outputs['summary.csv'] = 'region,total\\n' + " +
				"Object.entries(t).map(e => e.join(',')).join('\\n') + '\\n';`",
			LargeOutput: "return large data through the global outputs",
		},
		Built:   Built,
		Compile: Compile,
		Identity: func(variant string) (string, error) {
			if variant != "" {
				return "", fmt.Errorf("javascript has no snapshot variant %q", variant)
			}
			return Identity(), nil
		},
	}
}
