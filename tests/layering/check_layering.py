#!/usr/bin/env python3
"""The one-way rule between the tiers, checked on the sources and the binary.

  (a) libcshttp/src and libcshttp/include include only C standard and POSIX
      libc headers (plus the compiler's SIMD intrinsics headers) and their own
      headers: no OpenSSL, zlib, pthread, nothing of libcshttp-web or
      libcshttp-server. The headers private to the libraries
      (internal/include, in every library's build) are held to the same rule.
  (b) the built libcshttp.so needs libc alone (readelf -d NEEDED entries:
      libc.so.6, the dynamic loader; the sanitizer runtimes in a sanitizer
      build).
  (c) no file of a lower tier includes a header of a higher tier: libcshttp
      nothing of cshttp/web or cshttp/server, libcshttp-web nothing of
      cshttp/server. Checked on include/, src/ and tests/ of each tier, by
      namespace (cshttp/web/..., cshttp/server.h) and by where the included
      file actually is, so "../../libcshttp-server/..." is caught too.

  (d) the engine's client (libcshttp-server/src/client.c, its other
      sources src/client_*.c and .h, and its public header
      cshttp/server/client.h) uses libcshttp for responses and
      nothing of the toolkit: following its includes through the
      workspace's own headers, it reaches cshttp/parser.h and no header of
      libcshttp-web (server_impl.h, which brings the toolkit, included).

Usage:
  check_layering.py --root REPO [--lib path/to/libcshttp.so] [--sanitize LIST]
  check_layering.py --selftest [--cc CC]   (proves every check can fail)
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

# (folder, rank, public header namespace). More specific namespaces first.
TIERS = [
    ("libcshttp", 1, ("cshttp/",)),
    ("libcshttp-web", 2, ("cshttp/web/", "cshttp/web.h")),
    ("libcshttp-server", 3, ("cshttp/server/", "cshttp/server.h")),
]
RANK = {name: rank for name, rank, _ in TIERS}
SOURCE_EXT = (".c", ".h", ".inc", ".def")

# C11 standard headers. threads.h is left out with pthread.h: Tier 1 has no
# threads and no global state.
C_STANDARD = {
    "assert.h", "complex.h", "ctype.h", "errno.h", "fenv.h", "float.h", "inttypes.h",
    "iso646.h", "limits.h", "locale.h", "math.h", "setjmp.h", "signal.h", "stdalign.h",
    "stdarg.h", "stdatomic.h", "stdbool.h", "stddef.h", "stdint.h", "stdio.h", "stdlib.h",
    "stdnoreturn.h", "string.h", "tgmath.h", "time.h", "uchar.h", "wchar.h", "wctype.h",
}
# POSIX / glibc headers served by libc itself. Extend when one is really needed.
POSIX_LIBC = {
    "unistd.h", "strings.h", "sys/types.h", "sys/uio.h", "sys/param.h", "sys/cdefs.h",
    "features.h", "endian.h", "byteswap.h", "sys/auxv.h", "fcntl.h", "sys/stat.h",
    "sys/mman.h",
}
# The compiler's own headers for SIMD intrinsics and CPU detection: no library.
INTRINSICS = {
    "immintrin.h", "x86intrin.h", "xmmintrin.h", "emmintrin.h", "pmmintrin.h",
    "tmmintrin.h", "smmintrin.h", "nmmintrin.h", "avxintrin.h", "avx2intrin.h", "cpuid.h",
    "arm_neon.h", "arm_acle.h",
}
ALLOWED_SYSTEM = C_STANDARD | POSIX_LIBC | INTRINSICS

# NEEDED entries libcshttp.so may have.
NEEDED_OK = [r"libc\.so\.6", r"ld-linux[-\w.]*\.so\.\d+", r"ld64\.so\.\d+"]
NEEDED_SANITIZER = [r"libasan\.so\.\d+", r"libubsan\.so\.\d+", r"libtsan\.so\.\d+",
                    r"liblsan\.so\.\d+"]

INCLUDE_RE = re.compile(r"^[ \t]*#[ \t]*include(?:_next)?\b[ \t]*(.*)$", re.M)


def strip_comments(text):
    """Removes /* */ and // comments (keeping line breaks), respecting string
    and character literals, so a commented-out #include is not one."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            out.append("\n" * text.count("\n", i, end) or " ")
            i = end
        elif text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def includes(path):
    """(line number, kind '<' / '"' / '?', name) of each #include in a file."""
    with open(path, encoding="utf-8", errors="replace") as f:
        text = strip_comments(f.read())
    found = []
    for m in INCLUDE_RE.finditer(text):
        line = text.count("\n", 0, m.start()) + 1
        spec = m.group(1).strip()
        if spec.startswith("<") and ">" in spec:
            found.append((line, "<", spec[1:spec.index(">")]))
        elif spec.startswith('"') and '"' in spec[1:]:
            found.append((line, '"', spec[1:spec.index('"', 1)]))
        else:
            found.append((line, "?", spec))  # computed include: cannot be checked
    return found


