#!/usr/bin/env python3
"""WebSockets (RFC 6455, permessage-deflate RFC 7692) against a real
`cshttpd --demo` and its echo at /demo/ws, in the sections of the Autobahn
testsuite: framing, pings, reserved (RSV bits), opcodes, fragmentation,
utf8, close, limits, compression, handshake, liveness, abuse.

Raw frames go over plain sockets (the builder and reader below: any
opcode, any RSV bits, lengths in 7, 16 or 64 bits, masked or not, sent in
pieces of any size); Debian's python3-websockets is the real client for
what one covers (the handshake, compression, pings, the closing handshake
and a long echo). Every outcome is exact: the close code (RFC 6455
§7.4.1) or the HTTP status, echoed bytes compared byte for byte. Waits are
bounded generously and only end a test that would otherwise hang; no
result depends on speed.

Usage: test_websocket.py --bin path/to/cshttpd [--group NAME]
(CSHTTP_WS_SEED=N repeats a run's random sizes and splits.)
"""
import os
import sys

# python3-websockets is Debian's (/usr/bin/python3); another interpreter
# that runs this file without it hands over to that one.
try:
    import websockets  # noqa: F401
except ImportError:
    system = "/usr/bin/python3"
    first = os.environ.get("CSHTTP_WS_REEXEC")  # the interpreter that handed over
    if (not first and os.path.exists(system)
            and os.path.realpath(sys.executable or "") != os.path.realpath(system)):
        os.environ["CSHTTP_WS_REEXEC"] = sys.executable or "python3"
        os.execv(system, [system, os.path.abspath(__file__)] + sys.argv[1:])
    sys.exit("test_websocket.py: the Python module 'websockets' is missing from %s: "
             "install python3-websockets (scripts/install-deps.sh)"
             % " and ".join(([first] if first else []) + [sys.executable]))

import argparse  # noqa: E402
import asyncio  # noqa: E402
import base64  # noqa: E402
import hashlib  # noqa: E402
import http.client  # noqa: E402
import json  # noqa: E402
import random  # noqa: E402
import resource  # noqa: E402
import select  # noqa: E402
import shutil  # noqa: E402
import signal  # noqa: E402
import socket  # noqa: E402
import struct  # noqa: E402
import tempfile  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
import zlib  # noqa: E402

from websockets.extensions.permessage_deflate import (  # noqa: E402
    ClientPerMessageDeflateFactory, PerMessageDeflate)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_cshttpd as T  # noqa: E402  (its Server, read_response, Sock)

TESTS = {}
CHECKS = [0]  # exact outcomes compared, counted per test
WAIT = 10     # seconds: the bound of any one wait for the server
SEED = int(os.environ.get("CSHTTP_WS_SEED", str(int(time.time() * 1000) % 1000000)))

KEY = "dGhlIHNhbXBsZSBub25jZQ=="        # RFC 6455 §4.2.2's example key
ACCEPT = "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="  # and its Sec-WebSocket-Accept
PMD = "permessage-deflate; server_no_context_takeover; client_no_context_takeover"

OP_CONT, OP_TEXT, OP_BINARY, OP_CLOSE, OP_PING, OP_PONG = 0x0, 0x1, 0x2, 0x8, 0x9, 0xA
RSV1, RSV2, RSV3 = 4, 2, 1  # the rsv argument of frame(): bits 6, 5, 4 of the first byte


def test(group):
    def deco(fn):
        TESTS.setdefault(group, []).append(fn)
        return fn
    return deco


def checked(ok, what):
    """One exact outcome: counted, and an AssertionError naming it when
    it is not what was expected."""
    CHECKS[0] += 1
    if not ok:
        raise AssertionError(what)


# ---- frames (RFC 6455 §5.2) ----

