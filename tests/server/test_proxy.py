#!/usr/bin/env python3
"""cshttpd as a reverse proxy (--proxy PREFIX=URL) against real origins: a
second cshttpd, nginx (its keep-alive timeout of 1 s shorter than the
proxy's), and a scripted origin (raw sockets) that answers chunked, until
close, slowly, malformed, or twice to one request.

Every wait is bounded; the bounds only end a test that would otherwise
hang. No pass/fail depends on a measured time: a slow origin is one that
never answers within the proxy's timeout, an idle gap is longer than the
origin's keep-alive timeout by a wide margin.

Usage: test_proxy.py --bin cshttpd [--group G] [--nginx nginx]
"""
import argparse
import http.client
import json
import os
import shutil
import select
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_cshttpd as T  # noqa: E402  (its Server, read_response, Sock, make_cert)
import ws_client  # noqa: E402

TESTS = {}
ARGS = None


def test(group):
    def deco(fn):
        TESTS.setdefault(group, []).append(fn)
        return fn
    return deco


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def proxy(tmp, *routes, extra=(), hosts=None):
    """cshttpd proxying `routes` ("PREFIX=URL"), its error log in tmp (a
    pipe nobody reads could fill and block it). hosts: names and their
    address lists for the test resolver ("name=addr,addr;..."), which
    cshttpd then loads (LD_PRELOAD) in place of /etc/hosts."""
    args = []
    for r in routes:
        args += ["--proxy", r]
    env = None
    if hosts is not None:
        env = resolver_env(hosts)
    return T.Server(*args, "--error-log", os.path.join(tmp, "proxy.err"), *extra, env=env)


def resolver_env(hosts):
    """The environment that makes cshttpd resolve `hosts` through
    tests/support/test_resolver.c. Under ASan, a preloaded library comes
    before the sanitizer's runtime: ASan is told not to mind."""
    if not ARGS.resolver:
        raise AssertionError("--resolver (the test resolver's shared object) is needed")
    env = dict(os.environ)
    env["LD_PRELOAD"] = ARGS.resolver
    env["CSHTTP_TEST_HOSTS"] = hosts
    asan = env.get("ASAN_OPTIONS", "")
    env["ASAN_OPTIONS"] = (asan + ":" if asan else "") + "verify_asan_link_order=0"
    return env


def ask(port, raw, method="GET", timeout=20):
    s = T.Sock(socket.create_connection(("127.0.0.1", port), timeout=timeout))
    try:
        s.sendall(raw)
        return T.read_response(s, method)
    finally:
        s.close()


def get(port, path, method="GET", body=None, headers=None, timeout=20):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        c.request(method, path, body=body, headers=headers or {})
        r = c.getresponse()
        data = r.read()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, data
    finally:
        c.close()


def status(srv):
    st, _, body = get(srv.port, "/status.json")
    assert st == 200, st
    return json.loads(body)


def pools(srv):
    return {p["origin"]: p for p in status(srv)["proxy"]}


def run_threads(ts, timeout=60):
    for t in ts:
        t.start()
    for t in ts:
        t.join(timeout)


# ---- a scripted origin ----

class Origin:
    """A raw-socket HTTP/1.1 origin: one thread per connection, keep-alive.
    What it answers depends on the path (see answer()); it records every
    request (method, target, headers, body) and counts connections."""

    def __init__(self, port=0):
        self.ls = socket.socket()
        self.ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.ls.bind(("127.0.0.1", port))
        self.ls.listen(128)
        self.port = self.ls.getsockname()[1]
        self.requests = []
        self.heads = []  # targets, as soon as a request's head is in
        self.connections = 0
        self.lock = threading.Lock()
        self.stopping = False
        self.socks = []
        self.t = threading.Thread(target=self.accept_loop, daemon=True)
        self.t.start()

    def url(self):
        return "http://127.0.0.1:%d" % self.port

    def accept_loop(self):
        while not self.stopping:
            try:
                c, _ = self.ls.accept()
            except OSError:
                return
            with self.lock:
                self.connections += 1
                self.socks.append(c)
                n = self.connections
            threading.Thread(target=self.serve, args=(c, n), daemon=True).start()

    def close(self):
        self.stopping = True
        try:
            self.ls.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.ls.close()
        with self.lock:
            for c in self.socks:
                try:
                    c.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                c.close()

    def read_request(self, c, buf):
        while b"\r\n\r\n" not in buf:
            d = c.recv(65536)
            if not d:
                return None, buf
            buf += d
        head, _, buf = buf.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        method, target, _ = lines[0].split(" ", 2)
        headers = []
        for l in lines[1:]:
            k, _, v = l.partition(":")
            headers.append((k.strip(), v.strip()))
        h = {k.lower(): v for k, v in headers}
        with self.lock:
            self.heads.append(target)
        body = b""
        if "content-length" in h:
            n = int(h["content-length"])
            while len(buf) < n:
                d = c.recv(65536)
                if not d:
                    return None, buf
                buf += d
            body, buf = buf[:n], buf[n:]
        elif h.get("transfer-encoding", "").lower() == "chunked":
            while True:
                while b"\r\n" not in buf:
                    d = c.recv(65536)
                    if not d:
                        return None, buf
                    buf += d
                line, _, buf = buf.partition(b"\r\n")
                size = int(line.split(b";")[0], 16)
                while len(buf) < size + 2:
                    d = c.recv(65536)
                    if not d:
                        return None, buf
                    buf += d
                body += buf[:size]
                buf = buf[size + 2:]
                if size == 0:
                    break
        return {"method": method, "target": target, "headers": headers, "h": h,
                "body": body}, buf

    def serve(self, c, conn_no):
        buf = b""
        try:
            while True:
                rq, buf = self.read_request(c, buf)
                if rq is None:
                    return
                rq["conn"] = conn_no
                with self.lock:
                    self.requests.append(rq)
                if not self.answer(c, rq, conn_no):
                    return
        except OSError:
            pass
        finally:
            c.close()

    def answer(self, c, rq, conn_no):
        """Returns False to close the connection."""
        path = rq["target"].split("?")[0]
        if path.endswith("/chunked"):
            c.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nX-Origin: yes\r\n\r\n"
                      b"5\r\nhello\r\n7\r\n, world\r\n0\r\n\r\n")
        elif path.endswith("/close"):
            c.sendall(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n")
            for i in range(4):
                c.sendall(b"piece %d " % i)
                time.sleep(0.02)
            return False
        elif path.endswith("/malformed"):
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!")
        elif path.endswith("/twice"):
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nfirst"
                      b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nsecond")
        elif path.endswith("/twice-late"):
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nfirst")
            time.sleep(0.3)
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nsecond")
        elif path.endswith("/slowish"):
            time.sleep(0.02)
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        elif path.endswith("/slow"):
            time.sleep(5)
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nlate")
        elif path.endswith("/sized"):
            # 200,000 bytes with Content-Length (more than the proxy's
            # response buffer: streamed), HEAD answered with the same length
            body = bytes(range(256)) * 781 + bytes(64)
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body) +
                      (b"" if rq["method"] == "HEAD" else body))
        elif path.endswith("/redirect"):
            # where an origin that knows only itself sends its clients
            me = "http://127.0.0.1:%d" % self.port
            c.sendall(b"HTTP/1.1 302 Found\r\nLocation: %s/o/next?a=1\r\n"
                      b"Refresh: 3; url=%s/o/refreshed\r\n"
                      b"Content-Length: 0\r\n\r\n" % (me.encode(), me.encode()))
        elif path.endswith("/redirect-away"):
            c.sendall(b"HTTP/1.1 301 Moved\r\nLocation: http://elsewhere.test/x\r\n"
                      b"Refresh: 0; url=http://127.0.0.1:1/o/x\r\nContent-Length: 0\r\n\r\n")
        elif path.endswith("/headers"):
            body = json.dumps(rq["headers"]).encode()
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
        elif path.endswith("/echo"):
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(rq["body"]) +
                      rq["body"])
        else:
            body = b"conn %d %s" % (conn_no, rq["target"].encode())
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n"
                      b"Connection: X-Private\r\nX-Private: hop\r\nKeep-Alive: timeout=9\r\n"
                      b"Set-Cookie: a=1\r\nSet-Cookie: b=2\r\n\r\n" % len(body) + body)
        return True


class EarlyOrigin:
    """An origin that answers as soon as it has a request's head, before
    its body: 413 with a body, then closes (`close`), or stops reading and
    holds the connection open until the test ends (`stall`); or closes
    without a word (`hangup`: the request reached it, and no byte of an
    answer came back). Over TLS when given a certificate and key."""
    BODY = b"too large: this origin takes no more than a head\n" * 20

    def __init__(self, mode, tls=None):
        self.mode = mode
        self.tls = None
        if tls:
            self.tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            self.tls.load_cert_chain(*tls)
        self.ls = socket.socket()
        self.ls.bind(("127.0.0.1", 0))
        self.ls.listen(16)
        self.port = self.ls.getsockname()[1]
        self.heads = 0
        self.held = []
        self.t = threading.Thread(target=self.loop, daemon=True)
        self.t.start()

    def url(self):
        return "%s://127.0.0.1:%d" % ("https" if self.tls else "http", self.port)

    def loop(self):
        while True:
            try:
                c, _ = self.ls.accept()
            except OSError:
                return
            # the answer leaves at once: Nagle would hold it behind the
            # unacknowledged session tickets (TLS), and a close with input
            # unread resets and drops what was not sent
            c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            buf = b""
            try:
                if self.tls:
                    c = self.tls.wrap_socket(c, server_side=True)
                while b"\r\n\r\n" not in buf:
                    d = c.recv(65536)
                    if not d:
                        break
                    buf += d
                self.heads += 1
                if self.mode != "hangup":
                    c.sendall(b"HTTP/1.1 413 Payload Too Large\r\nContent-Type: text/plain\r\n"
                              b"Content-Length: %d\r\nConnection: close\r\n\r\n"
                              % len(self.BODY) + self.BODY)
            except OSError:
                pass
            if self.mode in ("close", "hangup"):
                c.close()  # the unread body makes it a reset
            else:
                self.held.append(c)

    def close(self):
        self.ls.close()
        for c in self.held:
            c.close()


class KeepAliveOrigin:
    """A raw-socket origin, keep-alive, a thread per connection: answer(c,
    head) is called for each request head (requests here have no body)
    and says whether the connection goes on."""

    def __init__(self):
        self.lock = threading.Lock()
        self.ls = socket.socket()
        self.ls.bind(("127.0.0.1", 0))
        self.ls.listen(256)
        self.port = self.ls.getsockname()[1]
        threading.Thread(target=self.loop, daemon=True).start()

    def url(self):
        return "http://127.0.0.1:%d" % self.port

    def loop(self):
        while True:
            try:
                c, _ = self.ls.accept()
            except OSError:
                return
            threading.Thread(target=self.serve, args=(c,), daemon=True).start()

    def serve(self, c):
        buf = b""
        try:
            while True:
                while b"\r\n\r\n" not in buf:
                    d = c.recv(65536)
                    if not d:
                        return
                    buf += d
                head, buf = buf.split(b"\r\n\r\n", 1)
                if not self.answer(c, head):
                    return
        except OSError:
            pass
        finally:
            c.close()

    def close(self):
        self.ls.close()


class ThinkingOrigin(KeepAliveOrigin):
    """An origin that thinks `think` seconds before it answers a path with
    "/think" in it, and notes a request whose connection the proxy closed
    meanwhile (a client that gave up, passed on)."""

    def __init__(self, think):
        self.think = think
        self.heads = 0
        self.thinking = 0  # requests it thought about
        self.given_up = 0  # connections closed by the proxy while thinking
        self.answered = 0
        super().__init__()

    def answer(self, c, head):
        thinks = b"/think" in head
        with self.lock:
            self.heads += 1
            self.thinking += thinks
        r, _, _ = select.select([c], [], [], self.think if thinks else 0)
        if r and not c.recv(1, socket.MSG_PEEK):
            with self.lock:
                self.given_up += 1
            return False
        c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 7\r\n\r\nthought")
        with self.lock:
            self.answered += 1
        return True


