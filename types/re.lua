---@meta re
-- LuaLS stubs for `local re = require("re")`, always available: regular expressions in Go's
-- RE2 syntax (https://pkg.go.dev/regexp/syntax), linear in time on any input. Write patterns in
-- long strings ([[\d+]]) to keep the backslashes. A pattern that does not compile (or is over
-- 16 KiB), or a subject over 16 MiB, is nil, message. Compiled patterns are cached. Time is linear
-- in the subject times up to the pattern's size; a long search ends with its call's deadline.

---@class re
local re = {}

---The captures of the first match, or the whole match when the pattern has no group; nil when
---it does not match. An unmatched group is "".
---@param pattern string
---@param s string
---@return string|nil ...
function re.match(pattern, s) end

---The first n matches (all by default, at most 100000): each the whole match when the pattern
---has no group, else the list of its captures. The list is marked as an array (empty: []).
---@param pattern string
---@param s string
---@param n integer?
---@return (string|string[])[]? matches
---@return string? err
function re.find_all(pattern, s, n) end

---Replaces every match; in repl, $1 or ${1} (and ${name}) stand for a capture, $$ for $.
---@param pattern string
---@param s string
---@param repl string
---@return string? result
---@return string? err
function re.replace(pattern, s, repl) end

---The pieces of s between matches; with n, at most n pieces (the last holds the rest). The list
---is marked as an array (empty: []).
---@param pattern string
---@param s string
---@param n integer?
---@return string[]? pieces
---@return string? err
function re.split(pattern, s, n) end

---@param pattern string
---@param s string
---@return boolean? matches
---@return string? err
function re.test(pattern, s) end

return re
