-- Misbehaving tools: the VM must stop each of them without harm to the process.
local mcp = require("mcp")

-- Created while the chunk runs, outside any call: resuming it later must
-- still honour the call's cancellation.
local forever = coroutine.create(function()
  while true do end
end)

local function recurse(n)
  return 1 + recurse(n + 1)
end

return {
  -- A small budget: each memory attack fails after 16 MiB instead of 64,
  -- four times sooner (the race detector makes building them slow).
  route = { memory_limit_mb = 16 },

  init = function()
    return { name = "hostile", version = "1" }, { tools = {} }, {}
  end,

  tools = function()
    return { { name = "any" } }
  end,

  handle_tool = function(name, args)
    local kind = args.kind
    if kind == "loop" then
      while true do end
    elseif kind == "pcall_loop" then
      while true do pcall(function() while true do end end) end
    elseif kind == "coroutine_loop" then
      local co = coroutine.wrap(function() while true do end end)
      co()
    elseif kind == "rep" then
      return #string.rep("x", 2 ^ 40)
    elseif kind == "rep_method" then
      return #(("xy"):rep(2 ^ 31))
    elseif kind == "recurse" then
      return recurse(1)
    elseif kind == "alloc" then
      local t = {}
      local i = 0
      while true do
        i = i + 1
        t[i] = string.rep("x", 4096) .. i
      end
    elseif kind == "unpack" then
      return select("#", unpack({}, 1, 1e8))
    elseif kind == "byte" then
      return select("#", string.byte(string.rep("x", 1e7), 1, -1))
    elseif kind == "meta_recursion" then
      local t = setmetatable({}, { __index = function(t, k) return t[k] end })
      return t.x
    elseif kind == "gsub" then
      local s = string.rep("x", 4096)
      return #s:gsub(".", string.rep("y", 65536))
    elseif kind == "gsub_ok" then
      return (("hello world"):gsub("o", "0"))
    elseif kind == "concat" then
      local big = string.rep("x", 2 ^ 20)
      local t = {}
      for i = 1, 100 do t[i] = big end
      return #table.concat(t)
    elseif kind == "format" then
      return string.format("%99999d", 1)
    elseif kind == "concat_double" then
      local s = string.rep("z", 4 * 1024 * 1024 - 1)
      for i = 1, 5 do s = s .. s end
      return #s
    elseif kind == "json_dag" then
      local t = { "xxxxxxxxxxxxxxxx" }
      for i = 1, 26 do t = { t, t } end
      return #mcp.json_encode(t)
    elseif kind == "result_dag" then
      local t = { "xxxxxxxxxxxxxxxx" }
      for i = 1, 26 do t = { t, t } end
      return { content = { { type = "text", text = "x" } }, structured_content = { a = t, b = t } }
    elseif kind == "gfind" then
      for w in string.gfind(string.rep("a", 1e7), "a") do return w end
    elseif kind == "os_date" then
      return os.date(string.rep("%c", 3e7))
    elseif kind == "sparse" then
      local t = {}
      t[67108863] = 1
    elseif kind == "tables" then
      local t = {}
      for i = 1, 1e8 do t[i] = { i } end
    elseif kind == "coroutines" then
      local t = {}
      for i = 1, 1e8 do t[i] = coroutine.create(function() end) end
    elseif kind == "backtrack" then
      return string.find(string.rep("a", 40), string.rep("a*", 40) .. "b")
    elseif kind == "balance" then
      return string.match(string.rep("(", 1e6), "%b()")
    elseif kind == "sort" then
      local t = {}
      for i = 1, 2e5 do t[i] = (i * 7919) % 200003 end
      table.sort(t, function(a, b) return a < b end)
    elseif kind == "load_deep" then
      local fn, err = load(string.rep("do ", 5000) .. string.rep("end ", 5000))
      return nil, err
    elseif kind == "stored_coroutine" then
      return tostring(coroutine.resume(forever))
    elseif kind == "sleep" then
      mcp.sleep(60000)
    end
    return "ok"
  end,
}