def upload_early_answered(port, size):
    """POSTs `size` bytes with Content-Length from one thread while this
    one reads the response: (status, headers, body)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=20)
    data = b"u" * size

    def send():
        try:
            s.sendall(b"POST /early/up HTTP/1.1\r\nHost: a\r\nContent-Length: %d\r\n\r\n"
                      % size + data)
        except OSError:
            pass  # the proxy closed: it had answered
    t = threading.Thread(target=send, daemon=True)
    t.start()
    try:
        st, h, body, _ = T.read_response(T.Sock(s))
    finally:
        s.close()
        t.join(20)
    return st, h, body


# ---- a second cshttpd as the origin ----

@test("cshttpd")
def t_cshttpd_origin(tmp):
    """Static files and the echo of a second cshttpd: the target and the
    prefix as sent, hop-by-hop fields dropped, X-Forwarded-* set, 1 MiB
    down byte for byte, a query and an encoded slash passed as sent, and
    a prefix that does not match a longer segment."""
    with T.Server() as origin, proxy(tmp, "/demo=" + origin.url("/")[:-1],
                                     "/big.bin=http://127.0.0.1:%d" % origin.port) as px:
        st, h, body = get(px.port, "/demo/plaintext")
        assert (st, body) == (200, b"Hello, World!"), (st, body)
        st, h, body = get(px.port, "/big.bin")
        with open(os.path.join(ARGS.root, "big.bin"), "rb") as f:
            want = f.read()
        assert st == 200 and body == want, (st, len(body))
        st, h, body = get(px.port, "/demo/echo?x=%2F&y=1", method="POST", body=b"abc",
                          headers={"Connection": "X-Mine, keep-alive", "X-Mine": "secret",
                                   "Keep-Alive": "timeout=5", "TE": "trailers",
                                   "Proxy-Authorization": "Basic eA==", "Upgrade": "h2c",
                                   "X-Forwarded-For": "10.0.0.1", "X-Forwarded-Proto": "spoof",
                                   "X-Kept": "yes"})
        assert st == 200, st
        doc = json.loads(body)
        assert doc["target"] == "/demo/echo?x=%2F&y=1", doc["target"]
        got = {k.lower(): v for k, v in doc["headers"]}
        for gone in ("x-mine", "keep-alive", "te", "proxy-authorization", "upgrade",
                     "connection"):
            assert gone not in got, (gone, got)
        assert got["x-kept"] == "yes", got
        assert got["x-forwarded-for"] == "10.0.0.1, 127.0.0.1", got
        assert got["x-forwarded-proto"] == "http", got
        assert got["x-forwarded-host"] == "127.0.0.1:%d" % px.port, got
        assert got["host"] == "127.0.0.1:%d" % px.port, got
        assert doc["body"] == "abc", doc
        # "/demo" does not take "/demox": the proxy's own static fallback does
        st, _, _ = get(px.port, "/demox/plaintext")
        assert st == 404, st
        # not proxied at all: the proxy's own status page
        p = pools(px)
        assert p["http://127.0.0.1:%d" % origin.port]["requests"] >= 3, p


@test("cshttpd")
def t_trailers_passed_on(tmp):
    """An origin's trailer fields (RFC 9110 §6.5; a second cshttpd's
    /demo/trailers, as gRPC sends grpc-status) reach the client through
    the proxy, after a small body and after one of 200,000 bytes, over
    HTTP/1.1 (the chunked body's trailer section, RFC 9112 §7.1.2) and
    over h2 (a HEADERS frame after the DATA)."""
    with T.Server() as origin:
        cert, key = T.make_cert(tmp, "px")
        with proxy(tmp, "/demo=" + origin.url("/")[:-1],
                   extra=("--tls-port", "0", "--tls-cert", cert, "--tls-key", key)) as px:
            tls = T.tls_port(px)
            for size in (10, 200000):
                for url, proto in (("http://127.0.0.1:%d" % px.port, "--http1.1"),
                                   ("https://127.0.0.1:%d" % tls, "--http2")):
                    hdr = os.path.join(tmp, "h")
                    r = T.curl("-k", proto, "-D", hdr, "-o", "-",
                               url + "/demo/trailers?grpc-status=0&x-n=%d&size=%d" % (size, size))
                    assert r.returncode == 0, r.stderr
                    with open(hdr, "rb") as f:
                        blocks = f.read().decode("latin-1").split("\r\n\r\n")
                    trailers = [ln for b in blocks[1:] for ln in b.split("\r\n") if ln]
                    assert len(r.stdout) == size and blocks[0].split(" ")[1] == "200", \
                        (proto, size, blocks[0], len(r.stdout))
                    assert trailers == ["grpc-status: 0", "x-n: %d" % size], (proto, size, trailers)


@test("cshttpd")
def t_upload_1mib(tmp):
    """1 MiB up, with Content-Length and chunked, byte for byte (the
    scripted origin echoes the raw body), through a pool of 1. Read whole
    first (the default, nginx's proxy_request_buffering: from the
    temporary file past --body-buffer, with its length, a chunked body
    decoded), and passed on as it comes (--proxy-request-buffering no:
    chunked stays chunked)."""
    o = Origin()
    try:
        for buffering in ("yes", "no"):
            with proxy(tmp, "/up=" + o.url(), extra=("--proxy-pool-size", "1",
                                                     "--proxy-request-buffering", buffering)) as px:
                data = os.urandom(1 << 20)
                st, _, body = get(px.port, "/up/echo", method="POST", body=data)
                assert st == 200 and body == data, (st, len(body))

                def chunks():
                    for i in range(0, len(data), 100000):
                        yield data[i:i + 100000]
                c = http.client.HTTPConnection("127.0.0.1", px.port, timeout=20)
                c.request("PUT", "/up/echo", body=chunks(), encode_chunked=True)
                r = c.getresponse()
                body = r.read()
                c.close()
                assert r.status == 200 and body == data, (r.status, len(body))
                h = o.requests[-1]["h"]
                if buffering == "no":
                    assert h.get("transfer-encoding") == "chunked", o.requests[-1]
                else:
                    assert h.get("content-length") == str(1 << 20) and \
                        "transfer-encoding" not in h, o.requests[-1]
                st = status(px)
                # no thread held for either, read whole or streamed
                # (deferred, never a job)
                assert st["offloaded"] == 0 and st["deferred"] >= 2, st
            assert o.connections == (1 if buffering == "yes" else 2), o.connections
    finally:
        o.close()


@test("cshttpd")
def t_streamed_upload(tmp):
    """The request body is streamed: the origin has the request while the
    client still holds back half of its body; then the whole body arrives
    byte for byte."""
    o = Origin()
    try:
        with proxy(tmp, "/up=" + o.url(), extra=("--proxy-request-buffering", "no")) as px:
            data = os.urandom(200000)
            s = socket.create_connection(("127.0.0.1", px.port), timeout=20)
            s.sendall(b"POST /up/echo HTTP/1.1\r\nHost: a\r\nContent-Length: %d\r\n\r\n"
                      % len(data) + data[:100000])
            deadline = time.time() + 10
            while "/up/echo" not in o.heads and time.time() < deadline:
                time.sleep(0.02)
            assert "/up/echo" in o.heads, "the origin did not get the head before the body ended"
            s.sendall(data[100000:])
            st, _, body, _ = T.read_response(T.Sock(s))
            s.close()
            assert st == 200 and body == data, (st, len(body))
    finally:
        o.close()


@test("cshttpd")
def t_streamed_uploads_hold_no_thread(tmp):
    """Streamed uploads (--proxy-request-buffering no) are relayed on the
    loop, holding no thread: with --max-threads 4, 32 clients each send a
    head and half their body and stop; the origin gets all 32 heads while
    every body is unfinished (one thread per upload would let 4 through
    and queue the rest), the process stays within its threads, and then
    each body goes byte for byte. No upload ran as a job."""
    o = Origin()
    try:
        with proxy(tmp, "/up=" + o.url(), extra=("--proxy-request-buffering", "no",
                                                  "--max-threads", "4", "--loops", "1",
                                                  "--threads", "2",
                                                  "--proxy-pool-size", "64")) as px:
            n = 32
            data = [os.urandom(100000 + 1000 * k) for k in range(n)]
            socks = []
            for k in range(n):
                s = socket.create_connection(("127.0.0.1", px.port), timeout=30)
                s.sendall(b"POST /up/echo?k=%d HTTP/1.1\r\nHost: a\r\nContent-Length: %d\r\n\r\n"
                          % (k, len(data[k])) + data[k][:50000])
                socks.append(s)
            deadline = time.time() + 20
            while time.time() < deadline and \
                    sum(1 for h in list(o.heads) if h.startswith("/up/echo?k=")) < n:
                time.sleep(0.02)
            got = sum(1 for h in list(o.heads) if h.startswith("/up/echo?k="))
            assert got == n, "the origin has %d of %d heads while the bodies wait" % (got, n)
            assert threads_of(px.proc.pid) <= 4 + 2, threads_of(px.proc.pid)
            for k, s in enumerate(socks):
                s.sendall(data[k][50000:])
            for k, s in enumerate(socks):
                st, _, body, _ = T.read_response(T.Sock(s))
                s.close()
                assert st == 200 and body == data[k], (k, st, len(body))
            st = status(px)
            assert st["offloaded"] == 0 and st["deferred"] >= n, st
            # clients that leave halfway: their requests to the origin are
            # given up, the pooled connections closed, none held
            for k in range(8):
                s = socket.create_connection(("127.0.0.1", px.port), timeout=30)
                s.sendall(b"POST /up/echo?gone=%d HTTP/1.1\r\nHost: a\r\n"
                          b"Content-Length: 100000\r\n\r\n" % k + b"z" * 50000)
                socks.append(s)
            deadline = time.time() + 20
            while time.time() < deadline and \
                    sum(1 for h in list(o.heads) if "gone=" in h) < 8:
                time.sleep(0.02)
            for s in socks[n:]:
                s.close()
            pool = lambda: status(px)["proxy"][0]
            wait_until("the uploads given up", lambda: pool()["open"] == pool()["idle"], 20)
            assert not any("gone=" in r["target"] for r in o.requests), o.requests[-1]
    finally:
        o.close()


@test("cshttpd")
def t_streamed_upload_to_a_dead_origin(tmp):
    """A streamed upload (--proxy-request-buffering no) whose origin
    refuses the connection goes to the route's other origin, its body
    read only then (nothing of it was sent anywhere); every upload is
    answered 200 byte for byte, and the dead origin is counted retried."""
    live = Origin()
    try:
        dead = "http://127.0.0.1:%d" % free_port()
        with proxy(tmp, "/up=%s,%s" % (dead, live.url()),
                   extra=("--proxy-request-buffering", "no")) as px:
            for i in range(6):
                data = os.urandom(50000 + i)
                st, _, body = get(px.port, "/up/echo", method="POST", body=data)
                assert st == 200 and body == data, (i, st, len(body))
            s = origin_shares(px, "/up")[dead]
            assert s["failures"] >= 1 and s["retried"] >= 1, s
            err = open(os.path.join(tmp, "proxy.err")).read()
            assert "sent to another origin" in err, err
    finally:
        live.close()


@test("cshttpd")
def t_streamed_upload_limit(tmp):
    """max_request_body holds on the streamed (proxied) path too: a chunked
    upload that crosses 1 MiB is answered 413 as it crosses (the origin
    gets no complete request), a Content-Length one past it before any
    body byte; the origin connection of the cut upload is not reused. One
    at the limit goes through."""
    o = Origin()
    try:
        with proxy(tmp, "/up=" + o.url(), extra=("--max-request-body", "1048576")) as px:
            def chunked(total, piece=65536):
                out = b""
                left = total
                while left:
                    n = min(piece, left)
                    out += b"%x\r\n" % n + b"x" * n + b"\r\n"
                    left -= n
                return out + b"0\r\n\r\n"
            s = socket.create_connection(("127.0.0.1", px.port), timeout=20)
            try:
                s.sendall(b"POST /up/echo HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n")
                body = chunked(2 << 20)
                try:
                    s.sendall(body)
                except OSError:
                    pass  # the proxy stopped reading once it answered
                st, h, _, _ = T.read_response(T.Sock(s))
            finally:
                s.close()
            assert st == 413 and h.get("connection") == "close", (st, h)
            assert not any(r["target"] == "/up/echo" for r in o.requests), \
                "the origin was handed a complete upload past the limit"
            conns = o.connections
            st, _, body = get(px.port, "/up/echo", method="POST", body=b"y" * (1 << 20))
            assert st == 200 and len(body) == 1 << 20, (st, len(body))
            assert o.connections == conns + 1, "the cut upload's origin connection was reused"
            st, _, _ = get(px.port, "/up/echo", method="POST", body=b"y" * ((1 << 20) + 1))
            assert st == 413, st
    finally:
        o.close()


@test("cshttpd")
def t_streamed_upload_rate_window(tmp):
    """A streamed (proxied) upload is held to the minimum body rate over
    windows of body_grace_ms: 200 KB at once and then nothing is answered
    408 within the next window, though its average since the start stays
    above the rate for 200 s."""
    o = Origin()
    try:
        with proxy(tmp, "/up=" + o.url(), extra=("--min-body-rate", "1000", "--body-grace-ms",
                                                  "500", "--read-timeout-ms", "60000")) as px:
            s = socket.create_connection(("127.0.0.1", px.port), timeout=30)
            try:
                s.sendall(b"POST /up/echo HTTP/1.1\r\nHost: a\r\nContent-Length: 10000000\r\n\r\n"
                          + b"x" * 200000)
                t0 = time.time()
                st, _, _, _ = T.read_response(T.Sock(s))
                took = time.time() - t0
            finally:
                s.close()
            assert st == 408, st
            assert took < 10, "cut after %.1f s" % took
    finally:
        o.close()


@test("cshttpd")
def t_expect_continue(tmp):
    """Expect: 100-continue: the client gets 100 before it sends the body,
    then the origin's answer; the origin never sees Expect. A refused
    origin is answered 502 without asking for the body."""
    o = Origin()
    try:
        dead = free_port()
        with proxy(tmp, "/up=" + o.url(), "/dead=http://127.0.0.1:%d" % dead,
                   extra=("--proxy-request-buffering", "no")) as px:
            s = socket.create_connection(("127.0.0.1", px.port), timeout=20)
            s.sendall(b"POST /up/echo HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n"
                      b"Expect: 100-continue\r\n\r\n")
            got = b""
            while b"\r\n\r\n" not in got:
                d = s.recv(4096)
                assert d, got
                got += d
            assert got.startswith(b"HTTP/1.1 100 Continue\r\n"), got
            s.sendall(b"hello")
            sk = T.Sock(s)
            sk._pending = got.partition(b"\r\n\r\n")[2]
            st, _, body, _ = T.read_response(sk)
            s.close()
            assert (st, body) == (200, b"hello"), (st, body)
            assert "expect" not in o.requests[-1]["h"], o.requests[-1]
            st, _, _, head = ask(px.port, b"POST /dead/x HTTP/1.1\r\nHost: a\r\n"
                                 b"Content-Length: 5\r\nExpect: 100-continue\r\n\r\n")
            assert st == 502, (st, head)
            assert b"100 Continue" not in head, head
    finally:
        o.close()


# ---- nginx as the origin ----

NGINX_CONF = """\
worker_processes 1;
{user}
pid {tmp}/nginx.pid;
error_log {tmp}/error.log warn;
events {{ worker_connections 512; }}
http {{
  access_log off;
  {http_extra}
  client_body_temp_path {tmp}/body; proxy_temp_path {tmp}/proxy;
  fastcgi_temp_path {tmp}/fcgi; uwsgi_temp_path {tmp}/uwsgi; scgi_temp_path {tmp}/scgi;
  keepalive_timeout 1s;
  server {{
    listen 127.0.0.1:{port};
    root {root};
    location = /n/hello {{ default_type text/plain; return 200 "hello from nginx"; }}
    {extra}
  }}
}}
"""


def start_nginx(tmp, root, extra="", http_extra=""):
    """nginx serving `root`, with `extra` in its server block and
    `http_extra` in its http block."""
    d = os.path.join(tmp, "nginx")
    os.makedirs(d, exist_ok=True)
    user = "user root;" if os.geteuid() == 0 else ""
    for _ in range(3):
        port = free_port()
        conf = os.path.join(d, "nginx.conf")
        with open(conf, "w") as f:
            f.write(NGINX_CONF.format(user=user, tmp=d, port=port, root=root, extra=extra,
                                      http_extra=http_extra))
        proc = subprocess.Popen([ARGS.nginx, "-p", d, "-c", conf, "-g", "daemon off;"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 10
        while time.time() < deadline and proc.poll() is None:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                return proc, port
            except OSError:
                time.sleep(0.05)
        proc.kill()
        proc.wait()
    raise AssertionError("nginx did not start")


def stop_nginx(proc):
    proc.send_signal(signal.SIGQUIT)
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@test("nginx")
def t_nginx_bodies_nobody_takes(tmp):
    """What nginx does with a body no location reads, beside cshttpd
    (test_cshttpd.py's t_body_no_route_takes checks cshttpd's): a 16 MiB
    POST to a static file with Expect: 100-continue, and without, 20 at
    once, answered from their heads; nginx's temporary files counted the
    same way (its client_body_temp_path)."""
    if not ARGS.nginx:
        print("  (nginx not found: no side-by-side)")
        return
    root = os.path.join(tmp, "nroot-bodies")
    os.makedirs(root, exist_ok=True)
    with open(os.path.join(root, "index.html"), "w") as f:
        f.write("index\n")
    # past its default client_max_body_size (1m) nginx says 413 from the
    # head alone: raised, the answer is the static module's
    ng, nport = start_nginx(tmp, root, "client_max_body_size 64m;")
    try:
        expect = T.upload_answered(nport, "/index.html", 16 << 20, expect=True)
        most, results = [0], []
        ts = [threading.Thread(target=lambda: results.append(
            T.upload_answered(nport, "/index.html", 16 << 20))) for _ in range(20)]
        for t in ts:
            t.start()
        while any(t.is_alive() for t in ts):
            most[0] = max(most[0], T.temp_files_open(ng.pid))
            time.sleep(0.01)
        print("  nginx: Expect: %s; 20 uploads: %s; temporary files at most %d" %
              (expect, sorted(set(results)), most[0]))
        assert expect == (405, False) and set(results) == {(405, False)}, (expect, results)
        assert most[0] == 0, most
    finally:
        stop_nginx(ng)
    # cshttpd, the same, for the record beside it
    with proxy(tmp, "/o=http://127.0.0.1:9") as px:
        expect = T.upload_answered(px.port, "/big.bin", 16 << 20, expect=True)
        print("  cshttpd: Expect: %s" % (expect,))
        assert expect == (405, False), expect


@test("nginx")
def t_nginx_body_limits(tmp):
    """nginx's answer to bodies past its limit on a proxied location,
    beside cshttpd's (t_streamed_upload_limit): client_max_body_size 1m,
    a chunked upload of 2 MiB and one with Content-Length 1 MiB + 1: 413
    both, the origin handed neither."""
    if not ARGS.nginx:
        print("  (nginx not found: no side-by-side)")
        return
    o = Origin()
    root = os.path.join(tmp, "nroot-limits")
    os.makedirs(root, exist_ok=True)
    ng, nport = start_nginx(tmp, root, "client_max_body_size 1m; location /up/ { proxy_pass "
                            "http://127.0.0.1:%d; proxy_http_version 1.1; "
                            "proxy_request_buffering off; }" % o.port)
    try:
        s = socket.create_connection(("127.0.0.1", nport), timeout=20)
        s.sendall(b"POST /up/echo HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n")
        try:
            for _ in range(32):
                s.sendall(b"10000\r\n" + b"x" * 65536 + b"\r\n")
            s.sendall(b"0\r\n\r\n")
        except OSError:
            pass
        chunked, _, _, _ = T.read_response(T.Sock(s))
        s.close()
        length, _, _ = get(nport, "/up/echo", method="POST", body=b"y" * ((1 << 20) + 1))
        print("  nginx: chunked 2 MiB %d, Content-Length 1 MiB + 1 %d; origin handed %d "
              "complete uploads" % (chunked, length,
                                    sum(1 for r in o.requests if r["target"] == "/up/echo")))
        assert chunked == 413 and length == 413, (chunked, length)
    finally:
        stop_nginx(ng)
        o.close()


@test("nginx")
def t_nginx_idle_gaps(tmp):
    """nginx closes idle keep-alive connections after 1 s, the proxy keeps
    them 60 s: bursts of requests after idle gaps of 1.5-2.5 s, every one
    answered 200 (the pool's sweep and the retry rule absorb every close),
    and the pool's counters show connections were opened again."""
    if not ARGS.nginx:
        print("  (nginx not found: skipped)")
        return
    root = os.path.join(tmp, "nroot")
    os.makedirs(os.path.join(root, "n"))
    data = os.urandom(300000)
    with open(os.path.join(root, "n", "file.bin"), "wb") as f:
        f.write(data)
    ng, nport = start_nginx(tmp, root)
    try:
        with proxy(tmp, "/n=http://127.0.0.1:%d" % nport) as px:
            errors = []

            def burst(k):
                try:
                    c = http.client.HTTPConnection("127.0.0.1", px.port, timeout=20)
                    for i in range(5):
                        path = "/n/hello" if (i + k) % 2 else "/n/file.bin"
                        c.request("GET", path)
                        r = c.getresponse()
                        b = r.read()
                        want = b"hello from nginx" if path == "/n/hello" else data
                        if r.status != 200 or b != want:
                            errors.append((path, r.status, len(b)))
                    c.close()
                except Exception as e:  # noqa: BLE001
                    errors.append(repr(e))
            for gap in range(4):
                if gap:
                    time.sleep(1.5 + 0.3 * gap)
                ts = [threading.Thread(target=burst, args=(k,)) for k in range(8)]
                for t in ts:
                    t.start()
                for t in ts:
                    t.join(60)
            assert not errors, errors
            # the pool of the last burst (one whose connections were all
            # closed by the origin and swept is dropped, its counters too)
            p = pools(px)["http://127.0.0.1:%d" % nport]
            assert p["requests"] >= 8 * 5 and p["failures"] == 0, p
            err = open(os.path.join(tmp, "proxy.err")).read()
            assert "[warn]" not in err and "[error]" not in err, err
    finally:
        stop_nginx(ng)


@test("nginx")
def t_nginx_behind_nginx(tmp):
    """HEAD and a conditional GET through the proxy to nginx."""
    if not ARGS.nginx:
        print("  (nginx not found: skipped)")
        return
    root = os.path.join(tmp, "nroot")
    os.makedirs(os.path.join(root, "n"))
    with open(os.path.join(root, "n", "a.txt"), "w") as f:
        f.write("abc\n")
    ng, nport = start_nginx(tmp, root)
    try:
        with proxy(tmp, "/n=http://127.0.0.1:%d" % nport) as px:
            st, h, body = get(px.port, "/n/a.txt")
            assert (st, body) == (200, b"abc\n"), (st, body)
            etag = h["etag"]
            st, h2, body = get(px.port, "/n/a.txt", headers={"If-None-Match": etag})
            assert (st, body) == (304, b""), (st, body)
            st, h3, body = get(px.port, "/n/a.txt", method="HEAD")
            assert (st, body) == (200, b""), (st, body)
            st, h4, body = get(px.port, "/n/missing")
            assert st == 404, st
    finally:
        stop_nginx(ng)


# ---- failing origins ----

# ---- WebSockets through the proxy (RFC 6455 over the switch of RFC 9110 §7.8) ----

def ws_sizes(n, seed):
    """n message sizes from 1 byte to 1 MiB, most of them small (a cube
    of a uniform draw as the exponent), with both ends included."""
    import random
    rnd = random.Random(seed)
    sizes = [1, 1 << 20] + [max(1, int(2 ** (20 * rnd.random() ** 3))) for _ in range(n - 2)]
    rnd.shuffle(sizes)
    return sizes


@test("websocket")
def t_websocket_echo_through_proxy(tmp):
    """10,000 messages of 1 byte to 1 MiB, text and binary, to a
    cshttpd's /demo/ws through cshttpd --proxy and back, byte for byte,
    eight in flight at a time; the 101 carries the origin's
    Sec-WebSocket-Accept for our key; the closing handshake passes both
    ways; the proxy's access log has one 101 line with the tunnel's bytes;
    a request the origin does not switch comes back as HTTP."""
    with T.Server() as origin, \
            proxy(tmp, "/demo=" + origin.url("/")[:-1],
                  extra=("--access-log", os.path.join(tmp, "access.log"),
                         "--access-log-format", "json")) as px:
        ws = ws_client.WS(px.port, "/demo/ws")
        assert ws.status == 101, ws.head
        assert ws.fields.get("upgrade", "").lower() == "websocket", ws.head
        import random
        rnd = random.Random(7)
        sizes = ws_sizes(10000, 1)
        msgs = []
        for i, n in enumerate(sizes):
            if i % 2:
                msg = (b"%d:" % i + bytes(rnd.getrandbits(8) for _ in range(min(n, 64))) *
                       (n // 64 + 1))[:n]
                msgs.append((0x2, msg))
            else:
                msg = (("%d \u00e9 " % i) * (n // 4 + 1)).encode()[:n]
                msgs.append((0x1, msg.decode("utf-8", "ignore").encode()))  # whole code points
        total = sum(len(m) for _, m in msgs)
        zero = b"\0\0\0\0"  # a mask that costs nothing to apply (§5.3 allows any)

        # sent from a thread while this one reads: both ways at once, as
        # fast as the proxy lets each go
        def sender():
            for op, msg in msgs:
                ws.send(op, msg, key=zero)
        t = threading.Thread(target=sender, daemon=True)
        t.start()
        for i, (op, msg) in enumerate(msgs):
            got = ws.recv_message()
            assert got == (op, msg), (i, op, len(msg), got[0], len(got[1]))
        t.join(30)
        ws.send(0x8, struct_close(1000, b"done"))
        op, payload = ws.recv_message()
        assert (op, payload[:2]) == (8, struct_close(1000)), (op, payload)
        with pytest_raises(EOFError):
            ws.recv_frame()
        ws.close()
        print("    %d messages, %d MB each way" % (len(sizes), total >> 20))
        # the access log's line, once the tunnel ended
        deadline = time.time() + 10
        rows = []
        while time.time() < deadline:
            with open(os.path.join(tmp, "access.log")) as f:
                rows = [json.loads(line) for line in f if line.strip()]
            rows = [r for r in rows if r["status"] == 101]
            if rows:
                break
            time.sleep(0.05)
        assert len(rows) == 1 and rows[0]["target"] == "/demo/ws", rows
        assert rows[0]["bytes_in"] > total and rows[0]["bytes_out"] > total, rows
        # not switched by the origin: its answer, as HTTP
        ws = ws_client.WS(px.port, "/demo/plaintext")
        assert ws.status == 200 and ws.buf.startswith(b"Hello"), (ws.head, ws.buf)
        ws.close()


def struct_close(code, reason=b""):
    return bytes([code >> 8, code & 255]) + reason


class pytest_raises:
    """with pytest_raises(E): the block must raise E."""

    def __init__(self, exc):
        self.exc = exc

    def __enter__(self):
        return self

    def __exit__(self, et, ev, tb):
        if et is None:
            raise AssertionError("%s was not raised" % self.exc.__name__)
        return issubclass(et, self.exc)


@test("websocket")
def t_websocket_to_an_https_origin(tmp):
    """A WebSocket through the proxy to an origin on HTTPS: the tunnel's
    bytes go over TLS both ways (messages from 1 byte to 300 kB, several
    TLS records each), pings answered, the closing handshake passed on."""
    cert, key = T.make_cert(tmp, "origin")
    with T.Server("--tls-cert", cert, "--tls-key", key, "--tls-port", "0") as origin, \
            proxy(tmp, "/demo=https://127.0.0.1:%d" % T.tls_port(origin),
                  extra=("--proxy-ca-file", cert)) as px:
        ws = ws_client.WS(px.port, "/demo/ws")
        assert ws.status == 101, ws.head
        for i, n in enumerate((1, 125, 126, 65536, 300000)):
            msg = bytes((i + k) % 251 for k in range(n))
            ws.send(0x2, msg)
            assert ws.recv_message() == (0x2, msg), n
        ws.send(0x9, b"are you there")
        fin, _, op, payload = ws.recv_frame()
        assert (op, payload) == (0xA, b"are you there"), (op, payload)
        ws.send(0x8, struct_close(1000))
        assert ws.recv_message() == (8, struct_close(1000))
        ws.close()


@test("websocket")
def t_websocket_idle_tunnels_hold_no_thread(tmp):
    """1,000 WebSockets tunnelled through the proxy, idle: the proxy's
    threads stay what they were (no thread per tunnel), and every socket
    still echoes afterwards; the origin's close of one reaches its
    client."""
    import resource
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < 8192:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(8192, hard), hard))
    with T.Server(max_fds=8192) as origin, \
            T.Server("--proxy", "/demo=" + origin.url("/")[:-1], "--error-log",
                     os.path.join(tmp, "err"), "--proxy-pool-size", "2048",
                     "--loops", "2", "--threads", "3", max_fds=8192) as px:
        before = threads_of(px.proc.pid)
        socks = []
        for _ in range(1000):
            ws = ws_client.WS(px.port, "/demo/ws")
            assert ws.status == 101, ws.head
            socks.append(ws)
        time.sleep(0.5)
        during = threads_of(px.proc.pid)
        print("    proxy threads: %d before, %d with 1,000 tunnels" % (before, during))
        # min_threads (3) + loops (2) + 4, as with 1,000 proxied exchanges
        assert during <= 9, (before, during)
        st = status(px)
        assert st["tunnels"] == 1000, st["tunnels"]
        for i, ws in enumerate(socks):
            ws.send(0x1, b"still %d" % i)
        for i, ws in enumerate(socks):
            assert ws.recv_message() == (0x1, b"still %d" % i)
        # a close from the client end of one: its close comes back
        ws = socks.pop()
        ws.send(0x8, struct_close(1001))
        assert ws.recv_message() == (8, struct_close(1001))
        for ws in socks:
            ws.close()
        deadline = time.time() + 10
        while time.time() < deadline and status(px)["tunnels"] > 0:
            time.sleep(0.05)
        assert status(px)["tunnels"] == 0


@test("failures")
def t_dead_origin(tmp):
    """Connection refused: 502 at once, every time, with an acquire timeout
    of a minute (a request that waited for it would end the client's 20 s
    bound first), also during the backoff after a refused connect, and
    the pool counts the failures and no acquire timeout; the proxy's own
    routes still answer."""
    dead = free_port()
    with proxy(tmp, "/dead=http://127.0.0.1:%d" % dead,
               extra=("--proxy-acquire-timeout-ms", "60000")) as px:
        for _ in range(3):
            st, _, body = get(px.port, "/dead/x")
            assert st == 502, st
        # a request with a body: refused the same way
        st, _, body = get(px.port, "/dead/x", method="POST", body=b"x" * 100000)
        assert st == 502, st
        st, _, _ = get(px.port, "/demo/plaintext")
        assert st == 200, st
        # an empty pool lives through its backoff: read it right after a
        # refusal (a few tries, for a machine slow enough to outlast one)
        key = "http://127.0.0.1:%d" % dead
        for _ in range(5):
            assert get(px.port, "/dead/x")[0] == 502
            p = pools(px).get(key)
            if p:
                break
        assert p and p["failures"] >= 1 and p["open"] == 0, p
        assert p["acquire_timeouts"] == 0, p


@test("failures")
def t_slow_origin(tmp):
    """An origin that takes 5 s to answer, a proxy timeout of 300 ms: 504;
    the connection is not reused (a late answer would desync it)."""
    o = Origin()
    try:
        with proxy(tmp, "/o=" + o.url(), extra=("--proxy-timeout-ms", "300")) as px:
            st, _, _ = get(px.port, "/o/slow")
            assert st == 504, st
            st, _, body = get(px.port, "/o/fine")
            assert st == 200 and body.endswith(b"/o/fine"), (st, body)
            assert not body.startswith(b"conn 1 "), body
    finally:
        o.close()


class BigOrigin(KeepAliveOrigin):
    """An origin whose /big answers `size` bytes with Content-Length and
    /bigc the same chunked, as fast as its reader takes them; anything
    else a short answer. `sent` counts big answers written to their end."""

    def __init__(self, size):
        self.size = size
        self.body = os.urandom(size)
        self.sent = 0
        super().__init__()

    def answer(self, c, head):
        target = head.split(b" ")[1]
        if target.endswith(b"/bigc"):
            c.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
            for i in range(0, self.size, 65536):
                piece = self.body[i:i + 65536]
                c.sendall(b"%x\r\n" % len(piece) + piece + b"\r\n")
            c.sendall(b"0\r\n\r\n")
        elif target.endswith(b"/big"):
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % self.size + self.body)
        else:
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nsmall")
            return True
        with self.lock:
            self.sent += 1
        return True


def slow_readers(port, n, path):
    """n clients that ask for `path` and read nothing (a small receive
    buffer: the server's sends stall at once)."""
    socks = []
    for _ in range(n):
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.connect(("127.0.0.1", port))
        s.sendall(b"GET %s HTTP/1.1\r\nHost: a\r\n\r\n" % path.encode())
        socks.append(s)
    return socks


def wait_until(what, check, timeout=60):
    """Polls check() until it is true: a liveness bound, not a timing check."""
    deadline = time.time() + timeout
    while True:
        v = check()
        if v:
            return v
        assert time.time() < deadline, what
        time.sleep(0.05)


def ten_others(port):
    """10 other proxied requests, one after another: every status, and the
    slowest's seconds (printed, not checked: timing is the benchmarks')."""
    sts, slowest = [], 0.0
    for i in range(10):
        t0 = time.time()
        st, _, body = get(port, "/o/small%d" % i, timeout=30)
        slowest = max(slowest, time.time() - t0)
        sts.append((st, body))
    return sts, slowest


@test("failures")
def t_slow_readers_hold_no_origin(tmp):
    """100 clients ask for 4 MiB answers (half of them chunked: more than
    the sockets' buffers hold) through the default pool of 32 and read
    nothing. The proxy reads each answer as
    fast as the origin sends it, into a temporary file, and gives the
    connection back; past --proxy-temp-max (64 MiB here) the rest of an
    answer waits for its client on a connection out of the pool's count.
    Other proxied requests are answered all the same, the files stay
    within their cap, and go once the clients are gone. Before, 32 of
    them held the whole pool: the others waited 2 s for a 504. nginx
    (proxy_buffering on, its defaults) side by side."""
    o = BigOrigin(4 << 20)
    try:
        # (a slow build, a loaded machine: the requests that wait for a
        # pooled connection meanwhile wait long enough; the test is about
        # the pool being given back, not how fast)
        with proxy(tmp, "/o=" + o.url(), extra=("--proxy-temp-max", "64m",
                                                "--proxy-acquire-timeout-ms", "30000")) as px:
            socks = slow_readers(px.port, 50, "/o/big") + slow_readers(px.port, 50, "/o/bigc")
            most = [0]

            last = {}

            def settled():
                st = status(px)
                sp = st["proxy_buffering"]
                most[0] = max(most[0], sp["temp_bytes"])
                pool = st["proxy"][0] if st["proxy"] else {"requests": 0}
                last.update(sp, requests=pool["requests"], sent=o.sent)
                return pool["requests"] == 100 and sp["spills"] > 0
            wait_until(("every answer sent for, some past the cap", last), settled)
            sts, slowest = ten_others(px.port)
            assert sts == [(200, b"small")] * 10, sts
            sp = status(px)["proxy_buffering"]
            assert max(most[0], sp["temp_bytes"]) <= 64 << 20, (most, sp)
            print("  cshttpd: 100 slow readers; %d answers past the cap (%d held now); the "
                  "slowest of 10 others %.3f s; files %d MiB at most" %
                  (sp["spills"], sp["held"], slowest, max(most[0], sp["temp_bytes"]) >> 20))
            # the slow readers get every byte, at their pace
            first = socks[0]
            first.settimeout(30)
            st, _, body, _ = T.read_response(T.Sock(first))
            assert st == 200 and body == o.body, (st, len(body))
            for s_ in socks:
                s_.close()
            wait_until("temporary files and held connections let go",
                       lambda: status(px)["proxy_buffering"]["temp_bytes"] == 0 and
                       status(px)["proxy_buffering"]["held"] == 0)
        if not ARGS.nginx:
            print("  (nginx not found: no side-by-side)")
            return
        sent = o.sent
        root = os.path.join(tmp, "nroot-slow")
        os.makedirs(root, exist_ok=True)
        ng, nport = start_nginx(tmp, root, "location /o/ { proxy_pass http://127.0.0.1:%d; "
                                "proxy_http_version 1.1; proxy_set_header Connection \"\"; }"
                                % o.port, http_extra="")
        try:
            socks = slow_readers(nport, 50, "/o/big") + slow_readers(nport, 50, "/o/bigc")
            time.sleep(1)
            sts, slowest = ten_others(nport)
            print("  nginx: 100 slow readers; %d answers read whole by then; the slowest of 10 "
                  "others %.3f s, statuses %s"
                  % (o.sent - sent, slowest, sorted(set(st for st, _ in sts))))
            for s_ in socks:
                s_.close()
        finally:
            stop_nginx(ng)
    finally:
        o.close()


@test("failures")
def t_slow_readers_past_the_bounds(tmp):
    """The same with 16 MiB answers, files of 1 MiB at most, 6 MiB in all,
    and a pool of 8: 12 slow readers buffer what fits, then read the rest
    at their pace
    from connections that left the pool's count (at most --proxy-max-held),
    so other requests still get one; the files never pass 6 MiB."""
    o = BigOrigin(16 << 20)  # more than the sockets' buffers and the file take
    try:
        with proxy(tmp, "/o=" + o.url(),
                   extra=("--proxy-pool-size", "8", "--proxy-max-temp-file-size", "1m",
                          "--proxy-temp-max", "6m", "--proxy-max-held", "16")) as px:
            socks = slow_readers(px.port, 12, "/o/big")
            wait_until("12 answers past their bounds",
                       lambda: status(px)["proxy_buffering"]["held"] == 12)
            sp = status(px)["proxy_buffering"]
            assert sp["temp_bytes"] <= 6 << 20 and sp["spills"] == 12, sp
            assert pools(px)[o.url()]["detached"] == 12, pools(px)
            for i in range(4):
                st, _, body = get(px.port, "/o/small%d" % i, timeout=20)
                assert st == 200 and body == b"small", (st, body)
            for s in socks:
                s.close()
            wait_until("connections and files let go",
                       lambda: status(px)["proxy_buffering"]["held"] == 0 and
                       status(px)["proxy_buffering"]["temp_bytes"] == 0)
    finally:
        o.close()


class PausingOrigin:
    """An origin that sends its answer's head and the first KiB of a
    40,000-byte body, then waits for the test's word (`go`, 10 s at most:
    `waited_out` says it came by the clock) before it sends the rest."""

    def __init__(self):
        self.ls = socket.socket()
        self.ls.bind(("127.0.0.1", 0))
        self.ls.listen(4)
        self.port = self.ls.getsockname()[1]
        self.go = threading.Event()
        self.started = threading.Event()
        self.waited_out = False
        self.body = bytes(range(256)) * 156 + b"x" * 64  # 40,000 bytes
        self.t = threading.Thread(target=self.serve, daemon=True)
        self.t.start()

    def url(self):
        return "http://127.0.0.1:%d" % self.port

    def serve(self):
        c, _ = self.ls.accept()
        c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        buf = b""
        while b"\r\n\r\n" not in buf:
            d = c.recv(65536)
            if not d:
                return
            buf += d
        c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(self.body) +
                  self.body[:1024])
        self.started.set()
        self.waited_out = not self.go.wait(10)
        c.sendall(self.body[1024:])
        time.sleep(0.5)
        c.close()

    def close(self):
        self.ls.close()


@test("cshttpd")
def t_body_longer_than_the_client_buffer(tmp):
    """A response buffer of 64 KiB and an origin's 40,000-byte answer whose
    body stalls after its first KiB: the answer goes out whole (Content-
    Length, one write), but its body is read on a thread of its own, not
    on the loop, which goes on serving a static file meanwhile (one loop:
    the file's request meets the same loop) and is never held (nothing is
    handed over)."""
    o = PausingOrigin()
    try:
        with proxy(tmp, "/o=" + o.url(),
                   extra=("--loops", "1", "--response-buffer", "65536")) as px:
            got = {}

            def fetch():
                got["answer"] = get(px.port, "/o/forty", timeout=30)
            t = threading.Thread(target=fetch)
            t.start()
            assert o.started.wait(10)
            st, _, body = get(px.port, "/big.bin", timeout=30)
            assert st == 200 and len(body) == os.path.getsize(os.path.join(ARGS.root, "big.bin")), \
                (st, len(body))
            o.go.set()
            t.join(30)
            st, h, body = got["answer"]
            assert st == 200 and body == o.body, (st, len(body))
            assert h.get("content-length") == "40000", h
            assert not o.waited_out, "the static file waited for the origin"
            # the loop was never held: no hand-over rescued it
            assert status(px)["handovers"] == 0, status(px)
    finally:
        o.close()


@test("failures")
def t_client_gives_up(tmp):
    """64 clients ask for an answer the origin thinks 8 s about, and close
    after 0.3 s: each request to the origin is given up at once (its
    connection closed while the origin still thinks; those still waiting
    for one of the 8 pooled connections leave the queue), logged 499, as
    nginx does (proxy_ignore_client_abort off). The pool is not pinned: a
    request after them is sent at once."""
    o = ThinkingOrigin(8)
    log = os.path.join(tmp, "access.log")
    try:
        with proxy(tmp, "/o=" + o.url(), extra=("--proxy-pool-size", "8", "--access-log", log,
                                                "--proxy-acquire-timeout-ms", "20000")) as px:
            socks = []
            for _ in range(64):
                s = socket.create_connection(("127.0.0.1", px.port), timeout=20)
                s.sendall(b"GET /o/think HTTP/1.1\r\nHost: a\r\n\r\n")
                socks.append(s)
            deadline = time.time() + 20
            while o.heads < 8:
                assert time.time() < deadline, o.heads
                time.sleep(0.05)
            time.sleep(0.3)
            for s in socks:
                s.close()
            # given up long before the origin's 8 s: the closes are seen
            # while it still thinks (a request still queued may get a
            # connection freed so before its own close is seen: it is
            # given up the same way)
            # (a pool with nothing left in it may be dropped: no waiters)
            while o.given_up < 8 or o.given_up < o.thinking or \
                    pools(px).get(o.url(), {}).get("waiters", 0):
                assert time.time() < deadline and o.answered == 0, \
                    (o.given_up, o.thinking, o.answered)
                time.sleep(0.05)
            # the pool is free: a new request gets a connection at once
            st, _, body = get(px.port, "/o/after", timeout=20)
            assert st == 200 and body == b"thought", (st, body)
            # the origin counts its answer just after sending it
            wait_until("the origin's count", lambda: o.answered == 1)
            assert o.given_up == o.thinking, (o.given_up, o.thinking, o.answered)
        with open(log) as f:
            lines = f.read().splitlines()
        assert sum(1 for l in lines if '"GET /o/think HTTP/1.1" 499 ' in l) == 64, lines
    finally:
        o.close()


class AsyncThinkingOrigin:
    """An origin on asyncio (one thread, any number of connections) that
    thinks `think` seconds before each answer: a POST is answered with the
    length of its body, a GET with a chunked answer in three pieces 50 ms
    apart."""

    def __init__(self, think):
        import asyncio
        self.think = think
        self.heads = 0
        self.loop = asyncio.new_event_loop()
        ready = threading.Event()

        def run():
            asyncio.set_event_loop(self.loop)
            self.srv = self.loop.run_until_complete(
                asyncio.start_server(self.handle, "127.0.0.1", 0, backlog=4096))
            self.port = self.srv.sockets[0].getsockname()[1]
            ready.set()
            self.loop.run_forever()
        threading.Thread(target=run, daemon=True).start()
        ready.wait(10)

    def url(self):
        return "http://127.0.0.1:%d" % self.port

    async def handle(self, r, w):
        import asyncio
        try:
            while True:
                head = await r.readuntil(b"\r\n\r\n")
                self.heads += 1
                n = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        n = int(line.split(b":")[1])
                body = await r.readexactly(n) if n else b""
                await asyncio.sleep(self.think)
                if head.startswith(b"POST"):
                    out = b"got %d" % len(body)
                    w.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(out), out))
                else:
                    w.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
                    for i in range(3):
                        w.write(b"5\r\npart%d\r\n" % i)
                        await w.drain()
                        await asyncio.sleep(0.05)
                    w.write(b"0\r\n\r\n")
                await w.drain()
        except (asyncio.IncompleteReadError, asyncio.CancelledError, ConnectionError, OSError):
            pass
        finally:
            w.close()

    def close(self):
        import asyncio

        async def shutdown():
            self.srv.close()
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        asyncio.run_coroutine_threadsafe(shutdown(), self.loop).result(20)
        self.loop.call_soon_threadsafe(self.loop.stop)


