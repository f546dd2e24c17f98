return {
  route = { path = "/.well-known/oauth-protected-resource/mcp/notes" },
  init = function() return { name = "r", version = "1" }, {}, {} end,
  tools = function() return {} end,
  handle_tool = function() end,
}
