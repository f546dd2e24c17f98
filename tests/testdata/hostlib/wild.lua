-- Any public host: loopback, private and link-local addresses stay out of
-- reach, whatever name leads to them.
local http = require("http")

---@type luamcp.Server
return {
  route = { sessions = true, allow = { http = { "*" } } },

  init = function()
    return { name = "wild", version = "1.0.0" }, { tools = {} }, {}
  end,

  tools = function()
    return { { name = "http_url", description = "GET a URL", input_schema = { type = "object" } } }
  end,

  handle_tool = function(name, args)
    local r, err = http.get(args.url)
    if not r then return nil, err end
    return r.status .. " " .. r.body
  end,
}
