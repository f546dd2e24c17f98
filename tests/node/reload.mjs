// Hot reload seen by the official TypeScript SDK client. tests/reload_test.go
// runs it with the node 22 binary and edits the scripts on disk when asked:
//
//   node reload.mjs <base url>
//
// Each step prints {"step": "<edit>"} and waits for the Go side to answer
// "done" on stdin once the edit is made (and, for the broken edit and the
// removal, once the server has acted on it). Checks print {"ok": "<check>"};
// the last line is {"done": true}. A failed check exits 1.

import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { WAIT, ok, within, step } from './harness.mjs';

async function connect(url, onToolsChanged) {
  const client = new Client({ name: 'ts-sdk-reload', version: '1.0.0' }, { capabilities: {} });
  if (onToolsChanged) client.setNotificationHandler(ToolListChangedNotificationSchema, onToolsChanged);
  let opened;
  const getOpen = new Promise((resolve) => { opened = resolve; });
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    fetch: async (u, init = {}) => {
      const res = await fetch(u, init);
      if ((init.method ?? 'GET') === 'GET' && res.ok) opened();
      return res;
    },
    reconnectionOptions: { initialReconnectionDelay: 100, maxReconnectionDelay: 1000, reconnectionDelayGrowFactor: 1.5, maxRetries: 2 },
  });
  await within(client.connect(transport), 'connect');
  await within(getOpen, 'the GET channel');
  return { client, transport };
}

async function text(client, name, args = {}) {
  const res = await within(client.callTool({ name, arguments: args }, CallToolResultSchema), `tools/call ${name}`);
  assert.equal(res.isError ?? false, false, `${name} isError`);
  return res.content[0].text;
}

async function toolNames(client) {
  const { tools } = await within(client.listTools(), 'tools/list');
  return tools.map((t) => t.name).sort();
}

const base = process.argv[2];
try {
  let changed = 0;
  let wake;
  const { client } = await connect(`${base}/mcp/counter`, () => { changed++; wake?.(); });
  const gone = await connect(`${base}/mcp/gone`);
  const nextChange = (seen) => within(new Promise((resolve) => {
    wake = () => { if (changed > seen) resolve(); };
    wake();
  }), 'notifications/tools/list_changed');

  assert.deepEqual(await toolNames(client), ['get', 'increment']);
  for (let i = 0; i < 3; i++) await text(client, 'increment');
  assert.equal(await text(client, 'get'), 'count 3');
  ok('counted to 3');

  // A new version with one more tool: the client hears of it, the count stays.
  await step('add-tool');
  await nextChange(0);
  assert.deepEqual(await toolNames(client), ['double', 'get', 'increment']);
  ok('tools/list_changed, then the new tool is listed');
  assert.equal(await text(client, 'get'), 'count 3', 'the count after the reload');
  assert.equal(await text(client, 'double'), 'count 6');
  ok('the session state survived the reload');

  // A broken edit changes nothing.
  const before = changed;
  await step('break');
  assert.deepEqual(await toolNames(client), ['double', 'get', 'increment']);
  assert.equal(await text(client, 'increment'), 'count 7');
  assert.equal(changed, before, 'a broken edit announced a change');
  ok('a broken edit changed nothing');

  // An edit of a required module reloads the script that requires it.
  await step('module');
  const deadline = Date.now() + WAIT;
  let got;
  while ((got = await text(client, 'get')) !== 'total: 7') {
    assert.ok(Date.now() < deadline, `get still answers ${got} after the module edit`);
    await new Promise((r) => setTimeout(r, 20));
  }
  ok('a module edit reloaded its dependent, keeping the state');

  // A removed script: its route answers 404 and its session ended.
  assert.equal(await text(gone.client, 'ping'), 'pong');
  await step('remove');
  await assert.rejects(gone.client.callTool({ name: 'ping', arguments: {} }, CallToolResultSchema), 'a call to the removed script succeeded');
  const res = await fetch(`${base}/mcp/gone`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'x', version: '1' } } }),
  });
  assert.equal(res.status, 404, 'the removed route');
  ok('the removed route answers 404');

  await client.close();
  await gone.client.close().catch(() => {});
  console.log(JSON.stringify({ done: true }));
  process.exit(0);
} catch (err) {
  console.error(`reload: ${err?.stack ?? err}`);
  process.exit(1);
}
