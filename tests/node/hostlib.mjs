// The host library end to end with the official TypeScript SDK client
// (tests/hostlib_test.go runs it):
//
//   node hostlib.mjs <server base URL> <cases.json>
//
// It calls each case's tool on /mcp/<route> and checks the text and the error
// flag, then cancels a call that waits on a slow API and checks that the
// server serves on. Every passed check prints {"ok": "<check>"}; the
// cancellation prints the time it cancelled at; the last line is {"done": true}.

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';

const WAIT = 10_000;

const [base, file] = process.argv.slice(2);
const cases = JSON.parse(readFileSync(file, 'utf8'));
const clients = new Map();

async function client(route) {
  if (!clients.has(route)) {
    const c = new Client({ name: 'ts-sdk-hostlib', version: '1.0.0' });
    await c.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp/${route}`)));
    clients.set(route, c);
  }
  return clients.get(route);
}

function text(res) {
  assert.equal(res.content.length, 1, `want one block, got ${JSON.stringify(res.content)}`);
  return res.content[0].text;
}

try {
  for (const c of cases) {
    const res = await (await client(c.route)).callTool({ name: c.tool, arguments: c.args }, CallToolResultSchema, { timeout: WAIT });
    const got = text(res);
    if (c.contains) assert.ok(got.includes(c.want), `${c.name}: ${JSON.stringify(got)} lacks ${JSON.stringify(c.want)}`);
    else assert.equal(got, c.want, c.name);
    assert.equal(res.isError ?? false, c.isError, `${c.name}: isError`);
    console.log(JSON.stringify({ ok: c.name }));
  }

  // A client cancel stops the call's HTTP request.
  const world = await client('world');
  const abort = new AbortController();
  const call = world.callTool({ name: 'http_get', arguments: { path: '/slow' } }, CallToolResultSchema, { signal: abort.signal, timeout: WAIT });
  await new Promise((resolve) => setTimeout(resolve, 300));
  console.log(JSON.stringify({ ok: 'cancelled', at: Date.now() }));
  abort.abort();
  await assert.rejects(call);
  const after = await world.callTool({ name: 'env_get', arguments: { name: 'LUAMCP_E2E_VALUE' } }, CallToolResultSchema, { timeout: WAIT });
  assert.equal(text(after), 'from the environment');
  console.log(JSON.stringify({ ok: 'serves on after the cancel' }));

  for (const c of clients.values()) await c.close();
  console.log(JSON.stringify({ done: true }));
  process.exit(0);
} catch (err) {
  console.error(`hostlib: ${err?.stack ?? err}`);
  process.exit(1);
}
