return {
  route = { path = "/mcp/same" },
  init = function() return { name = "a", version = "1" }, {}, {} end,
  tools = function() return {} end,
  handle_tool = function() end,
}
