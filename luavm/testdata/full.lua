-- Exercises every callback in session mode; driven by the luavm tests.
local mcp = require("mcp")
local util = require("lib.util")

-- Tools the tests call besides echo and inc.
local test_tools = {
  "set", "fail", "fail_structured", "fail_table", "crash", "structured", "nothing", "number", "bad_result",
  "no_content", "unencodable", "loop", "sleep", "mutate_sleep", "ctx", "greet", "get",
}

return {
  route = { sessions = true, page_size = 2, session_keepalive_ms = 0 },

  init = function(params)
    local info = {
      name = "full", version = "1.0.0",
      website_url = "https://example.com", instructions = "Be nice.",
    }
    local caps = { tools = {}, resources = { subscribe = true }, prompts = {}, completions = {}, logging = {} }
    local state = { count = 0, nested = { items = { 1, 2 } }, session = params.mcp_session_id }
    return info, caps, state
  end,

  tools = function(state)
    local list = {
      {
        name = "echo", description = "Echo text",
        input_schema = { type = "object", properties = { text = { type = "string" } } },
        output_schema = { type = "object" },
        annotations = { readOnlyHint = true },
        _meta = { snake_case = "kept" },
      },
      { name = "inc", description = "Add n to count", input_schema = { type = "object" } },
    }
    for _, name in ipairs(test_tools) do
      list[#list + 1] = { name = name, input_schema = { type = "object" } }
    end
    return list
  end,

  handle_tool = function(name, args, ctx, state)
    if name == "echo" then
      return args.text
    elseif name == "inc" then
      state.count = state.count + (args.n or 1)
      return tostring(state.count)
    elseif name == "set" then
      return "set", { count = args.n, nested = { items = {} } }
    elseif name == "fail" then
      state.count = state.count + 1
      return nil, "failed at " .. state.count
    elseif name == "fail_structured" then
      return nil, { content = { { type = "text", text = "too hot" } }, structured_content = { temp = 99 } }
    elseif name == "fail_table" then
      return nil, { content = { { type = "text", text = "bad input" } } }, { count = -1, nested = {} }
    elseif name == "crash" then
      state.count = state.count + 100
      state.nested.items[3] = 3
      state.nested.items[1] = "changed"
      state.nested.extra = { deep = true }
      error("boom")
    elseif name == "structured" then
      return {
        content = { { type = "text", text = "20 degrees" } },
        structured_content = { temp = 20 },
        _meta = { source = "test" },
      }
    elseif name == "nothing" then
      return
    elseif name == "number" then
      return 42
    elseif name == "bad_result" then
      return true
    elseif name == "no_content" then
      return { text = "oops" }
    elseif name == "unencodable" then
      state.count = 999
      return { content = { { type = "text", text = function() end } } }
    elseif name == "loop" then
      state.count = state.count + 1
      while true do end
    elseif name == "sleep" then
      mcp.sleep(args.ms)
      return "slept"
    elseif name == "mutate_sleep" then
      -- Changes the state in place, says so, then waits: a snapshot taken
      -- meanwhile must not see the change.
      state.count = 1000
      state.nested.items[1] = "mutated"
      mcp.notify("test", "notifications/mutated", {})
      mcp.sleep(args.ms)
      return "done"
    elseif name == "ctx" then
      return mcp.json_encode({
        session_id = ctx.session_id or mcp.null,
        request_id = ctx.request_id or mcp.null,
        progress_token = ctx.progress_token or mcp.null,
      })
    elseif name == "greet" then
      return util.greet(args.name)
    elseif name == "get" then
      return mcp.json_encode(state)
    end
  end,

  resources = function(state)
    return {
      { uri = "mem://readme", name = "readme", mime_type = "text/markdown" },
      { uri = "mem://table", name = "table" },
      { uri = "mem://missing", name = "missing" },
      { uri = "mem://broken", name = "broken" },
      { uri = "mem://nil", name = "nil" },
    }
  end,

  resource_templates = function(state)
    return { { uri_template = "mem://user/{id}", name = "user", mime_type = "application/json" } }
  end,

  read_resource = function(uri, state, vars)
    state.reads = (state.reads or 0) + 1
    if uri == "mem://readme" then
      return "# Readme"
    elseif uri == "mem://table" then
      return { contents = { { uri = uri, text = "t", mimeType = "text/plain" } } }
    elseif uri == "mem://missing" then
      return nil, "gone away"
    elseif uri == "mem://broken" then
      error("cannot read")
    elseif uri == "mem://nil" then
      return nil
    end
    return mcp.json_encode({ id = vars.id })
  end,

  prompts = function(state)
    return {
      { name = "greet", description = "Greets", arguments = { { name = "who", required = true } } },
      { name = "refuse" },
      { name = "silent" },
    }
  end,

  get_prompt = function(name, args, state)
    if name == "refuse" then
      return nil, "who is required"
    elseif name == "silent" then
      return
    end
    return {
      description = "A greeting",
      messages = { { role = "user", content = { type = "text", text = util.greet(args.who or "you") } } },
    }
  end,

  complete = function(ref, argument, state, context)
    state.completions = (state.completions or 0) + 1
    if argument.value == "crash" then
      return { 1, 2 }
    end
    local out = {}
    for _, v in ipairs({ "alpha", "beta", "gamma" }) do
      if v:sub(1, #argument.value) == argument.value then
        out[#out + 1] = v
      end
    end
    return out
  end,

  channels = function(state)
    return { "news", "session:" .. tostring(state.session) }
  end,

  terminate = function(reason, state)
    print("terminate", reason, state.count)
  end,
}
