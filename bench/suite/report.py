"""The suite's outputs: one CSV row per run (per level for the sweep), the
Markdown report (machine, versions, commands, tables of medians, ratios and
every round's figure) and the SVG charts, drawn by gnuplot."""

import csv
import os
import shutil
import statistics
import subprocess

from . import rapid_reset, tls, w6, ws

CSV_FIELDS = ["workload", "variant", "server", "round", "tool", "status", "connections", "rps",
              "requests", "p50_ms", "p99_ms", "mbps", "cpu_us", "cs_per_req", "errors", "failed", "non_2xx",
              "keepalive_reqs", "idle_held", "idle_answered", "rss_0", "rss_1500", "rss_10000",
              "held_1500", "held_10000", "threads_0", "threads_1500", "threads_10000",
              "bytes_per_conn", "wall_s", "tls", "server_cpu_pct", "client_cpu_pct", "origin_cpu_us",
              # WS idle: RSS and threads with 0, N and 2N idle WebSockets (rss_0 and threads_0
              # above), the slope and its peers (bench/suite/ws.py)
              "rss_n", "rss_2n", "threads_n", "threads_2n", "held_n", "held_2n", "bytes_per_ws",
              "bytes_per_ws_n", "origin_rss_0", "origin_rss_n", "origin_rss_2n",
              "origin_bytes_per_ws", "tunnels_n", "tunnels_2n", "idle_memory_n", "idle_memory_2n",
              "idle_memory_per_ws",
              # H2 reset: the rapid reset's figures (bench/suite/rapid_reset.py); cpu_us is
              # per pair there
              "pairs", "taken", "attack_cpu_us", "attack_cpu_us_ticks", "attack_s",
              "attack_connections", "first_conn_pairs", "first_last_stream", "goaway",
              "server_resets", "answered", "ends", "probes", "probe_p50_ms", "probe_max_ms",
              "probe_failures",
              "note", "cmd"]
GOOD = ("ok", "errors")
# W2's ceiling as measured each round (bench_sleep_ceiling), a pseudo-server in the results
W2_CEILING = "no server"


def _num(x, fmt="%.0f"):
    if x is None:
        return "–"
    return fmt % x


def _thousands(x):
    return "–" if x is None else "{:,.0f}".format(x)


class Table:
    """Medians over rounds of the suite's results."""

    def __init__(self, suite):
        self.s = suite
        self.rows = suite.results

    def runs(self, workload, variant, server, tool):
        return [r for r in self.rows if r["workload"] == workload and r["variant"] == variant and
                r["server"] == server and r["tool"] == tool]

    def median(self, workload, variant, server, tool, key):
        vals = [r[key] for r in self.runs(workload, variant, server, tool)
                if r["status"] in GOOD and r.get(key) is not None]
        return statistics.median(vals) if vals else None

    def state(self, workload, variant, server, tool):
        """'' when every round ran, else what went wrong ('crashed 1/3')."""
        runs = self.runs(workload, variant, server, tool)
        if not runs:
            return "not run"
        bad = {}
        for r in runs:
            if r["status"] != "ok":
                bad[r["status"]] = bad.get(r["status"], 0) + 1
        return ", ".join("%s %d/%d" % (k, v, len(runs)) for k, v in bad.items())

    def round_ratio(self, workload, variant, server, ref, tool, key, ref_tool=None):
        """The median over the rounds of server's key over ref's in the
        same round (rounds where both ran well), or None. Runs side by side
        in one round share the machine's state of the moment, which on a
        shared machine moves far more between rounds than between runs: a
        ratio taken within each round is steadier than the ratio of the
        medians."""
        by_round = {r.get("round"): float(r[key])
                    for r in self.runs(workload, variant, ref, ref_tool or tool)
                    if r["status"] in GOOD and r.get(key)}
        out = [float(r[key]) / by_round[r.get("round")]
               for r in self.runs(workload, variant, server, tool)
               if r["status"] in GOOD and r.get(key) is not None and r.get("round") in by_round]
        return statistics.median(out) if out else None

    def rounds(self, workload, variant, server, tool, key, fmt=_thousands):
        out = []
        for r in self.runs(workload, variant, server, tool):
            if r.get(key) is None or r["status"] not in GOOD:
                out.append(r["status"])
            else:
                out.append(fmt(r[key]))
        return " / ".join(out) or "–"


def _ratio(x, ref):
    return "%.2f" % (x / ref) if x is not None and ref else "–"


def write_csv(suite, path):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=CSV_FIELDS, extrasaction="ignore")
        w.writeheader()
        for r in suite.results:
            if r["workload"] == "SWEEP" and r.get("levels"):
                for lv in r["levels"]:
                    row = dict(r)
                    row.update(lv)
                    row["variant"] = "c=%d" % int(lv["connections"])
                    row["cpu_us"] = r.get("cpu_us")
                    w.writerow(row)
            else:
                w.writerow(r)


# -- charts -------------------------------------------------------------

def _gnuplot(script, tmp):
    p = subprocess.run(["gnuplot"], input=script, capture_output=True, text=True, timeout=60,
                       cwd=tmp)
    return p.returncode == 0, p.stderr.strip()


