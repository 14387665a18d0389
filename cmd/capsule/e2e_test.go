package main

// End-to-end tests: they build capsule (with the test-only fault switch),
// start `capsule serve` as a subprocess and speak MCP over stdio with
// mcp-go's client, as an MCP host would.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// capsuleBin is the binary under test, built once by TestMain.
var capsuleBin string

// canary is set in the server's environment; it must never reach a guest.
const canary = "canary-7f3a9c1e-host-secret"

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "capsule-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	capsuleBin = filepath.Join(dir, "capsule")
	build := exec.Command("go", "build", "-tags", "capsule_faults", "-o", capsuleBin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building capsule:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// structured mirrors the tools' structuredContent.
type structured struct {
	Stdout     string          `json:"stdout"`
	Stderr     string          `json:"stderr"`
	Result     json.RawMessage `json:"result"`
	ResultType *string         `json:"result_type"`
	ResultRepr *string         `json:"result_repr"`
	Error      *struct {
		Type      string `json:"type"`
		Message   string `json:"message"`
		Traceback string `json:"traceback"`
	} `json:"error"`
	Limit           *string `json:"limit"`
	DurationMS      float64 `json:"duration_ms"`
	StdoutTruncated bool    `json:"stdout_truncated"`
	StderrTruncated bool    `json:"stderr_truncated"`
	Files           []struct {
		Path      string `json:"path"`
		Size      int64  `json:"size"`
		MIMEType  string `json:"mime_type"`
		Truncated bool   `json:"truncated"`
	} `json:"files"`
}

// server is a running `capsule serve` with a connected client.
type testServer struct {
	c      *client.Client
	cmd    *exec.Cmd
	stderr *syncBuffer
}

type syncBuffer struct {
	mu  chan struct{}
	buf bytes.Buffer
}

func newSyncBuffer() *syncBuffer { return &syncBuffer{mu: make(chan struct{}, 1)} }

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu <- struct{}{}
	defer func() { <-b.mu }()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu <- struct{}{}
	defer func() { <-b.mu }()
	return b.buf.String()
}

// startServer starts `capsule serve` with extra flags and initialises an
// MCP session with it. The server is stopped when the test ends.
func startServer(t testing.TB, flags ...string) *testServer {
	t.Helper()
	return startServerEnv(t, nil, flags...)
}

// startServerEnv is startServer with extra environment variables.
func startServerEnv(t testing.TB, extraEnv []string, flags ...string) *testServer {
	t.Helper()
	return startServerHook(t, extraEnv, nil, flags...)
}

// startServerHook is startServerEnv with a hook that may change the
// server's command before it starts (its user, a wrapper).
func startServerHook(t testing.TB, extraEnv []string, hook func(*exec.Cmd), flags ...string) *testServer {
	t.Helper()
	stderr := newSyncBuffer()
	args := append([]string{"serve"}, flags...)
	var cmd *exec.Cmd
	c, err := client.NewStdioMCPClientWithOptions(capsuleBin, nil, args,
		transport.WithCommandStderrWriter(stderr),
		transport.WithCommandFunc(func(ctx context.Context, command string, env, args []string) (*exec.Cmd, error) {
			cmd = exec.CommandContext(ctx, command, args...)
			cmd.WaitDelay = serverWaitDelay
			// A canary in the server's environment: no answer may ever contain it.
			cmd.Env = append(append(os.Environ(), "CAPSULE_TEST_CANARY="+canary), extraEnv...)
			if hook != nil {
				hook(cmd)
			}
			return cmd, nil
		}))
	if err != nil {
		t.Fatalf("starting capsule serve: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "capsule-e2e", Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatalf("initialize: %v\nserver stderr:\n%s", err, stderr.String())
	}
	t.Cleanup(func() {
		c.Close()
		if t.Failed() {
			t.Logf("server stderr:\n%s", stderr.String())
		}
	})
	return &testServer{c: c, cmd: cmd, stderr: stderr}
}

// call invokes tool with arguments and decodes the structured answer.
func (s *testServer) callArgs(t testing.TB, tool string, args any) (*mcp.CallToolResult, structured) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	req := mcp.CallToolRequest{}
	req.Params.Name = tool
	req.Params.Arguments = args
	res, err := s.c.CallTool(ctx, req)
	if err != nil {
		t.Fatalf("%s: call failed: %v", tool, err)
	}
	var st structured
	if res.StructuredContent != nil {
		b, err := json.Marshal(res.StructuredContent)
		if err != nil {
			t.Fatal(err)
		}
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&st); err != nil {
			t.Fatalf("structuredContent %s does not match the contract: %v", b, err)
		}
	}
	return res, st
}

