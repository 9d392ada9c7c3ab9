#!/usr/bin/env python3
"""cshttpd over HTTP/2 (RFC 9113) against real clients: curl, nghttp,
h2load and headless Chromium.

- same: the same requests over HTTP/1.1 and HTTP/2 (h2 by ALPN on the
  HTTPS port, h2c with prior knowledge on the plain one) get the same
  answers: status, body byte for byte, and the fields that describe the
  representation (static files, ranges, conditionals, precompressed
  files, HEAD, forms, uploads, the demo, the status page, limits, and the
  reverse proxy in front of a second cshttpd).
- clients: nghttp, h2load (-m 100, no error), the access log's protocol,
  Chromium loading the demo over h2 and opening a WebSocket on it (RFC
  8441).
- operator: --http2 off, the status counters of HTTP/2.

Every outcome is exact; waits only bound a test.

Usage: test_http2.py --bin path/to/cshttpd [--group NAME]
"""
import argparse
import gzip
import json
import os
import re
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_cshttpd as T  # noqa: E402  (its Server, curl, run_groups)

TESTS = {}
ROOT = None


def test(group):
    def deco(fn):
        TESTS.setdefault(group, []).append(fn)
        return fn
    return deco


def make_root(d):
    root = os.path.join(d, "www")
    os.mkdir(root)
    with open(os.path.join(root, "index.html"), "w") as f:
        f.write('<!doctype html><title>t</title><link rel="stylesheet" href="/style.css">'
                "<p>test root</p>\n")
    css = b"body{font-family:sans-serif}\n" * 200
    with open(os.path.join(root, "style.css"), "wb") as f:
        f.write(css)
    with open(os.path.join(root, "style.css.gz"), "wb") as f:
        f.write(gzip.compress(css))
    with open(os.path.join(root, "big.bin"), "wb") as f:
        f.write(os.urandom(3 << 20))
    with open(os.path.join(root, "a.txt"), "wb") as f:
        f.write(bytes(range(256)) * 40)
    with open(os.path.join(d, "upload.bin"), "wb") as f:
        f.write(os.urandom(300000))
    return root


def tls_server(d, root, *extra):
    cert, key = T.make_cert(d, "h2")
    srv = T.Server("--root", root, "--tls-port", "0", "--tls-cert", cert, "--tls-key", key,
                   root=False, *extra)
    srv.tls = T.tls_port(srv)
    return srv


def fetch(url, proto, *args):
    """(status, fields dict, body, http_version) of one curl request."""
    hdr = tempfile.mktemp()
    r = T.curl("-k", "-D", hdr, "-o", "-", "-w", "\n%{http_version}", proto, *args, url)
    assert r.returncode == 0, (url, proto, r.stderr)
    body, _, version = r.stdout.rpartition(b"\n")
    with open(hdr, "rb") as f:
        head = f.read().decode("latin-1")
    os.unlink(hdr)
    # the last head (a 100 Continue may come first)
    block = [b for b in head.split("\r\n\r\n") if b.strip()][-1]
    lines = block.split("\r\n")
    status = int(lines[0].split(" ")[1])
    fields = {}
    for ln in lines[1:]:
        k, _, v = ln.partition(":")
        fields.setdefault(k.strip().lower(), v.strip())
    return status, fields, body, version.decode()


# fields that describe what was answered; the rest (date, server) may
# differ between two answers of the same request
SAME_FIELDS = ("content-type", "content-length", "etag", "last-modified", "content-range",
               "content-encoding", "cache-control", "accept-ranges", "vary", "location",
               "allow")


def echo_view(body):
    """/demo/echo's document without what the protocol changes: the
    version, and the spelling of field names (HTTP/2 sends them lowercase,
    RFC 9113 §8.2)."""
    doc = json.loads(body)
    doc.pop("version", None)
    doc["headers"] = sorted([k.lower(), v] for k, v in doc["headers"])
    return doc


