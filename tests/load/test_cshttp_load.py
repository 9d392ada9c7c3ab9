#!/usr/bin/env python3
"""cshttp-load against cshttpd and against small servers of its own.

The command line of cshttp-load is a fixed contract (options, exit status,
CSV header, summary lines); these tests hold the program to it. Every check
is on counts, statuses, files, exit codes and messages: no pass/fail depends
on a measured time (timing belongs in bench/). Runs are short (-n of a few
hundred, -d of a fraction of a second).

The servers of its own (FakeServer) are raw sockets, one thread per
connection, on an ephemeral port of 127.0.0.1: they count connections and
requests, record each request as received (method, target, header lines,
body), and answer well, badly or not at all.

Usage: test_cshttp_load.py --bin path/to/cshttp-load --cshttpd path/to/cshttpd
                           [unittest options, e.g. a class name: Arguments]
"""
import argparse
import csv
import datetime
import os
import pty
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import unittest

BIN = None
CSHTTPD = None

CSV_HEADER = ("label,connections,threads,keepalive,pipeline,duration_s,requests,rps,"
              "read_bytes_per_s,p50_ms,p90_ms,p99_ms,p999_ms,max_ms,status_2xx,status_3xx,"
              "status_4xx,status_5xx,err_connect,err_timeout,err_reset,err_bad_response,"
              "non_2xx,idle_held,idle_answered")
INT_COLUMNS = ("connections", "threads", "keepalive", "pipeline", "requests", "status_2xx",
               "status_3xx", "status_4xx", "status_5xx", "err_connect", "err_timeout",
               "err_reset", "err_bad_response", "non_2xx", "idle_held", "idle_answered")
FLOAT_COLUMNS = ("duration_s", "rps", "read_bytes_per_s", "p50_ms", "p90_ms", "p99_ms",
                 "p999_ms", "max_ms")
SANITIZER_MARKS = ("AddressSanitizer", "LeakSanitizer", "ThreadSanitizer", "runtime error:")


# ---- running cshttp-load ----

class Run:
    """One finished cshttp-load: exit status, stdout, stderr, CSV rows."""

    def __init__(self, cmd, rc, out, err, csv_path):
        self.cmd, self.rc, self.out, self.err = cmd, rc, out, err
        self.header, self.rows = None, []
        if csv_path and os.path.exists(csv_path):
            with open(csv_path, newline="") as f:
                text = f.read()
            self.csv_text = text
            lines = text.splitlines()
            if lines:
                self.header = lines[0]
                for rec in csv.DictReader(lines):
                    row = dict(rec)
                    row["_raw"] = dict(rec)
                    for k in INT_COLUMNS:
                        if row.get(k) not in (None, ""):
                            row[k] = int(row[k])
                    for k in FLOAT_COLUMNS:
                        if row.get(k) not in (None, ""):
                            row[k] = float(row[k])
                    self.rows.append(row)

    @property
    def row(self):
        return self.rows[0]

    def __str__(self):
        return "%s\nexit %r\nstdout:\n%s\nstderr:\n%s" % (" ".join(self.cmd), self.rc,
                                                          self.out, self.err)


def load(*args, csv_file=True, tmp=None, timeout=60, stderr=None):
    """Runs cshttp-load with args (plus --csv FILE unless csv_file is False)."""
    csv_path = None
    cmd = [BIN] + [str(a) for a in args]
    if csv_file:
        d = tmp or tempfile.mkdtemp(prefix="cshttp-load-csv-")
        csv_path = os.path.join(d, "run-%d.csv" % next(_serial))
        cmd += ["--csv", csv_path]
    p = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=stderr or subprocess.PIPE, timeout=timeout)
    out = p.stdout.decode("utf-8", "replace")
    err = (p.stderr or b"").decode("utf-8", "replace")
    r = Run(cmd, p.returncode, out, err, csv_path)
    if csv_path and tmp is None:
        shutil.rmtree(os.path.dirname(csv_path), ignore_errors=True)
    return r


def _counter():
    n = 0
    while True:
        n += 1
        yield n


_serial = _counter()


# ---- cshttpd ----

class Cshttpd:
    """cshttpd on an ephemeral port of 127.0.0.1 (and an HTTPS one with tls=...)."""

    def __init__(self, root, *extra, tls=None):
        cmd = [CSHTTPD, "--port", "0", "--root", root, "--demo"] + list(extra)
        if tls:
            cmd += ["--tls-port", "0", "--tls-cert", tls[0], "--tls-key", tls[1]]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True)
        self.port = self.tls_port = None
        self.lines = []
        deadline = time.time() + 15
        while time.time() < deadline and (self.port is None or (tls and self.tls_port is None)):
            line = self.proc.stdout.readline()
            if not line:
                break
            self.lines.append(line)
            m = re.search(r"(https?)://127\.0\.0\.1:(\d+)/", line)
            if m and m.group(1) == "http":
                self.port = int(m.group(2))
            elif m:
                self.tls_port = int(m.group(2))
        if self.port is None or (tls and self.tls_port is None):
            self.proc.kill()
            raise AssertionError("cshttpd did not start: %r %r" % (self.lines,
                                                                   self.proc.stderr.read()))

    def url(self, path):
        return "http://127.0.0.1:%d%s" % (self.port, path)

    def https_url(self, path, host="127.0.0.1"):
        return "https://%s:%d%s" % (host, self.tls_port, path)

    def status(self):
        """/status.json as a dict, over a raw socket of its own."""
        import json
        with socket.create_connection(("127.0.0.1", self.port), timeout=10) as s:
            s.sendall(b"GET /status.json HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
            data = b""
            while True:
                d = s.recv(65536)
                if not d:
                    break
                data += d
        head, _, body = data.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200"), head
        return json.loads(body)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            _, err = self.proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            _, err = self.proc.communicate()
            raise AssertionError("cshttpd did not stop within 20 s")
        assert self.proc.returncode == 0, "cshttpd exited %r: %s" % (self.proc.returncode, err)
        for mark in SANITIZER_MARKS:
            assert mark not in err, err


def make_cert(tmp, cn, san="IP:127.0.0.1"):
    """A self-signed certificate and its key (as tests/server does)."""
    key, cert = os.path.join(tmp, cn + ".key"), os.path.join(tmp, cn + ".pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key,
                    "-out", cert, "-days", "1", "-subj", "/CN=" + cn,
                    "-addext", "subjectAltName=" + san],
                   check=True, capture_output=True, timeout=60)
    return cert, key


