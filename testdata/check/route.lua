return {
  route = { page_size = 0 },
  init = function() return { name = "r", version = "1" }, {}, {} end,
  tools = function() return {} end,
  handle_tool = function() end,
}
