-- Advertises tools only: every other feature is "Method not found".
local server = require("lib.fixture").server({})
server.init = function(params)
  return { name = "nocaps", version = "1.0.0" }, { tools = {} }, { count = 0, reads = 0, prompts = 0 }
end
return server