def make_root(tmp):
    root = os.path.join(tmp, "www")
    os.makedirs(root, exist_ok=True)
    with open(os.path.join(root, "index.html"), "w") as f:
        f.write("<!doctype html><title>t</title><p>load test root</p>\n")
    return root


# ---- servers of its own ----

class Request:
    def __init__(self, conn, method, target, version, fields, body):
        self.conn, self.method, self.target, self.version = conn, method, target, version
        self.fields = fields  # [(name, value)] as received, in order
        self.body = body

    def values(self, name):
        return [v for k, v in self.fields if k.lower() == name.lower()]

    def __repr__(self):
        return "<%s %s %r %d bytes>" % (self.method, self.target, self.fields, len(self.body))


def closed_port():
    """A port of 127.0.0.1 that nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class FakeServer:
    """A threaded raw-socket HTTP/1.1 server that counts and records.

    mode:
      ok        200 with a 5-byte body; closes after a request that asked to
      status    the status in the target's last segment (/s/404 -> 404)
      garbage   "HTTP/1.1 2OO OK" (not a status code)
      silent    reads, never answers
      close     reads a request, then closes the connection (FIN)
      reset     reads a request, then resets the connection (RST)
    batch_delay: after bytes arrive, wait this long and take what else came
    before answering; batches[] records how many whole requests each answer
    round held (more than one: the client wrote them ahead).
    """

    def __init__(self, mode="ok", batch_delay=0.0, family=socket.AF_INET, host="127.0.0.1"):
        self.mode, self.batch_delay = mode, batch_delay
        self.lock = threading.Lock()
        self.connections = 0
        self.peers = []  # the client address of each connection
        self.requests = []
        self.batches = []
        self.errors = []
        self.stopping = False
        self.conns = []
        self.threads = []
        self.sock = socket.socket(family, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind((host, 0))
        self.sock.listen(512)
        self.sock.settimeout(0.1)
        self.host = host
        self.port = self.sock.getsockname()[1]
        self.acceptor = threading.Thread(target=self._accept, daemon=True)
        self.acceptor.start()

    def url(self, path="/"):
        h = "[%s]" % self.host if ":" in self.host else self.host
        return "http://%s:%d%s" % (h, self.port, path)

    def _accept(self):
        while not self.stopping:
            try:
                c, peer = self.sock.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            with self.lock:
                self.peers.append(peer[0])
                self.connections += 1
                n = self.connections
                self.conns.append(c)
            t = threading.Thread(target=self._serve, args=(c, n), daemon=True)
            self.threads.append(t)
            t.start()

    def _recv(self, c, buf):
        """More bytes into buf; None at EOF or when stopping."""
        while not self.stopping:
            try:
                d = c.recv(65536)
            except socket.timeout:
                continue
            except OSError:
                return None
            if not d:
                return None
            buf += d
            if self.batch_delay:
                time.sleep(self.batch_delay)
                c.setblocking(False)
                try:
                    while True:
                        d = c.recv(65536)
                        if not d:
                            break
                        buf += d
                except (BlockingIOError, InterruptedError):
                    pass
                except OSError:
                    pass
                finally:
                    c.settimeout(0.2)
            return buf
        return None

    @staticmethod
    def _parse(buf, conn):
        """Whole requests at the front of buf: ([Request], rest)."""
        out = []
        while b"\r\n\r\n" in buf:
            head, _, rest = buf.partition(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            parts = lines[0].split(" ")
            if len(parts) != 3:
                raise ValueError("bad request line %r" % lines[0])
            fields = []
            for line in lines[1:]:
                k, sep, v = line.partition(":")
                if not sep:
                    raise ValueError("bad field line %r" % line)
                fields.append((k, v.strip()))
            n = 0
            cl = [v for k, v in fields if k.lower() == "content-length"]
            if cl:
                n = int(cl[0])
            if len(rest) < n:
                break
            out.append(Request(conn, parts[0], parts[1], parts[2], fields, rest[:n]))
            buf = rest[n:]
        return out, buf

    def _serve(self, c, n):
        c.settimeout(0.2)
        buf = b""
        try:
            while True:
                buf = self._recv(c, buf)
                if buf is None:
                    return
                try:
                    reqs, buf = self._parse(buf, n)
                except ValueError as e:
                    with self.lock:
                        self.errors.append(str(e))
                    return
                if not reqs:
                    continue
                with self.lock:
                    self.requests.extend(reqs)
                    self.batches.append(len(reqs))
                if self.mode == "silent":
                    continue
                if self.mode == "close":
                    c.shutdown(socket.SHUT_RDWR)
                    return
                if self.mode == "reset":
                    c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    return
                out, close = b"", False
                for r in reqs:
                    out += self._answer(r)
                    if any(v.lower() == "close" for v in r.values("Connection")):
                        close = True
                        break
                c.sendall(out)
                if close:
                    return
        except OSError:
            return
        finally:
            try:
                c.close()
            except OSError:
                pass

    def _answer(self, r):
        if self.mode == "garbage":
            return b"HTTP/1.1 2OO OK\r\nContent-Length: 5\r\n\r\nhello"
        status = 200
        if self.mode == "status":
            status = int(r.target.rstrip("/").rsplit("/", 1)[-1])
        reason = {200: "OK", 301: "Moved Permanently", 404: "Not Found",
                  500: "Internal Server Error", 503: "Service Unavailable"}.get(status, "X")
        extra = "Location: /\r\n" if 300 <= status < 400 else ""
        return ("HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\n%sContent-Length: 5\r\n\r\nhello"
                % (status, reason, extra)).encode()

    def stop(self):
        self.stopping = True
        self.sock.close()
        self.acceptor.join(5)
        with self.lock:
            conns = list(self.conns)
        for c in conns:
            try:
                c.close()
            except OSError:
                pass
        for t in self.threads:
            t.join(5)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


# ---- test bases ----

class Base(unittest.TestCase):
    maxDiff = None

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="cshttp-load-test-")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def load(self, *args, **kw):
        kw.setdefault("tmp", self.tmp)
        return load(*args, **kw)

    def clean(self, r):
        """No sanitizer report in stderr."""
        for mark in SANITIZER_MARKS:
            self.assertNotIn(mark, r.err, str(r))

    def ok(self, r, rows=1):
        """Exit 0, no sanitizer report, the exact CSV header and `rows` rows."""
        self.clean(r)
        self.assertEqual(r.rc, 0, str(r))
        self.assertEqual(r.header, CSV_HEADER, str(r))
        self.assertEqual(len(r.rows), rows, str(r))
        return r.row

    def completed(self, r, rc=1, rows=1):
        """A completed run with exit status rc (1: errors counted)."""
        self.clean(r)
        self.assertEqual(r.rc, rc, str(r))
        self.assertEqual(r.header, CSV_HEADER, str(r))
        self.assertEqual(len(r.rows), rows, str(r))
        return r.row

    def no_errors(self, row, r=None):
        for k in ("err_connect", "err_timeout", "err_reset", "err_bad_response", "non_2xx",
                  "status_3xx", "status_4xx", "status_5xx"):
            self.assertEqual(row[k], 0, "%s in %r\n%s" % (k, row, r or ""))

    def consistent(self, row):
        """Relations the contract gives between the columns."""
        self.assertEqual(row["non_2xx"], row["status_3xx"] + row["status_4xx"] + row["status_5xx"],
                         row)
        self.assertEqual(row["requests"], row["status_2xx"] + row["non_2xx"], row)
        if row["requests"]:
            self.assertGreater(row["duration_s"], 0, row)
            # rps = requests / duration_s, up to the rounding of the printed duration
            raw = row["_raw"]["duration_s"]
            half_ulp = 0.5 * 10 ** -(len(raw.split(".")[1]) if "." in raw else 0)
            self.assertAlmostEqual(row["rps"] * row["duration_s"], row["requests"],
                                   delta=row["rps"] * half_ulp + row["requests"] * 0.01 + 1,
                                   msg=row)
            lat = [row[k] for k in ("p50_ms", "p90_ms", "p99_ms", "p999_ms", "max_ms")]
            self.assertEqual(lat, sorted(lat), row)
            self.assertGreater(row["max_ms"], 0, row)
            self.assertGreater(row["read_bytes_per_s"], 0, row)


class WithCshttpd(Base):
    """One cshttpd for the class."""
    cshttpd_args = ()

    @classmethod
    def setUpClass(cls):
        cls.ctmp = tempfile.mkdtemp(prefix="cshttp-load-cshttpd-")
        cls.srv = Cshttpd(make_root(cls.ctmp), *cls.cshttpd_args)

    @classmethod
    def tearDownClass(cls):
        try:
            cls.srv.stop()
        finally:
            shutil.rmtree(cls.ctmp, ignore_errors=True)


# ---- bad arguments, help, unreachable targets ----

def option_re(*names):
    return re.compile(r"(?<![\w-])(%s)(?![\w-])" % "|".join(re.escape(n) for n in names))


class Arguments(Base):
    """Exit 2 and one stderr line naming the option, before any connection."""

    def bad(self, names, *args):
        url = "http://127.0.0.1:%d/" % closed_port()
        argv = [a.replace("URL", url) for a in args]
        r = self.load(*argv, csv_file=False, timeout=20)
        self.clean(r)
        self.assertEqual(r.rc, 2, str(r))
        lines = [l for l in r.err.splitlines() if l.strip()]
        self.assertEqual(len(lines), 1, "one line on stderr\n" + str(r))
        self.assertRegex(lines[0], option_re(*names), str(r))
        return lines[0]

    def test_source_addrs_off_loopback(self):
        # 127.0.0.x cannot reach a target that is not on 127.0.0.0/8
        self.bad(["--source-addrs"], "--source-addrs", "2", "-c", "1", "-d", "0.1",
                 "http://[::1]:%d/" % closed_port())

    def test_no_url(self):
        line = self.bad(["URL", "url"], "-c", "1", "-d", "0.1")
        self.assertNotIn("Traceback", line)

    def test_ftp_url(self):
        r = self.load("ftp://127.0.0.1/x", "-d", "0.1", csv_file=False, timeout=20)
        self.clean(r)
        self.assertEqual(r.rc, 2, str(r))
        lines = [l for l in r.err.splitlines() if l.strip()]
        self.assertEqual(len(lines), 1, str(r))
        self.assertRegex(lines[0], r"ftp|URL|url|scheme", str(r))

    def test_connections_negative(self):
        self.bad(["-c", "--connections"], "-c", "-1", "URL")

    def test_connections_not_a_number(self):
        self.bad(["-c", "--connections"], "-c", "abc", "URL")

    def test_connections_zero_without_idle(self):
        self.bad(["-c", "--connections"], "-c", "0", "-d", "0.1", "URL")

    def test_duration_zero(self):
        self.bad(["-d", "--duration"], "-d", "0", "URL")

    def test_pipeline_zero(self):
        self.bad(["-p", "--pipeline"], "-p", "0", "URL")

    def test_pipeline_without_keepalive(self):
        self.bad(["-p", "--pipeline", "--no-keepalive"], "-p", "4", "--no-keepalive", "URL")

    def test_unknown_option(self):
        self.bad(["--no-such-option"], "--no-such-option", "URL")

    def test_body_file_missing(self):
        missing = os.path.join(self.tmp, "no-such-file")
        line = self.bad(["--body-file"], "--body-file", missing, "URL")
        self.assertIn("no-such-file", line)

    def test_header_without_colon(self):
        self.bad(["-H", "--header"], "-H", "X-Test 1", "URL")

    def test_levels_empty_item(self):
        self.bad(["--levels"], "--levels", "1,,2", "-d", "0.1", "URL")

    def test_threads_zero(self):
        self.bad(["-t", "--threads"], "-t", "0", "URL")

    def test_help_and_version(self):
        r = self.load("--help", csv_file=False, timeout=20)
        self.clean(r)
        self.assertEqual(r.rc, 0, str(r))
        for opt in ("--connections", "--duration", "--requests", "--warmup", "--threads",
                    "--no-keepalive", "--pipeline", "--method", "--header", "--body",
                    "--body-file", "--timeout", "--cacert", "--idle", "--levels",
                    "--source-addrs", "--report", "--csv", "--label", "--progress"):
            self.assertIn(opt, r.out, "--help names %s" % opt)
        r = self.load("--version", csv_file=False, timeout=20)
        self.assertEqual(r.rc, 0, str(r))
        self.assertRegex(r.out, r"\d+\.\d+", str(r))


class Unreachable(Base):
    """Exit 3 with a message naming the host and the port."""

    def test_nothing_listening(self):
        port = closed_port()
        r = self.load("-c", "2", "-d", "0.5", "http://127.0.0.1:%d/x" % port, timeout=30)
        self.clean(r)
        self.assertEqual(r.rc, 3, str(r))
        self.assertIn("127.0.0.1", r.err, str(r))
        self.assertIn(str(port), r.err, str(r))

    def test_host_does_not_resolve(self):
        r = self.load("-c", "2", "-d", "0.5", "http://no-such-host.invalid:8080/", timeout=60)
        self.clean(r)
        self.assertEqual(r.rc, 3, str(r))
        self.assertIn("no-such-host.invalid", r.err, str(r))


# ---- against cshttpd ----

class Counts(WithCshttpd):
    """-n is exact: the CSV and cshttpd's own counters agree."""

    def check_exact(self, *extra, threads=1):
        before = self.srv.status()
        r = self.load("-n", "500", "-c", "8", *extra, self.srv.url("/demo/plaintext"))
        row = self.ok(r)
        after = self.srv.status()
        self.assertEqual(row["requests"], 500, str(r))
        self.assertEqual(row["status_2xx"], 500, str(r))
        self.no_errors(row, r)
        self.consistent(row)
        self.assertEqual((row["connections"], row["threads"], row["keepalive"], row["pipeline"]),
                         (8, threads, 1, 1), row)
        self.assertEqual((row["idle_held"], row["idle_answered"]), (0, 0), row)
        self.assertEqual(row["label"], self.srv.url("/demo/plaintext"), row)
        # cshttpd counted at least as many (plus the /status.json before)
        self.assertGreaterEqual(after["requests"] - before["requests"], 500,
                                (before, after))
        # keep-alive: 8 connections (+1 for the /status.json), not one per request
        self.assertLessEqual(after["connections_total"] - before["connections_total"], 8 + 1 + 2,
                             (before, after))
        # the summary block
        self.assertRegex(r.out, r"(?m)^target\s+%s\s*$" % re.escape(self.srv.url("/demo/plaintext")))
        self.assertRegex(r.out, r"(?m)^load\s+8 connections, %d threads?, keep-alive, pipeline 1\b"
                         % threads)
        self.assertRegex(r.out, r"(?m)^requests\s+500 in ")
        self.assertRegex(r.out, r"(?m)^status\s+2xx 500\s+3xx 0\s+4xx 0\s+5xx 0\s*$")
        self.assertRegex(r.out, r"(?m)^errors\s+connect 0\s+timeout 0\s+reset 0\s+bad-response 0"
                                r"\s+non-2xx 0\s*$")
        self.assertRegex(r.out, r"(?m)^latency\s+p50 [\d.]+ ms\s+p90 [\d.]+ ms\s+p99 [\d.]+ ms"
                                r"\s+p99\.9 [\d.]+ ms\s+max [\d.]+ ms\s*$")

    def test_requests_exact(self):
        self.check_exact()

    def test_requests_exact_two_threads(self):
        self.check_exact("-t", "2", threads=2)

    def test_pipeline_16(self):
        r = self.load("-n", "1000", "-c", "4", "-p", "16", self.srv.url("/demo/json"))
        row = self.ok(r)
        self.assertEqual(row["requests"], 1000, str(r))
        self.assertEqual(row["status_2xx"], 1000, str(r))
        self.assertEqual(row["pipeline"], 16, row)
        self.no_errors(row, r)
        self.consistent(row)

    def test_404_counted_as_non_2xx(self):
        r = self.load("-n", "50", "-c", "2", self.srv.url("/no-such-file"))
        row = self.completed(r, rc=1)
        self.assertEqual((row["requests"], row["status_4xx"], row["non_2xx"], row["status_2xx"]),
                         (50, 50, 50, 0), row)
        self.consistent(row)


