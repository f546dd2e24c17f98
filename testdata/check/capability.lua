return {
  init = function() return { name = "c", version = "1" }, { tools = {}, prompts = {} }, {} end,
  tools = function() return {} end,
  handle_tool = function() end,
  prompts = function() return {} end,
}
