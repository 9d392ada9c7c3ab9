"""W6: cshttpd as a reverse proxy (--proxy) against nginx as a reverse proxy
(proxy_pass to an upstream with keepalive 32), side by side, in front of
the same origin: an nginx (one worker) that answers /demo/plaintext itself
(`return 200`) and serves /files/ with sendfile, and closes a keep-alive
connection idle for 1 s. The proxies and the origin are W6's own servers,
started for each round and stopped after it; the CPU time per request is
the proxy's alone (its process and children), never the origin's.
cshttpd runs twice: with its default loops (cshttpd-proxy, one per core)
and with one (cshttpd-proxy-1, `--loops 1`: nginx-proxy's one worker's
terms, as cshttpd-1 against nginx-1 in W1-W3). nginx runs twice too: with
one worker (nginx-proxy, the reference of every ratio) and with one per
core (nginx-proxy-auto, `worker_processes auto`: cshttpd-proxy's terms).
Each cshttpd is also compared with the nginx on its terms (the report's
"/ its peer" column).

Variants:
- plaintext: `cshttp-load -c 32` on /demo/plaintext through each proxy;
- 1MiB: `cshttp-load -c 8` on /files/1m.bin through each proxy;
- idle-gaps: 4 bursts of `cshttp-load -c 16 -d 1`, each after a pause of
  2.5 s in which the origin has closed every pooled connection (its
  keep-alive timeout is 1 s): every request must succeed;
- pool8: the pool as the bottleneck: cshttpd with --proxy-pool-size 8 and
  `cshttp-load -c 64`; the acquire wait p50 and p99 from the proxy's
  /status.json (since the pool was made: the warm-up's requests are in
  it), beside nginx-proxy at 64 connections for reference (nginx opens
  connections beyond its keepalive 32 as it needs: it has no such
  bottleneck);
- pool-large: the same load through cshttpd with a pool of 1,024, where
  no request waits for a connection. What waiting costs, the CPU per
  request of pool8 less pool-large's in the same round (median over the
  rounds), is the figure set against the 0.5 µs goal;
- inflight8: `cshttp-load -c 8` through each proxy (cshttpd's pool of
  1,024): as many exchanges in flight as pool8 keeps, nobody waiting.
  pool8 less inflight8 is what waiting costs at the same concurrency;
  inflight8 less plaintext (32 connections, within nginx's keepalive 32)
  is what having 8 exchanges in flight instead of 32 costs a proxy by
  itself, nginx's the reference."""

import json
import os
import time
import urllib.request

from . import clients, servers

CONNECTIONS = 32
GAPS = 4
GAP_S = 2.5
BURST_S = 1.0


class _Nginx(servers.Server):
    """An nginx of W6's (`workers` worker processes, no access log) whose
    http block ends with http_tail(port), written under the run's folder."""
    binary = "/usr/sbin/nginx"
    workers = "1"

    def available(self):
        return None if os.access(self.binary, os.X_OK) else "%s is missing" % self.binary

    def http_tail(self, port):
        raise NotImplementedError

    def command(self, port):
        prefix = os.path.join(self.tmp, "%s-%d" % (self.name, port))
        os.makedirs(os.path.join(prefix, "logs"), exist_ok=True)
        conf = os.path.join(prefix, "nginx.conf")
        with open(conf, "w") as f:
            f.write("""worker_processes %(w)s;
worker_rlimit_nofile %(nofile)d;
daemon off;
pid %(p)s/nginx.pid;
error_log %(p)s/logs/error.log;
events { worker_connections 20000; }
http {
  access_log off;
  client_body_temp_path %(p)s/body; proxy_temp_path %(p)s/proxy;
  fastcgi_temp_path %(p)s/fcgi; uwsgi_temp_path %(p)s/uwsgi; scgi_temp_path %(p)s/scgi;
  keepalive_requests 1000000;
""" % {"p": prefix, "nofile": self.nofile, "w": self.workers} + self.http_tail(port) + "}\n")
        return [self.binary, "-p", prefix, "-c", conf]


