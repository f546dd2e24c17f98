-- files.lua: a notebook the model can search, read and write.
--
-- The notes are plain files in the folder `notes` next to this script. The
-- route grants that folder, writable, and nothing else: fs refuses any path
-- outside it, "../" and symbolic links that lead out included, so a model
-- that asks for "notes/../../.ssh/id_rsa" gets an error, not the file.

local fs = require("fs")
local re = require("re")

local FOLDER = "notes"
local MAX_HITS = 50

-- path turns a note name into its path, or fails. Names are one level deep
-- ("ideas", "2026-12 plans.md"); ".md" is added when there is no extension.
local function path(name)
  if type(name) ~= "string" or not re.test([[^[\w][\w .-]{0,99}$]], name) then
    return nil, "a note name is 1 to 100 letters, digits, spaces, dots, - and _"
  end
  if not re.test([[\.\w+$]], name) then
    name = name .. ".md"
  end
  return FOLDER .. "/" .. name
end

local function list_notes()
  local entries, err = fs.list(FOLDER)
  if not entries then
    return nil, err
  end
  local lines = {}
  for _, e in ipairs(entries) do
    if not e.dir and e.name:sub(1, 1) ~= "." then
      lines[#lines + 1] = string.format("%s  (%d bytes, %s)", e.name, e.size, os.date("!%Y-%m-%d %H:%M", e.modified))
    end
  end
  if #lines == 0 then
    return "No notes yet."
  end
  return table.concat(lines, "\n")
end

-- search_notes returns "name:line: text" for every line that matches query,
-- a regular expression (RE2 syntax, so any pattern runs in linear time).
local function search_notes(query)
  local entries, err = fs.list(FOLDER)
  if not entries then
    return nil, err
  end
  local pattern = "(?i)" .. query
  local ok, perr = re.test(pattern, "")
  if ok == nil then
    return nil, "bad search pattern: " .. perr
  end
  local hits = {}
  for _, e in ipairs(entries) do
    if not e.dir and e.name:sub(1, 1) ~= "." then
      local text = fs.read(FOLDER .. "/" .. e.name, { max_bytes = 1048576 })
      local n = 0
      for line in ((text or "") .. "\n"):gmatch("([^\n]*)\n") do
        n = n + 1
        if re.test(pattern, line) then
          hits[#hits + 1] = string.format("%s:%d: %s", e.name, n, line)
          if #hits == MAX_HITS then
            hits[#hits + 1] = "(more matches not shown)"
            return table.concat(hits, "\n")
          end
        end
      end
    end
  end
  if #hits == 0 then
    return "No match for " .. query
  end
  return table.concat(hits, "\n")
end

local function read_note(name)
  local p, err = path(name)
  if not p then
    return nil, err
  end
  return fs.read(p, { max_bytes = 1048576 })
end

local function write_note(name, text, append)
  local p, err = path(name)
  if not p then
    return nil, err
  end
  local ok, werr
  if append then
    ok, werr = fs.append(p, text)
  else
    ok, werr = fs.write(p, text)
  end
  if not ok then
    return nil, werr
  end
  return string.format("saved %s (%d bytes)", p, fs.stat(p).size)
end

local function schema(properties, required)
  return { type = "object", properties = properties, required = required }
end

---@type luamcp.Server
return {
  route = { allow = { write = { FOLDER } } },

  init = function(params)
    return { name = "files", version = "1.0.0",
      instructions = "Notes live in files; search before you write, and append rather than overwrite." },
      { tools = {} }, {}
  end,

  tools = function(state)
    local name = { type = "string", description = "note name, e.g. ideas or plans.md" }
    return {
      { name = "list_notes", description = "List the notes with their size and last change",
        input_schema = schema({}), annotations = { readOnlyHint = true } },
      { name = "search_notes", description = "Find the lines of every note that match a regular expression (case-insensitive)",
        input_schema = schema({ query = { type = "string", description = "RE2 regular expression, e.g. deadline|due" } }, { "query" }),
        annotations = { readOnlyHint = true } },
      { name = "read_note", description = "Read one note",
        input_schema = schema({ name = name }, { "name" }), annotations = { readOnlyHint = true } },
      { name = "write_note", description = "Create or replace a note, or append to it",
        input_schema = schema({ name = name, text = { type = "string" },
          append = { type = "boolean", description = "add to the end instead of replacing" } }, { "name", "text" }),
        annotations = { destructiveHint = true } },
    }
  end,

  handle_tool = function(name, args, ctx, state)
    if name == "list_notes" then
      return list_notes()
    elseif name == "search_notes" then
      if type(args.query) ~= "string" or args.query == "" then
        return nil, "query must be a non-empty string"
      end
      return search_notes(args.query)
    elseif name == "read_note" then
      return read_note(args.name)
    elseif name == "write_note" then
      if type(args.text) ~= "string" then
        return nil, "text must be a string"
      end
      return write_note(args.name, args.text, args.append == true)
    end
    return nil, "unknown tool " .. name
  end,
}
