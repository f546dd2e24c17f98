-- The end-to-end test fixture: a port of the original implementation's test
-- server (arizona_mcp_test_server) to the Lua contract, plus the tools that
-- exercise what the port adds (requests to the client, pushes, encode errors).
--
-- Every variant in the folder above is `fixture.server(route [, extra])`:
-- the same callbacks under different route options, so a test mounts exactly
-- the limits it needs. State lives in three independent counters so that a
-- test of one callback never sees another's side effects:
--   state.count   tools "count" and "sleep"
--   state.reads   resource mem://counter
--   state.prompts prompt "count"
local mcp = require("mcp")

local M = {}

local NAMES = { "Ada", "Adam", "Alan" }

local function object_schema(properties, required)
  return {
    type = "object",
    properties = properties or mcp.object({}),
    required = required,
  }
end

local TOOLS = {
  { name = "add", description = "Add two numbers",
    input_schema = object_schema({ a = { type = "number" }, b = { type = "number" } }, { "a", "b" }) },
  { name = "boom", description = "Fail in-band: an isError result", input_schema = object_schema() },
  { name = "crash", description = "Raise a Lua error: a crash", input_schema = object_schema() },
  { name = "echo", title = "Echo", description = "Echo the arguments as structured content",
    input_schema = { type = "object" } },
  { name = "count", description = "Increment the session counter (fail=true: in-band error after; crash=true: crash after)",
    input_schema = object_schema({ fail = { type = "boolean" }, crash = { type = "boolean" } }) },
  { name = "progress", description = "Two progress notifications, then done",
    input_schema = object_schema({ plain = { type = "boolean" }, bad = { type = "boolean" } }) },
  { name = "block", description = "Sleep (default one minute) until cancelled",
    input_schema = object_schema({ ms = { type = "integer" } }) },
  { name = "sleep", description = "Sleep 300 ms, then increment the counter",
    input_schema = object_schema({ ms = { type = "integer" } }) },
  { name = "unencodable", description = "Return a value JSON cannot carry",
    input_schema = object_schema({ kind = { type = "string", enum = { "function", "utf8", "nan" } } }) },
  { name = "elicit", description = "Ask the user through elicitation/create",
    input_schema = object_schema({ message = { type = "string" } }) },
  { name = "sample", description = "Ask the client's model through sampling/createMessage",
    input_schema = object_schema({ prompt = { type = "string" } }) },
  { name = "roots", description = "List the client's roots", input_schema = object_schema() },
  { name = "notify", description = "Push notifications/test/poke to this session's channel (or session `to`)",
    input_schema = object_schema({ n = { type = "integer" }, bad = { type = "boolean" }, to = { type = "string" } }) },
  { name = "broadcast", description = "Broadcast tools/list_changed on mcp_test_channel",
    input_schema = object_schema() },
  { name = "touch", description = "Announce that a resource changed",
    input_schema = object_schema({ uri = { type = "string" } }, { "uri" }) },
  { name = "log", description = "Log at a level, to the session channel (or session `to`) or (on=call) on this call's stream",
    input_schema = object_schema({ level = { type = "string" }, data = {}, on = { type = "string" }, to = { type = "string" } },
      { "level" }) },
  { name = "reconnect", description = "Close this call's stream, then answer (SSE polling)",
    input_schema = object_schema() },
}

local RESOURCES = {
  { uri = "mem://greeting", name = "greeting", description = "A greeting", mime_type = "text/plain" },
  { uri = "mem://locked", name = "locked", description = "Always fails" },
  { uri = "mem://structured", name = "structured", mime_type = "application/json" },
  { uri = "mem://counter", name = "counter", description = "Counts its reads" },
}

local PROMPTS = {
  { name = "greet", description = "Greet someone",
    arguments = { { name = "who", description = "Who to greet", required = true } } },
  { name = "deny", description = "Always fails" },
  { name = "count", description = "Counts its renders" },
}

local function text(s)
  return { type = "text", text = s }
end

