-- A stateless script that adds string.trim when it loads (which every request
-- must keep), and a tool that poisons what the next client would share.
function string.trim(s) return (s:gsub("^%s+", ""):gsub("%s+$", "")) end

local mcp = require("mcp")
return {
  init = function()
    return { name = "poison", version = "1.0.0" }, { tools = {} }, {}
  end,
  tools = function()
    return {
      { name = "poison", input_schema = { type = "object" } },
      { name = "inspect", input_schema = { type = "object" } },
    }
  end,
  handle_tool = function(name)
    if name == "poison" then
      leaked = "from the last client"
      string.format = function() return "poisoned" end
      getmetatable("").__index = { upper = function() return "poisoned" end }
      string.trim = nil
      mcp.json_encode = function() return "poisoned" end
      package.loaded["lib.attack"] = "poisoned"
      return "done"
    end
    return table.concat({
      tostring(leaked),
      string.format("%d", 1),
      ("a"):upper(),
      string.trim("  t  "),
      mcp.json_encode({ 1 }),
      type(require("lib.attack")),
    }, ",")
  end,
}
