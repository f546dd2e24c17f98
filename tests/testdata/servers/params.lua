-- A tool whose arguments travel in headers too (x-mcp-header, 2026-07-28):
-- clients send Mcp-Param-Region and Mcp-Param-Count beside the body, and the
-- transport checks that they agree.
return {
  init = function(params)
    return { name = "params", version = "1.0.0" }, { tools = {} }, {}
  end,
  tools = function(state)
    return {
      {
        name = "where",
        description = "Echo the region and the count",
        input_schema = {
          type = "object",
          properties = {
            region = { type = "string", ["x-mcp-header"] = "Region" },
            count = { type = "integer", ["x-mcp-header"] = "Count" },
          },
        },
      },
    }
  end,
  handle_tool = function(name, args, ctx, state)
    return tostring(args.region) .. " " .. tostring(args.count)
  end,
}
