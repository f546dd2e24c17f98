-- progress.lua: a tool that reports progress (/mcp/progress). Called with a
-- progress token and an Accept header that allows SSE, its answer becomes an
-- event stream: ten notifications/progress, then the result.
local mcp = require("mcp")

local STEPS = 10

return {
  route = { sessions = true },

  init = function(params)
    return { name = "progress", version = "1.0.0" }, { tools = {} }, {}
  end,

  tools = function(state)
    return {
      { name = "progress", description = "Report progress, then finish",
        input_schema = { type = "object" } },
    }
  end,

  handle_tool = function(name, args, ctx, state)
    for i = 1, STEPS do
      -- A no-op when the caller sent no progress token.
      mcp.progress(ctx, i, { total = STEPS })
    end
    return "done"
  end,
}
