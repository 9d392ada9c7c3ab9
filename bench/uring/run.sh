#!/usr/bin/env bash
# bench/uring/run.sh [BUILD] [ab.py options]: builds bench_epoll, bench_uring
# and cshttp-load in BUILD (default: build; liburing-dev needed, see
# scripts/install-deps.sh bench) and runs them side by side: interleaved
# rounds (default 5) of W1 (wrk -t1 -c32, and cshttp-load -c32) and W3
# (cshttp-load --idle 1500 -c 50), 5 s each, medians and spread, CPU per
# request from /proc/PID/stat, ratios uring/epoll. Writes
# bench/results/uring-<time>.md. Options: ab.py --help.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
build=build
if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then build="$1"; shift; fi
case "$build" in /*) ;; *) build="$root/$build" ;; esac
if ! command -v wrk >/dev/null; then
  echo "run.sh: wrk not found (scripts/install-deps.sh bench)" >&2
  exit 2
fi
cmake -S "$root" -B "$build" -DCSHTTP_BUILD_URING_BENCH=ON >/dev/null
cmake --build "$build" -j "${JOBS:-2}" --target bench_epoll bench_uring cshttp-load >/dev/null
cd "$root/bench"
exec python3 "$here/ab.py" --build "$build" "$@"
