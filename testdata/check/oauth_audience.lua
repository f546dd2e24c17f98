-- route.oauth.audience names another path (/notes) than the route's
-- (/mcp/oauth_audience): clients would look for the metadata in the wrong
-- place unless a proxy maps the paths (a warning, not an error).
return {
  route = {
    oauth = { issuer = "https://as.example.com", audience = "https://mcp.example.com/notes" },
  },
  init = function() return { name = "oauth_audience", version = "1" }, { tools = {} }, {} end,
  tools = function() return {} end,
  handle_tool = function() return "ok" end,
}
