---@meta json
-- LuaLS stubs for `local json = require("json")`, always available: JSON with the rules of
-- mcp.json_encode/json_decode (objects and arrays are tables, null is json.null), failing with
-- nil, message instead of raising.

---@class json
---@field null mcp.Null JSON null (the same value as mcp.null)
local json = {}

---@param value any
---@param opts {indent: boolean?}?
---@return string? text
---@return string? err e.g. "json: value.f: cannot encode a function"
function json.encode(value, opts) end

---@param text string
---@return any value
---@return string? err e.g. "json: invalid JSON at byte 1: ..."
function json.decode(text) end

---Marks t (or a new table) to encode as an array, even when empty.
---@param t table?
---@return table
function json.array(t) end

---Marks t (or a new table) to encode as an object, even when empty.
---@param t table?
---@return table
function json.object(t) end

return json
