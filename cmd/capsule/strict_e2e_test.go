package main

// Requests as the protocol spells them, on both transports: an ambiguous
// request is refused and runs nothing, and ping and logging/setLevel are
// answered at every protocol version capsule accepts.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

// issue32Ambiguous are the ambiguous requests of issue 32, each with the
// code it is refused with and what the refusal must name. The code of
// each would print "ran" if it ran.
var issue32Ambiguous = []struct {
	name, msg string
	code      int
	says      string
}{
	{"tool name twice, by case", `{"jsonrpc":"2.0","id":21,"method":"tools/call","params":{"name":"execute_python","Name":"execute_javascript","arguments":{"code":"'ran'"}}}`,
		-32602, `"params" has the key "Name", which differs from "name"`},
	{"arguments with a twin", `{"jsonrpc":"2.0","id":22,"method":"tools/call","params":{"name":"execute_python","arguments":{"code":"'ran'"},"Arguments":{"code":"'ran'"}}}`,
		-32602, `key "Arguments"`},
	{"arguments spelled with U+017F", `{"jsonrpc":"2.0","id":23,"method":"tools/call","params":{"name":"execute_python","argument` + "\u017f" + `":{"code":"'ran'"}}}`,
		-32602, `key "argument\u017f", which differs from "arguments"`},
	{"code twice", `{"jsonrpc":"2.0","id":24,"method":"tools/call","params":{"name":"execute_python","arguments":{"code":"'ran'","code":"'ran'"}}}`,
		-32602, `"params.arguments" has the key "code" more than once`},
	{"id twice, by case", `{"jsonrpc":"2.0","id":4,"ID":5,"method":"tools/call","params":{"name":"execute_python","arguments":{"code":"'ran'"}}}`,
		-32600, `key "ID", which differs from "id"`},
}

// checkRefusal checks a response to an ambiguous request.
func checkRefusal(t *testing.T, name string, m map[string]any, code int, says string) {
	t.Helper()
	e, _ := m["error"].(map[string]any)
	if _, ran := m["result"]; ran || e == nil || e["code"] != float64(code) || !strings.Contains(fmt.Sprint(e["message"]), says) {
		t.Errorf("%s: answered %v; want error %d naming %s", name, m, code, says)
	}
}

func TestAmbiguousRequestsRefused(t *testing.T) {
	flags := []string{"--pool-python", "1", "--pool-javascript", "0"}
	t.Run("stdio", func(t *testing.T) {
		r := startRawStdio(t, flags...)
		for _, tt := range issue32Ambiguous {
			r.send(t, tt.msg)
			m := r.next(t)
			checkRefusal(t, tt.name, m, tt.code, tt.says)
		}
		r.send(t, toolCall(30, "execute_python", "'still' + ' here'"))
		if m := r.expect(t, 30); !strings.Contains(fmt.Sprint(m), "still here") {
			t.Errorf("the call after the refusals: %v", m)
		}
	})
	t.Run("http", func(t *testing.T) {
		s := startHTTPServer(t, []string{"CAPSULE_AUTH_TOKEN=" + testToken}, flags...)
		for _, tt := range issue32Ambiguous {
			status, _, body := s.post(t, bearer(testToken), tt.msg)
			var m map[string]any
			_ = json.Unmarshal([]byte(body), &m)
			if status != http.StatusBadRequest {
				t.Errorf("%s: status %d, want 400", tt.name, status)
			}
			checkRefusal(t, tt.name, m, tt.code, tt.says)
		}
		if _, _, body := s.post(t, bearer(testToken), toolCall(30, "execute_python", "'still' + ' here'")); !strings.Contains(body, "still here") {
			t.Errorf("the call after the refusals: %s", body)
		}
	})
}

// modernMeta is the _meta a request of protocol 2026-07-28 carries.
func modernMeta(version string) string {
	return `"_meta":{"` + mcp.MetaKeyProtocolVersion + `":"` + version + `","` + mcp.MetaKeyClientCapabilities + `":{}}`
}

// pingAndSetLevel are a ping and a logging/setLevel at version, as a
// client of that version writes them: from 2026-07-28 on, each request
// carries the version in _meta.
func pingAndSetLevel(version string) (ping, setLevel string) {
	meta := ""
	if mcp.IsModernProtocol(version) {
		meta = modernMeta(version)
	}
	ping = `{"jsonrpc":"2.0","id":41,"method":"ping","params":{` + meta + `}}`
	sep := ""
	if meta != "" {
		sep = ","
	}
	setLevel = `{"jsonrpc":"2.0","id":42,"method":"logging/setLevel","params":{"level":"warning"` + sep + meta + `}}`
	return ping, setLevel
}

// TestPingAndSetLevelAtEveryVersion: ping and logging/setLevel are
// answered on both transports at every protocol version capsule accepts,
// which the README names.
func TestPingAndSetLevelAtEveryVersion(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range mcp.ValidProtocolVersions {
		if !strings.Contains(string(readme), "`"+v+"`") {
			t.Errorf("the README does not name protocol version %s", v)
		}
	}
	ok := func(t *testing.T, what string, m map[string]any) {
		t.Helper()
		if _, has := m["result"]; !has || m["error"] != nil {
			t.Errorf("%s: answered %v", what, m)
		}
	}
	flags := []string{"--pool-python", "0", "--pool-javascript", "0"}
	hs := startHTTPServer(t, []string{"CAPSULE_AUTH_TOKEN=" + testToken}, flags...)
	for _, v := range mcp.ValidProtocolVersions {
		ping, setLevel := pingAndSetLevel(v)
		t.Run("stdio/"+v, func(t *testing.T) {
			r := startRawStdioVersion(t, v, flags...)
			r.send(t, ping)
			ok(t, "ping", r.expect(t, 41))
			r.send(t, setLevel)
			ok(t, "logging/setLevel", r.expect(t, 42))
		})
		t.Run("http/"+v, func(t *testing.T) {
			headers := bearer(testToken)
			if !mcp.IsModernProtocol(v) {
				init := `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"` + v + `","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`
				if status, _, body := hs.post(t, headers, init); status != http.StatusOK {
					t.Fatalf("initialize at %s: %d %s", v, status, body)
				}
			}
			headers["Mcp-Protocol-Version"] = v
			for _, req := range []struct{ method, body string }{{"ping", ping}, {"logging/setLevel", setLevel}} {
				headers["Mcp-Method"] = req.method
				status, _, body := hs.post(t, headers, req.body)
				var m map[string]any
				_ = json.Unmarshal([]byte(body), &m)
				if status != http.StatusOK {
					t.Errorf("%s at %s: status %d %s", req.method, v, status, body)
				}
				ok(t, req.method, m)
			}
		})
	}
}
