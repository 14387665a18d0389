package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// Tool names, as capsule serves them.
const (
	toolPython     = "execute_python"
	toolJavaScript = "execute_javascript"
)

// callTimeout bounds one tool call made by the bench.
const callTimeout = 2 * time.Minute

// structured mirrors the tools' structuredContent; only the fields the
// bench reads.
type structured struct {
	Stdout     string          `json:"stdout"`
	Stderr     string          `json:"stderr"`
	Result     json.RawMessage `json:"result"`
	DurationMS float64         `json:"duration_ms"`
	Error      *struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
	Limit *string `json:"limit"`
	Files []struct {
		Path string `json:"path"`
		Size int64  `json:"size"`
	} `json:"files"`
}

// server is a running `capsule serve` with an initialised MCP session.
type server struct {
	c      *client.Client
	cmd    *exec.Cmd
	stderr *lockedBuffer
	// started is when the process was started; initialized when the
	// initialize answer arrived.
	started     time.Time
	initialized time.Time
	// stopHTTP stops a server started with --http (closing its client
	// does not); nil over stdio.
	stopHTTP func()
}

// lockedBuffer collects the server's log for error messages.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// len is the size of the log so far.
func (b *lockedBuffer) len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Len()
}

// since returns the log from offset on.
func (b *lockedBuffer) since(offset int) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()[offset:]
}

// tail returns the last n bytes of the log.
func (b *lockedBuffer) tail(n int) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.buf.String()
	if len(s) > n {
		s = "..." + s[len(s)-n:]
	}
	return strings.TrimSpace(s)
}

// serverEnv is the bench's environment for the server: the compilation
// cache under cacheHome, and none of the caller's CAPSULE_* settings, so
// that only the flags the bench passes decide the configuration.
func serverEnv(cacheHome string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "CAPSULE_") || strings.HasPrefix(kv, "XDG_CACHE_HOME=") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "XDG_CACHE_HOME="+cacheHome)
}

// startServer starts `bin serve flags...` with its compilation cache under
// cacheHome and initialises an MCP session with it.
func startServer(bin, cacheHome string, flags ...string) (*server, error) {
	s := &server{stderr: &lockedBuffer{}}
	mk := func(ctx context.Context, command string, _ []string, args []string) (*exec.Cmd, error) {
		cmd := exec.Command(command, args...)
		cmd.Env = serverEnv(cacheHome)
		cmd.Stderr = s.stderr
		s.cmd = cmd
		return cmd, nil
	}
	// Debug JSON logs carry each worker's CPU per phase (workerPhases).
	args := append([]string{"serve", "--log-level", "debug", "--log-json"}, flags...)
	s.started = time.Now()
	c, err := client.NewStdioMCPClientWithOptions(bin, nil, args, transport.WithCommandFunc(mk))
	if err != nil {
		return nil, fmt.Errorf("starting %s serve: %w", bin, err)
	}
	s.c = c
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "capsule-bench", Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		s.close()
		return nil, fmt.Errorf("initialize: %w\nserver log:\n%s", err, s.stderr.tail(4000))
	}
	s.initialized = time.Now()
	return s, nil
}

// pid is the server's process id.
func (s *server) pid() int { return s.cmd.Process.Pid }

// close ends the session, which makes the server exit, and waits for it.
func (s *server) close() {
	if s.c != nil {
		_ = s.c.Close()
	}
	if s.stopHTTP != nil {
		s.stopHTTP()
	}
}

// answer is one tool call as the bench saw it.
type answer struct {
	// wall is the client-side round trip: request written to answer read.
	wall time.Duration
	st   structured
}

// durationMS is the server's own duration_ms of the call.
func (a answer) durationMS() float64 { return a.st.DurationMS }

// resultFloat decodes the call's result as a number.
func (a answer) resultFloat() (float64, error) {
	var f float64
	if err := json.Unmarshal(a.st.Result, &f); err != nil {
		return 0, fmt.Errorf("result %s is not a number: %w", a.st.Result, err)
	}
	return f, nil
}

// call runs code with tool and fails unless the code ran without error.
func (s *server) call(tool, code string) (answer, error) {
	return s.callArgs(tool, map[string]any{"code": code})
}

// callArgs is call with all of the tool's arguments.
func (s *server) callArgs(tool string, args map[string]any) (answer, error) {
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	req := mcp.CallToolRequest{}
	req.Params.Name = tool
	req.Params.Arguments = args
	start := time.Now()
	res, err := s.c.CallTool(ctx, req)
	wall := time.Since(start)
	if err != nil {
		return answer{}, fmt.Errorf("%s: %w\nserver log:\n%s", tool, err, s.stderr.tail(4000))
	}
	a := answer{wall: wall}
	if res.StructuredContent != nil {
		b, err := json.Marshal(res.StructuredContent)
		if err != nil {
			return a, err
		}
		if err := json.Unmarshal(b, &a.st); err != nil {
			return a, fmt.Errorf("%s: structuredContent %s: %w", tool, b, err)
		}
	}
	return a, a.check(tool, res.IsError)
}

