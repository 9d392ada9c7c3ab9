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
  (ws-origin);
- idle: the memory one idle WebSocket costs each of the four, measured as
  MEM measures an idle keep-alive connection: the server started afresh
  (a proxy's origin too), its RSS (proc.rss_bytes: nginx's master and
  worker together, as MEM counts them) once steady, then with IDLE_N
  WebSockets open and with twice as many, each upgraded and checked,
  nothing sent after; bytes per idle WebSocket is the slope between the
  two levels. The sockets are the suite's own (a plain socket each, the
  handshake written and the 101 read, no thread per socket), so the
  server pays for nothing but the WebSockets. It needs no ws_load.

WS's servers are its own, started for each round and stopped after it;
each round runs them one after the other, starting one later than the
round before. CPU per message is the server's (the proxy's alone in
proxy64; the origin's beside it), read from /proc (proc.py) when ws_load
prints "measure" (the end of its warm-up) and when it prints its figures
(the end of the measured time): handshakes and warm-up are not in it.
A run with any error (a refused upgrade, a close, an echo that differs, a
timeout) is a failed row with ws_load's first error: its figures stay in
the CSV, never in a median.

BENCH_WS_VARIANTS (comma-separated, e.g. `BENCH_WS_VARIANTS=idle`) runs
only the variants it names."""

import base64
import hashlib
import json
import os
import re
import select
import socket
import struct
import subprocess
import threading
import time
import urllib.request

from . import proc, servers, w6

CONNS = 256
SIZE = 64
PATH = "/demo/ws"
POOL = 1024  # cshttpd-proxy's pool: above CONNS, nobody waits
VARIANTS = ("echo64", "proxy64", "idle")
LOADS = ("echo64", "proxy64")  # the variants ws_load runs
IDLE_N = 2000      # idle: WebSockets open at the first level; twice as many at the second
IDLE_BATCH = 200   # idle: handshakes in flight at once (well inside every backlog and pool)
IDLE_TOOL = "sockets"  # idle's rows: the suite's own sockets, not ws_load
STEADY_GAP = 0.5   # s between two reads of RSS ...
STEADY_WITHIN = 0.01  # ... that differ by at most this part of the first: RSS is steady
STEADY_MAX = 10.0  # s: past this, the last read is taken and the run noted
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


def _upgrade(port, path):
    """An upgrade request's head for 127.0.0.1:port (a fresh
    Sec-WebSocket-Key, no extension offered), and the Sec-WebSocket-Accept
    its answer must carry."""
    key = base64.b64encode(os.urandom(16)).decode()
    want = base64.b64encode(hashlib.sha1((key + GUID).encode()).digest()).decode()
    return (("GET %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nUpgrade: websocket\r\n"
             "Connection: Upgrade\r\nSec-WebSocket-Key: %s\r\n"
             "Sec-WebSocket-Version: 13\r\n\r\n" % (path, port, key)).encode(), want)


def _upgraded(s, want):
    """Reads the answer to an upgrade from s: (None, the bytes read past its
    head) for a 101 with Sec-WebSocket-Accept want, else (the problem, b"")."""
    buf = b""
    while b"\r\n\r\n" not in buf:
        d = s.recv(4096)
        if not d:
            return "closed before a response head" + (" (%r)" % buf[:60] if buf else ""), b""
        buf += d
    head, buf = buf.split(b"\r\n\r\n", 1)
    lines = head.decode("latin-1").split("\r\n")
    if not re.match(r"HTTP/1\.1 101( |$)", lines[0]):
        return "not upgraded: " + lines[0], b""
    fields = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        fields[name.strip().lower()] = value.strip()
    if fields.get("sec-websocket-accept") != want:
        return "Sec-WebSocket-Accept %r, not %r" % (fields.get("sec-websocket-accept"), want), b""
    return None, buf


def check(port, path=PATH, timeout=5.0):
    """What WS relies on, checked once a round: the upgrade (101,
    Sec-WebSocket-Accept), then a text message (not ASCII alone) and a
    binary one (every byte value) echoed with their type. A list of
    problems."""
    head, want = _upgrade(port, path)
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
            s.sendall(head)
            problem, buf = _upgraded(s, want)
            if problem:
                return [problem]
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


def _tool(variant):
    """The tool of variant's rows."""
    return IDLE_TOOL if variant == "idle" else "ws_load"


