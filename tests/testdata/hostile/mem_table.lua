-- A table that grows without end.
return require("lib.attack")({}, function()
  local t = {}
  for i = 1, 1e9 do t[i] = i end
  return tostring(#t)
end)
