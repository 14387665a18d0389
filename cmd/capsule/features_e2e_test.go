package main

// What MCP offers and capsule uses, as the SDKs read it: instructions, the
// server's title, description and icon, each tool's title and icon, and on
// stdio the server's log as notifications/message at the level the client
// sets.

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	gosdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// maxIconURI bounds an embedded icon: small enough that tools/list and
// initialize stay small.
const maxIconURI = 2048

func checkIcons(t *testing.T, what string, icons []gosdk.Icon) {
	t.Helper()
	if len(icons) != 1 || !strings.HasPrefix(icons[0].Source, "data:image/svg+xml;base64,") || len(icons[0].Source) > maxIconURI ||
		icons[0].MIMEType != "image/svg+xml" {
		t.Errorf("%s icons %+v, want one small embedded SVG", what, icons)
	}
}

// serverFeatures is what initialize and tools/list say, as the TypeScript
// SDK gives them.
type serverFeatures struct {
	Server struct {
		Name, Version, Title, Description string
		WebsiteURL                        *string      `json:"websiteUrl"`
		Icons                             []gosdk.Icon `json:"icons"`
	} `json:"server"`
	Capabilities map[string]json.RawMessage `json:"capabilities"`
	Instructions string                     `json:"instructions"`
}

func TestServerIdentityAndInstructions(t *testing.T) {
	steps := []map[string]any{{"op": "info"}, {"op": "list"}}
	hs := startHTTPServer(t, []string{"CAPSULE_AUTH_TOKEN=" + testToken}, "--timeout", "20s")
	for name, spec := range map[string]map[string]any{"stdio": tsStdio(steps, "--timeout", "20s"), "http": tsHTTP(hs, steps)} {
		t.Run("ts-"+name, func(t *testing.T) {
			run := runTS(t, spec)
			var f serverFeatures
			if err := json.Unmarshal(run.Steps[0].OK, &f); err != nil {
				t.Fatalf("%s: %v", run.Steps[0].OK, err)
			}
			if f.Server.Name != "capsule" || f.Server.Title != "Capsule" || !strings.Contains(f.Server.Description, "sandbox") || f.Server.WebsiteURL != nil {
				t.Errorf("server info %+v, want name, title, description and no website", f.Server)
			}
			checkIcons(t, "server", f.Server.Icons)
			for _, want := range []string{"fresh sandbox", "`inputs`", "20s wall time", "nothing is kept between calls"} {
				if !strings.Contains(f.Instructions, want) {
					t.Errorf("instructions do not say %q: %s", want, f.Instructions)
				}
			}
			if _, ok := f.Capabilities["logging"]; ok != (name == "stdio") {
				t.Errorf("capabilities %s: want logging on stdio only", f.Capabilities)
			}
			var tools []struct {
				Name, Title string
				Icons       []gosdk.Icon `json:"icons"`
			}
			json.Unmarshal(run.Steps[1].OK, &tools)
			for _, tool := range tools {
				if tool.Title == "" {
					t.Errorf("%s has no title", tool.Name)
				}
				checkIcons(t, tool.Name, tool.Icons)
			}
			if len(tools) != 2 {
				t.Errorf("tools %s", run.Steps[1].OK)
			}
		})
	}
	t.Run("go-http", func(t *testing.T) {
		cs := goSDKHTTP(t, hs, nil)
		init := cs.InitializeResult()
		if init.ServerInfo.Title != "Capsule" || !strings.Contains(init.Instructions, "fresh sandbox") {
			t.Errorf("initialize %+v", init)
		}
		checkIcons(t, "server", init.ServerInfo.Icons)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		list, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, tool := range list.Tools {
			if tool.Title == "" {
				t.Errorf("%s has no title", tool.Name)
			}
			checkIcons(t, tool.Name, tool.Icons)
		}
	})
}

// TestLogNotifications: on stdio the client gets the server's log lines at
// the level it set, and stderr keeps every line.
func TestLogNotifications(t *testing.T) {
	t.Run("ts-stdio", func(t *testing.T) {
		run := runTS(t, tsStdio([]map[string]any{
			{"op": "call", "name": "execute_javascript", "arguments": map[string]any{"code": "'before'"}},
			{"op": "setLevel", "level": "info"},
			{"op": "call", "name": "execute_javascript", "arguments": map[string]any{"code": "'at info'"}},
			{"op": "wait", "ms": 300},
			{"op": "setLevel", "level": "warning"},
			{"op": "call", "name": "execute_javascript", "arguments": map[string]any{"code": "'at warning'"}},
			{"op": "wait", "ms": 300},
		}))
		var executions []string
		for _, l := range run.Logs {
			var n struct {
				Level, Logger string
				Data          map[string]any
			}
			json.Unmarshal(l, &n)
			if n.Data["message"] == "execution" {
				executions = append(executions, n.Level+" "+n.Logger)
			}
		}
		if len(executions) != 1 || executions[0] != "info capsule" {
			t.Errorf("execution log lines %q, want exactly one, at info from logger capsule, for the call made at level info; all: %s", executions, run.Logs)
		}
	})
	t.Run("go-stdio", func(t *testing.T) {
		var mu sync.Mutex
		// MCP logging is what this test is about; the SDK deprecates it for
		// protocol version 2026-07-28, which capsule serves too.
		//lint:ignore SA1019 the test is of MCP logging itself.
		var got []*gosdk.LoggingMessageParams
		//lint:ignore SA1019 the test is of MCP logging itself.
		cs := goSDKStdio(t, &gosdk.ClientOptions{LoggingMessageHandler: func(_ context.Context, r *gosdk.LoggingMessageRequest) {
			mu.Lock()
			got = append(got, r.Params)
			mu.Unlock()
		}})
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		//lint:ignore SA1019 the test is of MCP logging itself.
		if err := cs.SetLoggingLevel(ctx, &gosdk.SetLoggingLevelParams{Level: "debug"}); err != nil {
			t.Fatal(err)
		}
		goSDKCall(t, cs, "execute_python", map[string]any{"code": "1"})
		if !eventually(5*time.Second, func() bool {
			mu.Lock()
			defer mu.Unlock()
			for _, p := range got {
				if d, _ := p.Data.(map[string]any); d["message"] == "execution" && d["language"] == "python" {
					return true
				}
			}
			return false
		}) {
			t.Errorf("no execution line at debug level: %+v", got)
		}
	})
}

// TestLogNotificationsRawKeepStderr: the line a client gets is also on
// stderr, whatever level the client set.
func TestLogNotificationsRawKeepStderr(t *testing.T) {
	r := startRawStdio(t)
	r.send(t, `{"jsonrpc":"2.0","id":1,"method":"logging/setLevel","params":{"level":"info"}}`)
	r.expect(t, 1)
	r.send(t, toolCall(2, "execute_javascript", "1"))
	var note map[string]any
	for note == nil {
		m := r.next(t)
		if m["method"] == "notifications/message" {
			note = m
		}
	}
	p, _ := note["params"].(map[string]any)
	d, _ := p["data"].(map[string]any)
	if p["level"] != "info" || d["message"] != "execution" || d["language"] != "javascript" {
		t.Errorf("notification %v, want the execution line at info", note)
	}
	if !eventually(5*time.Second, func() bool { return strings.Contains(r.stderr.String(), "execution: id=1 language=javascript") }) {
		t.Errorf("stderr lacks the execution line:\n%s", r.stderr.String())
	}
}
