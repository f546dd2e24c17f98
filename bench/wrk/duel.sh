#!/usr/bin/env bash
# Head to head: two builds of the luamcp bench server pinned to the SAME CPU
# (0), each loaded at once by its own wrk on CPU 1. Sharing one CPU at the
# same moment, they see the same machine: the ratio of their rates is the
# inverse ratio of their CPU per call, whatever the machine's speed does
# meanwhile (on a cloud VM it drifts by a third between rounds, which swamps
# a before/after comparison made one round after the other).
#
#   ./wrk/duel.sh BENCH_DIR_A BENCH_DIR_B [route] [seconds]
#   e.g. git worktree add /tmp/before <commit> && (cd /tmp/before/bench && go build -o bin/luamcp ./cmd/luamcp)
#        go build -o bin/luamcp ./cmd/luamcp && ./wrk/duel.sh /tmp/before/bench . /mcp/echo 8
#
# Run it several times: which server starts first, and so is first on the
# CPU, still tilts a single run by a few percent.
set -euo pipefail
a=$(cd "$1" && pwd); b=$(cd "$2" && pwd); path=${3:-/mcp/echo}; secs=${4:-8}
command -v wrk >/dev/null || { echo "wrk not found: apt-get install -y wrk" >&2; exit 1; }
. "$(dirname "$0")/lib.sh"
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true' EXIT

# start DIR: serves DIR/scripts with DIR/bin/luamcp on CPU 0; sets addr and
# adds the server to pids (so it runs in this shell, not in a $(...) one,
# whose pids the EXIT trap would never see).
start() {
  local log; log=$(mktemp)
  local extra=()
  # Builds that serve fetch.lua need an upstream to load it (the discard port will do).
  [ -f "$1/scripts/fetch.lua" ] && extra=(-upstream 127.0.0.1:9)
  (cd "$1" && exec taskset -c 0 ./bin/luamcp -ttl 30s -scripts scripts "${extra[@]}" > "$log" 2>/dev/null) &
  pids+=($!)
  for _ in $(seq 100); do
    grep -q '^BENCH-READY ' "$log" && break
    sleep 0.1
  done
  addr=$(sed -n 's/^BENCH-READY .*"addr":"\([^"]*\)".*/\1/p' "$log")
  rm -f "$log"
  [ -n "$addr" ] || { echo "$1 did not start" >&2; exit 1; }
}

start "$a"; addr_a=$addr
start "$b"; addr_b=$addr
sa=$(mktemp --suffix=.lua); sb=$(mktemp --suffix=.lua)
mode=stateless; [ "$path" = /mcp/echo ] && mode=session
wrk_script "$sa" "http://$addr_a$path" "$mode"; wrk_script "$sb" "http://$addr_b$path" "$mode"
oa=$(mktemp); ob=$(mktemp)
taskset -c 1 wrk -t16 -c16 -d"${secs}s" -s "$sa" "http://$addr_a$path" > "$oa" &
wa=$!
taskset -c 1 wrk -t16 -c16 -d"${secs}s" -s "$sb" "http://$addr_b$path" > "$ob"
wait "$wa"
ra=$(awk '/^Requests\/sec/ {print $2}' "$oa"); rb=$(awk '/^Requests\/sec/ {print $2}' "$ob")
echo "$path  A $ra req/s  B $rb req/s  B/A $(awk -v a="$ra" -v b="$rb" 'BEGIN {printf "%.3f", b/a}')"
rm -f "$sa" "$sb" "$oa" "$ob"
