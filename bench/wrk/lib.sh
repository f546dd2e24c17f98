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

# wrk_script FILE URL MODE: writes a wrk script for 16 connections, one wrk
# thread each, calling the echo tool at URL; in MODE session each thread has
# a session of its own, as the harness's clients do.
wrk_script() {
  {
    echo 'local sids = {'
    if [ "$3" = session ]; then for _ in $(seq 16); do echo "\"$(session "$2")\","; done; fi
    echo '}'
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
