// The 2026-07-28 era seen by the official TypeScript client v2
// (@modelcontextprotocol/client), pinned to 2026-07-28 or in auto mode, beside
// a 2025 client (@modelcontextprotocol/sdk) on the same URLs.
// tests/era_ts_test.go runs it with the node 22 binary:
//
//   node era.mjs <scenario> <url>
//
// Each scenario checks what it observes with node:assert. Every passed check
// prints one JSON line {"ok": "<check>"}; the last line is {"done": true}.
// Scenarios that need an edit on disk print {"step": "<edit>"} and wait for
// "done" on stdin. A failed check prints the assertion to stderr and exits 1.

import assert from 'node:assert/strict';
import { Client, ProtocolError, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as LegacyTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { WAIT, ok, within, step } from './harness.mjs';

const ERA = '2026-07-28';

// A fetch that records every HTTP exchange: its headers, request body and
// the answer's status and session header.
function recordingFetch() {
  const log = [];
  const fetchFn = async (url, init = {}) => {
    const headers = new Headers(init.headers);
    const entry = {
      method: init.method ?? 'GET',
      mcpMethod: headers.get('mcp-method'),
      mcpName: headers.get('mcp-name'),
      version: headers.get('mcp-protocol-version'),
      body: typeof init.body === 'string' ? init.body : '',
    };
    log.push(entry);
    const res = await fetch(url, init);
    entry.status = res.status;
    entry.session = res.headers.get('mcp-session-id');
    return res;
  };
  return { fetchFn, log };
}

function show(log) {
  return JSON.stringify(log.map((e) => ({ ...e, body: e.body.slice(0, 200) })), null, 1);
}

// connect opens a v2 client in mode ('auto' or { pin }) with handlers for the
// kinds of input request its capabilities declare (by default all three), and
// requires the 2026-07-28 era.
async function connect(url, mode, { capabilities = { elicitation: {}, sampling: {}, roots: {} } } = {}) {
  const client = new Client({ name: 'ts-v2-era-e2e', version: '1.0.0' }, { capabilities, versionNegotiation: { mode } });
  if (capabilities.elicitation) client.setRequestHandler('elicitation/create', async (req) => {
    switch (req.params.message) {
      case 'accept': return { action: 'accept', content: { name: 'Ada' } };
      case 'decline': return { action: 'decline' };
      case 'What is your name?': return { action: 'accept', content: { name: 'Ada' } };
      default: return { action: 'cancel' };
    }
  });
  if (capabilities.sampling) client.setRequestHandler('sampling/createMessage', async (req) => {
    assert.equal(req.params.maxTokens, 50);
    return { role: 'assistant', model: 'ts-model', content: { type: 'text', text: `echo: ${req.params.messages[0].content.text}` } };
  });
  if (capabilities.roots) client.setRequestHandler('roots/list', async () => ({ roots: [{ uri: 'file:///ts/root', name: 'root' }] }));
  const rec = recordingFetch();
  const transport = new StreamableHTTPClientTransport(new URL(url), { fetch: rec.fetchFn });
  await within(client.connect(transport), `connect (${JSON.stringify(mode)})`);
  assert.equal(client.getProtocolEra(), 'modern', `the client negotiated the ${client.getProtocolEra()} era, want modern; exchanges: ${show(rec.log)}`);
  assert.equal(client.getNegotiatedProtocolVersion(), ERA);
  assert.equal(transport.sessionId, undefined, 'a session id in the new era');
  return { client, transport, rec };
}

// checkWire: every POST carried the new era's headers, none was initialize,
// no answer minted a session.
function checkWire(log) {
  for (const e of log) {
    assert.equal(e.session, null, `the server minted a session: ${show([e])}`);
    if (e.method !== 'POST') continue;
    assert.equal(e.version, ERA, `a POST without the 2026-07-28 header: ${show([e])}`);
    assert.notEqual(e.mcpMethod, 'initialize');
    const body = JSON.parse(e.body);
    // (The client sends its notifications/cancelled without Mcp-Method: the
    // server must take it anyway.)
    if (body.id === undefined) continue;
    assert.equal(e.mcpMethod, body.method, 'Mcp-Method');
    assert.equal(body.params?._meta?.['io.modelcontextprotocol/protocolVersion'], ERA, `_meta protocolVersion in ${e.body}`);
  }
}

function text(result) {
  assert.equal(result.content.length, 1, `want one content block, got ${JSON.stringify(result.content)}`);
  assert.equal(result.content[0].type, 'text');
  return result.content[0].text;
}

async function tool(client, name, args = {}, options) {
  return within(client.callTool({ name, arguments: args }, options), `tools/call ${name}`);
}

async function wantText(client, name, args, want) {
  const res = await tool(client, name, args);
  assert.equal(text(res), want, `${name}`);
  assert.equal(res.isError ?? false, false, `${name} isError`);
}

// rejectsWith requires a ProtocolError with code (and message in its
// message) and returns it.
async function rejectsWith(promise, code, message) {
  let error;
  await assert.rejects(promise, (err) => {
    assert.ok(err instanceof ProtocolError, `want a ProtocolError, got ${err?.stack ?? err}`);
    assert.equal(err.code, code, `error ${err.code} ${err.message}`);
    if (message) assert.ok(err.message.includes(message), `error message ${JSON.stringify(err.message)} lacks ${JSON.stringify(message)}`);
    error = err;
    return true;
  });
  return error;
}

async function walk(list, field) {
  const all = [];
  let cursor;
  let pages = 0;
  do {
    const page = await within(list(cursor ? { cursor } : undefined), `page ${pages + 1}`);
    pages++;
    all.push(...page[field]);
    cursor = page.nextCursor;
    assert.ok(pages < 50, 'more than 50 pages');
  } while (cursor);
  return all;
}

// A 2025 client (@modelcontextprotocol/sdk 1.x) on the same URL.
async function legacy(url) {
  const client = new LegacyClient({ name: 'ts-2025-beside', version: '1.0.0' }, { capabilities: {} });
  const transport = new LegacyTransport(new URL(url));
  await within(client.connect(transport), 'the 2025 client connect');
  assert.equal(transport.protocolVersion, '2025-11-25');
  const call = async (name, args = {}) => text(await within(client.callTool({ name, arguments: args }, CallToolResultSchema), `2025 tools/call ${name}`));
  return { client, transport, call };
}

// core: what any new-era server with the fixture's add, count, elicit,
// sample and progress tools must do (also run on a go-sdk peer to prove this
// harness).
async function core(url, mode) {
  const { client, rec } = await connect(url, mode);
  assert.equal(rec.log.length, 1, `connect took ${rec.log.length} exchanges, want one server/discover: ${show(rec.log)}`);
  assert.equal(rec.log[0].mcpMethod, 'server/discover');
  assert.equal(rec.log[0].status, 200);
  const discover = client.getDiscoverResult();
  assert.ok(discover.supportedVersions.includes(ERA) && discover.supportedVersions.includes('2025-11-25'), `supportedVersions ${discover.supportedVersions}`);
  ok('connect: one server/discover', { mode, supportedVersions: discover.supportedVersions });

  await wantText(client, 'add', { a: 2, b: 3 }, '5');
  await wantText(client, 'count', {}, '1');
  await wantText(client, 'count', {}, '1');
  ok('tools/call, a fresh init per request');

  const before = rec.log.length;
  await wantText(client, 'elicit', { message: 'accept' }, 'action=accept name=Ada');
  const rounds = rec.log.slice(before).filter((e) => e.mcpMethod === 'tools/call');
  assert.equal(rounds.length, 2, `elicit took ${rounds.length} tools/call exchanges, want 2: ${show(rounds)}`);
  const retry = JSON.parse(rounds[1].body).params;
  assert.ok(retry.inputResponses && Object.keys(retry.inputResponses).length === 1 && typeof retry.requestState === 'string',
    `the retry carries no inputResponses and requestState: ${rounds[1].body}`);
  await wantText(client, 'elicit', { message: 'decline' }, 'action=decline name=-');
  await wantText(client, 'elicit', { message: 'cancel' }, 'action=cancel name=-');
  ok('elicitation through input_required');
  await wantText(client, 'sample', { prompt: 'hi' }, 'model=ts-model text=echo: hi');
  ok('sampling through input_required');

  const progress = [];
  const res = await tool(client, 'progress', {}, { onprogress: (p) => progress.push(p), timeout: WAIT });
  assert.equal(text(res), 'done');
  assert.deepEqual(progress.map((p) => [p.progress, p.total, p.message]), [[1, 2, 'step 1/2'], [2, 2, 'step 2/2']]);
  ok('progress');
  checkWire(rec.log);
  await client.close();
}

const scenarios = {
  'core-pinned': (url) => core(url, { pin: ERA }),
  'core-auto': (url) => core(url, 'auto'),

  // Every method the new era keeps, on the fixture, pinned.
  async every(url) {
    const { client, rec } = await connect(url, { pin: ERA });
    const caps = client.getServerCapabilities();
    for (const c of ['tools', 'resources', 'prompts', 'completions']) assert.ok(caps[c], `capability ${c}`);
    assert.equal(client.getServerVersion()?.name, 'luamcp-test-fixture');
    const tools = await walk((p) => client.listTools(p), 'tools');
    const names = tools.map((t) => t.name);
    assert.ok(names.includes('add') && names.includes('progress') && names.includes('elicit'), `tools ${names}`);
    assert.equal(tools.find((t) => t.name === 'echo').title, 'Echo');
    const boom = await tool(client, 'boom');
    assert.equal(boom.isError, true);
    assert.equal(text(boom), 'kaboom');
    await rejectsWith(tool(client, 'crash'), -32603, 'Internal error');
    await rejectsWith(tool(client, 'nope'), -32602, 'Unknown tool: nope');
    const echo = await tool(client, 'echo', { x: [1, 2] });
    assert.deepEqual(echo.structuredContent, { x: [1, 2] });
    await wantText(client, 'roots', {}, 'roots=file:///ts/root');
    ok('tools', { count: names.length });

    const resources = await walk((p) => client.listResources(p), 'resources');
    assert.deepEqual(resources.map((r) => r.uri), ['mem://greeting', 'mem://locked', 'mem://structured', 'mem://counter']);
    assert.equal((await within(client.readResource({ uri: 'mem://greeting' }), 'read')).contents[0].text, 'hello');
    assert.equal((await within(client.readResource({ uri: 'mem://user/9' }), 'read template')).contents[0].text, 'user 9');
    const notFound = await rejectsWith(client.readResource({ uri: 'mem://nope' }), -32602);
    // (The SDK turns -32602 with data.uri into its ResourceNotFoundError.)
    assert.equal(notFound.uri ?? notFound.data?.uri, 'mem://nope', `not found: ${notFound.constructor.name} ${JSON.stringify(notFound.data)}`);
    const templates = await within(client.listResourceTemplates(), 'templates');
    assert.deepEqual(templates.resourceTemplates.map((t) => t.uriTemplate), ['mem://user/{id}']);
    ok('resources');

    const prompts = await walk((p) => client.listPrompts(p), 'prompts');
    assert.deepEqual(prompts.map((p) => p.name), ['greet', 'deny', 'count']);
    const greet = await within(client.getPrompt({ name: 'greet', arguments: { who: 'Ada' } }), 'getPrompt');
    assert.deepEqual(greet.messages, [{ role: 'user', content: { type: 'text', text: 'Hello, Ada' } }]);
    await rejectsWith(client.getPrompt({ name: 'deny' }), -32602, 'denied');
    const completion = await within(client.complete({ ref: { type: 'ref/prompt', name: 'greet' }, argument: { name: 'who', value: 'Ad' } }), 'complete');
    assert.deepEqual(completion.completion.values, ['Ada', 'Adam']);
    ok('prompts and completion');
    checkWire(rec.log);
    await client.close();
  },

  // The tutorials of scripts/ (url is the server's base): each request on a
  // fresh init, live.lua's question through input_required.
  async tutorials(base) {
    for (const [script, steps] of [
      ['hello', [['add', { a: 2, b: 3 }, '5']]],
      ['counter', [['increment', {}, '1'], ['increment', {}, '1'], ['get', {}, '0']]],
      ['notes', [['add_note', { title: 'Groceries', text: 'milk' }, '1']]],
      ['live', [['ask_name', {}, 'Nice to meet you, Ada!']]],
    ]) {
      for (const mode of [{ pin: ERA }, 'auto']) {
        const { client, rec } = await connect(`${base}/mcp/${script}`, mode, { capabilities: { elicitation: {} } });
        const { tools } = await within(client.listTools(), 'tools/list');
        assert.ok(tools.length > 0, `${script}: no tools`);
        for (const [name, args, want] of steps) await wantText(client, name, args, want);
        checkWire(rec.log);
        await client.close();
      }
      ok(`${script} in the new era`);
    }
  },

  // A listen stream hears a 2025 session's broadcast on the same URL, each
  // message tagged with the listen's subscription id.
  async 'listen-broadcast'(url) {
    const { client, rec } = await connect(url, { pin: ERA });
    const changed = [];
    let wake;
    client.setNotificationHandler('notifications/tools/list_changed', (n) => { changed.push(n); wake?.(); });
    const sub = await within(client.listen({ toolsListChanged: true }), 'subscriptions/listen');
    assert.equal(sub.honoredFilter.toolsListChanged, true, `honored filter ${JSON.stringify(sub.honoredFilter)}`);
    ok('listen acknowledged', { honoredFilter: sub.honoredFilter });
    const old = await legacy(url);
    assert.equal(await old.call('broadcast'), 'broadcast');
    await within(new Promise((resolve) => { wake = resolve; if (changed.length) resolve(); }), 'tools/list_changed on the listen stream');
    assert.ok(changed[0].params?._meta?.['io.modelcontextprotocol/subscriptionId'] !== undefined,
      `list_changed without _meta subscriptionId: ${JSON.stringify(changed[0])}`);
    ok('list_changed from a 2025 session reached the listen stream');
    await sub.close();
    assert.equal(await within(sub.closed, 'the listen stream to close'), 'local');
    checkWire(rec.log);
    await old.client.close();
    await client.close();
  },

  // Hot reload: the Go side edits the script; the listen stream hears
  // list_changed and the next tools/list has the new tool, while a 2025
  // session on the same URL keeps its count across the reload.
  async 'listen-reload'(url) {
    const { client, rec } = await connect(url, { pin: ERA }, { capabilities: {} });
    let changed = 0;
    let wake;
    client.setNotificationHandler('notifications/tools/list_changed', () => { changed++; wake?.(); });
    const sub = await within(client.listen({ toolsListChanged: true }), 'subscriptions/listen');
    assert.equal(sub.honoredFilter.toolsListChanged, true, `honored filter ${JSON.stringify(sub.honoredFilter)}`);
    const old = await legacy(url);
    assert.equal(await old.call('increment'), 'count 1');
    assert.equal(await old.call('increment'), 'count 2');
    const names = async () => (await within(client.listTools(), 'tools/list')).tools.map((t) => t.name).sort();
    assert.deepEqual(await names(), ['get', 'increment']);
    ok('before the edit');
    await step('add-tool');
    await within(new Promise((resolve) => { wake = resolve; if (changed) resolve(); }), 'tools/list_changed on the listen stream');
    assert.deepEqual(await names(), ['double', 'get', 'increment']);
    ok('listen heard the reload; the new tool is listed');
    assert.equal(await old.call('get'), 'count 2', 'the 2025 session after the reload');
    ok('the 2025 session kept its state');
    await sub.close();
    checkWire(rec.log);
    await old.client.close();
    await client.close();
  },
};

const [scenario, url] = process.argv.slice(2);
if (!scenarios[scenario] || !url) {
  console.error(`usage: node era.mjs <${Object.keys(scenarios).join('|')}> <url>`);
  process.exit(2);
}
try {
  await scenarios[scenario](url);
  console.log(JSON.stringify({ done: true }));
  process.exit(0);
} catch (err) {
  console.error(`${scenario}: ${err?.stack ?? err}`);
  process.exit(1);
}
