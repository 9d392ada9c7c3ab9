#!/usr/bin/env python3
"""cshttpd as a deployed host: safe defaults, the status page and who may
read it, the access and error logs (escaping, JSON, reopening on SIGUSR1),
--check-config, --install-service (checked with systemd-analyze verify),
MIME types, and the README's Deploy walk-through (config file,
--check-config, --install-service, logrotate with SIGUSR1), each step run.

Real clients only: curl, openssl (certificates), headless Chromium (the
status page), logrotate. Everything listens on 127.0.0.1 ephemeral ports.

Usage: test_cshttpd_deploy.py --bin path/to/cshttpd --group NAME
         [--curl curl] [--chromium chromium] [--workdir DIR]
"""
import argparse
import json
import os
import re
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

ARGS = None
TESTS = {}
REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_cshttpd import have_ipv6_loopback, run_groups  # noqa: E402


def test(group):
    def deco(fn):
        TESTS.setdefault(group, []).append(fn)
        return fn
    return deco


class Server:
    """cshttpd on an ephemeral port with exactly the options given."""

    def __init__(self, *args, env=None, cwd=None):
        cmd = [os.path.abspath(ARGS.bin), "--port", "0"] + list(args)
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, env=env, cwd=cwd)
        self.port = self.port6 = None
        self.lines = []
        deadline = time.time() + 10
        while time.time() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                break
            self.lines.append(line)
            m = re.search(r"listening on http://127\.0\.0\.1:(\d+)/", line)
            if m:
                self.port = int(m.group(1))
                if "--address6" not in args:
                    break
            m = re.search(r"listening on http://\[::1\]:(\d+)/", line)
            if m:
                self.port6 = int(m.group(1))
                break
        if self.port is None:
            self.proc.kill()
            raise AssertionError("cshttpd did not start: %r %r" % (self.lines,
                                                                   self.proc.stderr.read()))

    def url(self, path):
        return "http://127.0.0.1:%d%s" % (self.port, path)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            out, err = self.proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.communicate()
            raise AssertionError("cshttpd did not stop within 20 s")
        self.err = err or ""
        return self.proc.returncode

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        rc = self.stop()
        if exc[0] is None:
            assert rc == 0, "cshttpd exited %r: %s" % (rc, self.err)
            assert "Sanitizer" not in self.err, self.err


def curl(*args):
    return subprocess.run([ARGS.curl, "-sS", "--max-time", "20"] + list(args),
                          capture_output=True, timeout=30)


def code(url, *args):
    r = curl("-o", "/dev/null", "-w", "%{http_code}", *args, url)
    assert r.returncode == 0, r.stderr
    return int(r.stdout)


def run(*cmd, env=None, timeout=60, cwd=None):
    return subprocess.run(list(cmd), capture_output=True, text=True, timeout=timeout, env=env,
                          cwd=cwd)


def make_root(d):
    root = os.path.join(d, "www")
    os.makedirs(os.path.join(root, "sub"))
    with open(os.path.join(root, "index.html"), "w") as f:
        f.write("<!doctype html><title>t</title><p>deploy root</p>\n")
    with open(os.path.join(root, "sub", "a.txt"), "w") as f:
        f.write("a\n")
    return root


def wait_for(pred, what, timeout=15):
    end = time.time() + timeout
    while time.time() < end:
        v = pred()
        if v:
            return v
        time.sleep(0.1)
    raise AssertionError("timed out waiting for " + what)


def make_cert(d, cn):
    key, cert = os.path.join(d, cn + ".key"), os.path.join(d, cn + ".pem")
    r = run("openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
            "-nodes", "-keyout", key, "-out", cert, "-days", "2", "-subj", "/CN=" + cn)
    assert r.returncode == 0, r.stderr
    return cert, key


# ---- safe defaults ----

@test("defaults")
def t_root_and_nothing_else(d):
    root = make_root(d)
    with Server("--root", root) as srv:
        assert code(srv.url("/")) == 200
        assert code(srv.url("/sub/a.txt")) == 200
        for path in ("/demo/echo", "/demo/plaintext", "/demo/upload", "/demo/sleep", "/status",
                     "/status.json", "/sub/"):
            assert code(srv.url(path)) == 404, path
        r = curl("-X", "POST", "--data-binary", "x" * 1000, srv.url("/demo/upload"))
        assert b"Received" not in r.stdout
    # the listing and the demo only when asked, on the command line or in the file
    with Server("--root", root, "--listing") as srv:
        r = curl(srv.url("/sub/"))
        assert b"a.txt" in r.stdout, r.stdout
        assert code(srv.url("/demo/plaintext")) == 404
    conf = os.path.join(d, "c.conf")
    with open(conf, "w") as f:
        f.write("root = %s\ndemo = yes\nlisting = no\n" % root)
    with Server("--config", conf) as srv:
        assert code(srv.url("/demo/plaintext")) == 200
        assert code(srv.url("/status")) == 200
        assert code(srv.url("/sub/")) == 404
    r = run(ARGS.bin, "--help")
    for opt in ("--demo", "--listing", "--status PATH", "--status-allow", "--access-log-format",
                "--error-log", "--check-config", "--install-service", "--uninstall-service",
                "--service-name", "--unit-dir", "--mime-types", "--mime-type", "USR1"):
        assert opt in r.stdout, opt