local function handle_tool(name, args, ctx, state)
  if name == "add" then
    return tostring(args.a + args.b)

  elseif name == "boom" then
    return nil, "kaboom"

  elseif name == "crash" then
    error("crash on purpose")

  elseif name == "echo" then
    return { content = { text(mcp.json_encode(args)) }, structured_content = args }

  elseif name == "count" then
    -- A no-op unless the call streams: then it runs on a snapshot.
    mcp.progress(ctx, 1, { message = "counting" })
    -- Mutate in place first: a crash must roll this back.
    state.count = state.count + 1
    if args.crash then
      error("count crashed at " .. state.count)
    end
    if args.fail then
      return nil, "count failed at " .. state.count
    end
    return tostring(state.count)

  elseif name == "progress" then
    if args.bad then
      mcp.progress(ctx, 1, { total = 2, message = "bad \255\254" })
    elseif args.plain then
      mcp.progress(ctx, 1)
    else
      mcp.progress(ctx, 1, { total = 2, message = "step 1/2" })
      mcp.progress(ctx, 2, { total = 2, message = "step 2/2" })
    end
    return "done"

  elseif name == "block" then
    -- The log line tells a test the call is running; the progress flushes a
    -- streaming answer's first event (a no-op for a buffered call).
    print("fixture block started id=" .. tostring(ctx.request_id))
    mcp.progress(ctx, 0, { message = "blocking" })
    mcp.sleep(args.ms or 60000)
    return "unblocked"

  elseif name == "sleep" then
    mcp.sleep(args.ms or 300)
    state.count = state.count + 1
    print("fixture slept id=" .. tostring(ctx.request_id))
    return "slept"

  elseif name == "unencodable" then
    if args.kind == "utf8" then
      return "bad \255\254 bytes"
    elseif args.kind == "nan" then
      return { content = { text("nan") }, structured_content = { value = 0 / 0 } }
    end
    return { content = { { type = "text", text = function() end } } }

  elseif name == "elicit" then
    local res, err = mcp.elicit(ctx, {
      message = args.message or "Who are you?",
      requested_schema = {
        type = "object",
        properties = { name = { type = "string", description = "Your name" } },
        required = { "name" },
      },
    })
    if not res then
      return nil, "elicitation failed: " .. err
    end
    local who = res.content and res.content.name or "-"
    return "action=" .. res.action .. " name=" .. who

  elseif name == "sample" then
    local res, err = mcp.sample(ctx, {
      messages = { { role = "user", content = text(args.prompt or "Say hi") } },
      max_tokens = 50,
    })
    if not res then
      return nil, "sampling failed: " .. err
    end
    return "model=" .. res.model .. " text=" .. res.content.text

  elseif name == "roots" then
    local res, err = mcp.list_roots(ctx)
    if not res then
      return nil, "roots failed: " .. err
    end
    local uris = {}
    for _, root in ipairs(res.roots) do
      uris[#uris + 1] = root.uri
    end
    return "roots=" .. table.concat(uris, ",")

  elseif name == "notify" then
    if args.bad then
      -- An unencodable push is logged and dropped before it leaves the VM,
      -- using up no event id; the call goes on, told why.
      local ok, err = mcp.notify(ctx.session_id, "notifications/test/poke", { f = function() end })
      assert(ok == false and err:find("cannot encode a function", 1, true), tostring(err))
    end
    -- times: push that many (big pushes fill a client's socket); method: push
    -- another method (only notifications/* are taken: the others are refused).
    for _ = 1, args.times or 1 do
      local ok, err = mcp.notify(args.to or ctx.session_id, args.method or "notifications/test/poke", { n = args.n or 0 })
      if not ok then
        return "refused: " .. err
      end
    end
    return "notified"

  elseif name == "broadcast" then
    local ok, err = mcp.broadcast("mcp_test_channel", args.method or "notifications/tools/list_changed", mcp.object({}))
    if not ok then
      return "refused: " .. err
    end
    return "broadcast"

  elseif name == "touch" then
    mcp.resource_updated(args.uri)
    return "touched"

  elseif name == "log" then
    local data = args.data
    if data == nil then
      data = "log at " .. args.level
    end
    if args.on == "call" then
      for _ = 1, args.times or 1 do
        mcp.log(ctx, args.level, data)
      end
    else
      mcp.log(args.to or ctx.session_id, args.level, data)
    end
    return "logged"

  elseif name == "reconnect" then
    -- SSE polling (2025-11-25): the client must come back with GET +
    -- Last-Event-ID to get the rest, this message and the result included.
    mcp.close_stream(ctx)
    mcp.sleep(100)
    mcp.log(ctx, "info", "after reconnect")
    return "reconnected"
  end
end

-- server returns a server module with the given route options. extra may
-- carry module fields that are not callbacks of the fixture (auth).
function M.server(route, extra)
  local server = {
    route = route,

    init = function(params)
      return { name = "luamcp-test-fixture", version = "1.0.0" },
        { tools = { listChanged = true }, resources = { subscribe = true }, prompts = {}, logging = {}, completions = {} },
        { count = 0, reads = 0, prompts = 0, session_id = params.mcp_session_id }
    end,

    tools = function(state)
      return TOOLS
    end,

    handle_tool = handle_tool,

    resources = function(state)
      return RESOURCES
    end,

    resource_templates = function(state)
      return { { uri_template = "mem://user/{id}", name = "user", description = "A user by id", mime_type = "text/plain" } }
    end,

    read_resource = function(uri, state, vars)
      if uri == "mem://greeting" then
        return "hello"
      elseif uri == "mem://locked" then
        return nil, "locked"
      elseif uri == "mem://structured" then
        return { contents = { { uri = uri, mimeType = "application/json", text = '{"a":1}' } } }
      elseif uri == "mem://counter" then
        state.reads = state.reads + 1
        return tostring(state.reads)
      elseif vars.id then
        return "user " .. vars.id
      end
      return nil, "no such resource: " .. uri
    end,

    prompts = function(state)
      return PROMPTS
    end,

    get_prompt = function(name, args, state)
      if name == "greet" then
        return {
          description = "A greeting",
          messages = { { role = "user", content = text("Hello, " .. args.who) } },
        }
      elseif name == "deny" then
        return nil, "denied"
      elseif name == "count" then
        state.prompts = state.prompts + 1
        return { messages = { { role = "user", content = text("count " .. state.prompts) } } }
      end
    end,

    complete = function(ref, argument, state, context)
      local out = {}
      for _, candidate in ipairs(NAMES) do
        if candidate:sub(1, #argument.value) == argument.value then
          out[#out + 1] = candidate
        end
      end
      return out
    end,

    channels = function(state)
      return { "mcp_test_channel" }
    end,

    terminate = function(reason, state)
      print("fixture terminate reason=" .. reason .. " session=" .. tostring(state.session_id))
    end,
  }
  for k, v in pairs(extra or {}) do
    server[k] = v
  end
  return server
end

return M
