#!/usr/bin/env python3
"""One list of exported symbols per library, three places that must agree.

For a library: the names its public headers declare with its export macro
(CSH_EXPORT, CSHW_EXPORT, CSHS_EXPORT), the names its linker version script
lists under `global:`, and the dynamic symbols its shared object defines
(nm -D --defined-only), each of them bound to the script's version node as
the default version (name@@NODE). Any name in one place and not another is
an error, and so is a symbol of another version or none.

  check_exports.py --nm nm --export-macro CSH_EXPORT --include libcshttp/include \\
                   --map libcshttp/libcshttp.map --lib build/libcshttp/libcshttp.so
  check_exports.py --selftest --cc cc --nm nm

--selftest builds small libraries that break each rule once and checks that
each is reported (and that one that breaks none passes).
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", " ", text)


def header_names(include_dir, macro):
    """Functions declared `MACRO ... name(` in the headers under include_dir."""
    names = set()
    pattern = re.compile(r"\b" + re.escape(macro) + r"\b([^;{}()]*?)\b([A-Za-z_]\w*)\s*\(")
    for root, _, files in os.walk(include_dir):
        for f in sorted(files):
            if not f.endswith(".h"):
                continue
            with open(os.path.join(root, f), encoding="utf-8") as fh:
                text = strip_comments(fh.read())
            # the macro's own definition and #if lines are not declarations
            text = "\n".join(l for l in text.splitlines() if not l.lstrip().startswith("#"))
            for m in pattern.finditer(text):
                names.add(m.group(2))
    return names


def map_names(map_path):
    """{name: version node} of the names under each node's `global:`. The
    first node (the SONAME's) ends with `local: *;`; each later one (a
    compatible release's functions, README.md, Versioning) inherits the
    node before it."""
    with open(map_path, encoding="utf-8") as fh:
        text = strip_comments(fh.read())
    nodes = re.findall(r"([A-Za-z_][\w.]*)\s*\{(.*?)\}\s*([\w.]*)\s*;", text, flags=re.S)
    if not nodes:
        raise SystemExit(f"{map_path}: no version node")
    names = {}
    for i, (node, body, parent) in enumerate(nodes):
        m = re.search(r"global\s*:(.*?)(local\s*:|$)", body, flags=re.S)
        if not m:
            raise SystemExit(f"{map_path}: {node} has no global: section")
        if i == 0:
            if parent or not re.search(r"local\s*:\s*\*\s*;", body):
                raise SystemExit(f"{map_path}: the first node must end with 'local: *;' and "
                                 f"inherit nothing")
        elif parent != nodes[i - 1][0]:
            raise SystemExit(f"{map_path}: {node} must inherit {nodes[i - 1][0]}, the node "
                             f"before it (it names '{parent}')")
        for n in m.group(1).split(";"):
            n = n.strip()
            if n:
                names[n] = node
    return names


def lib_symbols(nm, lib):
    """{name: version string ('@@NODE', '@NODE' or '')} of the defined dynamic symbols."""
    out = subprocess.run([nm, "-D", "--defined-only", lib], check=True, capture_output=True,
                         text=True).stdout
    syms = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) < 3:
            continue
        kind, full = parts[1], parts[2]
        if kind == "A":  # the version node itself
            continue
        name, sep, ver = full.partition("@")
        syms[name] = (sep + ver) if sep else ""
    return syms


def check(nm, macro, include, map_path, lib):
    errors = []
    declared = header_names(include, macro)
    nodes = map_names(map_path)
    mapped = set(nodes)
    syms = lib_symbols(nm, lib)
    exported = set(syms)
    for what, a, b in (("declared in the headers but not in the map", declared, mapped),
                       ("in the map but not declared in the headers", mapped, declared),
                       ("in the map but not exported by the library", mapped, exported),
                       ("exported by the library but not in the map", exported, mapped)):
        for n in sorted(a - b):
            errors.append(f"{n}: {what}")
    for n in sorted(exported & mapped):
        if syms[n] != "@@" + nodes[n]:
            errors.append(f"{n}: version '{syms[n] or 'none'}', not @@{nodes[n]}")
    return errors, len(declared)


def selftest(cc, nm):
    """Each broken library must be reported; the sound one must pass."""
    header = """
#define T_EXPORT __attribute__((visibility("default")))
T_EXPORT int t_one(void);
T_EXPORT int t_two(int a,
                   int b); /* over two lines */
/* T_EXPORT int t_commented(void); */
"""
    source = """
#include "t.h"
int t_one(void) { return 1; }
int t_two(int a, int b) { return a + b; }
T_EXPORT int t_extra(void) { return 3; }
"""
    good_map = "T_0.1 {\n  global:\n    t_one;\n    t_two;\n  local:\n    *;\n};\n"
    cases = {
        # name: (map text (None: linked without one), extra header text,
        #        expect failure, text the report must hold)
        "sound": (good_map, "", False, None),
        "map lacks a declared name": (good_map.replace("    t_two;\n", ""), "", True, "t_two"),
        "map names a symbol nobody has": (good_map.replace("t_two;", "t_two;\n    t_ghost;"),
                                          "", True, "t_ghost"),
        "header declares one the library hides": (
            good_map, "T_EXPORT int t_hidden(void);\n", True, "t_hidden"),
        "map without local: *": (good_map.replace("local:\n    *;", "local:\n    t_x;"), "", True,
                                 "local"),
        "library linked without the map": (None, "", True, "t_extra"),
        "a compatible release's node": (
            good_map.replace("    t_two;\n", "") + "T_0.1.1 {\n  global:\n    t_two;\n} T_0.1;\n",
            "", False, None),
        "a later node that does not inherit the one before": (
            good_map.replace("    t_two;\n", "") + "T_0.1.1 {\n  global:\n    t_two;\n};\n",
            "", True, "inherit"),
    }
    failures = 0
    with tempfile.TemporaryDirectory() as d:
        inc = os.path.join(d, "include")
        os.makedirs(inc)
        for i, (name, (map_text, extra, expect_fail, needle)) in enumerate(cases.items()):
            with open(os.path.join(inc, "t.h"), "w") as fh:
                fh.write(header + extra)
            src = os.path.join(d, "t.c")
            with open(src, "w") as fh:
                fh.write(source)
            mp = os.path.join(d, f"t{i}.map")
            with open(mp, "w") as fh:
                fh.write(map_text or good_map)
            lib = os.path.join(d, f"libt{i}.so")
            script = [f"-Wl,--version-script={mp}"] if map_text else []
            subprocess.run([cc, "-shared", "-fPIC", "-fvisibility=hidden", "-I", inc, "-o", lib,
                            src] + script, check=True)
            try:
                errors, _ = check(nm, "T_EXPORT", inc, mp, lib)
            except SystemExit as e:
                errors = [str(e)]
            failed = bool(errors)
            ok = failed == expect_fail and (needle is None or any(needle in e for e in errors))
            print(f"{'ok  ' if ok else 'FAIL'} {name}: {errors or 'no error'}")
            failures += not ok
    return failures


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--nm", default="nm")
    ap.add_argument("--cc", default="cc")
    ap.add_argument("--export-macro")
    ap.add_argument("--include")
    ap.add_argument("--map")
    ap.add_argument("--lib")
    ap.add_argument("--selftest", action="store_true")
    a = ap.parse_args()
    if a.selftest:
        sys.exit(1 if selftest(a.cc, a.nm) else 0)
    errors, n = check(a.nm, a.export_macro, a.include, a.map, a.lib)
    for e in errors:
        print(f"{a.lib}: {e}")
    if errors:
        sys.exit(1)
    print(f"{os.path.basename(a.lib)}: {n} symbols, headers, map and library agree")


if __name__ == "__main__":
    main()
