package main

// The stdio transport as a raw client sees it: messages are bounded before
// they are decoded, a cancelled call gets no response, and the end of
// stdin lets running calls answer.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// rawStdio is `capsule serve` on stdio, spoken to line by line.
type rawStdio struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	lines  chan map[string]any
	stderr *syncBuffer
}

func startRawStdio(t *testing.T, flags ...string) *rawStdio {
	t.Helper()
	return startRawStdioVersion(t, "2025-06-18", flags...)
}

// startRawStdioVersion starts a server and initialises it with a protocol
// version. A batch response comes out of lines as {"batch": [...]}.
func startRawStdioVersion(t *testing.T, version string, flags ...string) *rawStdio {
	t.Helper()
	cmd := exec.Command(capsuleBin, append([]string{"serve"}, flags...)...)
	cmd.WaitDelay = serverWaitDelay
	cmd.Env = serverEnv()
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	r := &rawStdio{cmd: cmd, in: in, lines: make(chan map[string]any, 100), stderr: newSyncBuffer()}
	cmd.Stderr = r.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(r.lines)
		sc := bufio.NewScanner(out)
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			var m map[string]any
			var batch []any
			switch {
			case json.Unmarshal(sc.Bytes(), &m) == nil:
			case json.Unmarshal(sc.Bytes(), &batch) == nil:
				m = map[string]any{"batch": batch}
			default:
				m = map[string]any{"unparsable": sc.Text()}
			}
			r.lines <- m
		}
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("server stderr:\n%s", r.stderr.String())
		}
	})
	r.send(t, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"`+version+`","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	r.expect(t, 0)
	r.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return r
}

func (r *rawStdio) send(t *testing.T, line string) {
	t.Helper()
	if _, err := io.WriteString(r.in, line+"\n"); err != nil {
		t.Fatalf("writing to the server: %v", err)
	}
}

// next returns the next message, failing after a minute without one.
func (r *rawStdio) next(t *testing.T) map[string]any {
	t.Helper()
	select {
	case m, ok := <-r.lines:
		if !ok {
			t.Fatal("stdout closed")
		}
		return m
	case <-time.After(60 * time.Second):
		t.Fatal("no message from the server")
	}
	return nil
}

// expect reads messages until the response with id, failing on a
// response to any id in never.
func (r *rawStdio) expect(t *testing.T, id float64, never ...float64) map[string]any {
	t.Helper()
	timeout := time.After(60 * time.Second)
	for {
		select {
		case m, ok := <-r.lines:
			if !ok {
				t.Fatalf("stdout closed before the response to %v", id)
			}
			got, isNum := m["id"].(float64)
			for _, n := range never {
				if isNum && got == n {
					t.Fatalf("got a response to request %v: %v", n, m)
				}
			}
			if isNum && got == id {
				return m
			}
		case <-timeout:
			t.Fatalf("no response to %v", id)
		}
	}
}

func toolCall(id int, tool, code string) string {
	args, _ := json.Marshal(map[string]any{"code": code})
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":%s}}`, id, tool, args)
}

func TestStdioOversizedMessage(t *testing.T) {
	r := startRawStdio(t, "--max-request-body", "64KiB", "--pool-python", "0", "--pool-javascript", "0")
	r.send(t, toolCall(9, "execute_javascript", "'"+strings.Repeat("x", 200<<10)+"'"))
	m := r.expect(t, 9)
	e, _ := m["error"].(map[string]any)
	if msg, _ := e["message"].(string); !strings.Contains(msg, "over the 64KiB limit") {
		t.Fatalf("response %v, want an error naming the 64KiB limit", m)
	}
	r.send(t, toolCall(10, "execute_javascript", "6 * 7"))
	res, _ := r.expect(t, 10)["result"].(map[string]any)
	if sc, _ := res["structuredContent"].(map[string]any); sc["result"] != float64(42) {
		t.Fatalf("after the oversized message: %v", res)
	}
}

func TestStdioCancelledCallGetsNoResponse(t *testing.T) {
	r := startRawStdio(t, "--pool-python", "0", "--pool-javascript", "0")
	r.send(t, toolCall(3, "execute_javascript", "await new Promise(r => setTimeout(r, 20000))"))
	time.Sleep(inFlight)
	r.send(t, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3,"reason":"test"}}`)
	r.send(t, toolCall(4, "execute_javascript", "1"))
	r.expect(t, 4, 3)
	// Give a late response to 3 the time to show up.
	r.send(t, `{"jsonrpc":"2.0","id":5,"method":"ping"}`)
	r.expect(t, 5, 3)
}

func TestStdioEOFLetsRunningCallsFinish(t *testing.T) {
	r := startRawStdio(t, "--shutdown-grace", "30s", "--pool-python", "0", "--pool-javascript", "0")
	r.send(t, toolCall(7, "execute_python", "import time\ntime.sleep(2)\n'done'"))
	time.Sleep(inFlight)
	r.in.Close()
	res, _ := r.expect(t, 7)["result"].(map[string]any)
	if sc, _ := res["structuredContent"].(map[string]any); sc["result"] != "done" {
		t.Fatalf("the call in flight at EOF answered %v, want its result", res)
	}
	done := make(chan error, 1)
	go func() { done <- r.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve exited with %v after EOF", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("serve did not exit after EOF and the last answer")
	}
}
