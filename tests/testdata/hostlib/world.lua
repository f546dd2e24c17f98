-- The host library end to end: one tool per module function under test.
-- The test replaces {{API}} with the fake API's 127.0.0.1:port, and creates
-- data/ (read-only), out/ (writable) and secret/ (granted to nobody).
local http, fs, env, exec = require("http"), require("fs"), require("env"), require("exec")
local json, base64, crypto, time, re, url = require("json"), require("base64"), require("crypto"), require("time"), require("re"), require("url")

local API = "http://{{API}}"

local tools = {}

function tools.http_get(a)
  local r, err = http.get(API .. a.path, { max_bytes = a.max_bytes, timeout_ms = a.timeout_ms })
  if not r then return nil, err end
  return r.status .. " " .. (r.json and json.encode(r.json) or r.body)
end

function tools.http_url(a)
  local r, err = http.get(a.url)
  if not r then return nil, err end
  return r.status .. " " .. r.body
end

function tools.http_post(a)
  local r, err = http.post(API .. "/echo", a.body)
  if not r then return nil, err end
  return r.json.method .. " " .. r.json.ct .. " " .. r.json.body
end

function tools.request_all(a)
  local reqs = {}
  for i = 1, a.n do reqs[i] = { url = API .. "/count?i=" .. i } end
  local bodies = {}
  for i, pair in ipairs(http.request_all(reqs)) do
    if not pair[1] then return nil, pair[2] end
    bodies[i] = pair[1].body
  end
  return table.concat(bodies, ",")
end

function tools.fs_read(a) return fs.read(a.path) end

function tools.fs_write(a)
  local ok, err = fs.write(a.path, a.data)
  if not ok then return nil, err end
  local names = {}
  for _, e in ipairs(fs.list("out")) do names[#names + 1] = e.name end
  return fs.read(a.path) .. " in " .. table.concat(names, ",")
end

function tools.env_get(a)
  local v, err = env.get(a.name)
  if err then return nil, err end
  return tostring(v)
end

function tools.exec_run(a)
  local spec = { cwd = a.cwd, timeout_ms = a.timeout_ms, stdin = a.stdin }
  for i, v in ipairs(a.args) do spec[i] = v end
  local r, err = exec.run(spec)
  if not r then return nil, err end
  return r.code .. ":" .. r.stdout
end

function tools.pure()
  local parts = {
    json.encode({ a = json.array({}), b = json.null }),
    base64.encode("luamcp"),
    crypto.sha256("abc"):sub(1, 8),
    time.format(0),
    table.concat(re.find_all("\\d+", "a1b22c333"), "+"),
    url.build({ scheme = "https", host = "example.com", path = "/s", query = { q = "a b" } }),
  }
  return table.concat(parts, " | ")
end

---@type luamcp.Server
return {
  route = {
    sessions = true, -- a client's notifications/cancelled reaches the call
    allow = {
      http = { "{{API}}" },
      read = { "data" },
      write = { "out" },
      env = { "LUAMCP_E2E_VALUE" },
      exec = { "sh" },
    },
  },

  init = function()
    return { name = "world", version = "1.0.0" }, { tools = {} }, {}
  end,

  tools = function()
    local list = {}
    for name in pairs(tools) do
      list[#list + 1] = { name = name, description = name, input_schema = { type = "object" } }
    end
    table.sort(list, function(x, y) return x.name < y.name end)
    return list
  end,

  handle_tool = function(name, args)
    return tools[name](args)
  end,
}
