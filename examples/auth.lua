-- auth.lua: guarding a server with a bearer token and an Origin allowlist.
--
-- Every request passes these gates, in order, before it reaches a callback:
--   1. the peer and the Host header must be loopback (unless
--      route.allow_remote_access = true): otherwise 403;
--   2. an Origin header, when present, must be one of route.origins (or
--      the server's own origin on a loopback Host): otherwise 403 (a
--      request without Origin, like curl's, passes);
--   3. the auth function below.
--
-- Try it (after copying this file into the scripts folder):
--   curl -i -X POST http://127.0.0.1:8750/mcp/auth \
--     -H 'Authorization: Bearer change-me' -H 'Content-Type: application/json' \
--     -H 'Accept: application/json, text/event-stream' \
--     -d '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"whoami","arguments":{}}}'
-- Without the Authorization header the answer is 401.

-- The token is written here to keep the example short. Keep real tokens out
-- of version control: grant the variable (route.allow.env = { "AUTH_TOKEN" })
-- and read it with require("env").get("AUTH_TOKEN") in auth (the capability
-- modules work in every callback, not while the main chunk runs).
local TOKEN = "change-me"

return {
  route = {
    -- Browsers send Origin; only pages from these exact origins may call.
    -- http://localhost:6274 is the MCP Inspector.
    origins = { "http://localhost:6274" },
  },

  -- auth(request) sees the method, the path, the headers (lower-case
  -- names) and the peer address. Return true to let the request in, false
  -- or nothing for 401, or a number from 400 to 599 for another status
  -- (anything else is logged and answered 500).
  auth = function(request)
    local header = request.headers["authorization"]
    if header == "Bearer " .. TOKEN then
      return true
    end
    if header == nil then
      return 401
    end
    return 403 -- a token, but the wrong one
  end,

  init = function(params)
    return { name = "auth-example", version = "1.0.0" }, { tools = {} }, {}
  end,

  tools = function(state)
    return {
      { name = "whoami", description = "Say that the caller got through", input_schema = { type = "object" } },
    }
  end,

  handle_tool = function(name, args, ctx, state)
    return "You are in: your token was accepted."
  end,
}