def _start(suite, s, rnd, variants=()):
    """Starts s; False (noted, and a down row for each of variants) when it
    does not start."""
    why = s.available() or s.start(suite.port())
    if why:
        suite.notes.append("WS: %s did not start: %s" % (s.name, why))
        for v in variants:
            suite.down("WS", v, s, rnd, _tool(v), why)
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


def _open(port, count, path=PATH, timeout=10.0):
    """count WebSockets to 127.0.0.1:port, a plain socket each, IDLE_BATCH
    handshakes in flight at a time (each written, then the 101 read and
    its Sec-WebSocket-Accept checked): (the sockets upgraded, None), or
    (those upgraded before the first that was not, its problem)."""
    socks = []
    while len(socks) < count:
        batch = []
        try:
            for _ in range(min(IDLE_BATCH, count - len(socks))):
                head, want = _upgrade(port, path)
                s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
                batch.append((s, want))
                s.sendall(head)
            while batch:
                s, want = batch[0]
                problem, _ = _upgraded(s, want)
                if problem:
                    raise OSError(problem)
                socks.append(batch.pop(0)[0])
        except OSError as e:
            for s, _ in batch:
                s.close()
            return socks, "WebSocket %d: %s" % (len(socks) + 1, e or type(e).__name__)
    return socks, None


def _still_open(socks):
    """How many of socks the server has not closed, reset, shut down or
    begun to close (a close frame first in what it sent); what else it
    may have sent, a ping, is left unread."""
    by_fd = {s.fileno(): s for s in socks}
    poller = select.poll()
    for fd in by_fd:
        poller.register(fd, select.POLLIN | select.POLLRDHUP)
    gone = 0
    for fd, ev in poller.poll(0):
        if ev & (select.POLLERR | select.POLLHUP | select.POLLRDHUP):
            gone += 1
            continue
        try:
            first = by_fd[fd].recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT)
            if not first or first[0] & 15 == 8:
                gone += 1
        except BlockingIOError:
            pass
        except OSError:
            gone += 1
    return len(socks) - gone


def _steady_rss(pid):
    """pid's RSS (proc.rss_bytes, its process and children) once two reads
    STEADY_GAP s apart differ by at most STEADY_WITHIN of the first, for at
    most STEADY_MAX s: (the last read, whether it was steady)."""
    prev = proc.rss_bytes(pid)
    end = time.monotonic() + STEADY_MAX
    while True:
        time.sleep(STEADY_GAP)
        cur = proc.rss_bytes(pid)
        if prev is None or cur is None:
            return cur, False
        if abs(cur - prev) <= STEADY_WITHIN * prev:
            return cur, True
        if time.monotonic() >= end:
            return cur, False
        prev = cur


def _counters(s):
    """cshttpd's own count of what it holds, from its /status.json
    (`tunnels`: upgraded connections, WebSockets included; `idle_memory`:
    the bytes the engine reckons it holds for its idle connections), or {}
    for a server without one."""
    if not isinstance(s, (CshttpdWs, CshttpdWsProxy)):
        return {}
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d/status.json" % s.port,
                                    timeout=10) as r:
            doc = json.load(r)
    except (OSError, ValueError):
        return {}
    return {k: doc[k] for k in ("tunnels", "idle_memory") if k in doc}


