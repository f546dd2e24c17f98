-- init fails for every initialize (session mode).
local server = require("lib.fixture").server({ sessions = true })
server.init = function(params)
  error("init crashed on purpose")
end
return server
