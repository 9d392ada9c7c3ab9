#!/usr/bin/env bash
# Installs the Debian packages the build, the tests, the fuzzers and the
# benchmarks need, and only those that are missing. Run as root (or with sudo).
#   install-deps.sh         what make build, make test and make run need
#   install-deps.sh bench   and the load generator of bench/server
set -euo pipefail

packages=(
  build-essential cmake pkg-config    # the build
  libcmocka-dev                       # unit tests
  clang libclang-rt-14-dev llvm       # libFuzzer, sanitizers, llvm-cov/profdata
  afl++                               # AFL++ builds of the fuzz targets
  libhttp-parser-dev                  # Node's http_parser: differential fuzzing, benchmark peer
  valgrind                            # instruction counts in bench/
  python3                             # test drivers
  zlib1g-dev                          # libcshttp-web: gzip responses
  libssl-dev openssl                  # libcshttp-server: HTTPS (OpenSSL 3), test certificates
  curl                                # tests/server: a real client against cshttpd
  nginx-light                         # tests/server: cshttpd behind a reverse proxy; bench/server peer
)
if [ "${1:-}" = bench ]; then
  packages+=(wrk)                      # bench/server: the load generator
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
