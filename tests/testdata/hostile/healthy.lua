-- The healthy neighbour every attack is served beside: a stateless echo.
return {
  init = function()
    return { name = "healthy", version = "1.0.0" }, { tools = {} }, {}
  end,
  tools = function()
    return { { name = "ping", input_schema = { type = "object" } } }
  end,
  handle_tool = function()
    return "pong"
  end,
}
