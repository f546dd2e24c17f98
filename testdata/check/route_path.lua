return {
  route = { path = "/mcp/{id}" },
  init = function() return { name = "r", version = "1" }, {}, {} end,
  tools = function() return {} end,
  handle_tool = function() end,
}
