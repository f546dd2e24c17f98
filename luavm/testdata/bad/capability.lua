-- Loads, but advertises resources without read_resource: Describe and Init refuse it.
return {
  init = function() return { name = "m", version = "1" }, { tools = {}, resources = {} }, {} end,
  tools = function() return {} end,
  handle_tool = function() end,
  resources = function() return {} end,
}
