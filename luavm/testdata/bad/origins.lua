return {
  route = { origins = { "http://a", 3 } },
  init = function() return { name = "m", version = "1" }, {}, {} end,
  tools = function() return {} end,
  handle_tool = function() end,
}