def _head(out, title, ylabel, size="820,460"):
    return ("set terminal svg size %s dynamic enhanced font 'sans,11' background rgb 'white'\n"
            "set output '%s'\nset title \"%s\"\nset ylabel \"%s\"\nset grid ytics\n"
            "set datafile missing 'NaN'\nset key top right\n" % (size, out, title, ylabel))


def bar_chart(out, tmp, title, ylabel, labels, series, hline=None, log=False, value_fmt="%.0f"):
    """Bars: one group per label, one bar per series (name, values)."""
    data = os.path.join(tmp, os.path.basename(out) + ".dat")
    with open(data, "w") as f:
        for i, lab in enumerate(labels):
            vals = ["NaN" if s[1][i] is None else "%g" % s[1][i] for s in series]
            f.write("\"%s\" %s\n" % (lab, " ".join(vals)))
    g = _head(out, title, ylabel + (" (log scale)" if log else ""))
    g += ("set style data histograms\nset style histogram clustered gap 1\n"
          "set style fill solid 0.85 border -1\nset boxwidth 0.9\nset xrange [-0.6:%g]\n"
          % (len(labels) - 0.4))
    g += "set bmargin 4\n"
    if log:
        g += "set logscale y\nset yrange [*:*]\n"
    elif hline:
        top = max([hline[0]] + [v for s in series for v in s[1] if v is not None])
        g += "set yrange [0:%g]\nset key top left\n" % (top * 1.2)
    else:
        g += "set yrange [0:*]\n"
    plots = []
    for j, (name, _) in enumerate(series):
        plots.append("'%s' using %d:xtic(1) title \"%s\"" % (data, j + 2, name) if len(series) > 1
                     else "'%s' using %d:xtic(1) notitle" % (data, j + 2))
    if len(series) == 1:
        plots.append("'%s' using 0:2:(sprintf('%s',$2)) with labels offset 0,0.8 notitle"
                     % (data, value_fmt))
    if hline:
        plots.append("%g with lines lw 2 dt 2 lc rgb 'black' title \"%s\"" % hline)
    g += "plot " + ", \\\n     ".join(plots) + "\n"
    return _gnuplot(g, tmp)


def line_chart(out, tmp, title, xlabel, ylabel, xs, series, logy=False):
    data = os.path.join(tmp, os.path.basename(out) + ".dat")
    with open(data, "w") as f:
        for i, x in enumerate(xs):
            vals = ["NaN" if s[1][i] is None else "%g" % s[1][i] for s in series]
            f.write("%g %s\n" % (x, " ".join(vals)))
    g = _head(out, title, ylabel)
    g += "set xlabel \"%s\"\nset logscale x 2\nset key top left\n" % xlabel
    g += "set logscale y\n" if logy else "set yrange [0:*]\n"
    g += "plot " + ", \\\n     ".join(
        "'%s' using 1:%d with linespoints lw 2 pt 7 title \"%s\"" % (data, j + 2, name)
        for j, (name, _) in enumerate(series)) + "\n"
    return _gnuplot(g, tmp)


