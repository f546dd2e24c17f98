-- files.lua: fs with Windows paths, for the Windows test (windows_test.go).
local fs = require("fs")

return {
  route = { allow = { write = { "data" } } },

  init = function() return { name = "files", version = "1.0.0" }, { tools = {} }, {} end,

  tools = { { name = "files", description = "write, read and list in data", input_schema = { type = "object" } } },

  handle_tool = function()
    -- Either separator works; nothing outside the granted folder does.
    local out = {}
    local function try(label, v, err) out[#out + 1] = label .. "=" .. tostring(v or err) end
    fs.write("data/a.txt", "first")
    try("write", fs.write("data/a.txt", "alpha")) -- replaces the file
    try("read", fs.read("data\\a.txt"))
    try("case", fs.read("DATA\\A.TXT"))
    local list = fs.list("data")
    try("list", list and list[1].name)
    try("escape", fs.read("data\\..\\..\\files.lua"))
    try("drive", fs.read("C:\\windows\\win.ini"))
    try("stream", fs.read("data\\a.txt:hidden"))
    try("device", fs.write("data\\CON", "x"))
    try("unc", fs.read("\\\\server\\share\\a.txt"))
    try("list file", fs.list("data/a.txt"))
    return { content = { { type = "text", text = table.concat(out, "; ") } } }
  end,
}