def threads_of(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("Threads:"):
                return int(line.split()[1])
    return 0


def slow_exchanges(port, posts, gets, probes_after, probe_path):
    """`posts` POSTs with 1,000-byte bodies and `gets` GETs at once, each
    on its connection, and, `probes_after` seconds later, 20 static probes
    one after another. Returns (answers: [(status, body)], probe times)."""
    import asyncio

    async def read_answer(r):
        head = await r.readuntil(b"\r\n\r\n")
        st = int(head.split(b" ")[1])
        h = head.lower()
        if b"transfer-encoding: chunked" in h:
            body = b""
            while True:
                size = int((await r.readuntil(b"\r\n")).split(b";")[0].strip(), 16)
                if size == 0:
                    await r.readuntil(b"\r\n")  # the (empty) trailer section's end
                    return st, body
                body += (await r.readexactly(size + 2))[:-2]
        n = int(h.split(b"content-length:")[1].split(b"\r\n")[0])
        return st, await r.readexactly(n)

    async def one(i, post):
        r, w = await asyncio.open_connection("127.0.0.1", port)
        try:
            if post:
                w.write(b"POST /o/p%d HTTP/1.1\r\nHost: a\r\nContent-Length: 1000\r\n\r\n" % i +
                        b"x" * 1000)
            else:
                w.write(b"GET /o/g%d HTTP/1.1\r\nHost: a\r\n\r\n" % i)
            await w.drain()
            return await asyncio.wait_for(read_answer(r), 60)
        finally:
            w.close()

    async def probes():
        await asyncio.sleep(probes_after)
        times = []
        for _ in range(20):
            t0 = time.monotonic()
            r, w = await asyncio.open_connection("127.0.0.1", port)
            w.write(b"GET %s HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n" % probe_path)
            await w.drain()
            st, _ = await read_answer(r)
            times.append(time.monotonic() - t0)
            assert st == 200, st
            w.close()
        return times

    async def main():
        tasks = [one(i, True) for i in range(posts)] + [one(i, False) for i in range(gets)]
        results = await asyncio.gather(probes(), *tasks)
        return results[1:], results[0]
    return asyncio.run(main())


@test("thousand")
def t_thousand_slow_exchanges(tmp):
    """1,000 exchanges at once with an origin that thinks 3 s, through
    cshttpd with a pool large enough that it is not the limit: 800 POSTs
    with 1,000-byte bodies and 200 GETs with chunked answers. Every one is
    answered 200 with its body; static files are answered meanwhile, each
    of 20 probes long before the origin's think time is over (the loops
    are never held by a proxied exchange); and the process never holds
    more threads than min_threads + loops + 4: no thread per exchange,
    whatever its body."""
    import resource
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < 8192:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(8192, hard), hard))
    o = AsyncThinkingOrigin(3)
    root = os.path.join(tmp, "root")
    os.makedirs(root)
    with open(os.path.join(root, "small.txt"), "w") as f:
        f.write("static\n")
    try:
        with T.Server("--proxy", "/o/=" + o.url(), "--error-log", os.path.join(tmp, "err"),
                      "--proxy-pool-size", "1024", "--proxy-acquire-timeout-ms", "20000",
                      "--loops", "2", "--threads", "3", root=root, max_fds=8192) as px:
            most = [0]
            stop = threading.Event()

            def sample():
                while not stop.is_set():
                    most[0] = max(most[0], threads_of(px.proc.pid))
                    time.sleep(0.05)
            t = threading.Thread(target=sample, daemon=True)
            t.start()
            answers, probes = slow_exchanges(px.port, 800, 200, 1.0, b"/small.txt")
            stop.set()
            t.join()
            posts, gets = answers[:800], answers[800:]
            assert all(a == (200, b"got 1000") for a in posts), \
                [a for a in posts if a != (200, b"got 1000")][:5]
            assert all(a == (200, b"part0part1part2") for a in gets), \
                [a for a in gets if a != (200, b"part0part1part2")][:5]
            assert o.heads == 1000, o.heads
            print("    static probes during the load: slowest %.3f s, median %.3f s; "
                  "threads at most %d" % (max(probes), sorted(probes)[10], most[0]))
            # answered while the origin still thought about all of them
            assert max(probes) < 2.0, probes
            # min_threads (3) + loops (2) + 4
            assert most[0] <= 9, most[0]
    finally:
        o.close()


