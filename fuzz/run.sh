#!/usr/bin/env bash
# Runs libFuzzer targets for a while and fails if one of them finds a crash.
#
#   bash fuzz/run.sh BUILD_DIR TARGET|all SECONDS
#
# BUILD_DIR is a CSHTTP_BUILD_FUZZ=ON libFuzzer build (make fuzz-build:
# build-fuzz). Each target runs SECONDS (-max_total_time) on a work corpus,
# fuzz/findings/<target>/corpus (git-ignored, kept between runs so coverage
# accumulates), seeded from fuzz/corpus/<target>/ and fuzz/regressions/<target>/,
# with the dictionary fuzz/<target>.dict when there is one, else
# fuzz/http.dict. Crash reproducers go to
# fuzz/findings/<target>/ (crash-*, leak-*, timeout-*, oom-*), the log to
# fuzz/findings/<target>/fuzz.log.
#
# Environment:
#   FUZZ_JOBS=N   run N fuzzing processes per target (libFuzzer -fork=N),
#                 for long runs on several cores
#   FUZZ_ARGS=... more libFuzzer flags (e.g. -max_len=16384)
#   FUZZ_FINDINGS=DIR  where the work corpora, logs and reproducers go
#                 (default fuzz/findings)
#   FUZZ_PARALLEL=N  with TARGET all, fuzz N targets at a time (default: the
#                 number of cores, or 1 with FUZZ_JOBS). Each target still
#                 gets its SECONDS on one core; the reports are printed in
#                 the targets' order once all have ended.
#
# Exit status: 0 if no target found anything, 1 if one did (the reproducer's
# path is printed), 2 on a usage or build problem.
set -uo pipefail

if [ $# -ne 3 ]; then
    echo "usage: $0 BUILD_DIR TARGET|all SECONDS" >&2
    exit 2
fi
build=$1
which=$2
seconds=$3
case $seconds in
'' | *[!0-9]*)
    echo "run.sh: SECONDS must be a number, not '$seconds'" >&2
    exit 2
    ;;
esac

here=$(cd "$(dirname "$0")" && pwd)
findings=${FUZZ_FINDINGS:-$here/findings}
bindir=$build/fuzz
[ -d "$bindir" ] || { echo "run.sh: $bindir does not exist (make fuzz-build)" >&2; exit 2; }
bindir=$(cd "$bindir" && pwd)

if [ "$which" = all ]; then
    targets=$(cd "$here" && ls fuzz_*.c | sed 's/\.c$//')
else
    targets=$which
fi

# One target's run. Everything it prints goes to standard output, which the
# caller sends to a file of its own, so that targets run side by side do not
# interleave their reports; its status is 1 when it found a problem.
fuzz_one() {
    local t=$1 bin=$bindir/$1
    local out=$findings/$t
    local work=$out/corpus
    mkdir -p "$work"
    for seeds in "$here/corpus/$t" "$here/regressions/$t"; do
        [ -d "$seeds" ] || continue
        find "$seeds" -maxdepth 1 -type f ! -name '.*' -exec cp -p -t "$work/" {} +
    done
    local before after new stats execs line rc
    before=$(ls "$out" | grep -E '^(crash|leak|timeout|oom|slow-unit)-' | sort)
    local log=$out/fuzz.log
    local dict=$here/http.dict
    [ -f "$here/$t.dict" ] && dict=$here/$t.dict
    local jobs=()
    if [ -n "${FUZZ_JOBS:-}" ] && [ "${FUZZ_JOBS}" -gt 1 ]; then
        jobs=(-fork="$FUZZ_JOBS" -ignore_crashes=0)
    fi
    echo "== $t: ${seconds}s, work corpus $work ($(ls "$work" | wc -l) inputs)"
    # shellcheck disable=SC2086
    ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1:symbolize=1} \
    UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
        "$bin" "${jobs[@]}" -max_total_time="$seconds" -dict="$dict" \
        -artifact_prefix="$out/" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
        ${FUZZ_ARGS:-} "$work" >"$log" 2>&1
    rc=$?
    after=$(ls "$out" | grep -E '^(crash|leak|timeout|oom|slow-unit)-' | sort)
    new=$(comm -13 <(echo "$before") <(echo "$after") | grep -v '^$' || true)
    stats=$(grep -E '^#[0-9]+[[:space:]]+(DONE|pulse|NEW|REDUCE|INITED)' "$log" | tail -1 |
        sed -E 's/^#([0-9]+)[[:space:]]+[A-Z]+[[:space:]]+/runs=\1 /; s/ (lim|exec\/s|rss|L|MS): .*//')
    execs=$(grep -E '^stat::average_exec_per_sec' "$log" | tail -1 | awk '{print $2}')
    line="$t: rc=$rc ${execs:+exec/s=$execs }$stats"
    echo "   $line"
    if [ $rc -ne 0 ] || [ -n "$new" ]; then
        echo "!! $t FOUND A PROBLEM (log: $log)"
        grep -E 'ERROR: |fuzz check failed|==== |SUMMARY: |differ|disagree' "$log" | head -20
        for f in $new; do
            echo "!! reproducer: $out/$f"
            echo "!!   replay:   $bin $out/$f"
            echo "!!   keep it:  cp $out/$f $here/regressions/$t/"
        done
        if [ -z "$new" ]; then
            grep -E 'Test unit written to|artifact' "$log" | tail -3
        fi
        return 1
    fi
    return 0
}

parallel=1
if [ "$which" = all ] && [ -z "${FUZZ_JOBS:-}" ]; then
    parallel=${FUZZ_PARALLEL:-$(nproc)}
fi
case $parallel in
'' | *[!0-9]* | 0)
    echo "run.sh: FUZZ_PARALLEL must be a positive number, not '$parallel'" >&2
    exit 2
    ;;
esac

reports=$(mktemp -d)
trap 'rm -rf "$reports"' EXIT
ran=()
skipped=""
for t in $targets; do
    if [ ! -x "$bindir/$t" ]; then
        if [ "$which" = all ]; then
            # fuzz_http_parser is left out of the build when http_parser is
            # missing (CMake warned); a new fuzz_*.c may not be in
            # CMakeLists.txt yet. Say so loudly, and run the others.
            echo "run.sh: WARNING: $t is not built ($bindir/$t missing), skipped" >&2
            skipped+="$t "
            continue
        fi
        echo "run.sh: $bindir/$t not found (not a fuzz build, or unknown target '$t')" >&2
        exit 2
    fi
    while [ "$(jobs -rp | wc -l)" -ge "$parallel" ]; do
        wait -n
    done
    echo "-- $t: started"
    { fuzz_one "$t" >"$reports/$t.out" 2>&1; echo $? >"$reports/$t.rc"; } &
    ran+=("$t")
done
wait

failed=0
summary=""
for t in "${ran[@]}"; do
    cat "$reports/$t.out"
    summary+="$(grep -m1 -E "^   $t: rc=" "$reports/$t.out" | sed 's/^   //')"$'\n'
    if [ "$(cat "$reports/$t.rc" 2>/dev/null)" != 0 ]; then
        failed=1
        echo "!! $t: see its report above" >&2
    fi
done

echo "== summary"
printf '%s' "$summary"
[ -z "$skipped" ] || echo "not built, skipped: $skipped"
if [ $failed -ne 0 ]; then
    echo "run.sh: a target found a problem; see above" >&2
    exit 1
fi
exit 0
