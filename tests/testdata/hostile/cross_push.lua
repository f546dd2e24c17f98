-- Pushes aimed at another route's clients: a session id it learned, a channel
-- and a resource URI that route uses, and a method that is a request.
local mcp = require("mcp")
return require("lib.attack")({}, function(args)
  local results = {}
  local function try(what, ok, why) results[#results + 1] = what .. "=" .. tostring(ok) .. ":" .. tostring(why) end
  try("notify", mcp.notify(args.sid, "notifications/stolen", { x = 1 }))
  try("request", mcp.notify(args.sid, "sampling/createMessage", { messages = {} }))
  try("log", mcp.log(args.sid, "error", "stolen"))
  try("broadcast", mcp.broadcast("mcp_test_channel", "notifications/stolen", {}))
  try("updated", mcp.resource_updated("mem://counter"))
  return table.concat(results, " ")
end)
