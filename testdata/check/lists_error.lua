return {
  init = function() return { name = "l", version = "1" }, { tools = {}, resources = {}, prompts = {} }, {} end,
  tools = function() error("no tools today") end,
  handle_tool = function() end,
  resources = function(state) return state.missing.uris end,
  read_resource = function() end,
  prompts = function() return "not a list" end,
  get_prompt = function() end,
}
