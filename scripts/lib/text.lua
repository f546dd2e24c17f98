-- lib/text.lua: a plain Lua module shared by the bundled servers.
--
-- Files in sub-folders of the scripts folder are not mounted as servers.
-- A script loads this one with require("lib.text"): dots in the name are
-- folder separators, and the search starts at the scripts folder.

local text = {}

-- trim removes leading and trailing white space.
function text.trim(s)
  return (s:match("^%s*(.-)%s*$"))
end

-- excerpt shortens s to at most n characters, ending with "..." when cut.
function text.excerpt(s, n)
  if #s <= n then
    return s
  end
  return s:sub(1, n - 3) .. "..."
end

-- starts_with reports whether s begins with prefix (plain text, no patterns).
function text.starts_with(s, prefix)
  return s:sub(1, #prefix) == prefix
end

return text
