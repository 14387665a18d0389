// An MCP client as hosts run one: the TypeScript SDK's stdio client spawns
// the server command, initializes, lists the tools and calls both. It
// prints one JSON line: what the server answered and how long each step
// took from the spawn (ms). npm_e2e_test.go and image_e2e_test.go check it.
//
// usage: node client.mjs '{"command": "npx", "args": [...], "cwd": "...", "env": {...}}'
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

const server = JSON.parse(process.argv[2]);
const started = performance.now();
const since = () => Math.round((performance.now() - started) * 10) / 10;
const transport = new StdioClientTransport({ ...server, stderr: 'inherit' });
const client = new Client({ name: 'capsule-packaging-test', version: '1.0.0' });
// The first start compiles the runtimes: on a busy machine that can take
// longer than the SDK's default of a minute per request.
const options = { timeout: 300_000 };
const report = { ms: {} };
try {
  await client.connect(transport, options);
  report.ms.initialize = since();
  report.server = client.getServerVersion();
  report.tools = (await client.listTools(undefined, options)).tools.map((t) => t.name).sort();
  const calls = {
    python: ['execute_python', 'import sys\nprint("hello from", sys.implementation.name)\nsum(range(10))'],
    javascript: ['execute_javascript', 'console.log("hello from", typeof process); 6 * 7'],
  };
  report.calls = {};
  for (const [lang, [tool, code]] of Object.entries(calls)) {
    const answer = await client.callTool({ name: tool, arguments: { code } }, undefined, options);
    report.ms[lang] = since();
    report.calls[lang] = { isError: answer.isError ?? false, structured: answer.structuredContent };
  }
} catch (err) {
  report.error = String(err?.stack ?? err);
} finally {
  await client.close();
}
process.stdout.write(JSON.stringify(report) + '\n');
