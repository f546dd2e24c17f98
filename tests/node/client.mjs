// The official TypeScript clients against the luamcp test fixture.
// tests/sdk_ts_test.go runs it with the node 22 binary:
//
//   node client.mjs <scenario> <url>
//
// By default the client is the SDK v1 (@modelcontextprotocol/sdk); with
// MCP_CLIENT=v2 it is the v2 client (@modelcontextprotocol/client) in its
// default mode, which speaks the 2025-11-25 era with sessions. The two name
// handlers differently (v1 by schema, v2 by method), take callTool's
// arguments differently, and v2's list methods follow every cursor
// themselves: the rest of each scenario is the same for both.
//
// Each scenario checks what it observes with node:assert. Every passed check
// prints one JSON line {"ok": "<check>"}; the last line is {"done": true}.
// A failed check prints the assertion to stderr and exits 1.

import assert from 'node:assert/strict';
import { WAIT, ok, within } from './harness.mjs';

const v2 = process.env.MCP_CLIENT === 'v2';
let Client, StreamableHTTPClientTransport, McpError, CallToolResultSchema, CreateMessageRequestSchema,
  ElicitRequestSchema, ListRootsRequestSchema, LoggingMessageNotificationSchema,
  ResourceUpdatedNotificationSchema, TaskStatusNotificationSchema, ToolListChangedNotificationSchema;
if (v2) {
  ({ Client, StreamableHTTPClientTransport, ProtocolError: McpError } = await import('@modelcontextprotocol/client'));
  CreateMessageRequestSchema = 'sampling/createMessage';
  ElicitRequestSchema = 'elicitation/create';
  ListRootsRequestSchema = 'roots/list';
  LoggingMessageNotificationSchema = 'notifications/message';
  ResourceUpdatedNotificationSchema = 'notifications/resources/updated';
  TaskStatusNotificationSchema = 'notifications/tasks/status';
  ToolListChangedNotificationSchema = 'notifications/tools/list_changed';
} else {
  ({ Client } = await import('@modelcontextprotocol/sdk/client/index.js'));
  ({ StreamableHTTPClientTransport } = await import('@modelcontextprotocol/sdk/client/streamableHttp.js'));
  ({
    CallToolResultSchema, CreateMessageRequestSchema, ElicitRequestSchema, ListRootsRequestSchema,
    LoggingMessageNotificationSchema, McpError, ResourceUpdatedNotificationSchema,
    TaskStatusNotificationSchema, ToolListChangedNotificationSchema,
  } = await import('@modelcontextprotocol/sdk/types.js'));
}

// A fetch that records every HTTP exchange and resolves getOpen when the
// standalone GET channel is answered 200 (pushes sent before it attaches are
// not replayed to a fresh GET).
function recordingFetch() {
  const log = [];
  let opened;
  const getOpen = new Promise((resolve) => { opened = resolve; });
  const fetchFn = async (url, init = {}) => {
    const res = await fetch(url, init);
    const headers = new Headers(init.headers);
    log.push({ method: init.method ?? 'GET', status: res.status, lastEventId: headers.get('last-event-id') });
    if ((init.method ?? 'GET') === 'GET' && res.ok) opened();
    return res;
  };
  return { fetchFn, log, getOpen };
}

async function connect(url, { capabilities = {}, setup } = {}) {
  const client = new Client({ name: 'ts-sdk-e2e', version: '1.0.0' }, { capabilities });
  setup?.(client);
  const rec = recordingFetch();
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    fetch: rec.fetchFn,
    reconnectionOptions: { initialReconnectionDelay: 100, maxReconnectionDelay: 1000, reconnectionDelayGrowFactor: 1.5, maxRetries: 3 },
  });
  await within(client.connect(transport), 'connect');
  return { client, transport, rec };
}

function text(result) {
  assert.equal(result.content.length, 1, `want one content block, got ${JSON.stringify(result.content)}`);
  assert.equal(result.content[0].type, 'text');
  return result.content[0].text;
}

async function tool(client, name, args = {}, options) {
  const params = { name, arguments: args };
  return within(v2 ? client.callTool(params, options) : client.callTool(params, CallToolResultSchema, options), `tools/call ${name}`);
}

async function wantText(client, name, args, want) {
  const res = await tool(client, name, args);
  assert.equal(text(res), want, `${name}`);
  assert.equal(res.isError ?? false, false, `${name} isError`);
}

