#!/usr/bin/env bash
# Server workloads side by side (DESIGN.md, Workloads), on 127.0.0.1:
#   W1  wrk, 32 keep-alive connections, GET /demo/plaintext: cshttpd (the
#       chosen thread model), cshttpd with a fixed pool of 4 workers, and nginx
#       (one worker, `return 200`)
#   W2  wrk, 128 connections, GET /demo/sleep?ms=15 (the handler blocks 15 ms;
#       the ceiling is 128 / 0.015 = 8,533 req/s): both cshttpd variants
# The variants run interleaved in ROUNDS rounds (W1 default, W1 fixed-4,
# W1 nginx, W2 default, W2 fixed-4, then the next round); each run's line is
# printed, then the median of each variant over the rounds.
# For each: requests/s, and the server's own CPU time per request (utime +
# stime of its processes over the run, from /proc/PID/stat, divided by the
# requests served). Figures are for comparing in one run, never absolute.
#
# The variants:
#   default  --threads 2: two workers wait in epoll; the supervisor adds one
#            when all were busy > 1 ms and events wait (up to 256), and parks
#            the surplus after 2 s idle
#   fixed-4  --min-threads 4 --max-threads 4: four workers from the start and
#            never more (the supervisor has nothing to add or park)
#
# Usage: bench/server/run.sh [BUILD_DIR] [SECONDS] [ROUNDS]
#        (needs wrk; nginx optional)
set -euo pipefail
ulimit -n 8192 2>/dev/null || true
BUILD=${1:-build-release}
SECS=${2:-5}
ROUNDS=${3:-3}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
# shellcheck source=nginx-w1.sh
. "$HERE/nginx-w1.sh"
CSHTTPD=$BUILD/apps/cshttpd
PORT_C=${PORT_C:-18080}
PORT_N=${PORT_N:-18081}
PORT_F=${PORT_F:-18082}
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

# run NAME PID URL CONNECTIONS: one line, also appended to $TMP/results
# as "NAME<TAB>req/s<TAB>us CPU/request"
run() {
  local name=$1 pid=$2 url=$3 conns=$4
  wrk -t1 -c"$conns" -d1s "$url" >/dev/null 2>&1 || true # warm-up
  local c0 c1 out reqs rps
  c0=$(cpu_ticks "$pid")
  out=$(wrk -t1 -c"$conns" -d"${SECS}s" "$url")
  c1=$(cpu_ticks "$pid")
  reqs=$(echo "$out" | awk '/requests in/ {print $1}')
  rps=$(echo "$out" | awk '/Requests\/sec/ {print $2}')
  local errs
  errs=$(echo "$out" | awk '/Non-2xx|Socket errors/ {print}' | tr '\n' ' ')
  awk -v n="$name" -v r="$rps" -v q="$reqs" -v c=$((c1 - c0)) -v t="$TCK" -v e="$errs" \
    'BEGIN { printf "%-30s %10.0f req/s  %6.1f us CPU/request  %s\n", n, r, (c / t) * 1e6 / q, e }'
  awk -v n="$name" -v r="$rps" -v q="$reqs" -v c=$((c1 - c0)) -v t="$TCK" \
    'BEGIN { printf "%s\t%.0f\t%.2f\n", n, r, (c / t) * 1e6 / q }' >>"$TMP/results"
}

start_cshttpd() { # LOG ARGS...: starts it, waits until it listens
  local log=$1
  shift
  "$CSHTTPD" --demo --root "$ROOT/apps/cshttpd/www" "$@" >"$log" 2>&1 &
  PIDS+=($!)
  for _ in $(seq 50); do grep -q listening "$log" && break; sleep 0.1; done
}

start_cshttpd "$TMP/cshttpd.log" --port "$PORT_C" --threads 2
CPID=${PIDS[-1]}
start_cshttpd "$TMP/cshttpd-fixed.log" --port "$PORT_F" --min-threads 4 --max-threads 4
FPID=${PIDS[-1]}

NPID=""
if command -v nginx >/dev/null || [ -x /usr/sbin/nginx ]; then
  NGINX=$(command -v nginx || echo /usr/sbin/nginx)
  nginx_w1_conf "$TMP/nginx" $PORT_N
  "$NGINX" -p "$TMP/nginx" -c "$TMP/nginx/nginx.conf" &
  NPID=$!
  PIDS+=($NPID)
  sleep 0.5
fi

echo "cores: $(nproc); wrk -t1, ${SECS}s per run (after 1 s of warm-up), $ROUNDS rounds"
: >"$TMP/results"
for r in $(seq "$ROUNDS"); do
  echo "round $r"
  run "W1 cshttpd default" "$CPID" "http://127.0.0.1:$PORT_C/demo/plaintext" 32
  run "W1 cshttpd fixed-4" "$FPID" "http://127.0.0.1:$PORT_F/demo/plaintext" 32
  [ -n "$NPID" ] && run "W1 nginx (1 worker)" "$NPID" "http://127.0.0.1:$PORT_N/demo/plaintext" 32
  run "W2 cshttpd default" "$CPID" "http://127.0.0.1:$PORT_C/demo/sleep?ms=15" 128
  run "W2 cshttpd fixed-4" "$FPID" "http://127.0.0.1:$PORT_F/demo/sleep?ms=15" 128
done
echo "medians over $ROUNDS rounds (W1: ratio to nginx; W2: ratio to the 128 / 0.015 s = 8533 req/s ceiling)"
python3 - "$TMP/results" <<'PY'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    name, rps, cpu = line.rstrip("\n").split("\t")
    runs.setdefault(name, []).append((float(rps), float(cpu)))
med = {n: (statistics.median(r for r, _ in v), statistics.median(c for _, c in v)) for n, v in runs.items()}
nginx = med.get("W1 nginx (1 worker)", (0, 0))[0]
for n, (rps, cpu) in med.items():
    if n.startswith("W1") and nginx:
        ratio = "%.2f of nginx" % (rps / nginx)
    elif n.startswith("W2"):
        ratio = "%.2f of the ceiling" % (rps / 8533)
    else:
        ratio = ""
    print("%-30s %10.0f req/s  %6.1f us CPU/request  %s" % (n, rps, cpu, ratio))
PY
run "W1 cshttpd default after W2" "$CPID" "http://127.0.0.1:$PORT_C/demo/plaintext" 32
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
