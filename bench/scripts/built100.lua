-- built100.lua: the echo tool in session mode (/mcp/built100), the last of
-- 100 tools whose list is built inside tools() on every call (tool1..tool99
-- echo too). With the list rebuilt for each tools/call, a call would cost
-- 100 descriptors; luamcp reuses the list of a tools() that builds it from
-- constants alone, so it should cost what built1.lua's call costs.

return {
  route = { sessions = true },

  init = function(params)
    return { name = "built100", version = "1.0.0" }, { tools = {} }, {}
  end,

  tools = function(state)
    local tools = {}
    for i = 1, 99 do
      tools[i] = {
        name = "tool" .. i,
        description = "Tool number " .. i,
        input_schema = { type = "object", properties = { text = { type = "string" } } },
      }
    end
    tools[100] = {
      name = "echo",
      description = "Echo the text back",
      input_schema = {
        type = "object",
        properties = { text = { type = "string", description = "the text to echo" } },
        required = { "text" },
      },
    }
    return tools
  end,

  handle_tool = function(name, args, ctx, state)
    return args.text
  end,
}
