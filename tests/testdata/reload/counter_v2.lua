-- Version 2 of the hot-reload fixture: a new tool, the same state.
local fmt = require("lib.fmt")

return {
  route = { sessions = true },
  init = function(params) return { name = "counter", version = "2" }, { tools = { listChanged = true } }, { n = 0 } end,
  tools = function(state)
    return {
      { name = "increment", description = "add one", input_schema = { type = "object" } },
      { name = "get", description = "the count", input_schema = { type = "object" } },
      { name = "double", description = "double the count", input_schema = { type = "object" } },
    }
  end,
  handle_tool = function(name, args, ctx, state)
    if name == "increment" then state.n = state.n + 1 end
    if name == "double" then state.n = state.n * 2 end
    return fmt.count(state.n)
  end,
}
