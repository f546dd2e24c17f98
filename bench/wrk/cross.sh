#!/usr/bin/env bash
# Cross-checks the harness's echo figures with independent load generators
# from Debian: wrk (HTTP/1.1; package wrk) for session and stateless
# tools/call, whole session lives (churn) and progress streams, and h2load (HTTP/2 over TLS; package nghttp2-client) for
# stateless calls, c=16, on every server, with the harness's pinning (server
# on CPU 0, generator on CPU 1). Beside each rate: the server's own CPU per
# call (user + system, from /proc), which does not depend on how fast the
# generator is. Run `go run ./cmd/bench -smoke` first: it builds bin/.
#
#   cd bench && ./wrk/cross.sh [seconds] [servers...]
#   e.g. ./wrk/cross.sh 8 luamcp mcp-go go-sdk
# ROWS picks rows (default: all): ROWS="churn progress" ./wrk/cross.sh 8
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-5}
shift || true
servers=("$@")
[ ${#servers[@]} -gt 0 ] || servers=(luamcp mcp-go go-sdk)
command -v wrk >/dev/null || { echo "wrk not found: apt-get install -y wrk" >&2; exit 1; }
command -v h2load >/dev/null || { echo "h2load not found: apt-get install -y nghttp2-client" >&2; exit 1; }
for s in "${servers[@]}"; do [ -x "bin/$s" ] || { echo "bin/$s missing: run go run ./cmd/bench -smoke first" >&2; exit 1; }; done

. "wrk/lib.sh"
pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null || true' EXIT

# start ARGS...: runs the server pinned to CPU 0; sets pid, addr and tls
# (its HTTPS address, empty when it has none).
start() {
  local log; log=$(mktemp)
  taskset -c 0 "$@" > "$log" 2>/dev/null &
  pid=$!
  for _ in $(seq 100); do
    if grep -q '^BENCH-READY ' "$log"; then break; fi
    sleep 0.1
  done
  addr=$(sed -n 's/^BENCH-READY .*"addr":"\([^"]*\)".*/\1/p' "$log")
  tls=$(sed -n 's/^BENCH-READY .*"tls_addr":"\([^"]*\)".*/\1/p' "$log")
  rm -f "$log"
  [ -n "$addr" ] || { echo "$1 did not start" >&2; exit 1; }
}

# cpu_ticks: the server's user + system CPU so far, in clock ticks.
cpu_ticks() { awk '{print $14 + $15}' "/proc/$pid/stat"; }

# measure CMD...: runs a generator on CPU 1; sets out (what it printed),
# ticks (the server's CPU meanwhile) and gen (the share of its CPU the
# generator kept busy: near 100% it is saturated, and the latencies it
# reports include its own queueing).
measure() {
  local t0 start end
  t0=$(cpu_ticks)
  start=$(date +%s%N)
  out=$(TIMEFORMAT='%U %S'; { time taskset -c 1 "$@" 2>&1; } 2>&1)
  end=$(date +%s%N)
  ticks=$(( $(cpu_ticks) - t0 ))
  # bash's time prints the generator's user and system seconds last.
  gen=$(tail -n1 <<<"$out" | awk -v ns=$((end - start)) '{ printf "%.0f%%", ($1 + $2) / (ns / 1e9) * 100 }')
  out=$(sed '$d' <<<"$out")
}

# report SERVER GEN MODE RATE LATENCY CALLS TICKS [BAD]
report() {
  local per; per=$(awk -v t="$7" -v n="$6" -v hz="$(getconf CLK_TCK)" 'BEGIN { if (n > 0) printf "%.1fµs", t / hz / n * 1e6; else print "-" }')
  printf '%-8s %-7s %-10s c=16 %10s req/s  %-15s srv cpu/call %-8s gen cpu %s%s\n' "$1" "$2" "$3" "$4" "$5" "$per" "$gen" "${8:+  NON-2xx: $8}"
}

# run_wrk MODE URL SERVER: wrk with 16 connections, one thread each (so that
# in session mode each has its own session, as the harness's clients do).
run_wrk() {
  local lua; lua=$(mktemp --suffix=.lua)
  wrk_script "$lua" "$2" "$1"
  measure wrk -t16 -c16 -d"${secs}s" --latency -s "$lua" "$2"
  rm -f "$lua"
  local rate p99 bad n
  rate=$(awk '/^Requests\/sec/ {print $2}' <<<"$out")
  p99=$(awk '$1 == "99%" {print "p99 " $2}' <<<"$out")
  bad=$(awk '/Non-2xx/ {print $NF}' <<<"$out")
  n=$(awk '/requests in/ {print $1}' <<<"$out")
  report "$3" wrk "$1" "$rate" "$p99" "$n" "$ticks" "$bad"
}

# run_churn URL SERVER: whole session lives (churn_script), 16 connections;
# the rate and the CPU are per life, not per request.
run_churn() {
  local lua; lua=$(mktemp --suffix=.lua)
  churn_script "$lua"
  measure wrk -t16 -c16 -d"${secs}s" -s "$lua" "$1"
  rm -f "$lua"
  local lives bad took rate per
  lives=$(awk '$1 == "lives" {print $2}' <<<"$out")
  bad=$(awk '$1 == "lives" {print $4}' <<<"$out")
  took=$(awk '/requests in/ {sub(/s,$/, "", $4); print $4}' <<<"$out")
  rate=$(awk -v n="$lives" -v t="$took" 'BEGIN { printf "%.2f", n / t }')
  per=$(awk -v t="$ticks" -v n="$lives" -v hz="$(getconf CLK_TCK)" 'BEGIN { if (n > 0) printf "%.1fµs", t / hz / n * 1e6; else print "-" }')
  [ "$bad" = 0 ] && bad=
  printf '%-8s %-7s %-10s c=16 %10s lives/s                  srv cpu/life %-8s gen cpu %s%s\n' "$2" wrk churn "$rate" "$per" "$gen" "${bad:+  BAD LIVES: $bad}"
}

# run_progress URL SERVER: calls of the progress tool (progress_script), each
# answered with a stream of ten notifications and the result.
run_progress() {
  local lua; lua=$(mktemp --suffix=.lua)
  progress_script "$lua" "$1"
  measure wrk -t16 -c16 -d"${secs}s" --latency -s "$lua" "$1"
  rm -f "$lua"
  local rate p99 n bad
  rate=$(awk '/^Requests\/sec/ {print $2}' <<<"$out")
  p99=$(awk '$1 == "99%" {print "p99 " $2}' <<<"$out")
  n=$(awk '$1 == "calls" {print $2}' <<<"$out")
  bad=$(awk '$1 == "calls" {print $4}' <<<"$out")
  [ "$bad" = 0 ] && bad=
  report "$2" wrk progress "$rate" "$p99" "$n" "$ticks" "$bad"
}

# run_h2load URL SERVER: h2load, 16 connections of one stream each, stateless
# calls for secs seconds over HTTP/2 with TLS.
run_h2load() {
  local body; body=$(mktemp)
  printf '%s' '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}}' > "$body"
  measure h2load -c16 -m1 -t1 -D"$secs" -d "$body" \
    -H "$ctype" -H "$accept" -H 'MCP-Protocol-Version: 2025-11-25' "$1"
  rm -f "$body"
  local rate n bad p99
  rate=$(awk '/^finished in/ {gsub(",", "", $4); print $4}' <<<"$out")
  n=$(awk '/^status codes:/ {print $3}' <<<"$out")
  bad=$(awk '/^status codes:/ {print $5 + $7 + $9}' <<<"$out")
  [ "$bad" = 0 ] && bad=
  # h2load reports no percentiles: the column shows its mean request time.
  p99=$(awk '/^time for request:/ {print "mean " $6}' <<<"$out")
  report "$2" h2load stateless "$rate" "$p99" "$n" "$ticks" "$bad"
}

for server in "${servers[@]}"; do
  args=(-ttl 30s)
  [ "$server" = luamcp ] && args+=(-scripts scripts)
  start "bin/$server" "${args[@]}"
  base="http://$addr"
  for row in ${ROWS:-session stateless churn progress h2load}; do
    case $row in
    session) run_wrk session "$base/mcp/echo" "$server" ;;
    stateless) run_wrk stateless "$base/mcp/echo_stateless" "$server" ;;
    churn) run_churn "$base/mcp/churn" "$server" ;;
    progress) run_progress "$base/mcp/progress" "$server" ;;
    h2load)
      if [ -n "$tls" ]; then
        run_h2load "https://$tls/mcp/echo_stateless" "$server"
      else
        echo "$server: no TLS listener, no h2load row"
      fi
      ;;
    *) echo "unknown row $row (session, stateless, churn, progress, h2load)" >&2; exit 2 ;;
    esac
  done
  kill "$pid"; wait "$pid" 2>/dev/null || true
  pid=
done