class Idle(WithCshttpd):
    """--idle: held connections still answer after the load."""

    def test_idle_all_answer(self):
        r = self.load("--idle", "50", "-c", "2", "-d", "1", self.srv.url("/demo/plaintext"))
        row = self.ok(r)
        self.assertEqual((row["idle_held"], row["idle_answered"]), (50, 50), row)
        self.assertEqual(row["connections"], 2, row)
        self.assertGreater(row["requests"], 0, row)
        self.no_errors(row, r)
        self.assertRegex(r.out, r"(?m)^idle\s+50 held, 50 answered\s*$", str(r))

    def test_idle_only(self):
        # -c 0 is allowed with --idle: the run just holds the idle connections
        r = self.load("--idle", "10", "-c", "0", "-d", "0.5", self.srv.url("/demo/plaintext"))
        row = self.ok(r)
        self.assertEqual((row["idle_held"], row["idle_answered"]), (10, 10), row)
        self.assertEqual(row["connections"], 0, row)


class IdleTimeout(WithCshttpd):
    """cshttpd closes idle keep-alive connections after 300 ms: they no longer answer."""
    cshttpd_args = ("--keepalive-timeout-ms", "300", "--sweep-interval-ms", "50")

    def test_idle_closed_by_server(self):
        r = self.load("--idle", "20", "-c", "2", "-d", "2", self.srv.url("/demo/plaintext"))
        row = self.completed(r, rc=1)
        self.assertEqual(row["idle_held"], 20, row)
        self.assertLess(row["idle_answered"], row["idle_held"], row)
        self.assertEqual(row["idle_answered"], 0, row)
        self.assertRegex(r.out, r"(?m)^idle\s+20 held, 0 answered\s*$", str(r))


