#!/usr/bin/env python3
"""Install libcshttp on its own and use it from outside, two ways.

1. Configures libcshttp alone (cmake -S <repo>/libcshttp) in a temporary
   build directory, builds it and `cmake --install`s it into a temporary
   prefix.
2. Checks the installed shared object: its SONAME is
   libcshttp.so.<major>.<minor> from version.h, and the development symlink
   chain libcshttp.so -> SONAME -> real file exists.
3. Builds consumer/main.c with `pkg-config --cflags --libs cshttp`
   (PKG_CONFIG_PATH into the prefix) and runs it (LD_LIBRARY_PATH into it).
4. Builds consumer/ as a CMake project with find_package(cshttp) and
   cshttp::cshttp (CMAKE_PREFIX_PATH = the prefix) and runs it.

Both programs must print method=GET. The temporary directory is created
under --workdir (the build tree) and removed at the end unless --keep.
"""
import argparse
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
EXPECTED_OUTPUT = "method=GET target=/hello?who=world headers=2"


class Failure(Exception):
    pass


def run(cmd, env=None, cwd=None):
    print("+ " + " ".join(cmd), flush=True)
    p = subprocess.run(cmd, env=env, cwd=cwd, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=900)
    if p.returncode != 0:
        print(p.stdout)
        raise Failure("command failed with status %d: %s" % (p.returncode, " ".join(cmd)))
    return p.stdout


def read_version(header):
    text = open(header).read()
    parts = {}
    for part in ("MAJOR", "MINOR", "PATCH"):
        m = re.search(r"^#define CSH_VERSION_%s (\d+)$" % part, text, re.M)
        if not m:
            raise Failure("CSH_VERSION_%s not found in %s" % (part, header))
        parts[part] = int(m.group(1))
    return parts["MAJOR"], parts["MINOR"], parts["PATCH"]


def dynamic_entries(readelf, path, tag):
    out = run([readelf, "-d", "-W", path])
    return re.findall(r"\(%s\)\s+[^\[]*\[([^\]]*)\]" % tag, out)


def check_shared_object(readelf, prefix, version):
    major, minor, patch = version
    sonames = glob.glob(os.path.join(prefix, "lib*", "libcshttp.so"))
    if len(sonames) != 1:
        raise Failure("expected one installed libcshttp.so under %s/lib*, found %s"
                      % (prefix, sonames))
    dev_link = sonames[0]
    libdir = os.path.dirname(dev_link)
    want = "libcshttp.so.%d.%d" % (major, minor)
    real = os.path.realpath(dev_link)
    soname = dynamic_entries(readelf, real, "SONAME")
    if soname != [want]:
        raise Failure("SONAME of %s is %s, expected %s" % (real, soname, want))
    if not os.path.exists(os.path.join(libdir, want)):
        raise Failure("%s/%s (the SONAME link) is not installed" % (libdir, want))
    if os.path.realpath(os.path.join(libdir, want)) != real:
        raise Failure("%s does not lead to %s" % (want, real))
    print("SONAME %s ok (%s)" % (want, os.path.basename(real)))
    return libdir


def check_output(out, version):
    want = "%s version=%d.%d.%d" % (EXPECTED_OUTPUT, *version)
    if out.strip() != want:
        raise Failure("consumer printed %r, expected %r" % (out.strip(), want))


def consumer_with_pkg_config(args, prefix, libdir, tmp, version):
    pcdir = os.path.join(libdir, "pkgconfig")
    if not os.path.exists(os.path.join(pcdir, "cshttp.pc")):
        raise Failure("cshttp.pc is not installed in %s" % pcdir)
    env = dict(os.environ, PKG_CONFIG_PATH=pcdir)
    env.pop("PKG_CONFIG_LIBDIR", None)
    modversion = run([args.pkg_config, "--modversion", "cshttp"], env=env).strip()
    if modversion != "%d.%d.%d" % version:
        raise Failure("pkg-config --modversion cshttp is %s" % modversion)
    flags = run([args.pkg_config, "--cflags", "--libs", "cshttp"], env=env).split()
    print("pkg-config flags: %s" % " ".join(flags))
    includes = [os.path.realpath(f[2:]) for f in flags if f.startswith("-I")]
    if os.path.realpath(os.path.join(prefix, "include")) not in includes:
        raise Failure("pkg-config --cflags does not point into the prefix %s: %s"
                      % (prefix, flags))
    exe = os.path.join(tmp, "consumer-pkg-config")
    run([args.cc, "-std=c11", "-Wall", "-Wextra", "-Wpedantic", "-Werror",
         os.path.join(HERE, "consumer", "main.c"), "-o", exe, *flags])
    needed = dynamic_entries(args.readelf, exe, "NEEDED")
    if "libcshttp.so.%d.%d" % version[:2] not in needed:
        raise Failure("the consumer does not need libcshttp.so.%d.%d: %s" % (*version[:2], needed))
    out = run([exe], env=dict(os.environ, LD_LIBRARY_PATH=libdir))
    check_output(out, version)
    print("pkg-config consumer ok: %s" % out.strip())


