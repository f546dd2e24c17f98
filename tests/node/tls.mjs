// The official TypeScript SDK client (@modelcontextprotocol/sdk) over HTTPS
// with HTTP/2. tests/tls_test.go runs it against a server whose certificate
// a test CA signed:
//
//   node tls.mjs h2 <url> <ca.pem>
//
// Node's global fetch speaks HTTP/1.1 only, so the transport is given a fetch
// built on node:http2, which trusts the CA and reports what ALPN chose. As in
// client.mjs, every passed check prints {"ok": "<check>"}; the last line is
// {"done": true}; a failed check exits 1.

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import http2 from 'node:http2';
import { Readable } from 'node:stream';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, LoggingMessageNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { WAIT, ok, within } from './harness.mjs';

// h2Fetch is a fetch over node:http2: one session per origin, trusting ca.
// Response bodies stream as they arrive (event streams included); aborting
// the request's signal cancels its stream.
function h2Fetch(ca) {
  const sessions = new Map();
  function session(origin) {
    let s = sessions.get(origin);
    if (!s || s.closed || s.destroyed) {
      s = http2.connect(origin, { ca });
      s.on('error', () => {}); // each request sees its stream's error
      sessions.set(origin, s);
    }
    return s;
  }
  async function fetchFn(input, init = {}) {
    const url = new URL(String(input));
    const method = init.method ?? 'GET';
    const headers = { ':method': method, ':path': url.pathname + url.search };
    new Headers(init.headers).forEach((v, k) => { headers[k] = v; });
    const hasBody = init.body !== undefined && init.body !== null;
    const stream = session(url.origin).request(headers, { endStream: !hasBody });
    stream.on('error', () => {}); // surfaced through the promise below or the body stream
    if (hasBody) stream.end(typeof init.body === 'string' ? init.body : Buffer.from(init.body));
    const signal = init.signal;
    const head = await new Promise((resolve, reject) => {
      stream.once('response', resolve);
      stream.once('error', reject);
      signal?.addEventListener('abort', () => {
        stream.close(http2.constants.NGHTTP2_CANCEL);
        reject(signal.reason ?? new Error('aborted'));
      }, { once: true });
    });
    const status = head[':status'];
    const resHeaders = new Headers();
    for (const [k, v] of Object.entries(head)) {
      if (!k.startsWith(':')) for (const x of [].concat(v)) resHeaders.append(k, String(x));
    }
    let body = null;
    if ([204, 205, 304].includes(status) || method === 'HEAD') stream.resume();
    else body = Readable.toWeb(stream);
    return new Response(body, { status, headers: resHeaders });
  }
  // alpn lists the protocol each session negotiated.
  const alpn = () => [...sessions.values()].map((s) => s.alpnProtocol);
  const close = () => { for (const s of sessions.values()) s.close(); };
  return { fetchFn, alpn, close };
}

function text(result) {
  assert.equal(result.content.length, 1, `want one content block, got ${JSON.stringify(result.content)}`);
  return result.content[0].text;
}

const scenarios = {
  // A session over HTTP/2: tools, progress over SSE, a log on the GET channel, DELETE.
  async h2(url, caFile) {
    const h2 = h2Fetch(readFileSync(caFile));
    let opened;
    const getOpen = new Promise((resolve) => { opened = resolve; });
    const fetchFn = async (u, init = {}) => {
      const res = await h2.fetchFn(u, init);
      if ((init.method ?? 'GET') === 'GET' && res.ok) opened();
      return res;
    };
    const client = new Client({ name: 'ts-sdk-tls', version: '1.0.0' }, { capabilities: {} });
    const logs = [];
    let logged;
    const gotLog = new Promise((resolve) => { logged = resolve; });
    client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => { logs.push(n.params); logged(); });
    const transport = new StreamableHTTPClientTransport(new URL(url), { fetch: fetchFn });
    await within(client.connect(transport), 'connect');
    assert.ok(transport.sessionId, 'no session id');
    ok('connect');

    const add = await within(client.callTool({ name: 'add', arguments: { a: 2, b: 3 } }, CallToolResultSchema), 'add');
    assert.equal(text(add), '5');
    const progress = [];
    const res = await within(client.callTool({ name: 'progress', arguments: {} }, CallToolResultSchema,
      { onprogress: (p) => progress.push(p.message), timeout: WAIT }), 'progress');
    assert.equal(text(res), 'done');
    assert.deepEqual(progress, ['step 1/2', 'step 2/2']);
    ok('progress over SSE');

    // Pushes reach a GET channel once it is open (a fresh GET replays nothing).
    await within(getOpen, 'the GET channel');
    const log = await within(client.callTool({ name: 'log', arguments: { level: 'warning' } }, CallToolResultSchema), 'log');
    assert.equal(text(log), 'logged');
    await within(gotLog, 'the log on the GET channel');
    assert.deepEqual(logs, [{ level: 'warning', data: 'log at warning' }]);
    ok('GET channel');

    await within(transport.terminateSession(), 'DELETE');
    await client.close();
    const alpn = h2.alpn();
    assert.ok(alpn.length > 0 && alpn.every((p) => p === 'h2'), `ALPN chose ${JSON.stringify(alpn)}`);
    ok('alpn', { protocol: 'h2' });
    h2.close();
  },
};

const [scenario, url, caFile] = process.argv.slice(2);
if (!scenarios[scenario] || !url || !caFile) {
  console.error(`usage: node tls.mjs <${Object.keys(scenarios).join('|')}> <url> <ca.pem>`);
  process.exit(2);
}
try {
  await scenarios[scenario](url, caFile);
  console.log(JSON.stringify({ done: true }));
  process.exit(0);
} catch (err) {
  console.error(`${scenario}: ${err?.stack ?? err}`);
  process.exit(1);
}
