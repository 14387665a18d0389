package main

// End-to-end tests of `capsule serve --http` and of serve's shutdown: they
// start the binary TestMain built, speak MCP over Streamable HTTP with
// mcp-go's client (or raw HTTP where the status code is the point), and
// signal it as an init system would.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

const testToken = "e2e-token-0123456789"

// httpServer is a running `capsule serve --http`.
type httpServer struct {
	cmd    *exec.Cmd
	base   string // http://127.0.0.1:PORT
	stderr *syncBuffer
	exited chan struct{} // closed once the process has been waited for
}

// serverEnv is the test's environment without capsule's own variables, so
// that nothing set around the test changes how the server is configured.
func serverEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CAPSULE_") {
			env = append(env, kv)
		}
	}
	return append(env, extra...)
}

var listeningRE = regexp.MustCompile(`listening: addr=(\S+)`)

// startHTTPServer starts `capsule serve --http 127.0.0.1:0` with the token
// and extra flags, waits until it listens and is ready, and stops it when
// the test ends.
func startHTTPServer(t testing.TB, env []string, flags ...string) *httpServer {
	t.Helper()
	s := &httpServer{stderr: newSyncBuffer(), exited: make(chan struct{})}
	s.cmd = exec.Command(capsuleBin, append([]string{"serve", "--http", "127.0.0.1:0"}, flags...)...)
	s.cmd.WaitDelay = serverWaitDelay
	s.cmd.Env = serverEnv(env...)
	s.cmd.Stderr = s.stderr
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { s.cmd.Wait(); close(s.exited) }()
	t.Cleanup(func() {
		s.cmd.Process.Kill()
		<-s.exited
		if t.Failed() {
			t.Logf("server stderr:\n%s", s.stderr.String())
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for s.base == "" {
		if m := listeningRE.FindStringSubmatch(s.stderr.String()); m != nil {
			s.base = "http://" + m[1]
			break
		}
		select {
		case <-s.exited:
			t.Fatalf("capsule serve exited before listening:\n%s", s.stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("capsule serve did not report its address:\n%s", s.stderr.String())
		}
	}
	for {
		if res, err := http.Get(s.base + "/readyz"); err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return s
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("capsule serve did not become ready:\n%s", s.stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// client returns an initialised MCP client that sends headers.
func (s *httpServer) client(t testing.TB, headers map[string]string) *testServer {
	t.Helper()
	c, err := client.NewStreamableHttpClient(s.base+"/mcp", transport.WithHTTPHeaders(headers))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "capsule-http-e2e", Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatalf("initialize: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return &testServer{c: c, stderr: s.stderr}
}

func bearer(token string) map[string]string {
	return map[string]string{"Authorization": "Bearer " + token}
}

const listTools = `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`

// post sends one raw MCP POST and returns its status, headers and body.
func (s *httpServer) post(t testing.TB, headers map[string]string, body string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, s.base+"/mcp", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST /mcp: %v", err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, res.Header, string(b)
}

// wait returns the server's exit status, failing the test if it does not
// exit within limit.
func (s *httpServer) wait(t testing.TB, limit time.Duration) int {
	t.Helper()
	select {
	case <-s.exited:
		return s.cmd.ProcessState.ExitCode()
	case <-time.After(limit):
		t.Fatalf("capsule serve did not exit within %v", limit)
		return -1
	}
}

func TestHTTPCallsWithToken(t *testing.T) {
	s := startHTTPServer(t, []string{"CAPSULE_AUTH_TOKEN=" + testToken})
	c := s.client(t, bearer(testToken))
	cases := []struct {
		tool string
		e    expectation
	}{
		{"execute_python", expectation{name: "python", code: seedPython,
			result: `{"average":16966.67,"best_growth_month":4,"growth":4700}`}},
		{"execute_python", expectation{name: "python error", code: "1/0", isError: true,
			errType: "ZeroDivisionError"}},
		{"execute_javascript", expectation{name: "javascript", code: "console.log('hi'); 6 * 7",
			stdout: "hi\n", result: "42"}},
	}
	for _, tc := range cases {
		t.Run(tc.e.name, func(t *testing.T) {
			res, st := c.call(t, tc.tool, tc.e.code)
			check(t, res, st, tc.e)
		})
	}
	if strings.Contains(s.stderr.String(), testToken) {
		t.Error("the token appears in the server's log")
	}
}

func TestHTTPRefusals(t *testing.T) {
	s := startHTTPServer(t, []string{"CAPSULE_AUTH_TOKEN=" + testToken},
		"--max-request-body", "64KiB", "--allow-origin", "https://app.example.com")
	auth := "Bearer " + testToken
	bigCall := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"execute_python","arguments":{"code":"%s"}}}`,
		strings.Repeat("x", 100<<10))
	cases := []struct {
		name     string
		headers  map[string]string
		body     string
		status   int
		contains string
	}{
		{"with the token", map[string]string{"Authorization": auth}, listTools, http.StatusOK, "execute_python"},
		{"no token", nil, listTools, http.StatusUnauthorized, "bearer token"},
		{"wrong token", map[string]string{"Authorization": "Bearer nope"}, listTools, http.StatusUnauthorized, "bearer token"},
		{"foreign origin", map[string]string{"Authorization": auth, "Origin": "https://evil.example"}, listTools,
			http.StatusForbidden, "not allowed"},
		{"loopback origin", map[string]string{"Authorization": auth, "Origin": "http://localhost:6274"}, listTools,
			http.StatusOK, "execute_python"},
		{"allowed origin", map[string]string{"Authorization": auth, "Origin": "https://app.example.com"}, listTools,
			http.StatusOK, "execute_python"},
		{"body too large", map[string]string{"Authorization": auth}, bigCall, http.StatusRequestEntityTooLarge, "64KiB"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			status, header, body := s.post(t, c.headers, c.body)
			if status != c.status || !strings.Contains(body, c.contains) {
				t.Fatalf("got %d %q, want %d and a body containing %q", status, body, c.status, c.contains)
			}
			if status == http.StatusUnauthorized && !strings.HasPrefix(header.Get("WWW-Authenticate"), "Bearer") {
				t.Errorf("WWW-Authenticate = %q, want a Bearer challenge", header.Get("WWW-Authenticate"))
			}
		})
	}
	t.Run("mcp client with a wrong token", func(t *testing.T) {
		c, err := client.NewStreamableHttpClient(s.base+"/mcp", transport.WithHTTPHeaders(bearer("nope")))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := c.Start(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Initialize(ctx, mcp.InitializeRequest{}); err == nil {
			t.Fatal("initialize succeeded with a wrong token")
		}
	})
	for _, path := range []string{"/healthz", "/readyz"} {
		t.Run(path+" needs no token", func(t *testing.T) {
			res, err := http.Get(s.base + path)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode != http.StatusOK {
				t.Fatalf("status = %d, want 200", res.StatusCode)
			}
		})
	}
}

func TestHTTPStartRefused(t *testing.T) {
	empty := filepath.Join(t.TempDir(), "empty")
	if err := os.WriteFile(empty, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name     string
		env      []string
		args     []string
		contains string
	}{
		{"non-loopback without a token", nil, []string{"--http", "0.0.0.0:0"},
			"refusing to serve on 0.0.0.0"},
		{"non-loopback from the environment", []string{"CAPSULE_HTTP=0.0.0.0:0"}, nil,
			"CAPSULE_AUTH_TOKEN"},
		{"empty token variable", []string{"CAPSULE_AUTH_TOKEN="}, []string{"--http", "127.0.0.1:0"},
			"empty"},
		{"empty token file", nil, []string{"--http", "0.0.0.0:0", "--auth-token-file", empty},
			"empty"},
		{"bad origin", nil, []string{"--http", "127.0.0.1:0", "--allow-origin", "app.example.com"},
			"invalid origin"},
		{"bad address", nil, []string{"--http", "127.0.0.1:http"}, "invalid --http address"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, capsuleBin, append([]string{"serve"}, c.args...)...)
			cmd.Env = serverEnv(c.env...)
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != exitUsage {
				t.Fatalf("exit = %v, want status %d; output:\n%s", err, exitUsage, out)
			}
			if !strings.Contains(string(out), c.contains) {
				t.Errorf("output %q does not mention %q", out, c.contains)
			}
		})
	}
	t.Run("non-loopback with a token starts", func(t *testing.T) {
		s := &httpServer{stderr: newSyncBuffer(), exited: make(chan struct{})}
		s.cmd = exec.Command(capsuleBin, "serve", "--http", "0.0.0.0:0", "--pool-python", "0", "--pool-javascript", "0")
		s.cmd.Env = serverEnv("CAPSULE_AUTH_TOKEN=" + testToken)
		s.cmd.Stderr = s.stderr
		if err := s.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { s.cmd.Wait(); close(s.exited) }()
		defer func() { s.cmd.Process.Kill(); <-s.exited }()
		deadline := time.Now().Add(30 * time.Second)
		for !strings.Contains(s.stderr.String(), "listening: addr=") {
			if time.Now().After(deadline) {
				t.Fatalf("did not start:\n%s", s.stderr.String())
			}
			select {
			case <-s.exited:
				t.Fatalf("exited:\n%s", s.stderr.String())
			case <-time.After(20 * time.Millisecond):
			}
		}
	})
}

// sleepCall is Python that keeps its call in flight for the given seconds.
func sleepCall(seconds int) string {
	return fmt.Sprintf("import time\ntime.sleep(%d)\n'done'", seconds)
}

// callResult is the outcome of a call made by startCall.
type callResult struct {
	res *mcp.CallToolResult
	err error
}

// startCall runs the Python code on its own goroutine, so that the test
// can act while it is in flight; finishCall collects it. (callArgs cannot
// be used there: it fails the test with Fatal, which only the test's own
// goroutine may call.)
func startCall(s *testServer, code string) <-chan callResult {
	done := make(chan callResult, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		req := mcp.CallToolRequest{}
		req.Params.Name = "execute_python"
		req.Params.Arguments = map[string]any{"code": code}
		res, err := s.c.CallTool(ctx, req)
		done <- callResult{res, err}
	}()
	return done
}

// finishCall waits for a call made by startCall and checks its answer.
func finishCall(t *testing.T, done <-chan callResult, want expectation) {
	t.Helper()
	r := <-done
	if r.err != nil {
		t.Fatalf("call failed: %v", r.err)
	}
	var st structured
	b, err := json.Marshal(r.res.StructuredContent)
	if err == nil {
		err = json.Unmarshal(b, &st)
	}
	if err != nil {
		t.Fatalf("structuredContent %s: %v", b, err)
	}
	check(t, r.res, st, want)
}

// inFlight is how long after sending a call the tests assume it reached
// the server: far more than a loopback request takes, far less than the
// calls last.
const inFlight = 700 * time.Millisecond

func TestHTTPClientConcurrencyLimit(t *testing.T) {
	s := startHTTPServer(t, []string{"CAPSULE_AUTH_TOKEN=" + testToken}, "--max-client-concurrency", "1")
	c := s.client(t, bearer(testToken))
	done := startCall(c, sleepCall(3))
	time.Sleep(inFlight)
	refused := false
	for !refused {
		status, header, body := s.post(t, bearer(testToken), listTools)
		switch status {
		case http.StatusTooManyRequests:
			refused = true
			if !strings.Contains(body, "busy") || !strings.Contains(body, "retry") || header.Get("Retry-After") == "" {
				t.Errorf("429 should say the server is busy and to retry, with Retry-After: %v %q", header, body)
			}
		case http.StatusOK: // the call has not reached the server yet
		default:
			t.Fatalf("status %d %q, want 429", status, body)
		}
		if !refused && len(done) > 0 {
			t.Fatal("the call finished and no request was refused")
		}
		time.Sleep(100 * time.Millisecond)
	}
	finishCall(t, done, expectation{result: `"done"`})
	if status, _, body := s.post(t, bearer(testToken), listTools); status != http.StatusOK {
		t.Fatalf("after the call: %d %q, want 200", status, body)
	}
}

func TestHTTPShutdown(t *testing.T) {
	cases := []struct {
		name     string
		flags    []string
		seconds  int
		want     expectation
		maxAfter time.Duration // from the signal to the exit
	}{
		{name: "call finishes within the grace", seconds: 2,
			want: expectation{result: `"done"`, minDuration: 2 * time.Second}, maxAfter: 5 * time.Second},
		{name: "call killed at the end of the grace", flags: []string{"--shutdown-grace", "1s"}, seconds: 30,
			want:     expectation{isError: true, limit: "shutdown", errType: "ShutdownError", errContains: "within its 1s grace period", result: "null"},
			maxAfter: 5 * time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := startHTTPServer(t, []string{"CAPSULE_AUTH_TOKEN=" + testToken}, tc.flags...)
			c := s.client(t, bearer(testToken))
			done := startCall(c, sleepCall(tc.seconds))
			time.Sleep(inFlight)
			start := time.Now()
			if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			// New connections are refused while the call drains.
			refused := false
			for time.Since(start) < time.Second && !refused {
				res, err := http.Get(s.base + "/healthz")
				if err != nil {
					refused = true
					break
				}
				res.Body.Close()
				time.Sleep(20 * time.Millisecond)
			}
			if !refused {
				t.Error("the server still accepted connections a second after SIGTERM")
			}
			finishCall(t, done, tc.want)
			if code := s.wait(t, tc.maxAfter); code != 0 {
				t.Errorf("exit status %d, want 0", code)
			}
			t.Logf("exited %v after SIGTERM", time.Since(start).Round(time.Millisecond))
		})
	}
}

func TestStdioShutdown(t *testing.T) {
	cases := []struct {
		name    string
		seconds int // 0: no call in flight
	}{
		{name: "idle"},
		{name: "call in flight", seconds: 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			stderr := newSyncBuffer()
			var cmd *exec.Cmd
			c, err := client.NewStdioMCPClientWithOptions(capsuleBin, nil, []string{"serve"},
				transport.WithCommandFunc(func(_ context.Context, command string, env, args []string) (*exec.Cmd, error) {
					cmd = exec.Command(command, args...)
					cmd.Env = serverEnv(env...)
					cmd.Stderr = stderr
					return cmd, nil
				}))
			if err != nil {
				t.Fatal(err)
			}
			defer func() {
				if t.Failed() {
					t.Logf("server stderr:\n%s", stderr.String())
				}
			}()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			init := mcp.InitializeRequest{}
			init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
			if _, err := c.Initialize(ctx, init); err != nil {
				t.Fatal(err)
			}
			s := &testServer{c: c, stderr: stderr}
			var done <-chan callResult
			if tc.seconds > 0 {
				done = startCall(s, sleepCall(tc.seconds))
				time.Sleep(inFlight)
			}
			start := time.Now()
			if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			if tc.seconds > 0 {
				finishCall(t, done, expectation{result: `"done"`, minDuration: time.Duration(tc.seconds) * time.Second})
			}
			// Closing the client closes the server's stdin, which would end
			// it too: it must have stopped on the signal alone first.
			for deadline := time.Now().Add(10 * time.Second); !strings.Contains(stderr.String(), "capsule: stopped"); {
				if time.Now().After(deadline) {
					t.Fatal("the server did not stop after SIGTERM")
				}
				time.Sleep(10 * time.Millisecond)
			}
			// Close waits for the process, and returns its failure if it
			// exited with a non-zero status.
			if err := c.Close(); err != nil {
				t.Fatalf("closing: %v", err)
			}
			if code := cmd.ProcessState.ExitCode(); code != 0 {
				t.Fatalf("exit status %d, want 0", code)
			}
			t.Logf("exited %v after SIGTERM", time.Since(start).Round(time.Millisecond))
		})
	}
}

func TestServeHelp(t *testing.T) {
	out, err := exec.Command(capsuleBin, "serve", "--help").CombinedOutput()
	if err != nil {
		t.Fatalf("serve --help: %v\n%s", err, out)
	}
	help := string(out)
	// Every flag, its variable, and the defaults the HTTP mode adds.
	for _, want := range []string{
		"-http value", "(env CAPSULE_HTTP)",
		"-auth-token-file value", "(env CAPSULE_AUTH_TOKEN_FILE)", "CAPSULE_AUTH_TOKEN or --auth-token-file",
		"-allow-origin value", "(env CAPSULE_ALLOW_ORIGIN)",
		"-max-request-body value", "(env CAPSULE_MAX_REQUEST_BODY) (default 5 × max-code + 4/3 × max-files-in + 1MiB)",
		"-max-client-concurrency value", "(env CAPSULE_MAX_CLIENT_CONCURRENCY) (default 2 × max-concurrency)",
		"-trust-proxy-headers", "(env CAPSULE_TRUST_PROXY_HEADERS)",
		"-shutdown-grace value", "(env CAPSULE_SHUTDOWN_GRACE) (default 10s)",
		"/healthz", "/readyz",
	} {
		if !strings.Contains(help, want) {
			t.Errorf("serve --help does not contain %q", want)
		}
	}
	flagLine := regexp.MustCompile(`(?m)^  -(\S+).*\n\s+(.*)$`)
	for _, m := range flagLine.FindAllStringSubmatch(help, -1) {
		if !strings.Contains(m[2], "(env CAPSULE_") {
			t.Errorf("flag -%s names no environment variable: %q", m[1], m[2])
		}
	}
}

// TestHTTPCancellationBelongsToItsClient: over HTTP, client B cancelling
// its request id 1 leaves client A's call with id 1 alone; A cancelling
// its own call stops the worker at once and gets no response for it.
func TestHTTPCancellationBelongsToItsClient(t *testing.T) {
	s := startHTTPServer(t, []string{"CAPSULE_AUTH_TOKEN=" + testToken}, "--pool-python", "0", "--pool-javascript", "0")
	initialize := `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`
	session := func() map[string]string {
		_, h, _ := s.post(t, bearer(testToken), initialize)
		id := h.Get("Mcp-Session-Id")
		if id == "" {
			t.Fatal("initialize issued no Mcp-Session-Id")
		}
		return map[string]string{"Authorization": "Bearer " + testToken, "Mcp-Session-Id": id}
	}
	a, b := session(), session()
	type reply struct {
		status int
		body   string
	}
	call := func(headers map[string]string, id int, code string) <-chan reply {
		got := make(chan reply, 1)
		go func() {
			status, _, body := s.post(t, headers, toolCall(id, "execute_python", code))
			got <- reply{status, body}
		}()
		return got
	}
	cancel := func(headers map[string]string, id int) {
		if status, _, body := s.post(t, headers, fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%d}}`, id)); status != http.StatusAccepted {
			t.Fatalf("cancel answered %d %s", status, body)
		}
	}

	callA := call(a, 1, sleepCall(2))
	time.Sleep(inFlight)
	cancel(b, 1)
	if r := <-callA; !strings.Contains(r.body, `"result":"done"`) {
		t.Fatalf("A's call, cancelled by B, answered %d %s; want it finished", r.status, r.body)
	}

	callA = call(a, 2, sleepCall(30))
	time.Sleep(inFlight)
	start := time.Now()
	cancel(a, 2)
	select {
	case r := <-callA:
		if strings.Contains(r.body, `"id":2`) {
			t.Fatalf("the cancelled call got a response: %s", r.body)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the cancelled call's request did not end")
	}
	if !eventually(time.Second, func() bool { return len(children(s.cmd.Process.Pid)) == 0 }) {
		t.Fatalf("worker still running %v after A cancelled its call", time.Since(start))
	}
}
