#!/usr/bin/env python3
"""The ABI of each library against the baseline of the last release.

abi/<library>.abi is the abidw description of the library as released
(scripts/abi-baseline.sh); this compares a fresh build with it through
abidiff. Any change fails but two: functions added (a compatible change
that goes into a new version node, README.md, Versioning) and the option
structs growing at their end (abi/cshttp.abignore). A removed or changed
function, a changed type, a new SONAME: each fails, until the release that
makes it on purpose regenerates the baseline.

  check_abi.py --abidiff abidiff --baseline abi --suppressions abi/cshttp.abignore \\
               --headers libcshttp/include ... --lib libcshttp=build/libcshttp/libcshttp.so ...
  check_abi.py --selftest --source . --abidiff abidiff --cmake cmake --cc cc

--selftest builds libcshttp from a copy of the sources three times, each
with one change, and checks the verdict on each: a field inserted in
csh_message and a function no longer exported must fail; a field appended
to csh_limits with a function added must pass.
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile


def abidiff(tool, baseline, lib, suppressions, headers):
    # the types of the public headers only, as in the baseline
    # (scripts/abi-baseline.sh): an opaque struct's insides are no one's ABI
    cmd = [tool, "--no-added-syms", "--drop-private-types"]
    for h in headers:
        cmd += ["--headers-dir2", h]
    if suppressions:
        cmd += ["--suppressions", suppressions]
    cmd += [baseline, lib]
    r = subprocess.run(cmd, capture_output=True, text=True)
    return r.returncode, (r.stdout + r.stderr).strip()


def check(tool, baseline_dir, suppressions, headers, libs):
    failed = 0
    for spec in libs:
        name, _, path = spec.partition("=")
        base = os.path.join(baseline_dir, name + ".abi")
        if not os.path.exists(base):
            print(f"{name}: no baseline {base} (scripts/abi-baseline.sh writes it)")
            failed += 1
            continue
        rc, out = abidiff(tool, base, path, suppressions, headers)
        if rc == 0:
            print(f"{name}: the ABI of {base}, nothing removed or changed")
            continue
        failed += 1
        print(f"{name}: the ABI differs from {base} (abidiff exit {rc}):")
        print("    " + out.replace("\n", "\n    "))
        print(f"{name}: an incompatible change needs a new SONAME (the version in "
              f"{name}/include/.../version.h) and a new baseline (scripts/abi-baseline.sh); "
              "see README.md, Versioning")
    return failed


def edit(path, old, new):
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    if old not in text:
        raise SystemExit(f"selftest: {path} no longer holds {old!r}: update the selftest")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text.replace(old, new, 1))


def selftest(a):
    """Builds libcshttp with one change at a time and checks the verdict."""
    def insert_message_field(src):
        edit(os.path.join(src, "include/cshttp/parser.h"), "typedef struct csh_message {\n",
             "typedef struct csh_message {\n    int inserted;\n")

    def hide_a_function(src):
        edit(os.path.join(src, "libcshttp.map"), "    csh_method_name;\n", "")

    def grow_limits_add_function(src):
        edit(os.path.join(src, "include/cshttp/parser.h"),
             "                              method a server implements) */\n} csh_limits;",
             "                              method a server implements) */\n"
             "    size_t max_appended;\n} csh_limits;")
        # the struct's last field, named where its tail padding is checked
        edit(os.path.join(src, "src/limits.c"), "CSH__SIZED_NO_TAIL_PADDING(csh_limits, max_method)",
             "CSH__SIZED_NO_TAIL_PADDING(csh_limits, max_appended)")
        edit(os.path.join(src, "include/cshttp/cshttp.h"), "CSH_EXPORT unsigned csh_version(void);",
             "CSH_EXPORT unsigned csh_version(void);\nCSH_EXPORT int csh_selftest_added(void);")
        with open(os.path.join(src, "src/version.c"), "a", encoding="utf-8") as fh:
            fh.write("\nint csh_selftest_added(void)\n{\n    return 1;\n}\n")
        edit(os.path.join(src, "libcshttp.map"), "  local:", "    csh_selftest_added;\n  local:")

    cases = [("a field inserted in csh_message", insert_message_field, False, "csh_message"),
             ("csh_method_name no longer exported", hide_a_function, False, "csh_method_name"),
             ("a field appended to csh_limits, a function added", grow_limits_add_function, True,
              None)]
    base = os.path.join(a.baseline, "libcshttp.abi")
    failures = 0
    with tempfile.TemporaryDirectory() as d:
        for i, (name, change, expect_pass, needle) in enumerate(cases):
            # libcshttp and the headers private to the libraries beside it,
            # as in the workspace (its build includes ../internal/include)
            src = os.path.join(d, f"src{i}", "libcshttp")
            shutil.copytree(os.path.join(a.source, "libcshttp"), src,
                            ignore=shutil.ignore_patterns("tests"))
            shutil.copytree(os.path.join(a.source, "internal"), os.path.join(d, f"src{i}", "internal"))
            change(src)
            build = os.path.join(d, f"build{i}")
            env = dict(os.environ, CC=a.cc)
            subprocess.run([a.cmake, "-S", src, "-B", build, "-DCMAKE_BUILD_TYPE=RelWithDebInfo",
                            "-DCSHTTP_BUILD_TESTS=OFF"], check=True, env=env,
                           stdout=subprocess.DEVNULL)
            subprocess.run([a.cmake, "--build", build, "--target", "cshttp", "-j", a.jobs],
                           check=True, env=env, stdout=subprocess.DEVNULL)
            rc, out = abidiff(a.abidiff, base, os.path.join(build, "libcshttp.so"),
                              a.suppressions, [os.path.join(src, "include")])
            ok = (rc == 0) == expect_pass and (needle is None or needle in out)
            verdict = "passes" if rc == 0 else f"fails (abidiff exit {rc})"
            print(f"{'ok  ' if ok else 'FAIL'} {name}: {verdict}")
            if not ok:
                print("    " + out.replace("\n", "\n    "))
            failures += not ok
    return failures


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--abidiff", default="abidiff")
    ap.add_argument("--baseline", required=True, help="the folder of the .abi files")
    ap.add_argument("--suppressions")
    ap.add_argument("--lib", action="append", default=[], help="NAME=path/to/NAME.so")
    ap.add_argument("--headers", action="append", default=[],
                    help="a folder of public headers (each tier's include/)")
    ap.add_argument("--selftest", action="store_true")
    ap.add_argument("--source", help="selftest: the repository root")
    ap.add_argument("--cmake", default="cmake")
    ap.add_argument("--cc", default="cc")
    ap.add_argument("--jobs", default="2")
    a = ap.parse_args()
    if a.selftest:
        sys.exit(1 if selftest(a) else 0)
    sys.exit(1 if check(a.abidiff, a.baseline, a.suppressions, a.headers, a.lib) else 0)


if __name__ == "__main__":
    main()
