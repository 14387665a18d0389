package main

import (
	"bytes"
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

// tsClient returns the directory holding client.mjs and its node_modules.
func tsClient(t *testing.T) string {
	t.Helper()
	tsClientOnce.Do(func() { tsClientDir, tsClientErr = installTSClient() })
	if tsClientErr != nil {
		t.Fatalf("installing the MCP TypeScript SDK client (needs node and npm): %v", tsClientErr)
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

// tsCall is one tool call for client.mjs.
type tsCall struct {
	Name      string         `json:"name"`
	Arguments map[string]any `json:"arguments"`
}

// tsResult is a tool result as the TypeScript SDK's client returns it.
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

// runTSClient makes calls through client.mjs with args (see its comment).
func runTSClient(t *testing.T, calls []tsCall, args ...string) []tsResult {
	t.Helper()
	dir := tsClient(t)
	in, err := json.Marshal(calls)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("node", append([]string{filepath.Join(dir, "client.mjs")}, args...)...)
	cmd.Env = serverEnv()
	cmd.Stdin = bytes.NewReader(in)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("client.mjs: %v\n%s", err, stderr.String())
	}
	var results []tsResult
	if err := json.Unmarshal(stdout.Bytes(), &results); err != nil || len(results) != len(calls) {
		t.Fatalf("client.mjs printed %q (%v)\nstderr: %s", stdout.String(), err, stderr.String())
	}
	return results
}
