package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// rawClient speaks JSON-RPC to `capsule serve` over its stdin and stdout
// itself: each request written as one line, encoded before the clock
// starts, and the response read as one line, decoded after it stops. Its
// round trip is what the server and the pipe cost, whatever a host's own
// JSON library then costs; mcp-go's client decodes a response several
// times over (the files row reports both).
type rawClient struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Reader
	stderr *lockedBuffer
	nextID int
}

// startRawClient starts `bin serve` as startServer does and initialises
// the session.
func startRawClient(bin, cacheHome string) (*rawClient, error) {
	c := &rawClient{stderr: &lockedBuffer{}}
	c.cmd = exec.Command(bin, "serve", "--log-level", "debug", "--log-json")
	c.cmd.Env = serverEnv(cacheHome)
	c.cmd.Stderr = c.stderr
	var err error
	if c.in, err = c.cmd.StdinPipe(); err != nil {
		return nil, err
	}
	stdout, err := c.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	c.out = bufio.NewReaderSize(stdout, 1<<20)
	if err := c.cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s serve: %w", bin, err)
	}
	init := map[string]any{"protocolVersion": mcp.LATEST_PROTOCOL_VERSION, "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "capsule-bench-raw", "version": "1"}}
	if _, _, err := c.roundTrip("initialize", init); err != nil {
		c.close()
		return nil, fmt.Errorf("initialize: %w\nserver log:\n%s", err, c.stderr.tail(4000))
	}
	if _, err := c.in.Write([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n")); err != nil {
		c.close()
		return nil, err
	}
	return c, nil
}

// roundTrip sends a request and returns its response line and the time
// from the first byte written to the last byte read.
func (c *rawClient) roundTrip(method string, params any) ([]byte, time.Duration, error) {
	c.nextID++
	id := strconv.Itoa(c.nextID)
	req, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": c.nextID, "method": method, "params": params})
	if err != nil {
		return nil, 0, err
	}
	want := []byte(`{"jsonrpc":"2.0","id":` + id + `,`)
	start := time.Now()
	if _, err := c.in.Write(append(req, '\n')); err != nil {
		return nil, 0, err
	}
	for {
		line, err := c.out.ReadBytes('\n')
		if err != nil {
			return nil, 0, fmt.Errorf("reading the response to %s: %w", method, err)
		}
		// mcp-go writes a response's jsonrpc and id first; anything else
		// (a notification) is skipped.
		if bytes.HasPrefix(line, want) {
			return line, time.Since(start), nil
		}
	}
}

// callArgs calls tool with args, as server.callArgs does.
func (c *rawClient) callArgs(tool string, args map[string]any) (answer, error) {
	line, wall, err := c.roundTrip("tools/call", map[string]any{"name": tool, "arguments": args})
	if err != nil {
		return answer{}, fmt.Errorf("%s: %w\nserver log:\n%s", tool, err, c.stderr.tail(4000))
	}
	var resp struct {
		Result struct {
			IsError           bool       `json:"isError"`
			StructuredContent structured `json:"structuredContent"`
		} `json:"result"`
		Error *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(line, &resp); err != nil {
		return answer{}, fmt.Errorf("%s: the response is not JSON: %w", tool, err)
	}
	if resp.Error != nil {
		return answer{}, fmt.Errorf("%s: %s", tool, resp.Error.Message)
	}
	a := answer{wall: wall, st: resp.Result.StructuredContent}
	return a, a.check(tool, resp.Result.IsError)
}

func (c *rawClient) pid() int { return c.cmd.Process.Pid }

// close ends stdin, which makes the server exit, and waits for it.
func (c *rawClient) close() {
	_ = c.in.Close()
	_ = c.cmd.Wait()
}
