-- init never returns: initialize must fail, not hang.
local server = require("lib.attack")({ sessions = true, call_timeout_ms = 500 }, function() return "unreachable" end)
server.init = function() while true do end end
return server