def unbound(answer):
    """A multipart answer's boundary is drawn anew each time: named B."""
    status, fields, body, version = answer
    m = re.search(r"boundary=(\S+)", fields.get("content-type", ""))
    if m:
        fields = dict(fields, **{"content-type": fields["content-type"].replace(m[1], "B")})
        body = body.replace(m[1].encode(), b"B")
    return status, fields, body, version


def compare(url_h1, url_h2, proto_h2, case, *args):
    a = fetch(url_h1, "--http1.1", *args)
    b = fetch(url_h2, proto_h2, *args)
    assert a[3] == "1.1" and b[3] == "2", (case, a[3], b[3])
    assert a[0] == b[0], (case, a[0], b[0])
    a, b = unbound(a), unbound(b)
    for k in SAME_FIELDS:
        if "/status" in case and k == "content-length":
            continue  # live figures
        assert a[1].get(k) == b[1].get(k), (case, k, a[1].get(k), b[1].get(k))
    if "/demo/echo" in case and a[0] == 200:
        assert echo_view(a[2]) == echo_view(b[2]), (case, a[2], b[2])
    elif "-I" in args:  # curl writes the head itself: no body to compare
        pass
    elif "/status" in case:
        assert a[2][:15] == b[2][:15], case  # live numbers: the page, not its figures
    else:
        assert a[2] == b[2], (case, len(a[2]), len(b[2]))
    return a, b


def cases(d, etag, modified):
    up = os.path.join(d, "upload.bin")
    return [
        ("/index.html",),
        ("/big.bin",),
        ("/a.txt", "-r", "100-199"),
        ("/a.txt", "-r", "0-9,20-29"),  # multipart/byteranges
        ("/a.txt", "-r", "999999-"),    # 416
        ("/a.txt", "-H", "If-None-Match: " + etag),
        ("/a.txt", "-H", "If-Modified-Since: " + modified),
        ("/a.txt", "-H", "If-Range: \"nope\"", "-r", "0-9"),
        ("/style.css", "-H", "Accept-Encoding: gzip"),
        ("/big.bin", "-I"),
        ("/nope.html",),
        ("/demo/%zz",),
        ("/demo/plaintext",),
        ("/demo/json",),
        ("/demo/echo?a=1&b=%41", "-H", "Cookie: a=1", "-H", "X-Two: 2"),
        ("/demo/echo", "-d", "x=1&y=%20z"),
        ("/demo/echo", "-X", "PUT", "--data-binary", "@" + up),
        ("/demo/echo", "-H", "Transfer-Encoding: chunked", "--data-binary", "@" + up),
        ("/demo/upload", "-F", "name=world", "-F", "file=@" + up),
        ("/demo/echo", "--data-binary", "@" + up, "-H", "Expect: 100-continue"),
        ("/status.json",),
        ("/demo/form", "-X", "DELETE"),
    ]


@test("same")
def t_same_answers_h2_and_h2c(d):
    """Every case over HTTP/1.1 and HTTP/2 alike, over TLS (h2 by ALPN)
    and over plain TCP (h2c with prior knowledge)."""
    root = make_root(d)
    with tls_server(d, root) as srv:
        s, f, _, _ = fetch(srv.url("/a.txt"), "--http1.1")
        assert s == 200
        plain, tls = srv.url(""), "https://127.0.0.1:%d" % srv.tls
        for c in cases(d, f["etag"], f["last-modified"]):
            path, args = c[0], c[1:]
            compare(tls + path, tls + path, "--http2", path, *args)
            compare(plain + path, plain + path, "--http2-prior-knowledge", path, *args)


@test("same")
def t_same_limits(d):
    """The request checks of HTTP/1.1 apply as they are: a body past
    max_request_body is 413, a head past max_head 431, over both."""
    root = make_root(d)
    with tls_server(d, root, "--max-request-body", "1000", "--max-head", "2048") as srv:
        tls = "https://127.0.0.1:%d" % srv.tls
        a, b = compare(tls + "/demo/echo", tls + "/demo/echo", "--http2", "/demo/echo 413",
                       "-d", "x" * 5000)
        assert a[0] == 413, a
        big = "X-Big: " + "b" * 3000
        s1 = fetch(tls + "/demo/plaintext", "--http1.1", "-H", big)[0]
        s2 = fetch(tls + "/demo/plaintext", "--http2", "-H", big)[0]
        assert (s1, s2) == (431, 431), (s1, s2)