def source_files(folder):
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames.sort()
        for name in sorted(filenames):
            if name.endswith(SOURCE_EXT):
                yield os.path.join(dirpath, name)


def tier_of_path(root, path):
    """The tier folder a file lies in, or None."""
    rel = os.path.relpath(os.path.realpath(path), os.path.realpath(root))
    first = rel.split(os.sep)[0]
    return first if first in RANK else None


def tier_of_namespace(name):
    for tier, _, spaces in reversed(TIERS):
        for ns in spaces:
            if name == ns or (ns.endswith("/") and name.startswith(ns)):
                return tier
    return None


def resolve(root, tier, src_file, kind, name):
    """Where an include leads: (existing path or None, tier or None).
    Search order: the including file's folder (quoted only), its tier's src/
    and include/, then every tier's include/ (lower and higher)."""
    candidates = []
    if kind == '"':
        candidates.append(os.path.join(os.path.dirname(src_file), name))
        candidates.append(os.path.join(root, tier, "src", name))
    candidates.append(os.path.join(root, tier, "include", name))
    candidates.append(os.path.join(root, "internal", "include", name))
    for other, _, _ in TIERS:
        if other != tier:
            candidates.append(os.path.join(root, other, "include", name))
    for c in candidates:
        if os.path.isfile(c):
            return os.path.normpath(c), tier_of_path(root, c)
    return None, tier_of_namespace(name)


def check_tier1_includes(root):
    """(a): libcshttp/src and libcshttp/include: libc and own headers only."""
    problems = []
    own = [os.path.realpath(os.path.join(root, "libcshttp", "include", "cshttp")),
           os.path.realpath(os.path.join(root, "libcshttp", "src")),
           os.path.realpath(os.path.join(root, "internal", "include"))]
    # the headers private to the libraries (internal/include) are part of
    # each library's build: libcshttp includes them, so they too include
    # nothing but libc
    folders = [os.path.join(root, "libcshttp", sub) for sub in ("src", "include")]
    folders.append(os.path.join(root, "internal", "include"))
    for folder in folders:
        for f in source_files(folder):
            rel = os.path.relpath(f, root)
            for line, kind, name in includes(f):
                where = "%s:%d: #include %s" % (rel, line, name)
                if kind == "?":
                    problems.append("(a) %s: computed include, cannot be checked" % where)
                    continue
                path, _ = resolve(root, "libcshttp", f, kind, name)
                if path is not None:
                    real = os.path.realpath(path)
                    inside = [d for d in own if real.startswith(os.path.realpath(d) + os.sep)]
                    # e.g. a cshttp/web/ folder that someone put in libcshttp/include
                    ns = tier_of_namespace("cshttp/" + os.path.relpath(real, own[0]))
                    if not inside or (inside[0] == own[0] and RANK.get(ns, 1) > 1):
                        problems.append("(a) %s: leads to %s, outside libcshttp's own headers"
                                        % (where, os.path.relpath(real, root)))
                elif name not in ALLOWED_SYSTEM:
                    problems.append("(a) %s: neither a libcshttp header nor a C standard / "
                                    "POSIX libc header" % where)
    return problems


