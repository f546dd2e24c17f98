# Shared by cross.sh and duel.sh (sourced, not run): the MCP handshake and
# the wrk script both send.

accept='Accept: application/json, text/event-stream'
ctype='Content-Type: application/json'
init='{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"wrk","version":"1"}}}'

# session URL: opens a session (initialize, then initialized) and prints its id.
session() {
  local sid
  sid=$(curl -s -D - -o /dev/null -H "$accept" -H "$ctype" -d "$init" "$1" | tr -d '\r' | sed -n 's/^[Mm]cp-[Ss]ession-[Ii]d: //p')
  curl -s -o /dev/null -H "$accept" -H "$ctype" -H "Mcp-Session-Id: $sid" -H "MCP-Protocol-Version: 2025-11-25" \
    -d '{"jsonrpc":"2.0","method":"notifications/initialized"}' "$1"
  echo "$sid"
}

# sessions_table URL: prints a Lua table sids of 16 sessions opened at URL,
# one for each wrk thread.
sessions_table() {
  echo 'local sids = {'
  for _ in $(seq 16); do echo "\"$(session "$1")\","; done
  echo '}'
}

# wrk_script FILE URL MODE: writes a wrk script for 16 connections, one wrk
# thread each, calling the echo tool at URL; in MODE session each thread has
# a session of its own, as the harness's clients do.
wrk_script() {
  {
    if [ "$3" = session ]; then sessions_table "$2"; else echo 'local sids = {}'; fi
    cat <<'LUA'
local n = 0
function setup(thread)
  n = n + 1
  thread:set("sid", sids[n])
end
local body = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}}'
-- Each thread formats its request once: formatting it for every request
-- (wrk.format in request()) cost wrk about as much CPU as the servers spend.
local req
function init(args)
  local h = { ["Content-Type"] = "application/json", ["Accept"] = "application/json, text/event-stream",
    ["MCP-Protocol-Version"] = "2025-11-25" }
  if sid then h["Mcp-Session-Id"] = sid end
  req = wrk.format("POST", nil, h, body)
end
function request()
  return req
end
LUA
  } > "$1"
}

# churn_script FILE: writes a wrk script whose connections each run whole
# session lives, as the harness's churn does: initialize, then
# notifications/initialized, one echo call, DELETE (four requests a life).
# done() prints "lives N bad M": a life is bad when a step's status is not
# the one the handshake expects or initialize gave no session id.
churn_script() {
  cat > "$1" <<'LUA'
local init_body = '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"wrk","version":"1"}}}'
local initialized = '{"jsonrpc":"2.0","method":"notifications/initialized"}'
local call = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}}'
local want = { 200, 202, 200 } -- DELETE: any 2xx
step, sid, lives, bad = 0, nil, 0, 0 -- globals: done() reads them with thread:get
local threads = {}
function setup(thread) table.insert(threads, thread) end
-- Each thread formats its requests once, with a marker where the session id
-- goes, and splits them there: a life then costs wrk three concatenations,
-- not three wrk.format calls (wrk at 77 to 79% of its CPU against luamcp,
-- 81 to 85% before; the ratio between servers did not move).
local first, parts
function init(args)
  local plain = { ["Content-Type"] = "application/json", ["Accept"] = "application/json, text/event-stream" }
  first = wrk.format("POST", nil, plain, init_body)
  local h = { ["Content-Type"] = "application/json", ["Accept"] = "application/json, text/event-stream",
    ["MCP-Protocol-Version"] = "2025-11-25", ["Mcp-Session-Id"] = "\0" }
  parts = {}
  for i, r in ipairs({ wrk.format("POST", nil, h, initialized), wrk.format("POST", nil, h, call), wrk.format("DELETE", nil, h) }) do
    local at = string.find(r, "\0", 1, true)
    parts[i] = { string.sub(r, 1, at - 1), string.sub(r, at + 1) }
  end
end
function request()
  if step == 0 then return first end
  local p = parts[step]
  return p[1] .. (sid or "") .. p[2] -- no id: the server refuses, a bad life
end
function response(status, hs, body)
  if step == 0 then
    sid = nil
    for k, v in pairs(hs) do
      if string.lower(k) == "mcp-session-id" then sid = v end
    end
    if not sid then bad = bad + 1 end
  end
  if (want[step + 1] and status ~= want[step + 1]) or status >= 300 then bad = bad + 1 end
  step = (step + 1) % 4
  if step == 0 then lives = lives + 1 end
end
function done()
  local l, b = 0, 0
  for _, t in ipairs(threads) do l = l + t:get("lives"); b = b + t:get("bad") end
  io.write(string.format("lives %d bad %d\n", l, b))
end
LUA
}

# progress_script FILE URL: writes a wrk script for 16 connections, each
# with a session of its own, calling the progress tool with a progress
# token: each answer is an event stream of ten notifications/progress, then
# the result. done() prints "calls N bad M": a call is bad when its stream
# did not hold ten notifications and the result.
progress_script() {
  {
    sessions_table "$2"
    cat <<'LUA'
local n = 0
local threads = {}
function setup(thread)
  n = n + 1
  thread:set("sid", sids[n])
  table.insert(threads, thread)
end
local body = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"progress","arguments":{},"_meta":{"progressToken":"t"}}}'
local req
calls, bad = 0, 0
function init(args)
  req = wrk.format("POST", nil, { ["Content-Type"] = "application/json",
    ["Accept"] = "application/json, text/event-stream", ["MCP-Protocol-Version"] = "2025-11-25",
    ["Mcp-Session-Id"] = sid }, body)
end
function request() return req end
function response(status, hs, b)
  calls = calls + 1
  local _, notes = string.gsub(b, "notifications/progress", "")
  if status ~= 200 or notes ~= 10 or not string.find(b, '"done"', 1, true) then bad = bad + 1 end
end
function done()
  local c, x = 0, 0
  for _, t in ipairs(threads) do c = c + t:get("calls"); x = x + t:get("bad") end
  io.write(string.format("calls %d bad %d\n", c, x))
end
LUA
  } > "$1"
}
