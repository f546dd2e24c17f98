---@meta crypto
-- LuaLS stubs for `local crypto = require("crypto")`, always available: digests and HMACs as
-- lower-case hex (crypto.raw: the same, as bytes), and random values from the operating system.

---@class crypto.raw
local raw = {}
---@param s string
---@return string bytes
function raw.sha256(s) end
---@param s string
---@return string bytes
function raw.sha512(s) end
---@param s string
---@return string bytes
function raw.sha1(s) end
---@param s string
---@return string bytes
function raw.md5(s) end
---@param key string
---@param msg string
---@return string bytes
function raw.hmac_sha256(key, msg) end
---@param key string
---@param msg string
---@return string bytes
function raw.hmac_sha512(key, msg) end
---@param key string
---@param msg string
---@return string bytes
function raw.hmac_sha1(key, msg) end
---@param key string
---@param msg string
---@return string bytes
function raw.hmac_md5(key, msg) end

---@class crypto
---@field raw crypto.raw
local crypto = {}

---@param s string
---@return string hex
function crypto.sha256(s) end

---@param s string
---@return string hex
function crypto.sha512(s) end

---For protocols that still use it (legacy signatures), not for security.
---@param s string
---@return string hex
function crypto.sha1(s) end

---For checksums and ETags, not for security.
---@param s string
---@return string hex
function crypto.md5(s) end

---@param key string
---@param msg string
---@return string hex
function crypto.hmac_sha256(key, msg) end

---@param key string
---@param msg string
---@return string hex
function crypto.hmac_sha512(key, msg) end

---@param key string
---@param msg string
---@return string hex
function crypto.hmac_sha1(key, msg) end

---@param key string
---@param msg string
---@return string hex
function crypto.hmac_md5(key, msg) end

---@param n integer 0 to 1048576
---@return string bytes
function crypto.random_bytes(n) end

---n random bytes as 2n hex digits.
---@param n integer 0 to 1048576
---@return string hex
function crypto.random_hex(n) end

---A random (version 4) UUID, e.g. "0b5e7c9a-3f2d-4e8b-9a1c-5d6e7f8a9b0c".
---@return string
function crypto.uuid() end

return crypto
