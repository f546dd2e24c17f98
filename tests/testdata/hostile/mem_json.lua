-- A table that references itself twice per level: 2^26 leaves for the encoder.
local mcp = require("mcp")
return require("lib.attack")({}, function()
  local t = { "xxxxxxxxxxxxxxxx" }
  for _ = 1, 26 do t = { t, t } end
  return tostring(#mcp.json_encode(t))
end)
