big = string.rep("x", 3e6)
return {
  route = { memory_limit_mb = 1 },
  init = function() return { name = "m", version = "1" }, {}, {} end,
  tools = function() return {} end,
  handle_tool = function() end,
}