@test("defaults")
def t_status_only_and_acl(d):
    root = make_root(d)
    with Server("--root", root, "--status", "/_st") as srv:
        assert code(srv.url("/_st")) == 200
        j = json.loads(curl(srv.url("/_st.json")).stdout)
        assert "requests" in j and "series" in j
        j2 = json.loads(curl(srv.url("/_st?format=json")).stdout)
        assert "series" in j2
        assert code(srv.url("/status")) == 404
        assert code(srv.url("/demo/plaintext")) == 404
    # peers outside the list get 403, the list parses IPv4 and IPv6 CIDRs
    with Server("--root", root, "--status", "/_st", "--status-allow",
                "10.0.0.0/8, 2001:db8::/32") as srv:
        assert code(srv.url("/_st")) == 403
        assert code(srv.url("/_st.json")) == 403
        assert code(srv.url("/_st?format=json")) == 403
        assert code(srv.url("/")) == 200
    with Server("--root", root, "--status", "/_st", "--status-allow", "127.0.0.1/32") as srv:
        assert code(srv.url("/_st")) == 200
    if have_ipv6_loopback():
        with Server("--root", root, "--address6", "::1", "--status", "/_st") as srv:
            r = curl("-o", "/dev/null", "-w", "%{http_code}", "-g",
                     "http://[::1]:%d/_st" % srv.port6)
            assert r.stdout == b"200", r.stdout
        with Server("--root", root, "--address6", "::1", "--status", "/_st", "--status-allow",
                    "127.0.0.0/8") as srv:
            r = curl("-o", "/dev/null", "-w", "%{http_code}", "-g",
                     "http://[::1]:%d/_st" % srv.port6)
            assert r.stdout == b"403", r.stdout
    # bad values are refused with the value named
    for bad in ("10.0.0.0/33", "nonsense", "::1/129", ""):
        r = run(ARGS.bin, "--root", root, "--status", "/_st", "--status-allow", bad)
        assert r.returncode == 2 and "status_allow" in r.stderr, (bad, r.stderr)
    r = run(ARGS.bin, "--root", root, "--status", "no-slash")
    assert r.returncode == 2 and "status" in r.stderr, r.stderr
    # the WebSocket settings: each bad value refused with its name
    for flag, bad in (("--ws-max-message", "lots"), ("--ws-max-message", "0"),
                      ("--ws-max-message", "8g"), ("--ws-ping-interval-ms", "-1"),
                      ("--ws-ping-interval-ms", "1k"), ("--ws-pong-timeout-ms", "90000000"),
                      ("--ws-deflate", "maybe"), ("--ws-allow-origins", "a.example"),
                      ("--ws-allow-origins", "https://a.example/path"),
                      ("--ws-allow-origins", "https://ok.example,https://u@x.example")):
        r = run(ARGS.bin, "--root", root, flag, bad)
        name = flag[2:].replace("-", "_")
        assert r.returncode == 2 and name in r.stderr, (flag, bad, r.stderr)


# ---- logs ----

@test("logs")
def t_access_log_escaping(d):
    root = make_root(d)
    log = os.path.join(d, "access.log")
    with Server("--root", root, "--access-log", log) as srv:
        curl("-A", 'x" 200 5 "-" "curl', srv.url("/"))
        curl("-A", b"caf\xc3\xa9", "-e", "a\\b", srv.url("/?q=1"))
        curl("-H", "User-Agent: tab\there", srv.url("/"))
    lines = open(log, "rb").read().decode("ascii").splitlines()
    assert len(lines) == 3, lines
    # the forged agent stays inside its own quoted field
    assert lines[0].endswith('"-" "x\\x22 200 5 \\x22-\\x22 \\x22curl"'), lines[0]
    assert lines[0].count('"') == 6, lines[0]
    assert lines[1].endswith('"a\\x5Cb" "caf\\xC3\\xA9"'), lines[1]
    assert '"tab\\x09here"' in lines[2], lines[2]
    # the combined format's shape
    pat = re.compile(r'^127\.0\.0\.1 - - \[[^\]]+\] "GET /(\?q=1)? HTTP/1\.1" 200 \d+ "[^"]*" "[^"]*"$')
    for l in lines:
        assert pat.match(l), l


@test("logs")
def t_access_log_body_bytes(d):
    """The combined format's byte count is the body's, as log tools read it
    (nginx's $body_bytes_sent, Apache's %b); the JSON format has both. A
    static file, a gzip answer (its precompressed sibling), a HEAD, a 304
    and a range; and a client that leaves inside its request body is
    logged 499, as nginx logs it."""
    root = make_root(d)
    text = b"".join(b"line %04d of a text that compresses well\n" % i for i in range(200))
    with open(os.path.join(root, "big.txt"), "wb") as f:
        f.write(text)
    gz = subprocess.run(["gzip", "-9", "-c"], input=text, capture_output=True).stdout
    with open(os.path.join(root, "big.txt.gz"), "wb") as f:
        f.write(gz)
    log = os.path.join(d, "access.json")
    clog = os.path.join(d, "access.log")
    with Server("--root", root, "--demo", "--access-log", log,
                "--access-log-format", "json") as srv:
        r = curl("-D", "-", "-o", "/dev/null", srv.url("/sub/a.txt"))
        etag = re.search(rb"(?i)^etag: (.+?)\r$", r.stdout, re.M).group(1).decode()
        r = curl("-D", "-", "-o", "/dev/null", "-H", "Accept-Encoding: gzip", srv.url("/big.txt"))
        assert re.search(rb"(?i)^content-encoding: gzip", r.stdout, re.M), r.stdout
        curl("-I", srv.url("/sub/a.txt"))
        assert code(srv.url("/sub/a.txt"), "-H", "If-None-Match: " + etag) == 304
        assert code(srv.url("/big.txt"), "-r", "10-19") == 206
        # a client that leaves inside its request body
        s = socket.create_connection(("127.0.0.1", srv.port), timeout=10)
        s.sendall(b"POST /demo/echo HTTP/1.1\r\nHost: a\r\nContent-Length: 1000\r\n\r\nabc")
        time.sleep(0.2)
        s.close()
        end = time.time() + 10
        while time.time() < end and len(open(log, "rb").read().splitlines()) < 6:
            time.sleep(0.05)
    rows = [json.loads(l) for l in open(log, "rb").read().splitlines()]
    got = [(r["method"], r["target"], r["status"], r["body_bytes"]) for r in rows]
    assert got == [("GET", "/sub/a.txt", 200, 2), ("GET", "/big.txt", 200, len(gz)),
                   ("HEAD", "/sub/a.txt", 200, 0), ("GET", "/sub/a.txt", 304, 0),
                   ("GET", "/big.txt", 206, 10), ("POST", "/demo/echo", 499, 0)], got
    for r in rows:  # the heads are in bytes_out only
        assert r["bytes_out"] > r["body_bytes"] or r["status"] == 499, r
    # the combined format: the body's bytes
    with Server("--root", root, "--access-log", clog) as srv:
        curl(srv.url("/sub/a.txt"))
    line = open(clog, "rb").read().decode()
    assert '"GET /sub/a.txt HTTP/1.1" 200 2 ' in line, line