async function rejectsWith(promise, code, message) {
  await assert.rejects(promise, (err) => {
    assert.ok(err instanceof McpError, `want an McpError, got ${err}`);
    assert.equal(err.code, code);
    if (message) assert.ok(err.message.includes(message), `error message ${JSON.stringify(err.message)} lacks ${JSON.stringify(message)}`);
    return true;
  });
}

// walk lists every page of a paginated method (v2 walks them itself, and
// returns them as one).
async function walk(list, field) {
  const all = [];
  let cursor;
  let pages = 0;
  do {
    const page = await within(list(cursor ? { cursor } : undefined), `page ${pages + 1}`);
    pages++;
    assert.ok(v2 || page[field].length <= 2, `a page of ${page[field].length} at page size 2`);
    all.push(...page[field]);
    cursor = page.nextCursor;
    assert.ok(pages < 50, 'more than 50 pages');
  } while (cursor);
  return { all, pages };
}

// A queue of notifications one handler receives, read in order.
function inbox() {
  const items = [];
  const waiters = [];
  return {
    push(item) {
      const w = waiters.shift();
      if (w) w(item); else items.push(item);
    },
    next(what) {
      if (items.length) return Promise.resolve(items.shift());
      return within(new Promise((resolve) => waiters.push(resolve)), what);
    },
    get length() { return items.length; },
  };
}

