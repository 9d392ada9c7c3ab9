#!/usr/bin/env python3
"""Install a tier with the tiers below it, each configured on its own, and
use it from outside (--tier web: libcshttp-web; --tier server:
libcshttp-server).

1. libcshttp alone: configure, build, install into a temporary prefix.
2. each higher library up to the tier, alone, finding the ones installed
   before with find_package (CMAKE_PREFIX_PATH = the prefix): configure,
   build, install into the same prefix (with --prefix, so it must be
   relocatable).
3. consumer_<tier>/ built with `pkg-config --cflags --libs cshttp-<tier>` and
   with find_package(cshttp-<tier>) + cshttp::<tier>; both must serve one
   request (through the memory transport, or over a socket for the server)
   and print "body=hello, world"; the server's consumer also asks once
   through the installed client and prints "client=200 hello, world".
The SONAME of the tier's library is libcshttp-<tier>.so.<major>.<minor>.
4. the minimum versions of the tiers below: with libcshttp's installed
   package and .pc file made to say 0.2.0 (an older, incompatible
   release: its errors were in the -errno range), both pkg-config and
   find_package(cshttp-<tier>) refuse; for the server, the same with
   libcshttp's restored and libcshttp-web's made to say 0.3.2 (the release
   before the engine's minimum, 0.4).
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
EXPECTED = {"web": ["body=hello, world"],
            "server": ["body=hello, world", "client=200 hello, world"]}

# tier: (libraries to install in order, version header, macro prefix)
TIERS = {
    "web": (["libcshttp", "libcshttp-web"], "libcshttp-web/include/cshttp/web/version.h", "CSHW"),
    "server": (["libcshttp", "libcshttp-web", "libcshttp-server"],
               "libcshttp-server/include/cshttp/server/version.h", "CSHS"),
}


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


def refused(cmd, env=None):
    """The output of a command that must fail."""
    print("+ (must fail) " + " ".join(cmd), flush=True)
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, timeout=900)
    if p.returncode == 0:
        print(p.stdout)
        raise Failure("accepted: " + " ".join(cmd))
    return p.stdout


def make_older(libdir, package, version):
    """Makes an installed package's .pc and CMake package say `version`;
    returns what undoes it."""
    pc = os.path.join(libdir, "pkgconfig", package + ".pc")
    cv = os.path.join(libdir, "cmake", package, package + "ConfigVersion.cmake")
    saved = {path: open(path).read() for path in (pc, cv)}
    open(pc, "w").write(re.sub(r"^Version: .*$", "Version: " + version, saved[pc], flags=re.M))
    new = re.sub(r'set\(PACKAGE_VERSION "[^"]*"\)', 'set(PACKAGE_VERSION "%s")' % version,
                 saved[cv])
    if new == saved[cv]:
        raise Failure("no PACKAGE_VERSION in " + cv)
    open(cv, "w").write(new)

    def restore():
        for path, text in saved.items():
            open(path, "w").write(text)
    return restore


def check_refused(args, env, tmp, name, package, version, minimum):
    """pkg-config and find_package(name) both refuse, naming the package
    made older: pkg-config with the minimum asked, CMake with the version
    found."""
    out = refused([args.pkg_config, "--print-errors", "--exists", name], env=env)
    if package not in out or minimum not in out:
        raise Failure("pkg-config refused for another reason: %r" % out)
    out = refused([args.cmake, "-S", os.path.join(HERE, "consumer_" + args.tier), "-B",
                   os.path.join(tmp, "consumer-older-" + package), "-DCMAKE_C_COMPILER=" + args.cc,
                   "-DCMAKE_PREFIX_PATH=" + os.path.join(tmp, "prefix")])
    if package not in out or version not in out:
        raise Failure("find_package refused for another reason: %r" % out)


def build_and_install(args, source, build, prefix):
    run([args.cmake, "-S", source, "-B", build, "-DCMAKE_BUILD_TYPE=Release",
         "-DCSHTTP_BUILD_TESTS=OFF", "-DCMAKE_C_COMPILER=" + args.cc,
         "-DCMAKE_PREFIX_PATH=" + prefix])
    run([args.cmake, "--build", build, "-j", str(os.cpu_count() or 2)])
    run([args.cmake, "--install", build, "--prefix", prefix])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tier", required=True, choices=sorted(TIERS))
    ap.add_argument("--repo", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--cmake", default="cmake")
    ap.add_argument("--cc", default="cc")
    ap.add_argument("--pkg-config", dest="pkg_config", default="pkg-config")
    ap.add_argument("--readelf", default="readelf")
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()

    libs, version_header, macro = TIERS[args.tier]
    name = "cshttp-" + args.tier
    os.makedirs(args.workdir, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=name + "-install-", dir=args.workdir)
    ok = False
    try:
        prefix = os.path.join(tmp, "prefix")
        for i, lib in enumerate(libs):
            build_and_install(args, os.path.join(args.repo, lib), os.path.join(tmp, "b%d" % i), prefix)

        lib = "lib%s.so" % name
        libdirs = [d for d in ("lib", "lib64", "lib/x86_64-linux-gnu")
                   if os.path.exists(os.path.join(prefix, d, lib))]
        if not libdirs:
            raise Failure("%s is not installed under %s" % (lib, prefix))
        libdir = os.path.join(prefix, libdirs[0])
        major, minor, _ = version(os.path.join(args.repo, version_header), macro)
        soname = re.search(r"\(SONAME\)\s+[^\[]*\[([^\]]*)\]",
                           run([args.readelf, "-d", "-W", os.path.join(libdir, lib)]))
        if not soname or soname.group(1) != "%s.%d.%d" % (lib, major, minor):
            raise Failure("SONAME is %s" % (soname.group(1) if soname else None))

        env = dict(os.environ, PKG_CONFIG_PATH=os.path.join(libdir, "pkgconfig"),
                   LD_LIBRARY_PATH=libdir)
        env.pop("PKG_CONFIG_LIBDIR", None)
        flags = run([args.pkg_config, "--cflags", "--libs", name], env=env).split()
        exe = os.path.join(tmp, "consumer-pkg-config")
        run([args.cc, "-std=c11", "-Wall", "-Wextra", "-Werror",
             os.path.join(HERE, "consumer_" + args.tier, "main.c"), "-o", exe] + flags)
        out = run([exe], env=env)
        if any(e not in out for e in EXPECTED[args.tier]):
            raise Failure("pkg-config consumer printed %r" % out)

        cbuild = os.path.join(tmp, "consumer-cmake")
        conf = run([args.cmake, "-S", os.path.join(HERE, "consumer_" + args.tier), "-B", cbuild,
                    "-DCMAKE_C_COMPILER=" + args.cc, "-DCMAKE_PREFIX_PATH=" + prefix])
        m = re.search(r"%s found at (\S+)" % name, conf)
        if not m or not os.path.realpath(m.group(1)).startswith(os.path.realpath(prefix)):
            raise Failure("find_package(%s) found %s" % (name, m.group(1) if m else None))
        run([args.cmake, "--build", cbuild])
        out = run([os.path.join(cbuild, "consumer_" + args.tier)], env=env)
        if any(e not in out for e in EXPECTED[args.tier]):
            raise Failure("find_package consumer printed %r" % out)

        # the minimum versions: an incompatible libcshttp is refused by both
        restore = make_older(libdir, "cshttp", "0.2.0")
        check_refused(args, env, tmp, name, "cshttp", "0.2.0", "0.3")
        restore()
        if args.tier == "server":
            # the engine asks libcshttp-web 0.4, whose SONAME it links
            make_older(libdir, "cshttp-web", "0.3.2")
            check_refused(args, env, tmp, name, "cshttp-web", "0.3.2", "0.4")
        ok = True
        print("install_lib%s: ok" % name)
    except Failure as e:
        print("install_lib%s: FAIL: %s" % (name, e))
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
