-- The plainest attack: a loop that never ends.
return require("lib.attack")({ call_timeout_ms = 500 }, function()
  while true do end
end)