class Origin(_Nginx):
    name = "w6-origin"

    def http_tail(self, port):
        return """  sendfile on;
  keepalive_timeout 1s;
  types { application/octet-stream bin; }
  server {
    listen 127.0.0.1:%(port)d backlog=4096;
    root %(root)s;
    location = /demo/plaintext { default_type text/plain; return 200 "Hello, World!"; }
  }
""" % {"port": port, "root": self.root}


class NginxProxy(_Nginx):
    """nginx with proxy_pass: one worker (nginx-proxy), or one per core
    (`workers` "auto": nginx-proxy-auto, cshttpd-proxy's terms)."""
    name = "nginx-proxy"

    def __init__(self, origin, *a, workers="1"):
        super().__init__(*a)
        self.origin = origin
        self.workers = workers
        if workers != "1":
            self.name = "nginx-proxy-%s" % workers

    def http_tail(self, port):
        return """  keepalive_timeout 300s;
  upstream origin {
    server 127.0.0.1:%(up)d;
    keepalive 32;
    keepalive_requests 1000000;
  }
  server {
    listen 127.0.0.1:%(port)d backlog=4096;
    location / {
      proxy_pass http://origin;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
    }
  }
""" % {"port": port, "up": self.origin.port}


class CshttpdProxy(servers.Server):
    """cshttpd --proxy with its default loops (one per core), or with one
    (`loops` 1: cshttpd-proxy-1, nginx-proxy's terms: one event loop)."""
    name = "cshttpd-proxy"

    def __init__(self, origin, pool_size, *a, loops=0, binary="cshttpd"):
        super().__init__(*a)
        self.origin = origin
        self.pool_size = pool_size
        self.loops = loops
        self.binary = binary  # its key in paths: "cshttpd-base" for --baseline's build
        if binary == "cshttpd-base":
            self.name = "cshttpd-proxy-base"
        if loops:
            self.name += "-%d" % loops

    def available(self):
        p = self.paths[self.binary]
        return None if os.access(p, os.X_OK) else "%s is not built" % p

    def command(self, port):
        up = "http://127.0.0.1:%d" % self.origin.port
        return [self.paths[self.binary], "--root", self.root, "--port", str(port),
                "--proxy", "/demo=" + up, "--proxy", "/files=" + up,
                "--proxy-pool-size", str(self.pool_size), "--status", "/status",
                "--max-connections", "20000", "--keepalive-timeout-ms", "300000",
                "--backlog", "4096"] + (["--loops", str(self.loops)] if self.loops else [])

    def pool(self):
        """The origin's pool from /status.json, or {}."""
        try:
            with urllib.request.urlopen("http://127.0.0.1:%d/status.json" % self.port,
                                        timeout=10) as r:
                doc = json.load(r)
            for p in doc.get("proxy", []):
                return p
        except (OSError, ValueError):
            pass
        return {}


def _start(suite, s):
    why = s.start(suite.port())
    if why:
        suite.notes.append("W6: %s did not start: %s" % (s.name, why))
    return why


def _round_diffs(t, n, v, n2, v2):
    """Each round's CPU per request of (n, v) less (n2, v2), sorted."""
    def by_round(server, variant):
        return {r.get("round"): float(r["cpu_us"])
                for r in t.runs("W6", variant, server, "cshttp-load")
                if r.get("cpu_us") is not None and r["status"] == "ok"}
    a, b = by_round(n, v), by_round(n2, v2)
    return sorted(a[k] - b[k] for k in a if k in b)