def check_tier_order(root):
    """(c): no file of a lower tier includes a header of a higher tier."""
    problems = []
    for tier, rank, _ in TIERS:
        for sub in ("include", "src", "tests"):
            for f in source_files(os.path.join(root, tier, sub)):
                rel = os.path.relpath(f, root)
                for line, kind, name in includes(f):
                    if kind == "?":
                        continue
                    _, target = resolve(root, tier, f, kind, name)
                    if target is not None and RANK[target] > rank:
                        problems.append("(c) %s:%d: #include %s: %s (tier %d) includes %s "
                                        "(tier %d)" % (rel, line, name, tier, rank, target,
                                                       RANK[target]))
    return problems


CLIENT_FILES = ("libcshttp-server/src/client.c",
                "libcshttp-server/include/cshttp/server/client.h")


def client_files(root):
    """CLIENT_FILES and the client's other sources (src/client_*.c, .h)."""
    src = os.path.join(root, "libcshttp-server", "src")
    more = sorted(os.path.join("libcshttp-server", "src", n) for n in
                  (os.listdir(src) if os.path.isdir(src) else [])
                  if n.startswith("client_") and n.endswith((".c", ".h")))
    return list(CLIENT_FILES) + more


def include_closure(root, tier, path, seen):
    """Every workspace file `path` reaches through its includes, and the
    namespaces of includes that resolve to no file: {(path or None, name)}."""
    reached = set()
    stack = [(tier, path)]
    while stack:
        t, f = stack.pop()
        for _, kind, name in includes(f):
            if kind == "?":
                continue
            target, target_tier = resolve(root, t, f, kind, name)
            if target is None:
                reached.add((None, name, target_tier))
                continue
            real = os.path.realpath(target)
            reached.add((real, name, target_tier))
            if real not in seen:
                seen.add(real)
                stack.append((target_tier or t, real))
    return reached


def check_client(root):
    """(d): the client reaches libcshttp's parser and nothing of the toolkit."""
    problems = []
    parser_h = os.path.realpath(os.path.join(root, "libcshttp", "include", "cshttp", "parser.h"))
    for rel in client_files(root):
        path = os.path.join(root, rel)
        if not os.path.isfile(path):
            problems.append("(d) %s: missing" % rel)
            continue
        reached = include_closure(root, "libcshttp-server", path, {os.path.realpath(path)})
        for real, name, target_tier in sorted(reached, key=lambda r: (r[0] or "", r[1])):
            if target_tier == "libcshttp-web":
                problems.append("(d) %s reaches %s (#include %s): the client uses nothing of "
                                "the toolkit" % (rel, os.path.relpath(real, root) if real else
                                                 name, name))
        if not any(real == parser_h for real, _, _ in reached):
            problems.append("(d) %s does not reach cshttp/parser.h: the client parses "
                            "responses with libcshttp" % rel)
    return problems


def needed_entries(readelf, lib):
    """The NEEDED entries of a shared object, or None if it has no dynamic section."""
    out = subprocess.run([readelf, "-d", "-W", lib], stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, check=False)
    if out.returncode != 0 or "Dynamic section" not in out.stdout:
        return None
    return re.findall(r"\(NEEDED\)\s+[^\[]*\[([^\]]*)\]", out.stdout)


def check_needed(readelf, lib, sanitize):
    """(b): the shared object needs libc alone."""
    allowed = NEEDED_OK + (NEEDED_SANITIZER if sanitize else [])
    needed = needed_entries(readelf, lib)
    if needed is None:
        return ["(b) %s: readelf finds no dynamic section (not a shared object?)" % lib], None
    problems = []
    for n in needed:
        if not any(re.fullmatch(p, n) for p in allowed):
            problems.append("(b) %s needs %s: libcshttp must need libc alone" % (lib, n))
    return problems, needed


def run_checks(root, lib, readelf, sanitize):
    problems = check_tier1_includes(root) + check_tier_order(root) + check_client(root)
    needed = None
    if lib:
        p, needed = check_needed(readelf, lib, sanitize)
        problems += p
    return problems, needed


# ---- self-test: every check must fail on a violation ---------------------

