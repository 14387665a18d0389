package main

// Real MCP clients for the end-to-end tests, besides mcp-go's: the
// TypeScript SDK (run by node, installed with npm on first use) and the Go
// SDK (github.com/modelcontextprotocol/go-sdk), each over stdio and
// Streamable HTTP, since hosts are built on them and each reads the
// protocol a little differently.

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	gosdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// tsStep is one step the TypeScript client took: its result or its error.
type tsStep struct {
	OK    json.RawMessage `json:"ok"`
	Error string          `json:"error"`
}

// tsRun is what the TypeScript client saw.
type tsRun struct {
	Steps        []tsStep          `json:"steps"`
	Errors       []string          `json:"errors"`
	Logs         []json.RawMessage `json:"logs"`
	ConnectError string            `json:"connectError"`
}

// runTS runs the TypeScript client with spec (transport, steps, ...).
func runTS(t testing.TB, spec map[string]any) tsRun {
	t.Helper()
	dir := tsClient(t)
	b, _ := json.Marshal(spec)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "client.mjs", string(b))
	cmd.Dir = dir
	cmd.Env = serverEnv()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("TypeScript client: %v\n%s", err, stderr.String())
	}
	var run tsRun
	if err := json.Unmarshal(stdout.Bytes(), &run); err != nil {
		t.Fatalf("TypeScript client printed %q: %v\n%s", stdout.String(), err, stderr.String())
	}
	if run.ConnectError != "" {
		t.Fatalf("TypeScript client could not connect: %s", run.ConnectError)
	}
	return run
}

// tsStdio is the spec of a TypeScript client that starts capsule serve
// with flags on stdio and takes steps.
func tsStdio(steps []map[string]any, flags ...string) map[string]any {
	return map[string]any{
		"transport": "stdio", "command": capsuleBin, "args": append([]string{"serve"}, flags...),
		"steps": steps,
	}
}

// tsHTTP is the spec of a TypeScript client that talks to s with the test
// token and takes steps.
func tsHTTP(s *httpServer, steps []map[string]any) map[string]any {
	return map[string]any{
		"transport": "http", "url": s.base + "/mcp", "headers": bearer(testToken),
		"steps": steps,
	}
}

// goSDKStdio connects the Go SDK's client to a new capsule serve with
// flags on stdio.
func goSDKStdio(t testing.TB, opts *gosdk.ClientOptions, flags ...string) *gosdk.ClientSession {
	t.Helper()
	cmd := exec.Command(capsuleBin, append([]string{"serve"}, flags...)...)
	cmd.Env = serverEnv()
	cmd.WaitDelay = serverWaitDelay
	return goSDKConnect(t, &gosdk.CommandTransport{Command: cmd}, opts)
}

// goSDKHTTP connects the Go SDK's client to s with the test token.
func goSDKHTTP(t testing.TB, s *httpServer, opts *gosdk.ClientOptions) *gosdk.ClientSession {
	t.Helper()
	hc := &http.Client{Transport: headerTransport{bearer(testToken)}}
	return goSDKConnect(t, &gosdk.StreamableClientTransport{Endpoint: s.base + "/mcp", HTTPClient: hc, DisableStandaloneSSE: true}, opts)
}

func goSDKConnect(t testing.TB, tr gosdk.Transport, opts *gosdk.ClientOptions) *gosdk.ClientSession {
	t.Helper()
	c := gosdk.NewClient(&gosdk.Implementation{Name: "capsule-go-sdk-e2e", Version: "1"}, opts)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, tr, nil)
	if err != nil {
		t.Fatalf("Go SDK: connecting: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// headerTransport adds headers to every request.
type headerTransport struct{ headers map[string]string }

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h.headers {
		r.Header.Set(k, v)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// sdkCall is one tool call for callEverywhere.
type sdkCall struct {
	tool string
	args map[string]any
}

// sdkOutcome is a tool result as a client read it.
type sdkOutcome struct {
	IsError    bool           `json:"isError"`
	Structured map[string]any `json:"structuredContent"`
	Content    []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
}

// text joins the outcome's text content.
func (o sdkOutcome) text() string {
	var parts []string
	for _, c := range o.Content {
		parts = append(parts, c.Text)
	}
	return strings.Join(parts, "\n")
}

// callEverywhere makes calls through the TypeScript and the Go SDK, each
// over stdio and over HTTP, against servers started with flags, and
// returns each client's outcomes, in order, by client name.
func callEverywhere(t *testing.T, flags []string, calls []sdkCall) map[string][]sdkOutcome {
	t.Helper()
	out := map[string][]sdkOutcome{}
	hs := startHTTPServer(t, []string{"CAPSULE_AUTH_TOKEN=" + testToken}, flags...)
	var steps []map[string]any
	for _, c := range calls {
		steps = append(steps, map[string]any{"op": "call", "name": c.tool, "arguments": c.args})
	}
	for name, spec := range map[string]map[string]any{"ts/stdio": tsStdio(steps, flags...), "ts/http": tsHTTP(hs, steps)} {
		run := runTS(t, spec)
		for i, st := range run.Steps {
			var o sdkOutcome
			if st.Error != "" || json.Unmarshal(st.OK, &o) != nil {
				t.Fatalf("%s: call %d (%s): %s %s", name, i, calls[i].tool, st.Error, st.OK)
			}
			out[name] = append(out[name], o)
		}
		if len(run.Errors) > 0 {
			t.Errorf("%s: the TypeScript SDK reported errors: %q", name, run.Errors)
		}
	}
	for name, cs := range map[string]*gosdk.ClientSession{"go/stdio": goSDKStdio(t, nil, flags...), "go/http": goSDKHTTP(t, hs, nil)} {
		for _, c := range calls {
			res := goSDKCall(t, cs, c.tool, c.args)
			b, _ := json.Marshal(res)
			var o sdkOutcome
			if err := json.Unmarshal(b, &o); err != nil {
				t.Fatalf("%s: %s: %v", name, b, err)
			}
			out[name] = append(out[name], o)
		}
	}
	return out
}
