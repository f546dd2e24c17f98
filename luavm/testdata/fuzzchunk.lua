-- FuzzChunk's server: its one tool loads the chunk it is given (base64,
-- so that any bytes reach load) and runs it as the tool's body, under a
-- small budget and a short call timeout. The chunk's results are the tool's
-- results: the first its result, the second and third its failure and the
-- session's new state, as a tool body's would be.
local decode = require("base64").decode
local load, type, find, sub, print, select = load, type, string.find, string.sub, print, select
local rawpcall, rawxpcall, resume = pcall, xpcall, coroutine.resume

-- A Go panic gopher-lua recovered reaches Lua as an error string; the
-- script's own pcall would hide it from the host. Every way Lua catches an
-- error is wrapped to report such a string in the log (FuzzChunk reads it).
local function gopanic(e)
  if type(e) == "string" and (find(e, "runtime error: ", 1, true) or find(e, "interface conversion: ", 1, true)) then
    print("GOPANIC " .. sub(e, 1, 300))
  end
  return e
end
local function checked(ok, ...)
  if not ok then gopanic((...)) end
  return ok, ...
end
pcall = function(...) return checked(rawpcall(...)) end
xpcall = function(f, h, ...)
  if type(h) ~= "function" then return checked(rawxpcall(f, h, ...)) end
  return rawxpcall(f, function(e) return h(gopanic(e)) end, ...)
end
coroutine.resume = function(...) return checked(resume(...)) end

return {
  route = { sessions = true, memory_limit_mb = 4, call_timeout_ms = 100 },
  init = function() return { name = "fuzzchunk", version = "1" }, { tools = {} }, {} end,
  tools = function() return { { name = "run" } } end,
  handle_tool = function(_, args)
    local f, err = load(decode(args.src), "=chunk")
    if not f then return nil, err end
    return f()
  end,
}
