#!/usr/bin/env bash
# Writes the ABI baseline of the three libraries, abi/<library>.abi, from a
# release: the libraries of REV (a tag, default the working tree) built
# alone (RelWithDebInfo, no tests, apps or benches) in a temporary folder
# and described with abidw. make test compares every build against these
# files (tests/abi/check_abi.py), so run this when a release changes the
# ABI on purpose (README.md, Versioning), and commit the result with it.
#   scripts/abi-baseline.sh            the working tree
#   scripts/abi-baseline.sh v0.2.0     a tagged release
set -euo pipefail
cd "$(dirname "$0")/.."
rev="${1:-}"
jobs="${JOBS:-2}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

if [ -n "$rev" ]; then
  git archive "$rev" | tar -x -C "$tmp"
  src="$tmp"
else
  src="$PWD"
fi
cmake -S "$src" -B "$tmp/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCSHTTP_BUILD_TESTS=OFF \
      -DCSHTTP_BUILD_APPS=OFF -DCSHTTP_BUILD_BENCH=OFF >/dev/null
cmake --build "$tmp/build" -j "$jobs" --target cshttp cshttp_web cshttp_server >/dev/null
mkdir -p abi
for lib in libcshttp libcshttp-web libcshttp-server; do
  # Only the types of the public headers, of every tier (an opaque struct's
  # insides are no one's ABI; the tiers below must be there too, or their
  # types become declarations only, which abidiff 2.2 crashes on when a
  # suppression names them); --no-corpus-path, --short-locs: nothing of
  # this machine's paths.
  abidw --no-corpus-path --short-locs --drop-private-types \
        --headers-dir "$src/libcshttp/include" --headers-dir "$src/libcshttp-web/include" \
        --headers-dir "$src/libcshttp-server/include" \
        --out-file "abi/$lib.abi" "$tmp/build/$lib/$lib.so"
  echo "abi/$lib.abi: $(readelf -d "$tmp/build/$lib/$lib.so" | sed -n 's/.*soname: \[\(.*\)\]/\1/p')"
done
