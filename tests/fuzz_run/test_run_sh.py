#!/usr/bin/env python3
"""fuzz/run.sh with stand-in fuzz targets: shell scripts in a fake build
folder that answer as libFuzzer does, so that what the script decides
(which targets run, how many at a time, what fails the run) is tested in
a second, without a fuzz build.

    test_run_sh.py --repo REPO
"""

import argparse
import os
import subprocess
import sys
import tempfile

# A stand-in target. It notes itself running in $STANDIN_DIR and records
# how many stand-ins were running when it started and before it ends (it
# lasts 0.2 s, so that targets started beyond the limit would be seen). The
# ones named in $STANDIN_WAIT wait up to 10 s for another to run beside
# them, so that running side by side is seen rather than timed. It answers
# as libFuzzer does; the one named in $STANDIN_FAIL fails as an ASan
# finding would.
STANDIN = r"""#!/bin/sh
d=$STANDIN_DIR
name=$(basename "$0")
touch "$d/running.$name"
ls "$d" | grep -c '^running\.' > "$d/seen.$name"
sleep 0.2
i=0
case " $STANDIN_WAIT " in
*" $name "*)
    while [ "$(ls "$d" | grep -c '^running\.')" -lt 2 ] && [ $i -lt 100 ]; do
        sleep 0.1; i=$((i+1))
    done
    ;;
esac
ls "$d" | grep -c '^running\.' >> "$d/seen.$name"
echo "$*" > "$d/args.$name"
if [ "$name" = "$STANDIN_FAIL" ]; then
    echo "==1==ERROR: AddressSanitizer: heap-buffer-overflow (stand-in)"
    rm -f "$d/running.$name"
    exit 1
fi
echo "#42	DONE   cov: 7 ft: 9 corp: 3/30b lim: 4 exec/s: 0 rss: 1Mb"
echo "stat::average_exec_per_sec:     1000"
rm -f "$d/running.$name"
exit 0
"""

failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def targets(repo):
    return sorted(f[:-2] for f in os.listdir(os.path.join(repo, "fuzz"))
                  if f.startswith("fuzz_") and f.endswith(".c"))


def setup(tmp, names):
    build = os.path.join(tmp, "build")
    os.makedirs(os.path.join(build, "fuzz"))
    for n in names:
        p = os.path.join(build, "fuzz", n)
        with open(p, "w") as f:
            f.write(STANDIN)
        os.chmod(p, 0o755)
    state = os.path.join(tmp, "state")
    os.makedirs(state)
    return build, state


def run(repo, build, state, tmp, which, env_extra):
    env = dict(os.environ, STANDIN_DIR=state, FUZZ_FINDINGS=os.path.join(tmp, "findings"))
    env.pop("FUZZ_JOBS", None)
    env.pop("FUZZ_PARALLEL", None)
    env.update(env_extra)
    return subprocess.run(["bash", os.path.join(repo, "fuzz", "run.sh"), build, which, "1"],
                          capture_output=True, text=True, env=env, timeout=300)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repo", required=True)
    a = ap.parse_args()
    names = targets(a.repo)
    check(len(names) >= 2, "fuzz/ has fuzz targets (%d)" % len(names))

    # every target, two at a time: all run, never more than two at once,
    # two did run side by side, the summary lists them in order
    with tempfile.TemporaryDirectory() as tmp:
        build, state = setup(tmp, names)
        p = run(a.repo, build, state, tmp, "all",
                {"FUZZ_PARALLEL": "2", "STANDIN_WAIT": " ".join(names[:2])})
        check(p.returncode == 0, "all pass: exit 0 (got %d; %s)" % (p.returncode, p.stderr[-300:]))
        ran = [n for n in names if os.path.exists(os.path.join(state, "args." + n))]
        check(ran == names, "every target ran (%d of %d)" % (len(ran), len(names)))
        seen = []
        for n in names:
            try:
                seen += [int(x) for x in open(os.path.join(state, "seen." + n)).read().split()]
            except (OSError, ValueError):
                pass
        check(seen and max(seen) <= 2, "never more than FUZZ_PARALLEL=2 at once (max %s)" %
              (max(seen) if seen else None))
        check(2 in seen, "two targets ran side by side")
        args = open(os.path.join(state, "args." + names[0])).read()
        check("-max_total_time=1" in args and "-dict=" in args,
              "each target gets its seconds and the dictionary (%s)" % args.strip()[:120])
        summary = p.stdout.split("== summary", 1)[-1]
        order = [line.split(":")[0] for line in summary.strip().splitlines()]
        check(order == names, "the summary lists the targets in their order")
        check(all(("== %s:" % n) in p.stdout for n in names), "each target's report is printed")

    # one target fails: the run fails and says which, the others still run
    with tempfile.TemporaryDirectory() as tmp:
        build, state = setup(tmp, names)
        bad = names[len(names) // 2]
        p = run(a.repo, build, state, tmp, "all", {"FUZZ_PARALLEL": "2", "STANDIN_FAIL": bad})
        check(p.returncode == 1, "a failing target fails the run: exit 1 (got %d)" % p.returncode)
        check(("!! %s FOUND A PROBLEM" % bad) in p.stdout, "the report names the failing target")
        check("AddressSanitizer" in p.stdout, "the report quotes the finding")
        ran = [n for n in names if os.path.exists(os.path.join(state, "args." + n))]
        check(ran == names, "the other targets still ran (%d of %d)" % (len(ran), len(names)))

    # one target alone, and a target that is not built
    with tempfile.TemporaryDirectory() as tmp:
        build, state = setup(tmp, names[:1])
        p = run(a.repo, build, state, tmp, names[0], {})
        check(p.returncode == 0, "one target: exit 0 (got %d)" % p.returncode)
        p = run(a.repo, build, state, tmp, "all", {"FUZZ_PARALLEL": "3"})
        check(p.returncode == 0 and "WARNING" in p.stderr and names[1] in p.stderr,
              "all with targets not built: they are named and skipped (exit %d)" % p.returncode)
        p = run(a.repo, build, state, tmp, "fuzz_no_such_target", {})
        check(p.returncode == 2, "an unknown target: exit 2 (got %d)" % p.returncode)
        for bad in ("0", "x", "-1"):
            p = run(a.repo, build, state, tmp, "all", {"FUZZ_PARALLEL": bad})
            check(p.returncode == 2 and "FUZZ_PARALLEL" in p.stderr,
                  "FUZZ_PARALLEL=%s is refused by name (exit %d)" % (bad, p.returncode))

    if failures:
        print("%d check(s) failed" % len(failures))
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
