#!/usr/bin/env bash
# Runs the parser benchmark from an existing build and writes the report.
#
#   bash bench/parser/run.sh BUILD_DIR [CORPUS_DIR]
#
# BUILD_DIR is a configured and built tree (make bench: build-release, a
# Release build). The corpus defaults to shared/parser-corpus beside the
# checkout; CORPUS_DIR or $CSHTTP_PARSER_CORPUS override it.
# Environment: BENCH_ARGS (extra bench_parser options, e.g. "--rounds 11"),
# CALLGRIND_ITERS (passes per file under callgrind, default 1000),
# NO_CALLGRIND=1 to skip the instruction counts, NO_TIMING=1 to skip the timed
# runs (the instruction counts alone, about 40 s), NO_SIMD_VERDICT=1 to skip
# the timed SIMD-against-portable runs (bench_parser --simd, about 40 s).
# Output: the report on stdout and in bench/results/parser-<date>.md, every
# timing as CSV in bench/results/parser-<date>.csv, the SIMD verdict's in
# bench/results/parser-<date>-simd.csv, the instruction counts in
# bench/results/parser-<date>-instructions.csv.
set -euo pipefail

build=${1:?usage: run.sh BUILD_DIR [CORPUS_DIR]}
here=$(cd "$(dirname "$0")" && pwd)
root=$(git -C "$here" rev-parse --show-toplevel)
corpus=${2:-${CSHTTP_PARSER_CORPUS:-$root/../shared/parser-corpus}}
bin=$build/bench/parser/bench_parser

if [ ! -x "$bin" ]; then
  echo "run.sh: $bin is not built: configure and build $build first (make bench does)," >&2
  echo "        and check that cmake found http_parser (libhttp-parser-dev)." >&2
  exit 1
fi
[ -f "$corpus/MANIFEST" ] || { echo "run.sh: no MANIFEST in $corpus" >&2; exit 1; }
corpus=$(cd "$corpus" && pwd)

results=$root/bench/results
mkdir -p "$results"
stamp=$(date +%Y-%m-%d-%H%M%S)
report=$results/parser-$stamp.md
csv=$results/parser-$stamp.csv
cgcsv=$results/parser-$stamp-instructions.csv
simdcsv=$results/parser-$stamp-simd.csv

cpu_model=$(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -n1)
cpus=$(nproc)
build_type=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$build/CMakeCache.txt" 2>/dev/null || true)
cc_id=$(sed -n 's/^CMAKE_C_COMPILER:[A-Z]*=//p' "$build/CMakeCache.txt" 2>/dev/null || true)
cc_version=$("${cc_id:-cc}" --version 2>/dev/null | head -n1 || true)
rev=$(git -C "$root" rev-parse --short HEAD)
lib_rev=$(git -C "$root" log -1 --format='%h %s' -- libcshttp/src libcshttp/include)
dirty=$(git -C "$root" status --porcelain -- libcshttp/src libcshttp/include bench/parser | head -n1)
load() { cut -d' ' -f1-3 /proc/loadavg; }

{
  echo "# Parser benchmark, $(date '+%Y-%m-%d %H:%M')"
  echo
  echo "- commit: $rev${dirty:+ (with uncommitted changes in libcshttp/src, include or bench/parser)}"
  echo "- libcshttp last changed in: $lib_rev"
  echo "- machine: ${cpu_model:-unknown CPU}, $cpus CPUs, $(uname -sr)"
  echo "- build: $build (${build_type:-?}), ${cc_version:-?}"
  echo "- corpus: $corpus"
  echo "- load average before the run: $(load) (a shared machine: compare ratios, not absolute times)"
  echo
} | tee "$report"

if [ "${NO_TIMING:-0}" = 1 ]; then
  echo "(timed runs skipped: NO_TIMING=1)" | tee -a "$report"
else
  # shellcheck disable=SC2086
  "$bin" --csv "$csv" ${BENCH_ARGS:-} "$corpus" | tee -a "$report"
  echo "
