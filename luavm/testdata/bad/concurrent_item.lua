return { route = { sessions = true, concurrent_tools = { "ok", 7 } }, init = function() end, tools = function() end, handle_tool = function() end }
