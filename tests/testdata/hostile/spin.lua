-- Every session spins until its call times out.
return require("lib.attack")({ sessions = true, call_timeout_ms = 3000 }, function()
  while true do end
end)
