"""The load generators: cshttp-load (most runs), wrk (W1's cross-check) and
ab (W4). Each run is measured the same way: the server's CPU time (utime +
stime of its process tree, /proc/PID/stat) just before and just after the
client's run, divided by the requests the client completed."""

import csv
import os
import re
import subprocess
import time

from . import proc

LOAD_FIELDS = ["requests", "rps", "read_bytes_per_s", "p50_ms", "p90_ms", "p99_ms", "p999_ms",
               "max_ms", "status_2xx", "err_connect", "err_timeout", "err_reset",
               "err_bad_response", "non_2xx", "idle_held", "idle_answered", "connections"]


def _run(cmd, timeout):
    """(returncode, stdout, stderr); returncode None on a timeout."""
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                           stdin=subprocess.DEVNULL)
        return p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
        return None, out, "timed out after %.0f s" % timeout


def measured(server, cmd, timeout, parse):
    """Runs cmd against a running server; returns a result dict: status
    ('ok', 'errors', 'crashed', 'refused', 'timeout', 'failed'), the parsed
    figures and cpu_us (server CPU per request)."""
    res = {"cmd": " ".join(cmd), "status": "ok", "note": ""}
    if not server.alive():
        res.update(status="crashed", note="server not running: " + server.log_tail())
        return res
    c0 = proc.cpu_seconds(server.pid)
    s0 = proc.context_switches(server.pid)
    t0 = time.monotonic()
    rc, out, err = _run(cmd, timeout)
    wall = time.monotonic() - t0
    c1 = proc.cpu_seconds(server.pid)
    s1 = proc.context_switches(server.pid)
    res["wall_s"] = wall
    try:
        res.update(parse(out, res))
    except (ValueError, KeyError, IndexError, OSError) as e:
        res["parse_error"] = str(e)
    if not server.alive():
        res.update(status="crashed", note="server %s: %s" % (
            proc.exit_text(server.proc.returncode), server.log_tail()))
        return res
    if rc is None:
        res.update(status="timeout", note=err)
        return res
    if c0 is not None and c1 is not None and res.get("requests"):
        res["cpu_us"] = (c1 - c0) * 1e6 / res["requests"]
    if s0 is not None and s1 is not None and res.get("requests"):
        res["cs_per_req"] = (s1 - s0) / res["requests"]
    if res.get("parse_error"):
        res.update(status="failed", note="exit %s; %s; %s" % (
            rc, res["parse_error"], (err.strip() or out.strip())[-200:]))
    elif rc == 3:
        res.update(status="refused", note=err.strip()[-200:])
    elif rc not in (0, 1):
        res.update(status="failed", note="exit %s: %s" % (rc, (err.strip() or out.strip())[-200:]))
    elif not res.get("requests"):
        res.update(status="no responses", note="no response completed in the measured time")
    elif res.get("errors"):
        res.update(status="errors")
    return res


def load_cmd(paths, url, csv_file, label, extra):
    return [paths["cshttp-load"], "--no-progress", "--csv", csv_file, "--label", label] + \
        extra + [url]


def parse_load_csv(path):
    """The rows of cshttp-load's CSV as dicts of numbers."""
    rows = []
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            r = {}
            for k, v in row.items():
                if k == "label":
                    continue
                try:
                    r[k] = float(v)
                except (TypeError, ValueError):
                    r[k] = v
            rows.append(r)
    return rows


def load_figures(row):
    fig = {k: row.get(k) for k in LOAD_FIELDS}
    fig["requests"] = int(row["requests"])
    fig["mbps"] = row["read_bytes_per_s"] / 1e6
    fig["errors"] = int(row["err_connect"] + row["err_timeout"] + row["err_reset"] +
                        row["err_bad_response"] + row["non_2xx"])
    if row.get("idle_held", 0) and row.get("idle_answered", 0) < row.get("idle_held", 0):
        fig["errors"] += int(row["idle_held"] - row["idle_answered"])
    return fig


def run_load(paths, server, url, extra, tag, tmp, timeout):
    """One cshttp-load run (one level); its CSV row's figures."""
    csv_file = os.path.join(tmp, "%s.csv" % tag)
    if os.path.exists(csv_file):
        os.unlink(csv_file)
    cmd = load_cmd(paths, url, csv_file, server.name, extra)

    def parse(out, res):
        rows = parse_load_csv(csv_file)
        return load_figures(rows[-1])
    return measured(server, cmd, timeout, parse)


def run_sweep(paths, server, url, levels, extra, tag, tmp, timeout):
    """One cshttp-load --levels run: the figures of each level in 'levels',
    CPU per request over the whole sweep (warm-ups included)."""
    csv_file = os.path.join(tmp, "%s.csv" % tag)
    if os.path.exists(csv_file):
        os.unlink(csv_file)
    cmd = load_cmd(paths, url, csv_file, server.name,
                   ["--levels", ",".join(str(l) for l in levels)] + extra)

    def parse(out, res):
        rows = parse_load_csv(csv_file)
        per = [load_figures(r) for r in rows]
        return {"levels": per, "requests": sum(p["requests"] for p in per),
                "errors": sum(p["errors"] for p in per)}
    return measured(server, cmd, timeout, parse)


def warm(paths, url, connections, seconds, timeout=60):
    """Load before a measured run, not counted (a separate cshttp-load run, so
    that the server's CPU time of the measured run excludes it)."""
    _run([paths["cshttp-load"], "--no-progress", "-c", str(connections), "-d", str(seconds), url],
         timeout)


