-- win.lua: a script the Windows test (windows_test.go) serves with
-- luamcp.exe under Wine. Paths arrive in the environment, Windows-style.
local exec = require("exec")
local env = require("env")

local M = {}

function M.init()
  return { name = "win", version = "1.0.0" }, { tools = {} }, { n = 0 }
end

M.tools = {
  { name = "count", description = "count this session's calls", input_schema = { type = "object" } },
  { name = "tree", description = "run tree.exe until the call times out", input_schema = { type = "object" } },
  { name = "path", description = "set PATH for a program", input_schema = { type = "object" } },
  { name = "hang", description = "run tree.exe for a minute", input_schema = { type = "object" } },
}

local function text(s) return { content = { { type = "text", text = s } } } end

function M.handle_tool(name, _, _, state)
  if name == "count" then
    state.n = state.n + 1
    return text(tostring(state.n)), state
  elseif name == "tree" or name == "hang" then
    -- tree.exe starts a child of its own; both must die when the call ends.
    -- (5 s: two programs start under Wine first, slowly on a loaded machine.)
    local timeout = name == "tree" and 5000 or 60000
    local r, err = exec.run({ env.get("TREE_EXE"), "parent", env.get("TREE_BEAT"), timeout_ms = timeout })
    return text(err or ("exited " .. r.code)), state
  end
  -- Where a program finds programs and DLLs is not the script's to choose,
  -- however the name is written (Windows ignores case).
  local _, err = exec.run({ env.get("TREE_EXE"), "parent", "x", env = { Path = "C:\\" } })
  return text(err), state
end

M.route = { sessions = true, allow = { exec = { "$TREE_EXE" }, env = { "TREE_EXE", "TREE_BEAT" } } }

return M
