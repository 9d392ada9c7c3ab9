"""WS: WebSocket (RFC 6455) echo, cshttpd against libwebsockets, and the
same through reverse proxies, cshttpd against nginx. The load is ws_load
(bench/ws): CONNS WebSockets, each with one masked text message of SIZE
bytes in flight, the next sent when its echo has come back and been
checked byte for byte; the suite's warm-up, then the measured time.

Variants:
- echo64: ws_load on /demo/ws of cshttpd-1 (`cshttpd --demo`, the suite's
  cshttpd-1 flags: one event loop) and of lws (bench/ws/lws_echo, on
  libwebsockets: one service thread);
- proxy64: the same through cshttpd-proxy-1 (`cshttpd --proxy
  /demo=ORIGIN`, W6's cshttpd-proxy-1 with a pool of 1,024, so that no
  tunnel waits for a connection) and through nginx-proxy (one worker,
  `proxy_http_version 1.1; proxy_set_header Upgrade $http_upgrade;
  proxy_set_header Connection "upgrade";`), both in front of one lws_echo
  (ws-origin).

WS's servers are its own, started for each round and stopped after it;
each round runs them one after the other, starting one later than the
round before. CPU per message is the server's (the proxy's alone in
proxy64; the origin's beside it), read from /proc (proc.py) when ws_load
prints "measure" (the end of its warm-up) and when it prints its figures
(the end of the measured time): handshakes and warm-up are not in it.
A run with any error (a refused upgrade, a close, an echo that differs, a
timeout) is a failed row with ws_load's first error: its figures stay in
the CSV, never in a median."""

import base64
import hashlib
import json
import os
import re
import socket
import struct
import subprocess
import threading
import time

from . import proc, servers, w6

CONNS = 256
SIZE = 64
PATH = "/demo/ws"
POOL = 1024  # cshttpd-proxy's pool: above CONNS, nobody waits
VARIANTS = ("echo64", "proxy64")
PEER = {"cshttpd-1": "lws", "cshttpd-proxy-1": "nginx-proxy"}
GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


class LwsEcho(servers.Server):
    """bench/ws/lws_echo: libwebsockets, one service thread, echoes every
    message with its type at any path."""
    name = "lws"

    def __init__(self, *a, name="lws"):
        super().__init__(*a)
        self.name = name

    def available(self):
        b = self.paths.get("lws_echo")
        return None if b and os.access(b, os.X_OK) else \
            "%s is not built (libwebsockets-dev)" % b

    def version(self):
        return "libwebsockets %s" % proc.output_of(
            ["pkg-config", "--modversion", "libwebsockets"]).rstrip("-")

    def command(self, port):
        return [self.paths["lws_echo"], "--port", str(port)]


class CshttpdWs(servers.Cshttpd1):
    """cshttpd-1 as the suite runs it (`--demo`, `--loops 1`)."""


class CshttpdWsProxy(w6.CshttpdProxy):
    """W6's cshttpd-proxy-1 (`--loops 1`), its pool at POOL."""

    def version(self):
        return "cshttpd at %s" % self.paths.get("commit", "?")


class NginxWsProxy(w6.NginxProxy):
    """nginx-proxy (one worker) with the fields a WebSocket upgrade needs."""

    def http_tail(self, port):
        return """  keepalive_timeout 300s;
  upstream origin {
    server 127.0.0.1:%(up)d;
  }
  server {
    listen 127.0.0.1:%(port)d backlog=4096;
    location / {
      proxy_pass http://origin;
      proxy_http_version 1.1;
      proxy_set_header Upgrade $http_upgrade;
      proxy_set_header Connection "upgrade";
      proxy_read_timeout 300s;
      proxy_send_timeout 300s;
    }
  }
""" % {"port": port, "up": self.origin.port}

    def version(self):
        return proc.output_of([self.binary, "-v"]).replace("nginx version: ", "")


