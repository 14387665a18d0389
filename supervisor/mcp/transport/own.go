package transport

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
)

// Methods the transports answer themselves where mcp-go would not.
const (
	methodPing     = "ping"
	methodSetLevel = "logging/setLevel"
)

// codeInvalidParams is JSON-RPC's invalid params.
const codeInvalidParams = -32602

// logLevels are the levels logging/setLevel takes (RFC 5424's, as MCP
// names them).
var logLevels = []string{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}

// ownAnswer answers the requests that capsule serves at every protocol
// version it accepts but mcp-go does not: ping and logging/setLevel when
// the request declares 2026-07-28 or later (mcp-go answers "removed in
// protocol version 2026-07-28"; HTTP then says 404), and logging/setLevel
// over HTTP at any version (mcp-go answers -32601, since the HTTP server
// offers no logging: its log is the operator's, and the stateless
// transport has no session to keep a level on, so the level is accepted
// and changes nothing). It returns nil for every other message, which
// goes on as before, and reports whether the answer is an error.
// headerVersion is the Mcp-Protocol-Version header, over HTTP.
//
// msg has passed toolcall.Split's checks, so decoding it case-insensitively
// reads what every reader reads.
func ownAnswer(msg []byte, overHTTP bool, headerVersion string) (answer []byte, failed bool) {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			Level *string        `json:"level"`
			Meta  map[string]any `json:"_meta"`
		} `json:"params"`
	}
	if json.Unmarshal(msg, &m) != nil || len(m.ID) == 0 || string(m.ID) == "null" {
		return nil, false
	}
	version, _ := m.Params.Meta[mcp.MetaKeyProtocolVersion].(string)
	if version == "" && overHTTP {
		version = headerVersion
	}
	modern := mcp.IsModernProtocol(version)
	if modern && !mcp.IsValidProtocolVersion(version) {
		return nil, false // mcp-go says which versions it serves
	}
	switch {
	case m.Method == methodPing && modern:
	case m.Method == methodSetLevel && (modern || overHTTP):
		if m.Params.Level == nil || !slices.Contains(logLevels, *m.Params.Level) {
			got := "none"
			if m.Params.Level != nil {
				got = fmt.Sprintf("%q", *m.Params.Level)
			}
			return errorResponse(m.ID, codeInvalidParams, fmt.Sprintf(
				"logging/setLevel: params.level must be one of %s; got %s", strings.Join(logLevels, ", "), got)), true
		}
	default:
		return nil, false
	}
	result := map[string]any{}
	if modern {
		// Every result of 2026-07-28 says that it is complete.
		result["resultType"] = "complete"
	}
	b, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Result  map[string]any  `json:"result"`
	}{"2.0", m.ID, result})
	return b, false
}