@test("failures")
def t_origin_restarted(tmp):
    """A second cshttpd stopped and started again on the same port while 4
    clients send requests: each answer is the origin's 200 or a 502 (never
    a hang, a broken response or another status), and once the origin is
    back every request succeeds."""
    port = free_port()
    origin = T.Server("--port", str(port))
    try:
        with proxy(tmp, "/demo=http://127.0.0.1:%d" % port) as px:
            stop = threading.Event()
            seen = {}
            bad = []

            def client():
                while not stop.is_set():
                    try:
                        st, _, body = get(px.port, "/demo/plaintext")
                        seen[st] = seen.get(st, 0) + 1
                        if st not in (200, 502) or (st == 200 and body != b"Hello, World!"):
                            bad.append((st, body[:80]))
                    except Exception as e:  # noqa: BLE001
                        bad.append(repr(e))
            ts = [threading.Thread(target=client) for _ in range(4)]
            for t in ts:
                t.start()
            time.sleep(1)
            origin.stop()
            time.sleep(0.5)
            origin = T.Server("--port", str(port))
            time.sleep(1)
            stop.set()
            for t in ts:
                t.join(30)
            assert not bad, bad
            assert seen.get(200, 0) > 0, seen
            for _ in range(20):
                st, _, _ = get(px.port, "/demo/plaintext")
                assert st == 200, (st, seen)
    finally:
        origin.stop()


