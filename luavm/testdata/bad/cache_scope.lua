return {
  route = { cache_scope = "shared" },
  init = function() return { name = "m", version = "1" }, {}, {} end,
  tools = function() return {} end,
  handle_tool = function() end,
}
