-- both.lua: grants exec and write, which Windows refuses (windows_test.go).
return {
  route = { allow = { exec = { "$TREE_EXE" }, env = { "TREE_EXE" }, write = { "data" } } },
  init = function() return { name = "both", version = "1.0.0" }, { tools = {} }, {} end,
  tools = {},
  handle_tool = function() end,
}