const scenarios = {
  // Session mode, page size 2: every method, pagination, progress, snapshot.
  async basics(url) {
    const { client, transport } = await connect(url);
    assert.ok(transport.sessionId, 'no session id');
    const caps = client.getServerCapabilities();
    for (const c of ['tools', 'resources', 'prompts', 'logging', 'completions']) assert.ok(caps[c], `capability ${c}`);
    assert.equal(caps.resources.subscribe, true);
    assert.deepEqual(client.getServerVersion(), { name: 'luamcp-test-fixture', version: '1.0.0' });
    ok('connect', { sessionId: transport.sessionId, protocolVersion: transport.protocolVersion });

    await within(client.ping(), 'ping');
    const tools = await walk((p) => client.listTools(p), 'tools');
    const names = tools.all.map((t) => t.name);
    assert.ok(names.includes('add') && names.includes('progress') && names.includes('reconnect'), `tools ${names}`);
    assert.ok(v2 || tools.pages > 1, 'one page only');
    assert.equal(tools.all.find((t) => t.name === 'echo').title, 'Echo');
    ok('tools across pages', { pages: tools.pages, count: names.length });

    await wantText(client, 'add', { a: 2, b: 3 }, '5');
    const boom = await tool(client, 'boom');
    assert.equal(boom.isError, true);
    assert.equal(text(boom), 'kaboom');
    await rejectsWith(tool(client, 'crash'), -32603, 'Internal error');
    await rejectsWith(tool(client, 'nope'), -32602, 'Unknown tool: nope');
    const echo = await tool(client, 'echo', { x: [1, 2] });
    assert.deepEqual(echo.structuredContent, { x: [1, 2] });
    ok('tools/call');

    for (const want of ['1', '2']) await wantText(client, 'count', {}, want);
    const progress = [];
    const res = await tool(client, 'progress', {}, { onprogress: (p) => progress.push(p), timeout: WAIT });
    assert.equal(text(res), 'done');
    assert.deepEqual(progress.map((p) => [p.progress, p.total, p.message]), [[1, 2, 'step 1/2'], [2, 2, 'step 2/2']]);
    ok('progress via onprogress');
    // A call with a progress token runs on the session's state: its increment is kept.
    const streamed = await tool(client, 'count', {}, { onprogress: () => {}, timeout: WAIT });
    assert.equal(text(streamed), '3');
    await wantText(client, 'count', {}, '4');
    ok('streaming keeps state');

    const resources = await walk((p) => client.listResources(p), 'resources');
    assert.deepEqual(resources.all.map((r) => r.uri), ['mem://greeting', 'mem://locked', 'mem://structured', 'mem://counter']);
    const greeting = await within(client.readResource({ uri: 'mem://greeting' }), 'read');
    assert.equal(greeting.contents[0].text, 'hello');
    const user = await within(client.readResource({ uri: 'mem://user/9' }), 'read template');
    assert.equal(user.contents[0].text, 'user 9');
    await rejectsWith(client.readResource({ uri: 'mem://locked' }), -32002, 'locked');
    await rejectsWith(client.readResource({ uri: 'mem://nope' }), -32002, 'Resource not found: mem://nope');
    const templates = await within(client.listResourceTemplates(), 'templates');
    assert.deepEqual(templates.resourceTemplates.map((t) => t.uriTemplate), ['mem://user/{id}']);
    await within(client.subscribeResource({ uri: 'mem://greeting' }), 'subscribe');
    await within(client.unsubscribeResource({ uri: 'mem://greeting' }), 'unsubscribe');
    ok('resources');

    const prompts = await walk((p) => client.listPrompts(p), 'prompts');
    assert.deepEqual(prompts.all.map((p) => p.name), ['greet', 'deny', 'count']);
    const greet = await within(client.getPrompt({ name: 'greet', arguments: { who: 'Ada' } }), 'getPrompt');
    assert.deepEqual(greet.messages, [{ role: 'user', content: { type: 'text', text: 'Hello, Ada' } }]);
    await rejectsWith(client.getPrompt({ name: 'deny' }), -32602, 'denied');
    ok('prompts');

    const completion = await within(client.complete({ ref: { type: 'ref/prompt', name: 'greet' }, argument: { name: 'who', value: 'Ad' } }), 'complete');
    assert.deepEqual(completion.completion.values, ['Ada', 'Adam']);
    assert.equal(completion.completion.hasMore, false);
    await within(client.setLoggingLevel('warning'), 'setLoggingLevel');
    ok('complete and setLoggingLevel');
    await client.close();
  },

  // Stateless: no session id, nothing persists, streaming still works.
  async stateless(url) {
    const { client, transport } = await connect(url);
    assert.equal(transport.sessionId, undefined, 'a stateless server issued a session id');
    const { tools, nextCursor } = await within(client.listTools(), 'listTools');
    assert.equal(nextCursor, undefined);
    assert.equal(tools.length, 17);
    await wantText(client, 'count', {}, '1');
    await wantText(client, 'count', {}, '1');
    const progress = [];
    const res = await tool(client, 'progress', {}, { onprogress: (p) => progress.push(p.message), timeout: WAIT });
    assert.equal(text(res), 'done');
    assert.deepEqual(progress, ['step 1/2', 'step 2/2']);
    ok('stateless');
    await client.close();
  },

  // Notifications on the automatic GET channel.
  async notifications(url) {
    const logs = inbox();
    const updates = inbox();
    const changed = inbox();
    const pokes = inbox();
    const a = await connect(url, {
      setup(client) {
        client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => logs.push(n.params));
        client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => updates.push(n.params.uri));
        client.setNotificationHandler(ToolListChangedNotificationSchema, () => changed.push(true));
        client.fallbackNotificationHandler = async (n) => { if (n.method === 'notifications/test/poke') pokes.push(n.params); };
      },
    });
    await within(a.rec.getOpen, 'the GET channel');
    ok('GET channel opened');
    const b = await connect(url);

    // A broadcast from another session's tool call.
    await wantText(b.client, 'broadcast', {}, 'broadcast');
    assert.equal(await changed.next('tools/list_changed'), true);
    ok('list_changed from another session');

    await within(a.client.subscribeResource({ uri: 'mem://greeting' }), 'subscribe');
    await wantText(b.client, 'touch', { uri: 'mem://greeting' }, 'touched');
    assert.equal(await updates.next('resources/updated'), 'mem://greeting');
    ok('resource_updated after subscribe');

    await wantText(a.client, 'notify', { n: 5 }, 'notified');
    assert.deepEqual(await pokes.next('notifications/test/poke'), { n: 5 });
    ok('targeted notify');

    await within(a.client.setLoggingLevel('warning'), 'setLoggingLevel');
    await wantText(a.client, 'log', { level: 'info' }, 'logged');
    await wantText(a.client, 'log', { level: 'error' }, 'logged');
    assert.deepEqual(await logs.next('a log'), { level: 'error', data: 'log at error' });
    ok('log filtered by level');
    await a.client.close();
    await b.client.close();
  },

  // Requests to the client: elicitation, sampling, roots.
  async requests(url) {
    const seen = {};
    const { client } = await connect(url, {
      capabilities: { elicitation: {}, sampling: {}, roots: { listChanged: true } },
      setup(client) {
        client.setRequestHandler(ElicitRequestSchema, async (req) => {
          seen.elicit = req.params;
          switch (req.params.message) {
            case 'accept': return { action: 'accept', content: { name: 'Ada' } };
            case 'decline': return { action: 'decline' };
            default: return { action: 'cancel' };
          }
        });
        client.setRequestHandler(CreateMessageRequestSchema, async (req) => {
          seen.sample = req.params;
          return { role: 'assistant', model: 'ts-model', content: { type: 'text', text: `echo: ${req.params.messages[0].content.text}` } };
        });
        client.setRequestHandler(ListRootsRequestSchema, async () => ({ roots: [{ uri: 'file:///ts/root', name: 'root' }] }));
      },
    });
    await wantText(client, 'elicit', { message: 'accept' }, 'action=accept name=Ada');
    assert.equal(seen.elicit.requestedSchema.type, 'object');
    assert.deepEqual(seen.elicit.requestedSchema.required, ['name']);
    await wantText(client, 'elicit', { message: 'decline' }, 'action=decline name=-');
    await wantText(client, 'elicit', { message: 'cancel' }, 'action=cancel name=-');
    ok('elicitation accept, decline, cancel');
    await wantText(client, 'sample', { prompt: 'hi' }, 'model=ts-model text=echo: hi');
    assert.equal(seen.sample.maxTokens, 50);
    ok('sampling');
    await wantText(client, 'roots', {}, 'roots=file:///ts/root');
    ok('roots');
    await client.close();
  },

  // A client without the capabilities: the tools fail in-band.
  async nocapability(url) {
    const { client } = await connect(url);
    for (const [name, prefix] of [['elicit', 'elicitation failed: '], ['sample', 'sampling failed: ']]) {
      const res = await tool(client, name, { message: 'accept' });
      assert.equal(res.isError, true, `${name}: ${JSON.stringify(res)}`);
      assert.ok(text(res).startsWith(prefix), `${name}: ${text(res)}`);
    }
    ok('in-band error without the capability');
    await client.close();
  },

  // terminateSession: DELETE, then the id is unknown (404).
  async terminate(url) {
    const { client, transport, rec } = await connect(url);
    const sessionId = transport.sessionId;
    await wantText(client, 'count', {}, '1');
    await within(transport.terminateSession(), 'terminateSession');
    const del = rec.log.find((e) => e.method === 'DELETE');
    assert.ok(del && del.status >= 200 && del.status < 300, `DELETE answered ${del?.status}`);
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-11-25' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }),
    });
    assert.equal(res.status, 404, 'a request with the terminated id');
    ok('terminateSession', { sessionId, deleteStatus: del.status });
    await client.close();
  },

  // SSE polling: the server closes the call's stream; the SDK resumes it with
  // GET + Last-Event-ID and gets the rest, the result included.
  async reconnect(url) {
    const logs = inbox();
    const { client, rec } = await connect(url, {
      setup(client) { client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => logs.push(n.params)); },
    });
    await wantText(client, 'reconnect', {}, 'reconnected');
    assert.deepEqual(await logs.next('the log sent after the stream closed'), { level: 'info', data: 'after reconnect' });
    assert.ok(rec.log.some((e) => e.method === 'GET' && e.lastEventId), `no GET with Last-Event-ID: ${JSON.stringify(rec.log)}`);
    ok('resumed with Last-Event-ID');
    await client.close();
  },

  // A client that always asks for progress (FastMCP, or any SDK client given
  // an onprogress callback) on scripts/counter.lua: every call still runs on
  // the session's state and keeps its changes.
  async counter(url) {
    const { client } = await connect(url);
    const progress = [];
    const withProgress = { onprogress: (p) => progress.push(p), timeout: WAIT };
    assert.equal(text(await tool(client, 'increment', {}, withProgress)), '1');
    assert.equal(text(await tool(client, 'increment', {}, withProgress)), '2');
    assert.equal(text(await tool(client, 'get', {}, withProgress)), '2');
    assert.equal(text(await tool(client, 'get')), '2');
    ok('counter keeps state with a progress token on every call', { progress: progress.length });
    await client.close();
  },

  // The same on scripts/notes.lua: a note added by a call with a progress
  // token is in the notebook afterwards.
  async notes(url) {
    const { client } = await connect(url);
    const withProgress = { onprogress: () => {}, timeout: WAIT };
    assert.equal(text(await tool(client, 'add_note', { title: 'Groceries', text: 'milk, eggs' }, withProgress)), '1');
    assert.equal(text(await tool(client, 'add_note', { title: 'Todo', text: 'call Ada' }, withProgress)), '2');
    const { resources } = await within(client.listResources(), 'listResources');
    assert.deepEqual(resources.map((r) => r.uri), ['notes://1', 'notes://2']);
    const read = await within(client.readResource({ uri: 'notes://1' }), 'readResource');
    assert.equal(read.contents[0].text, 'milk, eggs');
    ok('notes keeps state with a progress token on every call');
    await client.close();
  },

  // Three luamcp nodes behind a round-robin proxy (tests/cluster_test.go):
  // url is the proxy, the other arguments each node's own endpoint. The
  // session's calls keep its state whatever node they land on; pushes made
  // on every node reach its GET channel once each.
  async cluster(url, ...nodes) {
    const updates = inbox();
    const changed = inbox();
    const pokes = inbox();
    const a = await connect(url, {
      setup(client) {
        client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => updates.push(n.params.uri));
        client.setNotificationHandler(ToolListChangedNotificationSchema, () => changed.push(true));
        client.fallbackNotificationHandler = async (n) => { if (n.method === 'notifications/test/poke') pokes.push(n.params); };
      },
    });
    await within(a.rec.getOpen, 'the GET channel');
    for (let i = 1; i <= 6; i++) await wantText(a.client, 'count', {}, String(i));
    ok('state kept across nodes', { sessionId: a.transport.sessionId });
    await within(a.client.subscribeResource({ uri: 'mem://greeting' }), 'subscribe');
    for (const [i, node] of nodes.entries()) {
      const b = await connect(node);
      await wantText(b.client, 'broadcast', {}, 'broadcast');
      assert.equal(await changed.next('tools/list_changed'), true);
      await wantText(b.client, 'touch', { uri: 'mem://greeting' }, 'touched');
      assert.equal(await updates.next('resources/updated'), 'mem://greeting');
      await wantText(b.client, 'notify', { n: i, to: a.transport.sessionId }, 'notified');
      assert.deepEqual(await pokes.next('notifications/test/poke'), { n: i });
      await b.client.close();
    }
    await new Promise((resolve) => setTimeout(resolve, 200)); // a late copy would be here by now
    assert.deepEqual([changed.length, updates.length, pokes.length], [0, 0, 0], 'a push arrived twice');
    ok('pushes from every node, once each');
    await a.client.close();
  },
};