class Sweep(WithCshttpd):

    def test_levels(self):
        r = self.load("--levels", "1,2,4", "-d", "0.3", self.srv.url("/demo/plaintext"))
        self.ok(r, rows=3)
        self.assertEqual([row["connections"] for row in r.rows], [1, 2, 4], r.rows)
        for row in r.rows:
            self.assertGreater(row["requests"], 0, row)
            self.no_errors(row, r)
            self.consistent(row)
        self.assertEqual(len(re.findall(r"(?m)^target\s", r.out)), 3, str(r))
        m = re.search(r"(?m)^peak\s+([\d.]+) req/s at (\d+) connections?\s*$", r.out)
        self.assertIsNotNone(m, str(r))
        best = max(r.rows, key=lambda row: row["rps"])
        self.assertEqual(int(m.group(2)), best["connections"], (m.group(0), r.rows))
        self.assertAlmostEqual(float(m.group(1)), best["rps"], delta=0.1 + best["rps"] * 0.001)


class Reports(WithCshttpd):

    def test_report_and_csv(self):
        md = os.path.join(self.tmp, "r.md")
        cv = os.path.join(self.tmp, "r.csv")
        url = self.srv.url("/demo/plaintext")
        t0 = datetime.datetime.now(datetime.timezone.utc)
        p = subprocess.run([BIN, "-c", "2", "-d", "0.3", "--report", md, "--csv", cv,
                            "--label", "run-label-42", url],
                           stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p)
        self.assertTrue(os.path.exists(md) and os.path.exists(cv), os.listdir(self.tmp))
        with open(cv) as f:
            lines = f.read().splitlines()
        self.assertEqual(lines[0], CSV_HEADER)
        self.assertEqual(len(lines), 2, lines)
        self.assertTrue(lines[1].startswith("run-label-42,2,1,1,1,"), lines[1])
        with open(md) as f:
            text = f.read()
        self.assertIn("run-label-42", text)
        self.assertIn(url, text)
        self.assertIn("--report", text, "the command line")
        self.assertRegex(text, r"(?i)cpu|core", "the machine")
        dates = {d.strftime("%Y-%m-%d") for d in (t0, t0 + datetime.timedelta(minutes=2))}
        m = re.search(r"(\d{4}-\d{2}-\d{2})[ T]\d{2}:\d{2}(:\d{2})?\S*\s*(UTC|Z)?", text)
        self.assertIsNotNone(m, "a time in the report")
        self.assertIn(m.group(1), dates, m.group(0))
        self.assertTrue("UTC" in text or re.search(r"\d{2}:\d{2}(:\d{2})?(\.\d+)?Z", text),
                        "the time is said to be UTC")

    def test_default_label_is_url(self):
        url = self.srv.url("/demo/plaintext?a=1")
        r = self.load("-n", "20", "-c", "1", url)
        row = self.ok(r)
        self.assertEqual(row["label"], url)
        self.assertEqual(row["requests"], 20)