Load average after the timed runs: $(load)" | tee -a "$report"
  if [ "${NO_SIMD_VERDICT:-0}" != 1 ]; then
    # The AVX2 copy against the portable one, with an A/A control and the
    # rounds' quartiles: the SIMD verdict (bench/README.md).
    # shellcheck disable=SC2086
    "$bin" --simd --csv "$simdcsv" ${BENCH_ARGS:-} "$corpus" | grep -v '^MANIFEST verified' | tee -a "$report"
    echo "
Load average after the SIMD runs: $(load)" | tee -a "$report"
  fi
fi

if [ "${NO_CALLGRIND:-0}" = 1 ]; then
  echo "(instruction counts skipped: NO_CALLGRIND=1)" | tee -a "$report"
  exit 0
fi
if ! command -v valgrind >/dev/null; then
  echo "(valgrind not installed: no instruction counts)" | tee -a "$report"
  exit 0
fi

# Instructions per request: callgrind counts only bench_callgrind_region (the
# parse loop: parser calls, callbacks, the loop itself), after one warm-up pass.
iters=${CALLGRIND_ITERS:-1000}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

count() { # parser file piece -> instructions per request
  local out=$tmp/cg.out log=$tmp/cg.log ir reqs
  valgrind --tool=callgrind --toggle-collect=bench_callgrind_region \
    --callgrind-out-file="$out" "$bin" --callgrind "$1" --file "$2" --piece "$3" \
    --iters "$iters" "$corpus" >"$log" 2>&1 || { cat "$log" >&2; return 1; }
  ir=$(sed -n 's/^totals: *\([0-9]*\).*/\1/p' "$out" | head -n1)
  [ -n "$ir" ] || ir=$(sed -n 's/^summary: *\([0-9]*\).*/\1/p' "$out" | head -n1)
  reqs=$(sed -n 's/.*requests=\([0-9]*\).*/\1/p' "$log")
  awk -v ir="$ir" -v r="$reqs" 'BEGIN { printf "%.0f", ir / r }'
}

{
  echo
  echo "### Instructions per request (callgrind, $iters passes per file; no machine noise)"
  echo
  echo "hp/cshttp = http_parser instructions / cshttp instructions."
  echo
  echo "| file | feed | cshttp | http_parser | cshttp no-SIMD | hp/cshttp | hp/no-SIMD |"
  echo "|---|---|--:|--:|--:|--:|--:|"
} | tee -a "$report"
echo "file,piece,cshttp,http_parser,cshttp_nosimd" >"$cgcsv"
files=()
for file in $(awk '!/^#/ && NF { print $1 }' "$corpus/MANIFEST"); do
  for piece in 0 64; do
    c=$(count cshttp "$file" "$piece")
    h=$(count http_parser "$file" "$piece")
    n=$(count cshttp-nosimd "$file" "$piece")
    feed=whole; [ "$piece" = 0 ] || feed="$piece B"
    awk -v f="$file" -v feed="$feed" -v c="$c" -v h="$h" -v n="$n" \
      'BEGIN { printf "| %s | %s | %d | %d | %d | %.2fx | %.2fx |\n", f, feed, c, h, n, h / c, h / n }' \
      | tee -a "$report"
    echo "$file,$piece,$c,$h,$n" >>"$cgcsv"
  done
  files+=("$file")
done

# The pieces table: what feeding the same bytes in 64-byte pieces costs
# against the whole buffer, per parser (from the counts above).
{
  echo
  echo "### Pieces: 64-byte pieces against the whole buffer (instructions per request)"
  echo
  echo "| file | cshttp whole | cshttp 64 B | ratio | http_parser whole | http_parser 64 B | ratio | no-SIMD whole | no-SIMD 64 B | ratio |"
  echo "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|"
} | tee -a "$report"
for file in "${files[@]}"; do
  awk -F, -v f="$file" '
    $1 == f && $2 == 0 { cw = $3; hw = $4; nw = $5 }
    $1 == f && $2 == 64 { cp = $3; hp = $4; np = $5 }
    END { printf "| %s | %d | %d | %.2fx | %d | %d | %.2fx | %d | %d | %.2fx |\n",
          f, cw, cp, cp / cw, hw, hp, hp / hw, nw, np, np / nw }' "$cgcsv" | tee -a "$report"
