-- git.lua: read a git repository's history: log, diff and blame.
--
-- exec runs git with an argument list, never through a shell, so nothing in
-- a path or a revision is interpreted by one. The arguments still reach git,
-- which has options that write files (git diff --output=...): every value
-- from the model is checked, revisions may not start with "-", and paths
-- come after "--", where git reads no option.
--
-- The repository is GIT_REPO when it is set (the "$GIT_REPO" entry grants it
-- as a folder), else the scripts folder (whatever repository holds it):
--
--   GIT_REPO=$HOME/src/project luamcp serve --dir examples

local exec = require("exec")
local env = require("env")
local re = require("re")

local MAX_OUTPUT = 256 * 1024

-- git runs one git command in the repository; its output, or nil, message.
local function git(args)
  local spec = { "git", "-c", "core.pager=cat", "-c", "color.ui=false", cwd = env.get("GIT_REPO"),
    timeout_ms = 15000, max_bytes = MAX_OUTPUT, env = { GIT_TERMINAL_PROMPT = "0" } }
  for _, a in ipairs(args) do
    spec[#spec + 1] = a
  end
  local r, err = exec.run(spec)
  if not r then
    return nil, err
  end
  if r.code ~= 0 then
    return nil, "git " .. args[1] .. " failed: " .. (r.stderr ~= "" and r.stderr or ("exit code " .. r.code))
  end
  local out = r.stdout
  if r.truncated then
    out = out .. "\n(output cut at " .. MAX_OUTPUT .. " bytes)"
  end
  return out ~= "" and out or "(nothing)"
end

-- checkRev accepts revisions and ranges (HEAD~3, v1.2..main, a1b2c3d) and
-- refuses anything git could read as an option.
local function checkRev(rev)
  if rev == nil then
    return true
  end
  if type(rev) ~= "string" or not re.test([[^[\w./~^@{}:+][\w./~^@{}:+-]{0,199}$]], rev) then
    return nil, "a revision is letters, digits and . / ~ ^ @ { } : + - (not starting with -)"
  end
  return true
end

local function checkPath(path)
  if path ~= nil and (type(path) ~= "string" or path == "" or #path > 1024) then
    return nil, "path must be a non-empty string"
  end
  return true
end

local tools = {}

function tools.git_log(args)
  local n = args.n or 10
  if type(n) ~= "number" or n < 1 or n > 200 or n ~= math.floor(n) then
    return nil, "n must be an integer from 1 to 200"
  end
  local ok, err = checkPath(args.path)
  if not ok then return nil, err end
  local cmd = { "log", "-n", tostring(n), "--date=short", "--pretty=format:%h  %ad  %an  %s" }
  if args.path then
    cmd[#cmd + 1] = "--"
    cmd[#cmd + 1] = args.path
  end
  return git(cmd)
end

function tools.git_diff(args)
  local ok, err = checkRev(args.rev)
  if not ok then return nil, err end
  ok, err = checkPath(args.path)
  if not ok then return nil, err end
  local cmd = { "diff", "--no-ext-diff" }
  if args.rev then cmd[#cmd + 1] = args.rev end
  cmd[#cmd + 1] = "--"
  if args.path then cmd[#cmd + 1] = args.path end
  return git(cmd)
end

function tools.git_blame(args)
  local ok, err = checkPath(args.path)
  if not ok or args.path == nil then return nil, err or "path is required" end
  local cmd = { "blame", "--date=short" }
  if args.start_line then
    local from, to = args.start_line, args.end_line or args.start_line + 40
    if type(from) ~= "number" or type(to) ~= "number" or from < 1 or to < from then
      return nil, "start_line and end_line must be line numbers, start_line <= end_line"
    end
    cmd[#cmd + 1] = string.format("-L%d,%d", from, to)
  end
  cmd[#cmd + 1] = "--"
  cmd[#cmd + 1] = args.path
  return git(cmd)
end

---@type luamcp.Server
return {
  route = { allow = { exec = { "git" }, read = { "$GIT_REPO" }, env = { "GIT_REPO" } } },

  init = function(params)
    return { name = "git", version = "1.0.0" }, { tools = {} }, {}
  end,

  tools = function(state)
    local path = { type = "string", description = "a file or folder of the repository" }
    return {
      { name = "git_log", description = "Recent commits (hash, date, author, subject), optionally of one path",
        input_schema = { type = "object", properties = { n = { type = "integer", minimum = 1, maximum = 200 }, path = path } },
        annotations = { readOnlyHint = true } },
      { name = "git_diff", description = "Uncommitted changes, or the changes since a revision or in a range (a..b)",
        input_schema = { type = "object", properties = { rev = { type = "string" }, path = path } },
        annotations = { readOnlyHint = true } },
      { name = "git_blame", description = "Who last changed each line of a file",
        input_schema = { type = "object", properties = { path = path, start_line = { type = "integer" }, end_line = { type = "integer" } },
          required = { "path" } },
        annotations = { readOnlyHint = true } },
    }
  end,

  handle_tool = function(name, args, ctx, state)
    local tool = tools[name]
    if not tool then
      return nil, "unknown tool " .. name
    end
    return tool(args)
  end,
}