def _median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2] if len(xs) % 2 else (xs[len(xs) // 2 - 1] + xs[len(xs) // 2]) / 2


def run(suite, rnd):
    a = (suite.paths, suite.tmp, servers.make_root(suite.tmp), suite.fd_limit)
    origin = Origin(*a)
    started = []
    try:
        why = origin.available() or _start(suite, origin)
        if why:
            suite.notes.append("W6: no origin: %s" % why)
            return
        started.append(origin)
        proxies = [CshttpdProxy(origin, CONNECTIONS, *a),
                   CshttpdProxy(origin, CONNECTIONS, *a, loops=1), NginxProxy(origin, *a),
                   NginxProxy(origin, *a, workers="auto")]
        if "cshttpd-base" in suite.paths:  # --baseline: the build before, on the same terms
            proxies[2:2] = [CshttpdProxy(origin, CONNECTIONS, *a, binary="cshttpd-base"),
                            CshttpdProxy(origin, CONNECTIONS, *a, loops=1,
                                         binary="cshttpd-base")]
        live = []
        for p in proxies:
            why = p.available() or _start(suite, p)
            if why:
                suite.down("W6", "plaintext", p, rnd, "cshttp-load", why)
                continue
            started.append(p)
            problems = p.check()
            if problems:
                suite.notes.append("W6: %s: %s" % (p.name, "; ".join(problems)))
            live.append(p)
        live = servers.rotated(live, rnd - 1)  # as the suite orders its servers
        for p in live:
            suite.load("W6", "plaintext", p, rnd, "/demo/plaintext", ["-c", str(CONNECTIONS)],
                       CONNECTIONS)
        for p in live:
            suite.load("W6", "1MiB", p, rnd, "/files/1m.bin", ["-c", "8"], 8)
        for p in live:
            idle_gaps(suite, p, rnd)
        # the pool as the bottleneck: 64 clients, 8 connections
        for p in live:
            if isinstance(p, CshttpdProxy):
                p.stop()
                p.pool_size = 8
                if _start(suite, p):
                    continue
                suite.load("W6", "pool8", p, rnd, "/demo/plaintext", ["-c", "64"], 64)
                row = suite.results[-1]
                pool = p.pool()
                row["acquire_p50_us"] = pool.get("acquire_wait_p50_us")
                row["acquire_p99_us"] = pool.get("acquire_wait_p99_us")
                row["pool_opens"] = pool.get("opens")
                suite.say("  W6    pool8     %s acquire wait p50 %s us, p99 %s us, "
                          "%s opens" % (p.name, row["acquire_p50_us"], row["acquire_p99_us"],
                                        row["pool_opens"]))
                # the same load, with room for every request: nobody waits
                p.stop()
                p.pool_size = 1024
                if _start(suite, p):
                    continue
                suite.load("W6", "pool-large", p, rnd, "/demo/plaintext", ["-c", "64"], 64)
            else:
                suite.load("W6", "pool8", p, rnd, "/demo/plaintext", ["-c", "64"], 64)
        # as many exchanges in flight as pool8, nobody waiting (cshttpd's
        # pool is pool-large's): what fewer in flight costs by itself
        for p in live:
            suite.load("W6", "inflight8", p, rnd, "/demo/plaintext", ["-c", "8"], 8)
    finally:
        for s in started:
            s.stop()


def idle_gaps(suite, p, rnd):
    """GAPS bursts, each after GAP_S s of silence (the origin closes its
    side of every pooled connection after 1 s): requests and errors
    summed, the rate and CPU per request over the bursts."""
    total = {"status": "ok", "note": "", "requests": 0, "errors": 0, "cpu_s": 0.0,
             "wall": 0.0}
    p99 = []
    for i in range(GAPS):
        time.sleep(GAP_S)
        if not p.alive():
            total.update(status="crashed", note=p.log_tail())
            break
        tag = "W6-gaps-%s-%d-%d" % (p.name, rnd, i)
        res = clients.run_load(suite.paths, p, suite.url(p, "/demo/plaintext"),
                               ["-c", "16", "-d", "%g" % BURST_S], tag, suite.tmp, 60)
        total["cmd"] = res.get("cmd")
        if res["status"] not in ("ok", "errors"):
            total.update(status=res["status"], note=res.get("note", ""))
            break
        total["requests"] += res.get("requests") or 0
        total["errors"] += res.get("errors") or 0
        total["wall"] += BURST_S
        if res.get("cpu_us") is not None and res.get("requests"):
            total["cpu_s"] += res["cpu_us"] * res["requests"] / 1e6
        if res.get("p99_ms") is not None:
            p99.append(res["p99_ms"])
    if total["requests"]:
        total["rps"] = total["requests"] / total["wall"]
        total["cpu_us"] = total["cpu_s"] * 1e6 / total["requests"]
    if p99:
        total["p99_ms"] = max(p99)
    if total["status"] == "ok" and total["errors"]:
        total["status"] = "errors"
    del total["cpu_s"], total["wall"]
    suite.record("W6", "idle-gaps", p, rnd, "cshttp-load", total)


# Each cshttpd and the nginx on its terms: one event loop or worker, or one per core.
PEER = {"cshttpd-proxy": "nginx-proxy-auto", "cshttpd-proxy-1": "nginx-proxy",
        "cshttpd-proxy-base": "nginx-proxy-auto", "cshttpd-proxy-base-1": "nginx-proxy"}


def markdown(t, add):
    """W6's section of the report."""
    add("## W6: cshttpd and nginx as reverse proxies, the same origin")
    add("")
    add("The origin: nginx, one worker, `return 200` for /demo/plaintext and sendfile for "
        "/files/, keep-alive timeout 1 s. cshttpd-proxy: `--proxy /demo=ORIGIN --proxy "
        "/files=ORIGIN --proxy-pool-size 32` (8 in pool8), with its default loops (one per "
        "core) and, as cshttpd-proxy-1, with `--loops 1`; nginx-proxy: one worker, "
        "`proxy_pass` to an upstream with `keepalive 32`, HTTP/1.1, `Connection \"\"`; "
        "nginx-proxy-auto: the same with `worker_processes auto`. CPU/req "
        "is the proxy's own. /nginx-proxy: the median req/s over nginx-proxy's. / its peer: "
        "the medians of each round's ratios to the nginx on the same terms "
        "(cshttpd-proxy to nginx-proxy-auto, cshttpd-proxy-1 to nginx-proxy), req/s and "
        "CPU/req. idle-gaps: %d bursts of 1 s at 16 connections, each after %.1f s "
        "of silence in which the origin closed every pooled connection. pool8: 64 "
        "connections, cshttpd's pool of 8; acquire wait from its /status.json (since the "
        "pool was made, warm-up included)." % (GAPS, GAP_S))
    add("")
    add("| variant | proxy | req/s (median) | /nginx-proxy | / its peer: req/s, CPU | CPU/req µs "
        "| p99 ms | errors (all rounds) | acquire wait p50 / p99 µs | req/s each round | state |")
    add("|---|---|--:|--:|--:|--:|--:|--:|--:|---|---|")
    for v in ("plaintext", "1MiB", "idle-gaps", "pool8", "pool-large", "inflight8"):
        ref = t.median("W6", v, "nginx-proxy", "cshttp-load", "rps")
        for n in ("cshttpd-proxy", "cshttpd-proxy-1", "cshttpd-proxy-base",
                  "cshttpd-proxy-base-1", "nginx-proxy", "nginx-proxy-auto"):
            runs = t.runs("W6", v, n, "cshttp-load")
            if not runs:
                continue
            rps = t.median("W6", v, n, "cshttp-load", "rps")
            ratio = "%.2f" % (rps / ref) if rps and ref else "-"
            peer = "-"
            if n in PEER:
                r_rps = t.round_ratio("W6", v, n, PEER[n], "cshttp-load", "rps")
                r_cpu = t.round_ratio("W6", v, n, PEER[n], "cshttp-load", "cpu_us")
                if r_rps is not None and r_cpu is not None:
                    peer = "%.2f, %.2f" % (r_rps, r_cpu)
            cpu = t.median("W6", v, n, "cshttp-load", "cpu_us")
            p99 = t.median("W6", v, n, "cshttp-load", "p99_ms")
            errs = sum(int(r.get("errors") or 0) for r in runs)
            acq = "-"
            if v == "pool8" and n.startswith("cshttpd-proxy"):
                a50 = t.median("W6", v, n, "cshttp-load", "acquire_p50_us")
                a99 = t.median("W6", v, n, "cshttp-load", "acquire_p99_us")
                acq = "%s / %s" % ("%.0f" % a50 if a50 is not None else "-",
                                   "%.0f" % a99 if a99 is not None else "-")
            add("| %s | %s | %s | %s | %s | %s | %s | %d | %s | %s | %s |" % (
                v, n, "{:,.0f}".format(rps) if rps else "-", ratio, peer,
                "%.1f" % cpu if cpu is not None else "-", "%.2f" % p99 if p99 is not None else "-",
                errs, acq, t.rounds("W6", v, n, "cshttp-load", "rps"),
                t.state("W6", v, n, "cshttp-load") or "ok"))
    base = [(n, n.replace("cshttpd-proxy", "cshttpd-proxy-base"))
            for n in ("cshttpd-proxy", "cshttpd-proxy-1")]
    if any(t.runs("W6", "plaintext", b, "cshttp-load") for _, b in base):
        add("")
        add("Against the build before (`--baseline`, the same terms, the same rounds): the "
            "median over the rounds of each round's ratio, req/s and CPU per request:")
        add("")
        for v in ("plaintext", "1MiB", "idle-gaps", "pool8", "pool-large", "inflight8"):
            cells = []
            for n, b in base:
                r_rps = t.round_ratio("W6", v, n, b, "cshttp-load", "rps")
                r_cpu = t.round_ratio("W6", v, n, b, "cshttp-load", "cpu_us")
                if r_rps is not None and r_cpu is not None:
                    cells.append("%s %.3f, %.3f" % (n, r_rps, r_cpu))
            if cells:
                add("- %s: %s" % (v, "; ".join(cells)))
    add("")
    add("What waiting for a pooled connection costs (pool8 against pool-large, the same 64 "
        "connections; CPU per request, the median over the rounds of each round's "
        "difference; the goal: at most 0.5 µs):")
    add("")
    for n in ("cshttpd-proxy", "cshttpd-proxy-1"):
        diffs = _round_diffs(t, n, "pool8", n, "pool-large")
        if diffs:
            add("- %s: %+.2f µs a request (rounds: %s)" % (
                n, _median(diffs), ", ".join("%+.2f" % d for d in diffs)))
        cs = {v: [float(r["cs_per_req"]) for r in t.runs("W6", v, n, "cshttp-load")
                  if r.get("cs_per_req") is not None and r["status"] == "ok"]
              for v in ("pool8", "pool-large", "inflight8")}
        if cs["pool8"] and cs["pool-large"]:
            add("  context switches of its threads a request: pool8 %.3f, pool-large %.3f, "
                "inflight8 %s (medians)" % (
                    _median(cs["pool8"]), _median(cs["pool-large"]),
                    "%.3f" % _median(cs["inflight8"]) if cs["inflight8"] else "-"))
        d = _round_diffs(t, n, "pool8", n, "inflight8")
        if d:
            add("  pool8 less inflight8 (waiting at the same concurrency): %+.2f µs (rounds: %s)"
                % (_median(d), ", ".join("%+.2f" % x for x in d)))
    for n, ref in (("cshttpd-proxy-1", "nginx-proxy"), ("cshttpd-proxy", "nginx-proxy-auto")):
        mine = _round_diffs(t, n, "inflight8", n, "plaintext")
        peer = _round_diffs(t, ref, "inflight8", ref, "plaintext")
        if mine and peer:
            add("- 8 in flight instead of 32, nobody waiting (inflight8 less plaintext; nginx's "
                "keepalive 32 holds 32, not 64): %s %+.2f µs, %s %+.2f µs (medians of the "
                "rounds)" % (n, _median(mine), ref, _median(peer)))
    add("")