def write(root, rel, text):
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def clean_tree(root):
    write(root, "libcshttp/include/cshttp/span.h", "#include <stddef.h>\n#include <string.h>\n")
    write(root, "libcshttp/include/cshttp/parser.h",
          '#include <stdint.h>\n#include "span.h"\n/* #include <openssl/ssl.h> */\n'
          '// #include <cshttp/server/server.h>\nstatic const char *s = "#include <zlib.h>";\n')
    write(root, "libcshttp/src/scan.h", "#include <stddef.h>\n")
    write(root, "libcshttp/src/scan.c",
          '#include "scan.h"\n#include "cshttp/parser.h"\n#include <cshttp/span.h>\n'
          "#if defined(__x86_64__)\n#  include <immintrin.h>\n#endif\n")
    write(root, "libcshttp/tests/test_parser.c", "#include <cmocka.h>\n#include <cshttp/parser.h>\n")
    write(root, "libcshttp-web/include/cshttp/web.h", '#include "web/request.h"\n')
    write(root, "libcshttp-web/include/cshttp/web/request.h",
          "#include <cshttp/parser.h>\n#include <cshttp/span.h>\n")
    write(root, "libcshttp-web/src/gzip.c",
          '#include <zlib.h>\n#include <pthread.h>\n#include "cshttp/web/request.h"\n')
    write(root, "libcshttp-server/include/cshttp/server.h", '#include "server/server.h"\n')
    write(root, "libcshttp-server/include/cshttp/server/server.h",
          "#include <cshttp/web.h>\n#include <openssl/ssl.h>\n")
    write(root, "libcshttp-server/src/server.c", "#include <cshttp/server.h>\n")
    write(root, "libcshttp-server/src/server_impl.h", "#include <cshttp/web.h>\n")
    write(root, "libcshttp-server/include/cshttp/server/export.h", "\n")
    write(root, "libcshttp-server/include/cshttp/server/client.h",
          '#include <stddef.h>\n#include <cshttp/parser.h>\n#include "export.h"\n')
    write(root, "libcshttp-server/src/client.c",
          "#include <openssl/ssl.h>\n#include <cshttp/server/client.h>\n")


# (file, text, the checks that must report it)
VIOLATIONS = [
    ("libcshttp/src/tls.c", "#include <openssl/ssl.h>\n", {"a"}),
    ("libcshttp/src/gz.c", "#include <zlib.h>\n", {"a"}),
    ("libcshttp/include/cshttp/lock.h", "#include <pthread.h>\n", {"a"}),
    ("libcshttp/include/cshttp/t.h", "  #  include <threads.h>\n", {"a"}),
    ("libcshttp/include/cshttp/up.h", "#include <cshttp/web/request.h>\n", {"a", "c"}),
    ("libcshttp/include/cshttp/up2.h", "#include <cshttp/web/not_yet_written.h>\n", {"a", "c"}),
    ("libcshttp/src/up.c",
     '#include "../../libcshttp-server/include/cshttp/server/server.h"\n', {"a", "c"}),
    ("libcshttp/src/up2.c", '#include "cshttp/server.h"\n', {"a", "c"}),
    ("libcshttp/src/m.c", "#include HEADER_NAME\n", {"a"}),
    ("libcshttp/src/out.c", '#include "../../apps/x.h"\n', {"a"}),
    ("libcshttp/tests/test_up.c", "#include <cshttp/web.h>\n", {"c"}),
    ("libcshttp-web/include/cshttp/web/up.h", "#include <cshttp/server/server.h>\n", {"c"}),
    ("libcshttp-web/src/up.c", '#include "cshttp/server.h"\n', {"c"}),
    ("libcshttp-web/src/up2.c",
     '#include "../../libcshttp-server/include/cshttp/server/server.h"\n', {"c"}),
    ("libcshttp-server/src/client.c",
     '#include <cshttp/server/client.h>\n#include "server_impl.h"\n', {"d"}),
    ("libcshttp-server/src/client.c",
     '#include <cshttp/server/client.h>\n#include <cshttp/web/request.h>\n', {"d"}),
    ("libcshttp-server/src/client.c",
     '#include <cshttp/server/client.h>\n#include <cshttp/server.h>\n', {"d"}),
    ("libcshttp-server/src/client_pool.c",
     '#include <cshttp/server/client.h>\n#include "server_impl.h"\n', {"d"}),
    ("libcshttp-server/src/client_impl.h", '#include <cshttp/web/request.h>\n', {"d"}),
    ("libcshttp-server/include/cshttp/server/client.h",
     '#include <cshttp/parser.h>\n#include <cshttp/web/not_yet_written.h>\n', {"d"}),
    ("libcshttp-server/include/cshttp/server/client.h", '#include <stddef.h>\n', {"d"}),
]