def charts(suite, t, prefix):
    """Draws the charts whose workloads ran; returns {name: file}."""
    tmp, made, fails = suite.tmp, {}, []
    names = [s.name for s in suite.live]

    def want(w):
        return w in suite.a.workloads and names

    def draw(chart, ok_err):
        ok, err = ok_err
        if ok:
            made[chart] = prefix + "-" + chart + ".svg"
        else:
            fails.append("%s: %s" % (chart, err[-200:]))

    def path(chart):
        return prefix + "-" + chart + ".svg"

    if want("W1"):
        draw("w1-rps", bar_chart(path("w1-rps"), tmp, "W1: 32 keep-alive connections, plaintext "
                                 "(cshttp-load, median)", "requests/s", names,
                                 [("req/s", [t.median("W1", "plaintext", n, "cshttp-load", "rps")
                                             for n in names])]))
        draw("w1-cpu", bar_chart(path("w1-cpu"), tmp, "W1: server CPU time per request (median)",
                                 "µs per request", names,
                                 [("µs", [t.median("W1", "plaintext", n, "cshttp-load", "cpu_us")
                                          for n in names])], value_fmt="%.1f"))
    w2 = [n for n in names if any(s.name == n and s.blocking for s in suite.live)]
    if want("W2") and w2:
        draw("w2", bar_chart(path("w2"), tmp, "W2: 128 connections, handler blocks 15 ms (median)",
                             "requests/s", w2,
                             [("req/s", [t.median("W2", "sleep15", n, "cshttp-load", "rps")
                                         for n in w2])], hline=(128 / 0.015, "ceiling 8,533")))
    if want("W3"):
        labels = []
        for n in names:
            held = t.median("W3", "idle1500", n, "cshttp-load", "idle_held")
            ans = t.median("W3", "idle1500", n, "cshttp-load", "idle_answered")
            labels.append("%s\\n%s/%s answered" % (n, _num(ans), _num(held)))
        draw("w3", bar_chart(path("w3"), tmp, "W3: 50 active + 1,500 idle keep-alive connections "
                             "(median; idle ones that answered after the load)", "requests/s",
                             labels, [("req/s", [t.median("W3", "idle1500", n, "cshttp-load", "rps")
                                                 for n in names])]))
    if want("W5"):
        draw("w5", bar_chart(path("w5"), tmp, "W5: static files, 32 connections (MB/s read, "
                             "median)", "MB/s", names,
                             [(v, [t.median("W5", v, n, "cshttp-load", "mbps") for n in names])
                              for v in ("1KiB", "1MiB")], log=True))
    if want("MEM"):
        mem = [s.name for s in suite.all if s.name in suite.selected and
               s.name not in suite.unavailable]
        vals = [t.median("MEM", "idle", n, "cshttp-load", "bytes_per_conn") for n in mem]
        pos = [v for v in vals if v]
        draw("memory", bar_chart(path("memory"), tmp, "Server RSS per idle keep-alive connection "
                                 "((RSS@10,000 - RSS@1,500) / 8,500; median)", "bytes", mem,
                                 [("bytes", vals)],
                                 log=bool(pos) and max(pos) > 20 * max(min(pos), 1)))
    on = [n for n in names if t.runs("TLS", "w1-https", n, "cshttp-load") or
          t.runs("TLS", "handshakes", n, "ab")]
    if want("TLS") and on:
        draw("tls-w1", bar_chart(path("tls-w1"), tmp, "W1 over HTTPS: 32 keep-alive connections, "
                                 "TLS 1.3 (median)", "requests/s", on,
                                 [(tool, [t.median("TLS", "w1-https", n, tool, "rps") for n in on])
                                  for tool in ("cshttp-load", "wrk")]))
        draw("tls-handshakes", bar_chart(
            path("tls-handshakes"), tmp, "Full TLS 1.3 handshakes per second (ab -c 16, a new "
            "connection per request; median)", "handshakes/s",
            ["%s\\n%s µs CPU each" % (n, _num(t.median("TLS", "handshakes", n, "ab", "cpu_us"),
                                               "%.0f")) for n in on],
            [("handshakes/s", [t.median("TLS", "handshakes", n, "ab", "rps") for n in on])]))
    sweep = [n for n in names if n in ("cshttpd", "nginx-1")]
    if want("SWEEP") and sweep:
        levels = suite_levels(t, sweep)
        if levels:
            draw("sweep-rps", line_chart(path("sweep-rps"), tmp, "Concurrency sweep, plaintext: "
                                         "throughput (median)", "connections", "requests/s", levels,
                                         [(n, [sweep_median(t, n, l, "rps") for l in levels])
                                          for n in sweep]))
            draw("sweep-p99", line_chart(path("sweep-p99"), tmp, "Concurrency sweep, plaintext: "
                                         "p99 latency (median)", "connections", "p99 ms", levels,
                                         [(n, [sweep_median(t, n, l, "p99_ms") for l in levels])
                                          for n in sweep], logy=True))
    return made, fails


def suite_levels(t, servers):
    levels = set()
    for r in t.rows:
        if r["workload"] == "SWEEP" and r["server"] in servers:
            for lv in r.get("levels") or []:
                levels.add(int(lv["connections"]))
    return sorted(levels)


def sweep_median(t, server, level, key):
    vals = []
    for r in t.runs("SWEEP", "levels", server, "cshttp-load"):
        if r["status"] not in GOOD:
            continue
        for lv in r.get("levels") or []:
            if int(lv["connections"]) == level and lv.get(key) is not None:
                vals.append(lv[key])
    return statistics.median(vals) if vals else None


# -- Markdown -----------------------------------------------------------

