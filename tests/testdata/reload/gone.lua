-- A session-mode script the reload test removes.
return {
  route = { sessions = true },
  init = function(params) return { name = "gone", version = "1" }, { tools = {} }, {} end,
  tools = function(state) return { { name = "ping", description = "", input_schema = { type = "object" } } } end,
  handle_tool = function(name, args, ctx, state) return "pong" end,
  terminate = function(reason, state) print("gone terminate reason=" .. reason) end,
}
