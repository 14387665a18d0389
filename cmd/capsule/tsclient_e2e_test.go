package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// The MCP TypeScript SDK's client, installed once per test run with npm
// from testdata/tsclient (package-lock.json pins every package by hash),
// into a cache directory named by the hash of what it installs.
var (
	tsClientOnce sync.Once
	tsClientDir  string
	tsClientErr  error
)

// tsClient returns the directory holding client.mjs and its node_modules,
// installing them the first time; without node or npm the test is skipped,
// saying so.
func tsClient(t testing.TB) string {
	t.Helper()
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed: the TypeScript SDK client cannot run", tool)
		}
	}
	tsClientOnce.Do(func() { tsClientDir, tsClientErr = installTSClient() })
	if tsClientErr != nil {
		t.Fatalf("installing the MCP TypeScript SDK client: %v", tsClientErr)
	}
	return tsClientDir
}

func installTSClient() (string, error) {
	names := []string{"package.json", "package-lock.json", "client.mjs"}
	sum := sha256.New()
	contents := map[string][]byte{}
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join("testdata", "tsclient", n))
		if err != nil {
			return "", err
		}
		contents[n] = b
		sum.Write(b)
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir := filepath.Join(cache, "capsule-test", "tsclient-"+hex.EncodeToString(sum.Sum(nil))[:16])
	if _, err := os.Stat(filepath.Join(dir, "node_modules", ".package-lock.json")); err == nil {
		return dir, nil
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), "install-")
	if err != nil {
		return "", err
	}
	for n, b := range contents {
		if err := os.WriteFile(filepath.Join(tmp, n), b, 0o644); err != nil {
			return "", err
		}
	}
	cmd := exec.Command("npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund")
	cmd.Dir = tmp
	if out, err := cmd.CombinedOutput(); err != nil {
		os.RemoveAll(tmp)
		return "", fmt.Errorf("npm ci: %w\n%s", err, out)
	}
	if err := os.Rename(tmp, dir); err != nil {
		os.RemoveAll(tmp)
		if _, statErr := os.Stat(dir); statErr != nil { // not another run's install
			return "", err
		}
	}
	return dir, nil
}

// tsCall is one tool call for runTSClient.
type tsCall struct {
	Name      string         `json:"name"`
	Arguments map[string]any `json:"arguments"`
}

// tsResult is a tool result as the TypeScript SDK's client returns it, or
// the error the client itself failed with.
type tsResult struct {
	Error   string `json:"error"`
	IsError bool   `json:"isError"`
	Content []struct {
		Type     string `json:"type"`
		Text     string `json:"text"`
		Data     string `json:"data"`
		MIMEType string `json:"mimeType"`
		Resource struct {
			URI      string `json:"uri"`
			MIMEType string `json:"mimeType"`
			Text     string `json:"text"`
			Blob     string `json:"blob"`
		} `json:"resource"`
	} `json:"content"`
	StructuredContent json.RawMessage `json:"structuredContent"`
}

// runTSClient lists the tools (so the SDK checks each structuredContent
// against its tool's outputSchema) and makes calls one after the other
// through client.mjs, on spec's transport (tsStdio, tsHTTP, or a spec of
// one's own; its steps are replaced).
func runTSClient(t *testing.T, spec map[string]any, calls []tsCall) []tsResult {
	t.Helper()
	steps := []map[string]any{{"op": "list"}}
	for _, c := range calls {
		steps = append(steps, map[string]any{"op": "call", "name": c.Name, "arguments": c.Arguments})
	}
	spec["steps"] = steps
	run := runTS(t, spec)
	if len(run.Steps) != len(steps) || run.Steps[0].Error != "" {
		t.Fatalf("TypeScript client: %+v", run)
	}
	results := make([]tsResult, len(calls))
	for i, st := range run.Steps[1:] {
		if st.Error != "" {
			results[i].Error = st.Error
		} else if err := json.Unmarshal(st.OK, &results[i]); err != nil {
			t.Fatalf("TypeScript client's result %d: %v", i, err)
		}
	}
	return results
}
