-- An auth hook keyed on the x-token header.
return {
  auth = function(request)
    local token = request.headers["x-token"]
    if token == "ok" then
      return request.method == "POST" and request.path == "/mcp/auth" and request.remote_addr == "127.0.0.1:5555"
    elseif token == "deny" then
      return false
    elseif token == "forbidden" then
      return 403
    elseif token == "crash" then
      error("auth exploded")
    elseif token == "weird" then
      return "yes"
    elseif token == "loop" then
      while true do end
    end
  end,

  init = function()
    return { name = "auth", version = "1" }, { tools = {} }, {}
  end,
  tools = function() return {} end,
  handle_tool = function() return "" end,
}
