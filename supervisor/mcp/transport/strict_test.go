package transport

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	tools "capsule/supervisor/mcp"
	"capsule/supervisor/mcp/toolcall"
)

// ambiguousRequests are requests a reader could take two ways: each must
// be refused with its code, naming the key, and run nothing.
var ambiguousRequests = []struct {
	name, msg string
	code      int
	says      string
}{
	{"tool name by case", `{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"other","Name":"count","arguments":{"code":"1"}}}`,
		-32602, `key "Name", which differs from "name"`},
	{"arguments with a twin", `{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"count","arguments":{"code":"1"},"Arguments":{"code":"2"}}}`,
		-32602, `key "Arguments"`},
	{"arguments with a long s", `{"jsonrpc":"2.0","id":13,"method":"tools/call","params":{"name":"count","argument` + "\u017f" + `":{"code":"1"}}}`,
		-32602, `key "argument\u017f", which differs from "arguments"`},
	{"code twice", `{"jsonrpc":"2.0","id":14,"method":"tools/call","params":{"name":"count","arguments":{"code":"1","code":"2"}}}`,
		-32602, `key "code" more than once`},
	{"an argument by case", `{"jsonrpc":"2.0","id":15,"method":"tools/call","params":{"name":"count","arguments":{"CODE":"1"}}}`,
		-32602, `key "CODE", which differs from "code"`},
	{"id by case", `{"jsonrpc":"2.0","id":4,"ID":5,"method":"tools/call","params":{"name":"count","arguments":{"code":"1"}}}`,
		-32600, `key "ID", which differs from "id"`},
	{"method by case", `{"jsonrpc":"2.0","id":16,"METHOD":"tools/call","params":{"name":"count","arguments":{"code":"1"}}}`,
		-32600, `key "METHOD"`},
	{"a file twice", `{"jsonrpc":"2.0","id":17,"method":"tools/call","params":{"name":"count","arguments":{"code":"1","files":{"a":"x","a":"y"}}}}`,
		-32602, `"params.arguments.files" has the key "a" more than once`},
	{"ping with a twin method", `{"jsonrpc":"2.0","id":18,"method":"ping","Method":"tools/call","params":{"name":"count","arguments":{"code":"1"}}}`,
		-32600, `key "Method"`},
}

// countingServer has one tool, count, that counts its runs.
func countingServer(runs *atomic.Int64) *server.MCPServer {
	srv := server.NewMCPServer("test", "1")
	srv.AddTool(mcp.NewTool("count"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		runs.Add(1)
		return mcp.NewToolResultText("ran"), nil
	})
	srv.AddTool(mcp.NewTool("other"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		runs.Add(1)
		return mcp.NewToolResultText("ran"), nil
	})
	return srv
}

// rpcReply is a JSON-RPC response as the tests read it.
type rpcReply struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// checkRefused checks that reply refuses request i of ambiguousRequests.
func checkRefused(t *testing.T, name string, reply []byte, code int, says string) {
	t.Helper()
	var r rpcReply
	if err := json.Unmarshal(reply, &r); err != nil {
		t.Fatalf("%s: %q is not a JSON-RPC response: %v", name, reply, err)
	}
	if r.Error == nil || r.Error.Code != code || !strings.Contains(r.Error.Message, says) || r.Result != nil {
		t.Errorf("%s: answered %s; want error %d saying %q", name, reply, code, says)
	}
}

