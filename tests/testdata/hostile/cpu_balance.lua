-- %b() over a million unmatched parentheses: quadratic in the matcher.
return require("lib.attack")({ call_timeout_ms = 500 }, function()
  return tostring(string.match(string.rep("(", 1e6), "%b()"))
end)