def markdown(suite, t, chart_files, chart_fails):
    a, m = suite.a, suite.machine
    L = []
    add = L.append
    names = [s.name for s in suite.live]
    add("# Server benchmark suite, %s UTC" % suite.started.strftime("%Y-%m-%d %H:%M"))
    add("")
    add("`bench/run %s` (cshttp %s); %s to %s UTC. Figures compare servers within this run on "
        "this machine, never absolute." % (
            " ".join(suite.argv), suite.paths.get("commit"), suite.started.strftime("%H:%M:%S"),
            suite.finished.strftime("%H:%M:%S")))
    add("")
    add("## Machine")
    add("")
    add("| | |")
    add("|---|---|")
    add("| CPU | %s |" % m["cpu"])
    add("| cores | %s |" % m["cores"])
    add("| memory | %s |" % m["memory"])
    add("| kernel | %s |" % m["kernel"])
    add("| load average | %s at the start, %s at the end |" % (m["loadavg"], m.get("loadavg_end")))
    add("| descriptor limit | %d for every server and client |" % suite.fd_limit)
    add("")
    add("## Servers")
    add("")
    add("| server | version | configuration | checks |")
    add("|---|---|---|---|")
    conf = {
        "cshttpd": "`--max-connections 20000 --keepalive-timeout-ms 300000 --backlog 4096`, "
                   "one event loop per CPU (%s), handlers that block on other threads (default)" % m["cores"],
        "nginx-1": "worker_processes 1; `return 200` for the plaintext; sendfile, tcp_nopush",
        "nginx-auto": "worker_processes auto (%s); otherwise as nginx-1" % m["cores"],
        "h2o": "num-threads 1; mruby.handler for the plaintext, file.dir for the files",
        "mhd-tpc": "bench_mhd --mode tpc: a thread per connection, poll",
        "mhd-pool": "bench_mhd --mode pool: epoll, %s I/O threads that run the handlers" % m["cores"],
    }
    for s in suite.all:
        if s.name not in suite.selected:
            continue
        chk = suite.unavailable.get(s.name) or "; ".join(suite.checks.get(s.name, [])) or "passed"
        add("| %s | %s | %s | %s |" % (s.name, suite.versions.get(s.name, "?"), conf.get(s.name, ""),
                                       chk))
    add("")
    add("Load generators: %s; %s; %s. Every server listens on 127.0.0.1 and shares the %s "
        "cores with the load generator." % (suite.tool_versions.get("cshttp-load"),
                                            suite.tool_versions.get("wrk"),
                                            suite.tool_versions.get("ab"), m["cores"]))
    add("")
    add("Method: each workload runs in %d round(s); in each round every server runs once, one "
        "after the other (A B C ..., then the next round), %g s per run after %g s of warm-up "
        "(a separate, unmeasured run). Quoted: the **median** over the rounds, with every round's "
        "figure. **CPU/req** is the server's own CPU time (utime + stime of its process and "
        "children from /proc/PID/stat, all threads) over the measured run divided by the "
        "requests the client completed. Runs with errors keep their figures and are marked; a "
        "server that crashed, refused or timed out is marked and restarted for the next run."
        % (a.rounds, a.duration, a.warmup))
    add("")
    if suite.notes:
        add("Events:")
        add("")
        for n in suite.notes:
            add("- %s" % n)
        add("")

    def figure_table(workload, variant, tool, ref_name, ref_label, ceiling=None, extra=()):
        ref = (ceiling if ceiling else
               t.median(workload, variant, ref_name, tool, "rps") if ref_name else None)
        by_round = bool(ref_name) and not ceiling
        cols = ["server", "req/s (median)", ref_label] + \
            (["%s round by round: req/s, CPU" % ref_label] if by_round else []) + \
            ["CPU/req µs", "p99 ms"] + \
            [c[0] for c in extra] + ["errors (all rounds)", "req/s each round", "state"]
        add("| " + " | ".join(cols) + " |")
        add("|" + "|".join(["---"] + ["--:"] * (len(cols) - 3) + ["---", "---"]) + "|")
        for n in names:
            runs = t.runs(workload, variant, n, tool)
            if not runs:
                continue
            rps = t.median(workload, variant, n, tool, "rps")
            errs = sum(int(r.get("errors") or 0) for r in runs)
            row = [n, _thousands(rps), _ratio(rps, ref)]
            if by_round:
                rr = t.round_ratio(workload, variant, n, ref_name, tool, "rps")
                rc = t.round_ratio(workload, variant, n, ref_name, tool, "cpu_us")
                row.append("%s, %s" % (_num(rr, "%.2f"), _num(rc, "%.2f")))
            row += [_num(t.median(workload, variant, n, tool, "cpu_us"), "%.1f"),
                   _num(t.median(workload, variant, n, tool, "p99_ms"), "%.2f")]
            row += [c[1](n) for c in extra]
            row += [str(errs), t.rounds(workload, variant, n, tool, "rps"),
                    t.state(workload, variant, n, tool) or "ok"]
            add("| " + " | ".join(row) + " |")
        add("")

    def chart(name, alt):
        if name in chart_files:
            add("![%s](%s)" % (alt, os.path.basename(chart_files[name])))
            add("")

    if "W1" in a.workloads:
        add("## W1: 32 keep-alive connections, GET /demo/plaintext")
        add("")
        add("`cshttp-load -c 32`; ratio to nginx-1.")
        add("")
        figure_table("W1", "plaintext", "cshttp-load", "nginx-1", "/nginx-1")
        chart("w1-rps", "W1 req/s")
        chart("w1-cpu", "W1 CPU per request")
        add("The same load from `wrk -t1 -c32` on cshttpd and nginx-1 in each round, against "
            "cshttp-load's figure:")
        add("")
        add("| server | cshttp-load req/s | wrk req/s | wrk / cshttp-load | CPU/req µs (wrk) | "
            "p99 ms (wrk) | wrk each round |")
        add("|---|--:|--:|--:|--:|--:|---|")
        for n in names:
            if not t.runs("W1", "plaintext", n, "wrk"):
                continue
            cl = t.median("W1", "plaintext", n, "cshttp-load", "rps")
            wk = t.median("W1", "plaintext", n, "wrk", "rps")
            add("| %s | %s | %s | %s | %s | %s | %s |" % (
                n, _thousands(cl), _thousands(wk), _ratio(wk, cl),
                _num(t.median("W1", "plaintext", n, "wrk", "cpu_us"), "%.1f"),
                _num(t.median("W1", "plaintext", n, "wrk", "p99_ms"), "%.2f"),
                t.rounds("W1", "plaintext", n, "wrk", "rps")))
        add("")
    if "W2" in a.workloads:
        add("## W2: 128 connections, GET /demo/sleep?ms=15 (ceiling 128 / 0.015 s = 8,533 req/s)")
        add("")
        add("`cshttp-load -c 128`; ratio to the ceiling. nginx and h2o have no handler that "
            "blocks (their work here is a `return` or a Ruby block), so they do not run W2.")
        add("")
        measured = t.median("W2", "sleep15", W2_CEILING, "sleep", "rps")
        if measured:
            add("The machine's own ceiling, measured in each round before the servers: 128 "
                "threads sleeping 15 ms in a loop with no server and no client "
                "(`bench_sleep_ceiling`): median %s sleeps/s (%s). A 15 ms sleep takes "
                "longer than 15 ms, more so on a busy or shared machine; \"/measured\" is each "
                "server's median over that median." % (
                    _thousands(measured), t.rounds("W2", "sleep15", W2_CEILING, "sleep", "rps")))
            add("")
        floor = t.median("W2", "sleep15", W2_CEILING, "exchange", "rps")
        if floor:
            add("And the floor of what a server adds, measured right after it: the same 128 "
                "threads, each reading a byte from a loopback TCP connection before its sleep "
                "and writing one after it, with one client thread (epoll) sending the next "
                "byte as soon as one comes back (`bench_sleep_ceiling --exchange`): median %s "
                "exchanges/s (%s). That is W2 with nothing of HTTP, of a server or of a load "
                "generator left, only the wake-ups no server can spare (the client's for each "
                "response, the handler's thread's for each request); \"/exchange\" is each "
                "server's ratio to it round by round, median over the rounds." % (
                    _thousands(floor), t.rounds("W2", "sleep15", W2_CEILING, "exchange", "rps")))
            add("")
        extra = ()
        if measured:
            extra += (("/measured", lambda n: _ratio(
                t.median("W2", "sleep15", n, "cshttp-load", "rps"), measured)),)
        if floor:
            extra += (("/exchange", lambda n: _num(
                t.round_ratio("W2", "sleep15", n, W2_CEILING, "cshttp-load", "rps",
                              ref_tool="exchange"), "%.2f")),)
        figure_table("W2", "sleep15", "cshttp-load", None, "/ceiling", ceiling=128 / 0.015,
                     extra=extra)
        chart("w2", "W2 against the ceiling")
    if "W3" in a.workloads:
        add("## W3: 1,500 idle keep-alive connections + 50 active, GET /demo/plaintext")
        add("")
        add("`cshttp-load --idle 1500 -c 50`: the idle connections each make one request before "
            "the load and one more after it; held = still open at the end, answered = answered "
            "that last request. Ratio to nginx-1. CPU/req includes the idle connections' "
            "requests.")
        add("")
        figure_table("W3", "idle1500", "cshttp-load", "nginx-1", "/nginx-1", extra=(
            ("idle held / answered", lambda n: "%s / %s" % (
                _num(t.median("W3", "idle1500", n, "cshttp-load", "idle_held")),
                _num(t.median("W3", "idle1500", n, "cshttp-load", "idle_answered")))),))
        chart("w3", "W3 rate and idle connections answered")
    if "W4" in a.workloads:
        add("## W4: ab -c 1024, GET /demo/plaintext, with and without keep-alive")
        add("")
        add("`ab -k -c 1024 -n %d` and `ab -c 1024 -n %d` (ab speaks HTTP/1.0; with -k it sends "
            "`Connection: Keep-Alive`). failed = ab's failed requests (connect, receive, length, "
            "exceptions), non-2xx counted separately; ab's p99 is in whole ms. Ratio to nginx-1."
            % (a.ab_keepalive_n, a.ab_close_n))
        add("")
        for variant, title in (("ab-k", "keep-alive (-k)"), ("ab-close", "a connection per request")):
            add("### %s" % title)
            add("")
            figure_table("W4", variant, "ab", "nginx-1", "/nginx-1", extra=(
                ("failed", lambda n, v=variant: _num(t.median("W4", v, n, "ab", "failed"))),
                ("non-2xx", lambda n, v=variant: _num(t.median("W4", v, n, "ab", "non_2xx"))),
                ("kept alive", lambda n, v=variant: _num(t.median("W4", v, n, "ab",
                                                                  "keepalive_reqs")))))
    if "W5" in a.workloads:
        add("## W5: static files, 32 keep-alive connections")
        add("")
        add("`cshttp-load -c 32` on /files/1k.bin (1,024 bytes) and /files/1m.bin (1,048,576 "
            "bytes), the same bytes for every server. MB/s = bytes read by the client per "
            "second (heads included), 10^6 bytes. Ratio to nginx-1.")
        add("")
        for variant in ("1KiB", "1MiB"):
            add("### %s" % variant.replace("KiB", " KiB").replace("MiB", " MiB"))
            add("")
            figure_table("W5", variant, "cshttp-load", "nginx-1", "/nginx-1", extra=(
                ("MB/s", lambda n, v=variant: _num(t.median("W5", v, n, "cshttp-load", "mbps"))),))
        chart("w5", "W5 MB/s")
    if "W6" in a.workloads:
        w6.markdown(t, add)
    if "WS" in a.workloads:
        ws.markdown(suite, t, add)
    if "MEM" in a.workloads:
        lo, hi = a.mem_counts
        add("## Memory: idle keep-alive connections")
        add("")
        add("Each server started afresh; VmRSS of its process and children (/proc/PID/status) "
            "with no connection, then while `cshttp-load --idle N -c 0 -d %g` holds N = %d and "
            "then %d idle keep-alive connections (each made one request first; the sample is "
            "the last one taken at the highest count of established connections). bytes/conn = "
            "(RSS@%d - RSS@%d) / %d (over the connections actually held, when a run held "
            "fewer: see held and state)." % (a.mem_hold, lo, hi, hi, lo, hi - lo))
        add("")
        add("| server | RSS idle MiB | RSS @%d MiB | RSS @%d MiB | bytes/conn (median) | "
            "threads 0 / %d / %d | held %d / %d | bytes/conn each round | state |" % (
                lo, hi, lo, hi, lo, hi))
        add("|---|--:|--:|--:|--:|--:|--:|---|---|")
        for s in suite.all:
            n = s.name
            runs = t.runs("MEM", "idle", n, "cshttp-load")
            if not runs:
                continue

            def mib(k):
                v = t.median("MEM", "idle", n, "cshttp-load", k)
                return _num(v / 1048576 if v else None, "%.1f")
            add("| %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                n, mib("rss_0"), mib("rss_%d" % lo), mib("rss_%d" % hi),
                _thousands(t.median("MEM", "idle", n, "cshttp-load", "bytes_per_conn")),
                " / ".join(_num(t.median("MEM", "idle", n, "cshttp-load", "threads_%s" % k))
                           for k in (0, lo, hi)),
                " / ".join(_num(t.median("MEM", "idle", n, "cshttp-load", "held_%d" % k))
                           for k in (lo, hi)),
                t.rounds("MEM", "idle", n, "cshttp-load", "bytes_per_conn"),
                t.state("MEM", "idle", n, "cshttp-load") or "ok"))
        add("")
        chart("memory", "bytes per idle connection")
    if "SWEEP" in a.workloads:
        sw = [n for n in names if t.runs("SWEEP", "levels", n, "cshttp-load")]
        levels = suite_levels(t, sw)
        if sw and levels:
            add("## Concurrency sweep, GET /demo/plaintext")
            add("")
            add("`cshttp-load --levels %s -d %g -w %g` (each level warms up at its own "
                "concurrency): one run per server per round, medians per level. CPU/req over "
                "the whole sweep, warm-ups included: %s."
                % (",".join(str(l) for l in levels), a.sweep_duration, a.warmup,
                    ", ".join("%s %s µs" % (n, _num(t.median("SWEEP", "levels", n, "cshttp-load",
                                                              "cpu_us"), "%.1f")) for n in sw)))
            add("")
            head = ["connections"]
            for n in sw:
                head += ["%s req/s" % n, "%s p99 ms" % n]
            if "nginx-1" in sw and "cshttpd" in sw:
                head.append("cshttpd/nginx-1")
            add("| " + " | ".join(head) + " |")
            add("|" + "|".join(["--:"] * len(head)) + "|")
            for lv in levels:
                row = [str(lv)]
                for n in sw:
                    row += [_thousands(sweep_median(t, n, lv, "rps")),
                            _num(sweep_median(t, n, lv, "p99_ms"), "%.2f")]
                if "nginx-1" in sw and "cshttpd" in sw:
                    row.append(_ratio(sweep_median(t, "cshttpd", lv, "rps"),
                                      sweep_median(t, "nginx-1", lv, "rps")))
                add("| " + " | ".join(row) + " |")
            add("")
            chart("sweep-rps", "sweep req/s")
            chart("sweep-p99", "sweep p99")
    if "TLS" in a.workloads:
        tls_section(suite, t, names, add, figure_table, chart)
    if "H2" in a.workloads:
        add("## H2: HTTP/2 over TLS, 32 connections with 10 streams each")
        add("")
        add("`h2load -t 1 -c 32 -m 10 -D %g https://127.0.0.1:P/files/100.bin` (100 bytes), "
            "after an unmeasured second of the same load, on each server's HTTPS listener "
            "(the TLS workload's certificate; nginx-1 `listen ... ssl http2`, h2o one thread, "
            "cshttpd-1 one loop). errors: requests failed, errored, timed out or not 2xx. "
            "Ratio to nginx-1." % a.duration)
        add("")
        figure_table("H2", "tls-m10", "h2load", "nginx-1", "/nginx-1")
        if any(r["workload"] == "H2" and r["variant"] == "reset" for r in t.rows):
            h2_reset_section(t, names, add)
        idle = [(n, r.get("bytes_per_conn")) for n in names
                for r in t.runs("H2", "idle", n, "python-ssl")]
        if idle:
            add("Idle: %d TLS connections that chose h2 by ALPN, sent the preface and SETTINGS "
                "and acknowledged the server's, held after the last round; the server's RSS "
                "before and while they are held, per connection." % a.h2_idle)
            add("")
            add("| server | bytes per idle h2 connection |")
            add("|---|--:|")
            for n, b in idle:
                add("| %s | %s |" % (n, _thousands(b) if b else "–"))
            add("")
    add("## Commands")
    add("")
    add("The first round's command of each run (ports differ between runs; warm-ups, not "
        "shown, are the same cshttp-load command with `-d %g`)." % a.warmup)
    add("")
    add("```")
    for s in suite.all:
        if getattr(s, "cmdline", None):
            add("# %s: %s" % (s.name, " ".join(s.cmdline)))
    for (w, v, n, tool), cmd in suite.commands.items():
        if cmd:
            add("%s %s %s: %s" % (w, v, n, cmd))
    add("```")
    add("")
    add("Server configurations written by the suite: see `bench/suite/servers.py` (nginx.conf, "
        "h2o.conf). Every run's figures: the CSV beside this file.")
    if chart_fails:
        add("")
        add("Charts that gnuplot could not draw: " + "; ".join(chart_fails))
    add("")
    return "\n".join(L)