def idle(suite, s, rnd, origin=None):
    """idle: what an idle WebSocket costs s in memory, as MEM measures an
    idle connection. s started afresh (its origin first, afresh too, for a
    proxy); its RSS once steady, then with IDLE_N WebSockets open (_open:
    the suite's own sockets, nothing sent after the 101) and again with
    2 x IDLE_N, each read once steady, with its threads (proc.threads: the
    process tree's, nginx's master and worker) and, for cshttpd, its
    /status.json counters. bytes_per_ws is the slope between the two
    levels, (RSS@2N - RSS@N) / (held@2N - held@N), over the sockets still
    open (as MEM's, over the connections held): what the first sockets
    cost once (tables grown, pools first touched) is left out; it stays in
    bytes_per_ws_n, (RSS@N - RSS@0) / held@N. For a proxy, the origin's RSS
    per WebSocket beside. The sockets are closed after the measurement."""
    for x in ([origin] if origin else []) + [s]:
        x.stop()
        if not _start(suite, x, rnd):
            return suite.down("WS", "idle", s, rnd, IDLE_TOOL, "%s did not start afresh: %s" % (
                x.name, x.log_tail()))
    res = {"status": "ok", "note": "", "connections": IDLE_N,
           "cmd": "%d, then %d more WebSockets to %s (bench/suite/ws.py: a socket each, %d "
                  "handshakes at a time, nothing sent after the 101)" % (
                      IDLE_N, IDLE_N, PATH, IDLE_BATCH)}
    notes = []
    _counters(s)  # the status page's first answer, before RSS@0 (its memory is then reused)
    res["rss_0"], steady = _steady_rss(s.pid)
    res["threads_0"] = proc.threads(s.pid)
    if origin:
        res["origin_rss_0"] = _steady_rss(origin.pid)[0]
    if not steady:
        notes.append("RSS not steady after %g s at 0" % STEADY_MAX)
    socks = []
    t0 = time.monotonic()
    try:
        for level, total in (("n", IDLE_N), ("2n", 2 * IDLE_N)):
            more, problem = _open(s.port, total - len(socks))
            socks += more
            res["rss_" + level], steady = _steady_rss(s.pid)
            res["threads_" + level] = proc.threads(s.pid)
            res["held_" + level] = _still_open(socks)
            if origin:
                res["origin_rss_" + level] = _steady_rss(origin.pid)[0]
            for k, v in _counters(s).items():
                res["%s_%s" % (k, level)] = v
            if not steady:
                notes.append("RSS not steady after %g s at %d" % (STEADY_MAX, total))
            if problem:
                res["status"] = "failed"
                notes.append("%d of %d upgraded: %s" % (len(socks), total, problem))
                break
            if not s.alive() or (origin and not origin.alive()):
                break
    finally:
        for x in socks:
            x.close()
    res["wall_s"] = time.monotonic() - t0
    held_n, held_2n = res.get("held_n") or 0, res.get("held_2n") or 0
    for pre in ("", "origin_"):
        r0, rn, r2n = (res.get(pre + "rss_" + k) for k in ("0", "n", "2n"))
        if rn and r2n and held_2n > held_n:
            res[pre + "bytes_per_ws"] = (r2n - rn) / (held_2n - held_n)
        if not pre and r0 and rn and held_n:
            res["bytes_per_ws_n"] = (rn - r0) / held_n
    if "idle_memory_n" in res and "idle_memory_2n" in res and held_2n > held_n:
        res["idle_memory_per_ws"] = (res["idle_memory_2n"] - res["idle_memory_n"]) / (
            held_2n - held_n)
    if not s.alive():
        res["status"] = "crashed"
        notes.append("server %s: %s" % (proc.exit_text(s.proc.returncode), s.log_tail()))
    elif origin and not origin.alive():
        res["status"] = "crashed"
        notes.append("origin %s: %s" % (proc.exit_text(origin.proc.returncode),
                                        origin.log_tail()))
    elif res["status"] == "ok" and (held_n, held_2n) != (IDLE_N, 2 * IDLE_N):
        res["status"] = "errors"
        notes.append("%d of %d, then %d of %d still open" % (held_n, IDLE_N, held_2n,
                                                              2 * IDLE_N))
    res["note"] = "; ".join(notes)
    suite.results.append(dict({"workload": "WS", "variant": "idle", "server": s.name,
                               "round": rnd, "tool": IDLE_TOOL}, **res))
    suite.commands.setdefault(("WS", "idle", s.name, IDLE_TOOL), res["cmd"])

    def mib(k):
        return "%.1f" % (res[k] / 1048576) if res.get(k) else "-"
    suite.say("  WS    idle      %-15s RSS %s / %s / %s MiB (0 / %d / %d WebSockets)  %s bytes/WS "
              "(first %d: %s)  threads %s / %s / %s%s%s" % (
                  s.name, mib("rss_0"), mib("rss_n"), mib("rss_2n"), IDLE_N, 2 * IDLE_N,
                  "%.0f" % res["bytes_per_ws"] if "bytes_per_ws" in res else "-", IDLE_N,
                  "%.0f" % res["bytes_per_ws_n"] if "bytes_per_ws_n" in res else "-",
                  res.get("threads_0"), res.get("threads_n", "-"), res.get("threads_2n", "-"),
                  "  origin %.0f bytes/WS" % res["origin_bytes_per_ws"]
                  if "origin_bytes_per_ws" in res else "",
                  "" if res["status"] == "ok" else " [%s] %s" % (res["status"],
                                                                res["note"][:150])))