@test("logs")
def t_access_log_json(d):
    root = make_root(d)
    log = os.path.join(d, "access.json")
    with Server("--root", root, "--access-log", log, "--access-log-format", "json") as srv:
        curl("-A", b'x" \\ caf\xc3\xa9', srv.url("/sub/a.txt?x=1"))
        curl(srv.url("/nope"))
    lines = open(log, "rb").read().splitlines()
    assert len(lines) == 2, lines
    a, b = (json.loads(l) for l in lines)
    assert a["method"] == "GET" and a["target"] == "/sub/a.txt?x=1" and a["status"] == 200
    assert a["protocol"] == "HTTP/1.1" and a["remote_addr"] == "127.0.0.1"
    # bytes above 0x7e come back one code point per byte (lossless, ASCII line)
    assert a["user_agent"] == 'x" \\ caf\xc3\xa9', a["user_agent"]
    assert b["status"] == 404 and b["referer"] == "" and isinstance(a["duration_ms"], float)
    r = run(ARGS.bin, "--root", root, "--access-log-format", "xml")
    assert r.returncode == 2 and "access_log_format" in r.stderr, r.stderr


@test("logs")
def t_sigusr1_reopens(d):
    """logrotate's move-then-signal: every request is logged exactly once,
    in the old or the new file, whole lines only, and the server lives."""
    root = make_root(d)
    log, elog = os.path.join(d, "access.log"), os.path.join(d, "error.log")
    with Server("--root", root, "--access-log", log, "--error-log", elog) as srv:
        n_threads, per_thread = 4, 150
        errors = []

        def client(k):
            try:
                for i in range(per_thread):
                    with urllib.request.urlopen(srv.url("/sub/a.txt?c=%d&i=%d" % (k, i)),
                                                timeout=20) as r:
                        r.read()
            except Exception as e:  # noqa
                errors.append(e)
        threads = [threading.Thread(target=client, args=(k,)) for k in range(n_threads)]
        for t in threads:
            t.start()
        rotated = []
        for i in range(3):
            time.sleep(0.2)
            dst = "%s.%d" % (log, i + 1)
            os.rename(log, dst)
            rotated.append(dst)
            os.kill(srv.proc.pid, signal.SIGUSR1)
            wait_for(lambda: os.path.exists(log), "the access log to be reopened")
        for t in threads:
            t.join(60)
        assert not errors, errors
        os.rename(elog, elog + ".1")
        os.kill(srv.proc.pid, signal.SIGUSR1)
        wait_for(lambda: os.path.exists(elog), "the error log to be reopened")
        assert code(srv.url("/")) == 200
    seen = []
    for f in rotated + [log]:
        data = open(f, "rb").read()
        assert data == b"" or data.endswith(b"\n"), f
        for l in data.decode("ascii").splitlines():
            m = re.search(r'"GET /sub/a\.txt\?c=(\d+)&i=(\d+) HTTP/1\.1" 200 ', l)
            if m:
                seen.append((int(m.group(1)), int(m.group(2))))
            else:
                assert '"GET / HTTP/1.1" 200' in l, l
    assert sorted(seen) == [(k, i) for k in range(n_threads) for i in range(per_thread)], \
        "lost or doubled lines: %d of %d" % (len(seen), n_threads * per_thread)
    assert sum(1 for f in rotated if os.path.getsize(f) > 0) >= 1
    # the error log: timestamps and levels, in the old file and the new one
    old, new = open(elog + ".1").read(), open(elog).read()
    line_re = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}[+-]\d{4} \[(error|warn|notice|info)\] cshttpd: ")
    for l in (old + new).splitlines():
        assert line_re.match(l), l
    assert "started" in old and "logs reopened" in old
    assert "stopped" in new, new


@test("logs")
def t_handler_left_behind(d):
    """A handler still running past the stop deadline: cshttpd exits 0 at
    once, says so in its error log, and frees nothing that handler uses."""
    root = make_root(d)
    elog = os.path.join(d, "e.log")
    srv = Server("--root", root, "--demo", "--stop-timeout-ms", "200", "--error-log", elog)
    try:
        s = socket.create_connection(("127.0.0.1", srv.port), timeout=10)
        s.sendall(b"GET /demo/sleep?ms=4000 HTTP/1.1\r\nHost: a\r\n\r\n")
        time.sleep(0.3)
        srv.proc.send_signal(signal.SIGTERM)
        assert srv.stop() == 0, srv.err
        s.close()
    finally:
        if srv.proc.poll() is None:
            srv.proc.kill()
    text = open(elog).read()
    assert re.search(r"\[warn\] cshttpd: 1 handler still running after the deadline", text), text
    assert "Sanitizer" not in srv.err, srv.err


@test("logs")
def t_error_log_errors(d):
    root = make_root(d)
    elog = os.path.join(d, "e.log")
    # a server that cannot listen says so in its error log, with a level
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        r = run(ARGS.bin, "--root", root, "--port", str(port), "--error-log", elog)
        assert r.returncode == 1
        assert re.search(r"\[error\] cshttpd: cannot listen: Address already in use",
                         open(elog).read()), open(elog).read()
    r = run(ARGS.bin, "--root", root, "--error-log", os.path.join(d, "no", "such", "e.log"))
    assert r.returncode == 2 and "error_log" in r.stderr, r.stderr


# ---- --check-config ----