def h2_reset_section(t, names, add):
    """H2's `reset` variant: the rapid reset's CPU, how each server ended it,
    and the probe beside it (bench/suite/rapid_reset.py)."""
    tool = rapid_reset.TOOL
    add("### Rapid reset (CVE-2023-44487)")
    add("")
    add("In each round after `tls-m10`: one attacker (`python3 -m suite.rapid_reset`, frames "
        "written by hand over Python's `ssl`, ALPN h2) sends the preface, an empty SETTINGS, "
        "then %s pairs of HEADERS (GET /files/100.bin, END_STREAM) and RST_STREAM (CANCEL) on "
        "a new stream each, as fast as the socket takes them, reading and dropping what comes "
        "back; when the server ends the connection (GOAWAY, close) it opens another until all "
        "the pairs are sent; after the last, a PING whose ACK says the server has read them. "
        "Attack CPU: the server's CPU time (every thread of its process tree, "
        "/proc/PID/task/TID/schedstat, ns) from before the attacker starts to after it exits, "
        "the probes' requests included; ratio to nginx-1 round by round; per pair: over the "
        "pairs sent. First connection: the pairs the socket took before the server's GOAWAY "
        "or close was read, and that GOAWAY's last stream id. The pairs the server took: on "
        "each connection it ended with a GOAWAY, those up to its last stream id (the kernel's "
        "buffers take thousands more before the GOAWAY is read, which the server drops "
        "unread), else all those sent. Attack ms: from the attacker's first connect to its "
        "end. Answered: the responses (HEADERS) the attacker received. Probe: GETs of "
        "/files/100.bin over HTTPS, HTTP/1.1 keep-alive on one connection of its own, %g ms "
        "apart, those in flight during the attack; max over all rounds. Goals: every probe "
        "answered within 50 ms, attack CPU at most 2x nginx-1's."
        % (_thousands(rapid_reset.pairs_wanted()), rapid_reset.PAUSE * 1e3))
    add("")
    cols = ["server", "attack CPU µs (median)", "/nginx-1 round by round", "CPU µs per pair",
            "first connection: pairs sent, GOAWAY last stream", "pairs the server took",
            "connections", "attack ms", "GOAWAY", "answered", "probes", "probe median ms",
            "probe max ms (all rounds)", "probe failures (all rounds)",
            "attack CPU µs each round", "state"]
    add("| " + " | ".join(cols) + " |")
    add("|" + "|".join(["---"] + ["--:"] * 7 + ["---"] + ["--:"] * 5 + ["---", "---"]) + "|")
    for n in names:
        runs = t.runs("H2", "reset", n, tool)
        if not runs:
            continue
        good = [r for r in runs if r["status"] in GOOD]

        def med(k, fmt="%.0f"):
            return _num(t.median("H2", "reset", n, tool, k), fmt)
        codes = sorted({c.split(" x")[0] for r in good
                        for c in (r.get("goaway") or "").split(", ") if c})
        worst = [r["probe_max_ms"] for r in good if r.get("probe_max_ms") is not None]
        ms = t.median("H2", "reset", n, tool, "attack_s")
        add("| " + " | ".join([
            n, _thousands(t.median("H2", "reset", n, tool, "attack_cpu_us")),
            _num(t.round_ratio("H2", "reset", n, "nginx-1", tool, "attack_cpu_us"), "%.2f"),
            med("cpu_us", "%.2f"),
            "%s, %s" % (med("first_conn_pairs"), med("first_last_stream")), med("taken"),
            med("attack_connections"),
            _num(ms * 1e3 if ms is not None else None, "%.0f"),
            ", ".join(codes) or "–", med("answered"),
            med("probes"), med("probe_p50_ms", "%.2f"),
            _num(max(worst) if worst else None, "%.1f"),
            str(sum(int(r.get("probe_failures") or 0) for r in runs)),
            t.rounds("H2", "reset", n, tool, "attack_cpu_us"),
            t.state("H2", "reset", n, tool) or "ok"]) + " |")
    add("")


