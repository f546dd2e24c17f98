local long = string.rep("x", 129)
return {
  init = function() return { name = "t", version = "1" }, { tools = {} }, {} end,
  tools = function()
    return {
      { name = "bad name", description = "", input_schema = { type = "object" } },
      { name = long, description = "", input_schema = { type = "object" } },
      { name = "twice", description = "", input_schema = { type = "object" } },
      { name = "twice", description = "", input_schema = { type = "object" } },
      { name = "stringly", description = "", input_schema = { type = "string" } },
      { name = "schemaless", description = "" },
      { name = "tasky", description = "", input_schema = { type = "object" }, execution = { taskSupport = "optinal" } },
      { name = "execution", description = "", input_schema = { type = "object" }, execution = "optional" },
      { name = "out_empty", description = "", input_schema = { type = "object" }, output_schema = {} },
      { name = "out_array", description = "", input_schema = { type = "object" }, output_schema = { type = "array" } },
      { name = "out_ok", description = "", input_schema = { type = "object" }, outputSchema = { type = "object", properties = {} } },
    }
  end,
  handle_tool = function() end,
}
