-- bad.lua: tools that crash, loop past call_timeout_ms, sleep past it,
-- outgrow memory_limit_mb, or return a tool error; and one that works.
local mcp = require("mcp")
return {
  route = { sessions = true, call_timeout_ms = 300, memory_limit_mb = 16, session_hibernate_ms = 5, session_ttl_ms = 20000 },
  init = function(params)
    return { name = "bad", version = "1" }, { tools = {} }, { k = 1 }
  end,
  tools = function(state)
    return {
      { name = "boom", description = "b", input_schema = { type = "object" } },
      { name = "spin", description = "s", input_schema = { type = "object" } },
      { name = "nap", description = "n", input_schema = { type = "object" } },
      { name = "hog", description = "h", input_schema = { type = "object" } },
      { name = "toolerr", description = "t", input_schema = { type = "object" } },
      { name = "ok", description = "o", input_schema = { type = "object" } },
    }
  end,
  handle_tool = function(name, args, ctx, state)
    if name == "boom" then error("kaboom") end
    if name == "spin" then while true do end end
    if name == "nap" then mcp.sleep(2000) return "woke" end
    if name == "hog" then local t = {} for i = 1, 1e8 do t[i] = string.rep("x", 100) .. i end return "ate" end
    if name == "toolerr" then return nil, "a tool error" end
    state.k = state.k + 1
    return tostring(state.k)
  end,
}
