// Drive `octos-tools serve` with the official TypeScript SDK client
// (@modelcontextprotocol/sdk), as a stock MCP host would. Run by tests/mcp/test_interop.py.
//
//   node ts_client.cjs stdio <scenario-json-file> <command> [args...]
//   MCP_TOKEN=<bearer token> node ts_client.cjs http  <scenario-json-file> <url>
//
// The scenario file is {"calls": [{"name", "arguments"}...], "activate": [...]}.
// Prints one JSON object on stdout: {"tools": [...], "results": [...], "listChanged": n,
// "afterList": [...]}. Each result is the raw CallToolResult (or {"protocolError": msg}).
"use strict";

const fs = require("fs");
const { Client } = require("@modelcontextprotocol/sdk/client/index.js");
const { StdioClientTransport } = require("@modelcontextprotocol/sdk/client/stdio.js");
const {
  StreamableHTTPClientTransport,
} = require("@modelcontextprotocol/sdk/client/streamableHttp.js");
const { ToolListChangedNotificationSchema } = require("@modelcontextprotocol/sdk/types.js");

async function main() {
  const [mode, scenarioFile, ...target] = process.argv.slice(2);
  const scenario = JSON.parse(fs.readFileSync(scenarioFile, "utf8"));
  const client = new Client({ name: "octos-interop", version: "1.0.0" }, { capabilities: {} });
  let listChanged = 0;
  client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
    listChanged += 1;
  });
  let transport;
  if (mode === "stdio") {
    transport = new StdioClientTransport({
      command: target[0],
      args: target.slice(1),
      stderr: "pipe",
    });
  } else {
    // serve's bearer token (MCP_TOKEN, read by the test from the file serve names on stderr)
    const token = process.env.MCP_TOKEN;
    const requestInit = token ? { headers: { Authorization: `Bearer ${token}` } } : undefined;
    transport = new StreamableHTTPClientTransport(new URL(target[0]), { requestInit });
  }
  await client.connect(transport);
  const listed = await client.listTools();
  const results = [];
  for (const call of scenario.calls || []) {
    try {
      results.push(await client.callTool({ name: call.name, arguments: call.arguments }));
    } catch (err) {
      results.push({ protocolError: String(err && err.message ? err.message : err) });
    }
  }
  // Give a list_changed notification sent after the last answer time to arrive.
  await new Promise((resolve) => setTimeout(resolve, 300));
  const after = await client.listTools();
  process.stdout.write(
    JSON.stringify({
      tools: listed.tools.map((t) => t.name),
      results,
      listChanged,
      afterList: after.tools.map((t) => t.name),
    }) + "\n",
  );
  await client.close();
}

main().catch((err) => {
  process.stderr.write(`ts_client failed: ${err && err.stack ? err.stack : err}\n`);
  process.exit(1);
});