class Progress(WithCshttpd):

    def test_no_progress_when_stderr_not_a_terminal(self):
        r = self.load("-c", "2", "-d", "1.5", self.srv.url("/demo/plaintext"))
        self.ok(r)
        self.assertEqual(r.err, "", "stderr is a pipe: no progress line")

    def test_progress_forced(self):
        r = self.load("-c", "2", "-d", "1.5", "--progress", self.srv.url("/demo/plaintext"))
        self.ok(r)
        self.assertNotEqual(r.err.strip(), "", "--progress writes to stderr")

    def run_on_tty(self, *args):
        """stderr on a pseudo-terminal: returns (exit status, bytes written to it)."""
        master, slave = os.openpty()
        try:
            p = subprocess.Popen([BIN, *args], stdin=subprocess.DEVNULL,
                                 stdout=subprocess.PIPE, stderr=slave)
            os.close(slave)
            slave = None
            got = b""
            while True:
                try:
                    d = os.read(master, 65536)
                except OSError:  # EIO: the last writer closed the terminal
                    break
                if not d:
                    break
                got += d
            p.stdout.read()
            p.stdout.close()
            return p.wait(timeout=60), got
        finally:
            if slave is not None:
                os.close(slave)
            os.close(master)

    def test_progress_on_a_terminal(self):
        rc, got = self.run_on_tty("-c", "2", "-d", "1.5", self.srv.url("/demo/plaintext"))
        self.assertEqual(rc, 0, got)
        self.assertNotEqual(got.strip(), b"", "a terminal gets the progress line")
        rc, got = self.run_on_tty("-c", "2", "-d", "1.5", "--no-progress",
                                  self.srv.url("/demo/plaintext"))
        self.assertEqual(rc, 0, got)
        self.assertEqual(got, b"", "--no-progress")