@test("checkconfig")
def t_check_config(d):
    root = make_root(d)
    cert, key = make_cert(d, "one")
    cert2, key2 = make_cert(d, "two")
    good = os.path.join(d, "good.conf")
    with open(good, "w") as f:
        f.write("root = %s\nport = 8088\ntls_cert = %s\ntls_key = %s\ntls_port = 8443\n"
                "access_log = %s\nstatus = /status\nstatus_allow = 10.0.0.0/8,::1\n"
                % (root, cert, key, os.path.join(d, "a.log")))
    r = run(ARGS.bin, "--check-config", "--config", good)
    assert r.returncode == 0, r.stderr
    assert "configuration OK" in r.stdout and good in r.stdout, r.stdout
    assert not os.path.exists(os.path.join(d, "a.log"))  # checked, not created
    # every problem, each named: in the file and on the command line
    bad = os.path.join(d, "bad.conf")
    with open(bad, "w") as f:
        f.write("root = %s\ntls_cert = %s\ntls_key = %s\nstatus_allow = 300.1.1.1/8\n"
                "access_log_format = xml\ndemo = maybe\nmime_type = nothing\n"
                % (os.path.join(d, "missing"), cert, key2))
    r = run(ARGS.bin, "--check-config", "--config", bad, "--tls-port", "99999",
            "--listing=perhaps")
    assert r.returncode == 1, (r.returncode, r.stdout, r.stderr)
    for what in ("root %s" % os.path.join(d, "missing"), "does not match the certificate",
                 "status_allow: '300.1.1.1/8'", "access_log_format: 'xml'", "demo: 'maybe'",
                 "mime_type: 'nothing'", "tls_port", "listing: 'perhaps'"):
        assert what in r.stderr, (what, r.stderr)
    assert re.search(r"\d+ problems", r.stderr), r.stderr
    # a root that is a file, a certificate that is not one, a port that does not parse
    notdir = os.path.join(d, "file")
    open(notdir, "w").close()
    junk = os.path.join(d, "junk.pem")
    with open(junk, "w") as f:
        f.write("not a certificate\n")
    r = run(ARGS.bin, "--check-config", "--root", notdir, "--tls-cert", junk, "--tls-key", key,
            "--port", "http")
    assert r.returncode == 1
    assert "is not a folder" in r.stderr and "cannot load a PEM certificate" in r.stderr and \
        "--port" in r.stderr, r.stderr
    # half a TLS pair
    r = run(ARGS.bin, "--check-config", "--root", root, "--tls-cert", cert)
    assert r.returncode == 1 and "tls_key" in r.stderr, r.stderr
    # engine settings: every bad line of the file, each with its line number
    many = os.path.join(d, "many.conf")
    with open(many, "w") as f:
        f.write("root = %s\nport = abc\nmax_connections = -1\n# fine\nno_such = 1\n"
                "listing = yes\nheader_timeout_ms = soon\nnot a setting\n" % root)
    r = run(ARGS.bin, "--check-config", "--config", many)
    assert r.returncode == 1, r.stderr
    for n in (2, 3, 5, 7, 8):
        assert "%s:%d: " % (many, n) in r.stderr, (n, r.stderr)
    assert "5 problems" in r.stderr, r.stderr
    assert "/tmp/cshttpd-config-" not in r.stderr
    r = run(ARGS.bin, "--check-config", "--config", os.path.join(d, "nope.conf"))
    assert r.returncode == 1 and "nope.conf" in r.stderr, r.stderr


@test("checkconfig")
def t_config_file_as_an_attacker_writes_it(d):
    """Each case a clear error naming the file and line, and exit 1: a
    folder, a NUL byte, a setting given twice (the engine's or cshttpd's;
    proxy and mime_type add to a list), a line past 64 KiB; a long comment
    stays a comment; 100 bad lines are 100 problems, the first 32 named."""
    root = make_root(d)

    def check(name, text, *want):
        path = os.path.join(d, name)
        with open(path, "wb") as f:
            f.write(text)
        r = run(ARGS.bin, "--check-config", "--config", path)
        assert r.returncode == 1, (name, r.returncode, r.stdout, r.stderr)
        for w in want:
            assert w % {"f": path} in r.stderr, (name, w, r.stderr)
        return r

    r = run(ARGS.bin, "--check-config", "--config", d)
    assert r.returncode == 1 and "%s: is a folder" % d in r.stderr, r.stderr
    base = ("root = %s\n" % root).encode()
    check("nul.conf", base + b"port = 8080\0 junk\n", "%(f)s:2: a NUL byte")
    check("twice.conf", base + b"port = 8080\nport = 9090\n",
          "%(f)s:3: 'port' is set twice (first on line 2)")
    check("root.conf", base + b"root = /\n", "%(f)s:2: 'root' is set twice")
    check("long.conf", base + b"server_header = " + b"x" * 70000 + b"\n",
          "%(f)s:2: line longer than 65536 bytes")
    r = check("many.conf", base + b"".join(b"bad line %d\n" % i for i in range(100)),
              "%(f)s:2: ", "%(f)s:33: ", "... and 68 more", "100 problems")
    assert "%s:34: " % os.path.join(d, "many.conf") not in r.stderr, r.stderr
    # fine: a long comment ending in what looks like a setting, and lists
    fine = os.path.join(d, "fine.conf")
    with open(fine, "wb") as f:
        f.write(base + b"port = 8080\n#" + b"c" * 1021 + b" port = 1\n"
                b"mime_type = foo=text/x-foo\nmime_type = bar=text/x-bar\n"
                b"proxy = /a/=http://127.0.0.1:9\nproxy = /b/=http://127.0.0.1:9\n")
    r = run(ARGS.bin, "--check-config", "--config", fine)
    assert r.returncode == 0 and "configuration OK" in r.stdout, (r.stdout, r.stderr)


@test("checkconfig")
def t_relative_paths_warned(d):
    """A path the config file leaves relative names a file from the folder
    cshttpd starts in: --check-config and the error log say which, with
    the path it names now; from / the root is then missing, and that is
    a problem too. A path on the command line is the caller's own."""
    site = os.path.join(d, "site")
    make_root(site)
    conf = os.path.join(site, "rel.conf")
    with open(conf, "w") as f:
        f.write("root = www\naccess_log = a.log\n")
    bin_ = os.path.abspath(ARGS.bin)
    r = run(bin_, "--check-config", "--config", conf, cwd=site)
    assert r.returncode == 0 and "configuration OK" in r.stdout, (r.stdout, r.stderr)
    for name, value in (("root", "www"), ("access_log", "a.log")):
        want = "cshttpd: warning: %s '%s' is relative: %s from here" % (
            name, value, os.path.join(os.path.realpath(site), value))
        assert want in r.stderr, (want, r.stderr)
    r = run(bin_, "--check-config", "--config", conf, cwd="/")
    assert r.returncode == 1, (r.stdout, r.stderr)
    assert "warning: root 'www' is relative: /www from here" in r.stderr, r.stderr
    assert "root www: No such file or directory" in r.stderr, r.stderr
    # the command line's own relative path: no warning for it
    r = run(bin_, "--check-config", "--config", conf, "--root", "www", cwd=site)
    assert r.returncode == 0 and "root 'www'" not in r.stderr, r.stderr
    assert "access_log 'a.log' is relative" in r.stderr, r.stderr
    # root's default is relative too, when a config file leaves it out
    bare = os.path.join(site, "bare.conf")
    with open(bare, "w") as f:
        f.write("port = 8080\n")
    r = run(bin_, "--check-config", "--config", bare, cwd=site)
    assert r.returncode == 0 and "root 'www' (the default) is relative" in r.stderr, r.stderr
    # started: the same words in the error log, at warn
    elog = os.path.join(d, "e.log")
    with Server("--config", conf, "--error-log", elog, cwd=site) as srv:
        assert code(srv.url("/")) == 200
    text = open(elog).read()
    assert re.search(r"\[warn\] cshttpd: root 'www' is relative: %s from here"
                     % re.escape(os.path.join(os.path.realpath(site), "www")), text), text


