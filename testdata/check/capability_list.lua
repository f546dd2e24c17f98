return {
  init = function() return { name = "c", version = "1" }, { tools = {}, prompts = {} }, {} end,
  tools = {},
  handle_tool = function() end,
  get_prompt = function() return { messages = {} } end,
}
