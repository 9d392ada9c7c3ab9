#!/usr/bin/env python3
"""One HTTP exchange, driven without blocking, against cshttpd on real
sockets: slow clients beside a fast one, malformed bodies, a log line for
every kind of answer, request checks (RFC 9110/9112), a lingering close,
plain HTTP on the HTTPS port, and a graceful stop within its deadline.

Every wait is bounded; the bounds are generous and only end a test that
would otherwise hang. Usage: test_exchange_live.py --bin cshttpd [--group G]
"""
import argparse
import os
import re
import resource
import select
import shutil
import signal
import socket
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_cshttpd as T  # noqa: E402  (its Server, read_response, Sock, make_cert)

TESTS = {}


def test(group):
    def deco(fn):
        TESTS.setdefault(group, []).append(fn)
        return fn
    return deco


def ask(srv, raw, timeout=10, method="GET"):
    """Sends raw bytes on a new connection and reads one response."""
    s = T.Sock(srv.connect(timeout=timeout))
    try:
        s.sendall(raw)
        return T.read_response(s, method)
    finally:
        s.close()


def small_get(srv, timeout):
    s = T.Sock(srv.connect(timeout=timeout))
    try:
        s.sendall(b"GET /small.txt HTTP/1.1\r\nHost: a\r\n\r\n")
        status, _, body, _ = T.read_response(s)
        return status, body
    finally:
        s.close()


# ---- a slow client never holds a worker ----

