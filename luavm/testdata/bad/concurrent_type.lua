return { route = { sessions = true, concurrent_tools = "countdown" }, init = function() end, tools = function() end, handle_tool = function() end }