@test("failures")
def t_origin_answers_early(tmp):
    """An origin that answers 413 as soon as it has the head, while the
    client still uploads 12 MiB (more than the two sockets can buffer: up
    to 4 MiB sent and 128 KiB received here): the client gets the 413 and
    its body, not 502, and the connection is closed after it (its body was
    not read);
    whether the origin closes at once or stops reading and holds on. The
    origin's connection is not reused: the next request opens a new one.
    The same with the origin on HTTPS."""
    cert_key = T.make_cert(tmp, "early")
    for mode, tls, buffering in (("close", None, "no"), ("stall", None, "no"),
                                 ("close", cert_key, "no"), ("stall", cert_key, "no"),
                                 ("close", None, "yes"), ("stall", None, "yes"),
                                 ("close", cert_key, "yes"), ("stall", cert_key, "yes")):
        o = EarlyOrigin(mode, tls)
        try:
            with proxy(tmp, "/early=" + o.url(), extra=("--proxy-insecure",
                                                        "--proxy-request-buffering",
                                                        buffering)) as px:
                for _ in range(2):
                    st, h, body = upload_early_answered(px.port, 12 << 20)
                    assert st == 413 and body == EarlyOrigin.BODY, \
                        (mode, tls, buffering, st, h, body[:200])
                    # passed on as it came, the client's body was cut short
                    # (read whole first, it was all read)
                    assert buffering == "yes" or h.get("connection") == "close", \
                        (mode, tls, h, body[:300])
                # one head per connection: the origin never reads a second
                assert o.heads == 2, (mode, tls, o.heads)
                # no connection reused: each request the pool saw opened its
                # own (the pool, empty, may be dropped by the tick between the
                # two and made anew, with its counts from 0)
                p = pools(px).get(o.url())
                assert p is None or p["opens"] == p["requests"], (mode, tls, p)
        finally:
            o.close()


