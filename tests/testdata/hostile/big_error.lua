-- A 60 MB error message: it must reach the log once, and cut.
return require("lib.attack")({}, function()
  error(string.rep("x", 6e7))
end)
