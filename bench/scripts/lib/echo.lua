-- lib/echo.lua: the echo server that echo.lua, echo_stateless.lua and
-- churn.lua mount with different route options. It lives in a sub-folder,
-- so luamcp loads it only through require("lib.echo"), never as a server.

-- Build the tool list once: tools() then hands out the same table on every
-- call instead of constructing it again.
local TOOLS = {
  {
    name = "echo",
    description = "Echo the text back",
    input_schema = {
      type = "object",
      properties = { text = { type = "string", description = "the text to echo" } },
      required = { "text" },
    },
  },
}

-- server(route) returns a server module mounted with the given route options.
return function(route)
  return {
    route = route,

    init = function(params)
      -- server_info, capabilities, state
      return { name = "echo", version = "1.0.0" }, { tools = {} }, {}
    end,

    tools = function(state)
      return TOOLS
    end,

    -- luamcp calls this only for a listed tool, so name is "echo". A string
    -- result becomes one text block.
    handle_tool = function(name, args, ctx, state)
      return args.text
    end,
  }
end