# ---- HTTPS ----

class Https(Base):

    @classmethod
    def setUpClass(cls):
        cls.ctmp = tempfile.mkdtemp(prefix="cshttp-load-tls-")
        cls.cert, cls.key = make_cert(cls.ctmp, "server")
        cls.other, _ = make_cert(cls.ctmp, "other")
        cls.srv = Cshttpd(make_root(cls.ctmp), tls=(cls.cert, cls.key))

    @classmethod
    def tearDownClass(cls):
        try:
            cls.srv.stop()
        finally:
            shutil.rmtree(cls.ctmp, ignore_errors=True)

    def test_https_no_verification(self):
        r = self.load("-n", "200", "-c", "4", self.srv.https_url("/demo/plaintext"))
        row = self.ok(r)
        self.assertEqual((row["requests"], row["status_2xx"]), (200, 200), row)
        self.no_errors(row, r)
        self.consistent(row)

    def test_https_no_keepalive(self):
        r = self.load("-n", "50", "-c", "2", "--no-keepalive",
                      self.srv.https_url("/demo/plaintext"))
        row = self.ok(r)
        self.assertEqual((row["requests"], row["status_2xx"], row["keepalive"]), (50, 50, 0), row)
        self.no_errors(row, r)

    def test_https_cacert_right(self):
        r = self.load("-n", "100", "-c", "2", "--cacert", self.cert,
                      self.srv.https_url("/demo/plaintext"))
        row = self.ok(r)
        self.assertEqual((row["requests"], row["status_2xx"]), (100, 100), row)
        self.no_errors(row, r)

    def refused(self, r):
        self.clean(r)
        self.assertIn(r.rc, (1, 3), str(r))
        if r.rc == 1:
            self.assertEqual(r.header, CSV_HEADER, str(r))
            self.assertGreater(r.row["err_connect"], 0, str(r))
            self.assertEqual(r.row["requests"], 0, str(r))
        self.assertRegex(r.err, r"(?i)certif|verif|x509|tls|ssl", str(r))

    def test_https_cacert_wrong_ca(self):
        r = self.load("-c", "2", "-d", "0.5", "--cacert", self.other,
                      self.srv.https_url("/demo/plaintext"), timeout=60)
        self.refused(r)

    def test_https_cacert_wrong_name(self):
        # the right CA, but the certificate names another host
        d = tempfile.mkdtemp(dir=self.tmp)
        cert, key = make_cert(d, "elsewhere", san="DNS:elsewhere.example")
        srv = Cshttpd(make_root(d), tls=(cert, key))
        try:
            r = self.load("-c", "2", "-d", "0.5", "--cacert", cert,
                          srv.https_url("/demo/plaintext"), timeout=60)
            self.refused(r)
        finally:
            srv.stop()

    def test_cacert_missing_file(self):
        r = self.load("--cacert", os.path.join(self.tmp, "none.pem"), "-d", "0.3",
                      self.srv.https_url("/"), csv_file=False, timeout=30)
        self.clean(r)
        self.assertEqual(r.rc, 2, str(r))
        self.assertRegex(r.err, option_re("--cacert"), str(r))


# ---- against servers of its own ----

