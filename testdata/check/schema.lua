-- Schemas whose keywords read like checks but are none: luamcp check warns,
-- and the script serves.
return {
  route = { validate_arguments = true, validate_results = true },
  init = function() return { name = "schema", version = "1" }, { tools = {} }, {} end,
  tools = function()
    return {
      { name = "forecast", description = "",
        input_schema = { type = "object", require = { "city" },
          properties = { city = { type = "string", nullable = true }, days = { type = "integer", minimun = 1 } } },
        output_schema = { ["$schema"] = "http://json-schema.org/draft-07/schema#", type = "object",
          dependentRequired = { low = { "high" } } } },
    }
  end,
  handle_tool = function() return "" end,
}
