"""bench/run: the server workloads W1..W5 of DESIGN.md, idle-connection memory,
a concurrency sweep and HTTPS, on cshttpd and its peers side by side (see
bench/README.md). Builds nothing: the binaries must exist (make bench-suite
builds them first)."""

import argparse
import datetime
import os
import shutil
import subprocess
import sys
import tempfile
import time
import types

from . import clients, proc, rapid_reset, report, servers, tls, w6, ws

WORKLOADS = ["W1", "W2", "W3", "W4", "W5", "W6", "WS", "MEM", "SWEEP", "TLS", "H2"]
H2_SERVERS = ("cshttpd", "cshttpd-1", "cshttpd-base", "nginx-1", "h2o")
CEILING_W2 = 128 / 0.015
SWEEP_LEVELS = [1, 2, 4, 8, 16, 32, 64, 128, 256]
W1_WRK = ("cshttpd", "cshttpd-1", "cshttpd-base", "nginx-1")       # servers that also get a wrk run in W1
SWEEP_SERVERS = ("cshttpd", "nginx-1")


def parse_args(argv):
    ap = argparse.ArgumentParser(
        prog="bench/run",
        description="cshttpd and its peers (nginx, h2o, libmicrohttpd) under the workloads "
        "W1..W6, WebSocket echo (WS), idle-connection memory, a concurrency sweep, HTTPS (TLS) and "
        "HTTP/2 over TLS (H2); "
        "interleaved rounds, medians. Results in bench/results/suite-<UTC time>.{md,csv,svg}.")
    ap.add_argument("workloads", nargs="*", metavar="WORKLOAD",
                    help="any of %s (default: all)" % " ".join(WORKLOADS))
    ap.add_argument("--rounds", type=int, help="rounds (default 3; --quick: 1)")
    ap.add_argument("--duration", type=float,
                    help="measured seconds per run (default 5; --quick: 2)")
    ap.add_argument("--quick", action="store_true",
                    help="a smoke check: 1 round, 2 s runs, fewer ab requests")
    ap.add_argument("--servers", help="comma-separated subset of: cshttpd,cshttpd-1,nginx-1,nginx-auto,"
                    "h2o,mhd-tpc,mhd-pool (default: all)")
    ap.add_argument("--build", default="build-release", help="build folder (default build-release)")
    ap.add_argument("--out", default=None, help="results folder (default bench/results)")
    ap.add_argument("--port-base", type=int, default=19100, help="first port (default 19100)")
    ap.add_argument("--baseline", default=None,
                    help="another cshttpd binary (a previous commit's build), run side by side "
                         "as cshttpd-base")
    a = ap.parse_args(argv)
    wl = [w.upper() for w in a.workloads] or list(WORKLOADS)
    for w in wl:
        if w not in WORKLOADS:
            ap.error("unknown workload %r (choose from %s)" % (w, " ".join(WORKLOADS)))
    a.workloads = [w for w in WORKLOADS if w in wl]
    if a.rounds is None:
        a.rounds = 1 if a.quick else 3
    if a.duration is None:
        a.duration = 2.0 if a.quick else 5.0
    if a.rounds < 1 or a.duration <= 0:
        ap.error("--rounds and --duration must be positive")
    a.warmup = 0.5 if a.quick else 1.0
    a.ab_keepalive_n = 20000 if a.quick else 100000
    a.ab_close_n = 5000 if a.quick else 20000
    a.mem_hold = 2.0 if a.quick else 3.0
    a.mem_counts = (1500, 10000)
    a.sweep_duration = 0.5 if a.quick else 1.0
    a.ab_tls_n = 3000 if a.quick else 20000
    a.h2_idle = 300 if a.quick else 1000
    return a


def fmt_s(x):
    return ("%g" % x)


