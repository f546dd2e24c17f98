-- init fails for every request (stateless).
local server = require("lib.fixture").server({})
server.init = function(params)
  error("init crashed on purpose")
end
return server