_UNITS = {"": 1, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9}


def run_wrk(server, url, connections, seconds, timeout):
    cmd = ["wrk", "-t1", "-c%d" % connections, "-d%ss" % seconds, "--latency", url]

    def parse(out, res):
        fig = {}
        m = re.search(r"(\d+) requests in", out)
        fig["requests"] = int(m.group(1))
        fig["rps"] = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
        m = re.search(r"^\s+99%\s+([\d.]+)(us|ms|s)", out, re.M)
        if m:
            fig["p99_ms"] = float(m.group(1)) * {"us": 1e-3, "ms": 1, "s": 1e3}[m.group(2)]
        errs = 0
        m = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
        if m:
            errs += sum(int(x) for x in m.groups())
        m = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
        if m:
            errs += int(m.group(1))
        fig["errors"] = errs
        return fig
    return measured(server, cmd, timeout, parse)


def run_h2load(server, url, seconds, timeout, connections=32, streams=10):
    """h2load over h2 (ALPN; one client thread): `connections` connections
    with `streams` requests in flight on each, for `seconds`."""
    cmd = ["h2load", "-t", "1", "-c", str(connections), "-m", str(streams), "-D", str(seconds),
           url]

    def parse(out, res):
        m = re.search(r"requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, "
                      r"(\d+) failed, (\d+) errored, (\d+) timeout", out)
        done, ok, failed, errored, timed = (int(m.group(i)) for i in (3, 4, 5, 6, 7))
        codes = re.search(r"status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx", out)
        non2xx = sum(int(codes.group(i)) for i in (2, 3, 4)) if codes else 0
        proto = re.search(r"Application protocol: (\S+)", out)
        if not proto or proto.group(1) != "h2":
            raise ValueError("h2load did not speak h2: %s" % (proto.group(1) if proto else "-"))
        fig = {"requests": ok, "rps": float(re.search(r"finished in [\d.]+m?s, ([\d.]+) req/s",
                                                      out).group(1)),
               "errors": failed + errored + timed + non2xx, "done": done}
        m = re.search(r"time for request:\s+\S+\s+\S+\s+(\S+)", out)
        if m:  # the mean: h2load prints no percentile
            v = m.group(1)
            unit = re.match(r"[\d.]+(\D+)", v).group(1)
            fig["mean_ms"] = float(v[:-len(unit)]) * {"us": 1e-3, "ms": 1, "s": 1e3}[unit]
        return fig
    return measured(server, cmd, timeout, parse)


def h2_idle(server, port, n, settle=1.5):
    """Bytes of the server's RSS per idle HTTP/2 connection over TLS: n
    connections that choose h2 by ALPN, send the preface and SETTINGS,
    acknowledge the server's and then say nothing; the RSS before and
    while they are held. {"status", "bytes_per_conn", "held", "note"}."""
    import socket
    import ssl
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    ctx.set_alpn_protocols(["h2"])
    hello = (b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"
             + b"\x00\x00\x00\x04\x01\x00\x00\x00\x00")
    time.sleep(0.5)
    before = proc.rss_bytes(server.pid)
    held, note = [], ""
    try:
        for _ in range(n):
            s = ctx.wrap_socket(socket.create_connection(("127.0.0.1", port), timeout=10))
            if s.selected_alpn_protocol() != "h2":
                note = "ALPN chose %r" % s.selected_alpn_protocol()
                s.close()
                break
            s.sendall(hello)
            held.append(s)
        time.sleep(settle)
        after = proc.rss_bytes(server.pid)
    except OSError as e:
        note, after = "stopped at %d: %s" % (len(held), e), None
    finally:
        for s in held:
            s.close()
    res = {"status": "ok" if len(held) == n else "failed", "held": len(held), "note": note}
    if before and after and held:
        res["bytes_per_conn"] = (after - before) / len(held)
    return res


def run_ab(server, url, connections, requests, keepalive, timeout):
    cmd = ["ab", "-q", "-r", "-s", "10", "-c", str(connections), "-n", str(requests)]
    if keepalive:
        cmd.append("-k")
    cmd.append(url)

    def parse(out, res):
        def num(label, cast=float, default=None):
            m = re.search(r"^%s:\s+([\d.]+)" % re.escape(label), out, re.M)
            if not m:
                if default is not None:
                    return default
                raise ValueError("ab printed no '%s'" % label)
            return cast(m.group(1))
        fig = {"requests": num("Complete requests", int),
               "rps": num("Requests per second"),
               "failed": num("Failed requests", int),
               "non_2xx": num("Non-2xx responses", int, 0),
               "keepalive_reqs": num("Keep-Alive requests", int, 0)}
        m = re.search(r"^\s+99%\s+(\d+)", out, re.M)
        if m:
            fig["p99_ms"] = float(m.group(1))
        # over HTTPS ab names what it negotiated (the last connection's):
        # "TLSv1.3,TLS_AES_256_GCM_SHA384,256,256" and "X25519 253 bits"
        m = re.search(r"^SSL/TLS Protocol:\s+(\S+)", out, re.M)
        if m:
            key = re.search(r"^Server Temp Key:\s+(.+)$", out, re.M)
            fig["tls"] = m.group(1) + ("; " + key.group(1).strip() if key else "")
        fig["errors"] = fig["failed"] + fig["non_2xx"]
        # ab counts "complete" requests that failed too; CPU per request is
        # over the requests that completed.
        if fig["requests"] == 0:
            raise ValueError("ab completed no request")
        return fig
    return measured(server, cmd, timeout, parse)