done
awk -F, '
  $2 == 0 { w[$1] = $3; hw[$1] = $4; nw[$1] = $5 }
  $2 == 64 { p[$1] = $3; np[$1] = $5 }
  END {
    print "\n### Goals, in instructions\n"
    if ("b_chrome_get.http" in w)
      printf "- browser GET (b_chrome_get.http), whole: http_parser / cshttp = %.2fx (goal >= 7x): %s\n",
        hw["b_chrome_get.http"] / w["b_chrome_get.http"],
        (hw["b_chrome_get.http"] / w["b_chrome_get.http"] >= 7 ? "met" : "NOT met")
    worst = 0
    for (f in w) if (p[f] / w[f] > worst) { worst = p[f] / w[f]; wf = f }
    printf "- cshttp 64-byte pieces / whole, worst file (%s): %.2fx (goal <= 1.5x): %s\n",
      wf, worst, (worst <= 1.5 ? "met" : "NOT met")
    slower = ""
    for (f in w) if (w[f] > nw[f] || p[f] > np[f]) slower = slower " " f
    printf "- AVX2 copy with more instructions than the portable one on:%s\n", (slower == "" ? " none" : slower)
  }' "$cgcsv" | tee -a "$report"

# The SIMD verdict by line length, in instructions: the synthetic requests of
# bench_parser --simd (20 field lines of one length), both copies.
{
  echo
  echo "### SIMD against portable by line length, in instructions per request"
  echo
  echo "| line bytes | SIMD whole | no-SIMD whole | no-SIMD/SIMD | SIMD 64 B | no-SIMD 64 B | no-SIMD/SIMD |"
  echo "|--:|--:|--:|--:|--:|--:|--:|"
} | tee -a "$report"
for len in 8 12 16 24 32 48 64 96 128; do
  sw=$(count cshttp "lines:$len" 0)
  nw=$(count cshttp-nosimd "lines:$len" 0)
  sp=$(count cshttp "lines:$len" 64)
  np=$(count cshttp-nosimd "lines:$len" 64)
  awk -v l="$len" -v sw="$sw" -v nw="$nw" -v sp="$sp" -v np="$np" \
    'BEGIN { printf "| %d | %d | %d | %.2fx | %d | %d | %.2fx |\n", l, sw, nw, nw / sw, sp, np, np / sp }' \
    | tee -a "$report"
done

# What the read loop's calls cost (bench/parser/api_costs.c): one callgrind
# run, each cost_* function's inclusive count less the bare loop's, per call.
costs_bin=$build/bench/parser/api_costs
if [ -x "$costs_bin" ]; then
  valgrind --tool=callgrind --callgrind-out-file="$tmp/costs.out" "$costs_bin" >"$tmp/costs.log" 2>&1 \
    || { cat "$tmp/costs.log" >&2; exit 1; }
  calls=$(sed -n 's/^api_costs: \([0-9]*\) calls.*/\1/p' "$tmp/costs.log")
  {
    echo
    echo "### What a call costs (instructions per call, callgrind; the loop around it subtracted)"
    echo
    echo "| call | instructions |"
    echo "|---|--:|"
    callgrind_annotate --inclusive=yes --threshold=100 "$tmp/costs.out" 2>/dev/null \
      | sed -n 's/^ *\([0-9,]*\) ([^)]*) *[^ ]*:cost_\([a-z_]*\) .*/\2 \1/p' | tr -d , \
      | awk -v n="$calls" '
          { c[$1] = $2; order[++k] = $1 }
          END {
            for (i = 1; i <= k; i++)
              if (order[i] != "loop") {
                v = (c[order[i]] - c["loop"]) / n
                printf "| %s | %.0f |\n", order[i], v < 0 ? 0 : v
              }
          }' | sort
  } | tee -a "$report"
fi

echo | tee -a "$report"
echo "report: $report" >&2
