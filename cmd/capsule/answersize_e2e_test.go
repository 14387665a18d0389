package main

// Every answer fits every client: at default limits, the answers that
// were too big for the TypeScript SDK's 10 MiB stdio buffer (issue 32)
// stay under --max-answer, through the TypeScript and the Go SDK, on stdio
// and over HTTP, and the connection carries on.

import (
	"fmt"
	"strings"
	"testing"
)

// bigAnswers are the calls of issue 32 whose answers were over 10 MiB.
var bigAnswers = []sdkCall{
	{"execute_python", map[string]any{"code": "b = bytes(range(256)) * 2048\nfor i in range(100):\n    open(f'outputs/f{i:03}.bin', 'wb').write(b)"}},
	{"execute_python", map[string]any{"code": "b = bytes(range(256)) * 4096\nfor i in range(8):\n    open(f'outputs/f{i}.bin', 'wb').write(b)"}},
	{"execute_python", map[string]any{"code": "print('x' * 1000000)\nb = bytes(range(256)) * 4096\nfor i in range(8):\n    open(f'outputs/f{i}.bin', 'wb').write(b)"}},
	{"execute_javascript", map[string]any{"code": "for (let i = 0; i < 9; i++) outputs['f' + i + '.bin'] = new Uint8Array(1 << 20).fill(255);"}},
}

func TestBigAnswersFitEveryClient(t *testing.T) {
	calls := append(append([]sdkCall(nil), bigAnswers...), sdkCall{"execute_javascript", map[string]any{"code": "6 * 7"}})
	for client, outcomes := range callEverywhere(t, []string{"--pool-python", "1", "--pool-javascript", "1"}, calls) {
		if len(outcomes) != len(calls) {
			t.Fatalf("%s: %d outcomes for %d calls", client, len(outcomes), len(calls))
		}
		for i, o := range outcomes[:len(bigAnswers)] {
			what := fmt.Sprintf("%s: big answer %d", client, i)
			limit, _ := o.Structured["limit"].(string)
			if limit != "answer" && limit != "files_out" {
				t.Errorf("%s: limit %q, want answer or files_out", what, limit)
			}
			if !strings.Contains(o.text(), "--max-answer") {
				t.Errorf("%s: the text does not name --max-answer: %.400q", what, o.text())
			}
			files, _ := o.Structured["files"].([]any)
			sent, withheld := 0, 0
			for _, f := range files {
				if f.(map[string]any)["truncated"] == true {
					withheld++
				} else {
					sent++
				}
			}
			if sent == 0 || withheld == 0 {
				t.Errorf("%s: %d files sent, %d listed as not sent; want some of each", what, sent, withheld)
			}
		}
		if last := outcomes[len(bigAnswers)]; last.IsError || last.Structured["result"] != float64(42) {
			t.Errorf("%s: the call after the big answers: %+v", client, last)
		}
	}
}
