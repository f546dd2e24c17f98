---@meta exec
-- LuaLS stubs for `local exec = require("exec")`: the programs route.allow.exec names, run
-- without a shell, in their own process group (a job object on Windows), killed with their
-- children when the call times out or is cancelled.

---@class exec.Command
---@field [integer] string the program, then its arguments
---@field cwd string? working folder, inside a read or write root (default: the scripts folder)
---@field stdin string? given to the program's standard input
---@field timeout_ms integer? default 30000
---@field max_bytes integer? bytes kept of stdout and of stderr each, default 1048576 (1 MiB)
---@field env table<string, string>? added to the minimal environment (PATH, HOME, LANG); variables that make a program load other code (LD_*, HOME, OPENSSL_CONF, BASH_ENV, PYTHONPATH, ...) are refused

---@class exec.Result
---@field code integer the exit code (128 + the signal when a signal ended it)
---@field stdout string
---@field stderr string
---@field truncated true? set when output past max_bytes was cut

---@class exec
local exec = {}

---Runs a program. A non-zero exit code is a result, not a failure.
---@param cmd exec.Command
---@return exec.Result? result
---@return string? err e.g. "exec: ls is not allowed (route.allow.exec)", "exec: git timed out after 10000 ms"
function exec.run(cmd) end

return exec
