-- A plain module in the script folder: require("lib.util").
local util = {}

function util.greet(name)
  return "hello, " .. name
end

return util