# ---- --install-service ----

def verify_unit(path):
    """systemd-analyze verify, offline: this machine runs no systemd."""
    sa = shutil.which("systemd-analyze")
    if not sa:
        raise AssertionError("systemd-analyze is missing: run scripts/install-deps.sh")
    r = run(sa, "verify", "--man=no", path)
    assert r.returncode == 0 and not r.stderr.strip(), (r.returncode, r.stdout, r.stderr)


def unit_settings(path):
    out = {}
    for l in open(path).read().splitlines():
        if "=" in l and not l.startswith("#"):
            k, _, v = l.partition("=")
            out.setdefault(k, []).append(v)
    return out


@test("service")
def t_install_service(d):
    root = make_root(d)
    units = os.path.join(d, "units")
    os.mkdir(units)
    conf = os.path.join(d, "cshttpd.conf")
    with open(conf, "w") as f:
        f.write("root = %s\nport = 8080\naccess_log = /var/log/cshttpd/access.log\n" % root)
    env = dict(os.environ, CSHTTPD_UNIT_DIR=units)
    r = run(ARGS.bin, "--install-service", "--config", conf, env=env)
    assert r.returncode == 0, r.stderr
    unit = os.path.join(units, "cshttpd.service")
    assert "wrote " + unit in r.stdout
    if not os.path.isdir("/run/systemd/system"):
        assert "systemd is not running" in r.stdout, r.stdout
    verify_unit(unit)
    u = unit_settings(unit)
    exe = os.path.realpath(ARGS.bin)
    assert u["ExecStart"] == ["%s --config %s" % (exe, os.path.realpath(conf))], u["ExecStart"]
    # a root under a home folder stays readable (ProtectHome=read-only);
    # the build tree, and so this root, is under /root or /home for a
    # checkout in a home folder
    real = os.path.realpath(root)
    in_home = any(real == h or real.startswith(h + "/") for h in ("/home", "/root")) or \
        real.startswith("/run/user/")
    for k, v in (("DynamicUser", "yes"), ("ProtectSystem", "strict"), ("NoNewPrivileges", "yes"),
                 ("ProtectHome", "read-only" if in_home else "yes"), ("LogsDirectory", "cshttpd")):
        assert u.get(k) == [v], (k, u.get(k))
    assert os.path.realpath(root) in u["ReadOnlyPaths"], u["ReadOnlyPaths"]
    assert "AmbientCapabilities" not in u, "no capability for port 8080"
    assert u["CapabilityBoundingSet"] == [""]
    # a privileged port gets CAP_NET_BIND_SERVICE, and only that; another name
    with open(conf, "w") as f:
        f.write("root = %s\nport = 80\n" % root)
    r = run(ARGS.bin, "--install-service", "--config", conf, "--service-name", "web2",
            "--unit-dir", units)
    assert r.returncode == 0, r.stderr
    unit2 = os.path.join(units, "web2.service")
    verify_unit(unit2)
    u = unit_settings(unit2)
    assert u["AmbientCapabilities"] == ["CAP_NET_BIND_SERVICE"]
    assert u["CapabilityBoundingSet"] == ["CAP_NET_BIND_SERVICE"]
    # refusals: no config, other options, a bad config, a bad name
    r = run(ARGS.bin, "--install-service", "--unit-dir", units)
    assert r.returncode == 2 and "--config" in r.stderr, r.stderr
    r = run(ARGS.bin, "--install-service", "--config", conf, "--root", root, "--unit-dir", units)
    assert r.returncode == 2 and "only --config" in r.stderr, r.stderr
    with open(os.path.join(d, "bad.conf"), "w") as f:
        f.write("root = /no/such/folder\n")
    r = run(ARGS.bin, "--install-service", "--config", os.path.join(d, "bad.conf"),
            "--service-name", "bad", "--unit-dir", units)
    assert r.returncode == 1 and "/no/such/folder" in r.stderr, r.stderr
    assert not os.path.exists(os.path.join(units, "bad.service"))
    r = run(ARGS.bin, "--install-service", "--config", conf, "--service-name", "a b",
            "--unit-dir", units)
    assert r.returncode == 2 and "service-name" in r.stderr, r.stderr
    # uninstall
    r = run(ARGS.bin, "--uninstall-service", "--service-name", "web2", "--unit-dir", units)
    assert r.returncode == 0 and not os.path.exists(unit2), r.stderr
    r = run(ARGS.bin, "--uninstall-service", env=env)
    assert r.returncode == 0 and not os.path.exists(unit)
    r = run(ARGS.bin, "--uninstall-service", env=env)
    assert r.returncode == 1 and "cshttpd.service" in r.stderr, r.stderr


