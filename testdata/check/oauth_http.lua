return {
  route = { oauth = { issuer = "http://as.example.com", audience = "https://mcp.example.com/mcp/x" } },
  init = function() return { name = "o", version = "1" }, {}, {} end,
  tools = function() return {} end,
  handle_tool = function() end,
}
