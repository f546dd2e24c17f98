#!/usr/bin/env bash
# Head to head: two servers pinned to the SAME CPU (0), each loaded at once by
# its own wrk on CPU 1. Sharing one CPU at the same moment, they see the same
# machine: whatever its speed does meanwhile (on a cloud VM it drifts by a
# third between rounds, which swamps a comparison made one run after the
# other), the ratio of their CPU per call is theirs. The ratio of their rates
# also depends on how the kernel shares the CPU between the two processes;
# the CPU per call does not.
#
# A side is either a bench directory (its bin/luamcp serving its scripts: two
# builds of luamcp, before and after a change) or DIR:SERVER (DIR/bin/SERVER,
# any bench server: luamcp against mcp-go or go-sdk).
#
#   ./wrk/duel.sh A B [route] [seconds] [rounds]
#   e.g. git worktree add /tmp/before <commit> && (cd /tmp/before/bench && go build -o bin/luamcp ./cmd/luamcp)
#        go build -o bin/luamcp ./cmd/luamcp && ./wrk/duel.sh /tmp/before/bench . /mcp/echo 8 3
#        ./wrk/duel.sh .:mcp-go . /mcp/echo_stateless 8 3
#
# Which server starts first, and so is first on the CPU, still tilts a single
# round by a few percent: rounds alternate it, and the last line gives the
# medians of the per-round ratios. Run it once with the same side twice: it
# should give 1.
set -euo pipefail
path=${3:-/mcp/echo}; secs=${4:-8}; rounds=${5:-1}
command -v wrk >/dev/null || { echo "wrk not found: apt-get install -y wrk" >&2; exit 1; }
. "$(dirname "$0")/lib.sh"

# side SPEC: sets dir and server from a side's spec.
side() {
  case $1 in
    *:*) dir=${1%:*} server=${1##*:} ;;
    *) dir=$1 server=luamcp ;;
  esac
  dir=$(cd "$dir" && pwd)
  [ -x "$dir/bin/$server" ] || { echo "$dir/bin/$server missing: run go run ./cmd/bench -smoke there first" >&2; exit 1; }
}
side "$1"; dir_a=$dir server_a=$server
side "$2"; dir_b=$dir server_b=$server

pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true' EXIT

# start DIR SERVER: runs DIR/bin/SERVER on CPU 0 (luamcp serving DIR/scripts);
# sets addr and pid, and adds the server to pids (so it runs in this shell,
# not in a $(...) one, whose pids the EXIT trap would never see).
start() {
  local log; log=$(mktemp)
  local args=(-ttl 30s)
  if [ "$2" = luamcp ]; then
    args+=(-scripts scripts)
    # Builds that serve fetch.lua need an upstream to load it (the discard port will do).
    [ -f "$1/scripts/fetch.lua" ] && args+=(-upstream 127.0.0.1:9)
  fi
  (cd "$1" && exec taskset -c 0 "./bin/$2" "${args[@]}" > "$log" 2>/dev/null) &
  pid=$!
  pids+=("$pid")
  for _ in $(seq 100); do
    grep -q '^BENCH-READY ' "$log" && break
    sleep 0.1
  done
  addr=$(sed -n 's/^BENCH-READY .*"addr":"\([^"]*\)".*/\1/p' "$log")
  rm -f "$log"
  [ -n "$addr" ] || { echo "$1/bin/$2 did not start" >&2; exit 1; }
}

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

# field OUT WHAT: from a wrk output, the rate (rate), the calls (calls) or the p99 (p99).
field() {
  case $2 in
    rate) awk '/^Requests\/sec/ {print $2}' "$1" ;;
    calls) awk '/requests in/ {print $1}' "$1" ;;
    p99) awk '$1 == "99%" {print $2}' "$1" ;;
  esac
}

mode=stateless; [ "$path" = /mcp/echo ] && mode=session
hz=$(getconf CLK_TCK)
rates=() cpus=()
for round in $(seq "$rounds"); do
  pids=()
  if [ $((round % 2)) = 1 ]; then
    start "$dir_a" "$server_a"; addr_a=$addr pid_a=$pid
    start "$dir_b" "$server_b"; addr_b=$addr pid_b=$pid
  else
    start "$dir_b" "$server_b"; addr_b=$addr pid_b=$pid
    start "$dir_a" "$server_a"; addr_a=$addr pid_a=$pid
  fi
  sa=$(mktemp --suffix=.lua); sb=$(mktemp --suffix=.lua)
  wrk_script "$sa" "http://$addr_a$path" "$mode"; wrk_script "$sb" "http://$addr_b$path" "$mode"
  oa=$(mktemp); ob=$(mktemp)
  ta=$(cpu_ticks "$pid_a"); tb=$(cpu_ticks "$pid_b")
  taskset -c 1 wrk -t16 -c16 -d"${secs}s" --latency -s "$sa" "http://$addr_a$path" > "$oa" &
  wa=$!
  taskset -c 1 wrk -t16 -c16 -d"${secs}s" --latency -s "$sb" "http://$addr_b$path" > "$ob"
  wait "$wa"
  ta=$(( $(cpu_ticks "$pid_a") - ta )); tb=$(( $(cpu_ticks "$pid_b") - tb ))
  kill "${pids[@]}"; wait "${pids[@]}" 2>/dev/null || true
  ra=$(field "$oa" rate); rb=$(field "$ob" rate)
  ca=$(awk -v t="$ta" -v n="$(field "$oa" calls)" -v hz="$hz" 'BEGIN {printf "%.1f", t / hz / n * 1e6}')
  cb=$(awk -v t="$tb" -v n="$(field "$ob" calls)" -v hz="$hz" 'BEGIN {printf "%.1f", t / hz / n * 1e6}')
  rate_ratio=$(awk -v a="$ra" -v b="$rb" 'BEGIN {printf "%.3f", b / a}')
  # B's advantage in CPU per call: A's cost over B's (above 1: B is cheaper).
  cpu_ratio=$(awk -v a="$ca" -v b="$cb" 'BEGIN {printf "%.3f", a / b}')
  rates+=("$rate_ratio"); cpus+=("$cpu_ratio")
  printf '%s round %d  A %s %s req/s p99 %s cpu/call %sµs  B %s %s req/s p99 %s cpu/call %sµs  B/A rate %s  A/B cpu/call %s\n' \
    "$path" "$round" "$server_a" "$ra" "$(field "$oa" p99)" "$ca" "$server_b" "$rb" "$(field "$ob" p99)" "$cb" "$rate_ratio" "$cpu_ratio"
  rm -f "$sa" "$sb" "$oa" "$ob"
done
median() { printf '%s\n' "$@" | sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
if [ "$rounds" -gt 1 ]; then
  echo "$path  medians of $rounds rounds: B/A rate $(median "${rates[@]}") (${rates[*]})  A/B cpu/call $(median "${cpus[@]}") (${cpus[*]})"
fi
