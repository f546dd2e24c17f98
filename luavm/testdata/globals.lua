-- Counts init calls in a global: a fresh state starts again from zero.
INITS = 0

return {
  init = function()
    INITS = INITS + 1
    return { name = "globals", version = "1" }, { tools = {} }, { inits = INITS }
  end,
  tools = function() return { { name = "inits" } } end,
  handle_tool = function(name, args, ctx, state)
    return tostring(state.inits)
  end,
}