def tls_section(suite, t, names, add, figure_table, chart):
    """The TLS workload: how each server was given HTTPS, what a client
    negotiated with it, then W1 over HTTPS and the handshakes."""
    a = suite.a
    add("## TLS: W1 over HTTPS and full handshakes per second")
    add("")
    cert = suite.tls_cert or {}
    add("Every server given HTTPS gets the same certificate, made for this run (%s: `%s`), on "
        "a second listener beside its plain one. cshttpd: `--tls-cert cert.pem --tls-key "
        "key.pem --tls-port P` and nothing else (its TLS settings are the engine's: TLS 1.2 "
        "and 1.3, OpenSSL's default ciphersuites and groups, server preference). nginx-1: "
        "`listen 127.0.0.1:P ssl backlog=4096; ssl_certificate cert.pem; ssl_certificate_key "
        "key.pem; ssl_protocols TLSv1.2 TLSv1.3;` and its defaults for the rest "
        "(ssl_session_cache none, ssl_session_tickets on, ssl_prefer_server_ciphers off)."
        % (cert.get("subject", "–"), cert.get("cmd", "–")))
    add("")
    add("What `openssl s_client` negotiated with each, one full handshake and one GET before "
        "the first round (the tickets are the TLS 1.3 session tickets the server sent after "
        "the handshake, a cost it pays per connection):")
    add("")
    add("| server | negotiated |")
    add("|---|---|")
    for n in names:
        if n in suite.tls_info:
            add("| %s | %s |" % (n, tls.summary(suite.tls_info[n])))
        elif n not in suite.tls_skipped:
            add("| %s | not probed: it did not start with HTTPS (see the events above) |" % n)
    for n, why in suite.tls_skipped.items():
        add("| %s | not run: %s |" % (n, why))
    add("")
    terms = {tuple(i.get(k) for k in ("protocol", "cipher", "group", "signature"))
             for i in suite.tls_info.values() if not i.get("error")}
    if len(terms) > 1:
        add("**The servers did not negotiate the same parameters**: the comparison below is "
            "not like for like.")
        add("")
    add("### W1 over HTTPS: 32 keep-alive connections, GET /demo/plaintext")
    add("")
    add("`cshttp-load -c 32` on `https://127.0.0.1:P/demo/plaintext` (it accepts any "
        "certificate, as wrk and ab do); ratio to nginx-1. Each connection makes one full "
        "handshake, then only requests: this is the cost of the record layer.")
    add("")
    figure_table("TLS", "w1-https", "cshttp-load", "nginx-1", "/nginx-1")
    add("The same load from `wrk -t1 -c32` in the same rounds:")
    add("")
    figure_table("TLS", "w1-https", "wrk", "nginx-1", "/nginx-1")
    chart("tls-w1", "W1 over HTTPS")
    add("### Full handshakes: ab -c 16 -n %d, a new connection per request" % a.ab_tls_n)
    add("")
    add("`ab -c 16 -n %d` without `-k`: every request opens a connection and makes a full "
        "TLS 1.3 handshake (ab never offers a session to resume: it makes a new SSL object "
        "per connection and sets no session on it), so req/s = handshakes/s and CPU/req = "
        "the server's CPU per handshake (with its request and the connection's accept and "
        "close). tls = what ab reported it negotiated. Ratio to nginx-1." % a.ab_tls_n)
    add("")
    figure_table("TLS", "handshakes", "ab", "nginx-1", "/nginx-1", extra=(
        ("failed", lambda n: _num(t.median("TLS", "handshakes", n, "ab", "failed"))),
        ("tls (ab)", lambda n: "; ".join(sorted({r.get("tls") for r in
                                                 t.runs("TLS", "handshakes", n, "ab")
                                                 if r.get("tls")})) or "–")))
    chart("tls-handshakes", "full TLS handshakes per second")