def _frame(op, payload):
    """A masked frame, FIN set."""
    mask = os.urandom(4)
    n = len(payload)
    head = bytes([0x80 | op]) + (bytes([0x80 | n]) if n < 126 else
                                 struct.pack("!BH", 0x80 | 126, n) if n < 65536 else
                                 struct.pack("!BQ", 0x80 | 127, n))
    return head + mask + bytes(b ^ mask[i & 3] for i, b in enumerate(payload))


def _read_message(s, buf):
    """(opcode, payload, rest) of the next data message (fragments joined;
    pings and pongs passed over); opcode 8 for a close."""
    op, data = None, b""

    def need(n):
        nonlocal buf
        while len(buf) < n:
            d = s.recv(65536)
            if not d:
                raise OSError("closed by the server")
            buf += d
    while True:
        need(2)
        fin, code, ln = buf[0] >> 7, buf[0] & 15, buf[1] & 127
        if buf[1] & 0x80:
            raise OSError("a masked frame from the server")
        hl = 2
        if ln == 126:
            need(4)
            ln, hl = struct.unpack("!H", buf[2:4])[0], 4
        elif ln == 127:
            need(10)
            ln, hl = struct.unpack("!Q", buf[2:10])[0], 10
        need(hl + ln)
        payload, buf = buf[hl:hl + ln], buf[hl + ln:]
        if code in (9, 10):
            continue
        if code == 8:
            return 8, payload, buf
        op = code if op is None else op
        data += payload
        if fin:
            return op, data, buf


def check(port, path=PATH, timeout=5.0):
    """What WS relies on, checked once a round: the upgrade (101,
    Sec-WebSocket-Accept), then a text message (not ASCII alone) and a
    binary one (every byte value) echoed with their type. A list of
    problems."""
    key = base64.b64encode(os.urandom(16)).decode()
    want = base64.b64encode(hashlib.sha1((key + GUID).encode()).digest()).decode()
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
            s.sendall(("GET %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nUpgrade: websocket\r\n"
                       "Connection: Upgrade\r\nSec-WebSocket-Key: %s\r\n"
                       "Sec-WebSocket-Version: 13\r\n\r\n" % (path, port, key)).encode())
            buf = b""
            while b"\r\n\r\n" not in buf:
                d = s.recv(4096)
                if not d:
                    return ["closed before a response head" + (" (%r)" % buf[:60] if buf else "")]
                buf += d
            head, buf = buf.split(b"\r\n\r\n", 1)
            lines = head.decode("latin-1").split("\r\n")
            if not re.match(r"HTTP/1\.1 101( |$)", lines[0]):
                return ["not upgraded: " + lines[0]]
            fields = {}
            for line in lines[1:]:
                name, _, value = line.partition(":")
                fields[name.strip().lower()] = value.strip()
            if fields.get("sec-websocket-accept") != want:
                return ["Sec-WebSocket-Accept %r, not %r" % (fields.get("sec-websocket-accept"),
                                                            want)]
            problems = []
            for op, payload in ((1, "échö ✓ check".encode()), (2, bytes(range(256)))):
                s.sendall(_frame(op, payload))
                got_op, got, buf = _read_message(s, buf)
                if got_op == 8:
                    return problems + ["closed by the server after a %s message: %r" % (
                        "text" if op == 1 else "binary", got)]
                if (got_op, got) != (op, payload):
                    problems.append("%s message echoed as opcode %d, %d bytes%s" % (
                        "text" if op == 1 else "binary", got_op, len(got),
                        "" if got == payload else ", different"))
            s.sendall(_frame(8, b"\x03\xe8"))
            return problems
    except (OSError, ValueError, struct.error) as e:
        return ["%s" % (e or type(e).__name__)]


