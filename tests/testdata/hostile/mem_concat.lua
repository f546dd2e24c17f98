-- Doubling a 64 MiB string: the fifth doubling would be one 2 GiB allocation.
return require("lib.attack")({}, function()
  local s = string.rep("z", 64 * 1024 * 1024 - 1)
  for _ = 1, 5 do s = s .. s end
  return tostring(#s)
end)
