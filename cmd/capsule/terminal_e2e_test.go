package main

import (
	"bytes"
	"io"
	"os/exec"
	"strings"
	"testing"
	"time"

	"capsule/cmd/capsule/terminal/terminaltest"
)

// TestExecEscapesForTerminal is issue 32's terminal escapes: what the
// guest prints reaches a terminal with its control characters escaped, in
// both languages, on stdout and stderr, and in the result and error; the
// same run into pipes gives the bytes unchanged.
func TestExecEscapesForTerminal(t *testing.T) {
	tests := []struct {
		lang, code string
		raw        []string // in the output through pipes
		escaped    []string // in the output on a terminal
	}{
		{"python", `import sys
print('\x1b[31mred\x1b[0m'); sys.stderr.write('\x1b]0;title\x07 inv\u202etxt\n')
'\x1b[2J'`,
			[]string{"\x1b[31mred\x1b[0m\n", "\x1b]0;title\x07 inv\u202etxt\n", `'\x1b[2J'`},
			[]string{`\x1b[31mred\x1b[0m` + "\n", `\x1b]0;title\x07 inv\u202etxt` + "\n", `'\x1b[2J'`}},
		{"javascript", `console.log('\x1b[1mbold'); console.error('safe\rEVIL'); throw new Error('\x1b[8mhidden')`,
			[]string{"\x1b[1mbold\n", "safe\rEVIL\n", "\x1b[8mhidden"},
			[]string{`\x1b[1mbold` + "\n", `safe\x0dEVIL` + "\n", `\x1b[8mhidden`}},
	}
	for _, tt := range tests {
		t.Run(tt.lang, func(t *testing.T) {
			cmd := exec.Command(capsuleBin, "exec", tt.lang, "-c", tt.code)
			cmd.Env = serverEnv()
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			_ = cmd.Run() // the JavaScript code throws: status 1
			raw := stdout.String() + stderr.String()
			for _, want := range tt.raw {
				if !strings.Contains(raw, want) {
					t.Errorf("through pipes: output %q lacks %q", raw, want)
				}
			}

			master, slave := terminaltest.OpenPTY(t)
			defer master.Close()
			cmd = exec.Command(capsuleBin, "exec", tt.lang, "-c", tt.code)
			cmd.Env = serverEnv()
			cmd.Stdout, cmd.Stderr = slave, slave
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			slave.Close()
			got := make(chan string)
			go func() {
				b, _ := io.ReadAll(master) // EIO once the last writer is gone
				got <- string(b)
			}()
			_ = cmd.Wait()
			var shown string
			select {
			case shown = <-got:
			case <-time.After(time.Minute):
				t.Fatal("the terminal's output did not end")
			}
			if strings.ContainsAny(shown, "\x1b\x07\r\u202e") {
				t.Errorf("on a terminal: output %q holds a control character", shown)
			}
			for _, want := range tt.escaped {
				if !strings.Contains(shown, want) {
					t.Errorf("on a terminal: output %q lacks %q", shown, want)
				}
			}
		})
	}
}
