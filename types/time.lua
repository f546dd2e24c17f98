---@meta time
-- LuaLS stubs for `local time = require("time")`, always available. Times are Unix seconds;
-- layouts are Go's (https://pkg.go.dev/time#pkg-constants), or one of the names RFC3339,
-- RFC3339Nano, RFC1123, RFC1123Z, RFC822, RFC822Z, RFC850, ANSIC, UnixDate, Kitchen, DateTime,
-- DateOnly, TimeOnly, and HTTP (the date of HTTP headers: "Tue, 02 Jan 2024 03:04:05 GMT").

---@class time
local time = {}

---Unix seconds, with a fraction.
---@return number
function time.now() end

---Unix milliseconds.
---@return integer
function time.ms() end

---Formats a time in UTC (default layout RFC 3339: "2026-12-03T09:34:00Z"). RFC 3339 holds the
---years 0 to 9999: a time outside them raises with that layout.
---@param t number Unix seconds
---@param layout string?
---@return string
function time.format(t, layout) end

---Parses a time (default layout RFC 3339; a text without a zone is UTC). A zone abbreviation
---other than UTC or GMT ("PST") without a numeric offset beside it is nil, message.
---@param text string
---@param layout string?
---@return number? seconds an integer when the time has no fraction
---@return string? err
function time.parse(text, layout) end

return time
