-- A pattern that backtracks exponentially: 40 nested a* against 40 a's.
return require("lib.attack")({ call_timeout_ms = 500 }, function()
  return tostring(string.find(string.rep("a", 40), string.rep("a*", 40) .. "b"))
end)