# ---- framing and smuggling ----

@test("framing")
def t_chunked_and_close(tmp):
    """A chunked response and a close-delimited one, passed on whole; the
    close-delimited connection is not reused; hop-by-hop response fields
    (Connection and what it names, Keep-Alive) are dropped, Set-Cookie
    lines kept."""
    o = Origin()
    try:
        with proxy(tmp, "/o=" + o.url()) as px:
            st, h, body = get(px.port, "/o/chunked")
            assert (st, body, h.get("x-origin")) == (200, b"hello, world", "yes"), (st, body, h)
            st, h, body = get(px.port, "/o/close")
            assert (st, body) == (200, b"piece 0 piece 1 piece 2 piece 3 "), (st, body)
            n = o.connections
            st, h, body = get(px.port, "/o/plain")
            assert st == 200, st
            assert o.connections == n + 1, (o.connections, n)
            assert "x-private" not in h and "keep-alive" not in h, h
            raw = ask(px.port, b"GET /o/plain HTTP/1.1\r\nHost: a\r\n\r\n")[3]
            assert raw.count(b"Set-Cookie:") == 2, raw
            assert raw.count(b"Date:") == 1, raw
    finally:
        o.close()


@test("framing")
def t_content_length_passed_on(tmp):
    """A response with Content-Length reaches the client with the same
    Content-Length and no Transfer-Encoding, whether it fits the proxy's
    response buffer or is streamed, for GET and for HEAD; a chunked one
    stays chunked."""
    o = Origin()
    try:
        with proxy(tmp, "/o=" + o.url()) as px:
            want = bytes(range(256)) * 781 + bytes(64)
            s = T.Sock(socket.create_connection(("127.0.0.1", px.port), timeout=20))
            try:
                for method in ("GET", "HEAD", "GET"):
                    s.sendall(b"%s /o/sized HTTP/1.1\r\nHost: a\r\n\r\n" % method.encode())
                    st, h, body, _ = T.read_response(s, method)
                    assert st == 200, (method, st)
                    assert h.get("content-length") == str(len(want)), (method, h)
                    assert "transfer-encoding" not in h, (method, h)
                    assert body == (want if method == "GET" else b""), (method, len(body))
                    assert h.get("connection") != "close", (method, h)
            finally:
                s.close()
            raw = ask(px.port, b"GET /o/plain HTTP/1.1\r\nHost: a\r\n\r\n")
            assert raw[1].get("content-length") == str(len(raw[2])), raw[:3]
            st, h, body, _ = ask(px.port, b"GET /o/chunked HTTP/1.1\r\nHost: a\r\n\r\n")
            assert h.get("transfer-encoding") == "chunked" and body == b"hello, world", h
    finally:
        o.close()


@test("framing")
def t_malformed_origin(tmp):
    """A response with two Content-Lengths: 502, that connection dropped,
    the next request answered on a new one."""
    o = Origin()
    try:
        with proxy(tmp, "/o=" + o.url()) as px:
            st, _, _ = get(px.port, "/o/malformed")
            assert st == 502, st
            n = o.connections
            st, _, body = get(px.port, "/o/next")
            assert st == 200 and body == b"conn %d /o/next" % (n + 1), (st, body, n)
    finally:
        o.close()


@test("framing")
def t_origin_answers_twice(tmp):
    """An origin that answers twice to one request, at once or a moment
    later: the extra answer is never given to another request; the
    connection is dropped."""
    o = Origin()
    try:
        with proxy(tmp, "/o=" + o.url()) as px:
            st, _, body = get(px.port, "/o/twice")
            assert st in (200, 502) and body != b"second", (st, body)
            for _ in range(3):
                st, _, body = get(px.port, "/o/after")
                assert st == 200 and body.endswith(b"/o/after"), (st, body)
            st, _, body = get(px.port, "/o/twice-late")
            assert (st, body) == (200, b"first"), (st, body)
            time.sleep(0.6)  # the second answer is in the pooled connection
            c = o.connections
            for _ in range(3):
                st, _, body = get(px.port, "/o/after2")
                assert st == 200 and body.endswith(b"/o/after2"), (st, body)
            assert o.connections > c, (o.connections, c)
    finally:
        o.close()


@test("framing")
def t_cl_te_refused(tmp):
    """A client sending Content-Length and Transfer-Encoding (a smuggling
    attempt): 400 from the proxy, nothing reaches the origin, and the
    pooled connection still serves the next request in order."""
    o = Origin()
    try:
        with proxy(tmp, "/o=" + o.url()) as px:
            st, _, _ = get(px.port, "/o/first")
            assert st == 200
            n = len(o.requests)
            st, _, _, _ = ask(px.port, b"POST /o/x HTTP/1.1\r\nHost: a\r\nContent-Length: 35\r\n"
                              b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
                              b"GET /o/smuggled HTTP/1.1\r\nHost: a\r\n\r\n")
            assert st == 400, st
            st, _, body = get(px.port, "/o/second")
            assert st == 200 and body == b"conn 1 /o/second", (st, body)
            assert [r["target"] for r in o.requests[n:]] == ["/o/second"], o.requests[n:]
    finally:
        o.close()


# ---- HTTPS origins ----

@test("tls")
def t_https_origin(tmp):
    """A cshttpd origin on HTTPS with a self-signed certificate: refused
    (502) by default, served with --proxy-ca-file naming it, and with
    --proxy-insecure."""
    cert, key = T.make_cert(tmp, "origin")
    with T.Server("--tls-cert", cert, "--tls-key", key, "--tls-port", "0") as origin:
        tport = T.tls_port(origin)
        url = "/demo=https://127.0.0.1:%d" % tport
        with proxy(tmp, url) as px:
            st, _, _ = get(px.port, "/demo/plaintext")
            assert st == 502, st
            err = open(os.path.join(tmp, "proxy.err")).read()
            assert "certificate" in err, err
        with proxy(tmp, url, extra=("--proxy-ca-file", cert)) as px:
            st, _, body = get(px.port, "/demo/plaintext")
            assert (st, body) == (200, b"Hello, World!"), (st, body)
            st, _, body = get(px.port, "/demo/echo", method="POST", body=b"x" * 100000)
            assert st == 200 and json.loads(body)["body_length"] == 100000, st
        with proxy(tmp, url, extra=("--proxy-insecure",)) as px:
            st, _, body = get(px.port, "/demo/plaintext")
            assert (st, body) == (200, b"Hello, World!"), (st, body)


# ---- a name's addresses ----
#
# The test resolver gives each name the list a case needs, whatever
# /etc/hosts says; the origins listen on 127.0.0.1 alone, as an
# application behind a reverse proxy usually does. A GET waits for its
# connection on cshttpd's loop, a POST with a body on a thread (the
# blocking open): both are asked.

def silent_address():
    """127.0.0.1:port that never answers a connect: a listener whose
    accept queue (of one) is full drops further SYNs. Returns (port,
    sockets to close)."""
    ls = socket.socket()
    ls.bind(("127.0.0.1", 0))
    ls.listen(0)
    parked = socket.create_connection(ls.getsockname(), timeout=5)
    return ls.getsockname()[1], (parked, ls)


def asked_by_loop_and_thread(px, prefix, n=3):
    for i in range(n):
        st, _, body = get(px.port, "%s/get%d" % (prefix, i))
        assert st == 200 and body.endswith(b"/get%d" % i), (st, body)
    st, _, body = get(px.port, prefix + "/post", method="POST", body=b"x" * 100000)
    assert st == 200, (st, body)


@test("names")
def t_name_first_address_refused(tmp):
    """localhost as Debian maps it: ::1 (refused: nothing listens there),
    then 127.0.0.1 (the origin). Every request is answered 200, and the
    pool counts no failure: refused moves on to the next address at once.
    nginx too tries each address of a name."""
    o = Origin()
    try:
        with proxy(tmp, "/o=http://localhost:%d" % o.port,
                   hosts="localhost=::1,127.0.0.1") as px:
            asked_by_loop_and_thread(px, "/o")
            p = pools(px)["http://localhost:%d" % o.port]
            assert p["failures"] == 0 and p["opens"] >= 1, p
    finally:
        o.close()


@test("names")
def t_name_silent_address_first(tmp):
    """An address that never answers, then the origin's: answered 200
    (the next address starts after 250 ms, within the 5 s connect
    timeout that a connect to the first alone would spend)."""
    o = Origin()
    port, socks = silent_address()
    try:
        with proxy(tmp, "/o=http://slow.test:%d" % o.port,
                   hosts="slow.test=127.0.0.1:%d,127.0.0.1" % port) as px:
            asked_by_loop_and_thread(px, "/o")
            p = pools(px)["http://slow.test:%d" % o.port]
            assert p["failures"] == 0, p
    finally:
        o.close()
        for s in socks:
            s.close()


@test("names")
def t_name_slow_lookup(tmp):
    """A name whose look-up takes 2 s, as with a DNS server that answers
    late: the request waits for it without its loop (one loop, and no
    other thread to hand it to in the meantime: grow_after_us of a
    minute; the request's wait for a connection longer than the look-up).
    A static file asked on the same loop meanwhile is answered while the
    proxied request still waits, which is then answered 200.
    nginx's resolver does not hold its worker either."""
    o = Origin()
    try:
        with proxy(tmp, "/o=http://dns.test:%d" % o.port,
                   extra=("--loops", "1", "--grow-after-us", "60000000",
                          "--proxy-acquire-timeout-ms", "20000"),
                   hosts="dns.test=wait:2000,127.0.0.1") as px:
            got = {}

            def slow():
                got["r"] = get(px.port, "/o/late")
            t = threading.Thread(target=slow)
            t.start()
            time.sleep(0.3)  # the request is in, its name being looked up
            st, _, body = get(px.port, "/big.bin")
            waiting = t.is_alive()
            t.join(30)
            assert st == 200 and len(body) == 1 << 20, st
            assert waiting, "the static file was answered only after the look-up ended"
            assert got["r"][0] == 200 and got["r"][2].endswith(b"/o/late"), got
    finally:
        o.close()


@test("names")
def t_stop_with_lookup_in_flight(tmp):
    """A look-up that takes 60 s does not hold the server's stop: SIGTERM
    while a request waits for it, and cshttpd exits 0 (the test's bound is
    20 s); the request is answered first (502 or 504: the stop ends its
    wait), and the origin is never asked."""
    o = Origin()
    try:
        px = proxy(tmp, "/o=http://never.test:%d" % o.port, extra=("--loops", "1"),
                   hosts="never.test=wait:60000,127.0.0.1")
        got = {}

        def waiting():
            try:
                got["r"] = get(px.port, "/o/never", timeout=30)
            except Exception as e:  # noqa: BLE001
                got["r"] = repr(e)
        t = threading.Thread(target=waiting)
        t.start()
        time.sleep(0.3)
        px.proc.send_signal(signal.SIGTERM)
        rc = px.stop()
        t.join(30)
        assert rc == 0, (rc, px.err)
        assert "Sanitizer" not in px.err, px.err
        assert isinstance(got["r"], tuple) and got["r"][0] in (502, 504), got
        assert o.heads == [], o.heads
    finally:
        o.close()


@test("names")
def t_name_every_address_refused(tmp):
    """Both addresses refused: 502 at once with the connect's error in the
    log, GET and POST, and the pool backs off after the open that failed."""
    dead = free_port()
    key = "http://dead.test:%d" % dead
    with proxy(tmp, "/d=" + key, hosts="dead.test=::1,127.0.0.1",
               extra=("--proxy-acquire-timeout-ms", "60000")) as px:
        st, _, _ = get(px.port, "/d/x")
        assert st == 502, st
        st, _, _ = get(px.port, "/d/x", method="POST", body=b"x" * 100000)
        assert st == 502, st
        for _ in range(5):  # the pool is read during its backoff (a few tries)
            assert get(px.port, "/d/x")[0] == 502
            p = pools(px).get(key)
            if p:
                break
        assert p and p["failures"] >= 1 and p["open"] == 0 and p["acquire_timeouts"] == 0, p
    err = open(os.path.join(tmp, "proxy.err")).read()
    assert "could not connect to the origin" in err, err