def measured(server, cmd, timeout, tmp, tag, origin=None):
    """One ws_load run (with --mark) against a running server: its figures,
    and the server's CPU (and the origin's) between ws_load's "measure"
    line and its figures. status as clients.measured's: 'ok', 'failed'
    (any error counted, or no figures), 'refused' (no connection upgraded),
    'crashed', 'timeout'."""
    res = {"cmd": " ".join(cmd), "status": "ok", "note": ""}
    if not server.alive():
        res.update(status="crashed", note="server not running: " + server.log_tail())
        return res
    err_file = os.path.join(tmp, tag + ".stderr")
    doc, c0, c1, o0, o1, s0, s1 = None, None, None, None, None, None, None
    with open(err_file, "w") as err:
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, stdin=subprocess.DEVNULL,
                             text=True)
    killed = []
    timer = threading.Timer(timeout, lambda: (killed.append(1), p.kill()))
    timer.start()
    t0 = time.monotonic()
    try:
        for line in p.stdout:
            line = line.strip()
            if line == "measure":
                c0, s0 = proc.cpu_seconds(server.pid), proc.context_switches(server.pid)
                o0 = proc.cpu_seconds(origin.pid) if origin and origin.alive() else None
            elif line.startswith("{"):
                c1, s1 = proc.cpu_seconds(server.pid), proc.context_switches(server.pid)
                o1 = proc.cpu_seconds(origin.pid) if origin and origin.alive() else None
                try:
                    doc = json.loads(line)
                except ValueError as e:
                    res["parse_error"] = "%s: %r" % (e, line[:200])
        rc = p.wait()
    finally:
        timer.cancel()
        p.stdout.close()
    res["wall_s"] = time.monotonic() - t0
    with open(err_file, errors="replace") as f:
        err_text = f.read().strip()
    if doc:
        n = int(doc.get("messages") or 0)
        secs = float(doc.get("seconds") or 0)
        res.update({"requests": n, "errors": int(doc["errors"]),
                    "connections": doc.get("conns"), "upgraded": doc.get("upgraded"),
                    "open_at_end": doc.get("open_at_end"),
                    "client_cpu_pct": doc.get("client_cpu_pct"),
                    "first_error": doc.get("first_error", "")})
        res.update({k: v for k, v in doc.items() if k.startswith("err_")})
        if n:  # no rate or latency of 0 where nothing was echoed
            res.update({"rps": doc.get("msgs_per_s"), "p50_ms": doc["p50_us"] / 1e3,
                        "p90_ms": doc["p90_us"] / 1e3, "p99_ms": doc["p99_us"] / 1e3,
                        "max_ms": doc["max_us"] / 1e3})
        if n and c0 is not None and c1 is not None:
            res["cpu_us"] = (c1 - c0) * 1e6 / n
            if secs > 0:
                res["server_cpu_pct"] = 100.0 * (c1 - c0) / secs
        if n and s0 is not None and s1 is not None:
            res["cs_per_req"] = (s1 - s0) / n
        if n and o0 is not None and o1 is not None:
            res["origin_cpu_us"] = (o1 - o0) * 1e6 / n
    if not server.alive():
        res.update(status="crashed", note="server %s: %s" % (
            proc.exit_text(server.proc.returncode), server.log_tail()))
    elif origin is not None and not origin.alive():
        res.update(status="crashed", note="origin %s: %s" % (
            proc.exit_text(origin.proc.returncode), origin.log_tail()))
    elif killed:
        res.update(status="timeout", note="ws_load still running after %.0f s" % timeout)
    elif rc == 3:
        res.update(status="refused", note=err_text[-300:] or "no connection upgraded")
    elif rc not in (0, 1) or not doc or res.get("parse_error"):
        res.update(status="failed", note="ws_load exit %s: %s" % (
            rc, res.get("parse_error") or err_text[-300:] or "no figures"))
    elif res.get("errors"):
        kinds = ", ".join("%s %d" % (k[4:], v) for k, v in sorted(doc.items())
                          if k.startswith("err_") and v)
        res.update(status="failed", note="%d errors (%s); first: %s" % (
            res["errors"], kinds, res["first_error"]))
    elif not res.get("requests"):
        res.update(status="failed", note="no message echoed in the measured time")
    return res


