-- The smallest useful server: one tool that echoes its text. Used by the
-- benchmarks; `size` entries of state make the rollback backup's cost visible.
-- Built once, in a module-level table: tools() reads an upvalue, so it is
-- not a constant function and, without reuse_lists = true, runs on every
-- tools/call (to check the name); handing out the same table costs nothing.
local TOOLS = {
  {
    name = "echo", description = "Echo the text back",
    input_schema = { type = "object", properties = { text = { type = "string" } }, required = { "text" } },
  },
}

return {
  init = function(params)
    local state = { count = 0, items = {} }
    for i = 1, tonumber(params.size) or 0 do
      state.items["k" .. i] = { id = i, name = "item " .. i }
    end
    return { name = "echo", version = "1.0.0" }, { tools = {} }, state
  end,

  tools = function(state)
    return TOOLS
  end,

  handle_tool = function(name, args, ctx, state)
    state.count = state.count + 1
    return args.text
  end,
}
