return {
  route = { session_hibernate_ms = 0.5 },
  init = function() return { name = "m", version = "1" }, {}, {} end,
  tools = function() return {} end,
  handle_tool = function() end,
}
