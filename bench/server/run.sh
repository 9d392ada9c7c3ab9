#!/usr/bin/env bash
# Server workloads side by side (DESIGN.md, Workloads), on 127.0.0.1:
#   W1  wrk, 32 keep-alive connections, GET /demo/plaintext: cshttpd and
#       nginx (one worker, `return 200`), one after the other
#   W2  wrk, 128 connections, GET /demo/sleep?ms=15 (the handler blocks 15 ms;
#       the ceiling is 128 / 0.015 = 8,533 req/s): cshttpd
# For each: requests/s, and the server's own CPU time per request (utime +
# stime of its processes over the run, from /proc/PID/stat, divided by the
# requests served). Figures are for comparing in one run, never absolute.
#
# Usage: bench/server/run.sh [BUILD_DIR] [SECONDS]   (needs wrk; nginx optional)
set -euo pipefail
ulimit -n 8192 2>/dev/null || true
BUILD=${1:-build-release}
SECS=${2:-10}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
CSHTTPD=$BUILD/apps/cshttpd
PORT_C=${PORT_C:-18080}
PORT_N=${PORT_N:-18081}
command -v wrk >/dev/null || { echo "bench/server: wrk is not installed (apt-get install wrk)"; exit 2; }
[ -x "$CSHTTPD" ] || { echo "bench/server: $CSHTTPD not built"; exit 2; }
TMP=$(mktemp -d)
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$TMP"; }
trap cleanup EXIT
TCK=$(getconf CLK_TCK)

# utime + stime in ticks of a process and its children processes (nginx workers)
cpu_ticks() {
  local total=0 p
  for p in "$1" $(pgrep -P "$1" || true); do
    [ -r /proc/$p/stat ] || continue
    # fields after the ")" of comm: state is 3rd, utime 14th, stime 15th
    total=$((total + $(sed 's/.*) //' /proc/$p/stat | awk '{print $12 + $13}')))
  done
  echo "$total"
}

# run NAME PID URL CONNECTIONS
run() {
  local name=$1 pid=$2 url=$3 conns=$4
  wrk -t1 -c"$conns" -d2s "$url" >/dev/null 2>&1 || true # warm-up
  local c0 c1 out reqs rps
  c0=$(cpu_ticks "$pid")
  out=$(wrk -t1 -c"$conns" -d"${SECS}s" "$url")
  c1=$(cpu_ticks "$pid")
  reqs=$(echo "$out" | awk '/requests in/ {print $1}')
  rps=$(echo "$out" | awk '/Requests\/sec/ {print $2}')
  local errs
  errs=$(echo "$out" | awk '/Non-2xx|Socket errors/ {print}' | tr '\n' ' ')
  awk -v n="$name" -v r="$rps" -v q="$reqs" -v c=$((c1 - c0)) -v t="$TCK" -v e="$errs" \
    'BEGIN { printf "%-28s %10.0f req/s  %6.1f us CPU/request  %s\n", n, r, (c / t) * 1e6 / q, e }'
}

"$CSHTTPD" --port "$PORT_C" --root "$ROOT/apps/cshttpd/www" --threads 2 >"$TMP/cshttpd.log" 2>&1 &
PIDS+=($!)
CPID=$!
for _ in $(seq 50); do grep -q listening "$TMP/cshttpd.log" && break; sleep 0.1; done

NPID=""
if command -v nginx >/dev/null || [ -x /usr/sbin/nginx ]; then
  NGINX=$(command -v nginx || echo /usr/sbin/nginx)
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
  "$NGINX" -p "$TMP/nginx" -c "$TMP/nginx/nginx.conf" &
  NPID=$!
  PIDS+=($NPID)
  sleep 0.5
fi

echo "cores: $(nproc); wrk -t1, ${SECS}s per run"
run "W1 cshttpd (2 workers)" "$CPID" "http://127.0.0.1:$PORT_C/demo/plaintext" 32
[ -n "$NPID" ] && run "W1 nginx (1 worker)" "$NPID" "http://127.0.0.1:$PORT_N/demo/plaintext" 32
run "W2 cshttpd (sleep 15 ms)" "$CPID" "http://127.0.0.1:$PORT_C/demo/sleep?ms=15" 128
echo "W2 ceiling: 128 / 0.015 s = 8533 req/s"
run "W1 cshttpd after W2" "$CPID" "http://127.0.0.1:$PORT_C/demo/plaintext" 32
# memory per idle keep-alive connection: the process's RSS before and after
# 2,000 connections that each made one request and stay open
python3 - "$CPID" "$PORT_C" <<'PY'
import socket, sys
pid, port = int(sys.argv[1]), int(sys.argv[2])
def rss():
    for l in open("/proc/%d/status" % pid):
        if l.startswith("VmRSS:"):
            return int(l.split()[1]) * 1024
before, socks = rss(), []
for i in range(2000):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b"GET /demo/plaintext HTTP/1.1\r\nHost: b\r\n\r\n")
    d = b""
    while not d.endswith(b"Hello, World!"):
        d += s.recv(4096)
    socks.append(s)
after = rss()
print("idle connections: %d, server RSS +%.0f bytes per connection (user space)" % (len(socks), (after - before) / len(socks)))
PY
curl -s "http://127.0.0.1:$PORT_C/status.json" 2>/dev/null | tr ',' '\n' | grep -E 'workers_total|workers_parked|idle_connection_bytes' | tr '\n' ' '
echo
