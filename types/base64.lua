---@meta base64
-- LuaLS stubs for `local base64 = require("base64")`, always available. Decoding accepts text
-- with or without padding, and ignores line breaks and spaces; padding that does not complete
-- the text to a multiple of 4 characters ("Zg=", "Zm9v==") is nil, message.

---@class base64
local base64 = {}

---Standard alphabet, padded (RFC 4648 §4).
---@param data string
---@return string
function base64.encode(data) end

---@param text string
---@return string? data
---@return string? err
function base64.decode(text) end

---URL-safe alphabet, unpadded (RFC 4648 §5, as in JWTs).
---@param data string
---@return string
function base64.url_encode(data) end

---@param text string
---@return string? data
---@return string? err
function base64.url_decode(text) end

return base64
