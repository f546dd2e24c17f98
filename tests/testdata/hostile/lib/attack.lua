-- The shape every attack script shares: one tool, "attack", whose body is
-- the attack. attack(route, run) returns the server module; run(args, ctx)
-- is the tool's body.
return function(route, run)
  return {
    route = route,
    init = function()
      return { name = "attack", version = "1.0.0" }, { tools = {} }, {}
    end,
    tools = function()
      return { { name = "attack", input_schema = { type = "object" } } }
    end,
    handle_tool = function(_, args, ctx)
      return run(args, ctx)
    end,
  }
end