def with_trailers(url, proto):
    """(status, body, the head's trailer field, the trailer lines) of one
    curl request: curl writes the trailer section after the head in its
    header dump, over HTTP/1.1 and HTTP/2 alike."""
    hdr = tempfile.mktemp()
    r = T.curl("-k", "-D", hdr, "-o", "-", proto, url)
    assert r.returncode == 0, (url, proto, r.stderr)
    with open(hdr, "rb") as f:
        blocks = f.read().decode("latin-1").split("\r\n\r\n")
    os.unlink(hdr)
    lines = blocks[0].split("\r\n")
    fields = dict((k.strip().lower(), v.strip())
                  for k, _, v in (ln.partition(":") for ln in lines[1:]))
    trailers = [ln for b in blocks[1:] for ln in b.split("\r\n") if ln]
    return int(lines[0].split(" ")[1]), r.stdout, fields.get("trailer"), trailers


@test("same")
def t_same_trailers(d):
    """An answer's trailers (RFC 9110 §6.5) reach curl over HTTP/1.1 (in
    the chunked body's trailer section, RFC 9112 §7.1.2), over h2 and
    over h2c (a HEADERS frame after the DATA, RFC 9113 §8.1) alike, after
    a body that ends in the response buffer (the head names them) and
    after one that streams; a field that may not be a trailer is a 400
    everywhere."""
    root = make_root(d)
    with tls_server(d, root) as srv:
        plain, tls = srv.url(""), "https://127.0.0.1:%d" % srv.tls
        q = "/demo/trailers?grpc-status=0&grpc-message=all%20good"
        want = ["grpc-status: 0", "grpc-message: all good"]
        for size in (10, 200000):
            path = q + "&size=%d" % size
            got = [with_trailers(tls + path, "--http1.1"), with_trailers(tls + path, "--http2"),
                   with_trailers(plain + path, "--http2-prior-knowledge")]
            named = "grpc-status, grpc-message" if size == 10 else None
            for status, body, trailer, lines in got:
                assert (status, len(body), trailer, lines) == (200, size, named, want), \
                    (size, status, len(body), trailer, lines)
        for proto, url in (("--http1.1", plain), ("--http2", tls),
                           ("--http2-prior-knowledge", plain)):
            status, _, _, lines = with_trailers(url + "/demo/trailers?set-cookie=a", proto)
            assert (status, lines) == (400, []), (proto, status, lines)


@test("same")
def t_same_through_the_proxy(d):
    """An h2 request to an HTTP/1.1 origin behind --proxy: framed once, so
    the origin sees the same request an HTTP/1.1 client would make it see
    (the target, the body, no Transfer-Encoding of the client's), and the
    answer comes back the same."""
    root = make_root(d)
    with T.Server("--root", root, root=False) as origin:
        cert, key = T.make_cert(d, "px")
        with T.Server("--root", root, "--tls-port", "0", "--tls-cert", cert, "--tls-key", key,
                      "--proxy", "/demo=" + origin.url(""), "--proxy",
                      "/big.bin=" + origin.url(""), "--proxy", "/a.txt=" + origin.url(""),
                      root=False, demo=False) as px:
            tls = "https://127.0.0.1:%d" % T.tls_port(px)
            up = os.path.join(d, "upload.bin")
            for c in [("/big.bin",), ("/a.txt", "-r", "5-9"),
                      ("/demo/echo?q=1", "--data-binary", "@" + up),
                      ("/demo/echo", "-H", "Transfer-Encoding: chunked", "--data-binary",
                       "@" + up),
                      ("/demo/echo", "-H", "Content-Length: 3", "-d", "abc")]:
                a, b = compare(tls + c[0], tls + c[0], "--http2", c[0], *c[1:])
                if "echo" in c[0]:
                    assert b[0] == 200, b
                    doc = json.loads(b[2])
                    names = [k.lower() for k, _ in doc["headers"]]
                    # framed once: one length or one coding, never both
                    assert ("content-length" in names) != ("transfer-encoding" in names), doc
                    assert names.count("content-length") <= 1, doc