// tasks: the 2025-11-25 experimental tasks through the SDK's own client
// (client.experimental.tasks) against live.lua's report tool.
scenarios.tasks = async (url) => {
  const { client } = await connect(url);
  assert.deepEqual(client.getServerCapabilities()?.tasks?.requests?.tools?.call, {}, 'initialize advertises task-augmented tools/call');
  ok('tasks capability');

  const seen = [];
  let result, taskId;
  const stream = client.experimental.tasks.callToolStream({ name: 'report', arguments: { seconds: 1 } }, CallToolResultSchema, { task: { ttl: 60000 } });
  for await (const msg of stream) {
    seen.push(msg.type);
    if (msg.type === 'error') throw msg.error;
    if (msg.type === 'taskCreated') taskId = msg.task.taskId;
    if (msg.type === 'result') result = msg.result;
  }
  assert.equal(seen[0], 'taskCreated', `stream ${seen}`);
  assert.ok(seen.includes('taskStatus'), `stream ${seen}`);
  assert.equal(seen.at(-1), 'result', `stream ${seen}`);
  assert.equal(text(result), 'Report ready after 1 seconds');
  assert.equal(result._meta?.['io.modelcontextprotocol/related-task']?.taskId, taskId);
  ok('callToolStream');

  const list = await within(client.experimental.tasks.listTasks(), 'tasks/list');
  const listed = list.tasks.find((t) => t.taskId === taskId);
  assert.equal(listed?.status, 'completed', `tasks/list ${JSON.stringify(list)}`);
  assert.equal(listed.ttl, 60000);
  ok('listTasks');

  const long = client.experimental.tasks.callToolStream({ name: 'report', arguments: { seconds: 60 } }, CallToolResultSchema, { task: { ttl: 60000 } });
  const first = await within(long.next(), 'task created');
  assert.equal(first.value.type, 'taskCreated');
  const id = first.value.task.taskId;
  const cancelled = await within(client.experimental.tasks.cancelTask(id), 'tasks/cancel');
  assert.equal(cancelled.status, 'cancelled');
  assert.equal((await client.experimental.tasks.getTask(id)).status, 'cancelled');
  await rejectsWith(client.experimental.tasks.cancelTask(id), -32602);
  await long.return();
  ok('cancelTask');

  await rejectsWith(client.experimental.tasks.getTask('no-such-task'), -32602);
  // A tool that does not run as a task refuses to be one; called plainly it
  // answers as ever.
  const plain = client.experimental.tasks.callToolStream({ name: 'countdown', arguments: { from: 1 } }, CallToolResultSchema, { task: { ttl: 60000 } });
  const refused = await within(plain.next(), 'refused task');
  assert.equal(refused.value.type, 'error');
  assert.equal(refused.value.error.code, -32601);
  await wantText(client, 'report', { seconds: 0 }, 'Report ready after 0 seconds');
  ok('not a task');
  await client.close();
};

