#!/usr/bin/env bash
# Instructions that loading a mime.types file takes in the toolkit
# (cshw_mime_types_load alone: callgrind's --toggle-collect, so start-up
# and the built-in table are not counted). Deterministic: the same count
# on a busy machine. cshttpd loads /etc/mime.types once at start.
# Usage: bench/mime/callgrind.sh [BUILD_DIR] [FILE]
#   e.g. bench/mime/callgrind.sh build-release /etc/mime.types
set -euo pipefail
BUILD=${1:-build-release}
FILE=${2:-/etc/mime.types}
BIN=$BUILD/bench/mime/bench_mime_load
command -v valgrind >/dev/null || { echo "callgrind.sh: valgrind is missing"; exit 2; }
[ -x "$BIN" ] || { echo "callgrind.sh: build $BUILD first (bench_mime_load)"; exit 2; }
[ -r "$FILE" ] || { echo "callgrind.sh: $FILE cannot be read"; exit 2; }
OUT=$(mktemp)
trap 'rm -f "$OUT"' EXIT
valgrind --tool=callgrind --callgrind-out-file="$OUT" --toggle-collect=cshw_mime_types_load \
  "$BIN" "$FILE" >/dev/null 2>&1 || { echo "callgrind.sh: $BIN $FILE failed"; exit 1; }
IR=$(awk '/^summary:/ {print $2}' "$OUT")
LINES=$(wc -l <"$FILE")
echo "$FILE ($LINES lines): $IR instructions in cshw_mime_types_load"
