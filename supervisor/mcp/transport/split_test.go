package transport

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"capsule/supervisor/mcp/toolcall"
)

// filesServer is an MCP server whose tool "files" answers with the files
// it was passed, each as a text resource through toolcall, so that each is
// spliced into the response. It refuses a call the transport did not split
// or whose arguments mcp-go saw; with "wait": true it runs until its
// context ends; asked for progress, it sends one notification first.
func filesServer() *server.MCPServer {
	srv := server.NewMCPServer("test", "1")
	srv.AddTool(mcp.NewTool("files"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		call := toolcall.FromContext(ctx)
		switch {
		case call == nil:
			return mcp.NewToolResultError("the call was not split"), nil
		case len(req.GetArguments()) != 0:
			return mcp.NewToolResultError("mcp-go saw the arguments"), nil
		}
		args := call.Arguments.(map[string]any)
		if req.Params.Meta != nil && req.Params.Meta.ProgressToken != nil {
			_ = srv.SendNotificationToClient(ctx, "notifications/progress",
				map[string]any{"progressToken": req.Params.Meta.ProgressToken, "progress": 1})
		}
		if args["wait"] == true {
			<-ctx.Done()
			return mcp.NewToolResultError("cancelled"), nil
		}
		files, _ := args["files"].(map[string]any)
		res := mcp.NewToolResultText(fmt.Sprintf("%d files", len(files)))
		for _, name := range slices.Sorted(func(yield func(string) bool) {
			for k := range files {
				if !yield(k) {
					return
				}
			}
		}) {
			res.Content = append(res.Content, mcp.NewEmbeddedResource(mcp.TextResourceContents{
				URI: "file:///" + name, Text: call.Text([]byte(files[name].(string)))}))
		}
		return res, nil
	})
	return srv
}

// filesCall is a tools/call of filesServer's tool with these arguments.
func filesCall(id string, args map[string]any, meta string) string {
	b, _ := json.Marshal(args)
	if meta != "" {
		meta = `,"_meta":` + meta
	}
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"files","arguments":` + string(b) + meta + `}}`
}

// callResult is what the tests read of a tools/call response.
type callResult struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Result struct {
		IsError bool `json:"isError"`
		Content []struct {
			Text     string `json:"text"`
			Resource struct {
				URI  string `json:"uri"`
				Text string `json:"text"`
			} `json:"resource"`
		} `json:"content"`
	} `json:"result"`
	Error *struct{ Message string } `json:"error"`
}

// files is the files a response returned, by URI, or an error saying what
// else it was.
func (r callResult) files() (map[string]string, error) {
	if r.Error != nil || r.Result.IsError || len(r.Result.Content) == 0 {
		return nil, fmt.Errorf("response %s: error %v, result %+v", r.ID, r.Error, r.Result)
	}
	out := map[string]string{}
	for _, c := range r.Result.Content[1:] {
		out[c.Resource.URI] = c.Resource.Text
	}
	return out, nil
}

// stdioSession runs a stdio server behind a guard that splits calls.
type stdioSession struct {
	t     *testing.T
	in    *io.PipeWriter
	lines chan []byte
	done  chan struct{} // closed when the stdio server has stopped
}

func startStdioSession(t *testing.T, srv *server.MCPServer, grace time.Duration) *stdioSession {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	g := NewStdioGuard(inR, outW, 1<<20, grace)
	stdio := server.NewStdioServer(srv)
	stdio.SetContextFunc(g.ServeToolCalls(srv))
	s := &stdioSession{t: t, in: inW, lines: make(chan []byte, 100), done: make(chan struct{})}
	go func() {
		_ = stdio.Listen(context.Background(), g, g)
		outW.Close()
		close(s.done)
	}()
	go func() {
		r := bufio.NewReader(outR)
		for {
			line, err := r.ReadBytes('\n')
			if err != nil {
				close(s.lines)
				return
			}
			s.lines <- line
		}
	}()
	t.Cleanup(func() { s.close() })
	return s
}

func (s *stdioSession) send(line string) {
	s.t.Helper()
	if _, err := s.in.Write([]byte(line + "\n")); err != nil {
		s.t.Fatal(err)
	}
}

// next is the next line the client gets, or nil after a second of none.
func (s *stdioSession) next() []byte {
	select {
	case l := <-s.lines:
		return l
	case <-time.After(time.Second):
		return nil
	}
}

// response is the next message that is not a notification.
func (s *stdioSession) response() callResult {
	s.t.Helper()
	for {
		line := s.next()
		if line == nil {
			s.t.Fatal("no response")
		}
		var r callResult
		if err := json.Unmarshal(line, &r); err != nil {
			s.t.Fatalf("%q is not JSON: %v", line, err)
		}
		if r.Method == "" {
			return r
		}
	}
}

// initialize opens the session at version.
func (s *stdioSession) initialize(version string) {
	s.t.Helper()
	s.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"` + version + `","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	s.response()
	s.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
}

// close ends stdin and waits for the server to stop.
func (s *stdioSession) close() {
	s.in.Close()
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		s.t.Error("the stdio server did not stop")
	}
}

// bigText is text with every byte JSON escapes, long enough to be spliced
// in many pieces.
var bigText = strings.Repeat("id,\"name\"\tamount\\\r\n\x00\x1f é €", 10000)

func TestStdioSplitCallsReturnTheirOwnFiles(t *testing.T) {
	s := startStdioSession(t, filesServer(), time.Second)
	files := map[string]any{"a.csv": bigText, "b.txt": "small"}
	s.send(filesCall("1", map[string]any{"files": files}, ""))
	s.send(filesCall(`"two"`, map[string]any{"files": map[string]any{"c": "other call's"}}, ""))
	got := map[string]map[string]string{}
	for range 2 {
		r := s.response()
		f, err := r.files()
		if err != nil {
			t.Fatal(err)
		}
		got[string(r.ID)] = f
	}
	want := map[string]map[string]string{
		"1":     {"file:///a.csv": bigText, "file:///b.txt": "small"},
		`"two"`: {"file:///c": "other call's"},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("got %.300v, want %.300v", got, want)
	}
}

func TestStdioSplitCallCancelled(t *testing.T) {
	s := startStdioSession(t, filesServer(), time.Second)
	s.send(filesCall("1", map[string]any{"wait": true}, ""))
	time.Sleep(100 * time.Millisecond)
	s.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`)
	s.send(filesCall("2", map[string]any{"files": map[string]any{"x": "y"}}, ""))
	if r := s.response(); string(r.ID) != "2" {
		t.Fatalf("response to %s, want only 2's: the cancelled call was answered", r.ID)
	}
	if line := s.next(); line != nil {
		t.Errorf("then %s", line)
	}
}

