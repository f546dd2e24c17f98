package main

import "runtime"

// template is one starter `luamcp new --template` writes.
type template struct {
	source  string   // the script; NAME, SCRIPT and FOLDER are replaced (newScript)
	try     string   // the "luamcp call FILE ..." arguments that try it
	folders []string // folders the script is granted, created beside it
}

// templates are the starters by --template name; "" is the default.
var templates = map[string]template{
	"":     {source: starter, try: `greet '{"name":"you"}'`},
	"http": {source: httpStarter, try: `repo_info '{"repo":"golang/go"}'`},
	"fs":   {source: fsStarter, try: `save '{"name":"first","text":"hello"}'`, folders: []string{"data"}},
	"exec": execTemplate(runtime.GOOS),
}

// execTemplate is the exec starter for goos: wc wraps nicely (stdin in,
// output parsed) but is no Windows program, so Windows gets hostname.
func execTemplate(goos string) template {
	if goos == "windows" {
		return template{source: execStarterWindows, try: `machine_name`}
	}
	return template{source: execStarter, try: `word_count '{"text":"one two three"}'`}
}

// httpStarter is a tool that calls an HTTP API.
const httpStarter = `-- NAME: an MCP server that calls an HTTP API, served by luamcp.
--
--   luamcp call SCRIPT repo_info '{"repo":"golang/go"}'
--
-- A script reaches nothing until its route grants it: route.allow.http lists
-- the hosts it may call ("api.example.com", "*.example.com", "host:port").
-- Loopback and private addresses are reachable only when an entry names them
-- literally ("127.0.0.1:9000"). See docs/script-api.md, "Reaching the world".

local http = require("http")

---@type luamcp.Server
return {
  route = { allow = { http = { "api.github.com" } }, validate_arguments = true },

  init = function(params)
    return { name = "NAME", version = "0.1.0" }, { tools = {} }, {}
  end,

  tools = function(state)
    return {
      {
        name = "repo_info",
        description = "Describe a GitHub repository",
        input_schema = {
          type = "object",
          properties = { repo = { type = "string", description = "owner/name, e.g. golang/go" } },
          required = { "repo" },
        },
      },
    }
  end,

  handle_tool = function(name, args, ctx, state)
    if name ~= "repo_info" then
      return nil, "unknown tool " .. name
    end
    if type(args.repo) ~= "string" or not args.repo:match("^[%w._-]+/[%w._-]+$") then
      return nil, "repo must look like owner/name"
    end
    -- http.get returns the response, or nil and a message (refused,
    -- unreachable, timed out, too large). A 404 is a response.
    local res, err = http.get("https://api.github.com/repos/" .. args.repo, {
      headers = { accept = "application/vnd.github+json" },
      timeout_ms = 10000,
    })
    if not res then
      return nil, err
    end
    if res.status ~= 200 then
      return nil, "GitHub answered " .. res.status
    end
    local repo = res.json -- the body, decoded, when it is JSON
    return string.format("%s: %s (%d stars)", repo.full_name, tostring(repo.description), repo.stargazers_count)
  end,
}
`

// fsStarter is a tool that keeps files in a granted folder.
const fsStarter = `-- NAME: an MCP server that keeps files, served by luamcp.
--
--   luamcp call SCRIPT save '{"name":"first","text":"hello"}'
--
-- route.allow.write grants the folder "data" beside this script (created by
-- luamcp new); route.allow.read would grant a folder read-only. fs refuses
-- any path outside the granted folders, "../" and symbolic links included.
-- See docs/script-api.md, "Reaching the world".

local fs = require("fs")

-- path checks a name and returns the file's path inside data/.
local function path(name)
  if type(name) ~= "string" or not name:match("^[%w_-]+$") then
    return nil, "name must be letters, digits, _ and -"
  end
  return "data/" .. name .. ".txt"
end

---@type luamcp.Server
return {
  route = { allow = { write = { "data" } }, validate_arguments = true },

  init = function(params)
    return { name = "NAME", version = "0.1.0" }, { tools = {} }, {}
  end,

  tools = function(state)
    local name = { type = "string", description = "a file name: letters, digits, _ and -" }
    return {
      { name = "save", description = "Save text under a name",
        input_schema = { type = "object", properties = { name = name, text = { type = "string" } }, required = { "name", "text" } } },
      { name = "load", description = "Read the text saved under a name",
        input_schema = { type = "object", properties = { name = name }, required = { "name" } } },
      { name = "list", description = "List the saved names", input_schema = { type = "object" } },
    }
  end,

  -- fs functions return their value, or nil and a message.
  handle_tool = function(name, args, ctx, state)
    if name == "list" then
      local entries, err = fs.list("data")
      if not entries then return nil, err end
      local names = {}
      for _, e in ipairs(entries) do
        names[#names + 1] = (e.name:gsub("%.txt$", ""))
      end
      return table.concat(names, "\n")
    end
    local p, err = path(args.name)
    if not p then return nil, err end
    if name == "save" then
      local ok, werr = fs.write(p, tostring(args.text)) -- atomic: readers see the old or the new text
      if not ok then return nil, werr end
      return "saved " .. args.name
    elseif name == "load" then
      return fs.read(p)
    end
    return nil, "unknown tool " .. name
  end,
}
`