@test("clients")
def t_nghttp(d):
    """nghttp's requests, several streams multiplexed on one connection,
    over h2c and h2, and its check of the answers' frames."""
    root = make_root(d)
    with tls_server(d, root) as srv:
        for base in (srv.url(""), "https://127.0.0.1:%d" % srv.tls):
            r = subprocess.run(["nghttp", "-nv", base + "/index.html", base + "/a.txt",
                                base + "/demo/plaintext"], capture_output=True, timeout=30)
            assert r.returncode == 0, r.stderr
            out = r.stdout.decode()
            assert out.count(":status: 200") == 3, out
            assert "GOAWAY" not in out.split("recv DATA")[0], out
            r = subprocess.run(["nghttp", "-s", base + "/big.bin"], capture_output=True,
                               timeout=30)
            assert r.returncode == 0, r.stderr


def h2load(url, *extra):
    r = subprocess.run(["h2load"] + list(extra) + [url], capture_output=True, timeout=120)
    out = r.stdout.decode()
    assert r.returncode == 0, out + r.stderr.decode()
    return out


@test("clients")
def t_h2load_many_streams(d):
    """h2load with 100 streams in flight per connection, over h2c and h2:
    every request answered 2xx, none failed or errored."""
    root = make_root(d)
    with tls_server(d, root) as srv:
        for base in (srv.url(""), "https://127.0.0.1:%d" % srv.tls):
            for path in ("/a.txt", "/demo/plaintext"):
                out = h2load(base + path, "-n", "4000", "-c", "4", "-m", "100")
                assert "4000 succeeded, 0 failed, 0 errored, 0 timeout" in out, out
                assert "status codes: 4000 2xx" in out, out


@test("clients")
def t_access_log_protocol(d):
    """The access log names the protocol: HTTP/2.0 for a stream, HTTP/1.1
    for the same request over HTTP/1.1, in both formats."""
    root = make_root(d)
    for fmt in ("combined", "json"):
        log = os.path.join(d, "access-%s.log" % fmt)
        with tls_server(d, root, "--access-log", log, "--access-log-format", fmt) as srv:
            tls = "https://127.0.0.1:%d" % srv.tls
            fetch(tls + "/a.txt?h2", "--http2")
            fetch(srv.url("/a.txt?h2c"), "--http2-prior-knowledge")
            fetch(tls + "/a.txt?h1", "--http1.1")
        with open(log) as f:
            lines = f.read().splitlines()
        want = {"h2": "HTTP/2.0", "h2c": "HTTP/2.0", "h1": "HTTP/1.1"}
        for tag, proto in want.items():
            line = [ln for ln in lines if "/a.txt?%s " % tag in ln or '/a.txt?%s"' % tag in ln]
            assert len(line) == 1, (tag, lines)
            if fmt == "json":
                assert json.loads(line[0])["protocol"] == proto, line
            else:
                assert '"GET /a.txt?%s %s" 200' % (tag, proto) in line[0], line


@test("clients")
def t_chromium_over_h2(d):
    """Headless Chromium loads the demo's pages over h2: the access log
    shows HTTP/2.0 for the page and the stylesheet it links."""
    import test_cshttpd_deploy as D
    D.ARGS = argparse.Namespace(chromium=None)
    binary = D.chromium_binary()
    root = make_root(d)
    log = os.path.join(d, "access.log")
    with tls_server(d, root, "--access-log", log) as srv:
        url = "https://127.0.0.1:%d/" % srv.tls
        r = subprocess.run([binary, "--headless", "--no-sandbox", "--disable-gpu",
                            "--disable-quic", "--no-first-run", "--ignore-certificate-errors",
                            "--disable-dev-shm-usage", "--user-data-dir=" + os.path.join(d, "p"),
                            "--dump-dom", url], capture_output=True, timeout=90)
        assert b"test root" in r.stdout, r.stderr[-3000:]
        deadline = time.time() + 10
        while time.time() < deadline:  # the stylesheet may come after the DOM
            with open(log) as f:
                text = f.read()
            if '"GET /style.css HTTP/2.0" 200' in text:
                break
            time.sleep(0.1)
    assert re.search(r'"GET / HTTP/2\.0" 200 .*Chrome', text), text
    assert '"GET /style.css HTTP/2.0" 200' in text, text