def _variants(suite):
    """The variants this run asks for: VARIANTS, or those named in
    BENCH_WS_VARIANTS (comma-separated); a name that is none of them is
    noted and left out."""
    raw = os.environ.get("BENCH_WS_VARIANTS", "").strip()
    if not raw:
        return list(VARIANTS)
    names = [x.strip() for x in raw.split(",") if x.strip()]
    bad = [x for x in names if x not in VARIANTS]
    if bad:
        why = "WS: BENCH_WS_VARIANTS: no variant %s (choose from %s)" % (
            ", ".join(bad), ",".join(VARIANTS))
        if why not in suite.notes:
            suite.notes.append(why)
            suite.say("  " + why)
    return [v for v in VARIANTS if v in names]


def run(suite, rnd):
    """One round: the direct servers started, checked, then each variant
    that asks for them on each, one server later than the round before;
    then the origin and the proxies, the same way; then all stopped."""
    a = (suite.paths, suite.tmp, servers.make_root(suite.tmp), suite.fd_limit)
    direct = [CshttpdWs(*a), LwsEcho(*a)]
    origin = LwsEcho(*a, name="ws-origin")
    proxies = [CshttpdWsProxy(origin, POOL, *a, loops=1), NginxWsProxy(origin, *a)]
    suite.__dict__.setdefault("ws_versions", {})
    for s in direct + [origin] + proxies:
        suite.ws_versions.setdefault(s.name, s.version())
    want = _variants(suite)
    b = suite.paths.get("ws_load")
    if any(v in LOADS for v in want) and (not b or not os.access(b, os.X_OK)):
        why = "%s is not built" % b
        if rnd == 1:
            suite.notes.append("WS: %s not run: %s" % (
                " and ".join(v for v in want if v in LOADS), why))
        for v, group in (("echo64", direct), ("proxy64", proxies)):
            for s in group if v in want else ():
                suite.down("WS", v, s, rnd, "ws_load", why)
        want = [v for v in want if v not in LOADS]
    if not want:
        return
    direct_vs = [v for v in want if v in ("echo64", "idle")]
    proxy_vs = [v for v in want if v in ("proxy64", "idle")]
    started = []
    try:
        live = []
        for s in direct:
            if _start(suite, s, rnd, direct_vs):
                started.append(s)
                _checked(suite, s, rnd)
                live.append(s)
        if "echo64" in want:
            for s in servers.rotated(live, rnd - 1):
                _load(suite, "echo64", s, rnd)
        if "idle" in want:
            for s in servers.rotated(live, rnd - 1):
                idle(suite, s, rnd)
        if not _start(suite, origin, rnd):
            for p in proxies:
                for v in proxy_vs:
                    suite.down("WS", v, p, rnd, _tool(v), "no origin: ws-origin (lws_echo) "
                               "did not start")
            return
        started.append(origin)
        live = []
        for p in proxies:
            if _start(suite, p, rnd, proxy_vs):
                started.append(p)
                _checked(suite, p, rnd)
                live.append(p)
        if "proxy64" in want:
            for p in servers.rotated(live, rnd - 1):
                _load(suite, "proxy64", p, rnd, origin)
        if "idle" in want:
            for p in servers.rotated(live, rnd - 1):
                idle(suite, p, rnd, origin)
    finally:
        for s in started:
            s.stop()


def markdown(suite, t, add):
    """WS's section of the report: the echo's table (echo64, proxy64), then
    idle's."""
    if any(r["workload"] == "WS" and r["tool"] == "ws_load" for r in t.rows):
        add("## WS: WebSocket echo, %d connections, %d-byte text messages" % (CONNS, SIZE))
        add("")
        _markdown_loads(suite, t, add)
    else:
        add("## WS: WebSockets")
        add("")
    if any(r["workload"] == "WS" and r["tool"] == IDLE_TOOL for r in t.rows):
        _markdown_idle(suite, t, add)
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