def consumer_with_cmake(args, prefix, libdir, tmp, version):
    build = os.path.join(tmp, "consumer-cmake")
    cmd = [args.cmake, "-S", os.path.join(HERE, "consumer"), "-B", build,
           "-DCMAKE_PREFIX_PATH=" + prefix, "-DCMAKE_C_COMPILER=" + args.cc,
           "-DCSH_REQUIRED_VERSION=%d.%d" % version[:2], "-DCMAKE_BUILD_TYPE=Release"]
    if args.generator:
        cmd += ["-G", args.generator]
    out = run(cmd)
    # The package found must be the one just installed, not another one.
    cache = open(os.path.join(build, "CMakeCache.txt")).read()
    m = re.search(r"^cshttp_DIR:PATH=(.*)$", cache, re.M)
    if not m or not os.path.realpath(m.group(1)).startswith(os.path.realpath(prefix)):
        raise Failure("find_package(cshttp) found %s, not the prefix %s"
                      % (m.group(1) if m else None, prefix))
    run([args.cmake, "--build", build])
    exes = [p for p in glob.glob(os.path.join(build, "**", "consumer"), recursive=True)
            if os.path.isfile(p) and os.access(p, os.X_OK)]
    if len(exes) != 1:
        raise Failure("built consumer not found in %s: %s" % (build, exes))
    out = run([exes[0]], env=dict(os.environ, LD_LIBRARY_PATH=libdir))
    check_output(out, version)
    print("CMake consumer ok: %s" % out.strip())


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--source", required=True, help="the libcshttp folder")
    ap.add_argument("--workdir", required=True, help="where to create the temporary directory")
    ap.add_argument("--cmake", default="cmake")
    ap.add_argument("--cc", default="cc")
    ap.add_argument("--generator", default="")
    ap.add_argument("--pkg-config", default="pkg-config")
    ap.add_argument("--readelf", default="readelf")
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory")
    args = ap.parse_args()

    for tool in (args.cmake, args.cc, args.pkg_config, args.readelf):
        if not shutil.which(tool):
            print("FAIL: %s not found (scripts/install-deps.sh installs it)" % tool)
            return 1

    version = read_version(os.path.join(args.source, "include", "cshttp", "version.h"))
    os.makedirs(args.workdir, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="cshttp-install-", dir=args.workdir)
    ok = False
    try:
        build = os.path.join(tmp, "build")
        prefix = os.path.join(tmp, "prefix")
        cmd = [args.cmake, "-S", args.source, "-B", build,
               "-DCMAKE_C_COMPILER=" + args.cc,
               "-DCMAKE_BUILD_TYPE=Release", "-DCSHTTP_BUILD_TESTS=OFF"]
        if args.generator:
            cmd += ["-G", args.generator]
        run(cmd)
        run([args.cmake, "--build", build, "-j", str(os.cpu_count() or 2)])
        # --prefix at install time, not at configure time: the installed
        # pkg-config file and CMake package must both be relocatable.
        run([args.cmake, "--install", build, "--prefix", prefix])
        for header in ("cshttp.h", "parser.h", "version.h"):
            if not os.path.exists(os.path.join(prefix, "include", "cshttp", header)):
                raise Failure("include/cshttp/%s is not installed" % header)
        libdir = check_shared_object(args.readelf, prefix, version)
        consumer_with_pkg_config(args, prefix, libdir, tmp, version)
        consumer_with_cmake(args, prefix, libdir, tmp, version)
        ok = True
    except Failure as e:
        print("FAIL: %s" % e)
    finally:
        if args.keep:
            print("kept %s" % tmp)
        else:
            shutil.rmtree(tmp, ignore_errors=True)
            if not ok:
                print("(run with --keep to keep %s)" % tmp)
    print("PASS" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
