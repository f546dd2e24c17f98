---@meta url
-- LuaLS stubs for `local url = require("url")`, always available.

---@class url.Parts
---@field scheme string?
---@field host string? without brackets or port
---@field port integer?
---@field path string? decoded
---@field raw_path string? the path as written, only when url.build would escape path otherwise ("/a%2Fb"); used while it still decodes to path
---@field query table<string, string|string[]>? a repeated key maps to the list of its values
---@field raw_query string? the query as written (url.build uses it when query is absent, or holds the same parameters)
---@field fragment string?
---@field user string?
---@field password string?

---@class url
local url = {}

---Query escaping: spaces become +.
---@param s string
---@return string
function url.encode(s) end

---@param s string
---@return string? decoded
---@return string? err
function url.decode(s) end

---@param u string
---@return url.Parts? parts
---@return string? err
function url.parse(u) end

---The inverse of url.parse; query may be a table (encoded as url.query does) or a string. A
---scheme that is not one (RFC 3986: a letter, then letters, digits, +, -, .) raises.
---@param parts url.Parts|{query: table|string?}
---@return string
function url.build(parts) end

---Encodes a table as a query string, keys sorted: url.query{ b = 2, a = 1 } is "a=1&b=2"; a list
---value repeats its key.
---@param params table<string, string|number|boolean|(string|number|boolean)[]>
---@return string
function url.query(params) end

return url
