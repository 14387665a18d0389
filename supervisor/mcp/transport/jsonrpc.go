package transport

import (
	"bytes"
	"encoding/json"
)

// JSON-RPC error codes the transports answer with themselves.
const (
	codeParseError     = -32700
	codeInvalidRequest = -32600
)

// ProtocolVersionHeader carries the negotiated MCP version on every HTTP
// request after initialize (from 2025-06-18 on; clients of 2025-03-26 may
// leave it out).
const ProtocolVersionHeader = "Mcp-Protocol-Version"

// lastBatchVersion is the last MCP version with JSON-RPC batches;
// 2025-06-18 removed them.
const lastBatchVersion = "2025-03-26"

// batchesAllowed reports whether a client that negotiated version may send
// batches. No version means 2025-03-26, as the Streamable HTTP transport
// says a server should assume when the header is missing. Versions are
// dates, so they compare as strings.
func batchesAllowed(version string) bool {
	return version == "" || version <= lastBatchVersion
}

// noBatches is the error a batch gets under a version without them.
func noBatches(version string) string {
	return "JSON-RPC batches are not part of MCP " + version + " (2025-06-18 removed them): send each message on its own"
}

// nullIDError is the error a request with "id": null gets: JSON-RPC 2.0
// discourages null ids and MCP forbids them, and a request is not a
// notification because its id is null.
const nullIDError = `the request's "id" is null, which MCP does not allow: use a string or a number, or leave "id" out for a notification`

// message is what the transports read of a JSON-RPC message.
type message struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		RequestID json.RawMessage `json:"requestId"`
	} `json:"params"`
	Result json.RawMessage `json:"result"`
}

// protocolVersion is the version an initialize response agreed on.
func (m *message) protocolVersion() string {
	var r struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	_ = json.Unmarshal(m.Result, &r)
	return r.ProtocolVersion
}

// hasNullID reports whether m is a request whose id is null.
func (m *message) hasNullID() bool { return m.Method != "" && string(m.ID) == "null" }

// isRequest reports whether m is a request: it has a method and an id.
func (m *message) isRequest() bool { return m.Method != "" && len(m.ID) > 0 && string(m.ID) != "null" }

// isResponse reports whether m is a response: an id without a method.
func (m *message) isResponse() bool { return m.Method == "" && len(m.ID) > 0 }

// isBatch reports whether a message is a JSON-RPC batch: an array.
func isBatch(b []byte) bool {
	b = bytes.TrimLeft(b, " \t\r\n")
	return len(b) > 0 && b[0] == '['
}

// idKey is an id in a form that compares equal however it was spaced.
func idKey(id json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, id) != nil {
		return string(id)
	}
	return b.String()
}

// errorResponse is a JSON-RPC error response for id (null when empty).
func errorResponse(id json.RawMessage, code int, msg string) []byte {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	b, _ := json.Marshal(rpcError{JSONRPC: "2.0", ID: id, Error: httpErrorBody{Code: code, Message: msg}})
	return b
}

// rpcError is a JSON-RPC error response.
type rpcError struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Error   httpErrorBody   `json:"error"`
}

// joinBatch writes responses as one batch response, an array.
func joinBatch(responses [][]byte) []byte {
	return append(append([]byte{'['}, bytes.Join(responses, []byte{','})...), ']')
}
