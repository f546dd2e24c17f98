return { route = { sessions = true, concurrent_tools = { "ok", "not a name" } }, init = function() end, tools = function() end, handle_tool = function() end }