def _markdown_loads(suite, t, add):
    """echo64 and proxy64: ws_load's figures."""
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
    for v in LOADS:
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


def _markdown_idle(suite, t, add):
    """idle: bytes per idle WebSocket and threads, each server beside its
    peer."""
    n1, n2 = IDLE_N, 2 * IDLE_N
    add("### idle: the memory of an idle WebSocket")
    add("")
    add("Each server started afresh (a proxy's origin too); VmRSS of its process and children "
        "(/proc/PID/status: nginx-proxy's master and worker together, as MEM counts them) once "
        "two reads %g s apart differ by at most %g %%, with no WebSocket, then with %d and with "
        "%d open: each a plain socket of the suite's, upgraded (`GET %s`, the 101 and its "
        "Sec-WebSocket-Accept checked, %d handshakes at a time), nothing sent after, closed "
        "after the last read. bytes/WS = (RSS@%d - RSS@%d) / %d over the sockets still open "
        "(the slope, as MEM's: what the first sockets cost once is left out; it is in first "
        "%d, (RSS@%d - RSS@0) / %d). / its peer: the median of each round's ratio (cshttpd-1 "
        "to lws, cshttpd-proxy-1 to nginx-proxy). threads: the process tree's. origin "
        "bytes/WS: ws-origin's slope, beside each proxy's. cshttpd's count: its /status.json, "
        "`tunnels` with %d open and the slope of `idle_memory` (the bytes the engine reckons "
        "it holds for its idle connections) per WebSocket." % (
            STEADY_GAP, STEADY_WITHIN * 100, n1, n2, PATH, IDLE_BATCH, n2, n1, n2 - n1, n1, n1,
            n1, n2))
    add("")
    add("| server | bytes/WS (median) | / its peer | first %d bytes/WS | RSS 0 / %d / %d MiB | "
        "threads 0 / %d / %d | held %d / %d | origin bytes/WS | cshttpd's count: tunnels, "
        "idle_memory/WS | bytes/WS each round | state |" % (n1, n1, n2, n1, n2, n1, n2))
    add("|---|--:|--:|--:|--:|--:|--:|--:|--:|---|---|")
    reasons = []
    for n in ("cshttpd-1", "lws", "cshttpd-proxy-1", "nginx-proxy"):
        runs = t.runs("WS", "idle", n, IDLE_TOOL)
        if not runs:
            continue

        def med(key, fmt="{:,.0f}", scale=1.0):
            x = t.median("WS", "idle", n, IDLE_TOOL, key)
            return fmt.format(x / scale) if x is not None else "–"
        peer = "–"
        if n in PEER:
            r = t.round_ratio("WS", "idle", n, PEER[n], IDLE_TOOL, "bytes_per_ws")
            peer = "%.2f" % r if r is not None else "–"
        bpw = t.median("WS", "idle", n, IDLE_TOOL, "bytes_per_ws")
        count = "–"
        if n.startswith("cshttpd"):
            count = "%s, %s" % (med("tunnels_2n"), med("idle_memory_per_ws"))
        add("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            n, "{:,.0f}".format(bpw) if bpw is not None else "–", peer,
            med("bytes_per_ws_n", "{:,.0f}"), " / ".join(
                med("rss_" + k, "{:.1f}", 1048576.0) for k in ("0", "n", "2n")),
            " / ".join(med("threads_" + k) for k in ("0", "n", "2n")),
            " / ".join(med("held_" + k) for k in ("n", "2n")),
            med("origin_bytes_per_ws", "{:,.0f}") if n in ("cshttpd-proxy-1", "nginx-proxy")
            else "–", count, t.rounds("WS", "idle", n, IDLE_TOOL, "bytes_per_ws"),
            t.state("WS", "idle", n, IDLE_TOOL) or "ok"))
        for r in runs:
            if r["status"] != "ok" or r.get("note"):
                why = "%s: %s: %s" % (n, r["status"], r.get("note") or "–")
                if why not in reasons:
                    reasons.append(why)
    add("")
    if reasons:
        add("Runs marked, and why (each reason once):")
        add("")
        for why in reasons:
            add("- %s" % why)
        add("")
