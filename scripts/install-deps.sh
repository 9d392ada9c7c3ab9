#!/usr/bin/env bash
# Installs the Debian packages the build, the tests, the fuzzers and the
# benchmarks need, and only those that are missing. Run as root (or with sudo).
#   install-deps.sh         what make build, make test and make run need
#   install-deps.sh bench   and the peers and tools of the benchmark suite (bench/run)
set -euo pipefail

packages=(
  build-essential cmake pkg-config    # the build
  libcmocka-dev                       # unit tests
  clang libclang-rt-14-dev llvm       # libFuzzer, sanitizers, llvm-cov/profdata
  afl++                               # AFL++ builds of the fuzz targets
  libhttp-parser-dev                  # Node's http_parser: differential fuzzing, benchmark peer
  valgrind                            # instruction counts in bench/
  abigail-tools                       # tests/abi: abidiff against the ABI baseline (abi/)
  python3                             # test drivers
  zlib1g-dev                          # libcshttp-web: gzip responses
  libssl-dev openssl                  # libcshttp-server: HTTPS (OpenSSL 3), test certificates
  libnghttp2-dev                      # libcshttp-server: HTTP/2 framing, HPACK, flow control
  nghttp2-client                      # tests/server: nghttp and h2load against cshttpd over HTTP/2
  python3-h2                          # tests/server: HTTP/2 frames written by hand
  curl                                # tests/server: a real client against cshttpd
  python3-websockets                  # tests/server: a real WebSocket client against cshttpd
  nginx-light                         # tests/server: cshttpd behind a reverse proxy; bench/run peer
  media-types                         # /etc/mime.types: cshttpd's extensions to MIME types
  systemd                             # tests/server: systemd-analyze verify of cshttpd's unit
  chromium                            # tests/server: cshttpd's status page in a headless browser
  logrotate                           # tests/server: the README's log rotation, run for real
)
if [ "${1:-}" = bench ]; then
  packages+=(
    wrk                                 # bench/run: W1 cross-check of cshttp-load's figure
    apache2-utils                       # bench/run: ab, workload W4 (-c 1024, with and without keep-alive)
    h2o                                 # bench/run: a peer server (Debian builds it with mruby)
    libmicrohttpd-dev                   # bench/mhd: bench_mhd, the libmicrohttpd peer
    gnuplot-nox                         # bench/run: the SVG charts
    liburing-dev                        # bench/uring: the io_uring side of the epoll/io_uring A/B
    libwebsockets-dev                   # bench/ws: lws_echo, the WS workload's libwebsockets peer
  )
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "installing: ${missing[*]}"
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