// execStarter is a tool that wraps a command-line program.
const execStarter = `-- NAME: an MCP server that wraps a command-line program, served by luamcp.
--
--   luamcp call SCRIPT word_count '{"text":"one two three"}'
--
-- route.allow.exec names the programs the script may run (looked up on PATH
-- when it loads). exec.run takes the program and its arguments as a list and
-- never goes through a shell: nothing in an argument is interpreted. The
-- child gets a minimal environment and is killed, with its children, when
-- the call times out or the client cancels. See docs/script-api.md,
-- "Reaching the world".

local exec = require("exec")

---@type luamcp.Server
return {
  route = { allow = { exec = { "wc" } }, validate_arguments = true },

  init = function(params)
    return { name = "NAME", version = "0.1.0" }, { tools = {} }, {}
  end,

  tools = function(state)
    return {
      {
        name = "word_count",
        description = "Count the lines, words and bytes of a text",
        input_schema = { type = "object", properties = { text = { type = "string" } }, required = { "text" } },
      },
    }
  end,

  handle_tool = function(name, args, ctx, state)
    if name ~= "word_count" then
      return nil, "unknown tool " .. name
    end
    -- exec.run returns {code=, stdout=, stderr=}, or nil and a message
    -- (refused, timed out, cancelled). A non-zero exit code is a result.
    local r, err = exec.run{ "wc", stdin = tostring(args.text), timeout_ms = 5000 }
    if not r then
      return nil, err
    end
    if r.code ~= 0 then
      return nil, "wc failed: " .. r.stderr
    end
    local lines, words, bytes = r.stdout:match("(%d+)%s+(%d+)%s+(%d+)")
    return string.format("%s lines, %s words, %s bytes", lines, words, bytes)
  end,
}
`

// execStarterWindows is execStarter for Windows, around hostname.exe.
const execStarterWindows = `-- NAME: an MCP server that wraps a command-line program, served by luamcp.
--
--   luamcp call SCRIPT machine_name
--
-- route.allow.exec names the programs the script may run (looked up on PATH
-- when it loads: "hostname" finds hostname.exe). exec.run takes the program
-- and its arguments as a list and never goes through a shell: nothing in an
-- argument is interpreted. The child gets a minimal environment and is
-- killed, with its children, when the call times out or the client cancels.
-- See docs/script-api.md, "Reaching the world".

local exec = require("exec")

---@type luamcp.Server
return {
  route = { allow = { exec = { "hostname" } }, validate_arguments = true },

  init = function(params)
    return { name = "NAME", version = "0.1.0" }, { tools = {} }, {}
  end,

  tools = function(state)
    return {
      { name = "machine_name", description = "The name of the machine the server runs on", input_schema = { type = "object" } },
    }
  end,

  handle_tool = function(name, args, ctx, state)
    if name ~= "machine_name" then
      return nil, "unknown tool " .. name
    end
    -- exec.run returns {code=, stdout=, stderr=}, or nil and a message
    -- (refused, timed out, cancelled). A non-zero exit code is a result.
    local r, err = exec.run{ "hostname", timeout_ms = 5000 }
    if not r then
      return nil, err
    end
    if r.code ~= 0 then
      return nil, "hostname failed: " .. r.stderr
    end
    -- Windows programs end their lines with \r\n: trim them.
    return (r.stdout:gsub("%s+$", ""))
  end,
}
`
