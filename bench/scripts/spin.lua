-- spin.lua: a tool that keeps a CPU busy (mounted on /mcp/spin, session
-- mode). The spin scenario runs it from many sessions at once to check that
-- they cannot starve the echo route beside them.
local TOOLS = {
  {
    name = "spin",
    description = "Spin for ms milliseconds of CPU time, then answer \"spun\"",
    input_schema = { type = "object", properties = { ms = { type = "integer" } } },
  },
}

return {
  route = { sessions = true },

  init = function(params)
    return { name = "spin", version = "1.0.0" }, { tools = {} }, {}
  end,

  tools = function(state)
    return TOOLS
  end,

  handle_tool = function(name, args, ctx, state)
    -- os.clock is the process's CPU time: with other calls running, the
    -- spin ends sooner than ms of wall time. Enough to hold a CPU.
    local stop = os.clock() + (args.ms or 200) / 1000
    while os.clock() < stop do end
    return "spun"
  end,
}
