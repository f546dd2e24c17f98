-- Requests to the client in both eras (ask_test.go).
local mcp = require("mcp")

return {
  init = function()
    return { name = "ask", version = "1" }, { tools = {}, prompts = {}, resources = {} }, { runs = 0 }
  end,

  tools = function()
    return { { name = "greet" }, { name = "trapped" }, { name = "many" }, { name = "era" }, { name = "runs" } }
  end,

  handle_tool = function(name, args, ctx, state)
    if name == "runs" then
      return tostring(state.runs)
    end
    state.runs = state.runs + 1
    if name == "greet" then
      local who, err = mcp.elicit(ctx, { message = "Name?", requested_schema = { type = "object" }, key = "user_name" })
      if not who then return nil, err end
      local color = assert(mcp.elicit(ctx, { message = "Color?" }))
      return "Hello " .. who.content.name .. " (" .. color.content.color .. ")"
    elseif name == "trapped" then
      local ok = pcall(mcp.elicit, ctx, { message = "m" })
      state.escaped = true
      return "escaped " .. tostring(ok)
    elseif name == "many" then
      local got, failed = mcp.ask(ctx, {
        user_name = { method = "elicitation/create", params = { message = "Name?" } },
        client_roots = { method = "roots/list" },
      })
      return got.user_name.content.name .. " " .. got.client_roots.roots[1].uri .. " " .. tostring(failed)
    elseif name == "era" then
      return mcp.json_encode({ version = ctx.protocol_version, caps = ctx.client_capabilities or mcp.null })
    end
  end,

  prompts = function() return { { name = "p" } } end,

  get_prompt = function(name, args, state, ctx)
    local r = assert(mcp.elicit(ctx, { message = "Context?", key = "user_context" }))
    return { messages = { { role = "user", content = { type = "text", text = r.content.context } } } }
  end,

  resources = function() return { { uri = "test://r", name = "r" } } end,

  read_resource = function(uri, state, vars, ctx)
    return ctx.protocol_version or "none"
  end,
}