def masked(data, key):
    """data XOR the 4-byte key repeated (§5.3)."""
    n = len(data)
    if n == 0:
        return b""
    k = (key * (n // 4 + 1))[:n]
    return (int.from_bytes(data, "little") ^ int.from_bytes(k, "little")).to_bytes(n, "little")


def frame(op, payload=b"", fin=True, rsv=0, mask=True, key=None, length=None, width=None):
    """A frame as a client sends it: op any 4-bit opcode, rsv the RSV bits
    (RSV1 | RSV2 | RSV3), masked with key (random when None) unless mask is
    False; length announces another payload length than len(payload);
    width (7, 16 or 64) encodes the length in that form rather than the
    shortest."""
    n = len(payload) if length is None else length
    if width is None:
        width = 7 if n < 126 else 16 if n < 65536 else 64
    b0 = (0x80 if fin else 0) | (rsv << 4) | op
    m = 0x80 if mask else 0
    if width == 7:
        head = bytes([b0, m | n])
    elif width == 16:
        head = bytes([b0, m | 126]) + struct.pack("!H", n)
    else:
        head = bytes([b0, m | 127]) + struct.pack("!Q", n)
    if not mask:
        return head + payload
    key = os.urandom(4) if key is None else key
    return head + key + masked(payload, key)


def close_payload(code, reason=b""):
    return struct.pack("!H", code) + reason


def deflated(data, wbits=15, final=False):
    """A message compressed as RFC 7692 §7.2.1 says: raw deflate ended by a
    sync flush, its 00 00 ff ff left out; final: ended by a final block
    (BFINAL, §7.2.3.5) instead."""
    c = zlib.compressobj(zlib.Z_DEFAULT_COMPRESSION, zlib.DEFLATED, -wbits)
    if final:
        return c.compress(data) + c.flush(zlib.Z_FINISH)
    out = c.compress(data) + c.flush(zlib.Z_SYNC_FLUSH)
    assert out.endswith(b"\x00\x00\xff\xff")
    return out[:-4]


def inflated(data, wbits=15):
    """A compressed message's bytes (§7.2.2): the tail put back, inflated
    with a window of wbits (zlib fails on a distance past it)."""
    d = zlib.decompressobj(-wbits)
    return d.decompress(data + b"\x00\x00\xff\xff") + d.flush()


class Frame:
    def __init__(self, b0, b1, head_len, payload):
        self.fin = b0 >> 7
        self.rsv = (b0 >> 4) & 7
        self.op = b0 & 0x0F
        self.masked = b1 >> 7
        self.head_len = head_len
        self.payload = payload

    def __repr__(self):
        p = self.payload
        return "Frame(op=%d fin=%d rsv=%d len=%d %r)" % (self.op, self.fin, self.rsv, len(p),
                                                        p[:40] + (b"..." if len(p) > 40 else b""))


class WS:
    """The client's end of a WebSocket: bytes out as given, the server's
    frames read and checked for what every server frame must be."""

    def __init__(self, sock, pending=b""):
        self.sock = sock
        self.buf = bytearray(pending)
        self.eof = False

    def send(self, data, pieces=None, pause=0.0):
        """data in one write, or in writes of the sizes in pieces (the
        last one takes the rest). False when the server had closed."""
        try:
            if pieces is None:
                self.sock.sendall(data)
                return True
            at = 0
            for n in pieces:
                if at >= len(data):
                    break
                self.sock.sendall(data[at:at + n])
                at += n
                if pause:
                    time.sleep(pause)
            if at < len(data):
                self.sock.sendall(data[at:])
            return True
        except (BrokenPipeError, ConnectionResetError):
            return False

    def _fill(self, n, deadline):
        """At least n bytes buffered: True, or False at the server's end."""
        while len(self.buf) < n:
            if self.eof:
                return False
            left = deadline - time.time()
            if left <= 0:
                raise AssertionError("nothing from the server within %ds (have %d bytes, want %d)"
                                     % (WAIT, len(self.buf), n))
            self.sock.settimeout(left)
            try:
                d = self.sock.recv(max(1 << 16, n - len(self.buf)))
            except socket.timeout:
                continue
            except ConnectionResetError:
                d = b""
            if not d:
                self.eof = True
                return False
            self.buf += d
        return True

    def frame(self, timeout=WAIT):
        """The server's next frame, None when it ended the connection.
        Every server frame is unmasked (§5.1) with its length in the
        shortest form (§5.2)."""
        deadline = time.time() + timeout
        if not self._fill(2, deadline):
            assert not self.buf, "the connection ended inside a frame head: %r" % bytes(self.buf)
            return None
        b0, b1 = self.buf[0], self.buf[1]
        n7 = b1 & 0x7F
        hl = 2 + (2 if n7 == 126 else 8 if n7 == 127 else 0)
        assert self._fill(hl, deadline), "the connection ended inside a frame head"
        n = n7 if n7 < 126 else struct.unpack("!H" if n7 == 126 else "!Q", self.buf[2:hl])[0]
        assert not b1 & 0x80, "a masked frame from the server (RFC 6455 §5.1)"
        assert hl == (2 if n < 126 else 4 if n < 65536 else 10), \
            "length %d not in its shortest form (RFC 6455 §5.2)" % n
        assert self._fill(hl + n, deadline), \
            "the connection ended inside a frame of %d bytes" % n
        f = Frame(b0, b1, hl, bytes(self.buf[hl:hl + n]))
        del self.buf[:hl + n]
        return f

    def ended(self, timeout=WAIT):
        """Waits for the server to end the TCP connection; what came
        before its end (nothing, when nothing was owed)."""
        deadline = time.time() + timeout
        try:
            while not self.eof:
                self._fill(len(self.buf) + 1, deadline)
        except AssertionError:
            raise AssertionError("the server did not end the connection within %ds (%d bytes "
                                 "came: %r)" % (timeout, len(self.buf), bytes(self.buf[:60])))
        rest = bytes(self.buf)
        self.buf.clear()
        return rest

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


def expect_frame(f, op, payload, rsv=0, what=""):
    checked(f is not None, "%sthe connection ended; expected a frame of opcode %d" % (what, op))
    checked((f.op, f.fin, f.rsv) == (op, 1, rsv) and f.payload == payload,
            "%sgot %r, expected opcode %d rsv %d with %d bytes%s" % (
                what, f, op, rsv, len(payload),
                "" if len(payload) > 60 else " " + repr(payload)))


def expect_close(ws, code, what="", timeout=WAIT):
    """The next frame is a close with code (None: with no payload, RFC 6455
    §5.5.1), and then the server ends the TCP connection (§7.1.1) and
    sends nothing more."""
    f = ws.frame(timeout)
    checked(f is not None, "%sthe connection ended without a close frame, expected %s"
            % (what, code))
    checked(f.op == OP_CLOSE and f.fin == 1 and f.rsv == 0,
            "%sgot %r, expected a close with %s" % (what, f, code))
    if code is None:
        checked(f.payload == b"", "%sa close with %r, expected none" % (what, f.payload))
    else:
        got = struct.unpack("!H", f.payload[:2])[0] if len(f.payload) >= 2 else None
        checked(got == code, "%sclose code %s, expected %d (payload %r)"
                % (what, got, code, f.payload))
        f.payload[2:].decode("utf-8")  # a reason is UTF-8 (§5.5.1)
    rest = ws.ended(timeout)
    checked(rest == b"", "%sbytes after the close frame: %r" % (what, rest[:60]))


def expect_end_without_close(ws, what="", timeout=WAIT):
    """The server ends the connection with no frame at all."""
    rest = ws.ended(timeout)
    checked(rest == b"", "%sbytes before the end: %r" % (what, rest[:60]))


# ---- the opening handshake (RFC 6455 §4) ----

def handshake_bytes(srv, path="/demo/ws", method="GET", version="HTTP/1.1", fields=None,
                    extra=()):
    """A valid opening handshake (§4.1) changed by fields (name: value, or
    None to leave the field out) and with the (name, value) lines of extra
    added."""
    base = [("Host", "127.0.0.1:%d" % srv.port), ("Upgrade", "websocket"),
            ("Connection", "Upgrade"), ("Sec-WebSocket-Key", KEY),
            ("Sec-WebSocket-Version", "13")]
    fields = fields or {}
    lines = []
    for name, value in base:
        if name in fields:
            value = fields[name]
        if value is not None:
            lines.append((name, value))
    lines += [(k, v) for k, v in fields.items() if k not in dict(base) and v is not None]
    lines += list(extra)
    head = "%s %s %s\r\n" % (method, path, version)
    head += "".join("%s: %s\r\n" % (k, v) for k, v in lines)
    return (head + "\r\n").encode("latin-1")


def parse_head(raw):
    lines = raw.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ")[1])
    pairs = []
    for l in lines[1:]:
        k, _, v = l.partition(":")
        pairs.append((k.strip().lower(), v.strip()))
    return status, pairs


def handshake(srv, timeout=WAIT, sock_opts=None, **kw):
    """Sends a handshake (handshake_bytes's arguments) and reads the
    answer: (status, [(name lower-case, value)], WS when 101 else None)."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    for level, opt, value in sock_opts or ():
        s.setsockopt(level, opt, value)
    s.settimeout(timeout)
    s.connect(("127.0.0.1", srv.port))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    s.sendall(handshake_bytes(srv, **kw))
    buf = b""
    while b"\r\n\r\n" not in buf:
        d = s.recv(65536)
        if not d:
            s.close()
            raise AssertionError("closed before the handshake's answer: %r" % buf)
        buf += d
    head, _, rest = buf.partition(b"\r\n\r\n")
    status, pairs = parse_head(head)
    if status == 101:
        return status, pairs, WS(s, rest)
    # a refusal: its body read, the connection closed
    t = T.Sock(s)
    t._pending = buf
    T.read_response(t, kw.get("method", "GET"))
    s.close()
    return status, pairs, None


def field(pairs, name):
    """The values of a field, joined as one list (RFC 9110 §5.3), None
    when absent."""
    v = [value for k, value in pairs if k == name]
    return ", ".join(v) if v else None


def open_ws(srv, extensions=None, **kw):
    """A WebSocket opened (101 with the right Accept, §4.2.2); extensions:
    a Sec-WebSocket-Extensions offer."""
    if extensions is not None:
        kw.setdefault("extra", ())
        kw["extra"] = tuple(kw["extra"]) + (("Sec-WebSocket-Extensions", extensions),)
    status, pairs, ws = handshake(srv, **kw)
    assert status == 101, "handshake answered %d: %r" % (status, pairs)
    assert field(pairs, "sec-websocket-accept") == ACCEPT, pairs
    ws.pairs = pairs
    return ws


def fails(srv, data, code, what, pieces=None, **kw):
    """A new WebSocket sends data and gets a close with code, then its
    end."""
    ws = open_ws(srv, **kw)
    try:
        ws.send(data, pieces)
        expect_close(ws, code, what + ": ")
    finally:
        ws.close()


def echo(ws, op, payload, pieces=None, pause=0.0, what="", **frame_kw):
    ws.send(frame(op, payload, **frame_kw), pieces, pause)
    expect_frame(ws.frame(), op, payload, what=what)


def run_async(coro, timeout=120):
    return asyncio.run(asyncio.wait_for(coro, timeout))


def ws_url(srv):
    return "ws://127.0.0.1:%d/demo/ws" % srv.port


def status_json(srv):
    c = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=WAIT)
    try:
        c.request("GET", "/status.json")
        r = c.getresponse()
        assert r.status == 200, r.status
        return json.loads(r.read())
    finally:
        c.close()


def wait_tunnels(srv, n, timeout=20):
    """Waits until the server holds n switched connections (its status
    page); the last count seen."""
    deadline = time.time() + timeout
    while True:
        k = status_json(srv)["tunnels"]
        if k == n or time.time() > deadline:
            return k
        time.sleep(0.05)


def proc_status(pid, name):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(name + ":"):
                return int(line.split()[1])
    raise AssertionError("no %s in /proc/%d/status" % (name, pid))


Server = T.Server


# ---- handshake (RFC 6455 §4.2, RFC 7692 §5, §7.1) ----

@test("handshake")
def t_handshake_accept(_):
    """§4.2.2: 101 Switching Protocols with Upgrade: websocket, Connection:
    Upgrade and the Accept of the example key; no subprotocol chosen when
    the demo has none (§4.2.2 item 5.4: the field left out), no extension
    when none was offered; the socket then echoes."""
    with Server() as srv:
        ws = open_ws(srv, extra=(("Sec-WebSocket-Protocol", "chat, superchat"),))
        p = ws.pairs
        checked(field(p, "upgrade") is not None and field(p, "upgrade").lower() == "websocket", p)
        checked("upgrade" in [t.strip().lower() for t in (field(p, "connection") or "").split(",")],
                p)
        checked(field(p, "sec-websocket-accept") == ACCEPT, p)
        checked(field(p, "sec-websocket-protocol") is None, "a subprotocol chosen: %r" % p)
        checked(field(p, "sec-websocket-extensions") is None, "an extension not offered: %r" % p)
        echo(ws, OP_TEXT, b"after the switch")
        ws.close()
        # the Accept of any key: base64 of the SHA-1 of the key and the GUID
        for _ in range(20):
            key = base64.b64encode(os.urandom(16)).decode()
            want = base64.b64encode(hashlib.sha1(
                (key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").encode()).digest()).decode()
            st, p, ws = handshake(srv, fields={"Sec-WebSocket-Key": key})
            checked(st == 101 and field(p, "sec-websocket-accept") == want, (key, st, p, want))
            ws.close()


@test("handshake")
def t_handshake_refusals(_):
    """§4.2.1: a request that is not an opening handshake is refused with
    the status of its fault; §4.4: a version other than 13 gets 426 and
    Sec-WebSocket-Version: 13."""
    with Server() as srv:
        def status(what, want, **kw):
            st, p, ws = handshake(srv, **kw)
            if ws:
                ws.close()
            checked(st == want, "%s: %d, expected %d (%r)" % (what, st, want, p))
            return p

        # §4.2.1 item 1: GET only; a 405 names GET (RFC 9110 §15.5.6)
        for m in ("POST", "PUT", "DELETE", "HEAD"):
            p = status(m, 405, method=m)
            allow = [t.strip() for t in (field(p, "allow") or "").split(",")]
            checked("GET" in allow, "%s: 405 without Allow: GET (%r)" % (m, p))
        # §4.2.1 item 6, §4.4: version 13 only, the answer names it
        for v in ("8", "12", "14", None):
            p = status("version %s" % v, 426, fields={"Sec-WebSocket-Version": v})
            checked(field(p, "sec-websocket-version") == "13", "426 without version 13: %r" % p)
        p = status("version twice", 426, extra=(("Sec-WebSocket-Version", "13"),))
        checked(field(p, "sec-websocket-version") == "13", "426 without version 13: %r" % p)
        # §4.2.1 item 5: a key of 16 bytes in base64, exactly one
        status("no key", 400, fields={"Sec-WebSocket-Key": None})
        for bad in ("", "dGhlIHNhbXBsZQ==", "dGhlIHNhbXBsZSBub25jZQ", "dGhlIHNhbXBsZSBub25jZQ=!",
                    "dGhlIHNhbXBsZSBub25jZQ===", "not a key at all, no",
                    "AAAAAAAAAAAAAAAAAAAAAAAA"):
            status("key %r" % bad, 400, fields={"Sec-WebSocket-Key": bad})
        status("key twice", 400, extra=(("Sec-WebSocket-Key", KEY),))
        # §4.2.1 items 3 and 4: Upgrade: websocket and Connection: Upgrade
        p = status("no Upgrade", 426, fields={"Upgrade": None})
        checked((field(p, "upgrade") or "").lower() == "websocket",
                "426 does not name websocket: %r" % p)
        status("Upgrade: h2c", 426, fields={"Upgrade": "h2c"})
        status("no Connection: upgrade", 426, fields={"Connection": "keep-alive"})
        # §4.1 item 2: HTTP/1.1 or higher
        status("HTTP/1.0", 426, version="HTTP/1.0")
        # a body sent with the handshake is the request's, not the socket's:
        # the frame after it is the first one read (RFC 9112 §6.3)
        chunked = b"2\r\n\x88\x80\r\n0\r\n\r\n"
        for body_fields, body in (({"Content-Length": "6"}, b"\x81\x80junk"),
                                  ({"Transfer-Encoding": "chunked"}, chunked)):
            s = socket.create_connection(("127.0.0.1", srv.port), timeout=WAIT)
            s.sendall(handshake_bytes(srv, fields=body_fields) + body +
                      frame(OP_TEXT, b"after the body"))
            buf = b""
            while b"\r\n\r\n" not in buf:
                d = s.recv(65536)
                assert d, buf
                buf += d
            head, _, rest = buf.partition(b"\r\n\r\n")
            checked(parse_head(head)[0] == 101, head)
            ws = WS(s, rest)
            expect_frame(ws.frame(), OP_TEXT, b"after the body", what="%r: " % body_fields)
            ws.close()
        # tokens compared without case, in lists (RFC 9110 §7.6.1, §7.8)
        ws = open_ws(srv, fields={"Upgrade": "WebSocket", "Connection": "keep-alive, UPGRADE"})
        echo(ws, OP_TEXT, b"case-insensitive tokens")
        ws.close()


@test("handshake")
def t_handshake_origin(_):
    """§10.2: by default only the server's own origin (and clients that
    send none) may open a socket: 403 for another site."""
    with Server() as srv:
        own = "http://127.0.0.1:%d" % srv.port
        for origin, want in ((own, 101), (None, 101), ("http://evil.example", 403),
                             ("http://127.0.0.1:%d" % (srv.port ^ 1), 403),
                             ("http://localhost:%d" % srv.port, 403), ("null", 403)):
            st, p, ws = handshake(srv, fields={"Origin": origin})
            checked(st == want, "Origin %r: %d, expected %d" % (origin, st, want))
            if ws:
                echo(ws, OP_TEXT, b"origin ok")
                ws.close()
    # --ws-allow-origins: the list replaces the default (the own origin too)
    with Server("--ws-allow-origins", "https://a.example,https://b.example:8443") as srv:
        own = "http://127.0.0.1:%d" % srv.port
        for origin, want in (("https://a.example", 101), ("https://b.example:8443", 101),
                             ("https://b.example", 403), ("https://c.example", 403),
                             ("http://a.example", 403), (own, 403), (None, 101)):
            st, p, ws = handshake(srv, fields={"Origin": origin})
            checked(st == want, "allowed list, Origin %r: %d, expected %d" % (origin, st, want))
            if ws:
                ws.close()
    with Server("--ws-allow-origins", "*") as srv:
        for origin in ("https://evil.example", "null", "http://127.0.0.1:%d" % srv.port):
            st, p, ws = handshake(srv, fields={"Origin": origin})
            checked(st == 101, "'*', Origin %r: %d" % (origin, st))
            ws.close()


@test("handshake")
def t_handshake_deflate_offers(_):
    """RFC 7692 §5, §7.1: an offer the server can take is answered with
    its parameters (no context takeover either way; window bits echoed
    as agreed); an offer with an unknown or repeated parameter or a bad
    value is declined (101 without the extension), the next offer in the
    field taken instead."""
    with Server() as srv:
        def answer(offer):
            st, p, ws = handshake(srv, extra=(("Sec-WebSocket-Extensions", offer),))
            checked(st == 101, "offer %r: %d" % (offer, st))
            ws.close()
            return field(p, "sec-websocket-extensions")

        for offer, want in (
                ("permessage-deflate", PMD),
                ("permessage-deflate; client_max_window_bits", PMD + "; client_max_window_bits=15"),
                ("permessage-deflate; client_max_window_bits=10",
                 PMD + "; client_max_window_bits=10"),
                ('permessage-deflate; client_max_window_bits="9"',
                 PMD + "; client_max_window_bits=9"),
                ("permessage-deflate; server_max_window_bits=12",
                 PMD + "; server_max_window_bits=12"),
                ("permessage-deflate; server_max_window_bits=9; client_max_window_bits=11",
                 PMD + "; server_max_window_bits=9; client_max_window_bits=11"),
                # §7.1.2.1: an offered server_max_window_bits is answered
                ("permessage-deflate; server_max_window_bits=15",
                 PMD + "; server_max_window_bits=15"),
                ("permessage-deflate; server_no_context_takeover; client_no_context_takeover",
                 PMD),
                ("Permessage-Deflate ;  Client_Max_Window_Bits",
                 PMD + "; client_max_window_bits=15"),
                # declined (§7.1: unknown, repeated, bad values; a window of 8 for
                # the server's compressor, which zlib cannot keep to)
                ("permessage-deflate; foo", None),
                ("permessage-deflate; foo=1", None),
                ("permessage-deflate; server_no_context_takeover; server_no_context_takeover",
                 None),
                ("permessage-deflate; client_max_window_bits=10; client_max_window_bits=10", None),
                ("permessage-deflate; server_max_window_bits=8", None),
                ("permessage-deflate; server_max_window_bits=7", None),
                ("permessage-deflate; server_max_window_bits=16", None),
                ("permessage-deflate; server_max_window_bits=abc", None),
                ("permessage-deflate; server_max_window_bits", None),
                ("permessage-deflate; server_max_window_bits=010", None),
                ("permessage-deflate; client_max_window_bits=0", None),
                ("permessage-deflate; client_max_window_bits=16", None),
                ("permessage-deflate; server_no_context_takeover=1", None),
                ("permessage-deflate=1", None),
                ("x-webkit-deflate-frame", None),
                # the first offer the server can take (§5.1)
                ("permessage-deflate; foo, permessage-deflate; client_max_window_bits=12",
                 PMD + "; client_max_window_bits=12"),
                ("x-webkit-deflate-frame, permessage-deflate", PMD)):
            got = answer(offer)
            checked(got == want, "offer %r answered %r, expected %r" % (offer, got, want))
        # offers in two fields are one list (RFC 9110 §5.3)
        st, p, ws = handshake(srv, extra=(("Sec-WebSocket-Extensions", "permessage-deflate; bad"),
                                          ("Sec-WebSocket-Extensions", "permessage-deflate")))
        checked(field(p, "sec-websocket-extensions") == PMD, p)
        ws.close()
    with Server("--ws-deflate", "no") as srv:
        # declined: no extension, and then RSV1 means nothing agreed (§5.2)
        ws = open_ws(srv, extensions="permessage-deflate; client_max_window_bits")
        checked(field(ws.pairs, "sec-websocket-extensions") is None, ws.pairs)
        echo(ws, OP_TEXT, b"plain")
        ws.send(frame(OP_TEXT, deflated(b"Hello"), rsv=RSV1))
        expect_close(ws, 1002, "RSV1 with --ws-deflate no: ")
        ws.close()


@test("handshake")
def t_handshake_websockets_client(_):
    """python3-websockets connects (it checks the Accept, the Upgrade and
    Connection fields and the extension's parameters itself), offers
    subprotocols the demo does not choose, and echoes."""
    with Server() as srv:
        async def go():
            async with websockets.connect(ws_url(srv), compression=None,
                                          subprotocols=["chat", "superchat"]) as c:
                checked(c.subprotocol is None, "subprotocol %r" % c.subprotocol)
                checked(c.response_headers.get("Sec-WebSocket-Protocol") is None,
                        c.response_headers)
                await c.send("hello, ünïcode 𝄞")
                checked(await c.recv() == "hello, ünïcode 𝄞", "text echo")
                await c.send(b"\x00\xffbinary")
                checked(await c.recv() == b"\x00\xffbinary", "binary echo")
            async with websockets.connect(ws_url(srv), origin="http://127.0.0.1:%d" % srv.port,
                                          compression=None) as c:
                await c.send("own origin")
                checked(await c.recv() == "own origin", "echo")
            try:
                async with websockets.connect(ws_url(srv), origin="http://evil.example"):
                    pass
                checked(False, "another site's origin was let in")
            except websockets.exceptions.InvalidStatusCode as e:
                checked(e.status_code == 403, "status %d, expected 403" % e.status_code)
        run_async(go())


# ---- framing (RFC 6455 §5.1, §5.2) ----

SIZES = (0, 1, 125, 126, 127, 65535, 65536, 65537, 1 << 20)


@test("framing")
def t_framing_sizes(_):
    """Text and binary echoes at each edge of the three length forms (7,
    16 and 64 bits) up to 1 MiB (the default --ws-max-message, which
    passes): the answer in the shortest form (checked by the reader)."""
    rng = random.Random(SEED)
    with Server() as srv:
        ws = open_ws(srv)
        for n in SIZES:
            binary = rng.randbytes(n)
            echo(ws, OP_BINARY, binary, what="binary %d: " % n)
            text = bytes(rng.choice(b"abcdefghijklmnopqrstuvwxyz ") for _ in range(min(n, 4096)))
            text = (text * (n // max(len(text), 1) + 1))[:n]
            echo(ws, OP_TEXT, text, what="text %d: " % n)
        # a zero mask, and lengths in longer forms than needed (§5.2 asks the
        # sender for the shortest; the reader takes any)
        echo(ws, OP_BINARY, b"zero mask", key=b"\0\0\0\0")
        echo(ws, OP_TEXT, b"sixteen", width=16)
        echo(ws, OP_TEXT, b"sixty-four", width=64)
        ws.close()


@test("framing")
def t_framing_pieces(_):
    """A frame arrives in pieces of any size (§5.2 says nothing of reads):
    byte by byte, head included, and several frames split at random
    offsets; several frames in one write are answered each, in order."""
    rng = random.Random(SEED + 1)
    with Server() as srv:
        ws = open_ws(srv)
        for n in (0, 5, 125, 300):
            payload = bytes(rng.randrange(256) for _ in range(n))
            echo(ws, OP_BINARY, payload, pieces=[1] * (n + 14), pause=0.0005,
                 what="byte by byte, %d: " % n)
        big = rng.randbytes(70000)  # a 64-bit length, its head byte by byte
        data = frame(OP_BINARY, big)
        ws.send(data, pieces=[1] * 14 + [rng.randrange(1, 9000) for _ in range(200)])
        expect_frame(ws.frame(), OP_BINARY, big, what="64-bit length in pieces: ")
        # many frames in one stream, cut at random places
        msgs = []
        for _ in range(60):
            n = rng.choice((0, 1, 7, 126, 200, 3000))
            msgs.append((rng.choice((OP_TEXT, OP_BINARY)),
                         bytes(rng.choice(b"0123456789abcdef") for _ in range(n))))
        stream = b"".join(frame(op, p) for op, p in msgs)
        cuts = []
        while sum(cuts) < len(stream):
            cuts.append(rng.choice((1, 2, 3, 5, 13, 64, 700, 4096)))
        ws.send(stream, pieces=cuts)
        for i, (op, p) in enumerate(msgs):
            expect_frame(ws.frame(), op, p, what="random pieces, message %d: " % i)
        # ten frames in one write: ten echoes, in order
        batch = [(OP_TEXT, b"one %d" % i) if i % 2 else (OP_BINARY, bytes([i]) * (i * 100))
                 for i in range(10)]
        ws.send(b"".join(frame(op, p) for op, p in batch))
        for op, p in batch:
            expect_frame(ws.frame(), op, p, what="one write: ")
        ws.close()


@test("framing")
def t_framing_mask_and_length(_):
    """§5.1: a client frame without the mask fails the connection with
    1002, whatever its length (an empty one included: the server may not
    wait for a mask that is not coming); §5.2: a 64-bit length with its
    most significant bit set, 1002."""
    with Server() as srv:
        for payload in (b"unmasked", b"", b"ab", b"x" * 200):
            fails(srv, frame(OP_TEXT, payload, mask=False), 1002,
                  "unmasked text of %d" % len(payload))
        fails(srv, frame(OP_PING, b"", mask=False), 1002, "unmasked ping")
        fails(srv, frame(OP_BINARY, b"", length=1 << 63, width=64), 1002,
              "64-bit length 2^63")
        fails(srv, frame(OP_BINARY, b"", length=(1 << 64) - 1, width=64), 1002,
              "64-bit length 2^64-1")
        # an echo first, then the bad frame: the echo comes, then the close
        ws = open_ws(srv)
        ws.send(frame(OP_TEXT, b"before") + frame(OP_TEXT, b"bad", mask=False))
        expect_frame(ws.frame(), OP_TEXT, b"before")
        expect_close(ws, 1002, "after an echo: ")
        ws.close()


# ---- pings (RFC 6455 §5.5.2, §5.5.3) ----

@test("pings")
def t_pings(_):
    """A ping gets a pong with its bytes (0 and 125: the most a control
    frame carries, §5.5); a burst of pings gets its pongs in order; an
    unsolicited pong gets nothing (§5.5.3); a ping between the fragments
    of a message is answered at once and the message arrives whole
    (§5.4: control frames may be injected)."""
    with Server() as srv:
        ws = open_ws(srv)
        ws.send(frame(OP_PING, b""))
        expect_frame(ws.frame(), OP_PONG, b"", what="empty ping: ")
        p125 = bytes(range(125))
        ws.send(frame(OP_PING, p125))
        expect_frame(ws.frame(), OP_PONG, p125, what="ping of 125: ")
        ws.send(frame(OP_PING, b"\xff\xfe binary"))
        expect_frame(ws.frame(), OP_PONG, b"\xff\xfe binary", what="binary ping: ")
        ws.send(b"".join(frame(OP_PING, b"%d" % i) for i in range(20)))
        for i in range(20):
            expect_frame(ws.frame(), OP_PONG, b"%d" % i, what="burst %d: " % i)
        # unsolicited pongs: no answer; the next frame is the echo
        ws.send(frame(OP_PONG, b"unsolicited") + frame(OP_PONG, b"") + frame(OP_TEXT, b"after"))
        expect_frame(ws.frame(), OP_TEXT, b"after", what="after pongs: ")
        # a ping inside a fragmented message
        ws.send(frame(OP_TEXT, b"frag-", fin=False) + frame(OP_PING, b"inside") +
                frame(OP_CONT, b"ment", fin=False) + frame(OP_PING, b"") +
                frame(OP_CONT, b"ed", fin=True))
        expect_frame(ws.frame(), OP_PONG, b"inside", what="ping inside: ")
        expect_frame(ws.frame(), OP_PONG, b"", what="second ping inside: ")
        expect_frame(ws.frame(), OP_TEXT, b"frag-mented", what="message around pings: ")
        # a ping in pieces, byte by byte
        ws.send(frame(OP_PING, b"slow ping"), pieces=[1] * 20, pause=0.0005)
        expect_frame(ws.frame(), OP_PONG, b"slow ping", what="ping byte by byte: ")
        ws.close()


@test("pings")
def t_pings_many(_):
    """100,000 pings of 125 bytes (12 MB of pongs, past what the kernel's
    buffers hold), the pongs read only after a while: every pong comes, in
    order, with its ping's bytes (the server stops reading while the
    pongs queue past --write-high-water, and goes on once they drain),
    and then the echo."""
    with Server("--write-high-water", "65536") as srv:
        ws = open_ws(srv, sock_opts=[(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)])
        n = 100000
        # a zero mask (§5.3 allows any key): the payloads stay readable
        pings = [b"%06d" % i + b"p" * 119 for i in range(n)]
        data = b"".join(b"\x89\xfd\0\0\0\0" + p for p in pings)
        data += frame(OP_TEXT, b"after the pings")
        writer = threading.Thread(target=ws.send, args=(data,))
        writer.start()
        time.sleep(0.5)  # unread meanwhile: the pongs pass the mark
        want = b"".join(b"\x8a\x7d" + p for p in pings)
        ok = ws._fill(len(want), time.time() + 60)
        got = bytes(ws.buf[:len(want)])
        del ws.buf[:len(want)]
        writer.join(WAIT)
        at = next((i for i in range(0, len(want), 127) if got[i:i + 127] != want[i:i + 127]),
                  None)
        checked(ok and at is None, "%d bytes of pongs, the first wrong one at %r: %r"
                % (len(got), at, got[at:at + 127] if at is not None else b""))
        expect_frame(ws.frame(), OP_TEXT, b"after the pings", what="after 100000 pings: ")
        ws.close()


@test("pings")
def t_pings_bad(_):
    """§5.5: a control frame of more than 125 bytes, or fragmented, fails
    the connection with 1002."""
    with Server() as srv:
        fails(srv, frame(OP_PING, b"x" * 126), 1002, "ping of 126")
        fails(srv, frame(OP_PING, b"x" * 65536), 1002, "ping of 65536")
        fails(srv, frame(OP_PONG, b"x" * 126), 1002, "pong of 126")
        fails(srv, frame(OP_PING, b"x", length=126, width=16)[:4 + 4], 1002,
              "ping announcing 126 (head only)")
        fails(srv, frame(OP_PING, b"part", fin=False) + frame(OP_CONT, b"rest"), 1002,
              "fragmented ping")
        fails(srv, frame(OP_PONG, b"part", fin=False), 1002, "fragmented pong")


@test("pings")
def t_pings_websockets_client(_):
    """python3-websockets' ping (with its own payload) is answered with
    the matching pong."""
    with Server() as srv:
        async def go():
            async with websockets.connect(ws_url(srv), compression=None,
                                          ping_interval=None) as c:
                for data in (b"", b"abc", bytes(range(125))):
                    waiter = await c.ping(data)
                    await asyncio.wait_for(waiter, WAIT)
                    checked(True, "pong")
                await c.send("still open")
                checked(await c.recv() == "still open", "echo after pings")
        run_async(go())


# ---- reserved bits (RFC 6455 §5.2; RFC 7692 §6) ----

@test("reserved")
def t_reserved_bits(_):
    """An RSV bit that no extension gave a meaning fails the connection
    with 1002 (§5.2): RSV1 without permessage-deflate, RSV2, RSV3, on data
    and control frames; a valid echo before the bad frame still comes
    first."""
    with Server() as srv:
        for rsv in (RSV1, RSV2, RSV3, RSV1 | RSV2, RSV2 | RSV3, RSV1 | RSV2 | RSV3):
            for op in (OP_TEXT, OP_BINARY, OP_PING, OP_CLOSE):
                payload = close_payload(1000) if op == OP_CLOSE else b"reserved"
                fails(srv, frame(op, payload, rsv=rsv), 1002, "rsv %d on opcode %d" % (rsv, op))
        ws = open_ws(srv)
        ws.send(frame(OP_TEXT, b"first") + frame(OP_TEXT, b"bad", rsv=RSV2))
        expect_frame(ws.frame(), OP_TEXT, b"first")
        expect_close(ws, 1002, "after an echo: ")
        ws.close()
        # with permessage-deflate, RSV1 means "compressed" on a message's
        # first frame only: still 1002 with RSV2 and RSV3, and on control
        # frames (RFC 7692 §6.1)
        for rsv, op in ((RSV2, OP_TEXT), (RSV3, OP_BINARY), (RSV1 | RSV2, OP_TEXT),
                        (RSV1, OP_PING), (RSV1, OP_PONG)):
            fails(srv, frame(op, deflated(b"x") if rsv & RSV1 else b"x", rsv=rsv), 1002,
                  "deflate agreed, rsv %d on opcode %d" % (rsv, op),
                  extensions="permessage-deflate")


# ---- opcodes (RFC 6455 §5.2) ----

@test("opcodes")
def t_opcodes_reserved(_):
    """Opcodes 3-7 (data) and 11-15 (control) are reserved: 1002, empty or
    with a payload, alone or after a valid echo."""
    with Server() as srv:
        for op in list(range(3, 8)) + list(range(11, 16)):
            fails(srv, frame(op), 1002, "opcode %d, empty" % op)
            fails(srv, frame(op, b"reserved opcode payload"), 1002, "opcode %d" % op)
            ws = open_ws(srv)
            ws.send(frame(OP_TEXT, b"echo first") + frame(op, b"x") + frame(OP_PING, b"p"))
            expect_frame(ws.frame(), OP_TEXT, b"echo first")
            expect_close(ws, 1002, "opcode %d after an echo: " % op)
            ws.close()


@test("opcodes")
def t_opcodes_in_fragments(_):
    """A reserved opcode between the fragments of a message: 1002."""
    with Server() as srv:
        for op in (3, 7, 11, 15):
            fails(srv, frame(OP_TEXT, b"a", fin=False) + frame(op, b"b") +
                  frame(OP_CONT, b"c"), 1002, "opcode %d inside a message" % op)


# ---- fragmentation (RFC 6455 §5.4) ----

@test("fragmentation")
def t_fragments(_):
    """A message in 2 to 100 fragments (some empty, the final one empty
    too) arrives whole, text and binary."""
    rng = random.Random(SEED + 2)
    with Server() as srv:
        ws = open_ws(srv)
        for n in range(2, 101):
            op = OP_TEXT if n % 2 else OP_BINARY
            parts = [bytes(rng.choice(b"abcdefgh ") for _ in range(rng.choice((0, 1, 5, 40))))
                     for _ in range(n)]
            data = b"".join(frame(op if i == 0 else OP_CONT, p, fin=(i == n - 1))
                            for i, p in enumerate(parts))
            ws.send(data)
            expect_frame(ws.frame(), op, b"".join(parts), what="%d fragments: " % n)
        for parts in ([b"hello", b""], [b"", b"world"], [b"", b"", b""], [b"a", b"", b"b", b""]):
            ws.send(b"".join(frame(OP_TEXT if i == 0 else OP_CONT, p, fin=(i == len(parts) - 1))
                             for i, p in enumerate(parts)))
            expect_frame(ws.frame(), OP_TEXT, b"".join(parts), what="empty fragments %r: " % parts)
        # fragments in pieces across writes
        data = b"".join(frame(OP_BINARY if i == 0 else OP_CONT, bytes([i]) * 1000, fin=(i == 9))
                        for i in range(10))
        ws.send(data, pieces=[rng.randrange(1, 1500) for _ in range(50)], pause=0.0002)
        expect_frame(ws.frame(), OP_BINARY, b"".join(bytes([i]) * 1000 for i in range(10)),
                     what="fragments in pieces: ")
        ws.close()


@test("fragmentation")
def t_fragments_bad(_):
    """§5.4: a continuation with no message begun, and a new data frame
    inside a fragmented message, fail the connection with 1002."""
    with Server() as srv:
        fails(srv, frame(OP_CONT, b"nothing begun"), 1002, "continuation, fin")
        fails(srv, frame(OP_CONT, b"nothing begun", fin=False), 1002, "continuation, not fin")
        fails(srv, frame(OP_CONT, b""), 1002, "empty continuation")
        ws = open_ws(srv)
        ws.send(frame(OP_TEXT, b"whole") + frame(OP_CONT, b"after the end"))
        expect_frame(ws.frame(), OP_TEXT, b"whole")
        expect_close(ws, 1002, "continuation after a whole message: ")
        ws.close()
        for op in (OP_TEXT, OP_BINARY):
            fails(srv, frame(OP_TEXT, b"begun", fin=False) + frame(op, b"new"), 1002,
                  "opcode %d inside a text message" % op)
            fails(srv, frame(OP_BINARY, b"begun", fin=False) + frame(op, b"new", fin=False), 1002,
                  "opcode %d inside a binary message" % op)


# ---- utf8 (RFC 6455 §5.6, §8.1; RFC 3629) ----

VALID_UTF8 = [
    "κόσμε".encode(), "€".encode(), "𝄞 music".encode(), "\U0010FFFF".encode(),
    "\uFFFF\uE000\uD7FF".encode(), "\u0080\u07FF\u0800".encode(), b"\x00\x7f",
    "Hello-µ@ßöäüàá-UTF-8!!".encode(), "日本語テキスト".encode() * 100,
]

INVALID_UTF8 = [
    (b"\xc0\xaf", "overlong / (2 bytes)"),
    (b"\xe0\x80\xaf", "overlong / (3 bytes)"),
    (b"\xf0\x80\x80\xaf", "overlong / (4 bytes)"),
    (b"\xc1\xbf", "overlong U+007F"),
    (b"\xed\xa0\x80", "surrogate U+D800"),
    (b"\xed\xbf\xbf", "surrogate U+DFFF"),
    (b"\xf4\x90\x80\x80", "U+110000"),
    (b"\xf5\x80\x80\x80", "lead byte F5"),
    (b"\xff", "byte FF"),
    (b"\xfe", "byte FE"),
    (b"\x80", "a lone continuation byte"),
    (b"ok \xce", "truncated at the message's end (2 bytes)"),
    (b"ok \xe2\x82", "truncated at the message's end (3 bytes)"),
    (b"ok \xf0\x9d\x84", "truncated at the message's end (4 bytes)"),
    (b"\xce\xba\xe1\xbd\xb9\xcf\x83\xce\xbc\xce\xb5\xed\xa0\x80edited", "surrogate inside"),
]


@test("utf8")
def t_utf8_valid(_):
    """Valid UTF-8 of 1 to 4 bytes a code point is echoed exactly; a
    code point split across fragments, in every way, is valid."""
    with Server() as srv:
        ws = open_ws(srv)
        for t in VALID_UTF8:
            echo(ws, OP_TEXT, t, what="%r: " % t[:20])
        for cp in ("é", "€", "𝄞", "\U0010FFFF"):
            b = cp.encode()
            for cut in range(1, len(b)):
                ws.send(frame(OP_TEXT, b"<" + b[:cut], fin=False) + frame(OP_CONT, b[cut:] + b">"))
                expect_frame(ws.frame(), OP_TEXT, b"<" + b + b">",
                             what="%r split at %d: " % (cp, cut))
        # one byte a fragment (Autobahn 6.2.4)
        t = "Hello-µ@ßöäüàá-UTF-8!!𝄞".encode()
        ws.send(b"".join(frame(OP_TEXT if i == 0 else OP_CONT, t[i:i + 1], fin=(i == len(t) - 1))
                         for i in range(len(t))))
        expect_frame(ws.frame(), OP_TEXT, t, what="a byte a fragment: ")
        # invalid bytes in a binary message are nobody's business
        echo(ws, OP_BINARY, b"\xff\xfe\xc0\xaf\xed\xa0\x80")
        ws.close()


@test("utf8")
def t_utf8_invalid(_):
    """§8.1: invalid UTF-8 in a text message fails the connection with
    1007, in one frame or across fragments."""
    with Server() as srv:
        for bad, what in INVALID_UTF8:
            fails(srv, frame(OP_TEXT, bad), 1007, what)
            if len(bad) > 1:
                fails(srv, frame(OP_TEXT, bad[:1], fin=False) + frame(OP_CONT, bad[1:]), 1007,
                      what + ", in two fragments")
        # an empty final fragment after a truncated sequence
        fails(srv, frame(OP_TEXT, b"\xe2\x82", fin=False) + frame(OP_CONT, b""), 1007,
              "truncated before an empty final fragment")


@test("utf8")
def t_utf8_fail_fast(_):
    """§8.1: the connection fails at the first invalid byte, before the
    message ends (Autobahn 6.4): the rest of the frame or the next
    fragments are never sent, the close 1007 comes all the same."""
    with Server() as srv:
        valid = "κόσμε".encode()
        for bad in (b"\xf4\x90", b"\xed\xa0", b"\xc0", b"\xff", b"\xe0\x80"):
            # a first fragment ending in the bad bytes; no more fragments
            fails(srv, frame(OP_TEXT, valid + bad, fin=False), 1007,
                  "fragment ending in %r" % bad)
            # a frame of 1000 bytes of which only the prefix is sent
            whole = frame(OP_TEXT, (valid + bad + b"x" * 1000)[:1000])
            head = 2 + 2 + 4
            fails(srv, whole[:head + len(valid) + len(bad)], 1007,
                  "frame cut after %r" % bad)


# ---- close (RFC 6455 §5.5.1, §7) ----

@test("close")
def t_close_handshake(_):
    """§5.5.1: a close is answered with a close with the same code (none
    for none), and then the server closes TCP first (§7.1.1); what the
    client sends after its close gets no answer."""
    with Server() as srv:
        ws = open_ws(srv)
        ws.send(frame(OP_CLOSE, close_payload(1000, b"bye now")))
        expect_close(ws, 1000, "close 1000 with a reason: ")
        ws.close()
        ws = open_ws(srv)
        ws.send(frame(OP_CLOSE, b""))
        expect_close(ws, None, "close with no payload: ")
        ws.close()
        # the longest reason (123 bytes: 125 with the code)
        ws = open_ws(srv)
        ws.send(frame(OP_CLOSE, close_payload(1001, "é".encode() * 61 + b"x")))
        expect_close(ws, 1001, "close with a reason of 123: ")
        ws.close()
        # data, a ping and a close after the close: none answered
        ws = open_ws(srv)
        ws.send(frame(OP_CLOSE, close_payload(1000)) + frame(OP_TEXT, b"after") +
                frame(OP_PING, b"after") + frame(OP_CLOSE, close_payload(1001)))
        expect_close(ws, 1000, "data after the close: ")
        ws.close()
        # a large message and the close in one write (Autobahn 7.1.6): the
        # echo (past --write-high-water: the server pauses its reading until
        # it drains), then the close
        big = bytes(range(256)) * 2048
        ws = open_ws(srv)
        ws.send(frame(OP_BINARY, big) + frame(OP_CLOSE, close_payload(1000)))
        expect_frame(ws.frame(), OP_BINARY, big, what="512 KiB before a close: ")
        expect_close(ws, 1000, "close after a large message: ")
        ws.close()
        # the close in pieces, and between the fragments of a message
        ws = open_ws(srv)
        ws.send(frame(OP_CLOSE, close_payload(1000, b"slow")), pieces=[1] * 12, pause=0.0005)
        expect_close(ws, 1000, "close byte by byte: ")
        ws.close()
        ws = open_ws(srv)
        ws.send(frame(OP_TEXT, b"never ", fin=False) + frame(OP_CLOSE, close_payload(1000)) +
                frame(OP_CONT, b"finished"))
        expect_close(ws, 1000, "close inside a message: ")
        ws.close()
        # the client's FIN without a close frame: the server ends too (§7.1.5),
        # without a frame
        ws = open_ws(srv)
        echo(ws, OP_TEXT, b"then FIN")
        ws.sock.shutdown(socket.SHUT_WR)
        expect_end_without_close(ws, "FIN: ")
        ws.close()


@test("close")
def t_close_going_away(_):
    """A graceful stop (SIGTERM) says goodbye to an open WebSocket: a close
    with 1001, "going away" (§7.4.1), then the end; the server exits 0."""
    srv = Server()
    try:
        ws = open_ws(srv)
        echo(ws, OP_TEXT, b"before the stop")
        srv.proc.send_signal(signal.SIGTERM)
        expect_close(ws, 1001, "graceful stop: ")
        ws.close()
    finally:
        rc = srv.stop()
    checked(rc == 0, "cshttpd exited %r" % rc)


@test("close")
def t_close_codes(_):
    """§7.4.1, §7.4.2: a code a close frame may carry is echoed; one it may
    not (reserved, unassigned, out of range) fails with 1002; a payload
    of one byte, 1002; a reason that is not UTF-8, 1007."""
    with Server() as srv:
        for code in (1000, 1001, 1002, 1003, 1007, 1008, 1009, 1010, 1011, 3000, 3999, 4000,
                     4999):
            ws = open_ws(srv)
            ws.send(frame(OP_CLOSE, close_payload(code, b"reason")))
            expect_close(ws, code, "valid code %d: " % code)
            ws.close()
        for code in (0, 999, 1004, 1005, 1006, 1015, 1016, 1100, 2000, 2999, 5000, 65535):
            fails(srv, frame(OP_CLOSE, close_payload(code)), 1002, "invalid code %d" % code)
        fails(srv, frame(OP_CLOSE, b"\x03"), 1002, "a payload of one byte")
        for bad, what in INVALID_UTF8[:12]:
            fails(srv, frame(OP_CLOSE, close_payload(1000, bad)), 1007, "reason " + what)
        fails(srv, frame(OP_CLOSE, close_payload(1000, b"x" * 124)), 1002, "payload of 126")


@test("close")
def t_close_websockets_client(_):
    """python3-websockets' closing handshake: its close code and reason
    answered with the same code; the server ends TCP and the client sees
    a clean close."""
    with Server() as srv:
        async def go():
            c = await websockets.connect(ws_url(srv), compression=None)
            await c.send("last")
            checked(await c.recv() == "last", "echo")
            await c.close(4000, "done")
            checked(c.close_code == 4000, "close code %r" % c.close_code)
            checked(c.closed, "not closed")
            await c.wait_closed()
        run_async(go())


# ---- limits (RFC 6455 §7.4.1 1009, §10.4) ----

@test("limits")
def t_limits_message(_):
    """--ws-max-message 64k: a message of exactly 65536 bytes passes, in
    one frame and in fragments; one byte more is 1009, in one frame
    (refused from the head alone: the payload is never sent) and in
    fragments."""
    lim = 65536
    rng = random.Random(SEED + 3)
    with Server("--ws-max-message", "64k") as srv:
        ws = open_ws(srv)
        for op in (OP_BINARY, OP_TEXT):
            data = rng.randbytes(lim) if op == OP_BINARY else b"t" * lim
            echo(ws, op, data, what="exactly the limit: ")
            ws.send(b"".join(frame(op if i == 0 else OP_CONT, data[i * 4096:(i + 1) * 4096],
                                   fin=(i == 15)) for i in range(16)))
            expect_frame(ws.frame(), op, data, what="the limit in 16 fragments: ")
        ws.close()
        fails(srv, frame(OP_BINARY, b"\0" * (lim + 1)), 1009, "limit + 1 in one frame")
        fails(srv, frame(OP_TEXT, b"\0", length=lim + 1)[:2 + 8 + 4], 1009,
              "limit + 1 announced, head only")
        fails(srv, frame(OP_BINARY, b"", length=1 << 40)[:2 + 8 + 4], 1009,
              "2^40 announced, head only")
        fails(srv, frame(OP_BINARY, b"\0" * 40000, fin=False) + frame(OP_CONT, b"\0" * 25537),
              1009, "limit + 1 in two fragments")
        fails(srv, frame(OP_TEXT, b"a" * lim, fin=False) + frame(OP_CONT, b"a"), 1009,
              "the limit, then one more byte in a fragment")


@test("limits")
def t_limits_websockets_client(_):
    """python3-websockets sees the limit as the server's close 1009 (a
    message of 64k + 1), after a message of exactly 64k was echoed."""
    with Server("--ws-max-message", "64k") as srv:
        async def go():
            async with websockets.connect(ws_url(srv), compression=None) as c:
                await c.send(b"L" * 65536)
                checked(await c.recv() == b"L" * 65536, "the limit echoed")
                await c.send(b"L" * 65537)
                try:
                    await c.recv()
                    checked(False, "a message past the limit was echoed")
                except websockets.exceptions.ConnectionClosedError as e:
                    checked(e.rcvd is not None and e.rcvd.code == 1009,
                            "closed with %r, expected 1009" % (e.rcvd,))
        run_async(go())


@test("limits")
def t_limits_fragments(_):
    """A message of 4096 frames passes; of 4097, 1009 (empty ones
    included)."""
    with Server("--ws-max-message", "64k") as srv:
        ws = open_ws(srv)
        n = 4096
        ws.send(b"".join(frame(OP_TEXT if i == 0 else OP_CONT, b"f", fin=(i == n - 1))
                         for i in range(n)))
        expect_frame(ws.frame(), OP_TEXT, b"f" * n, what="4096 fragments: ")
        ws.close()
        fails(srv, b"".join(frame(OP_BINARY if i == 0 else OP_CONT, b"f", fin=(i == n))
                            for i in range(n + 1)), 1009, "4097 fragments")
        fails(srv, frame(OP_TEXT, b"", fin=False) +
              b"".join(frame(OP_CONT, b"", fin=False) for _ in range(n)), 1009,
              "4097 empty frames, no end")


# ---- compression (RFC 7692) ----

def open_deflate(srv, offer="permessage-deflate", want=PMD):
    ws = open_ws(srv, extensions=offer)
    got = field(ws.pairs, "sec-websocket-extensions")
    assert got == want, "offer %r answered %r" % (offer, got)
    return ws


def expect_message(ws, op, data, wbits=15, what=""):
    """The next frame is a whole message op with data, compressed or not
    (the server compresses what is worth it); returns its RSV1."""
    f = ws.frame()
    checked(f is not None, what + "the connection ended")
    checked(f.op == op and f.fin == 1 and f.rsv in (0, RSV1), "%sgot %r" % (what, f))
    got = inflated(f.payload, wbits) if f.rsv == RSV1 else f.payload
    checked(got == data, "%s%d bytes (%s), expected %d" % (
        what, len(got), "compressed" if f.rsv else "plain", len(data)))
    return f.rsv == RSV1, len(f.payload)


@test("compression")
def t_compression_echo(_):
    """RFC 7692 §7.2.3.1's example ("Hello" compressed, c1 07 f2 48 cd c9
    c9 07 00 once unmasked) is echoed, uncompressed (short); compressed
    messages of every kind are inflated (§7.2.2) and the server's
    compressed answers inflate to the message; a message sent
    uncompressed on a compressing socket is fine too (§6)."""
    rng = random.Random(SEED + 4)
    with Server() as srv:
        ws = open_deflate(srv)
        example = bytes.fromhex("f248cdc9c90700")
        checked(deflated(b"Hello") == example, "zlib's Hello is not RFC 7692's example")
        ws.send(frame(OP_TEXT, example, rsv=RSV1))
        expect_frame(ws.frame(), OP_TEXT, b"Hello", what="RFC 7692 §7.2.3.1: ")
        # §7.2.3.6: an empty message, compressed as one 00 byte
        ws.send(frame(OP_TEXT, b"\x00", rsv=RSV1))
        expect_frame(ws.frame(), OP_TEXT, b"", what="empty compressed: ")
        # §7.2.3.2: the same message as two fragments, RSV1 on the first
        ws.send(frame(OP_TEXT, example[:3], rsv=RSV1, fin=False) + frame(OP_CONT, example[3:]))
        expect_frame(ws.frame(), OP_TEXT, b"Hello", what="compressed in fragments: ")
        # §7.2.3.4: a stored (uncompressed) deflate block
        ws.send(frame(OP_TEXT, b"\x00\x05\x00\xfa\xffHello\x00", rsv=RSV1))
        expect_frame(ws.frame(), OP_TEXT, b"Hello", what="stored block: ")
        # §7.2.3.5: a message ended by a final block (BFINAL)
        ws.send(frame(OP_BINARY, deflated(b"final block" * 10, final=True), rsv=RSV1))
        expect_message(ws, OP_BINARY, b"final block" * 10, what="BFINAL: ")
        text = ("Lorem ipsum dolor sit amet, ünïcödé €𝄞 " * 2000).encode()
        for op, data in ((OP_TEXT, text), (OP_BINARY, text), (OP_BINARY, rng.randbytes(100000)),
                         (OP_TEXT, b"x" * 1000000), (OP_BINARY, b"")):
            ws.send(frame(op, deflated(data), rsv=RSV1))
            comp, n = expect_message(ws, op, data, what="compressed %d: " % len(data))
            if data and data[:10] == text[:10] or data[:5] == b"xxxxx":
                # a repetitive message is sent compressed, much smaller
                checked(comp and n < len(data) // 10, "answer of %d bytes not compressed (%d)"
                        % (len(data), n))
            ws.send(frame(op, deflated(data), rsv=RSV1, fin=False) + frame(OP_CONT, b""))
            expect_message(ws, op, data, what="compressed, empty last fragment: ")
        # a compressed message in many fragments, split at random places
        z = deflated(text)
        cuts = sorted(rng.sample(range(1, len(z)), 30))
        pieces = [z[a:b] for a, b in zip([0] + cuts, cuts + [len(z)])]
        ws.send(b"".join(frame(OP_TEXT if i == 0 else OP_CONT, p, rsv=RSV1 if i == 0 else 0,
                               fin=(i == len(pieces) - 1)) for i, p in enumerate(pieces)))
        expect_message(ws, OP_TEXT, text, what="31 compressed fragments: ")
        # a ping between compressed fragments is answered first (RFC 6455
        # §5.4); code points of 3 bytes cut at every inflate boundary
        euro = "€".encode() * 100000
        z = deflated(euro)
        ws.send(frame(OP_TEXT, z[:len(z) // 2], rsv=RSV1, fin=False) + frame(OP_PING, b"mid") +
                frame(OP_CONT, z[len(z) // 2:]))
        expect_frame(ws.frame(), OP_PONG, b"mid", what="ping inside a compressed message: ")
        expect_message(ws, OP_TEXT, euro, what="300 KB of euros: ")
        # uncompressed messages on the same socket
        echo(ws, OP_TEXT, b"plain text")
        ws.send(frame(OP_BINARY, b"p" * 5000))
        expect_message(ws, OP_BINARY, b"p" * 5000, what="plain binary: ")
        ws.close()


@test("compression")
def t_compression_window_bits(_):
    """RFC 7692 §7.1.2: client_max_window_bits=9 agreed, and a message the
    client compressed with 9 bits inflated; server_max_window_bits=10
    agreed, and the server's answer inflates with a window of 10 bits
    (zlib refuses a distance beyond it)."""
    rng = random.Random(SEED + 5)
    with Server() as srv:
        ws = open_deflate(srv, "permessage-deflate; client_max_window_bits=9",
                          PMD + "; client_max_window_bits=9")
        data = b"".join(rng.choice((b"alpha ", b"beta ", b"gamma ")) for _ in range(5000))
        ws.send(frame(OP_TEXT, deflated(data, 9), rsv=RSV1))
        expect_message(ws, OP_TEXT, data, what="client window 9: ")
        ws.close()
        # repeats 4000 bytes apart: a 15-bit compressor refers back past 1024
        block = rng.randbytes(4000)
        data = block * 20
        for wbits in (10, 12):
            ws = open_deflate(srv, "permessage-deflate; server_max_window_bits=%d" % wbits,
                              PMD + "; server_max_window_bits=%d" % wbits)
            ws.send(frame(OP_BINARY, data))
            expect_message(ws, OP_BINARY, data, wbits=wbits, what="server window %d: " % wbits)
            ws.close()
        # the check has teeth: 15 bits' output does not inflate with 10
        try:
            inflated(deflated(data, 15), 10)
            checked(False, "zlib inflated a 15-bit stream with a 10-bit window")
        except zlib.error:
            checked(True, "")


@test("compression")
def t_compression_bad(_):
    """A deflate bomb (a small compressed message that inflates past
    --ws-max-message) is 1009 (§8, RFC 6455 §10.4); compressed invalid
    UTF-8 is 1007; data that is not deflate is 1007; RSV1 on a
    continuation frame is 1002 (§6.1)."""
    with Server() as srv:  # --ws-max-message: 1 MiB
        bomb = deflated(b"\0" * (2 << 20))
        checked(len(bomb) < 4096, "bomb of %d bytes" % len(bomb))
        fails(srv, frame(OP_BINARY, bomb, rsv=RSV1), 1009, "a 2 MiB bomb",
              extensions="permessage-deflate")
        fails(srv, frame(OP_TEXT, deflated(b"a" * ((1 << 20) + 1)), rsv=RSV1), 1009,
              "1 MiB + 1 inflated", extensions="permessage-deflate")
        ws = open_deflate(srv)
        ws.send(frame(OP_TEXT, deflated(b"a" * (1 << 20)), rsv=RSV1))
        expect_message(ws, OP_TEXT, b"a" * (1 << 20), what="exactly 1 MiB inflated: ")
        ws.close()
        # one deflate stream in three fragments, one byte past the limit
        z = deflated(b"\0" * (1 << 20) + b"x")
        third = len(z) // 3
        fails(srv, frame(OP_BINARY, z[:third], rsv=RSV1, fin=False) +
              frame(OP_CONT, z[third:2 * third], fin=False) + frame(OP_CONT, z[2 * third:]),
              1009, "a bomb in fragments", extensions="permessage-deflate")
        for bad, what in INVALID_UTF8[:11]:
            fails(srv, frame(OP_TEXT, deflated(b"valid " + bad + b" text"), rsv=RSV1), 1007,
                  "compressed " + what, extensions="permessage-deflate")
        fails(srv, frame(OP_TEXT, deflated(b"ok \xe2\x82"), rsv=RSV1), 1007,
              "compressed, truncated at the end", extensions="permessage-deflate")
        for junk in (b"\xff\xff\xff\xff", b"\x07", bytes(range(256)) * 4,
                     b"\x00\x05\x00\x00\x00Hello"):
            fails(srv, frame(OP_BINARY, junk, rsv=RSV1), 1007, "not deflate %r" % junk[:8],
                  extensions="permessage-deflate")
        fails(srv, frame(OP_TEXT, deflated(b"He"), rsv=RSV1, fin=False) +
              frame(OP_CONT, deflated(b"llo"), rsv=RSV1), 1002, "RSV1 on a continuation",
              extensions="permessage-deflate")
        fails(srv, frame(OP_TEXT, b"He", fin=False) + frame(OP_CONT, deflated(b"llo"), rsv=RSV1),
              1002, "RSV1 on the continuation of a plain message",
              extensions="permessage-deflate")


@test("compression")
def t_compression_websockets_client(_):
    """python3-websockets with permessage-deflate: its offer agreed (no
    context takeover both ways, its window bits), and messages of many
    sizes, compressible and not, echoed byte for byte both ways; then a
    server window of 10 bits asked for and kept to (the client inflates
    with it and fails on anything wider)."""
    rng = random.Random(SEED + 6)
    with Server() as srv:
        async def go(extensions=None, want=None):
            kw = {"extensions": extensions, "compression": None} if extensions else {}
            async with websockets.connect(ws_url(srv), max_size=1 << 21, **kw) as c:
                ext = [e for e in c.extensions if isinstance(e, PerMessageDeflate)]
                checked(len(ext) == 1, "extensions %r" % c.extensions)
                e = ext[0]
                checked((e.remote_no_context_takeover, e.local_no_context_takeover,
                         e.remote_max_window_bits, e.local_max_window_bits) == want,
                        "agreed %r" % (vars(e),))
                for i in range(60):
                    n = int(2 ** rng.uniform(0, 20))
                    if i % 3 == 0:
                        msg = rng.randbytes(n)
                    elif i % 3 == 1:
                        msg = (b"compressible " * (n // 13 + 1))[:n]
                    else:
                        msg = ("€ünï " * (n // 11 + 1))[:max(n // 3, 1)]
                    await c.send(msg)
                    got = await c.recv()
                    checked(got == msg, "message %d of %d bytes not echoed exactly" % (i, n))
        run_async(go(want=(True, True, 15, 15)))
        # an offered server_max_window_bits must be answered (§7.1.2.1): the
        # client fails the handshake otherwise
        run_async(go([ClientPerMessageDeflateFactory(server_max_window_bits=15)],
                     (True, True, 15, 15)))
        run_async(go([ClientPerMessageDeflateFactory(server_max_window_bits=10,
                                                     client_max_window_bits=11)],
                     (True, True, 10, 11)))


# ---- liveness (the session's pings and deadlines) ----

LIVE = ("--ws-ping-interval-ms", "300", "--ws-pong-timeout-ms", "300",
        "--sweep-interval-ms", "50")


@test("liveness")
def t_liveness_ping(_):
    """A silent client gets a ping (§5.5.2: a keepalive) after
    --ws-ping-interval-ms."""
    with Server(*LIVE) as srv:
        ws = open_ws(srv)
        f = ws.frame(timeout=WAIT)
        expect_frame(f, OP_PING, f.payload if f else b"", what="silence: ")
        checked(len(f.payload) <= 125, "ping of %d bytes" % len(f.payload))
        ws.close()


@test("liveness")
def t_liveness_dead_peer(_):
    """A client that never answers the pings is dropped (its TCP ended)
    within a bounded time: pings only, then the end."""
    with Server(*LIVE) as srv:
        ws = open_ws(srv)
        t0 = time.time()
        pings = 0
        while True:
            f = ws.frame(timeout=20)
            if f is None:
                break
            checked(f.op == OP_PING, "%r while silent, expected pings" % f)
            pings += 1
        checked(pings >= 1, "ended without a ping first")
        checked(time.time() - t0 < 20, "not ended within 20 s")
        checked(wait_tunnels(srv, 0) == 0, "the server still holds the socket")
        ws.close()


@test("liveness")
def t_liveness_pongs_keep_open(_):
    """A client that answers each ping with its pong (and says nothing
    else) stays open across several ping cycles, then echoes."""
    with Server(*LIVE) as srv:
        ws = open_ws(srv)
        for i in range(4):
            f = ws.frame(timeout=WAIT)
            expect_frame(f, OP_PING, f.payload if f else b"", what="cycle %d: " % i)
            ws.send(frame(OP_PONG, f.payload))
        echo(ws, OP_TEXT, b"alive after 4 pings")
        ws.close()
        # python3-websockets answers pings by itself: open past many cycles
        async def go():
            async with websockets.connect(ws_url(srv), ping_interval=None) as c:
                await asyncio.sleep(2.5)
                await c.send("still here")
                checked(await c.recv() == "still here", "echo after 2.5 s of pings")
        run_async(go())


# ---- abuse ----

def rss_kib(pid):
    return proc_status(pid, "VmRSS")


@test("abuse")
def t_abuse_no_reader(_):
    """A client that sends large messages and never reads is cut (the
    engine's --send-timeout-ms once the echo's queue is past
    --write-high-water and its reading paused), its queue bounded, while
    another client is answered throughout."""
    with Server("--send-timeout-ms", "1000", "--write-high-water", "65536",
                "--sweep-interval-ms", "50") as srv:
        rss0 = rss_kib(srv.proc.pid)
        a = open_ws(srv, sock_opts=[(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)])
        a.sock.setblocking(False)
        msg = frame(OP_BINARY, b"\x5a" * (256 << 10))
        sent, t_end = 0, time.time() + 15
        while sent < (128 << 20) and time.time() < t_end:
            _, w, _ = select.select([], [a.sock], [], 1.0)
            if not w:
                break  # held back a second: the server stopped reading
            try:
                sent += a.sock.send(msg[sent % len(msg):])
            except (BlockingIOError, InterruptedError):
                pass
            except (BrokenPipeError, ConnectionResetError):
                break
        checked(sent < (64 << 20), "a client that does not read sent %d MiB" % (sent >> 20))
        b = open_ws(srv)
        for i in range(3):
            echo(b, OP_TEXT, b"answered while the other stalls %d" % i)
        checked(rss_kib(srv.proc.pid) - rss0 < 32 << 10, "server RSS grew past 32 MiB")
        # the stalled one is cut: only b is left
        checked(wait_tunnels(srv, 1) == 1, "the client that does not read was not cut")
        echo(b, OP_TEXT, b"answered after the cut")
        b.close()
        # what a got before its end is fewer echoes than it sent
        a.sock.setblocking(True)
        rest = a.ended(timeout=WAIT)
        checked(len(rest) < sent, "got %d of %d bytes echoed" % (len(rest), sent))
        a.close()


@test("abuse")
def t_abuse_ping_flood(_):
    """A client that floods pings and never reads the pongs: the server
    stops reading it once the pongs queue past --write-high-water (its
    memory bounded), and the send timeout cuts it."""
    with Server("--send-timeout-ms", "1000", "--write-high-water", "65536",
                "--sweep-interval-ms", "50") as srv:
        rss0 = rss_kib(srv.proc.pid)
        a = open_ws(srv, sock_opts=[(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)])
        a.sock.setblocking(False)
        pings = b"".join(frame(OP_PING, b"p" * 125) for _ in range(500))
        sent, t_end = 0, time.time() + 15
        while sent < (64 << 20) and time.time() < t_end:
            _, w, _ = select.select([], [a.sock], [], 1.0)
            if not w:
                break
            try:
                sent += a.sock.send(pings[sent % len(pings):])
            except (BlockingIOError, InterruptedError):
                pass
            except (BrokenPipeError, ConnectionResetError):
                break
        grew = rss_kib(srv.proc.pid) - rss0
        checked(sent < (32 << 20), "a ping flood that is not read sent %d MiB" % (sent >> 20))
        checked(grew < 32 << 10, "server RSS grew %d KiB under a ping flood" % grew)
        checked(wait_tunnels(srv, 0) == 0, "the flooder was not cut")
        a.close()


@test("abuse")
def t_abuse_fragment_flood(_):
    """Empty continuation frames without end: cut at 4097 frames with 1009,
    sent in one write or as they come."""
    with Server() as srv:
        flood = frame(OP_TEXT, b"", fin=False) + frame(OP_CONT, b"", fin=False) * 20000
        fails(srv, flood, 1009, "20000 empty fragments in one write")
        fails(srv, flood, 1009, "20000 empty fragments in pieces",
              pieces=[997] * (len(flood) // 997 + 1))
        ws = open_ws(srv)
        echo(ws, OP_TEXT, b"the server is fine")
        ws.close()


@test("abuse")
def t_abuse_thousand_idle(_):
    """1000 open WebSockets hold no thread each: the process's threads
    (/proc/PID/status) grow by far less than 1000 while they are open, and
    every one still echoes afterwards."""
    n = 1000
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    fds = 4096 if hard == resource.RLIM_INFINITY else min(hard, 4096)
    assert fds >= n + 200, "RLIMIT_NOFILE's hard limit %d is below %d" % (hard, n + 200)
    if soft < fds:
        resource.setrlimit(resource.RLIMIT_NOFILE, (fds, hard))
    with Server(max_fds=fds) as srv:
        first = open_ws(srv)
        echo(first, OP_TEXT, b"warm")
        first.close()
        wait_tunnels(srv, 0)
        before = proc_status(srv.proc.pid, "Threads")
        socks = []
        try:
            for i in range(n):
                socks.append(open_ws(srv))
            checked(wait_tunnels(srv, n) == n, "the server does not hold %d sockets" % n)
            after = proc_status(srv.proc.pid, "Threads")
            print("     threads %d -> %d with %d sockets open" % (before, after, n))
            checked(after - before < 32, "threads %d -> %d with %d sockets open"
                    % (before, after, n))
            for i, ws in enumerate(socks):
                ws.send(frame(OP_TEXT, b"socket %d" % i))
            for i, ws in enumerate(socks):
                f = ws.frame()
                if f is None or f.op != OP_TEXT or f.payload != b"socket %d" % i:
                    checked(False, "socket %d answered %r" % (i, f))
            checked(True, "all echoed")
            for ws in socks:
                ws.send(frame(OP_CLOSE, close_payload(1000)))
            for i, ws in enumerate(socks):
                f = ws.frame()
                if f is None or f.op != OP_CLOSE or f.payload[:2] != close_payload(1000):
                    checked(False, "socket %d closed with %r" % (i, f))
            checked(True, "all closed")
        finally:
            for ws in socks:
                ws.close()


@test("abuse")
def t_abuse_thousand_messages(_):
    """python3-websockets echoes 1,000 messages of random sizes from 1 byte
    to 1 MiB (log-uniform, both ends included), text and binary, byte for
    byte, sent while the answers come back."""
    rng = random.Random(SEED + 7)
    sizes = [1, 1 << 20] + [int(2 ** rng.uniform(0, 20)) for _ in range(998)]
    rng.shuffle(sizes)

    def message(i, n):
        if i % 4 == 0:
            head = "é€𝄞".encode()  # 9 bytes of 2, 3 and 4-byte code points
            body = bytes(rng.choice(b"abcdefghijklmnopqrstuvwxyz0123456789 ")
                         for _ in range(min(n, 512)))
            body = (body * (n // len(body) + 1))
            return (head + body)[:n].decode("utf-8", errors="ignore") if n >= 9 \
                else body[:n].decode()
        return rng.randbytes(n)

    msgs = [message(i, n) for i, n in enumerate(sizes)]
    with Server() as srv:
        async def go():
            async with websockets.connect(ws_url(srv), compression=None, max_size=1 << 20,
                                          max_queue=8) as c:
                async def sender():
                    for m in msgs:
                        await c.send(m)

                task = asyncio.create_task(sender())
                total = 0
                for i, m in enumerate(msgs):
                    got = await c.recv()
                    if got != m:
                        checked(False, "message %d (%d bytes) not echoed exactly" % (i, len(m)))
                    total += len(got)
                await task
                want = sum(len(m) for m in msgs)
                checked(total == want, "%d bytes echoed of %d" % (total, want))
                print("     %d messages, %.1f MB echoed" % (len(msgs), total / 1e6))
        run_async(go(), timeout=300)


# ---- the runner ----

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--group", default=None)
    args = ap.parse_args()
    args.tmp = tempfile.mkdtemp(prefix="cshttpd-ws-test-")
    args.root = os.path.join(args.tmp, "www")
    os.mkdir(args.root)
    T.ARGS = args
    print("websockets %s, seed %d (CSHTTP_WS_SEED)" % (websockets.__version__, SEED), flush=True)
    try:
        failed = T.run_groups(TESTS, args.group, args.tmp, CHECKS)
    finally:
        shutil.rmtree(args.tmp, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