func TestAmbiguousRequestsRefusedOnStdio(t *testing.T) {
	var runs atomic.Int64
	s := startStdioSession(t, countingServer(&runs), time.Second)
	s.initialize("2025-03-26")
	for _, tt := range ambiguousRequests {
		s.send(tt.msg)
		line := s.next()
		if line == nil {
			t.Fatalf("%s: no answer", tt.name)
		}
		checkRefused(t, tt.name, line, tt.code, tt.says)
	}
	// In a batch, each ambiguous element is refused on its own.
	s.send("[" + ambiguousRequests[0].msg + "," + `{"jsonrpc":"2.0","id":99,"method":"ping"}` + "]")
	var batch []json.RawMessage
	if err := json.Unmarshal(s.next(), &batch); err != nil || len(batch) != 2 {
		t.Fatalf("batch answered %v %v", batch, err)
	}
	for _, r := range batch {
		if strings.Contains(string(r), `"id":99`) {
			continue
		}
		checkRefused(t, "in a batch", r, ambiguousRequests[0].code, ambiguousRequests[0].says)
	}
	if n := runs.Load(); n != 0 {
		t.Fatalf("an ambiguous request ran the tool %d times", n)
	}
	s.send(`{"jsonrpc":"2.0","id":100,"method":"tools/call","params":{"name":"count","arguments":{"code":"1"}}}`)
	if r := s.response(); r.Error != nil || runs.Load() != 1 {
		t.Errorf("the call after the refusals: %+v, %d runs", r, runs.Load())
	}
}

func TestAmbiguousRequestsRefusedOverHTTP(t *testing.T) {
	var runs atomic.Int64
	h := NewHTTPServer(countingServer(&runs), func() bool { return true }, testOptions(), hclog.NewNullLogger()).Handler
	post := func(body, version string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodPost, MCPPath, strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json, text/event-stream")
		r.Header.Set(ProtocolVersionHeader, version)
		return serveOne(h, r)
	}
	for _, tt := range ambiguousRequests {
		w := post(tt.msg, "2025-06-18")
		if w.Code != http.StatusBadRequest {
			t.Errorf("%s: status %d, want 400", tt.name, w.Code)
		}
		checkRefused(t, tt.name, w.Body.Bytes(), tt.code, tt.says)
	}
	w := post("["+ambiguousRequests[3].msg+"]", "2025-03-26")
	var batch []json.RawMessage
	if err := json.Unmarshal(w.Body.Bytes(), &batch); err != nil || len(batch) != 1 {
		t.Fatalf("batch answered %s: %v", w.Body, err)
	}
	checkRefused(t, "in a batch", batch[0], ambiguousRequests[3].code, ambiguousRequests[3].says)
	if n := runs.Load(); n != 0 {
		t.Fatalf("an ambiguous request ran the tool %d times", n)
	}
	w = post(`{"jsonrpc":"2.0","id":100,"method":"tools/call","params":{"name":"count","arguments":{"code":"1"}}}`, "2025-06-18")
	if !strings.Contains(w.Body.String(), `"ran"`) || runs.Load() != 1 {
		t.Errorf("the call after the refusals: %d %s, %d runs", w.Code, w.Body, runs.Load())
	}
}

