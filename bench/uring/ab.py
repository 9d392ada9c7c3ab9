#!/usr/bin/env python3
"""bench/uring/ab.py (run it through run.sh): bench_epoll against bench_uring,
side by side, interleaved rounds, W1 and W3 of DESIGN.md. Each figure is
measured as bench/suite measures it (bench/suite/clients.py, proc.py): the
server's utime + stime from /proc/PID/stat just before and just after the
client's run, divided by the requests the client completed; req/s and p99
are the client's. Reported: the median of the rounds with their spread
(min..max), and the ratio uring/epoll of the medians and the median of the
per-round ratios (a round runs the servers back to back, so its ratio is
the one least moved by the machine's load)."""

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from suite import clients, proc  # noqa: E402

SERVERS = {
    "epoll": ["bench_epoll"],
    "epoll-short": ["bench_epoll", "--short-reads"],
    "uring": ["bench_uring"],
}
# workload, tool, client arguments
RUNS = [
    ("W1", "wrk", None),
    ("W1", "cshttp-load", ["-c", "32"]),
    ("W3", "cshttp-load", ["--idle", "1500", "-c", "50"]),
]


class Server:
    """One bench server, started once for the whole run; what
    clients.measured needs (pid, alive, proc, name, log_tail)."""

    def __init__(self, name, argv, tmp):
        self.name = name
        self.log_path = os.path.join(tmp, name + ".log")
        self.log = open(self.log_path, "w")
        self.proc = subprocess.Popen(argv + ["--port", "0"], stderr=subprocess.PIPE, text=True,
                                     stdin=subprocess.DEVNULL)
        self.banner = self.proc.stderr.readline().strip()
        m = re.search(r"127\.0\.0\.1:(\d+)", self.banner)
        if not m:
            raise SystemExit("%s did not start: %r" % (name, self.banner))
        self.port = int(m.group(1))
        self.pid = self.proc.pid

    def alive(self):
        return self.proc.poll() is None

    def log_tail(self):
        return self.banner

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def counted(server, url, seconds):
    """One W1 run (wrk -t1 -c32) with perf stat attached to the server,
    apart from the timed rounds (counting each system call costs the server
    a little, and more to the side that makes more of them): system calls
    and context switches per request. None when perf cannot count here."""
    out = tempfile.NamedTemporaryFile("r", suffix=".perf", delete=False)
    try:
        perf = subprocess.Popen(["perf", "stat", "-x,", "-o", out.name, "-e",
                                 "raw_syscalls:sys_enter,context-switches", "-p",
                                 str(server.pid)], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
    except OSError:
        return None
    time.sleep(0.5)  # perf attaches
    res = clients.run_wrk(server, url, 32, str(seconds), seconds + 60)
    perf.send_signal(2)
    perf.wait(timeout=20)
    counts = {}
    for line in open(out.name):
        f = line.strip().split(",")
        if len(f) > 2 and f[0].isdigit():
            counts[f[2]] = int(f[0])
    os.unlink(out.name)
    n = res.get("requests")
    if not n or "raw_syscalls:sys_enter" not in counts:
        return None
    return {"requests": n, "syscalls": counts["raw_syscalls:sys_enter"] / n,
            "switches": counts.get("context-switches", 0) / n}


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def fmt(x, spec):
    return "-" if x is None else format(x, spec)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default="build", help="build folder (bench/uring and apps built)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--duration", type=int, default=5, help="seconds per measured run")
    ap.add_argument("--warmup", type=int, default=1, help="seconds of unmeasured load before each")
    ap.add_argument("--servers", default="epoll,epoll-short,uring")
    ap.add_argument("--no-counts", dest="counts", action="store_false",
                    help="skip the extra run under perf stat (system calls per request)")
    ap.add_argument("--out", help="Markdown report (default bench/results/uring-<time>.md)")
    a = ap.parse_args()

    build = os.path.abspath(a.build)
    paths = {"cshttp-load": os.path.join(build, "apps", "cshttp-load")}
    names = a.servers.split(",")
    for n in names:
        if n not in SERVERS:
            raise SystemExit("unknown server %s (%s)" % (n, ", ".join(SERVERS)))
    nofile = proc.fd_limit()
    tmp = tempfile.mkdtemp(prefix="bench-uring-")
    uring_version = proc.output_of(["dpkg-query", "-W", "-f", "${Version}", "liburing-dev"])
    mach = proc.machine()
    start = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    load_before = mach["loadavg"]
    servers = [Server(n, [os.path.join(build, "bench", "uring", SERVERS[n][0])] +
                      SERVERS[n][1:], tmp) for n in names]
    print("%s; %s, %s cores; kernel %s; liburing %s; descriptors %d; load %s" % (
        start, mach["cpu"], mach["cores"], mach["kernel"], uring_version, nofile, load_before))
    for s in servers:
        print("  " + s.banner)

    results = {}  # (workload, tool, server) -> [result per round]
    loads = []
    try:
        for rnd in range(a.rounds):
            loads.append(" ".join(open("/proc/loadavg").read().split()[:3]))
            # Interleaved, and the order turns each round so that no server
            # always runs first (or right after the same one).
            k = rnd % len(servers)
            order = servers[k:] + servers[:k]
            print("round %d/%d (load %s): %s" % (rnd + 1, a.rounds, loads[-1],
                                                 " ".join(s.name for s in order)))
            for workload, tool, extra in RUNS:
                for s in order:
                    url = "http://127.0.0.1:%d/demo/plaintext" % s.port
                    conns = 50 if workload == "W3" else 32
                    if a.warmup:
                        clients.warm(paths, url, conns, a.warmup)
                    if tool == "wrk":
                        res = clients.run_wrk(s, url, 32, str(a.duration), a.duration + 60)
                    else:
                        tag = "%s-%s-%d" % (workload, s.name, rnd)
                        res = clients.run_load(paths, s, url, ["-d", str(a.duration)] + extra,
                                               tag, tmp, a.duration + 120)
                    results.setdefault((workload, tool, s.name), []).append(res)
                    print("  %-3s %-11s %-11s %9.0f req/s %6.2f us CPU/req  p99 %s ms%s%s" % (
                        workload, tool, s.name, res.get("rps") or 0, res.get("cpu_us") or 0,
                        fmt(res.get("p99_ms"), ".2f"),
                        "  errors %d" % res["errors"] if res.get("errors") else "",
                        "" if res["status"] == "ok" else
                        "  [%s] %s" % (res["status"], res.get("note", "")[:120])))
                    sys.stdout.flush()
        counts = {}
        if a.counts:
            for s in servers:
                url = "http://127.0.0.1:%d/demo/plaintext" % s.port
                counts[s.name] = counted(s, url, a.duration)
                if counts[s.name]:
                    print("  counts      %-11s %.3f system calls, %.3f context switches"
                          " per request" % (s.name, counts[s.name]["syscalls"],
                                            counts[s.name]["switches"]))
    finally:
        for s in servers:
            s.stop()
    load_after = " ".join(open("/proc/loadavg").read().split()[:3])

    lines = []
    say = lines.append
    say("# bench/uring: epoll against io_uring, %s" % start)
    say("")
    say("- machine: %s, %s cores, %s; kernel %s; liburing %s" % (
        mach["cpu"], mach["cores"], mach["memory"], mach["kernel"], uring_version))
    say("- load average (1, 5, 15 min) before: %s; at each round: %s; after: %s" % (
        load_before, "; ".join(loads), load_after))
    say("- %d interleaved rounds, %d s measured per run after %d s of unmeasured load;"
        " the servers: %s" % (a.rounds, a.duration, a.warmup,
                              "; ".join(s.banner for s in servers)))
    say("- command: `bench/uring/run.sh %s`" % " ".join(sys.argv[1:]))
    say("")
    say("Median of the rounds [min..max]. CPU: the server's utime + stime per request.")
    say("")
    say("| workload | client | server | req/s | CPU us/req | p99 ms | errors |")
    say("|---|---|---|---|---|---|---|")
    for workload, tool, _ in RUNS:
        for s in servers:
            rs = results.get((workload, tool, s.name), [])
            ok = [r for r in rs if r.get("status") in ("ok", "errors")]

            def col(key, spec):
                xs = [r.get(key) for r in ok if r.get(key) is not None]
                if not xs:
                    return "-"
                return "%s [%s..%s]" % (format(statistics.median(xs), spec),
                                        format(min(xs), spec), format(max(xs), spec))
            errs = sum(int(r.get("errors") or 0) for r in ok)
            bad = len(rs) - len(ok)
            say("| %s | %s | %s | %s | %s | %s | %d%s |" % (
                workload, tool, s.name, col("rps", ".0f"), col("cpu_us", ".2f"),
                col("p99_ms", ".2f"), errs, " (%d runs failed)" % bad if bad else ""))
    if "uring" in names:
        say("")
        say("Ratios uring / each epoll variant: of the medians, and [the median of the"
            " per-round ratios].")
        say("")
        say("| workload | client | against | req/s | CPU us/req | p99 |")
        say("|---|---|---|---|---|---|")
        for workload, tool, _ in RUNS:
            u = results.get((workload, tool, "uring"), [])
            for base in [n for n in names if n != "uring"]:
                e = results.get((workload, tool, base), [])
                cells = []
                for key in ("rps", "cpu_us", "p99_ms"):
                    mu, me = med([r.get(key) for r in u]), med([r.get(key) for r in e])
                    per = med([x.get(key) / y.get(key) for x, y in zip(u, e)
                               if x.get(key) and y.get(key)])
                    cells.append("%s [%s]" % (fmt(mu / me if mu and me else None, ".3f"),
                                              fmt(per, ".3f")))
                say("| %s | %s | %s | %s |" % (workload, tool, base, " | ".join(cells)))
    if any(counts.values()):
        say("")
        say("Per request, from one more W1 run (wrk -t1 -c32, %d s) per server under"
            " `perf stat -e raw_syscalls:sys_enter,context-switches -p PID`, apart from the"
            " timed rounds:" % a.duration)
        say("")
        say("| server | system calls | context switches |")
        say("|---|---|---|")
        for s in servers:
            c = counts.get(s.name)
            if c:
                say("| %s | %.3f | %.3f |" % (s.name, c["syscalls"], c["switches"]))
    report = "\n".join(lines) + "\n"
    print()
    print(report)
    out = a.out or os.path.join(os.path.dirname(HERE), "results",
                                "uring-%s.md" % time.strftime("%Y-%m-%d-%H%M%S", time.gmtime()))
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    with open(out, "w") as f:
        f.write(report)
    print("report: %s" % out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
