return {
  init = function() return { name = "good", version = "1" }, { tools = {} }, {} end,
  tools = function() return { { name = "ok.tool-1", description = "", input_schema = { type = "object" } } } end,
  handle_tool = function() return "" end,
}