func TestStdioSplitCallProgress(t *testing.T) {
	s := startStdioSession(t, filesServer(), time.Second)
	s.initialize("2025-11-25")
	s.send(filesCall("1", map[string]any{}, `{"progressToken":"p1"}`))
	// The notification and the response take separate ways out, in
	// mcp-go's own path as in this one, and may come in either order.
	var progress, response bool
	for !progress || !response {
		line := s.next()
		if line == nil {
			t.Fatalf("progress %v, response %v", progress, response)
		}
		progress = progress || strings.Contains(string(line), `"notifications/progress"`) && strings.Contains(string(line), `"p1"`)
		response = response || strings.HasPrefix(string(line), `{"jsonrpc":"2.0","id":1,"result"`)
	}
}

func TestStdioSplitCallAnsweredAfterEOF(t *testing.T) {
	srv := filesServer()
	s := startStdioSession(t, srv, time.Second)
	s.send(filesCall("1", map[string]any{"wait": true}, ""))
	s.send(filesCall("2", map[string]any{"files": map[string]any{"x": bigText}}, ""))
	s.in.Close()
	r := s.response()
	if f, err := r.files(); err != nil || f["file:///x"] != bigText {
		t.Fatalf("call 2 after the end of stdin: %v", err)
	}
	// Call 1 runs on for the grace, and is then cancelled.
	select {
	case <-s.done:
		t.Fatal("the server stopped with a call running, before the grace")
	case <-time.After(300 * time.Millisecond):
	}
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		t.Fatal("the server did not stop after the grace")
	}
}

func TestStdioSplitCallsInABatch(t *testing.T) {
	s := startStdioSession(t, filesServer(), time.Second)
	s.initialize("2025-03-26")
	s.send("[" + filesCall("1", map[string]any{"files": map[string]any{"a": bigText}}, "") + "," +
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"},` +
		filesCall("3", map[string]any{"files": map[string]any{"b": "\u2028"}}, "") + "," +
		`{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"arguments":{}}}]`)
	line := s.next()
	var batch []callResult
	if err := json.Unmarshal(line, &batch); err != nil {
		t.Fatalf("%.300s is not a batch response: %v", line, err)
	}
	ids := map[string]bool{}
	for _, r := range batch {
		ids[string(r.ID)] = true
		f, err := r.files()
		switch string(r.ID) {
		case "1":
			if err != nil || f["file:///a"] != bigText {
				t.Errorf("call 1: %v", err)
			}
		case "3":
			if err != nil || f["file:///b"] != "\u2028" {
				t.Errorf("call 3: %v %q", err, f)
			}
		case "null":
			if r.Error == nil || !strings.Contains(r.Error.Message, "null") {
				t.Errorf("the null id: %+v", r)
			}
		}
	}
	if len(batch) != 4 || !ids["1"] || !ids["2"] || !ids["3"] || !ids["null"] {
		t.Errorf("batch of %d responses, ids %v", len(batch), ids)
	}
}

