#!/usr/bin/env bash
# Instructions per request in user space (callgrind: deterministic, the
# same on a busy machine), cshttpd against nginx (1 process, `return 200`),
# plain and HTTPS, each server under valgrind at once:
#   keep-alive  ab -k -c 8 -n 20000 (HTTPS: -n 5000; 8 handshakes included)
#   handshakes  ab -c 4 -n 400 over HTTPS (a full TLS handshake per request)
#   close       ab -c 4 -n 2000, a connection per request
# The counters are zeroed before and dumped after each load
# (callgrind_control), so start-up is not counted. The kernel's share is not
# here: bench/profile.sh counts system calls per request.
# Usage: bench/server/callgrind.sh [BUILD_DIR] [CSHTTPD_ARGS...]
#   e.g. bench/server/callgrind.sh build-release --loops 1
set -euo pipefail
BUILD=${1:-build-release}
shift || true
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
CSHTTPD=$BUILD/apps/cshttpd
for tool in valgrind callgrind_control ab openssl /usr/sbin/nginx; do
  command -v "$tool" >/dev/null || [ -x "$tool" ] || { echo "callgrind.sh: $tool is missing"; exit 2; }
done
[ -x "$CSHTTPD" ] || { echo "callgrind.sh: build $BUILD first"; exit 2; }
TMP=$(mktemp -d)
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$TMP"; }
trap cleanup EXIT
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$TMP/key.pem" \
  -out "$TMP/cert.pem" -days 2 -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 2>/dev/null
P=19740
cat >"$TMP/nginx.conf" <<NGX
worker_processes 1;
master_process off;
daemon off;
pid $TMP/nginx.pid;
error_log $TMP/error.log;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path $TMP/body; proxy_temp_path $TMP/proxy;
  fastcgi_temp_path $TMP/fcgi; uwsgi_temp_path $TMP/uwsgi; scgi_temp_path $TMP/scgi;
  keepalive_requests 1000000;
  keepalive_timeout 300s;
  server {
    listen 127.0.0.1:$((P + 1)) backlog=4096;
    listen 127.0.0.1:$((P + 2)) ssl backlog=4096;
    ssl_certificate $TMP/cert.pem;
    ssl_certificate_key $TMP/key.pem;
    ssl_protocols TLSv1.2 TLSv1.3;
    location = /demo/plaintext { default_type text/plain; return 200 "Hello, World!"; }
  }
}
NGX
valgrind --tool=callgrind --callgrind-out-file="$TMP/nginx.out" /usr/sbin/nginx -p "$TMP" \
  -c "$TMP/nginx.conf" >"$TMP/nginx.log" 2>&1 &
PIDS+=($!)
valgrind --tool=callgrind --callgrind-out-file="$TMP/cshttpd.out" "$CSHTTPD" --demo \
  --root "$ROOT/apps/cshttpd/www" --port $((P + 11)) --tls-cert "$TMP/cert.pem" \
  --tls-key "$TMP/key.pem" --tls-port $((P + 12)) --keepalive-timeout-ms 300000 "$@" \
  >"$TMP/cshttpd.log" 2>&1 &
PIDS+=($!)
for port in $((P + 1)) $((P + 11)); do
  for _ in $(seq 1 120); do
    curl -s -m 5 "http://127.0.0.1:$port/demo/plaintext" >/dev/null && break
    sleep 0.5
  done
done
# one load against one server: instructions per request
measure() { # pid port scheme n ab-flags...
  local pid=$1 port=$2 scheme=$3 n=$4
  shift 4
  callgrind_control -z "$pid" >/dev/null 2>&1
  local failed
  failed=$(ab -q "$@" -n "$n" "$scheme://127.0.0.1:$port/demo/plaintext" 2>&1 |
    awk '/^Failed requests/ {print $3}')
  callgrind_control -d "$pid" >/dev/null 2>&1
  sleep 1
  local f ir
  f=$(ls -t "$TMP"/*.out.* | head -1)
  ir=$(awk '/^(summary|totals):/ {print $2; exit}' "$f")
  echo "$((ir / n)) ${failed:-?}"
}
NGINX_PID=${PIDS[0]}
CSHTTPD_PID=${PIDS[1]}
printf "%-26s %14s %14s %8s\n" load "cshttpd ir/req" "nginx ir/req" ratio
row() { # name port-offset scheme n ab-flags...
  local name=$1 off=$2 scheme=$3 n=$4
  shift 4
  read -r c cf < <(measure "$CSHTTPD_PID" $((P + 10 + off)) "$scheme" "$n" "$@")
  read -r g gf < <(measure "$NGINX_PID" $((P + off)) "$scheme" "$n" "$@")
  printf "%-26s %14d %14d %8.3f   (failed: %s / %s)\n" "$name" "$c" "$g" \
    "$(echo "$c / $g" | bc -l)" "$cf" "$gf"
}
row "keep-alive, plain" 1 http 20000 -k -c 8
row "keep-alive, HTTPS" 2 https 5000 -k -c 8
row "handshake per request" 2 https 400 -c 4
row "connection per request" 1 http 2000 -c 4
