-- A small memory budget: the route option applies to every state.
return {
  route = { memory_limit_mb = 2, sessions = true },
  init = function() return { name = "budget", version = "1" }, { tools = {} }, { kept = {} } end,
  tools = function() return { { name = "alloc" }, { name = "keep" } } end,
  handle_tool = function(name, args, ctx, state)
    if name == "keep" then
      -- What a session keeps counts until it lets go of it.
      state.kept[#state.kept + 1] = string.rep("k", args.n)
      return tostring(#state.kept)
    end
    return tostring(#string.rep("x", args.n))
  end,
}