@test("clients")
def t_chromium_websocket_over_h2(d):
    """Headless Chromium opens a page's WebSocket (wss://, the demo's
    echo) on the h2 connection it has, by an extended CONNECT (RFC 8441):
    text and binary messages come back and the close is clean (1000), and
    the access log shows the socket's line with HTTP/2.0 (the Upgrade it
    was served as, 101)."""
    import test_cshttpd_deploy as D
    D.ARGS = argparse.Namespace(chromium=None)
    root = make_root(d)
    log = os.path.join(d, "access.log")
    with tls_server(d, root, "--access-log", log) as srv:
        ch = D.Chromium(D.chromium_binary(), d, extra=["--ignore-certificate-errors"])
        try:
            target = ch.call("Target.createTarget", {"url": "about:blank"})["targetId"]
            session = ch.call("Target.attachToTarget", {"targetId": target,
                                                        "flatten": True})["sessionId"]
            ch.call("Page.enable", session=session)
            ch.call("Page.navigate", {"url": "https://127.0.0.1:%d/index.html" % srv.tls},
                    session=session)
            ch.pump(1)
            res = ch.call("Runtime.evaluate", {
                "expression": """new Promise((ok, no) => {
                  const ws = new WebSocket('wss://' + location.host + '/demo/ws');
                  ws.binaryType = 'arraybuffer';
                  const got = [];
                  ws.onopen = () => { ws.send('hello over h2'); ws.send(new Uint8Array([0, 255])); };
                  ws.onmessage = (m) => {
                    got.push(typeof m.data === 'string' ? m.data
                             : Array.from(new Uint8Array(m.data)).join(','));
                    if (got.length === 2) ws.close(1000, 'done');
                  };
                  ws.onclose = (e) => ok(JSON.stringify({got: got, code: e.code}));
                  ws.onerror = () => no('websocket error');
                  setTimeout(() => no('no echo'), 10000);
                })""", "awaitPromise": True, "returnByValue": True}, session=session)
            echo = json.loads(res["result"]["value"])
        finally:
            ch.close()
        assert echo == {"got": ["hello over h2", "0,255"], "code": 1000}, echo
        deadline = time.time() + 10
        while time.time() < deadline:  # the socket's line is written when it closes
            with open(log) as f:
                text = f.read()
            if "/demo/ws " in text:
                break
            time.sleep(0.1)
    assert '"GET /index.html HTTP/2.0" 200' in text, text
    assert '"GET /demo/ws HTTP/2.0" 101' in text, text


def raw_h2c(port, frames):
    """Sends the preface and frames on a new h2c connection and returns
    what came back until the server closes or goes quiet."""
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + frame(4, 0, 0, b"") + b"".join(frames))
    got = b""
    s.settimeout(1)
    try:
        while True:
            d = s.recv(65536)
            if not d:
                break
            got += d
    except socket.timeout:
        pass
    s.close()
    return got


def frame(ftype, flags, stream, payload):
    return struct.pack(">I", len(payload))[1:] + bytes([ftype, flags]) + \
        struct.pack(">I", stream) + payload


def literal(name, value):
    """An HPACK literal field without indexing, no Huffman (RFC 7541 §6.2.2)."""
    assert len(name) < 127 and len(value) < 127
    return b"\x00" + bytes([len(name)]) + name + bytes([len(value)]) + value


def frames_of(data):
    out = []
    while len(data) >= 9:
        n = int.from_bytes(data[:3], "big")
        out.append((data[3], data[4], int.from_bytes(data[5:9], "big") & 0x7fffffff,
                    data[9:9 + n]))
        data = data[9 + n:]
    return out


