// An MCP host written with the TypeScript SDK, for the end-to-end tests:
// it connects to capsule over stdio or Streamable HTTP, runs the steps it
// is given and prints what it saw as one JSON object.
//
//   node client.mjs '{"transport": "stdio", "command": "...", "args": [...],
//                     "steps": [{"op": "call", "name": "...", "arguments": {...}}]}'
//
// Steps: info (server info, capabilities, instructions), list (tools),
// call, cancel (a call aborted after after_ms), setLevel, wait (ms).
// Every error the SDK reports through onerror is collected in "errors",
// every notifications/message in "logs".
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { LoggingMessageNotificationSchema } from "@modelcontextprotocol/sdk/types.js";

const spec = JSON.parse(process.argv[2]);
const out = { steps: [], errors: [], logs: [] };

const client = new Client({ name: "capsule-ts-e2e", version: "1" }, { capabilities: {} });
client.onerror = (e) => out.errors.push(String(e && e.message ? e.message : e));
client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => { out.logs.push(n.params); });

const transport = spec.transport === "http"
  ? new StreamableHTTPClientTransport(new URL(spec.url), { requestInit: { headers: spec.headers || {} } })
  : new StdioClientTransport({ command: spec.command, args: spec.args || [], env: { ...process.env, ...(spec.env || {}) }, stderr: "ignore" });

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function step(s) {
  switch (s.op) {
    case "info":
      return { server: client.getServerVersion(), capabilities: client.getServerCapabilities(), instructions: client.getInstructions() };
    case "list":
      return (await client.listTools()).tools;
    case "call":
      return await client.callTool({ name: s.name, arguments: s.arguments }, undefined, { timeout: 120000 });
    case "cancel": {
      const ac = new AbortController();
      const p = client.callTool({ name: s.name, arguments: s.arguments }, undefined, { signal: ac.signal, timeout: 120000 });
      setTimeout(() => ac.abort("cancelled by the test"), s.after_ms);
      try { await p; return { aborted: false }; } catch (e) { await sleep(s.settle_ms || 1000); return { aborted: true, message: String(e.message || e) }; }
    }
    case "setLevel":
      return await client.setLoggingLevel(s.level);
    case "wait":
      await sleep(s.ms);
      return {};
    default:
      throw new Error("unknown step " + s.op);
  }
}

try {
  await client.connect(transport);
  for (const s of spec.steps) {
    try {
      out.steps.push({ ok: await step(s) });
    } catch (e) {
      out.steps.push({ error: String(e && e.message ? e.message : e) });
    }
  }
} catch (e) {
  out.connectError = String(e && e.message ? e.message : e);
}
await client.close().catch(() => {});
// Exit once the output is written: stdout is a pipe, written
// asynchronously, and an answer of megabytes would be cut short.
process.stdout.write(JSON.stringify(out) + "\n", () => process.exit(0));