def selftest(cc, readelf):
    failures = []
    with tempfile.TemporaryDirectory(prefix="cshttp-layering-") as tmp:
        root = os.path.join(tmp, "clean")
        clean_tree(root)
        write(root, "apps/x.h", "\n")
        problems = check_tier1_includes(root) + check_tier_order(root) + check_client(root)
        if problems:
            failures.append("clean tree reported: %s" % problems)
        for i, (rel, text, expected) in enumerate(VIOLATIONS):
            root = os.path.join(tmp, "bad%d" % i)
            clean_tree(root)
            write(root, "apps/x.h", "\n")
            write(root, rel, text)
            got = {"a": check_tier1_includes(root), "c": check_tier_order(root),
                   "d": check_client(root)}
            for check in ("a", "c", "d"):
                reported = [p for p in got[check] if rel in p]
                if (check in expected) != bool(reported):
                    failures.append("%s with %r: check (%s) %s" % (
                        rel, text.strip(), check,
                        "missed it" if check in expected else "reported %s" % reported))
        # (b) on real shared objects: libc alone passes, libm fails.
        src = os.path.join(tmp, "lib.c")
        write(tmp, "lib.c", "#include <string.h>\nsize_t f(const char *s) { return strlen(s); }\n")
        for name, extra, ok in (("libok.so", [], True),
                                ("libm_needed.so", ["-Wl,--no-as-needed", "-lm"], False)):
            so = os.path.join(tmp, name)
            subprocess.run([cc, "-shared", "-fPIC", src, "-o", so, *extra], check=True)
            problems, needed = check_needed(readelf, so, "")
            if ok and "libc.so.6" not in (needed or []):
                failures.append("(b) %s: NEEDED %s, expected libc.so.6" % (name, needed))
            if bool(problems) == ok:
                failures.append("(b) on %s (NEEDED %s): %s" % (
                    name, needed, problems or "passed, should have failed"))
    for f in failures:
        print("SELFTEST FAIL: %s" % f)
    print("selftest: %d violation cases, %s" % (len(VIOLATIONS),
                                                "FAILED" if failures else "all caught"))
    return 1 if failures else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", help="the repository")
    ap.add_argument("--lib", help="the built libcshttp.so, for (b)")
    ap.add_argument("--readelf", default="readelf")
    ap.add_argument("--sanitize", default="", help="CSHTTP_SANITIZE of the build")
    ap.add_argument("--selftest", action="store_true")
    ap.add_argument("--cc", default="cc")
    args = ap.parse_args()
    if not shutil.which(args.readelf):
        print("FAIL: %s not found" % args.readelf)
        return 1
    if args.selftest:
        return selftest(args.cc, args.readelf)
    if not args.root:
        ap.error("--root is required")
    root = os.path.abspath(args.root)
    for tier, _, _ in TIERS:
        if not os.path.isdir(os.path.join(root, tier)):
            print("FAIL: %s is not a folder of %s" % (tier, root))
            return 1
    problems, needed = run_checks(root, args.lib, args.readelf, args.sanitize)
    scanned = sum(1 for t, _, _ in TIERS for s in ("include", "src", "tests")
                  for _ in source_files(os.path.join(root, t, s)))
    print("scanned %d files; libcshttp.so NEEDED: %s" % (scanned, needed))
    for p in problems:
        print("FAIL: %s" % p)
    print("layering: %s" % ("FAILED" if problems else "ok"))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
