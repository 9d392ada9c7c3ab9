#!/usr/bin/env python3
"""The bench/uring servers answer as the A/B needs them to: byte for byte
cshttpd's plaintext, 404 otherwise, pipelining, heads in pieces, bodies
skipped, parse errors answered and closed, peers that go away, responses
larger than the socket buffer, and a clean exit on SIGTERM (under ASan: no
leak). Correctness only; nothing here is timed.

usage: test_servers.py SERVER_BINARY [ARGS...]"""

import re
import signal
import socket
import subprocess
import sys

PLAIN_RE = re.compile(
    rb"HTTP/1\.1 200 OK\r\n"
    rb"Date: (Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d\d (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)"
    rb" \d{4} \d\d:\d\d:\d\d GMT\r\n"
    rb"Content-Type: text/plain\r\n"
    rb"Vary: Accept-Encoding\r\n"
    rb"Content-Length: 13\r\n\r\n")
GET = b"GET /demo/plaintext HTTP/1.1\r\nHost: a\r\n\r\n"
TIMEOUT = 10

failures = []


def check(cond, what):
    print("%s %s" % ("ok  " if cond else "FAIL", what))
    if not cond:
        failures.append(what)


def connect(port):
    s = socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def read_response(s, buf):
    """One response from s (Content-Length framing), after what buf holds;
    returns (status, head, body, rest) or (None, ...) at EOF."""
    while b"\r\n\r\n" not in buf:
        d = s.recv(65536)
        if not d:
            return None, buf, b"", b""
        buf += d
    head, rest = buf.split(b"\r\n\r\n", 1)
    head += b"\r\n\r\n"
    m = re.search(rb"\r\nContent-Length: (\d+)\r\n", head)
    n = int(m.group(1)) if m else 0
    if head.startswith(b"HEAD"):
        n = 0
    while len(rest) < n:
        d = s.recv(65536)
        if not d:
            break
        rest += d
    status = int(head.split(b" ", 2)[1])
    return status, head, rest[:n], rest[n:]


def read_eof(s):
    """True when the server closes the connection (nothing more than b'')."""
    try:
        return s.recv(65536) == b""
    except ConnectionResetError:
        return True


def exchange(port, data):
    s = connect(port)
    s.sendall(data)
    return s


