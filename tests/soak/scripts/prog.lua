-- prog.lua: progress streams of a concurrent tool (countdown), and requests
-- to the client (elicitation, sampling) that hold the session's turn until
-- answered, refused, cancelled or request_timeout_ms.
local mcp = require("mcp")
return {
  route = { sessions = true, concurrent_tools = { "countdown" }, request_timeout_ms = 5000, session_ttl_ms = 20000 },
  init = function(params)
    return { name = "prog", version = "1" }, { tools = {}, logging = {} }, {}
  end,
  tools = function(state)
    return {
      { name = "countdown", description = "c", input_schema = { type = "object" } },
      { name = "ask", description = "a", input_schema = { type = "object" } },
      { name = "sample", description = "s", input_schema = { type = "object" } },
    }
  end,
  handle_tool = function(name, args, ctx, state)
    if name == "countdown" then
      local n = args.n or 5
      for i = 1, n do
        mcp.progress(ctx, i, { total = n, message = "step" })
        mcp.log(ctx, "info", "step " .. i)
        mcp.sleep(50)
      end
      return "done"
    elseif name == "ask" then
      local r, err = mcp.elicit(ctx, { message = "name?", requested_schema = { type = "object", properties = { name = { type = "string" } } } })
      if not r then return nil, err end
      return "got " .. tostring(r.action) .. " " .. tostring(r.content and r.content.name)
    elseif name == "sample" then
      local r, err = mcp.sample(ctx, { messages = { { role = "user", content = { type = "text", text = "hi" } } }, max_tokens = 10 })
      if not r then return nil, err end
      return "sampled"
    end
    return nil, "unknown"
  end,
}
