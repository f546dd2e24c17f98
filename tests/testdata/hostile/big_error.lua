-- A 25 MB error message: it must reach the log once, and cut. (error()
-- copies it behind its position, as Lua does: the string and its copy fit
-- the default 64 MiB budget; a 60 MB one would be "memory limit exceeded".)
return require("lib.attack")({}, function()
  error(string.rep("x", 2.5e7))
end)