@test("names")
def t_name_over_tls(tmp):
    """An HTTPS origin (cshttpd) by a name whose first address refuses and
    by one whose first address never answers: the handshake follows the
    connect that won."""
    cert, key = T.make_cert(tmp, "origin")
    port, socks = silent_address()
    try:
        with T.Server("--tls-cert", cert, "--tls-key", key, "--tls-port", "0") as origin:
            tport = T.tls_port(origin)
            hosts = "dual.test=::1,127.0.0.1;slow.test=127.0.0.1:%d,127.0.0.1" % port
            for name in ("dual.test", "slow.test"):
                with proxy(tmp, "/demo=https://%s:%d" % (name, tport), hosts=hosts,
                           extra=("--proxy-insecure",)) as px:
                    st, _, body = get(px.port, "/demo/plaintext")
                    assert (st, body) == (200, b"Hello, World!"), (name, st, body)
                    st, _, body = get(px.port, "/demo/echo", method="POST", body=b"x" * 100000)
                    assert st == 200 and json.loads(body)["body_length"] == 100000, (name, st)
                    p = pools(px)["https://%s:%d" % (name, tport)]
                    assert p["failures"] == 0, p
    finally:
        for s in socks:
            s.close()


# ---- configuration ----

def run_bin(*args, timeout=20):
    return subprocess.run([ARGS.bin] + list(args), capture_output=True, text=True,
                          timeout=timeout)


# ---- paths (RFC 3986 §5.2.4 dot segments; proxy.h, "What the origin receives") ----

# Targets under the prefix /o/ as sent that leave it once their dot
# segments are resolved, under some reading of '%2f'; and an encoded NUL.
LEAVING = ["/o/../admin", "/o/%2e%2e/admin", "/o/%2E%2E/admin", "/o/..%2fadmin",
           "/o/.%2e/admin", "/o/./../admin", "/o/x/../../admin", "/o//../../admin", "/o/%00"]
# Targets that stay (or land) under /o/, and what the origin receives.
STAYING = [("/o/a%2fb", "/o/a%2fb"), ("/o/a%2Fb?x=/../y", "/o/a%2Fb?x=/../y"),
           ("/o/x/../y", "/o/y"), ("/o/./y", "/o/y"), ("/o/%2e/y", "/o/y"),
           ("/o/x/%2e%2e/y", "/o/y"), ("/o/%41%20b", "/o/%41%20b"), ("/x/../o/y", "/o/y")]


def raw_status(port, target):
    r = ask(port, b"GET " + target.encode() + b" HTTP/1.1\r\nHost: a\r\n\r\n")
    return r[0]


@test("paths")
def t_paths_stay_under_their_prefix(tmp):
    """The 9 targets that leave /o/ get 400 and the origin receives
    nothing; the ones that stay are forwarded with their dot segments
    resolved and every %XX (%2f too) as sent. nginx (1.22, proxy_pass
    without a URI) side by side, where installed: the test prints what
    its origin received."""
    origin = Origin()
    try:
        with proxy(tmp, "/o/=" + origin.url()) as px:
            for t in LEAVING:
                st = raw_status(px.port, t)
                assert st == 400, (t, st)
            assert origin.heads == [], origin.heads
            for t, want in STAYING:
                st = raw_status(px.port, t)
                assert st == 200, (t, st)
                assert origin.heads[-1] == want, (t, origin.heads[-1], want)
            log = open(os.path.join(tmp, "proxy.err")).read()
            assert "Sanitizer" not in log, log
    finally:
        origin.close()
    if not ARGS.nginx:
        print("  (nginx not found: no side-by-side)")
        return
    origin = Origin()
    root = os.path.join(tmp, "nroot-paths")
    os.makedirs(root, exist_ok=True)
    ng, nport = start_nginx(tmp, root, "location /o/ { proxy_pass http://127.0.0.1:%d; }"
                            % origin.port)
    try:
        for t in LEAVING + [t for t, _ in STAYING]:
            before = len(origin.heads)
            st = raw_status(nport, t)
            got = origin.heads[before:] if len(origin.heads) > before else ["nothing"]
            print("  nginx %-20s %d, origin got %s" % (t, st, got[0]))
    finally:
        stop_nginx(ng)
        origin.close()


@test("paths")
def t_paths_router_and_static_agree(tmp):
    """The router and the static files read a path by the same rule
    (cshw_path_decode): dot segments resolved, plain or encoded; '..'
    above the root, an encoded '/' and an encoded NUL refused with 400."""
    root = os.path.join(tmp, "paths-root")
    os.makedirs(os.path.join(root, "sub"), exist_ok=True)
    with open(os.path.join(root, "index.html"), "w") as f:
        f.write("index\n")
    with open(os.path.join(root, "sub", "a.txt"), "w") as f:
        f.write("a\n")
    origin = Origin()
    try:
        with T.Server("--proxy", "/o/=" + origin.url(), "--error-log",
                      os.path.join(tmp, "paths.err"), root=root) as srv:
            for t, want in (("/sub/../index.html", b"index\n"), ("/sub/%2e%2e/index.html", b"index\n"),
                            ("/./sub/./a.txt", b"a\n"), ("/sub/x/../a.txt", b"a\n"),
                            ("/demo/x/../plaintext", b"Hello, World!"),
                            ("/demo/%2e/plaintext", b"Hello, World!")):
                r = ask(srv.port, b"GET " + t.encode() + b" HTTP/1.1\r\nHost: a\r\n\r\n")
                assert (r[0], r[2]) == (200, want), (t, r[0], r[2])
            for t in ("/../index.html", "/%2e%2e/index.html", "/sub/..%2findex.html",
                      "/sub%2fa.txt", "/index.html%00", "/demo/../../plaintext"):
                assert raw_status(srv.port, t) == 400, t
            assert origin.heads == [], origin.heads
    finally:
        origin.close()


# ---- several origins per prefix ----

def origin_shares(srv, prefix):
    return {o["origin"]: o for o in status(srv)["proxy_origins"] if o["prefix"] == prefix}


@test("balance")
def t_least_connections_spread(tmp):
    """Three origins (cshttpd, alike) behind one prefix: 300 requests from
    6 clients at once are spread within 20% of a third each (least
    requests in flight, turn by turn among equals), as each origin counts
    them and as the proxy's per-origin counters say. nginx's least_conn
    is the model. Each answer takes 20 ms, so that the requests in flight
    decide, not how fast each origin happens to run on a busy machine
    (under a sanitizer, one origin slower than the others rightly gets
    fewer)."""
    os_ = [T.Server() for _ in range(3)]
    try:
        def served(o):
            return status(o)["requests"]
        urls = ",".join(o.url("/")[:-1] for o in os_)
        with proxy(tmp, "/demo=" + urls) as px:
            before = [served(o) for o in os_]
            errors = []

            def client(k):
                for i in range(50):
                    st, _, body = get(px.port, "/demo/sleep?ms=20")
                    if st != 200 or body != b"slept 20 ms\n":
                        errors.append((k, i, st))
            run_threads([threading.Thread(target=client, args=(k,)) for k in range(6)])
            assert not errors, errors
            # each origin's count, less the look at it (the status request)
            counts = [served(o) - b - 1 for o, b in zip(os_, before)]
            assert sum(counts) == 300, counts
            for c in counts:
                assert 80 <= c <= 120, counts
            print("  cshttpd: 300 requests over 3 origins: %s" % counts)
            shares = origin_shares(px, "/demo")
            for o, c in zip(os_, counts):
                sh = shares[o.url("/")[:-1]]
                assert sh["requests"] == c and sh["active"] == 0, (sh, c)
                assert sh["failures"] == 0 and sh["down_for_ms"] == 0, sh
        if not ARGS.nginx:
            print("  (nginx not found: no side-by-side)")
            return
        # nginx's least_conn on the same origins and load, for the record
        ups = " ".join("server 127.0.0.1:%d;" % o.port for o in os_)
        root = os.path.join(tmp, "nroot-balance")
        os.makedirs(root, exist_ok=True)
        ng, nport = start_nginx(tmp, root, "location /demo/ { proxy_pass http://lc; "
                                "proxy_http_version 1.1; proxy_set_header Connection \"\"; }",
                                http_extra="upstream lc { least_conn; %s keepalive 16; }" % ups)
        try:
            before = [served(o) for o in os_]
            run_threads([threading.Thread(target=lambda: [get(nport, "/demo/plaintext")
                                                          for _ in range(50)])
                         for _ in range(6)])
            print("  nginx least_conn: 300 requests over 3 origins: %s"
                  % [served(o) - b - 1 for o, b in zip(os_, before)])
        finally:
            stop_nginx(ng)
    finally:
        for o in os_:
            o.stop()


@test("balance")
def t_dead_origin_left_out_and_back(tmp):
    """One of three origins dies mid-run: the GETs that meet it are sent to
    another origin (every one answered 200), it is left out for
    fail_timeout after max_fails failures (1), and once it listens again
    and fail_timeout has passed, it gets requests again."""
    os_ = [Origin() for _ in range(3)]
    dead_port = os_[1].port
    try:
        urls = ",".join(o.url() for o in os_)
        with proxy(tmp, "/o=" + urls, extra=("--proxy-fail-timeout-ms", "1500")) as px:
            for i in range(30):
                st, _, _ = get(px.port, "/o/before%d" % i)
                assert st == 200, st
            os_[1].close()
            for i in range(30):
                st, _, body = get(px.port, "/o/during%d" % i)
                assert st == 200, (i, st, body)
            s = origin_shares(px, "/o")[os_[1].url()]
            assert s["failures"] >= 1 and s["retried"] >= 1, s
            assert s["down_for_ms"] > 0, s
            during = len(os_[0].requests) + len(os_[2].requests)
            assert during == 60 - 10, (len(os_[0].requests), len(os_[2].requests))
            err = open(os.path.join(tmp, "proxy.err")).read()
            assert "left out for 1500 ms" in err and "sent to another origin" in err, err
            os_[1] = Origin(port=dead_port)
            time.sleep(1.6)
            for i in range(30):
                st, _, _ = get(px.port, "/o/after%d" % i)
                assert st == 200, st
            assert len(os_[1].requests) >= 5, len(os_[1].requests)
    finally:
        for o in os_:
            o.close()


@test("balance")
def t_retry_rules(tmp):
    """Which failed request goes to another origin, as nginx's
    proxy_next_upstream: one that never reached its origin (refused),
    whatever its method, a POST with its body too; a GET that reached an
    origin which closed without answering; not a POST that reached it
    (answered 502: it may have been acted on). nginx side by side where
    installed: the test prints what it does."""
    live = Origin()
    hang = EarlyOrigin("hangup")
    dead = free_port()  # nothing listens there
    cases = [  # (first origin, method, status, resent to the live one)
        ("http://127.0.0.1:%d" % dead, "POST", 200, True),
        ("http://127.0.0.1:%d" % dead, "GET", 200, True),
        (hang.url(), "GET", 200, True),
        (hang.url(), "POST", 502, False),
    ]
    try:
        for first, method, want, resent in cases:
            # the first request goes to the first origin
            with proxy(tmp, "/o=%s,%s" % (first, live.url())) as px:
                before = len(live.requests)
                st, _, body = get(px.port, "/o/echo", method=method,
                                  body=b"data" if method == "POST" else None)
                assert st == want, (first, method, st)
                assert (len(live.requests) > before) == resent, (first, method, "resent?")
                if resent and method == "POST":
                    assert body == b"data", body  # the whole body went to the other
                s = origin_shares(px, "/o")[first]
                assert s["failures"] == 1 and s["retried"] == (1 if resent else 0), s
        if not ARGS.nginx:
            print("  (nginx not found: no side-by-side)")
            return
        root = os.path.join(tmp, "nroot-retry")
        os.makedirs(root, exist_ok=True)
        for first, method, _, _ in cases:
            ng, nport = start_nginx(
                tmp, root, "location /o/ { proxy_pass http://two; }",
                http_extra="upstream two { server %s; server 127.0.0.1:%d; }"
                % (first[len("http://"):], live.port))
            try:
                before = len(live.requests)
                st, _, _ = get(nport, "/o/echo", method=method,
                               body=b"data" if method == "POST" else None)
                print("  nginx: %s, first origin %s: %d, %s" % (
                    method, "refusing" if first.endswith(":%d" % dead) else "hanging up", st,
                    "sent to the other" if len(live.requests) > before else "not sent again"))
            finally:
                stop_nginx(ng)
    finally:
        live.close()
        hang.close()


# ---- forwarding fields ----

@test("fields")
def t_underscore_fields_dropped(tmp):
    """A request field whose name holds '_' is not passed on (nginx's
    underscores_in_headers off): an origin that reads X_Forwarded_For and
    X-Forwarded-For alike (CGI's HTTP_X_FORWARDED_FOR) would take the
    client's. --proxy-underscores passes them. What is sent, added and
    replaced: X-Forwarded-For extended with the client's address, -Proto
    and -Host set anew, Host and Forwarded as the client sent them."""
    o = Origin()
    try:
        hdrs = {"X_Forwarded_For": "6.6.6.6", "X-Kept": "1", "My_Field": "x",
                "Forwarded": "for=1.2.3.4", "X-Forwarded-Host": "spoof"}
        with proxy(tmp, "/o=" + o.url()) as px:
            st, _, body = get(px.port, "/o/headers", headers=hdrs)
            assert st == 200, st
            got = {k.lower(): v for k, v in json.loads(body)}
            assert "x_forwarded_for" not in got and "my_field" not in got, got
            assert got["x-kept"] == "1", got
            assert got["x-forwarded-for"] == "127.0.0.1", got
            assert got["x-forwarded-proto"] == "http", got
            assert got["x-forwarded-host"] == "127.0.0.1:%d" % px.port, got
            assert got["host"] == "127.0.0.1:%d" % px.port, got
            assert got["forwarded"] == "for=1.2.3.4", got
        with proxy(tmp, "/o=" + o.url(), extra=("--proxy-underscores",)) as px:
            st, _, body = get(px.port, "/o/headers", headers=hdrs)
            got = {k.lower(): v for k, v in json.loads(body)}
            assert got.get("x_forwarded_for") == "6.6.6.6" and got.get("my_field") == "x", got
    finally:
        o.close()


