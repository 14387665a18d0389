// Package transport serves capsule's MCP server to clients: on stdio
// (StdioGuard, in front of mcp-go's stdio server) or over Streamable HTTP
// (NewHTTPServer, with the checks an exposed server needs: Origin, bearer
// token, per-client concurrency, body size, and cancellation kept to the
// client that sent it).
//
// It knows the supervisor only through what it is handed: the
// *server.MCPServer that holds the tools, a function that says whether the
// server is ready for calls, and the supervisor's Config for the defaults
// that derive from the limits.
package transport