func (s *testServer) call(t testing.TB, tool, code string) (*mcp.CallToolResult, structured) {
	t.Helper()
	return s.callArgs(t, tool, map[string]any{"code": code})
}

// text joins a result's text content.
func text(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// expectation is what one end-to-end case must produce. Empty fields are
// not checked, except isError which always is.
type expectation struct {
	name          string
	code          string
	isError       bool
	result        string // exact JSON, or "null"
	typ, repr     string // result_type and result_repr, when not empty
	stdout        string // substring
	stdoutExact   *string
	stderr        string // substring
	errType       string
	errContains   string
	traceContains string
	limit         string
	text          string // substring of the text content
	truncated     bool
	minDuration   time.Duration
}

func check(t *testing.T, res *mcp.CallToolResult, st structured, e expectation) {
	t.Helper()
	if res.IsError != e.isError {
		t.Errorf("isError = %v, want %v; text:\n%s", res.IsError, e.isError, text(res))
	}
	if e.result != "" {
		got := string(st.Result)
		if got == "" {
			got = "null"
		}
		if got != e.result {
			t.Errorf("result = %s, want %s", got, e.result)
		}
	}
	if e.typ != "" && (st.ResultType == nil || *st.ResultType != e.typ) {
		t.Errorf("result_type = %v, want %q", strOrNil(st.ResultType), e.typ)
	}
	if e.repr != "" && (st.ResultRepr == nil || *st.ResultRepr != e.repr) {
		t.Errorf("result_repr = %v, want %q", strOrNil(st.ResultRepr), e.repr)
	}
	if !strings.Contains(st.Stdout, e.stdout) {
		t.Errorf("stdout = %q, want it to contain %q", st.Stdout, e.stdout)
	}
	if e.stdoutExact != nil && st.Stdout != *e.stdoutExact {
		t.Errorf("stdout = %q, want exactly %q", st.Stdout, *e.stdoutExact)
	}
	if !strings.Contains(st.Stderr, e.stderr) {
		t.Errorf("stderr = %q, want it to contain %q", st.Stderr, e.stderr)
	}
	if e.errType != "" || e.errContains != "" || e.traceContains != "" {
		if st.Error == nil {
			t.Fatalf("error = null, want %s %q; text:\n%s", e.errType, e.errContains, text(res))
		}
		if e.errType != "" && st.Error.Type != e.errType {
			t.Errorf("error type = %q, want %q (message %q)", st.Error.Type, e.errType, st.Error.Message)
		}
		if !strings.Contains(st.Error.Message, e.errContains) {
			t.Errorf("error message = %q, want it to contain %q", st.Error.Message, e.errContains)
		}
		if !strings.Contains(st.Error.Traceback, e.traceContains) {
			t.Errorf("traceback = %q, want it to contain %q", st.Error.Traceback, e.traceContains)
		}
	} else if st.Error != nil && !e.isError {
		t.Errorf("unexpected error %+v", *st.Error)
	}
	gotLimit := ""
	if st.Limit != nil {
		gotLimit = *st.Limit
	}
	if gotLimit != e.limit {
		t.Errorf("limit = %q, want %q", gotLimit, e.limit)
	}
	if e.truncated != (st.StdoutTruncated || st.StderrTruncated) {
		t.Errorf("truncated = %v/%v, want %v", st.StdoutTruncated, st.StderrTruncated, e.truncated)
	}
	if !strings.Contains(text(res), e.text) {
		t.Errorf("text = %q, want it to contain %q", text(res), e.text)
	}
	if e.minDuration > 0 && st.DurationMS < float64(e.minDuration.Milliseconds()) {
		t.Errorf("duration_ms = %v, want at least %v", st.DurationMS, e.minDuration)
	}
}

func ptr[T any](v T) *T { return &v }

// serverWaitDelay bounds how long waiting for a killed server waits for
// its output pipes to close. A worker the server was spawning when it was
// killed can be left blocked before its exec, holding the server's stderr
// (see the report of issue 21): without a bound, the test's cleanup would
// wait for it forever.
const serverWaitDelay = 10 * time.Second

func strOrNil(s *string) any {
	if s == nil {
		return nil
	}
	return *s
}
