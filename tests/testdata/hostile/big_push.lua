-- Two hundred 1 MiB pushes to the caller's own session, which never opens
-- its GET channel: the replay ring must stay bounded.
local mcp = require("mcp")
return require("lib.attack")({ sessions = true }, function(_, ctx)
  local blob = string.rep("p", 1024 * 1024)
  for i = 1, 200 do mcp.notify(ctx.session_id, "notifications/blob", { n = i, blob = blob }) end
  return "pushed"
end)