def run(port):
    # The plaintext answer, byte for byte as cshttpd --demo sends it.
    s = exchange(port, GET)
    st, head, body, rest = read_response(s, b"")
    check(st == 200 and PLAIN_RE.fullmatch(head) is not None and body == b"Hello, World!",
          "GET /demo/plaintext: cshttpd's bytes")
    # The connection stays open: a second request on it.
    s.sendall(b"GET /demo/plaintext?x=1 HTTP/1.1\r\nHost: a\r\n\r\n")
    st, head, body, rest = read_response(s, rest)
    check(st == 200 and body == b"Hello, World!", "keep-alive, and a query string")
    s.sendall(b"HEAD /demo/plaintext HTTP/1.1\r\nHost: a\r\n\r\n")
    buf = b""
    while b"\r\n\r\n" not in buf:
        buf += s.recv(65536)
    check(PLAIN_RE.fullmatch(buf) is not None, "HEAD: the same head, no body")
    s.sendall(b"GET /nope HTTP/1.1\r\nHost: a\r\n\r\n")
    st, head, body, rest = read_response(s, b"")
    check(st == 404 and b"Connection" not in head, "another path: 404, kept alive")
    s.close()

    # Pipelined requests in one write, answered in order.
    s = exchange(port, GET + b"GET /x HTTP/1.1\r\nHost: a\r\n\r\n" + GET)
    got, rest = [], b""
    for _ in range(3):
        st, head, body, rest = read_response(s, rest)
        got.append(st)
    check(got == [200, 404, 200], "three pipelined requests: 200 404 200 (got %s)" % got)
    s.close()

    # A head in pieces: one byte per write, then split inside a field.
    s = connect(port)
    for i in range(len(GET)):
        s.send(GET[i:i + 1])
    st, head, body, rest = read_response(s, b"")
    check(st == 200 and body == b"Hello, World!", "a head sent one byte at a time")
    s.send(GET[:20])
    s.send(GET[20:] + GET[:7])
    s.send(GET[7:])
    got, rest = [], b""
    for _ in range(2):
        st, head, body, rest = read_response(s, rest)
        got.append(st)
    check(got == [200, 200], "heads split across writes, one ending inside the next")
    s.close()

    # A body of Content-Length bytes is skipped; the next request follows it.
    s = exchange(port, b"POST /demo/plaintext HTTP/1.1\r\nHost: a\r\nContent-Length: 10\r\n\r\n"
                 b"0123456789" + GET)
    st1, _, _, rest = read_response(s, b"")
    st2, _, body, rest = read_response(s, rest)
    check(st1 == 404 and st2 == 200 and body == b"Hello, World!",
          "a POST body skipped, the pipelined GET after it answered")
    s.close()

    # Parse errors: their status, Connection: close, and the server closes.
    for name, req, want in (
            ("no colon", b"GET / HTTP/1.1\r\nHost: a\r\nBad Header\r\n\r\n", 400),
            ("CL with TE", b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n"
                           b"Transfer-Encoding: chunked\r\n\r\n", 400),
            ("head past 32 KiB", b"GET / HTTP/1.1\r\nHost: a\r\n" +
             b"X-Long: " + b"a" * 8000 + b"\r\n" + b"X-More: " + b"b" * 8000 + b"\r\n" +
             b"X-Again: " + b"c" * 8000 + b"\r\n" + b"X-Last: " + b"d" * 8000 + b"\r\n" +
             b"X-End: " + b"e" * 4000 + b"\r\n\r\n", 431)):
        s = exchange(port, req)
        st, head, body, rest = read_response(s, b"")
        check(st == want and b"Connection: close\r\n" in head and read_eof(s),
              "%s: %s and closed (got %s)" % (name, want, st))
        s.close()

    s = exchange(port, b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
                 b"5\r\nhello\r\n0\r\n\r\n")
    st, head, body, rest = read_response(s, b"")
    check(st == 501 and read_eof(s), "a chunked body: 501 and closed")
    s.close()

    # Connection: close and HTTP/1.0.
    s = exchange(port, b"GET /demo/plaintext HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n"
                 + GET)
    st, head, body, rest = read_response(s, b"")
    check(st == 200 and b"Connection: close\r\n" in head and rest == b"" and read_eof(s),
          "Connection: close: answered, closed, the request after it ignored")
    s.close()
    s = exchange(port, b"GET /demo/plaintext HTTP/1.0\r\n\r\n")
    st, head, body, rest = read_response(s, b"")
    check(st == 200 and b"Connection: close\r\n" in head and read_eof(s), "HTTP/1.0: closed")
    s.close()
    s = exchange(port, b"GET /demo/plaintext HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
    st, head, body, rest = read_response(s, b"")
    s.sendall(b"GET /demo/plaintext HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
    st2, head2, _, _ = read_response(s, rest)
    check(st == 200 and st2 == 200 and b"Connection: keep-alive\r\n" in head,
          "HTTP/1.0 keep-alive: kept")
    s.close()

    # A peer that shuts down its side after its requests still gets the
    # answers, then the close; its FIN may arrive with the requests or after
    # them (the server's read sees it at once or needs another event), so
    # the case runs several times.
    ok = 0
    for _ in range(30):
        s = exchange(port, GET + GET)
        s.shutdown(socket.SHUT_WR)
        got, rest = [], b""
        for _ in range(2):
            st, head, body, rest = read_response(s, rest)
            got.append(st)
        ok += got == [200, 200] and read_eof(s)
        s.close()
    check(ok == 30, "half-closed peers: both answers, then closed (%d of 30)" % ok)

    # Peers that go away: before a request, in the middle of a head, with
    # responses unread (a reset).
    for _ in range(50):
        connect(port).close()
        s = exchange(port, GET[:10])
        s.close()
        s = exchange(port, GET * 20)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        s.close()

    # More responses than the socket buffers hold (tcp_wmem's maximum is
    # 4 MiB): every request is written before any response is read, so the
    # server's sends go partial and must resume in order.
    n = 40000
    s = connect(port)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16384)
    reqs = b"".join(b"GET /demo/plaintext?%d HTTP/1.1\r\nHost: a\r\n\r\n" % i if i % 7 else
                    b"GET /no/%d HTTP/1.1\r\nHost: a\r\n\r\n" % i for i in range(n))
    s.sendall(reqs)
    got, rest = [], b""
    for _ in range(n):
        st, head, body, rest = read_response(s, rest)
        got.append(st)
    want = [404 if i % 7 == 0 else 200 for i in range(n)]
    check(got == want, "%d pipelined requests written before reading: responses in order" % n)
    s.close()

    # Still serving after all that.
    s = exchange(port, GET)
    st, _, body, _ = read_response(s, b"")
    check(st == 200, "still answering")
    s.close()


def main():
    cmd = sys.argv[1:] + ["--port", "0"]
    srv = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
    line = srv.stderr.readline()
    m = re.search(r"127\.0\.0\.1:(\d+)", line)
    if not m:
        print("server did not start: %r" % line)
        srv.kill()
        return 1
    print(line.strip())
    try:
        run(int(m.group(1)))
    finally:
        srv.send_signal(signal.SIGTERM)
        try:
            rc = srv.wait(timeout=20)
        except subprocess.TimeoutExpired:
            srv.kill()
            rc = "hung"
        err = srv.stderr.read()
        check(rc == 0, "SIGTERM: exit status 0 (got %s)%s" % (rc, ("\n" + err) if err else ""))
    print("%d failure(s)" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
