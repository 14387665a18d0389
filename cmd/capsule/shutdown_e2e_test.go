package main

// A call that the shutdown ends says so: limit "shutdown", with the grace
// period, whether the shutdown came from a signal or from the end of stdin,
// and whichever client reads it.

import (
	"encoding/json"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	gosdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// checkShutdownAnswer checks a structuredContent ended by the shutdown.
func checkShutdownAnswer(t *testing.T, sc map[string]any, grace string) {
	t.Helper()
	e, _ := sc["error"].(map[string]any)
	msg, _ := e["message"].(string)
	if sc["limit"] != "shutdown" || e["type"] != "ShutdownError" || !strings.Contains(msg, "within its "+grace+" grace period") {
		t.Errorf("answer %v, want limit shutdown naming the %s grace period", sc, grace)
	}
}

func TestShutdownAtEndOfStdinSaysShutdown(t *testing.T) {
	r := startRawStdio(t, "--shutdown-grace", "1s", "--pool-python", "0", "--pool-javascript", "0")
	r.send(t, toolCall(7, "execute_python", "import time\ntime.sleep(30)"))
	time.Sleep(inFlight)
	r.in.Close()
	res, _ := r.expect(t, 7)["result"].(map[string]any)
	sc, _ := res["structuredContent"].(map[string]any)
	checkShutdownAnswer(t, sc, "1s")
}

func TestShutdownOnSignalSaysShutdown(t *testing.T) {
	sleep := map[string]any{"code": "import time\ntime.sleep(30)"}
	t.Run("ts-http", func(t *testing.T) {
		s := startHTTPServer(t, []string{"CAPSULE_AUTH_TOKEN=" + testToken}, "--shutdown-grace", "1s")
		// runTS stays on the test's goroutine: a t.Fatal from another
		// goroutine would leave this one waiting for ever.
		go func() {
			time.Sleep(3 * time.Second) // node starts, connects and calls
			s.cmd.Process.Signal(syscall.SIGTERM)
		}()
		run := runTS(t, tsHTTP(s, []map[string]any{{"op": "call", "name": "execute_python", "arguments": sleep}}))
		var o sdkOutcome
		if err := json.Unmarshal(run.Steps[0].OK, &o); err != nil {
			t.Fatalf("%+v: %v", run.Steps[0], err)
		}
		checkShutdownAnswer(t, o.Structured, "1s")
	})
	t.Run("go-stdio", func(t *testing.T) {
		cmd := exec.Command(capsuleBin, "serve", "--shutdown-grace", "2s")
		cmd.Env = serverEnv()
		cmd.WaitDelay = serverWaitDelay
		cs := goSDKConnect(t, &gosdk.CommandTransport{Command: cmd}, nil)
		go func() {
			time.Sleep(inFlight)
			cmd.Process.Signal(syscall.SIGTERM)
		}()
		res := goSDKCall(t, cs, "execute_python", sleep)
		sc, _ := res.StructuredContent.(map[string]any)
		checkShutdownAnswer(t, sc, "2s")
	})
}