def _start(suite, s, rnd, variant=None):
    """Starts s; False (noted, and a down row for variant if given) when it
    does not start."""
    why = s.available() or s.start(suite.port())
    if why:
        suite.notes.append("WS: %s did not start: %s" % (s.name, why))
        if variant:
            suite.down("WS", variant, s, rnd, "ws_load", why)
        return False
    cmdlines = suite.__dict__.setdefault("ws_cmdlines", {})
    cmdlines.setdefault(s.name, " ".join(s.cmdline))
    return True


def _checked(suite, s, rnd):
    problems = check(s.port)
    if problems:
        why = "WS: %s, round %d: %s" % (s.name, rnd, "; ".join(problems))
        suite.notes.append(why)
        suite.say("  " + why)


def _load(suite, variant, s, rnd, origin=None):
    why = suite.ensure_up(s)
    if why:
        return suite.down("WS", variant, s, rnd, "ws_load", why)
    a = suite.a
    cmd = [suite.paths["ws_load"], "--host", "127.0.0.1", "--port", str(s.port), "--path", PATH,
           "--conns", str(CONNS), "--size", str(SIZE), "--duration", "%g" % a.duration,
           "--warmup", "%g" % a.warmup, "--timeout", "10", "--mark"]
    tag = "WS-%s-%s-%d" % (variant, s.name, rnd)
    res = measured(s, cmd, a.warmup + a.duration + 60, suite.tmp, tag, origin)
    suite.record("WS", variant, s, rnd, "ws_load", res)


def run(suite, rnd):
    a = (suite.paths, suite.tmp, servers.make_root(suite.tmp), suite.fd_limit)
    direct = [CshttpdWs(*a), LwsEcho(*a)]
    origin = LwsEcho(*a, name="ws-origin")
    proxies = [CshttpdWsProxy(origin, POOL, *a, loops=1), NginxWsProxy(origin, *a)]
    suite.__dict__.setdefault("ws_versions", {})
    for s in direct + [origin] + proxies:
        suite.ws_versions.setdefault(s.name, s.version())
    b = suite.paths.get("ws_load")
    if not b or not os.access(b, os.X_OK):
        why = "%s is not built" % b
        if rnd == 1:
            suite.notes.append("WS not run: " + why)
        for s in direct:
            suite.down("WS", "echo64", s, rnd, "ws_load", why)
        for s in proxies:
            suite.down("WS", "proxy64", s, rnd, "ws_load", why)
        return
    started = []
    try:
        live = []
        for s in direct:
            if _start(suite, s, rnd, "echo64"):
                started.append(s)
                _checked(suite, s, rnd)
                live.append(s)
        for s in servers.rotated(live, rnd - 1):
            _load(suite, "echo64", s, rnd)
        if not _start(suite, origin, rnd):
            for p in proxies:
                suite.down("WS", "proxy64", p, rnd, "ws_load", "no origin: ws-origin (lws_echo) "
                           "did not start")
            return
        started.append(origin)
        live = []
        for p in proxies:
            if _start(suite, p, rnd, "proxy64"):
                started.append(p)
                _checked(suite, p, rnd)
                live.append(p)
        for p in servers.rotated(live, rnd - 1):
            _load(suite, "proxy64", p, rnd, origin)
    finally:
        for s in started:
            s.stop()


