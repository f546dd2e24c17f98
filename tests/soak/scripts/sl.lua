-- sl.lua: a stateless route: echo, and a question to the client (in the
-- 2026-07-28 era an input_required round).
local mcp = require("mcp")
return {
  route = { sessions = false },
  init = function(params)
    return { name = "sl", version = "1" }, { tools = {} }, {}
  end,
  tools = function(state)
    return {
      { name = "echo", description = "e", input_schema = { type = "object" } },
      { name = "ask", description = "a", input_schema = { type = "object" } },
    }
  end,
  handle_tool = function(name, args, ctx, state)
    if name == "echo" then return mcp.json_encode(args) end
    if name == "ask" then
      local r, err = mcp.elicit(ctx, { message = "q", requested_schema = { type = "object", properties = { name = { type = "string" } } } })
      if not r then return nil, err end
      return "got " .. tostring(r.content and r.content.name)
    end
    return nil, "unknown"
  end,
}