// TestStdioUnsplitCallsStillServed: a tools/call the guard does not split
// (its arguments are not an object) still reaches the tool, through the
// stdio server, which then finds no split call.
func TestStdioUnsplitCallsStillServed(t *testing.T) {
	s := startStdioSession(t, filesServer(), time.Second)
	s.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"files","arguments":[]}}`)
	r := s.response()
	if !r.Result.IsError || len(r.Result.Content) == 0 || r.Result.Content[0].Text != "the call was not split" {
		t.Errorf("response %+v", r)
	}
	s.send(`{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"files","arguments":{}}}`)
	if r := s.response(); r.Error == nil || string(r.ID) != "null" {
		t.Errorf("null id: %+v", r)
	}
}

// TestHTTPSplitCallsKeepTheirFiles: many clients at once, each with files
// of its own; each gets back only its own.
func TestHTTPSplitCallsKeepTheirFiles(t *testing.T) {
	o := testOptions()
	o.MaxRequestBody = 8 << 20
	h := NewHTTPServer(filesServer(), func() bool { return true }, o, hclog.NewNullLogger()).Handler
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			mine := fmt.Sprintf("client %d: ", i) + bigText[:1000*(i+1)]
			r := httptest.NewRequest(http.MethodPost, MCPPath, strings.NewReader(filesCall("1", map[string]any{"files": map[string]any{"f": mine}}, "")))
			r.Header.Set("Content-Type", "application/json")
			r.Header.Set("Accept", "application/json, text/event-stream")
			r.RemoteAddr = fmt.Sprintf("10.0.0.%d:1234", i)
			w := serveOne(h, r)
			var res callResult
			if err := json.Unmarshal(w.Body.Bytes(), &res); err != nil {
				t.Errorf("client %d: %d %.300s: %v", i, w.Code, w.Body, err)
				return
			}
			if f, err := res.files(); err != nil || len(f) != 1 || f["file:///f"] != mine {
				t.Errorf("client %d got %.100q, %v", i, f, err)
			}
		}()
	}
	wg.Wait()
}

func TestHTTPSplitCallsInABatch(t *testing.T) {
	o := testOptions()
	h := NewHTTPServer(filesServer(), func() bool { return true }, o, hclog.NewNullLogger()).Handler
	body := "[" + filesCall("1", map[string]any{"files": map[string]any{"a": bigText}}, "") + "," +
		filesCall("2", map[string]any{"files": map[string]any{"b": "bee"}}, "") + "]"
	r := httptest.NewRequest(http.MethodPost, MCPPath, strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json, text/event-stream")
	r.Header.Set(ProtocolVersionHeader, "2025-03-26")
	w := serveOne(h, r)
	var batch []callResult
	if err := json.Unmarshal(w.Body.Bytes(), &batch); err != nil || len(batch) != 2 {
		t.Fatalf("%d %.300s: %v", w.Code, w.Body, err)
	}
	for _, res := range batch {
		f, err := res.files()
		want := map[string]string{"1": bigText, "2": "bee"}[string(res.ID)]
		if err != nil || len(f) != 1 || (f["file:///a"] != want && f["file:///b"] != want) {
			t.Errorf("response %s: %.100q, %v", res.ID, f, err)
		}
	}
}

func TestHTTPSplitCallCancelled(t *testing.T) {
	o := testOptions()
	h := NewHTTPServer(filesServer(), func() bool { return true }, o, hclog.NewNullLogger()).Handler
	post := func(body string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodPost, MCPPath, strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json, text/event-stream")
		r.Header.Set(SessionHeader, "s")
		return serveOne(h, r)
	}
	done := make(chan *httptest.ResponseRecorder, 1)
	go func() { done <- post(filesCall("4", map[string]any{"wait": true}, "")) }()
	time.Sleep(100 * time.Millisecond)
	post(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":4}}`)
	select {
	case w := <-done:
		if w.Code != http.StatusOK || w.Header().Get("Content-Type") != "text/event-stream" || w.Body.Len() != 0 {
			t.Errorf("cancelled call: %d %q %q, want 200, an event stream, no event", w.Code, w.Header().Get("Content-Type"), w.Body)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the cancellation did not reach the split call")
	}
}
