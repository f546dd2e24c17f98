-- tools1000.lua: a server with 1,000 tools, listed 50 per page (a copy of
-- bench/scripts/tools1000.lua, for BenchmarkListPage).

local TOOLS = {}
for i = 1, 1000 do
  local name = string.format("tool%04d", i)
  TOOLS[i] = {
    name = name,
    description = "Tool " .. name,
    input_schema = { type = "object", properties = { text = { type = "string" } } },
  }
end

return {
  route = { sessions = true, page_size = 50 },

  init = function(params)
    return { name = "tools1000", version = "1.0.0" }, { tools = {} }, {}
  end,

  -- The list is built once, above; every tools/list page reads it.
  tools = function(state)
    return TOOLS
  end,

  handle_tool = function(name, args, ctx, state)
    return "ok"
  end,
}