// taskask: a 2025-11-25 task that asks the user (examples/conformance.lua's
// confirm_delete): the question arrives on the session's GET channel,
// marked as the task's, and the task ends with the answer.
scenarios.taskask = async (url) => {
  let asked;
  const statuses = [];
  let completed;
  const done = new Promise((resolve) => { completed = resolve; });
  const { client, rec } = await connect(url, {
    capabilities: { elicitation: {} },
    setup(client) {
      client.setRequestHandler(ElicitRequestSchema, async (req) => {
        asked = req.params;
        return { action: 'accept', content: { confirm: true } };
      });
      client.setNotificationHandler(TaskStatusNotificationSchema, (n) => {
        statuses.push(n.params.status);
        if (n.params.status === 'completed') completed();
      });
    },
  });
  await within(rec.getOpen, 'GET channel');
  const seen = [];
  let result, taskId;
  const stream = client.experimental.tasks.callToolStream({ name: 'confirm_delete', arguments: { filename: 'a.txt' } }, CallToolResultSchema, { task: { ttl: 60000 } });
  for await (const msg of stream) {
    seen.push(msg.type === 'taskStatus' ? msg.task.status : msg.type);
    if (msg.type === 'error') throw msg.error;
    if (msg.type === 'taskCreated') taskId = msg.task.taskId;
    if (msg.type === 'result') result = msg.result;
  }
  assert.equal(text(result), 'Deleted a.txt', `stream ${seen}`);
  assert.equal(asked?._meta?.['io.modelcontextprotocol/related-task']?.taskId, taskId, `elicitation ${JSON.stringify(asked)}`);
  ok('elicitation inside a task');
  await within(done, 'notifications/tasks/status completed');
  assert.deepEqual(statuses, ['input_required', 'working', 'completed']);
  ok('status notifications');
  await client.close();
};

// A tool whose output_schema has array members, each returned as an empty
// Lua table: the SDK checks structuredContent against the schema, and {}
// where it says array fails the whole call (tests/structured_test.go).
scenarios.structured = async (url) => {
  const { client } = await connect(url);
  const empty = await tool(client, 'search', {});
  assert.deepEqual(empty.structuredContent, { items: [], total: 0 });
  ok('empty list in structured content');
  const one = await tool(client, 'search', { one: true });
  assert.deepEqual(one.structuredContent, { items: [{ name: 'a', tags: [] }], total: 1 });
  ok('empty list inside an item');
  await client.close();
};

const [scenario, url, ...more] = process.argv.slice(2);
if (!scenarios[scenario] || !url) {
  console.error(`usage: node client.mjs <${Object.keys(scenarios).join('|')}> <url>`);
  process.exit(2);
}
try {
  await scenarios[scenario](url, ...more);
  console.log(JSON.stringify({ done: true }));
  process.exit(0);
} catch (err) {
  console.error(`${scenario}: ${err?.stack ?? err}`);
  process.exit(1);
}
