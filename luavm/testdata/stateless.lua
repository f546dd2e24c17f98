-- A stateless server: every request runs init({}) on a borrowed state.
return {
  init = function(params)
    local n = 0
    for _ in pairs(params) do n = n + 1 end
    return { name = "stateless", version = "0.1.0" }, { tools = {} }, { params = n, hits = 0 }
  end,

  tools = function(state)
    return { { name = "hit", description = "Count hits", input_schema = { type = "object" } } }
  end,

  handle_tool = function(name, args, ctx, state)
    state.hits = state.hits + 1
    if args.crash then
      error("crashed")
    end
    return string.format("params=%d hits=%d", state.params, state.hits)
  end,
}
