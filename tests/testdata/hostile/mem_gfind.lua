-- string.gfind, gmatch's old alias, collecting every match of a 50 MB subject.
return require("lib.attack")({}, function()
  local found = {}
  for m in string.gfind(string.rep("a", 5e7), ".") do found[#found + 1] = m end
  return tostring(#found)
end)
