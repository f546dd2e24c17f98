---@meta env
-- LuaLS stubs for `local env = require("env")`: the environment variables route.allow.env names.
-- `luamcp serve --env-file FILE` loads KEY=VALUE lines first (the real environment wins).

---@class env
local env = {}

---Returns the variable's value; nil when it is unset; nil and
---"env: NAME is not allowed (route.allow.env)" when route.allow.env does not name it.
---@param name string
---@return string? value
---@return string? err
function env.get(name) end

return env
