-- route.oauth.tool_scopes names a tool that tools() does not list (a typo:
-- add_notes for add_note), which would leave add_note without notes:write.
return {
  route = {
    oauth = {
      issuer = "https://as.example.com",
      audience = "https://mcp.example.com/mcp/oauth",
      tool_scopes = { add_notes = { "notes:write" } },
    },
  },
  init = function() return { name = "oauth", version = "1" }, { tools = {} }, {} end,
  tools = function()
    return { { name = "add_note", description = "add", input_schema = { type = "object" } } }
  end,
  handle_tool = function() return "ok" end,
}