def markdown(suite, t, add):
    """WS's section of the report."""
    add("## WS: WebSocket echo, %d connections, %d-byte text messages" % (CONNS, SIZE))
    add("")
    add("`ws_load --conns %d --size %d --path %s` (bench/ws): each connection upgraded "
        "(Sec-WebSocket-Accept checked, no extension), then one masked text message in flight "
        "on each, the next sent when its echo has come back whole and identical; %g s of "
        "warm-up, then %g s measured. echo64: cshttpd-1 (`cshttpd --demo`, the suite's "
        "cshttpd-1 flags, one event loop) against lws (bench/ws/lws_echo: libwebsockets, one "
        "service thread, its poll() loop, UTF-8 of text messages checked). proxy64: "
        "cshttpd-proxy-1 (`cshttpd --proxy /demo=ORIGIN --proxy-pool-size %d --loops 1`) "
        "against nginx-proxy (one worker; `proxy_http_version 1.1; proxy_set_header Upgrade "
        "$http_upgrade; proxy_set_header Connection \"upgrade\";`), both before one lws_echo. "
        "CPU/msg: the server's CPU time (utime + stime, its process and children) over the "
        "measured time per message echoed; in proxy64 the proxy's alone, the origin's beside "
        "it. / its peer: the medians of each round's ratios (cshttpd-1 to lws, "
        "cshttpd-proxy-1 to nginx-proxy), msgs/s and CPU/msg. server and client CPU %%: of one "
        "core over the measured time (ws_load is one thread; when it is near 100 %% it, not "
        "the server, may be the limit). A run with any error is failed: its figures are in "
        "the CSV, never in a median." % (CONNS, SIZE, PATH, suite.a.warmup, suite.a.duration,
                                         POOL))
    add("")
    add("| variant | server | msgs/s (median) | / its peer: msgs/s, CPU | CPU/msg µs | "
        "origin CPU/msg µs | server CPU % | client CPU % | p50 / p99 ms | errors (all rounds) "
        "| msgs/s each round | state |")
    add("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|---|---|")
    reasons = []
    for v in VARIANTS:
        for n in ("cshttpd-1", "lws") if v == "echo64" else ("cshttpd-proxy-1", "nginx-proxy"):
            runs = t.runs("WS", v, n, "ws_load")
            if not runs:
                continue

            def med(key, fmt="%.1f"):
                x = t.median("WS", v, n, "ws_load", key)
                return fmt % x if x is not None else "–"
            peer = "–"
            if n in PEER:
                r_rps = t.round_ratio("WS", v, n, PEER[n], "ws_load", "rps")
                r_cpu = t.round_ratio("WS", v, n, PEER[n], "ws_load", "cpu_us")
                if r_rps is not None or r_cpu is not None:
                    peer = "%s, %s" % tuple("%.2f" % x if x is not None else "–"
                                            for x in (r_rps, r_cpu))
            rps = t.median("WS", v, n, "ws_load", "rps")
            errs = sum(int(r.get("errors") or 0) for r in runs)
            add("| %s | %s | %s | %s | %s | %s | %s | %s | %s / %s | %d | %s | %s |" % (
                v, n, "{:,.0f}".format(rps) if rps else "–", peer, med("cpu_us", "%.2f"),
                med("origin_cpu_us", "%.2f") if v == "proxy64" else "–",
                med("server_cpu_pct", "%.0f"), med("client_cpu_pct", "%.0f"),
                med("p50_ms", "%.2f"), med("p99_ms", "%.2f"), errs,
                t.rounds("WS", v, n, "ws_load", "rps"), t.state("WS", v, n, "ws_load") or "ok"))
            for r in runs:
                if r["status"] != "ok":
                    why = "%s, %s: %s: %s" % (v, n, r["status"], r.get("note") or "–")
                    if why not in reasons:
                        reasons.append(why)
    add("")
    if reasons:
        add("Runs that failed, and why (each reason once):")
        add("")
        for why in reasons:
            add("- %s" % why)
        add("")
    versions = getattr(suite, "ws_versions", {})
    cmdlines = getattr(suite, "ws_cmdlines", {})
    if versions or cmdlines:
        add("WS's servers (the first round's command lines):")
        add("")
        add("```")
        for n in ("cshttpd-1", "lws", "ws-origin", "cshttpd-proxy-1", "nginx-proxy"):
            if n in cmdlines or n in versions:
                add("# %s (%s): %s" % (n, versions.get(n, "?"), cmdlines.get(n, "not started")))
        add("```")
        add("")