class Suite:
    def __init__(self, args, repo, argv):
        self.a = args
        self.argv = argv
        self.repo = repo
        self.results = []
        self.commands = {}
        self.next_port = args.port_base
        self.log_lines = []
        self.tls_cert = None      # the TLS workload's certificate, made once per run
        self.tls_info = {}        # server name -> what openssl s_client negotiated
        self.tls_skipped = {}     # server name -> why it does not run the TLS workload

    def say(self, text):
        line = "%s %s" % (time.strftime("%H:%M:%S"), text)
        print(line, flush=True)

    def port(self):
        p = self.next_port
        self.next_port += 1
        return p

    def url(self, server, path):
        return "http://127.0.0.1:%d%s" % (server.port, path)

    # -- servers --------------------------------------------------------

    def ensure_up(self, server):
        """None when the server runs (restarted after a crash if needed),
        else the reason it does not."""
        if server.alive():
            return None
        if server.proc is not None:
            self.notes.append("%s %s and was restarted: %s" % (
                server.name, proc.exit_text(server.proc.returncode), server.log_tail()))
            server.stop()
        why = server.start(self.port())
        if why:
            self.notes.append("%s did not start: %s" % (server.name, why))
        return why

    def record(self, workload, variant, server, rnd, tool, res):
        row = {"workload": workload, "variant": variant, "server": server.name, "round": rnd,
               "tool": tool}
        row.update(res)
        self.results.append(row)
        key = (workload, variant, server.name, tool)
        if key not in self.commands and res.get("cmd"):
            self.commands[key] = res["cmd"]
        fig = ""
        if res.get("levels"):
            peak = max(res["levels"], key=lambda lv: lv.get("rps") or 0)
            fig = "peak %.0f req/s at %d connections" % (peak["rps"] or 0, peak["connections"])
            if res.get("cpu_us") is not None:
                fig += "  %6.1f us CPU/req" % res["cpu_us"]
        elif res.get("rps") is not None:
            unit = "msg" if workload == "WS" else "req"
            fig = "%10.0f %s/s" % (res["rps"], unit)
            if res.get("cpu_us") is not None:
                fig += "  %6.1f us CPU/%s" % (res["cpu_us"], unit)
            if res.get("p99_ms") is not None:
                fig += "  p99 %.2f ms" % res["p99_ms"]
            if workload == "W5":
                fig += "  %.0f MB/s" % res.get("mbps", 0)
            if workload == "W3":
                fig += "  idle %s/%s" % (int(res.get("idle_held") or 0),
                                        int(res.get("idle_answered") or 0))
            if res.get("errors"):
                fig += "  errors %d" % res["errors"]
        self.say("  %-5s %-9s %-10s %-11s %s %s" % (workload, variant, server.name, tool, fig,
                                                    "" if res["status"] == "ok" else
                                                    "[%s] %s" % (res["status"], res.get("note", "")[:150])))

    def down(self, workload, variant, server, rnd, tool, why):
        self.record(workload, variant, server, rnd, tool, {"status": "down", "note": why})

    def restart_all(self):
        for s in self.live:
            s.stop()
            why = s.start(self.port())
            if why:
                self.notes.append("%s did not restart: %s" % (s.name, why))

    # -- workloads ------------------------------------------------------

    def load(self, workload, variant, server, rnd, path, extra, warm_conns, timeout_extra=60):
        why = self.ensure_up(server)
        if why:
            return self.down(workload, variant, server, rnd, "cshttp-load", why)
        url = self.url(server, path)
        if warm_conns:
            clients.warm(self.paths, url, warm_conns, self.a.warmup)
        tag = "%s-%s-%s-%d" % (workload, variant, server.name, rnd)
        res = clients.run_load(self.paths, server, url, ["-d", fmt_s(self.a.duration)] + extra,
                               tag, self.tmp, self.a.duration + timeout_extra)
        self.record(workload, variant, server, rnd, "cshttp-load", res)

    def w1(self, rnd):
        for s in self.live:
            self.load("W1", "plaintext", s, rnd, "/demo/plaintext", ["-c", "32"], 32)
        for s in self.live:
            if s.name not in W1_WRK:
                continue
            why = self.ensure_up(s)
            if why:
                self.down("W1", "plaintext", s, rnd, "wrk", why)
                continue
            url = self.url(s, "/demo/plaintext")
            clients.warm(self.paths, url, 32, self.a.warmup)
            res = clients.run_wrk(s, url, 32, fmt_s(self.a.duration), self.a.duration + 60)
            self.record("W1", "plaintext", s, rnd, "wrk", res)

    def w2(self, rnd):
        self.w2_ceiling(rnd)
        for s in self.live:
            if s.blocking:
                self.load("W2", "sleep15", s, rnd, "/demo/sleep?ms=15", ["-c", "128"], 128)

    def w2_ceiling(self, rnd):
        """W2's ceiling as the machine allows it in this round, recorded as
        the pseudo-server report.W2_CEILING: 128 threads sleeping 15 ms in a
        loop, no server, no client (bench_sleep_ceiling, tool "sleep"); and
        the same with one byte sent and answered over loopback TCP around
        each sleep, a thread per connection and one client thread
        (bench_sleep_ceiling --exchange, tool "exchange"): the floor of what
        any W2 server adds."""
        b = self.paths["bench_sleep_ceiling"]
        if not os.access(b, os.X_OK):
            why = "W2: %s is not built: no measured ceiling" % b
            if why not in self.notes:
                self.notes.append(why)
            return
        seconds = str(max(1, round(self.a.duration)))  # whole seconds
        for tool, first, label in (("sleep", [], "sleeps/s "),
                                   ("exchange", ["--exchange"], "exchanges/s ")):
            cmd = [b] + first + ["128", "15", seconds]
            res = {"status": "failed", "cmd": " ".join(cmd)}
            try:
                out = subprocess.run(cmd, capture_output=True, text=True,
                                     timeout=self.a.duration + 30)
                for line in out.stdout.splitlines():
                    if line.startswith(label):
                        res.update(status="ok", rps=float(line.split()[1]))
                if res["status"] != "ok":
                    res["note"] = out.stderr.strip() or "exit status %d" % out.returncode
            except (OSError, subprocess.SubprocessError) as e:
                res["note"] = str(e)
            self.record("W2", "sleep15", types.SimpleNamespace(name=report.W2_CEILING), rnd,
                        tool, res)

    def w3(self, rnd):
        for s in self.live:
            self.load("W3", "idle1500", s, rnd, "/demo/plaintext",
                      ["--idle", "1500", "-c", "50"], 50, timeout_extra=120)

    def w4(self, rnd):
        for keepalive, n in ((True, self.a.ab_keepalive_n), (False, self.a.ab_close_n)):
            variant = "ab-k" if keepalive else "ab-close"
            for s in self.live:
                why = self.ensure_up(s)
                if why:
                    self.down("W4", variant, s, rnd, "ab", why)
                    continue
                res = clients.run_ab(s, self.url(s, "/demo/plaintext"), 1024, n, keepalive,
                                     timeout=180)
                self.record("W4", variant, s, rnd, "ab", res)

    def w5(self, rnd):
        for name, size in servers.FILES.items():
            variant = "1KiB" if size == 1024 else "1MiB"
            for s in self.live:
                self.load("W5", variant, s, rnd, "/files/" + name, ["-c", "32"], 32)

    def w6(self, rnd):
        """cshttpd and nginx as reverse proxies (bench/suite/w6.py)."""
        w6.run(self, rnd)

    def ws(self, rnd):
        """WebSocket echo, direct and through proxies (bench/suite/ws.py)."""
        ws.run(self, rnd)

    def sweep(self, rnd):
        for s in self.live:
            if s.name not in SWEEP_SERVERS:
                continue
            why = self.ensure_up(s)
            if why:
                self.down("SWEEP", "levels", s, rnd, "cshttp-load", why)
                continue
            tag = "SWEEP-%s-%d" % (s.name, rnd)
            url = self.url(s, "/demo/plaintext")
            # each level warms up at its own concurrency (-w), then measures
            res = clients.run_sweep(self.paths, s, url, SWEEP_LEVELS,
                                    ["-d", fmt_s(self.a.sweep_duration),
                                     "-w", fmt_s(self.a.warmup)], tag, self.tmp,
                                    (self.a.sweep_duration + self.a.warmup) * len(SWEEP_LEVELS)
                                    + 60)
            self.record("SWEEP", "levels", s, rnd, "cshttp-load", res)

    def https(self, rnd):
        """TLS: W1 over HTTPS (cshttp-load -c 32, then wrk -t1 -c32) and full
        handshakes per second (ab -c 16 without -k: a new connection, and
        with ab a new TLS session, for every request), on the servers of
        tls.SERVERS, all given the same certificate. HTTPS is turned on for
        this workload only: its first round restarts those servers with a
        TLS listener, and its last takes it away again for what follows."""
        if rnd == 1:
            self.https_start()
        on = [s for s in self.live if s.tls]
        path = "/demo/plaintext"
        for s in on:
            why = self.ensure_up(s)
            if why:
                self.down("TLS", "w1-https", s, rnd, "cshttp-load", why)
                continue
            url = "https://127.0.0.1:%d%s" % (s.tls_port, path)
            clients.warm(self.paths, url, 32, self.a.warmup)
            tag = "TLS-w1-https-%s-%d" % (s.name, rnd)
            res = clients.run_load(self.paths, s, url, ["-d", fmt_s(self.a.duration), "-c", "32"],
                                   tag, self.tmp, self.a.duration + 60)
            self.record("TLS", "w1-https", s, rnd, "cshttp-load", res)
        for s in on:
            why = self.ensure_up(s)
            if why:
                self.down("TLS", "w1-https", s, rnd, "wrk", why)
                continue
            url = "https://127.0.0.1:%d%s" % (s.tls_port, path)
            clients.warm(self.paths, url, 32, self.a.warmup)
            res = clients.run_wrk(s, url, 32, fmt_s(self.a.duration), self.a.duration + 60)
            self.record("TLS", "w1-https", s, rnd, "wrk", res)
        for s in on:
            why = self.ensure_up(s)
            if why:
                self.down("TLS", "handshakes", s, rnd, "ab", why)
                continue
            url = "https://127.0.0.1:%d%s" % (s.tls_port, path)
            res = clients.run_ab(s, url, 16, self.a.ab_tls_n, False, timeout=300)
            self.record("TLS", "handshakes", s, rnd, "ab", res)
        if rnd == self.a.rounds:
            for s in on:
                s.tls = None  # the next workload's restart leaves HTTPS out

    def h2(self, rnd):
        """H2: h2load over TLS, one client thread, 32 connections with 10
        streams in flight each, GET /files/100.bin (100 bytes), on the
        servers of H2_SERVERS (their HTTPS listeners choose h2 by ALPN).
        Each run follows an unmeasured second of the same load. Then, in
        the same round, `reset`: the HTTP/2 rapid reset against each, with
        a probe beside it (bench/suite/rapid_reset.py)."""
        if rnd == 1:
            self.https_start(H2_SERVERS)
        on = [s for s in self.live if s.tls and s.name in H2_SERVERS]
        for s in on:
            why = self.ensure_up(s)
            if why:
                self.down("H2", "tls-m10", s, rnd, "h2load", why)
                continue
            url = "https://127.0.0.1:%d/files/100.bin" % s.tls_port
            clients._run(["h2load", "-t", "1", "-c", "32", "-m", "10", "-D", "1", url], 60)
            res = clients.run_h2load(s, url, fmt_s(self.a.duration), self.a.duration + 60)
            if res.get("errors"):
                res["status"] = "errors"
            self.record("H2", "tls-m10", s, rnd, "h2load", res)
        for s in on:
            why = self.ensure_up(s)
            if why:
                self.down("H2", "reset", s, rnd, rapid_reset.TOOL, why)
                continue
            rapid_reset.run(self, s, rnd)
        if rnd == self.a.rounds:
            # the memory an idle h2 connection holds, each server afresh
            for s in on:
                s.stop()
                why = s.start(self.port())
                if why:
                    self.down("H2", "idle", s, rnd, "python-ssl", why)
                    continue
                res = clients.h2_idle(s, s.tls_port, self.a.h2_idle)
                self.results.append(dict({"workload": "H2", "variant": "idle", "server": s.name,
                                          "round": rnd, "tool": "python-ssl"}, **res))
                self.say("  H2    idle      %-10s %s bytes per idle h2 connection (%d held)%s" % (
                    s.name, "%.0f" % res["bytes_per_conn"] if res.get("bytes_per_conn") else "-",
                    res["held"], "" if res["status"] == "ok" else " [%s] %s" % (res["status"],
                                                                              res["note"])))
            for s in on:
                s.tls = None

    def https_start(self, servers=tls.SERVERS):
        """The certificate (once per run), then each server of `servers`
        that can take it restarted with HTTPS and probed once with openssl
        s_client."""
        if self.tls_cert is None:
            try:
                self.tls_cert = tls.make_cert(self.tmp)
            except (OSError, subprocess.SubprocessError) as e:
                self.notes.append("TLS workload not run: %s" % e)
                self.tls_cert = {}
        for s in self.live:
            why = ("no certificate" if not self.tls_cert else
                   s.tls_support() if s.name in servers else
                   "HTTPS is compared on %s only" % ", ".join(servers))
            if why:
                self.tls_skipped[s.name] = why
                self.say("  TLS   %-10s skipped: %s" % (s.name, why))
                continue
            s.tls = {"cert": self.tls_cert["cert"], "key": self.tls_cert["key"],
                     "port": self.port}
            s.stop()
            why = s.start(self.port())
            if why:
                # once more on other ports (another program may hold one)
                self.notes.append("%s did not start with HTTPS: %s" % (s.name, why))
                why = self.ensure_up(s)
            if why:
                continue
            info = tls.probe(s.tls_port)
            self.tls_info[s.name] = info
            self.say("  TLS   %-10s https port %d: %s" % (s.name, s.tls_port, tls.summary(info)))

    def memory(self, rnd):
        """Each server started afresh: RSS with no connection, then while
        cshttp-load holds 1,500 and then 10,000 idle keep-alive connections
        (each made one request first)."""
        for s in self.all:
            if s.name not in self.selected or s.available():
                continue
            s.stop()
            why = s.start(self.port())
            if why:
                self.notes.append("%s did not start for the memory run: %s" % (s.name, why))
                self.down("MEM", "idle", s, rnd, "cshttp-load", why)
                continue
            time.sleep(0.5)
            base = proc.rss_bytes(s.pid)
            out = {"status": "ok", "note": "", "rss_0": base, "threads_0": proc.threads(s.pid)}
            for n in self.a.mem_counts:
                r = self.hold_idle(s, n)
                out["rss_%d" % n] = r.get("rss")
                out["held_%d" % n] = r.get("held")
                out["answered_%d" % n] = r.get("answered")
                out["threads_%d" % n] = r.get("threads")
                out.setdefault("cmd", r.get("cmd"))
                if r["status"] != "ok":
                    out["status"] = r["status"]
                    out["note"] = (out["note"] + " %d: %s" % (n, r.get("note", ""))).strip()
                if not s.alive():
                    break
            lo, hi = self.a.mem_counts
            # Over the connections actually held (the run is marked when
            # that is not all of them).
            held_lo, held_hi = out.get("held_%d" % lo) or 0, out.get("held_%d" % hi) or 0
            if out.get("rss_%d" % lo) and out.get("rss_%d" % hi) and held_hi > held_lo:
                out["bytes_per_conn"] = (out["rss_%d" % hi] - out["rss_%d" % lo]) / (
                    held_hi - held_lo)
            self.results.append(dict({"workload": "MEM", "variant": "idle", "server": s.name,
                                      "round": rnd, "tool": "cshttp-load"}, **out))
            key = ("MEM", "idle", s.name, "cshttp-load")
            self.commands.setdefault(key, out.get("cmd"))
            self.say("  MEM   idle      %-10s RSS %s / %s / %s MiB (0 / %d / %d idle)%s%s" % (
                s.name, *["%.1f" % (out[k] / 1048576) if out.get(k) else "-"
                          for k in ("rss_0", "rss_%d" % lo, "rss_%d" % hi)], lo, hi,
                "  %.0f bytes/conn" % out["bytes_per_conn"] if out.get("bytes_per_conn") else "",
                "" if out["status"] == "ok" else " [%s] %s" % (out["status"], out["note"][:150])))
            s.stop()

    def hold_idle(self, s, n):
        """cshttp-load --idle n -c 0: samples the server's RSS while the
        connections are held; the sample kept is the last one taken at the
        highest count of established connections seen."""
        tag = "MEM-%s-%d" % (s.name, n)
        csv_file = os.path.join(self.tmp, tag + ".csv")
        cmd = clients.load_cmd(self.paths, self.url(s, "/demo/plaintext"), csv_file, s.name,
                               ["--idle", str(n), "-c", "0", "-d", fmt_s(self.a.mem_hold),
                                "--timeout", "30"])
        res = {"cmd": " ".join(cmd), "status": "ok"}
        best = (-1, None, 0)
        t_end = time.monotonic() + 120
        p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                             stdin=subprocess.DEVNULL)
        while p.poll() is None and time.monotonic() < t_end:
            count = proc.established(s.port)
            if s.alive():
                rss = proc.rss_bytes(s.pid)
                if count >= best[0] and rss:
                    best = (count, rss, proc.threads(s.pid))
            time.sleep(0.25)
        if p.poll() is None:
            p.kill()
            res.update(status="timeout", note="cshttp-load still running after 120 s")
        err = p.stderr.read().decode(errors="replace") if p.stderr else ""
        p.wait()
        res["rss"], res["threads"] = best[1], best[2]
        res["seen"] = best[0]
        try:
            row = clients.parse_load_csv(csv_file)[-1]
            res["held"], res["answered"] = int(row["idle_held"]), int(row["idle_answered"])
        except (OSError, IndexError, KeyError, ValueError):
            res["held"] = best[0]
            if res["status"] == "ok":
                res.update(status="failed", note="exit %s: %s" % (p.returncode, err.strip()[-200:]))
        if not s.alive():
            res.update(status="crashed", note="server exited: " + s.log_tail())
        elif res["status"] == "ok" and res.get("held") != n:
            res.update(status="errors", note="%s of %d held" % (res.get("held"), n))
        return res

    # -- the whole run --------------------------------------------------

    def run(self):
        a = self.a
        self.paths = {
            "cshttpd": os.path.join(a.build, "apps", "cshttpd"),
            "cshttp-load": os.path.join(a.build, "apps", "cshttp-load"),
            "bench_mhd": os.path.join(a.build, "bench", "mhd", "bench_mhd"),
            "bench_sleep_ceiling": os.path.join(a.build, "bench", "bench_sleep_ceiling"),
            "ws_load": os.path.join(a.build, "bench", "ws", "ws_load"),
            "lws_echo": os.path.join(a.build, "bench", "ws", "lws_echo"),
        }
        if a.baseline:
            self.paths["cshttpd-base"] = a.baseline
        self.paths = {k: os.path.abspath(v) for k, v in self.paths.items()}
        missing = [p for k, p in self.paths.items()
                   if k not in ("bench_mhd", "bench_sleep_ceiling", "ws_load", "lws_echo")
                   and not os.access(p, os.X_OK)]
        for tool in ("wrk", "ab", "gnuplot"):
            if not shutil.which(tool):
                missing.append(tool + " (scripts/install-deps.sh bench)")
        if missing:
            print("bench/run: missing: " + ", ".join(missing) +
                  "\n(make bench-suite builds build-release and installs the tools)", file=sys.stderr)
            return 2
        try:
            self.paths["commit"] = subprocess.run(
                ["git", "-C", self.repo, "describe", "--always", "--dirty"], capture_output=True,
                text=True).stdout.strip() or "?"
        except OSError:
            self.paths["commit"] = "?"
        nofile = proc.fd_limit()
        self.notes = []
        self.started = datetime.datetime.now(datetime.timezone.utc)
        self.machine = proc.machine()
        self.tmp = tempfile.mkdtemp(prefix="cshttp-bench-")
        os.chmod(self.tmp, 0o755)  # nginx's workers run as nobody
        root = servers.make_root(self.tmp)
        self.all = servers.all_servers(self.paths, self.tmp, root, nofile)
        names = [s.name for s in self.all]
        self.selected = names
        if a.servers:
            self.selected = [x.strip() for x in a.servers.split(",") if x.strip()]
            bad = [x for x in self.selected if x not in names]
            if bad:
                print("bench/run: unknown server %s (choose from %s)" % (
                    ", ".join(bad), ",".join(names)), file=sys.stderr)
                return 2
        self.versions = {}
        self.tool_versions = {
            "cshttp-load": proc.output_of([self.paths["cshttp-load"], "--version"]),
            "wrk": proc.output_of(["wrk", "--version"]).split(" Copyright")[0],
            "ab": proc.output_of(["ab", "-V"]).replace("This is ", ""),
        }
        self.checks = {}
        self.unavailable = {}
        self.fd_limit = nofile
        try:
            return self._run(a)
        finally:
            for s in self.all:
                s.stop()
            if os.environ.get("BENCH_KEEP_TMP"):
                print("bench/run: kept " + self.tmp)
            else:
                shutil.rmtree(self.tmp, ignore_errors=True)

    def _run(self, a):
        self.say("bench/run: %s; %d round(s), %g s per run; servers %s; fd limit %d" % (
            " ".join(a.workloads), a.rounds, a.duration, ",".join(self.selected), self.fd_limit))
        self.live = []
        for s in self.all:
            if s.name not in self.selected:
                continue
            self.versions[s.name] = s.version()
            why = s.available()
            if why:
                self.unavailable[s.name] = why
                self.say("  %-10s not available: %s" % (s.name, why))
                continue
            why = s.start(self.port())
            if why:
                self.unavailable[s.name] = "did not start: " + why
                self.say("  %-10s did not start: %s" % (s.name, why))
                continue
            self.checks[s.name] = s.check()
            self.say("  %-10s port %d, pid %d: %s" % (s.name, s.port, s.pid,
                                                      "; ".join(self.checks[s.name]) or "checks passed"))
            self.live.append(s)
        phases = {"W1": self.w1, "W2": self.w2, "W3": self.w3, "W4": self.w4, "W5": self.w5,
                  "W6": self.w6, "WS": self.ws, "SWEEP": self.sweep, "MEM": self.memory,
                  "TLS": self.https, "H2": self.h2}
        # The memory runs restart every server: they come last.
        order = [w for w in a.workloads if w != "MEM"] + (["MEM"] if "MEM" in a.workloads else [])
        started = list(self.live)
        for i, w in enumerate(order):
            # Every workload starts on servers started afresh: what one
            # workload leaves behind (W2's blocked handlers still sleeping,
            # grown thread pools) does not weigh on the next.
            if i and w != "MEM":
                self.restart_all()
            for rnd in range(1, a.rounds + 1):
                self.say("%s, round %d of %d" % (w, rnd, a.rounds))
                # Each round starts one server later than the round before,
                # so that none always runs first, or always right after the
                # same other one, in a workload (what the one before leaves
                # in the caches and the scheduler weighs on the next).
                self.live = servers.rotated(started, rnd - 1)
                phases[w](rnd)
        self.live = started
        for s in self.live:
            s.stop()
        self.finished = datetime.datetime.now(datetime.timezone.utc)
        self.machine["loadavg_end"] = " ".join(open("/proc/loadavg").read().split()[:3])
        out = a.out or os.path.join(self.repo, "bench", "results")
        files = report.write(self, out)
        for f in files:
            self.say("wrote " + os.path.relpath(f, os.getcwd()))
        return 0


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    os.chdir(repo)
    return Suite(args, repo, argv).run()
