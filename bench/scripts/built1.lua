-- built1.lua: the echo tool in session mode (/mcp/built1), its one-tool list
-- built inside tools() on every call, the way a script is naturally written
-- (bench/scripts/lib/echo.lua builds it once instead). luamcp reuses the
-- list of a tools() that builds it from constants alone (script-api.md
-- "Lists"), so a tools/call does not pay for it.

return {
  route = { sessions = true },

  init = function(params)
    return { name = "built1", version = "1.0.0" }, { tools = {} }, {}
  end,

  tools = function(state)
    return {
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
  end,

  handle_tool = function(name, args, ctx, state)
    return args.text
  end,
}
