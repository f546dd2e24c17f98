-- auth never returns: every request must be refused, not held.
local server = require("lib.attack")({ call_timeout_ms = 500 }, function() return "unreachable" end)
server.auth = function() while true do end end
return server
