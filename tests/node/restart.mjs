// A server restart seen by the official TypeScript SDK client (v1).
// tests/restart_test.go runs it against `luamcp serve --sessions-file`:
//
//   node restart.mjs <session url>
//
// It counts on its session, prints {"step": "restart"} and waits for the Go
// side to answer "done" once the server was stopped (SIGTERM) and started
// again on the same address. Then the same client, never initialized again,
// counts on, and its GET channel, which the SDK reopened with
// Last-Event-ID, carries the server's pushes again. Checks print
// {"ok": "<check>"}; the last line is {"done": true}. A failed check exits 1.

import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { WAIT, ok, within, step } from './harness.mjs';

async function text(client, name, args = {}) {
  const res = await within(client.callTool({ name, arguments: args }, CallToolResultSchema), `tools/call ${name}`);
  assert.equal(res.isError ?? false, false, `${name} isError`);
  return res.content[0].text;
}

const url = process.argv[2];
try {
  // GETs the SDK makes, and the pokes the channel brings.
  const gets = [];
  const pokes = [];
  let poked;
  const client = new Client({ name: 'ts-sdk-restart', version: '1.0.0' }, { capabilities: {} });
  // The fixture's pokes are no method the SDK knows: they reach its
  // fallback handler.
  client.fallbackNotificationHandler = async (n) => {
    if (n.method === 'notifications/test/poke') { pokes.push(n.params.n); poked?.(); }
  };
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    fetch: async (u, init = {}) => {
      const res = await fetch(u, init);
      if ((init.method ?? 'GET') === 'GET') gets.push({ status: res.status, lastEventId: new Headers(init.headers).get('last-event-id') });
      return res;
    },
    // Patient enough for a process to start: the channel comes back.
    reconnectionOptions: { initialReconnectionDelay: 100, maxReconnectionDelay: 500, reconnectionDelayGrowFactor: 1.5, maxRetries: 40 },
  });
  transport.onerror = () => {}; // a GET refused while the server is down
  await within(client.connect(transport), 'connect');
  const sessionId = transport.sessionId;
  const nextPoke = (n) => within(new Promise((resolve) => {
    poked = () => { if (pokes.includes(n)) resolve(); };
    poked();
  }), `poke ${n} on the GET channel`);

  for (let i = 1; i <= 3; i++) assert.equal(await text(client, 'count'), String(i));
  assert.equal(await text(client, 'notify', { n: 1 }), 'notified');
  await nextPoke(1);
  ok('counted to 3 and got a push on the GET channel');

  await step('restart', 4 * WAIT); // a process stops and starts
  assert.equal(await text(client, 'count'), '4', 'the count after the restart');
  assert.equal(transport.sessionId, sessionId, 'the session id changed');
  ok('the session and its state survived the restart');
  assert.equal(await text(client, 'notify', { n: 2 }), 'notified');
  await nextPoke(2);
  assert.ok(gets.some((g) => g.status === 200 && g.lastEventId), `the SDK never reopened its channel with Last-Event-ID: ${JSON.stringify(gets)}`);
  ok('the GET channel came back with Last-Event-ID and carries pushes');
  await client.close();
  console.log(JSON.stringify({ done: true }));
  process.exit(0); // stdin stays open
} catch (err) {
  console.error(`restart: ${err?.stack ?? err}`);
  process.exit(1);
}
