-- broadcast.lua: one call that reaches every session (/mcp/broadcast).
-- Each session joins the "news" channel when it starts; the broadcast tool
-- pushes a log message to all of them, on their GET streams.
local mcp = require("mcp")

return {
  route = { sessions = true },

  init = function(params)
    return { name = "broadcast", version = "1.0.0" }, { tools = {}, logging = {} }, {}
  end,

  -- Called once per session, right after init.
  channels = function(state)
    return { "news" }
  end,

  tools = function(state)
    return {
      { name = "broadcast", description = "Push a message to every session",
        input_schema = {
          type = "object",
          properties = { marker = { type = "string" } },
          required = { "marker" },
        } },
    }
  end,

  handle_tool = function(name, args, ctx, state)
    mcp.broadcast("news", "notifications/message",
      { level = "info", data = { marker = args.marker } })
    return "ok"
  end,
}