// check fails for a call that failed or whose answer has no result.
func (a answer) check(tool string, isError bool) error {
	if isError {
		msg := "no structured error"
		if a.st.Error != nil {
			msg = a.st.Error.Type + ": " + a.st.Error.Message
		}
		return fmt.Errorf("%s: the call failed: %s", tool, msg)
	}
	if a.st.Result == nil {
		return errors.New(tool + ": the answer has no structuredContent")
	}
	return nil
}

// workerPhases collects, from a server's JSON log, the CPU milliseconds
// each worker reported for each phase of its life (worker_cpu_PHASE_ms).
func workerPhases(log string) map[string][]float64 {
	out := map[string][]float64{}
	for m := range executions(log) {
		for k, v := range m {
			phase, ok := strings.CutPrefix(k, "worker_cpu_")
			f, isNum := v.(float64)
			if ok && isNum {
				out[strings.TrimSuffix(phase, "_ms")] = append(out[strings.TrimSuffix(phase, "_ms")], f)
			}
		}
	}
	return out
}

// executions yields the server's execution log lines (JSON) in log.
func executions(log string) func(func(map[string]any) bool) {
	return func(yield func(map[string]any) bool) {
		for line := range strings.Lines(log) {
			var m map[string]any
			if json.Unmarshal([]byte(line), &m) != nil || m["@message"] != "execution" {
				continue
			}
			if !yield(m) {
				return
			}
		}
	}
}

// startedFromVariant reports whether log has a call that started from the
// snapshot variant.
func startedFromVariant(log, variant string) bool {
	for m := range executions(log) {
		if m["variant"] == variant {
			return true
		}
	}
	return false
}

// startHTTPServer starts `bin serve --http 127.0.0.1:0 flags...` with its
// compilation cache under cacheHome, waits until it listens and says it is
// ready, and initialises an MCP session with it over Streamable HTTP. Its
// close stops the server too.
func startHTTPServer(bin, cacheHome string, flags ...string) (*server, error) {
	s := &server{stderr: &lockedBuffer{}}
	args := append([]string{"serve", "--http", "127.0.0.1:0", "--log-level", "debug", "--log-json"}, flags...)
	s.cmd = exec.Command(bin, args...)
	s.cmd.Env = serverEnv(cacheHome)
	s.cmd.Stderr = s.stderr
	s.started = time.Now()
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s serve --http: %w", bin, err)
	}
	s.stopHTTP = func() {
		_ = s.cmd.Process.Signal(syscall.SIGTERM)
		_ = s.cmd.Wait()
	}
	base, err := s.waitHTTPReady(30 * time.Second)
	if err != nil {
		s.close()
		return nil, err
	}
	c, err := client.NewStreamableHttpClient(base + "/mcp")
	if err != nil {
		s.close()
		return nil, err
	}
	s.c = c
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		s.close()
		return nil, fmt.Errorf("starting the HTTP client: %w", err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "capsule-bench", Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		s.close()
		return nil, fmt.Errorf("initialize over HTTP: %w\nserver log:\n%s", err, s.stderr.tail(4000))
	}
	s.initialized = time.Now()
	return s, nil
}

// waitHTTPReady reads the address the server listens on from its JSON log
// and waits until its /readyz answers 200; it returns the base URL.
func (s *server) waitHTTPReady(limit time.Duration) (string, error) {
	deadline := time.Now().Add(limit)
	base := ""
	for time.Now().Before(deadline) {
		if addr := listeningAddr(s.stderr.since(0)); base == "" && addr != "" {
			base = "http://" + addr
		}
		if base != "" {
			if res, err := http.Get(base + "/readyz"); err == nil {
				res.Body.Close()
				if res.StatusCode == http.StatusOK {
					return base, nil
				}
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return "", fmt.Errorf("capsule serve --http did not become ready within %s\nserver log:\n%s", limit, s.stderr.tail(4000))
}

// listeningAddr is the address in a server's JSON log line "listening",
// or "" before it has logged one.
func listeningAddr(log string) string {
	for line := range strings.Lines(log) {
		var m struct {
			Message string `json:"@message"`
			Addr    string `json:"addr"`
		}
		if json.Unmarshal([]byte(line), &m) == nil && m.Message == "listening" && m.Addr != "" {
			return m.Addr
		}
	}
	return ""
}