@test("operator")
def t_http2_off(d):
    """--http2 off: ALPN chooses http/1.1, and the h2c preface is no
    request line (answered as HTTP/1.1 answers a bad one)."""
    root = make_root(d)
    with tls_server(d, root, "--http2", "off") as srv:
        r = T.curl("-vk", "--http2", "https://127.0.0.1:%d/a.txt" % srv.tls, "-o", "/dev/null")
        assert r.returncode == 0 and b"ALPN: server accepted http/1.1" in r.stderr, r.stderr
        got = raw_h2c(srv.port, [])
        assert got.startswith(b"HTTP/1.1 "), got[:200]
        st = T.get_json(srv, "/status.json")
        assert st["h2_connections_total"] == 0, st


@test("operator")
def t_counters(d):
    """The status JSON (which the page draws its counters table from)
    counts HTTP/2 connections, their streams and the refusals sent; a
    refused stream has its access log line, the 400 an HTTP/1.1 request
    would get."""
    root = make_root(d)
    log = os.path.join(d, "access.log")
    with tls_server(d, root, "--access-log", log) as srv:
        tls = "https://127.0.0.1:%d" % srv.tls
        r = T.curl("-k", "--http2", tls + "/a.txt", tls + "/index.html", tls + "/demo/json",
                   "-o", "/dev/null", "-o", "/dev/null", "-o", "/dev/null")
        assert r.returncode == 0, r.stderr
        st = T.get_json(srv, "/status.json")
        assert st["h2_connections_total"] == 1, st
        assert st["h2_streams"] == 3, st
        assert st["h2_refused"] == 0, st
        # a field name in uppercase (RFC 9113 §8.2.1): the stream is reset
        # with PROTOCOL_ERROR, counted
        head = (literal(b":method", b"GET") + literal(b":scheme", b"http") +
                literal(b":path", b"/refused") + literal(b":authority", b"a") +
                literal(b"X-Up", b"1"))
        got = frames_of(raw_h2c(srv.port, [frame(1, 0x5, 1, head)]))
        rst = [f for f in got if f[0] == 3]
        assert rst and rst[0][2] == 1 and rst[0][3] == b"\x00\x00\x00\x01", got
        st = T.get_json(srv, "/status.json")
        assert st["h2_refused"] == 1, st
        assert st["h2_connections_total"] == 2 and st["h2_connections"] == 0, st
    with open(log) as f:
        text = f.read()
    assert '"GET /refused HTTP/2.0" 400' in text, text


@test("operator")
def t_half_close_answered(d):
    """A client that ends its side of the connection (FIN) after its
    request still gets the answer, then the connection closes, as an
    HTTP/1.1 request that came with the FIN does."""
    root = make_root(d)
    with tls_server(d, root) as srv:
        head = (literal(b":method", b"GET") + literal(b":scheme", b"http") +
                literal(b":path", b"/demo/sleep?ms=200") + literal(b":authority", b"a"))
        s = socket.create_connection(("127.0.0.1", srv.port), timeout=10)
        s.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + frame(4, 0, 0, b"") +
                  frame(1, 0x5, 1, head))
        s.shutdown(socket.SHUT_WR)
        got = b""
        while True:
            b = s.recv(65536)
            if not b:
                break
            got += b
        s.close()
        fr = frames_of(got)
        heads = [f for f in fr if f[0] == 1 and f[2] == 1]
        data = b"".join(f[3] for f in fr if f[0] == 0 and f[2] == 1)
        assert heads and heads[0][3][:1] == b"\x88", fr  # :status 200, HPACK index 8
        assert data == b"slept 200 ms\n", fr
        assert any(f[0] == 0 and f[1] & 1 for f in fr), fr  # END_STREAM


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--curl", default=shutil.which("curl") or "curl")
    ap.add_argument("--group", default=None)
    args = ap.parse_args()
    args.tmp = tempfile.mkdtemp(prefix="cshttpd-h2-")
    args.root = os.path.join(args.tmp, "www0")
    os.mkdir(args.root)
    T.ARGS = args
    try:
        failed = T.run_groups(TESTS, args.group, args.tmp)
    finally:
        shutil.rmtree(args.tmp, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