@test("service")
def t_install_service_paths_and_keys(d):
    """The unit, as systemd reads it (systemd-analyze verify), for the paths
    users have: a folder with '$' (doubled in the command lines, where
    systemd expands variables), a TLS key and certificate only root can
    read (credentials, LoadCredential=, named on the command line), a
    relative root (WorkingDirectory=, the folder it was checked from); a
    path that is not UTF-8 is refused and no unit is written."""
    units = os.path.join(d, "units")
    os.mkdir(units)
    site = os.path.join(d, "si$te")
    os.mkdir(site)
    root = make_root(site)
    cert, key = make_cert(site, "svc")
    os.chmod(cert, 0o600)
    os.chmod(key, 0o600)
    conf = os.path.join(site, "cshttpd.conf")
    with open(conf, "w") as f:
        f.write("root = www\nport = 8080\ntls_cert = %s\ntls_key = %s\ntls_port = 8443\n"
                "access_log = /var/log/cshttpd/access.log\n" % (cert, key))
    r = subprocess.run([ARGS.bin, "--install-service", "--config", conf, "--unit-dir", units],
                       cwd=site, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    unit = os.path.join(units, "cshttpd.service")
    verify_unit(unit)
    u = unit_settings(unit)
    exe = os.path.realpath(ARGS.bin)
    creds = " --tls-cert ${CREDENTIALS_DIRECTORY}/tls_cert --tls-key ${CREDENTIALS_DIRECTORY}/tls_key"
    conf_x = os.path.realpath(conf).replace("$", "$$")
    assert u["ExecStart"] == ["%s --config %s%s" % (exe, conf_x, creds)], u["ExecStart"]
    assert u["ExecStartPre"] == ["%s --check-config --config %s%s" % (exe, conf_x, creds)], \
        u["ExecStartPre"]
    assert u["LoadCredential"] == ["tls_cert:" + os.path.realpath(cert),
                                   "tls_key:" + os.path.realpath(key)], u["LoadCredential"]
    assert u["WorkingDirectory"] == [os.path.realpath(site)], u.get("WorkingDirectory")
    assert os.path.realpath(root) in u["ReadOnlyPaths"], u["ReadOnlyPaths"]
    # TLS files anyone can read (and the folders above them): the unit reads
    # them itself, read-only, so that a reload sees renewed ones
    # (a folder of its own under /tmp, which anyone may enter)
    open_dir = tempfile.mkdtemp(prefix="cshttpd-tls-", dir="/tmp")
    try:
        os.chmod(open_dir, 0o755)
        pair = []
        for f in (cert, key):
            pair.append(os.path.join(open_dir, os.path.basename(f)))
            shutil.copy(f, pair[-1])
            os.chmod(pair[-1], 0o644)
        with open(conf, "w") as f:
            f.write("root = www\nport = 8080\ntls_cert = %s\ntls_key = %s\ntls_port = 8443\n"
                    % tuple(pair))
        r = subprocess.run([ARGS.bin, "--install-service", "--config", conf, "--unit-dir", units,
                            "--service-name", "open"], cwd=site, capture_output=True, text=True,
                           timeout=60)
        assert r.returncode == 0, r.stderr
        u = unit_settings(os.path.join(units, "open.service"))
        assert "LoadCredential" not in u and "CREDENTIALS" not in u["ExecStart"][0], u
        assert pair[1] in u["ReadOnlyPaths"], u["ReadOnlyPaths"]
    finally:
        shutil.rmtree(open_dir, ignore_errors=True)
    # absolute paths only: no working folder
    with open(conf, "w") as f:
        f.write("root = %s\nport = 8080\n" % root)
    r = subprocess.run([ARGS.bin, "--install-service", "--config", conf, "--unit-dir", units,
                        "--service-name", "abs"], cwd=site, capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    u = unit_settings(os.path.join(units, "abs.service"))
    assert "WorkingDirectory" not in u and "LoadCredential" not in u, u
    # a path that is not UTF-8
    bad = os.path.join(os.fsencode(d), b"bad\xff")
    os.mkdir(bad)
    bad_root = make_root(os.fsdecode(bad))
    bad_conf = os.path.join(bad, b"cshttpd.conf")
    with open(bad_conf, "wb") as f:
        f.write(b"root = " + os.fsencode(bad_root) + b"\nport = 8080\n")
    r = subprocess.run([ARGS.bin, "--install-service", "--config", bad_conf, "--unit-dir", units,
                        "--service-name", "bad8"], capture_output=True, timeout=60)
    assert r.returncode == 1 and b"UTF-8" in r.stderr, (r.returncode, r.stderr)
    assert not os.path.exists(os.path.join(units, "bad8.service"))


@test("service")
def t_shipped_unit_verifies(d):
    """The unit in apps/cshttpd verifies too (its binary path made real)."""
    text = open(os.path.join(REPO, "apps", "cshttpd", "cshttpd.service")).read()
    text = text.replace("/usr/local/bin/cshttpd", os.path.realpath(ARGS.bin))
    path = os.path.join(d, "cshttpd.service")
    with open(path, "w") as f:
        f.write(text)
    verify_unit(path)
    assert "--listing" not in text and "--demo" not in text


# ---- MIME types ----

@test("mime")
def t_mime_types(d):
    root = make_root(d)
    for name in ("a.pnm", "b.html", "c.js", "d.weird", "e.ODT", "f.wasm"):
        open(os.path.join(root, name), "w").close()
    types = os.path.join(d, "mime.types")
    with open(types, "w") as f:
        f.write("# local\nimage/x-portable-anymap pnm\napplication/x-evil html js wasm\n"
                "application/vnd.oasis.opendocument.text odt\n")

    def ctype(srv, name):
        r = curl("-o", "/dev/null", "-w", "%{content_type}", srv.url("/" + name))
        return r.stdout.decode()
    with Server("--root", root, "--mime-types", types, "--mime-type", "weird=text/x-weird",
                "--mime-type", "pnm=image/x-mine") as srv:
        assert ctype(srv, "e.ODT") == "application/vnd.oasis.opendocument.text"
        assert ctype(srv, "b.html") == "text/html; charset=utf-8"
        assert ctype(srv, "c.js") == "text/javascript; charset=utf-8"
        assert ctype(srv, "f.wasm") == "application/wasm"
        assert ctype(srv, "d.weird") == "text/x-weird"
        assert ctype(srv, "a.pnm") == "image/x-mine"
    with Server("--root", root, "--mime-types", "none") as srv:
        assert ctype(srv, "e.ODT") == "application/octet-stream"
    if os.path.exists("/etc/mime.types"):  # Debian's media-types
        with Server("--root", root) as srv:
            assert ctype(srv, "e.ODT") == "application/vnd.oasis.opendocument.text"
            assert ctype(srv, "b.html") == "text/html; charset=utf-8"
    r = run(ARGS.bin, "--root", root, "--mime-types", os.path.join(d, "none.types"))
    assert r.returncode == 2 and "none.types" in r.stderr, r.stderr
    r = run(ARGS.bin, "--root", root, "--mime-type", "x=bad type")
    assert r.returncode == 2 and "mime_type" in r.stderr, r.stderr


# ---- the status page in Chromium ----

class Chromium:
    """Headless Chromium driven over --remote-debugging-pipe (the DevTools
    protocol, NUL-separated JSON on fds 3 and 4)."""

    def __init__(self, binary, tmp, extra=()):
        self.r_ours, w_theirs = os.pipe()  # chromium writes fd 4
        r_theirs, self.w_ours = os.pipe()  # chromium reads fd 3
        self.profile = tempfile.mkdtemp(dir=tmp, prefix="chromium-")

        def fds():
            os.dup2(r_theirs, 3)
            os.dup2(w_theirs, 4)
        self.proc = subprocess.Popen(
            [binary, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
             "--no-first-run", "--disable-background-networking", "--disable-component-update",
             "--disable-sync", "--disable-dev-shm-usage", "--user-data-dir=" + self.profile,
             "--remote-debugging-pipe"] + list(extra) + ["about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=open(os.path.join(tmp, "chromium.err"), "w"),
            preexec_fn=fds, close_fds=False)  # fds 3 and 4 stay open
        os.close(r_theirs)
        os.close(w_theirs)
        self.buf = b""
        self.next_id = 0
        self.events = []

    def send(self, method, params=None, session=None):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self.w_ours, json.dumps(msg).encode() + b"\0")
        return self.next_id

    def read(self, timeout):
        end = time.time() + timeout
        while b"\0" not in self.buf:
            left = end - time.time()
            if left <= 0:
                return None
            ready, _, _ = select.select([self.r_ours], [], [], left)
            if ready:
                d = os.read(self.r_ours, 1 << 20)
                if not d:
                    raise AssertionError("chromium closed its pipe")
                self.buf += d
        msg, _, self.buf = self.buf.partition(b"\0")
        return json.loads(msg)

    def call(self, method, params=None, session=None, timeout=30):
        i = self.send(method, params, session)
        end = time.time() + timeout
        while time.time() < end:
            m = self.read(end - time.time())
            if m is None:
                break
            if m.get("id") == i:
                if "error" in m:
                    raise AssertionError("%s: %s" % (method, m["error"]))
                return m.get("result", {})
            self.events.append(m)
        raise AssertionError("no answer to " + method)

    def pump(self, seconds):
        end = time.time() + seconds
        while time.time() < end:
            m = self.read(end - time.time())
            if m is None:
                return
            self.events.append(m)

    def close(self):
        try:
            self.send("Browser.close")
            self.proc.wait(timeout=15)
        except Exception:  # noqa
            self.proc.kill()
            self.proc.wait()
        os.close(self.r_ours)
        os.close(self.w_ours)


def chromium_binary():
    b = ARGS.chromium or shutil.which("chromium") or shutil.which("chromium-browser")
    if not b:
        # install it as a fresh machine would, rather than skip the test
        r = subprocess.run(["bash", os.path.join(REPO, "scripts", "install-deps.sh")],
                           capture_output=True, text=True, timeout=900)
        b = shutil.which("chromium")
        assert b, "chromium could not be installed: %s" % r.stderr[-2000:]
    return b


@test("status")
def t_status_page_in_chromium(d):
    root = make_root(d)
    with Server("--root", root, "--demo") as srv:
        # load over two seconds, so that samples hold requests
        end = time.time() + 2.5
        n = 0
        while time.time() < end:
            with urllib.request.urlopen(srv.url("/demo/plaintext"), timeout=10) as r:
                r.read()
            n += 1
        j = json.loads(curl(srv.url("/status.json")).stdout)
        s = j["series"]
        assert len(s["t_ms"]) >= 2 and max(s["rps"]) > 0, s
        assert all(len(s[k]) == len(s["t_ms"]) for k in ("rps", "p50_ms", "p99_ms", "open",
                                                          "idle", "active"))
        assert j["routes"][0]["path"] == "/demo/plaintext" and j["routes"][0]["requests"] >= n
        assert j["version"] and j["uptime_s"] >= 0 and j["workers_total"] >= 1
        page = curl("-i", srv.url("/status")).stdout.decode()
        # nothing from outside the page
        assert not re.search(r'(src|href)="(https?:)?//', page), "an outside asset"
        assert "Content-Security-Policy: default-src 'none'" in page

        ch = Chromium(chromium_binary(), d)
        try:
            target = ch.call("Target.createTarget", {"url": "about:blank"})["targetId"]
            session = ch.call("Target.attachToTarget", {"targetId": target,
                                                        "flatten": True})["sessionId"]
            for m in ("Runtime.enable", "Log.enable", "Page.enable"):
                ch.call(m, session=session)
            ch.call("Page.navigate", {"url": srv.url("/status")}, session=session)
            # the page fetches its JSON at once, then every 2 s
            ch.pump(4)
            res = ch.call("Runtime.evaluate", {
                "expression": "JSON.stringify({title: document.title, "
                              "lines: [...document.querySelectorAll('svg polyline')].map("
                              "p => p.getAttribute('points').trim().split(' ').length), "
                              "ids: [...document.querySelectorAll('svg polyline')].map("
                              "p => p.closest('svg').id), "
                              "routes: document.getElementById('routes').textContent, "
                              "meta: document.getElementById('meta').textContent, "
                              "feed: document.body.dataset.feed, "
                              "err: document.getElementById('err').textContent})",
                "returnByValue": True}, session=session)
            info = json.loads(res["result"]["value"])
            # Chromium's own WebSocket (it offers permessage-deflate)
            # against the demo's echo (RFC 6455): text, binary and a text
            # message of 200 kB that goes compressed both ways
            echo = ch.call("Runtime.evaluate", {
                "expression": """new Promise((ok, no) => {
                  const ws = new WebSocket('ws://' + location.host + '/demo/ws');
                  ws.binaryType = 'arraybuffer';
                  const big = 'caf\u00e9 '.repeat(40000), got = [];
                  ws.onopen = () => { ws.send('h\u00e9llo'); ws.send(new Uint8Array([0, 1, 255]));
                                      ws.send(big); };
                  ws.onmessage = (m) => {
                    got.push(typeof m.data === 'string' ? m.data
                             : Array.from(new Uint8Array(m.data)).join(','));
                    if (got.length === 3) ws.close(1000, 'done');
                  };
                  ws.onclose = (e) => ok(JSON.stringify({got: [got[0], got[1], got[2] === big],
                      code: e.code, ext: ws.extensions}));
                  ws.onerror = () => no('websocket error');
                  setTimeout(() => no('no echo'), 10000);
                })""",
                "awaitPromise": True, "returnByValue": True}, session=session)
            echo = json.loads(echo["result"]["value"])
            ch.pump(0.5)
        finally:
            ch.close()
        problems = []
        for e in ch.events:
            m, p = e.get("method"), e.get("params", {})
            if m == "Runtime.exceptionThrown":
                problems.append(p)
            elif m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert",
                                                                     "warning"):
                problems.append(p)
            elif m == "Log.entryAdded" and p.get("entry", {}).get("level") in ("error",
                                                                                "warning"):
                problems.append(p)
        assert not problems, "console errors: %r" % problems
        assert info["title"] == "cshttpd status", info
        assert info["err"] == "", info
        # rps, p50 and p99, open idle and active: six lines with points
        assert sorted(set(info["ids"])) == ["chart-conn", "chart-lat", "chart-rps"], info
        assert len(info["lines"]) == 6 and min(info["lines"]) >= 2, info
        assert "/demo/plaintext" in info["routes"] and "version" in info["meta"], info
        # the numbers came over the status page's WebSocket, not the poll
        assert info["feed"] == "socket", info
        assert echo["got"] == ["h\u00e9llo", "0,1,255", True], echo
        assert echo["code"] == 1000 and "permessage-deflate" in echo["ext"], echo


# ---- the README's Deploy section, step by step ----

def readme_blocks():
    """The sh blocks of apps/cshttpd/README.md's Deploy section, in order."""
    text = open(os.path.join(REPO, "apps", "cshttpd", "README.md")).read()
    sec = text.split("\n## Deploy", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```(?:sh|conf)\n(.*?)```", sec, re.S)


@test("deploy")
def t_readme_deploy(d):
    """Runs the Deploy section with its paths moved under a temporary
    folder: /etc -> d/etc, /var/www/html -> d/www, /var/log/cshttpd ->
    d/log, /run -> d/run, systemd's folder -> d/units."""
    blocks = readme_blocks()
    assert len(blocks) >= 4, blocks
    root = make_root(d)
    for sub in ("etc", "log", "run/cshttpd", "units", "etc/logrotate.d"):
        os.makedirs(os.path.join(d, sub), exist_ok=True)
    exe = os.path.realpath(ARGS.bin)

    def local(text):
        return (text.replace("/etc/", d + "/etc/").replace("/var/www/html", root)
                .replace("/var/log/cshttpd", d + "/log").replace("/run/", d + "/run/"))
    conf_text = local(blocks[0])
    port = free_port()
    conf_text = re.sub(r"(?m)^port = \d+", "port = %d" % port, conf_text)
    conf_text = re.sub(r"(?m)^address = .*", "address = 127.0.0.1", conf_text)
    conf = d + "/etc/cshttpd.conf"
    with open(conf, "w") as f:
        f.write(conf_text)
    env = dict(os.environ, CSHTTPD_UNIT_DIR=d + "/units")
    # the other blocks are shell: cshttpd is the binary under test
    steps = []
    for b in blocks[1:]:
        for line in b.splitlines():
            line = line.split("  #")[0].strip()
            if line and not line.startswith("#"):
                steps.append(local(line).replace("cshttpd ", exe + " ", 1)
                             if line.startswith("cshttpd ") else local(line))
    # 1. --check-config
    check = [s for s in steps if "--check-config" in s]
    assert check, steps
    r = subprocess.run(check[0], shell=True, capture_output=True, text=True, env=env, timeout=30)
    assert r.returncode == 0 and "configuration OK" in r.stdout, (check[0], r.stdout, r.stderr)
    # 2. --install-service, then systemd-analyze verify of what it wrote
    inst = [s for s in steps if "--install-service" in s]
    assert inst, steps
    r = subprocess.run(inst[0], shell=True, capture_output=True, text=True, env=env, timeout=30)
    assert r.returncode == 0, (inst[0], r.stderr)
    verify_unit(d + "/units/cshttpd.service")
    # 3. the server as the unit starts it, then logrotate with the README's file
    srv = subprocess.Popen([exe, "--config", conf], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: os.path.exists(d + "/run/cshttpd/cshttpd.pid"), "the pid file")
        url = "http://127.0.0.1:%d/" % port
        assert code(url) == 200
        lr_conf = [b for b in blocks if "postrotate" in b]
        assert lr_conf, "no logrotate file in the README"
        lr = d + "/etc/logrotate.d/cshttpd"
        with open(lr, "w") as f:
            f.write(local(lr_conf[0]))
        logrotate = shutil.which("logrotate") or "/usr/sbin/logrotate"
        assert os.path.exists(logrotate), "logrotate is missing: run scripts/install-deps.sh"
        r = run(logrotate, "--force", "--state", d + "/logrotate.state", lr)
        assert r.returncode == 0, r.stderr
        wait_for(lambda: os.path.exists(d + "/log/access.log"), "a new access log")
        assert code(url + "?after") == 200
        wait_for(lambda: "?after" in open(d + "/log/access.log").read(),
                 "the request after the rotation in the new file")
        rotated = [f for f in os.listdir(d + "/log") if f.startswith("access.log.")]
        assert rotated, os.listdir(d + "/log")
        assert "?after" not in open(d + "/log/" + sorted(rotated)[0]).read()
    finally:
        srv.send_signal(signal.SIGTERM)
        out, err = srv.communicate(timeout=20)
    assert srv.returncode == 0 and "Sanitizer" not in err, err
    # 4. --uninstall-service
    un = [s for s in steps if "--uninstall-service" in s]
    if un:
        r = subprocess.run(un[0], shell=True, capture_output=True, text=True, env=env,
                           timeout=30)
        assert r.returncode == 0, r.stderr


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@test("man")
def t_man_page(d):
    """The man page names every option --help shows, and renders."""
    man = open(os.path.join(REPO, "apps", "cshttpd", "cshttpd.1")).read()
    helptext = run(ARGS.bin, "--help").stdout
    own, _, engine = helptext.partition("engine options")
    def opts(text):
        return sorted(set(re.findall(r"(?m)^\s+(--[a-z0-9-]+)", text)))
    def missing(names):
        return [o for o in names if o.replace("-", "\\-") not in man and o not in man]
    assert len(opts(own)) > 20 and len(opts(engine)) > 10, helptext
    # cshttpd's own options, each described
    assert not missing(opts(own)), "not in cshttpd.1: %s" % missing(opts(own))
    # the engine's grow as the engine does: named, or at least announced
    if missing(opts(engine)):
        print("note: engine options not yet named in cshttpd.1: %s" % missing(opts(engine)))
    assert "listed with their defaults by" in man
    for word in ("SIGUSR1", "SIGHUP", "SIGTERM", "EXIT STATUS", "FILES", "/etc/mime.types"):
        assert word in man, word
    if shutil.which("groff"):
        r = run("groff", "-man", "-Tutf8", "-ww", os.path.join(REPO, "apps", "cshttpd",
                                                                "cshttpd.1"))
        assert r.returncode == 0 and not r.stderr.strip(), r.stderr


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--curl", default=shutil.which("curl") or "curl")
    ap.add_argument("--chromium", default=None)
    ap.add_argument("--group", default=None)
    ap.add_argument("--workdir", default=None,
                    help="temporary files here (not under /tmp: units there get PrivateTmp=no)")
    ARGS = ap.parse_args()
    if ARGS.workdir:
        os.makedirs(ARGS.workdir, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="cshttpd-deploy-", dir=ARGS.workdir)
    try:
        failed = run_groups(TESTS, ARGS.group, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
