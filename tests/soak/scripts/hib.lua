-- hib.lua: sessions that hibernate 1 ms after each call and wake at the
-- next, with a counter in their state that the soak checks; pushes to the
-- GET channel (notify, log, broadcast).
local mcp = require("mcp")
return {
  route = { sessions = true, session_hibernate_ms = 1, session_ttl_ms = 20000 },
  init = function(params)
    return { name = "hib", version = "1" }, { tools = { listChanged = true }, logging = {} }, { n = 0, tags = {} }
  end,
  channels = function(state) return { "room" } end,
  tools = function(state)
    return {
      { name = "inc", description = "inc", input_schema = { type = "object" } },
      { name = "get", description = "get", input_schema = { type = "object" } },
      { name = "push", description = "push", input_schema = { type = "object" } },
      { name = "shout", description = "shout", input_schema = { type = "object" } },
      { name = "slow", description = "slow", input_schema = { type = "object" } },
    }
  end,
  handle_tool = function(name, args, ctx, state)
    if name == "inc" then
      state.n = state.n + 1
      state.tags[#state.tags + 1] = "t" .. state.n
      if #state.tags > 20 then table.remove(state.tags, 1) end
      return tostring(state.n)
    elseif name == "get" then
      return tostring(state.n)
    elseif name == "push" then
      for i = 1, 5 do mcp.notify(ctx.session_id, "notifications/message", { level = "info", data = "p" .. i }) end
      mcp.log(ctx.session_id, "info", "hello")
      return "pushed"
    elseif name == "shout" then
      mcp.broadcast("room", "notifications/message", { level = "notice", data = "shout" })
      return "shouted"
    elseif name == "slow" then
      mcp.sleep(200 + math.random(300))
      state.n = state.n + 1
      return tostring(state.n)
    end
    return nil, "unknown tool"
  end,
}

-- touch 28

-- touch 14

-- touch 217

-- touch 203

-- touch 140
