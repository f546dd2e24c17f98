-- os.date expands each %c to a whole date: 30 million of them.
return require("lib.attack")({}, function()
  return tostring(#os.date(string.rep("%c", 3e7)))
end)
