return {
  init = function() return { name = "u", version = "1" }, { tools = {}, resources = {} }, {} end,
  tools = function() return {} end,
  handle_tool = function() end,
  resources = function() return { { uri = "note://a", name = "a" }, { uri = "note://b" } } end,
  resource_templates = function() return { { uri_template = "note://{id}" } } end,
  read_resource = function() return "" end,
}