def write(suite, outdir):
    os.makedirs(outdir, exist_ok=True)
    stamp = suite.started.strftime("%Y%m%dT%H%M%SZ")
    prefix = os.path.join(outdir, "suite-" + stamp)
    t = Table(suite)
    files = []
    write_csv(suite, prefix + ".csv")
    files.append(prefix + ".csv")
    made, fails = charts(suite, t, prefix)
    md = markdown(suite, t, made, fails)
    with open(prefix + ".md", "w") as f:
        f.write(md)
    files.append(prefix + ".md")
    files.extend(made.values())
    # latest.*: copies of this run; the chart links are rewritten to the
    # latest-*.svg copies.
    for old in os.listdir(outdir):
        if old.startswith("latest-") and old.endswith(".svg"):
            os.unlink(os.path.join(outdir, old))
    shutil.copyfile(prefix + ".csv", os.path.join(outdir, "latest.csv"))
    latest_md = md
    for chart, f in made.items():
        shutil.copyfile(f, os.path.join(outdir, "latest-%s.svg" % chart))
        latest_md = latest_md.replace("(%s)" % os.path.basename(f), "(latest-%s.svg)" % chart)
    with open(os.path.join(outdir, "latest.md"), "w") as f:
        f.write(latest_md)
    files.append(os.path.join(outdir, "latest.md"))
    return files
