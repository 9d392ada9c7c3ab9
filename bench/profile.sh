#!/usr/bin/env bash
# Where a W1 request's time goes, cshttpd against nginx (1 worker), the two
# profiles bench/README.md quotes:
#   1. perf record (cpu-clock, works without hardware counters) of each
#      server while cshttp-load runs W1 for SECONDS: the share of kernel,
#      libc and each library, and the top symbols;
#   2. strace -c of each server over a fixed number of W1 requests: system
#      calls per request (strace slows the server; only the counts matter).
# Usage: bench/profile.sh [BUILD_DIR] [SECONDS]   (needs perf, strace, nginx)
set -euo pipefail
BUILD=${1:-build-release}
SECS=${2:-5}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
LOAD=$BUILD/apps/cshttp-load
CSHTTPD=$BUILD/apps/cshttpd
for tool in perf strace /usr/sbin/nginx; do
  command -v "$tool" >/dev/null || [ -x "$tool" ] || { echo "bench/profile.sh: $tool is missing"; exit 2; }
done
[ -x "$LOAD" ] && [ -x "$CSHTTPD" ] || { echo "bench/profile.sh: build $BUILD first (make bench-release)"; exit 2; }
TMP=$(mktemp -d)
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$TMP"; }
trap cleanup EXIT
PORT_C=19180
PORT_N=19181

mkdir -p "$TMP/nginx/logs"
cat >"$TMP/nginx/nginx.conf" <<NGX
worker_processes 1;
daemon off;
pid $TMP/nginx/nginx.pid;
error_log $TMP/nginx/logs/error.log;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path $TMP/nginx/body; proxy_temp_path $TMP/nginx/proxy;
  fastcgi_temp_path $TMP/nginx/fcgi; uwsgi_temp_path $TMP/nginx/uwsgi; scgi_temp_path $TMP/nginx/scgi;
  keepalive_requests 1000000;
  server {
    listen 127.0.0.1:$PORT_N;
    location = /demo/plaintext { default_type text/plain; return 200 "Hello, World!"; }
  }
}
NGX

# start NAME: the server NAME, its pid (nginx: the worker) in $SERVER_PID
start() {
  if [ "$1" = cshttpd ]; then
    "$CSHTTPD" --root "$ROOT/apps/cshttpd/www" --port $PORT_C >"$TMP/cshttpd.log" 2>&1 &
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
  perf report -i "$TMP/$name.data" --no-children --sort dso 2>/dev/null | grep '%' | head -8
  echo "== $name: top symbols"
  perf report -i "$TMP/$name.data" --no-children --sort sym 2>/dev/null | grep '%' | head -25
  # system calls per request over a fixed count
  strace -f -c -o "$TMP/$name.strace" -p "$SERVER_PID" &
  ST=$!
  sleep 0.5
  "$LOAD" --no-progress -c 32 -n 20000 "$URL" >/dev/null
  kill -INT $ST
  wait $ST 2>/dev/null || true
  echo "== $name: system calls per request (20,000 requests)"
  # columns: % time, seconds, usecs/call, calls, [errors], syscall
  awk '/^ *[0-9]/ && $NF != "total" { printf "%-16s %6.2f\n", $NF, $4 / 20000 }' "$TMP/$name.strace" |
    sort -k2 -nr | head -8
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  PIDS=()
  sleep 0.5
done
