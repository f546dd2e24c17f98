#!/usr/bin/env bash
# Cross-checks the harness's echo figures with wrk, an independent load
# generator (Debian package wrk): session and stateless tools/call, c=16, on
# luamcp and mcp-go, with the same pinning as the harness (server on CPU 0,
# wrk on CPU 1). Run `go run ./cmd/bench -smoke` first: it builds bin/.
#
#   cd bench && ./wrk/cross.sh [seconds]
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-5}
command -v wrk >/dev/null || { echo "wrk not found: apt-get install -y wrk" >&2; exit 1; }
for b in bin/luamcp bin/mcp-go; do [ -x "$b" ] || { echo "$b missing: run go run ./cmd/bench -smoke first" >&2; exit 1; }; done

. "wrk/lib.sh"

# start NAME ARGS...: runs the server pinned to CPU 0 and sets addr.
start() {
  local log; log=$(mktemp)
  taskset -c 0 "$@" > "$log" 2>/dev/null &
  pid=$!
  for _ in $(seq 100); do
    if grep -q '^BENCH-READY ' "$log"; then break; fi
    sleep 0.1
  done
  addr=$(sed -n 's/^BENCH-READY .*"addr":"\([^"]*\)".*/\1/p' "$log")
  rm -f "$log"
  [ -n "$addr" ] || { echo "$1 did not start" >&2; exit 1; }
}

# run MODE URL SERVER: wrk with 16 connections, one thread each (so that in
# session mode each has its own session, as the harness's clients do).
run() {
  local lua; lua=$(mktemp --suffix=.lua)
  wrk_script "$lua" "$2" "$1"
  local out; out=$(taskset -c 1 wrk -t16 -c16 -d"${secs}s" --latency -s "$lua" "$2")
  rm -f "$lua"
  local rate p99 bad
  rate=$(awk '/^Requests\/sec/ {print $2}' <<<"$out")
  p99=$(awk '$1 == "99%" {print $2}' <<<"$out")
  bad=$(awk '/Non-2xx/ {print $NF}' <<<"$out")
  printf '%-10s %-10s c=16 %10s req/s  p99 %s%s\n' "$3" "$1" "$rate" "$p99" "${bad:+  NON-2xx: $bad}"
}

for server in luamcp mcp-go; do
  args=(-ttl 30s)
  [ "$server" = luamcp ] && args+=(-scripts scripts)
  start "bin/$server" "${args[@]}"
  base="http://$addr"
  run session "$base/mcp/echo" "$server"
  run stateless "$base/mcp/echo_stateless" "$server"
  kill "$pid"; wait "$pid" 2>/dev/null || true
done