class KeepAlive(Base):

    def test_keepalive_reuses_connections(self):
        with FakeServer() as fs:
            r = self.load("-n", "200", "-c", "4", fs.url("/ka"))
            row = self.ok(r)
        self.assertEqual((row["requests"], row["status_2xx"], row["keepalive"]), (200, 200, 1), row)
        self.assertLessEqual(fs.connections, 4 + 2, "keep-alive: about one connection each")
        self.assertGreaterEqual(len(fs.requests), 200)
        for q in fs.requests:
            self.assertEqual([v.lower() for v in q.values("Connection")
                              if v.lower() == "close"], [], q)
        self.assertEqual(fs.errors, [])

    def test_no_keepalive_one_request_per_connection(self):
        with FakeServer() as fs:
            r = self.load("-n", "200", "-c", "4", "--no-keepalive", fs.url("/nka"))
            row = self.ok(r)
        self.assertEqual((row["requests"], row["status_2xx"], row["keepalive"]), (200, 200, 0), row)
        self.assertGreaterEqual(len(fs.requests), 200)
        per_conn = {}
        for q in fs.requests:
            per_conn[q.conn] = per_conn.get(q.conn, 0) + 1
            self.assertEqual([v.lower() for v in q.values("Connection")], ["close"], q)
        self.assertEqual(set(per_conn.values()), {1}, "one request per connection")
        self.assertGreaterEqual(fs.connections, 200)
        self.assertLessEqual(fs.connections, 200 + 4 + 2)
        self.assertEqual(fs.errors, [])

    def test_warmup_not_counted(self):
        with FakeServer() as fs:
            r = self.load("-w", "0.3", "-n", "50", "-c", "1", fs.url("/w"))
            row = self.ok(r)
        self.assertEqual(row["requests"], 50, row)
        self.assertGreater(len(fs.requests), 50, "warm-up requests reached the server")


    def test_warmup_then_duration(self):
        # a warm-up before a measured window given in seconds: the window is
        # measured and counted (it once ended at once, with 0 requests)
        with FakeServer() as fs:
            r = self.load("-w", "0.3", "-d", "0.5", "-c", "2", fs.url("/wd"))
            row = self.ok(r)
        self.assertGreater(row["requests"], 0, row)
        self.assertGreaterEqual(row["duration_s"], 0.5, row)
        self.assertGreater(len(fs.requests), row["requests"], "warm-up requests not counted")


    def test_source_addresses(self):
        # --source-addrs 3: connections come from 127.0.0.1, .2 and .3 in turn
        with FakeServer() as fs:
            r = self.load("--source-addrs", "3", "-n", "60", "-c", "6", fs.url("/s"))
            row = self.ok(r)
        self.assertEqual(row["requests"], 60, row)
        self.assertEqual(set(fs.peers), {"127.0.0.1", "127.0.0.2", "127.0.0.3"}, fs.peers)
        # one address only by default (few connections)
        with FakeServer() as fs:
            self.ok(self.load("-n", "20", "-c", "4", fs.url("/s")))
        self.assertEqual(set(fs.peers), {"127.0.0.1"}, fs.peers)


class Pipelining(Base):

    def test_pipeline_writes_ahead(self):
        with FakeServer(batch_delay=0.02) as fs:
            r = self.load("-n", "200", "-c", "1", "-p", "8", fs.url("/p"))
            row = self.ok(r)
        self.assertEqual((row["requests"], row["status_2xx"], row["pipeline"]), (200, 200, 8), row)
        self.assertGreater(max(fs.batches), 1, "requests written ahead: %r" % fs.batches)
        self.assertLessEqual(max(fs.batches), 8, "at most 8 outstanding: %r" % fs.batches)
        self.assertEqual(fs.errors, [])

    def test_no_pipeline_one_outstanding(self):
        with FakeServer(batch_delay=0.02) as fs:
            r = self.load("-n", "30", "-c", "1", fs.url("/p1"))
            row = self.ok(r)
        self.assertEqual(row["requests"], 30, row)
        self.assertEqual(max(fs.batches), 1, "-p 1: one request at a time: %r" % fs.batches)


class Requests(Base):
    """What reaches the server: method, fields, body."""

    def one(self, fs, *args, path="/r/x?q=1"):
        r = self.load("-n", "5", "-c", "1", *args, fs.url(path))
        row = self.ok(r)
        self.assertEqual(row["requests"], 5, row)
        self.assertGreaterEqual(len(fs.requests), 5)
        self.assertEqual(fs.errors, [])
        return fs.requests

    def test_defaults(self):
        with FakeServer() as fs:
            reqs = self.one(fs)
        for q in reqs:
            self.assertEqual((q.method, q.target, q.version), ("GET", "/r/x?q=1", "HTTP/1.1"), q)
            self.assertEqual(q.values("Host"), ["127.0.0.1:%d" % fs.port], q)
            self.assertEqual(len(q.values("User-Agent")), 1, q)
            self.assertEqual(q.values("Content-Length"), [], q)
            self.assertEqual(q.body, b"", q)

    def test_root_path(self):
        with FakeServer() as fs:
            r = self.load("-n", "3", "-c", "1", "http://127.0.0.1:%d" % fs.port)
            self.ok(r)
        self.assertEqual({q.target for q in fs.requests}, {"/"})

    def test_method_header_body(self):
        with FakeServer() as fs:
            reqs = self.one(fs, "-m", "PUT", "-H", "X-Test: 1", "-b", "hello")
        for q in reqs:
            self.assertEqual(q.method, "PUT", q)
            self.assertEqual(q.values("X-Test"), ["1"], q)
            self.assertEqual(q.values("Content-Length"), ["5"], q)
            self.assertEqual(q.body, b"hello", q)
            self.assertEqual(len(q.values("Host")), 1, q)

    def test_body_means_post(self):
        with FakeServer() as fs:
            reqs = self.one(fs, "-b", "a=1&b=2")
        for q in reqs:
            self.assertEqual((q.method, q.body, q.values("Content-Length")),
                             ("POST", b"a=1&b=2", ["7"]), q)

    def test_body_file(self):
        body = bytes(range(256)) * 4 + b"\r\n\r\nend"
        path = os.path.join(self.tmp, "body.bin")
        with open(path, "wb") as f:
            f.write(body)
        with FakeServer() as fs:
            reqs = self.one(fs, "--body-file", path, "-H", "Content-Type: application/octet-stream")
        for q in reqs:
            self.assertEqual(q.method, "POST", q)
            self.assertEqual(q.values("Content-Length"), [str(len(body))], q)
            self.assertEqual(q.values("Content-Type"), ["application/octet-stream"], q)
            self.assertEqual(q.body, body, q)

    def test_host_and_user_agent_replaced(self):
        with FakeServer() as fs:
            reqs = self.one(fs, "-H", "Host: example.test", "-H", "User-Agent: load-test/1",
                            "-H", "X-A: 1", "-H", "X-B: two words")
        for q in reqs:
            self.assertEqual(q.values("Host"), ["example.test"], q)
            self.assertEqual(q.values("User-Agent"), ["load-test/1"], q)
            self.assertEqual((q.values("X-A"), q.values("X-B")), (["1"], ["two words"]), q)

    def test_repeated_header_kept(self):
        with FakeServer() as fs:
            reqs = self.one(fs, "-H", "X-Rep: a", "-H", "X-Rep: b")
        for q in reqs:
            self.assertEqual(q.values("X-Rep"), ["a", "b"], q)

    @unittest.skipUnless(socket.has_ipv6, "no IPv6")
    def test_ipv6_literal(self):
        try:
            fs = FakeServer(family=socket.AF_INET6, host="::1")
        except OSError as e:
            self.skipTest("no IPv6 loopback: %s" % e)
        with fs:
            r = self.load("-n", "5", "-c", "1", fs.url("/six"))
            row = self.ok(r)
        self.assertEqual(row["requests"], 5, row)
        for q in fs.requests:
            self.assertEqual(q.values("Host"), ["[::1]:%d" % fs.port], q)
            self.assertEqual(q.target, "/six", q)


