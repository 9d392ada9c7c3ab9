#!/usr/bin/env python3
"""Every error code written in a public header lies below -4095.

test_error_ranges.c checks the tables it knows by name; this reads every
public header of the three libraries, so that a table or a constant added
later is held to the same rule (README.md, Result codes): a row of an
X-macro map, XX(NAME, -N, ...), an enumerator or a #define of a name with
"_E_" in it set to a negative number. Exit 1 names each one in -4095 .. -1.

  check_error_ranges.py --root REPO
"""
import argparse
import os
import re
import sys

ROW = re.compile(r"\bXX\(\s*([A-Z0-9_]+)\s*,\s*\(?\s*(-\d+)")
NAMED = re.compile(r"\b([A-Z0-9_]*_E_[A-Z0-9_]+)\s*(?:=|\s)\s*\(?\s*(-\d+)\s*\)?")


def codes(path):
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            for m in ROW.finditer(line):
                yield lineno, m.group(1), int(m.group(2))
            for m in NAMED.finditer(line):
                yield lineno, m.group(1), int(m.group(2))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", required=True)
    args = ap.parse_args()
    seen = bad = 0
    for lib in ("libcshttp", "libcshttp-web", "libcshttp-server"):
        for top, _, files in os.walk(os.path.join(args.root, lib, "include")):
            for name in sorted(files):
                if not name.endswith(".h"):
                    continue
                path = os.path.join(top, name)
                for lineno, const, value in codes(path):
                    seen += 1
                    if -4095 <= value <= -1:
                        bad += 1
                        print(f"{os.path.relpath(path, args.root)}:{lineno}: {const} is {value}, "
                              "in the -errno range -4095 .. -1")
    if seen < 100:
        print(f"only {seen} error codes found in the public headers: the patterns no longer match")
        return 1
    print(f"{seen} error codes in the public headers, {bad} in the -errno range")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
