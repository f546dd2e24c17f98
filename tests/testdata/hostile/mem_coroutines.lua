-- A million coroutines, each with stacks of its own.
return require("lib.attack")({}, function()
  local t = {}
  for i = 1, 1e6 do t[i] = coroutine.create(function() end) end
  return tostring(#t)
end)
