// Drives capsule through the MCP TypeScript SDK's client, as an MCP host
// would, for the end-to-end tests (tsclient_e2e_test.go).
//
//   node client.mjs stdio CAPSULE [ARG...]   starts CAPSULE ARG... and speaks stdio
//   node client.mjs http URL                  speaks Streamable HTTP to URL
//
// It reads a JSON array of tool calls, [{"name": ..., "arguments": ...}],
// on stdin, makes them one after the other, and prints a JSON array of the
// results (or {"error": message} for a call the client itself failed) on
// stdout. The SDK's client checks each result's structuredContent against
// the tool's outputSchema.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const [mode, target, ...args] = process.argv.slice(2);
const transport = mode === 'stdio'
  ? new StdioClientTransport({ command: target, args, stderr: 'inherit' })
  : new StreamableHTTPClientTransport(new URL(target));

let input = '';
for await (const chunk of process.stdin) input += chunk;
const calls = JSON.parse(input);

const client = new Client({ name: 'capsule-e2e-tsclient', version: '1' });
await client.connect(transport);
await client.listTools(); // the SDK learns the output schemas it validates against
const results = [];
for (const call of calls) {
  try {
    results.push(await client.callTool(call, undefined, { timeout: 90000 }));
  } catch (e) {
    results.push({ error: String(e && e.message || e) });
  }
}
await client.close();
process.stdout.write(JSON.stringify(results));
