#!/usr/bin/env bash
# Where a W1 request's time goes, cshttpd against nginx (1 worker), the two
# profiles bench/README.md quotes:
#   1. perf record (cpu-clock, works without hardware counters) of each
#      server while cshttp-load runs W1 for SECONDS: the share of kernel,
#      libc and each library, and the top symbols;
#   2. the system calls each server makes per request over another W1 run
#      (perf stat on the syscall tracepoints: counts without slowing it).
# Usage: bench/profile.sh [BUILD_DIR] [SECONDS]   (needs perf and nginx)
set -euo pipefail
BUILD=${1:-build-release}
SECS=${2:-5}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=server/nginx-w1.sh
. "$ROOT/bench/server/nginx-w1.sh"
LOAD=$BUILD/apps/cshttp-load
CSHTTPD=$BUILD/apps/cshttpd
for tool in perf /usr/sbin/nginx; do
  command -v "$tool" >/dev/null || [ -x "$tool" ] || { echo "bench/profile.sh: $tool is missing"; exit 2; }
done
[ -x "$LOAD" ] && [ -x "$CSHTTPD" ] || { echo "bench/profile.sh: build $BUILD first (make bench-release)"; exit 2; }
TMP=$(mktemp -d)
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$TMP"; }
trap cleanup EXIT
PORT_C=19180
PORT_N=19181

nginx_w1_conf "$TMP/nginx" $PORT_N

# start NAME: the server NAME, its pid (nginx: the worker) in $SERVER_PID
start() {
  if [ "$1" = cshttpd ]; then
    "$CSHTTPD" --demo --root "$ROOT/apps/cshttpd/www" --port $PORT_C ${CSHTTPD_ARGS:-} >"$TMP/cshttpd.log" 2>&1 &
    PIDS+=($!)
    SERVER_PID=$!
    URL=http://127.0.0.1:$PORT_C/demo/plaintext
  else
    /usr/sbin/nginx -p "$TMP/nginx" -c "$TMP/nginx/nginx.conf" &
    PIDS+=($!)
    sleep 0.5
    SERVER_PID=$(pgrep -P "$!" | head -1)
    URL=http://127.0.0.1:$PORT_N/demo/plaintext
  fi
  sleep 0.5
}

for name in cshttpd nginx; do
  start $name
  "$LOAD" --no-progress -c 32 -d 1 "$URL" >/dev/null # warm-up
  perf record -q -e cpu-clock -p "$SERVER_PID" -o "$TMP/$name.data" -- sleep "$SECS" >/dev/null 2>&1 &
  REC=$!
  "$LOAD" --no-progress -c 32 -d "$SECS" "$URL" | grep '^requests'
  wait $REC || true
  echo "== $name: samples by object"
  perf report -i "$TMP/$name.data" --no-children --sort dso 2>/dev/null | grep "%" | head -8 || true
  echo "== $name: top symbols"
  perf report -i "$TMP/$name.data" --no-children --sort sym 2>/dev/null | grep "%" | head -25 || true
  # system calls per request: syscall tracepoints counted over a W1 run (no
  # slowdown, unlike strace)
  calls=syscalls:sys_enter_epoll_wait,syscalls:sys_enter_epoll_ctl,syscalls:sys_enter_recvfrom
  calls=$calls,syscalls:sys_enter_sendto,syscalls:sys_enter_writev,syscalls:sys_enter_futex
  calls=$calls,syscalls:sys_enter_read,syscalls:sys_enter_write
  perf stat -x, -e "$calls" -p "$SERVER_PID" -o "$TMP/$name.stat" -- sleep "$SECS" &
  REC=$!
  reqs=$("$LOAD" --no-progress -c 32 -d "$SECS" "$URL" | awk '/^requests/ {print $2}')
  wait $REC || true
  echo "== $name: system calls per request ($reqs requests)"
  awk -F, -v n="$reqs" '$1 ~ /^[0-9]+$/ && $1 > 0 { sub("syscalls:sys_enter_", "", $3); printf "%-12s %6.3f\n", $3, $1 / n }' "$TMP/$name.stat"
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  PIDS=()
  sleep 0.5
done