class Errors(Base):
    """Each kind of error in its own column, exit 1."""

    def test_bad_response(self):
        with FakeServer("garbage") as fs:
            r = self.load("-c", "2", "-d", "0.5", fs.url("/g"))
        row = self.completed(r, rc=1)
        self.assertGreater(row["err_bad_response"], 0, row)
        self.assertEqual((row["status_2xx"], row["requests"]), (0, 0), row)
        self.assertRegex(r.out, r"(?m)^errors\s.*bad-response [1-9]\d*", str(r))

    def test_timeout(self):
        with FakeServer("silent") as fs:
            r = self.load("-c", "2", "-d", "1", "--timeout", "0.3", fs.url("/t"), timeout=60)
        row = self.completed(r, rc=1)
        self.assertGreater(row["err_timeout"], 0, row)
        self.assertEqual(row["requests"], 0, row)
        # each timeout closes its connection and opens a new one
        self.assertGreater(fs.connections, 2, "new connections after timeouts")
        self.assertRegex(r.out, r"(?m)^errors\s.*timeout [1-9]\d*", str(r))

    def test_no_response_in_window(self):
        # nothing answered within the window, and the timeout is longer than
        # it: no error of a kind was counted, but a run that measured nothing
        # is not a clean run
        with FakeServer("silent") as fs:
            r = self.load("-c", "2", "-d", "0.5", "--timeout", "30", fs.url("/n"), timeout=60)
        row = self.completed(r, rc=1)
        self.assertEqual(row["requests"], 0, row)
        self.assertRegex(r.out, r"(?m)^stopped\s+no response completed in the measured window")

    def test_closed_after_request(self):
        with FakeServer("close") as fs:
            r = self.load("-c", "2", "-d", "0.5", fs.url("/c"))
        row = self.completed(r, rc=1)
        self.assertGreater(row["err_reset"], 0, row)
        self.assertEqual(row["requests"], 0, row)
        self.assertRegex(r.out, r"(?m)^errors\s.*reset [1-9]\d*", str(r))

    def test_reset_after_request(self):
        with FakeServer("reset") as fs:
            r = self.load("-c", "2", "-d", "0.5", fs.url("/rst"))
        row = self.completed(r, rc=1)
        self.assertGreater(row["err_reset"], 0, row)
        self.assertEqual(row["requests"], 0, row)

    def check_status(self, status, column):
        with FakeServer("status") as fs:
            r = self.load("-n", "40", "-c", "2", fs.url("/s/%d" % status))
        row = self.completed(r, rc=1)
        self.assertEqual((row["requests"], row[column], row["non_2xx"], row["status_2xx"]),
                         (40, 40, 40, 0), row)
        self.consistent(row)
        for k in ("err_connect", "err_timeout", "err_reset", "err_bad_response"):
            self.assertEqual(row[k], 0, row)
        self.assertRegex(r.out, r"(?m)^errors\s.*non-2xx 40\s*$", str(r))

    def test_status_3xx(self):
        self.check_status(301, "status_3xx")

    def test_status_4xx(self):
        self.check_status(404, "status_4xx")

    def test_status_5xx(self):
        self.check_status(500, "status_5xx")

    def test_server_stops_midway(self):
        # load starts fine, then the server goes away: connect errors, exit 1 (not 3)
        fs = FakeServer()
        timer = threading.Timer(0.3, fs.stop)
        timer.start()
        try:
            r = self.load("-c", "2", "-d", "1", fs.url("/gone"), timeout=60)
        finally:
            timer.join()
            fs.stop()
        row = self.completed(r, rc=1)
        self.assertGreater(row["requests"], 0, row)
        self.assertGreater(row["err_connect"] + row["err_reset"], 0, row)


def main():
    global BIN, CSHTTPD
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True, help="cshttp-load")
    ap.add_argument("--cshttpd", required=True)
    args, rest = ap.parse_known_args()
    BIN, CSHTTPD = os.path.abspath(args.bin), os.path.abspath(args.cshttpd)
    for b in (BIN, CSHTTPD):
        if not os.access(b, os.X_OK):
            sys.exit("not an executable: %s" % b)
    unittest.main(argv=[sys.argv[0], *rest], verbosity=2)


if __name__ == "__main__":
    main()