@test("fields")
def t_redirects_name_the_proxy(tmp):
    """A Location or Refresh that names the origin itself names the proxy
    instead, with the client's scheme and Host (nginx's proxy_redirect
    default does the same with a path); one that names another site is
    passed on as sent. nginx side by side, where installed."""
    o = Origin()
    try:
        with proxy(tmp, "/o=" + o.url()) as px:
            st, h, _ = get(px.port, "/o/redirect")
            assert st == 302, st
            me = "http://127.0.0.1:%d" % px.port
            assert h["location"] == me + "/o/next?a=1", h
            assert h["refresh"] == "3; url=%s/o/refreshed" % me, h
            st, h, _ = get(px.port, "/o/redirect-away")
            assert st == 301 and h["location"] == "http://elsewhere.test/x", h
            assert h["refresh"] == "0; url=http://127.0.0.1:1/o/x", h
            # the Host the client sent, not the proxy's address
            st, h, _ = get(px.port, "/o/redirect", headers={"Host": "www.example.test"})
            assert h["location"] == "http://www.example.test/o/next?a=1", h
        if not ARGS.nginx:
            print("  (nginx not found: no side-by-side)")
            return
        root = os.path.join(tmp, "nroot-redirect")
        os.makedirs(root, exist_ok=True)
        ng, nport = start_nginx(tmp, root, "location /o/ { proxy_pass http://127.0.0.1:%d; }"
                                % o.port)
        try:
            st, h, _ = get(nport, "/o/redirect")
            print("  nginx: %d, Location: %s, Refresh: %s" % (st, h.get("location"),
                                                               h.get("refresh")))
        finally:
            stop_nginx(ng)
    finally:
        o.close()


@test("config")
def t_config(tmp):
    """--check-config names a bad prefix or URL; starting with one exits 2;
    the config file takes proxy lines (repeatable) and the pool options;
    --help lists them."""
    root = ["--root", ARGS.root]
    for spec, words in [("api=http://a", "must start with '/'"),
                        ("/api=ftp://a", "is not http:// or https://"),
                        ("/api=http://a/b", "has a path"),
                        ("/api=http://a:0", "port"),
                        ("/api=http://u@a", "user info"),
                        ("/api", "not PREFIX=URL"),
                        ("/a?b=http://a", "prefix")]:
        r = run_bin("--check-config", "--proxy", spec, *root)
        assert r.returncode == 1 and words in r.stderr and spec.split("=")[0] in r.stderr, \
            (spec, r.returncode, r.stderr)
        r = run_bin("--port", "0", "--proxy", spec, *root)
        assert r.returncode == 2 and words in r.stderr, (spec, r.returncode, r.stderr)
    r = run_bin("--check-config", "--proxy", "/a=http://x", "--proxy", "/a=http://y", *root)
    assert r.returncode == 1 and "twice" in r.stderr, r.stderr
    r = run_bin("--check-config", "--proxy-timeout-ms", "soon", *root)
    assert r.returncode == 1 and "proxy_timeout_ms" in r.stderr, r.stderr
    r = run_bin("--check-config", "--proxy-ca-file", os.path.join(tmp, "none.pem"), *root)
    assert r.returncode == 1 and "proxy_ca_file" in r.stderr, r.stderr
    cfg = os.path.join(tmp, "c.conf")
    with open(cfg, "w") as f:
        f.write("root = %s\nproxy = /a=http://127.0.0.1:1\nproxy = /b/=https://[::1]:8443/\n"
                "proxy_timeout_ms = 1000\nproxy_pool_size = 4\nproxy_insecure = yes\n"
                % ARGS.root)
    r = run_bin("--check-config", "--config", cfg)
    assert r.returncode == 0, r.stderr
    assert "proxy /a -> http://127.0.0.1:1" in r.stdout, r.stdout
    assert "proxy /b/ -> https://[::1]:8443" in r.stdout, r.stdout
    r = run_bin("--help")
    for opt in ("--proxy PREFIX=URL", "--proxy-timeout-ms", "--proxy-pool-size",
                "--proxy-ca-file", "--proxy-insecure"):
        assert opt in r.stdout, opt


@test("config")
def t_status_pools(tmp):
    """/status.json lists each origin's pool with its counters; the HTML
    page has the table; without --proxy there is no "proxy" key."""
    o = Origin()
    try:
        with proxy(tmp, "/o=" + o.url()) as px:
            get(px.port, "/o/a")
            p = pools(px)[o.url()]
            for k in ("open", "idle", "waiters", "opens", "failures", "retries",
                      "acquire_wait_p50_us", "acquire_wait_p99_us", "looks"):
                assert k in p, (k, p)
            assert p["opens"] == 1 and p["requests"] == 1, p
            st, _, page = get(px.port, "/status")
            assert b"Proxy pools" in page, page[:200]
        with T.Server() as plain:
            st, _, body = get(plain.port, "/status.json")
            assert "proxy" not in json.loads(body)
    finally:
        o.close()


@test("pool")
def t_pool_waits_hold_no_thread(tmp):
    """A pool of one connection and 6 clients at once: the requests that
    find it taken wait for it in the pool's queue, first in, first out,
    holding no thread (offloaded stays 0, every handler deferred), and each
    is sent by the request that gives the connection back. One connection
    carried them all, and the waits show in the pool's counters."""
    o = Origin()
    try:
        with proxy(tmp, "/o=" + o.url(),
                   extra=("--proxy-pool-size", "1", "--loops", "1")) as px:
            bad = []

            def client(k):
                c = http.client.HTTPConnection("127.0.0.1", px.port, timeout=30)
                try:
                    for i in range(5):
                        c.request("GET", "/o/slowish")
                        r = c.getresponse()
                        body = r.read()
                        if r.status != 200 or body != b"ok":
                            bad.append((k, i, r.status, body[:80]))
                finally:
                    c.close()
            run_threads([threading.Thread(target=client, args=(k,)) for k in range(6)])
            assert not bad, bad
            doc = status(px)
            assert doc["offloaded"] == 0, doc["offloaded"]
            assert doc["deferred"] >= 30, doc["deferred"]
            p = pools(px)[o.url()]
            assert p["opens"] == 1 and o.connections == 1, (p, o.connections)
            assert p["requests"] >= 30 and p["waiters"] == 0, p
            assert p["acquire_wait_p99_us"] >= 10000, p  # behind requests of 20 ms
    finally:
        o.close()


@test("pool")
def t_stop_with_waiters(tmp):
    """A stop whose deadline passes while requests wait in the pool's queue
    (a pool of one connection, held by a request the origin answers in 5 s,
    three more queued with no thread): the queued requests end at the
    forced stop (each connection cut, or a 504), and cshttpd exits 0 soon
    after the deadline, with nothing left behind (under the sanitizers:
    no leak, no race)."""
    o = Origin()
    try:
        with proxy(tmp, "/o=" + o.url(),
                   extra=("--proxy-pool-size", "1", "--loops", "1", "--stop-timeout-ms", "500",
                          "--proxy-acquire-timeout-ms", "30000",
                          "--proxy-timeout-ms", "30000")) as px:
            ended = []

            def client(k):
                try:
                    st, _, _ = get(px.port, "/o/slow", timeout=20)
                    ended.append(st)
                except (OSError, http.client.HTTPException):
                    ended.append("cut")
            ts = [threading.Thread(target=client, args=(k,)) for k in range(4)]
            for t in ts:
                t.start()
            deadline = time.time() + 10
            while pools(px).get(o.url(), {}).get("waiters", 0) < 3:
                assert time.time() < deadline, pools(px)
                time.sleep(0.02)
            t0 = time.time()
            rc = px.stop()
            took = time.time() - t0
            assert rc == 0, (rc, px.err)
            assert took < 4, took
            for t in ts:
                t.join(10)
                assert not t.is_alive()
            assert len(ended) == 4 and all(e in (504, "cut") for e in ended), ended
    finally:
        o.close()


@test("pool")
def t_streamed_answer_on_the_loop(tmp):
    """A response body, small enough for the response buffer or one to
    stream (200,000 bytes with Content-Length, or chunked), is passed on
    from the loop as events, read from the origin without waiting: no
    thread of its own (offloaded stays 0, the loop is never handed over)."""
    o = Origin()
    try:
        with proxy(tmp, "/o=" + o.url(), extra=("--loops", "1")) as px:
            st, _, body = get(px.port, "/o/a")
            assert st == 200 and body.startswith(b"conn "), (st, body)
            st, _, body = get(px.port, "/o/sized")
            assert st == 200 and body == bytes(range(256)) * 781 + bytes(64), (st, len(body))
            st, _, body = get(px.port, "/o/chunked")
            assert st == 200 and body == b"hello, world", (st, body)
            doc = status(px)
            assert doc["offloaded"] == 0 and doc["handovers"] == 0, doc
            assert doc["deferred"] >= 3, doc
    finally:
        o.close()


@test("config")
def t_offload_default(tmp):
    """A proxied request without a body defers its handler and waits for
    its origin on the loop: 8 clients whose origin takes 20 ms are served
    with no thread held (deferred counts them) and no hand-over of theirs,
    a request that finds no idle connection included (its connect is seen
    through on the loop). All on one loop (--loops 1), and the proxied clients go on until the
    blocking one is done: a hand-over needs the held loop to have events,
    and the listener may give a burst of connections to one loop of
    several, the blocking client's to another.
    With --proxy the engine's offload mode is off unless asked for: a
    handler that blocks (/demo/sleep) loses its loop (hand-overs) but the
    loop's next handlers stay on it (offloaded stays 0), so proxied
    requests still defer. offload_ms given explicitly, on the command line
    or in the config file, stands: after a hand-over for a blocked handler
    the loop's handlers run on other threads (offloaded > 0), where a
    proxied request waits in its thread."""
    o = Origin()
    cfg = os.path.join(tmp, "offload.conf")
    with open(cfg, "w") as f:
        f.write("offload_ms = 60000\n")
    try:
        for extra, want_offloaded in (((), False), (("--offload-ms", "60000"), True),
                                      (("--config", cfg), True)):
            # one loop: every connection on the loop the blocked handler
            # holds, whichever loop the listener's wake-up picks
            with proxy(tmp, "/o=" + o.url(), extra=extra + ("--loops", "1")) as px:
                bad = []
                slept = threading.Event()

                def client(path, n, until=None):
                    c = http.client.HTTPConnection("127.0.0.1", px.port, timeout=30)
                    i = 0
                    try:
                        # the proxied clients go on while the blocking one
                        # runs, so its loop has events to hand over
                        while i < n or (until and not until.is_set()):
                            c.request("GET", path)
                            r = c.getresponse()
                            body = r.read()
                            if r.status != 200 or (path == "/o/slowish" and body != b"ok"):
                                bad.append((path, r.status))
                            i += 1
                    finally:
                        c.close()
                        if not until:
                            slept.set()
                ts = [threading.Thread(target=client, args=("/o/slowish", 10, slept))
                      for _ in range(8)]
                ts.append(threading.Thread(target=client, args=("/demo/sleep?ms=30", 6)))
                run_threads(ts)
                assert not bad, bad
                doc = status(px)
                assert doc["handovers"] > 0, doc["handovers"]
                assert (doc["offloaded"] > 0) == want_offloaded, (extra, doc["offloaded"],
                                                                  doc["handovers"])
                if not want_offloaded:
                    assert doc["deferred"] >= 64, doc["deferred"]
    finally:
        o.close()


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--curl", default=shutil.which("curl") or "curl")
    ap.add_argument("--nginx", default=shutil.which("nginx") or
                    (os.path.exists("/usr/sbin/nginx") and "/usr/sbin/nginx") or None)
    ap.add_argument("--group", default=None)
    ap.add_argument("--resolver", default=None,
                    help="the test resolver's shared object (tests/support/test_resolver.c)")
    ARGS = ap.parse_args()
    ARGS.tmp = tempfile.mkdtemp(prefix="cshttp-proxy-")
    ARGS.root = os.path.join(ARGS.tmp, "www")
    os.mkdir(ARGS.root)
    with open(os.path.join(ARGS.root, "big.bin"), "wb") as f:
        f.write(os.urandom(1 << 20))
    T.ARGS = ARGS
    try:
        failed = T.run_groups(TESTS, ARGS.group, ARGS.tmp)
    finally:
        shutil.rmtree(ARGS.tmp, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
