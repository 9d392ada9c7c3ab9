#!/usr/bin/env python3
"""Install libcshttp, libcshttp-web and libcshttp-server, each configured on
its own, and use the engine from outside.

1. libcshttp alone: configure, build, install into a temporary prefix.
2. libcshttp-web, then libcshttp-server, alone, each finding the ones
   installed before with find_package (CMAKE_PREFIX_PATH = the prefix):
   configure, build, install into the same prefix (with --prefix).
3. consumer_server/ built with `pkg-config --cflags --libs cshttp-server`
   and with find_package(cshttp-server) + cshttp::server; both must serve
   one request over a socket and print "body=hello, world".
The SONAME of libcshttp-server.so is libcshttp-server.so.<major>.<minor>.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
EXPECTED = "body=hello, world"


class Failure(Exception):
    pass


def run(cmd, env=None):
    print("+ " + " ".join(cmd), flush=True)
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, timeout=900)
    if p.returncode != 0:
        print(p.stdout)
        raise Failure("status %d: %s" % (p.returncode, " ".join(cmd)))
    return p.stdout


def version(header, prefix):
    text = open(header).read()
    return tuple(int(re.search(r"^#define %s_VERSION_%s (\d+)$" % (prefix, part), text,
                               re.M).group(1)) for part in ("MAJOR", "MINOR", "PATCH"))


def build_and_install(args, source, build, prefix):
    run([args.cmake, "-S", source, "-B", build, "-DCMAKE_BUILD_TYPE=Release",
         "-DCSHTTP_BUILD_TESTS=OFF", "-DCMAKE_C_COMPILER=" + args.cc,
         "-DCMAKE_PREFIX_PATH=" + prefix])
    run([args.cmake, "--build", build, "-j", str(os.cpu_count() or 2)])
    run([args.cmake, "--install", build, "--prefix", prefix])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repo", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--cmake", default="cmake")
    ap.add_argument("--cc", default="cc")
    ap.add_argument("--pkg-config", dest="pkg_config", default="pkg-config")
    ap.add_argument("--readelf", default="readelf")
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()

    os.makedirs(args.workdir, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="cshttp-server-install-", dir=args.workdir)
    ok = False
    try:
        prefix = os.path.join(tmp, "prefix")
        build_and_install(args, os.path.join(args.repo, "libcshttp"), os.path.join(tmp, "b1"), prefix)
        build_and_install(args, os.path.join(args.repo, "libcshttp-web"), os.path.join(tmp, "b2"), prefix)
        build_and_install(args, os.path.join(args.repo, "libcshttp-server"), os.path.join(tmp, "b3"), prefix)

        libdirs = [d for d in ("lib", "lib64", "lib/x86_64-linux-gnu")
                   if os.path.exists(os.path.join(prefix, d, "libcshttp-server.so"))]
        if not libdirs:
            raise Failure("libcshttp-server.so is not installed under %s" % prefix)
        libdir = os.path.join(prefix, libdirs[0])
        major, minor, _ = version(os.path.join(args.repo, "libcshttp-server/include/cshttp/server/version.h"), "CSHS")
        soname = re.search(r"\(SONAME\)\s+[^\[]*\[([^\]]*)\]",
                           run([args.readelf, "-d", "-W", os.path.join(libdir, "libcshttp-server.so")]))
        if not soname or soname.group(1) != "libcshttp-server.so.%d.%d" % (major, minor):
            raise Failure("SONAME is %s" % (soname.group(1) if soname else None))

        env = dict(os.environ, PKG_CONFIG_PATH=os.path.join(libdir, "pkgconfig"),
                   LD_LIBRARY_PATH=libdir)
        env.pop("PKG_CONFIG_LIBDIR", None)
        flags = run([args.pkg_config, "--cflags", "--libs", "cshttp-server"], env=env).split()
        exe = os.path.join(tmp, "consumer-pkg-config")
        run([args.cc, "-std=c11", "-Wall", "-Wextra", "-Werror",
             os.path.join(HERE, "consumer_server", "main.c"), "-o", exe] + flags)
        out = run([exe], env=env)
        if EXPECTED not in out:
            raise Failure("pkg-config consumer printed %r" % out)

        cbuild = os.path.join(tmp, "consumer-cmake")
        conf = run([args.cmake, "-S", os.path.join(HERE, "consumer_server"), "-B", cbuild,
                    "-DCMAKE_C_COMPILER=" + args.cc, "-DCMAKE_PREFIX_PATH=" + prefix])
        m = re.search(r"cshttp-server found at (\S+)", conf)
        if not m or not os.path.realpath(m.group(1)).startswith(os.path.realpath(prefix)):
            raise Failure("find_package(cshttp-server) found %s" % (m.group(1) if m else None))
        run([args.cmake, "--build", cbuild])
        out = run([os.path.join(cbuild, "consumer_server")], env=env)
        if EXPECTED not in out:
            raise Failure("find_package consumer printed %r" % out)
        ok = True
        print("install_libcshttp_server: ok")
    except Failure as e:
        print("install_libcshttp_server: FAIL: %s" % e)
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