// FuzzOneMeaning feeds the same bytes to both ways a request is read: the
// fast path (toolcall.Split, whose arguments go to ParseArguments, and
// whose small message mcp-go reads for the rest) and the slow path
// (mcp-go decoding the whole message with encoding/json, case-insensitive,
// its arguments to ParseArguments), and to a reading that matches keys
// exactly as the protocol spells them. Whatever Split does not refuse
// must mean the same to all three: the same method, id, tool and
// arguments.
func FuzzOneMeaning(f *testing.F) {
	for _, tt := range ambiguousRequests {
		f.Add([]byte(tt.msg))
	}
	for _, msg := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"execute_python","arguments":{"code":"1","timeout_seconds":2,"inputs":{"a":[1,{"b":null}]},"files":{"x.csv":"a,b\n","y":{"base64":"AA=="}}}}}`,
		`{"jsonrpc":"2.0","id":"s","method":"tools/call","params":{"name":"execute_javascript","arguments":{"code":"1"},"_meta":{"progressToken":3}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"t","arguments":[]}}`,
		`{"jsonrpc":"2.0","id":{"x":1},"method":"tools/call","params":{"name":"t","arguments":{"code":"1"}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"t","arguments":{"c\u006fde":"1","inputs":{"A":1,"a":2}}}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"t","nam\u212a":"u","arguments":{"code":"1"}}}`,
		`{"jsonrpc":"2.0","id":5,"method":"ping","params":{"x":1,"X":2}}`,
	} {
		f.Add([]byte(msg))
	}
	f.Fuzz(func(t *testing.T, msg []byte) {
		call, small, refusal := toolcall.Split(msg, tools.ArgumentNames)
		if refusal != nil {
			return
		}
		// The slow path: what mcp-go's HandleMessage reads first.
		var base struct {
			JSONRPC string `json:"jsonrpc"`
			Method  string `json:"method"`
			ID      any    `json:"id"`
		}
		if err := json.Unmarshal(msg, &base); err != nil {
			if call != nil {
				t.Fatalf("split %q, which mcp-go cannot read: %v", msg, err)
			}
			return
		}
		// The exact reading: keys as spelled, nothing folded.
		var exact map[string]any
		if json.Unmarshal(msg, &exact) != nil {
			return
		}
		method, _ := exact["method"].(string)
		jsonrpc, _ := exact["jsonrpc"].(string)
		if base.Method != method || base.JSONRPC != jsonrpc || !reflect.DeepEqual(base.ID, exact["id"]) {
			t.Fatalf("%q: mcp-go reads method %q, jsonrpc %q, id %#v; exactly, it is %q, %q, %#v",
				msg, base.Method, base.JSONRPC, base.ID, method, jsonrpc, exact["id"])
		}
		if method != toolcall.Method {
			if call != nil {
				t.Fatalf("split %q, which is no tools/call", msg)
			}
			return
		}
		var whole mcp.CallToolRequest
		if err := json.Unmarshal(msg, &whole); err != nil {
			if call != nil {
				t.Fatalf("split %q, whose params mcp-go cannot read: %v", msg, err)
			}
			return
		}
		params, _ := exact["params"].(map[string]any)
		name, _ := params["name"].(string)
		if _, isString := params["name"]; isString && whole.Params.Name != name {
			t.Fatalf("%q: mcp-go reads tool %q, exactly it is %q", msg, whole.Params.Name, name)
		}
		slow, slowErr := tools.ParseArguments(whole.GetRawArguments())
		exactArgs, exactErr := tools.ParseArguments(params["arguments"])
		sameArguments(t, msg, "mcp-go's", slow, slowErr, "the exact", exactArgs, exactErr)
		if call == nil {
			return
		}
		var rest mcp.CallToolRequest
		if err := json.Unmarshal(small, &rest); err != nil || rest.Params.Name != whole.Params.Name {
			t.Fatalf("%q: the small message %q names tool %q (%v), the whole %q", msg, small, rest.Params.Name, err, whole.Params.Name)
		}
		var id any
		if json.Unmarshal(call.ID, &id) != nil || !reflect.DeepEqual(id, base.ID) {
			t.Fatalf("%q: split id %s, mcp-go reads %#v", msg, call.ID, base.ID)
		}
		fast, fastErr := tools.ParseArguments(call.Arguments)
		sameArguments(t, msg, "the fast path's", fast, fastErr, "mcp-go's", slow, slowErr)
	})
}

// sameArguments fails unless two readings of a call's arguments agree:
// both refused (the wording may name another of several bad arguments,
// since maps have no order), or the same arguments.
func sameArguments(t *testing.T, msg []byte, aName string, a tools.Arguments, aErr error, bName string, b tools.Arguments, bErr error) {
	t.Helper()
	if (aErr == nil) != (bErr == nil) || aErr == nil && !reflect.DeepEqual(a, b) {
		t.Fatalf("%q: %s reading gives %+v (%v), %s %+v (%v)", msg, aName, a, aErr, bName, b, bErr)
	}
}
