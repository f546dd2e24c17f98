return {
  init = function(params)
    return { name = params.clientInfo.name, version = "1" }, {}, {}
  end,
  tools = function() return {} end,
  handle_tool = function() end,
}