@test("slow")
def t_slow_clients(_):
    """300 clients that do not read a 5 MB file and 300 that send a
    60,000-byte body at about 1 KB/s (above min_body_rate), with 8 workers
    at most: 20 fresh requests for a 6-byte file are all answered. Before
    the exchange was driven without blocking, none was."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 4096), hard))
    srv = T.Server("--max-threads", "8", "--min-threads", "2")
    readers, posters = [], []
    try:
        for _ in range(300):
            s = socket.create_connection(("127.0.0.1", srv.port), timeout=10)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            s.sendall(b"GET /big5.bin HTTP/1.1\r\nHost: a\r\n\r\n")
            readers.append(s)
        for _ in range(300):
            s = socket.create_connection(("127.0.0.1", srv.port), timeout=10)
            s.sendall(b"POST /demo/echo HTTP/1.1\r\nHost: a\r\nContent-Type: text/plain\r\n"
                      b"Content-Length: 60000\r\n\r\n")
            posters.append(s)
        stop = threading.Event()

        def trickle():
            # about 1 KB/s per poster: 100 bytes ten times a second
            while not stop.is_set():
                for s in posters:
                    try:
                        s.send(b"x" * 100, socket.MSG_DONTWAIT)
                    except OSError:
                        pass
                stop.wait(0.1)
        th = threading.Thread(target=trickle, daemon=True)
        th.start()
        time.sleep(2)  # every reader's socket is full, every poster is in its body
        answered = 0
        for _ in range(20):
            try:
                status, body = small_get(srv, timeout=5)
                if status == 200 and body == b"hello\n":
                    answered += 1
            except (socket.timeout, OSError, EOFError):
                pass
        stop.set()
        th.join()
        assert answered == 20, "only %d of 20 answered beside slow clients" % answered
    finally:
        for s in readers + posters:
            s.close()
        srv.stop()


# ---- a body that failed is never answered 2xx ----

MALFORMED_CHUNKED = [
    b"-5\r\nhello\r\n0\r\n\r\n", b"0x0\r\n\r\n", b"+5\r\nhello\r\n0\r\n\r\n",
    b"5\r\nhello0\r\n\r\n", b"5\r\nhelloXX0\r\n\r\n", b"zz\r\nhello\r\n0\r\n\r\n",
    b" 5\r\nhello\r\n0\r\n\r\n", b"5 \r\nhello\r\n0\r\n\r\n", b"5\rhello\r\n0\r\n\r\n",
    b"5\nhello\r\n0\r\n\r\n", b"5\r\nhello\r0\r\n\r\n", b"5\r\nhello\n0\r\n\r\n",
    b"\r\n5\r\nhello\r\n0\r\n\r\n", b"5;\r\nhello\r\n0\r\n\r\n", b"5;a=\"b\r\nhello\r\n0\r\n\r\n",
    b"5;=x\r\nhello\r\n0\r\n\r\n", b"5\x00\r\nhello\r\n0\r\n\r\n", b"0\r\nBad Trailer\r\n\r\n",
    b"0\r\nX: a\rb\r\n\r\n", b"0\r\n: v\r\n\r\n", b"0\r\nX : v\r\n\r\n",
    b"0\r\n X: v\r\n\r\n", b"1_0\r\n" + b"x" * 16 + b"\r\n0\r\n\r\n",
    b"0\r\n\r\r\n", b"0\r\n\n\r\n",
    b"g\r\nhello\r\n0\r\n\r\n", b"5\r\n\r\nhello0\r\n\r\n", b"0.5\r\nhello\r\n0\r\n\r\n",
    b"5\r\nhell\r\n0\r\n\r\n", b"5\r\nhelloo\r\n0\r\n\r\n", b";\r\nhello\r\n0\r\n\r\n",
    b"0\r\nX: \x01\r\n\r\n",
]


@test("bodies")
def t_malformed_bodies(_):
    srv = T.Server()
    try:
        for body in MALFORMED_CHUNKED:
            raw = (b"POST /demo/echo HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
                   + body)
            try:
                status, headers, _, _ = ask(srv, raw, timeout=10)
            except EOFError:
                raise AssertionError("no answer to %r" % body)
            assert status == 400, "%r answered %d" % (body, status)
            assert headers.get("connection") == "close", body
        # a chunk size past 63 bits: 413
        status, _, _, _ = ask(srv, b"POST /demo/echo HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: "
                              b"chunked\r\n\r\nfffffffffffffffffff\r\n")
        assert status == 413, status
        # RFC 9110 §15.5.14: a Content-Length past max_request_body is
        # refused before any body byte (nginx: client_max_body_size)
        status, _, _, _ = ask(srv, b"POST /demo/echo HTTP/1.1\r\nHost: a\r\n"
                              b"Content-Length: 4294967301\r\n\r\n", timeout=5)
        assert status == 413, status
        # a good chunked body still works, and the connection goes on
        s = T.Sock(srv.connect())
        s.sendall(b"POST /demo/echo HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
                  b"5\r\nhello\r\n0\r\n\r\nGET /small.txt HTTP/1.1\r\nHost: a\r\n\r\n")
        status, _, body, _ = T.read_response(s)
        assert status == 200 and b"hello" in body, (status, body)
        status, _, body, _ = T.read_response(s)
        assert status == 200 and body == b"hello\n"
        s.close()
    finally:
        srv.stop()


# ---- request checks with the status the RFCs name ----

CHECKS = [
    (b"GET /small.txt HTTP/1.1\r\nHost: a:b1\r\n\r\n", 400),           # RFC 9110 §7.2
    (b"GET /small.txt HTTP/1.1\r\nHost: [::1\r\n\r\n", 400),           # RFC 3986 §3.2.2
    (b"GET http:///x HTTP/1.1\r\nHost: a\r\n\r\n", 400),               # RFC 9112 §3.2.2
    (b"GET http://user@host/x HTTP/1.1\r\nHost: a\r\n\r\n", 400),      # RFC 9110 §4.2.4
    (b"GET /small.txt#f HTTP/1.1\r\nHost: a\r\n\r\n", 400),            # RFC 9112 §3.2
    (b"GET /a%zz HTTP/1.1\r\nHost: a\r\n\r\n", 400),                   # RFC 3986 §2.1
    (b"POST /demo/echo HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"
     b"0\r\n\r\n", 501),                                                 # RFC 9112 §6.1
    (b"BREW /demo/echo2 HTTP/1.1\r\nHost: a\r\n\r\n", 501),             # RFC 9110 §9.1
    (b"A" * 40 + b" / HTTP/1.1\r\nHost: a\r\n\r\n", 501),              # RFC 9112 §3
    (b"POST /demo/echo HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: , chunked\r\n\r\n"
     b"0\r\n\r\n", 200),                                                 # RFC 9110 §5.6.1
    (b"GET /small.txt HTTP/1.1\r\nHost: [::1]:8080\r\n\r\n", 200),
    (b"GET http://a/small.txt HTTP/1.1\r\nHost: a\r\n\r\n", 200),
]


@test("checks")
def t_request_checks(_):
    srv = T.Server()
    try:
        for raw, want in CHECKS:
            status, _, _, _ = ask(srv, raw)
            assert status == want, "%r: %d, want %d" % (raw, status, want)
    finally:
        srv.stop()


# ---- the access log tells the truth ----

def log_statuses(path):
    with open(path, "rb") as f:
        text = f.read().decode("latin-1")
    return [int(m.group(1)) for m in re.finditer(r'" (\d{3}) ', text)], text


@test("log")
def t_log_every_answer(tmp):
    log = os.path.join(tmp, "access.log")
    srv = T.Server("--access-log", log, "--header-timeout-ms", "600", "--read-timeout-ms", "600",
                   "--max-connections", "3", "--max-start-line", "200",
                   "--max-head", "4096")
    held = []
    try:
        assert ask(srv, b"GET /small.txt HTTP/1.1\r\nHost: a\r\n\r\n")[0] == 200
        assert ask(srv, b"GET / HTTP/1.1\r\nHost: a\r\nBad Header\r\n\r\n")[0] == 400
        assert ask(srv, b"GET /esc%zz HTTP/1.0\r\nHost: a\r\nBad Header\r\n\r\n")[0] == 400
        assert ask(srv, b"GET /" + b"a" * 300 + b" HTTP/1.1\r\nHost: a\r\n\r\n")[0] == 414
        assert ask(srv, b"GET / HTTP/1.1\r\nHost: a\r\nX: " + b"b" * 5000 + b"\r\n\r\n")[0] == 431
        # the toolkit's own 413: more multipart parts than max_form_parts
        parts = b"".join(b"--B\r\nContent-Disposition: form-data; name=\"f%d\"\r\n\r\nv\r\n" % i
                         for i in range(1001)) + b"--B--\r\n"
        st = ask(srv, b"POST /demo/upload HTTP/1.1\r\nHost: a\r\nContent-Type: multipart/form-data;"
                 b" boundary=B\r\nContent-Length: %d\r\n\r\n" % len(parts) + parts)[0]
        assert st == 413, st
        # a head that stops coming: 408 at header_timeout_ms
        s = T.Sock(srv.connect())
        s.sendall(b"GET / HTTP/1.1\r\nHo")
        assert T.read_response(s)[0] == 408
        s.close()
        # a body that stops coming: 408 at read_timeout_ms
        s = T.Sock(srv.connect())
        s.sendall(b"POST /demo/echo HTTP/1.1\r\nHost: a\r\nContent-Length: 10\r\n\r\nabc")
        assert T.read_response(s)[0] == 408
        s.close()
        time.sleep(0.3)
        # beyond max_connections: 503
        for _ in range(3):
            held.append(srv.connect())
        time.sleep(0.3)
        s = T.Sock(srv.connect())
        assert T.read_response(s)[0] == 503
        s.close()
    finally:
        for h in held:
            h.close()
        srv.stop()
    statuses, text = log_statuses(log)
    for want in (200, 400, 414, 431, 413, 408, 503):
        assert want in statuses, "no %d line in the log:\n%s" % (want, text)
    assert statuses.count(408) == 2, text
    assert 200 in statuses and statuses.count(200) == 1, text  # the 413 is not logged 200
    # a head that did not parse: its request line as it came, the protocol
    # named once (combined format's "$request")
    assert '"GET / HTTP/1.1" 400 ' in text, text
    assert '"GET /esc%zz HTTP/1.0" 400 ' in text, text
    assert "HTTP/1.1 HTTP/1." not in text and "HTTP/1.0 HTTP/1." not in text, text


# ---- lingering close ----

@test("linger")
def t_lingering_close(_):
    """An error answer while the client is still sending: the client reads
    the 413, not a reset (nginx's lingering_close)."""
    srv = T.Server()
    try:
        for _ in range(5):
            s = srv.connect(timeout=10)
            s.sendall(b"POST /demo/echo HTTP/1.1\r\nHost: a\r\nContent-Length: 104857600\r\n\r\n")
            # keep sending while the server answers and closes
            chunk = b"y" * 65536
            sent = 0
            s.setblocking(False)
            end = time.time() + 3
            while sent < 512 * 1024 and time.time() < end:
                try:
                    sent += s.send(chunk)
                except BlockingIOError:
                    select.select([], [s], [], 0.05)
                except (BrokenPipeError, ConnectionResetError):
                    break
            s.setblocking(True)
            s.settimeout(10)
            data = b""
            try:
                while b"\r\n\r\n" not in data:
                    d = s.recv(65536)
                    if not d:
                        break
                    data += d
            except ConnectionResetError:
                pass
            s.close()
            assert data.startswith(b"HTTP/1.1 413 "), data[:80]
    finally:
        srv.stop()


# ---- plain HTTP on the HTTPS port ----

@test("tls")
def t_plain_on_tls(tmp):
    cert, key = T.make_cert(tmp, "plain")
    srv = T.Server("--tls-cert", cert, "--tls-key", key, "--tls-port", "0")
    try:
        port = T.tls_port(srv)
        s = T.Sock(socket.create_connection(("127.0.0.1", port), timeout=10))
        s.sendall(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n")
        status, headers, body, _ = T.read_response(s)
        s.close()
        assert status == 400, status
        assert b"HTTPS" in body, body
        assert headers.get("connection") == "close"
        # and TLS still works on it
        r = T.s_client(port, b"GET /small.txt HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
        assert b"hello" in r.stdout, r
        # a 5 MB file over TLS, read slowly: the loop reads the file and
        # encrypts it as the client takes it; the bytes arrive whole
        out = os.path.join(tmp, "big5.bin")
        r = T.curl("--cacert", cert, "--limit-rate", "4M", "-o", out,
                   "https://127.0.0.1:%d/big5.bin" % port)
        assert r.returncode == 0, r.stderr
        with open(out, "rb") as a, open(os.path.join(T.ARGS.root, "big5.bin"), "rb") as b:
            assert a.read() == b.read(), "the file arrived changed" 
    finally:
        srv.stop()


# ---- graceful stop within its deadline ----

@test("stop")
def t_stop_deadline(_):
    """A 10 s handler and a 2 s stop deadline: the client is cut at the
    deadline and the process has exited soon after it (it used to wait for
    the handler: 9.5 s)."""
    srv = T.Server("--stop-timeout-ms", "2000")
    s = srv.connect(timeout=20)
    s.sendall(b"GET /demo/sleep?ms=10000 HTTP/1.1\r\nHost: a\r\n\r\n")
    time.sleep(0.5)
    t0 = time.time()
    srv.proc.send_signal(signal.SIGTERM)
    try:
        srv.proc.wait(timeout=8)
    except Exception:
        srv.proc.kill()
        raise AssertionError("cshttpd still running 8 s after SIGTERM")
    took = time.time() - t0
    s.close()
    assert took < 5, "exited %.1f s after SIGTERM with a 2 s deadline" % took
    srv.stop()


# ---- stress: blocking handlers mixed with quick ones ----

def stress(*server_args):
    """24 clients on keep-alive connections, each 100 requests picked at
    random: a handler that blocks 0-20 ms, plaintext, a POST echoed back
    with a random body (0-3000 bytes), two pipelined requests, and now and
    then a connection given up in the middle of a head. Every response
    must be the right one for its request, and the counters must add up:
    requests answered, connections opened and closed. Returns the server's
    last counters."""
    import json
    import random
    srv = T.Server("--max-threads", "64", *server_args)
    errors, lock = [], threading.Lock()
    counts = {"requests": 0, "connections": 0}

    def client(seed):
        rnd = random.Random(seed)
        done = opened = 0
        kind = 0.0
        s = None
        try:
            for _ in range(100):
                if s is None:
                    s = T.Sock(srv.connect(timeout=30))
                    opened += 1
                kind = rnd.random()
                if kind < 0.05:
                    # given up inside a head: no answer, no request counted
                    a = srv.connect(timeout=30)
                    opened += 1
                    a.sendall(b"GET /demo/plaintext HTTP/1.1\r\nHo")
                    a.close()
                elif kind < 0.45:
                    ms = rnd.randint(0, 20)
                    s.sendall(b"GET /demo/sleep?ms=%d HTTP/1.1\r\nHost: a\r\n\r\n" % ms)
                    st, _, body, _ = T.read_response(s)
                    assert (st, body) == (200, b"slept %d ms\n" % ms), (st, body)
                    done += 1
                elif kind < 0.70:
                    s.sendall(b"GET /demo/plaintext HTTP/1.1\r\nHost: a\r\n\r\n")
                    st, _, body, _ = T.read_response(s)
                    assert (st, body) == (200, b"Hello, World!"), (st, body)
                    done += 1
                elif kind < 0.90:
                    payload = bytes(rnd.choice(b"abcdefghij0123456789") for _ in range(rnd.randint(0, 3000)))
                    s.sendall(b"POST /demo/echo HTTP/1.1\r\nHost: a\r\nContent-Type: text/plain\r\n"
                              b"Content-Length: %d\r\n\r\n" % len(payload) + payload)
                    st, _, body, _ = T.read_response(s)
                    e = json.loads(body)
                    assert st == 200 and e["body_length"] == len(payload), (st, body[:200])
                    assert e["body"].encode() == payload
                    done += 1
                else:
                    s.sendall(b"GET /demo/sleep?ms=1 HTTP/1.1\r\nHost: a\r\n\r\n"
                              b"GET /demo/plaintext HTTP/1.1\r\nHost: a\r\n\r\n")
                    assert T.read_response(s)[2] == b"slept 1 ms\n"
                    assert T.read_response(s)[2] == b"Hello, World!"
                    done += 2
        except Exception as e:  # noqa: BLE001 (reported below, with the seed)
            with lock:
                errors.append("client %d, request kind %.2f: %r" % (seed, kind, e))
        finally:
            if s is not None:
                s.close()
            with lock:
                counts["requests"] += done
                counts["connections"] += opened

    try:
        threads = [threading.Thread(target=client, args=(i,)) for i in range(24)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=240)
        # the server's own view, to tell a lost request from a slow one
        if errors:
            status = ask(srv, b"GET /status.json HTTP/1.1\r\nHost: a\r\n\r\n")[2]
            raise AssertionError((errors[:5], status))
        # every client connection closed: the server holds only ours
        end = time.time() + 20
        while True:
            st, _, body, _ = ask(srv, b"GET /status.json HTTP/1.1\r\nHost: a\r\n\r\n")
            c = json.loads(body)
            if c["connections_open"] == 1 or time.time() > end:
                break
            time.sleep(0.1)
        assert c["connections_open"] == 1, c
        assert c["connections_idle"] == 0 and c["connections_active"] == 1, c
        # the status requests before this one were counted too
        status_asked = c["connections_total"] - counts["connections"]
        assert status_asked >= 1, c
        assert c["requests"] == counts["requests"] + status_asked - 1, (c, counts)
        assert c["err_parse"] == 0 and c["err_io"] == 0, c
        return c
    finally:
        srv.stop()


@test("stress")
def t_stress(_):
    """As it runs by default: the blocking handlers send the loops'
    handlers to other threads (offloaded)."""
    c = stress()
    assert c["loops"] >= 1 and c["offloaded"] > 0, c


@test("stress")
def t_stress_handovers(_):
    """Handlers never sent elsewhere (--offload-ms 0) on one loop: every
    blocking handler with requests waiting behind it costs the loop a
    hand-over to another thread, all the time, and every answer is still
    right."""
    c = stress("--offload-ms", "0", "--loops", "1")
    assert c["loops"] == 1 and c["offloaded"] == 0 and c["handovers"] > 10, c


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--curl", default=shutil.which("curl") or "curl")
    ap.add_argument("--group", default=None)
    args = ap.parse_args()
    args.tmp = tempfile.mkdtemp(prefix="cshttp-exchange-")
    args.root = os.path.join(args.tmp, "www")
    os.mkdir(args.root)
    with open(os.path.join(args.root, "small.txt"), "wb") as f:
        f.write(b"hello\n")
    with open(os.path.join(args.root, "big5.bin"), "wb") as f:
        f.write(os.urandom(5 << 20))
    T.ARGS = args
    try:
        failed = T.run_groups(TESTS, args.group, args.tmp)
    finally:
        shutil.rmtree(args.tmp, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
