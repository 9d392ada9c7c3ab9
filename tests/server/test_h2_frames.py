#!/usr/bin/env python3
"""HTTP/2 (RFC 9113) frame by frame against a real `cshttpd --demo`: h2c
with prior knowledge on the plain port, each case written by hand in the
groups fields, pseudo, limits, floods, flow and stop.

Two clients talk to the server. Debian's python3-h2 (H2Connection with
every validation and normalization of its own turned off, so it sends
uppercase names, connection-specific fields, CR/LF/NUL in values and
pseudo-header fields in any order) is the client of the well-formed
exchanges and of the malformed requests it can encode; the `Raw` client
below builds the frames python-h2 refuses to write or whose answers it
would not read (a CONTINUATION, PING, SETTINGS, RST_STREAM or empty DATA
flood, a bad preface, streams past MAX_CONCURRENT_STREAMS, frames that
come after a GOAWAY): a 9-byte frame header and its payload, the field
blocks encoded and decoded with hpack (shipped with python3-h2).

Every refusal is checked exactly: the stream's RST_STREAM and its error
code, or the connection's GOAWAY and its code. After each, the server
must still answer: a new stream on the same connection after a stream
error, and a fresh connection in every case (GET /demo/plaintext, 200,
"Hello, World!"). Waits are bounded generously and only end a test that
would otherwise hang; no result depends on speed.

Usage: test_h2_frames.py --bin path/to/cshttpd [--group NAME]
"""
import os
import sys

# python3-h2 is Debian's (/usr/bin/python3); another interpreter that runs
# this file without it hands over to that one.
try:
    import h2  # noqa: F401
except ImportError:
    system = "/usr/bin/python3"
    first = os.environ.get("CSHTTP_H2_REEXEC")  # the interpreter that handed over
    if (not first and os.path.exists(system)
            and os.path.realpath(sys.executable or "") != os.path.realpath(system)):
        os.environ["CSHTTP_H2_REEXEC"] = sys.executable or "python3"
        os.execv(system, [system, os.path.abspath(__file__)] + sys.argv[1:])
    sys.exit("test_h2_frames.py: the Python module 'h2' is missing from %s: "
             "install python3-h2 (scripts/install-deps.sh)"
             % " and ".join(([first] if first else []) + [sys.executable]))

import argparse  # noqa: E402
import json  # noqa: E402
import shutil  # noqa: E402
import signal  # noqa: E402
import socket  # noqa: E402
import struct  # noqa: E402
import tempfile  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402

import hpack  # noqa: E402
import h2.config  # noqa: E402
import h2.connection  # noqa: E402
import h2.events  # noqa: E402
import h2.exceptions  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_cshttpd as T  # noqa: E402  (its Server)

TESTS = {}
CHECKS = [0]  # exact outcomes compared, counted per test
WAIT = 10     # seconds: the bound of any one wait for the server

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"  # RFC 9113 §3.4
HELLO = b"Hello, World!"                      # /demo/plaintext's body

# frame types (RFC 9113 §6) and flags
DATA, HEADERS, PRIORITY, RST_STREAM, SETTINGS, PUSH_PROMISE, PING, GOAWAY, \
    WINDOW_UPDATE, CONTINUATION = range(10)
F_END_STREAM, F_ACK, F_END_HEADERS, F_PADDED, F_PRIORITY = 0x1, 0x1, 0x4, 0x8, 0x20
FRAME_NAMES = ["DATA", "HEADERS", "PRIORITY", "RST_STREAM", "SETTINGS", "PUSH_PROMISE",
               "PING", "GOAWAY", "WINDOW_UPDATE", "CONTINUATION"]

# error codes (RFC 9113 §7)
NO_ERROR, PROTOCOL_ERROR, INTERNAL_ERROR, FLOW_CONTROL_ERROR, SETTINGS_TIMEOUT, \
    STREAM_CLOSED, FRAME_SIZE_ERROR, REFUSED_STREAM, CANCEL, COMPRESSION_ERROR, \
    CONNECT_ERROR, ENHANCE_YOUR_CALM, INADEQUATE_SECURITY, HTTP_1_1_REQUIRED = range(14)
ERROR_NAMES = ["NO_ERROR", "PROTOCOL_ERROR", "INTERNAL_ERROR", "FLOW_CONTROL_ERROR",
               "SETTINGS_TIMEOUT", "STREAM_CLOSED", "FRAME_SIZE_ERROR", "REFUSED_STREAM",
               "CANCEL", "COMPRESSION_ERROR", "CONNECT_ERROR", "ENHANCE_YOUR_CALM",
               "INADEQUATE_SECURITY", "HTTP_1_1_REQUIRED"]

# settings (RFC 9113 §6.5.2)
S_HEADER_TABLE_SIZE, S_ENABLE_PUSH, S_MAX_CONCURRENT_STREAMS, S_INITIAL_WINDOW_SIZE, \
    S_MAX_FRAME_SIZE, S_MAX_HEADER_LIST_SIZE = range(1, 7)


def err_name(code):
    if code is None:
        return "none"
    return "%s (0x%x)" % (ERROR_NAMES[code] if 0 <= code < len(ERROR_NAMES) else "?", code)


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


# ---- frames by hand (RFC 9113 §4.1) ----

def frame(ftype, flags=0, sid=0, payload=b""):
    """A frame: 24-bit length, type, flags, 31-bit stream id, payload."""
    return struct.pack("!I", len(payload))[1:] + bytes([ftype, flags]) + \
        struct.pack("!I", sid & 0x7FFFFFFF) + payload


def settings_frame(pairs=(), ack=False):
    return frame(SETTINGS, F_ACK if ack else 0, 0,
                 b"".join(struct.pack("!HI", k, v) for k, v in pairs))


def rst_frame(sid, code):
    return frame(RST_STREAM, 0, sid, struct.pack("!I", code))


def window_frame(sid, increment):
    return frame(WINDOW_UPDATE, 0, sid, struct.pack("!I", increment))


def ping_frame(data=b"12345678", ack=False):
    """PING: 8 octets of opaque data (§6.7), data cut or padded to 8."""
    return frame(PING, F_ACK if ack else 0, 0, data[:8].ljust(8, b"."))


def data_frame(sid, data=b"", end=False):
    return frame(DATA, F_END_STREAM if end else 0, sid, data)


def request_fields(srv, path="/demo/plaintext", method="GET", extra=()):
    """A request's field list (RFC 9113 §8.3.1): the four pseudo-header
    fields, then extra (name, value) pairs, all bytes."""
    b = lambda v: v if isinstance(v, bytes) else v.encode("latin-1")  # noqa: E731
    return [(b":method", b(method)), (b":scheme", b"http"), (b":path", b(path)),
            (b":authority", b"127.0.0.1:%d" % srv.port)] + [(b(k), b(v)) for k, v in extra]


class Stream:
    """What came for one stream."""

    def __init__(self, sid):
        self.id = sid
        self.headers = None   # the final response's fields [(name, value)]
        self.interim = []     # 1xx heads
        self.trailers = None
        self.data = bytearray()
        self.ended = False    # END_STREAM came
        self.reset = None     # RST_STREAM's error code

    @property
    def status(self):
        if self.headers is None:
            return None
        v = dict(self.headers).get(b":status")
        return int(v) if v is not None else None

    def field(self, name):
        v = [val for k, val in (self.headers or []) if k == name]
        return b", ".join(v) if v else None

    def __repr__(self):
        d = bytes(self.data)
        return "<stream %d status %s ended %s reset %s, %d data bytes %r>" % (
            self.id, self.status, self.ended, err_name(self.reset), len(d),
            d[:60] + (b"..." if len(d) > 60 else b""))


class Peer:
    """The client's end of one connection: the socket, the streams' state
    and the GOAWAYs received, and the wait for a condition."""

    def __init__(self, srv, rcvbuf=None):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if rcvbuf:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        s.settimeout(WAIT)
        s.connect(("127.0.0.1", srv.port))
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock = s
        self.srv = srv
        self.streams = {}
        self.goaways = []      # (error code, last stream id, debug data)
        self.eof = False       # the server ended the TCP connection
        self.log = []          # the frames received, in short (for messages)

    def stream(self, sid):
        if sid not in self.streams:
            self.streams[sid] = Stream(sid)
        return self.streams[sid]

    def send(self, data):
        """False when the server had closed the connection."""
        try:
            self.sock.sendall(data)
            return True
        except (BrokenPipeError, ConnectionResetError, socket.timeout):
            return False

    def recv_some(self, deadline):
        """Bytes from the socket, b"" at its end, None when nothing came
        before the deadline."""
        left = deadline - time.time()
        if left <= 0:
            return None
        self.sock.settimeout(min(left, 1.0))
        try:
            d = self.sock.recv(1 << 18)
        except socket.timeout:
            return None
        except (ConnectionResetError, ConnectionAbortedError):
            d = b""
        if not d:
            self.eof = True
        return d

    def step(self, deadline):
        raise NotImplementedError

    def until(self, pred, timeout=WAIT, what="the server's answer"):
        """Reads until pred() is true; pred()'s value. An AssertionError
        when the connection ends first or nothing satisfies it within
        timeout."""
        deadline = time.time() + timeout
        while True:
            v = pred()
            if v:
                return v
            if self.eof:
                raise AssertionError("the connection ended while waiting for %s; frames: %s"
                                     % (what, self.frames_seen()))
            if time.time() >= deadline:
                raise AssertionError("no %s within %ds; frames: %s"
                                     % (what, timeout, self.frames_seen()))
            self.step(deadline)

    def drain(self, seconds):
        """Reads what comes for `seconds` (or until the end)."""
        deadline = time.time() + seconds
        while not self.eof and time.time() < deadline:
            self.step(deadline)

    def wait_end(self, timeout=WAIT, what=""):
        """Reads until the server ends the TCP connection."""
        deadline = time.time() + timeout
        while not self.eof:
            if time.time() >= deadline:
                raise AssertionError("%sthe server did not end the connection within %ds; "
                                     "frames: %s" % (what, timeout, self.frames_seen()))
            self.step(deadline)

    def done(self, sid):
        st = self.streams.get(sid)
        return st is not None and (st.ended or st.reset is not None)

    def frames_seen(self, n=16):
        tail = self.log[-n:]
        return "%s%s" % ("... " if len(self.log) > n else "", " ".join(tail) or "none")

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


# ---- the python-h2 client ----

def h2_config():
    return h2.config.H2Configuration(client_side=True, header_encoding=None,
                                     validate_outbound_headers=False,
                                     normalize_outbound_headers=False,
                                     validate_inbound_headers=False)


class H2C(Peer):
    """python-h2's H2Connection on a socket: it writes the frames (field
    lists as given, unchecked) and keeps both flow-control windows; what
    it reads goes into the streams' state."""

    def __init__(self, srv, **kw):
        Peer.__init__(self, srv, **kw)
        self.conn = h2.connection.H2Connection(config=h2_config())
        self.dead = False  # python-h2 took the connection as over
        self.conn.initiate_connection()
        self.flush()

    def flush(self):
        out = self.conn.data_to_send()
        if out:
            self.send(out)

    def step(self, deadline):
        d = self.recv_some(deadline)
        if not d or self.dead:
            return
        try:
            events = self.conn.receive_data(d)
        except h2.exceptions.ProtocolError as e:
            if not self.goaways:
                raise AssertionError("python-h2 refused the server's frames: %r; frames: %s"
                                     % (e, self.frames_seen()))
            self.dead = True  # frames after a GOAWAY: python-h2 takes none
            return
        for ev in events:
            self.event(ev)
        self.flush()

    def event(self, ev):
        E = h2.events
        self.log.append(type(ev).__name__)
        if isinstance(ev, E.ResponseReceived):
            self.stream(ev.stream_id).headers = list(ev.headers)
        elif isinstance(ev, E.InformationalResponseReceived):
            self.stream(ev.stream_id).interim.append(list(ev.headers))
        elif isinstance(ev, E.TrailersReceived):
            self.stream(ev.stream_id).trailers = list(ev.headers)
        elif isinstance(ev, E.DataReceived):
            self.stream(ev.stream_id).data += ev.data
            if ev.flow_controlled_length:  # the windows given back at once
                self.conn.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
        elif isinstance(ev, E.StreamEnded):
            self.stream(ev.stream_id).ended = True
        elif isinstance(ev, E.StreamReset):
            self.stream(ev.stream_id).reset = ev.error_code
            self.log[-1] += "(%d,%s)" % (ev.stream_id, err_name(ev.error_code))
        elif isinstance(ev, E.ConnectionTerminated):
            self.goaways.append((ev.error_code, ev.last_stream_id, ev.additional_data))
            self.log[-1] += "(%s,last=%s)" % (err_name(ev.error_code), ev.last_stream_id)

    def request(self, fields, body=None, end=True, content_length=False):
        """A new stream with fields (and body, in DATA frames within the
        server's windows); END_STREAM with the last frame when end. Its
        stream id."""
        sid = self.conn.get_next_available_stream_id()
        if body is not None and content_length:
            fields = list(fields) + [(b"content-length", b"%d" % len(body))]
        self.conn.send_headers(sid, fields, end_stream=end and body is None)
        self.stream(sid)
        self.flush()
        if body is not None:
            self.send_body(sid, body, end=end)
        return sid

    def send_body(self, sid, body, end=True, timeout=30):
        """body in DATA frames, each within the stream's and the
        connection's window and the server's SETTINGS_MAX_FRAME_SIZE
        (RFC 9113 §6.9.1): it waits for WINDOW_UPDATE when they are
        spent."""
        view = memoryview(body)
        at = 0
        deadline = time.time() + timeout
        while at < len(body) or (end and at == len(body) == 0):
            window = self.conn.local_flow_control_window(sid)
            if window <= 0 and at < len(body):
                if self.eof or self.done(sid):
                    raise AssertionError("stream %d ended while %d of %d body bytes were sent: "
                                         "%r" % (sid, at, len(body), self.streams.get(sid)))
                if time.time() >= deadline:
                    raise AssertionError("no WINDOW_UPDATE for stream %d within %ds (%d of %d "
                                         "bytes sent)" % (sid, timeout, at, len(body)))
                self.step(deadline)
                continue
            n = min(window, self.conn.max_outbound_frame_size, len(body) - at)
            last = at + n == len(body)
            self.conn.send_data(sid, bytes(view[at:at + n]), end_stream=end and last)
            self.flush()
            at += n
            if last:
                break

    def get(self, path="/demo/plaintext", extra=()):
        return self.request(request_fields(self.srv, path, extra=extra))


# ---- the raw client ----

class Raw(Peer):
    """Frames written by hand and read one by one: the client for what
    python-h2 would not send or not read."""

    def __init__(self, srv, settings=(), preface=True, auto_window=True, ack_settings=True,
                 **kw):
        Peer.__init__(self, srv, **kw)
        self.enc = hpack.Encoder()
        self.dec = hpack.Decoder()
        self.buf = bytearray()
        self.auto_window = auto_window    # WINDOW_UPDATE for every DATA byte taken
        self.ack_settings = ack_settings  # SETTINGS ACK (RFC 9113 §6.5.3)
        self.server_settings = None       # the server's first SETTINGS, as a dict
        self.settings_acked = False       # the server acknowledged ours
        self.ping_acks = 0                # PING ACKs received
        self.next_id = 1
        self.frames_in = 0
        if preface:
            self.send(PREFACE + settings_frame(settings))

    def _fill(self, n, deadline):
        while len(self.buf) < n:
            if self.eof:
                return False
            d = self.recv_some(deadline)
            if d is None:
                if time.time() >= deadline:
                    return None
                continue
            self.buf += d
        return True

    def read_frame(self, deadline):
        """The server's next frame (type, flags, stream id, payload),
        False at the connection's end, None at the deadline."""
        r = self._fill(9, deadline)
        if not r:
            return r
        n = int.from_bytes(self.buf[0:3], "big")
        r = self._fill(9 + n, deadline)
        if not r:
            return r
        ftype, flags = self.buf[3], self.buf[4]
        sid = struct.unpack("!I", self.buf[5:9])[0] & 0x7FFFFFFF
        payload = bytes(self.buf[9:9 + n])
        del self.buf[:9 + n]
        return ftype, flags, sid, payload

    def step(self, deadline):
        f = self.read_frame(deadline)
        if f:
            self.handle(f, deadline)

    def handle(self, f, deadline):
        ftype, flags, sid, payload = f
        self.frames_in += 1
        name = FRAME_NAMES[ftype] if ftype < len(FRAME_NAMES) else "type%d" % ftype
        note = "%s(%d" % (name, sid)
        if ftype in (DATA, HEADERS) and flags & F_END_STREAM:
            note += ",END_STREAM"
        if ftype == DATA:
            body = payload
            if flags & F_PADDED:
                body = payload[1:len(payload) - payload[0]]
            st = self.stream(sid)
            st.data += body
            if flags & F_END_STREAM:
                st.ended = True
            if self.auto_window and payload:
                self.send(window_frame(0, len(payload)) +
                          (window_frame(sid, len(payload)) if not st.ended else b""))
            note += ",%d" % len(body)
        elif ftype == HEADERS:
            block = payload
            if flags & F_PADDED:
                block = block[1:len(block) - block[0]]
            if flags & F_PRIORITY:
                block = block[5:]
            while not flags & F_END_HEADERS:
                c = self.read_frame(deadline)
                checked(bool(c) and c[0] == CONTINUATION and c[2] == sid,
                        "a field block on stream %d cut by %r (RFC 9113 §6.10)" % (sid, c))
                block += c[3]
                flags |= c[1] & F_END_HEADERS
            fields = self.dec.decode(block, raw=True)
            st = self.stream(sid)
            status = dict(fields).get(b":status")
            if st.headers is None and status and status.startswith(b"1"):
                st.interim.append(fields)
            elif st.headers is None:
                st.headers = fields
            else:
                st.trailers = fields
            if flags & F_END_STREAM:
                st.ended = True
            note += ",%s" % (status.decode() if status else "trailers")
        elif ftype == RST_STREAM:
            code = struct.unpack("!I", payload[:4])[0]
            self.stream(sid).reset = code
            note += ",%s" % err_name(code)
        elif ftype == SETTINGS:
            if flags & F_ACK:
                self.settings_acked = True
                note += ",ACK"
            else:
                pairs = [struct.unpack("!HI", payload[i:i + 6])
                         for i in range(0, len(payload), 6)]
                if self.server_settings is None:
                    self.server_settings = dict(pairs)
                if self.ack_settings:
                    self.send(settings_frame(ack=True))
        elif ftype == GOAWAY:
            last = struct.unpack("!I", payload[:4])[0] & 0x7FFFFFFF
            code = struct.unpack("!I", payload[4:8])[0]
            self.goaways.append((code, last, payload[8:]))
            note += ",%s,last=%d" % (err_name(code), last)
        elif ftype == PING and flags & F_ACK:
            self.ping_acks += 1
            note += ",ACK"
        elif ftype == PING:
            self.send(ping_frame(payload, ack=True))
        self.log.append(note + ")")
        if len(self.log) > 4096:
            del self.log[:2048]

    def block(self, fields):
        """fields HPACK-encoded with this connection's encoder."""
        return self.enc.encode(fields)

    def headers(self, sid, fields, end_stream=True, pieces=1):
        """HEADERS (and pieces - 1 CONTINUATION frames) carrying fields."""
        block = self.block(fields)
        return split_block(sid, block, pieces, end_stream)

    def request(self, fields, end_stream=True, body=None, sid=None):
        """A new stream's HEADERS (and DATA); its stream id."""
        if sid is None:
            sid = self.next_id
        self.next_id = max(self.next_id, sid + 2)
        self.stream(sid)
        out = self.headers(sid, fields, end_stream=end_stream and body is None)
        if body is not None:
            out += data_frame(sid, body, end=end_stream)
        self.send(out)
        return sid

    def get(self, path="/demo/plaintext", extra=()):
        return self.request(request_fields(self.srv, path, extra=extra))


def split_block(sid, block, pieces, end_stream):
    """A field block as HEADERS and pieces - 1 CONTINUATION frames
    (RFC 9113 §6.10), END_HEADERS on the last."""
    n = max(1, pieces)
    cut = [len(block) * i // n for i in range(n + 1)]
    out = b""
    for i in range(n):
        flags = F_END_HEADERS if i == n - 1 else 0
        if i == 0:
            out += frame(HEADERS, flags | (F_END_STREAM if end_stream else 0), sid,
                         block[cut[0]:cut[1]])
        else:
            out += frame(CONTINUATION, flags, sid, block[cut[i]:cut[i + 1]])
    return out


# ---- the checks ----

def expect_answer(cl, sid, status=200, body=None, what=""):
    """Stream sid ends with a final answer of status (and body)."""
    st = cl.until(lambda: cl.done(sid) and cl.streams[sid],
                  what="%sthe end of stream %d" % (what, sid))
    checked(st.reset is None and st.status == status,
            "%sstream %d: %r, expected status %d" % (what, sid, st, status))
    if body is not None:
        checked(bytes(st.data) == body, "%sstream %d's body %r, expected %r"
                % (what, sid, bytes(st.data[:80]), body[:80]))
    return st


def expect_reset(cl, sid, codes, what=""):
    """Stream sid is reset (RFC 9113 §5.4.2) with one of codes, with no
    final answer before, and the connection goes on (no GOAWAY)."""
    codes = (codes,) if isinstance(codes, int) else tuple(codes)
    want = " or ".join(err_name(c) for c in codes)
    try:
        st = cl.until(lambda: cl.done(sid) and cl.streams[sid] or cl.goaways,
                      what="%sRST_STREAM %s on stream %d" % (what, want, sid))
    except AssertionError as e:
        raise AssertionError("%s (expected RST_STREAM %s)" % (e, want)) from None
    if not isinstance(st, Stream):
        checked(False, "%sa connection error (GOAWAY %s, last stream %d) where a stream error "
                "(RST_STREAM %s on stream %d) was expected; frames: %s"
                % (what, err_name(cl.goaways[0][0]), cl.goaways[0][1], want, sid,
                   cl.frames_seen()))
    checked(st.reset in codes and st.headers is None,
            "%sstream %d: %r, expected RST_STREAM %s and no answer; frames: %s"
            % (what, sid, st, want, cl.frames_seen()))
    return st.reset


def expect_goaway(cl, codes, what="", end=True):
    """A GOAWAY (RFC 9113 §6.8) with one of codes, and (end) the end of
    the TCP connection after it. The GOAWAY's (code, last stream id)."""
    codes = (codes,) if isinstance(codes, int) else tuple(codes)
    want = " or ".join(err_name(c) for c in codes)
    try:
        cl.until(lambda: cl.goaways, what="%sGOAWAY %s" % (what, want))
    except AssertionError as e:
        raise AssertionError("%s (expected GOAWAY %s)" % (e, want)) from None
    code, last, _ = cl.goaways[0]
    checked(code in codes, "%sGOAWAY %s (last stream %d), expected %s; frames: %s"
            % (what, err_name(code), last, want, cl.frames_seen()))
    if end:
        cl.wait_end(what=what)
    return code, last


def still_answers(cl, what=""):
    """A new stream on the same connection: GET /demo/plaintext, 200."""
    sid = cl.get("/demo/plaintext")
    expect_answer(cl, sid, 200, HELLO, what="%sa new stream on the same connection: " % what)


def fresh_ok(srv, what=""):
    """A fresh connection (python-h2): GET /demo/plaintext, 200."""
    with H2C(srv) as cl:
        sid = cl.get("/demo/plaintext")
        expect_answer(cl, sid, 200, HELLO, what="%sa fresh connection: " % what)


def refused_stream(srv, cl, fields, what, codes=PROTOCOL_ERROR, body=None):
    """fields (and body) as a request on cl: RST_STREAM with codes, then
    a new stream on cl and a fresh connection are answered."""
    sid = cl.request(fields, body=body)
    expect_reset(cl, sid, codes, what="%s: " % what)
    still_answers(cl, "after %s: " % what)
    fresh_ok(srv, "after %s: " % what)


def echo_json(st):
    checked(st.status == 200, "/demo/echo answered %r" % st)
    return json.loads(bytes(st.data))


Server = T.Server


def proc_status(pid, name):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(name + ":"):
                return int(line.split()[1])
    raise AssertionError("no %s in /proc/%d/status" % (name, pid))


# ---- fields (RFC 9113 §8.2) ----

@test("fields")
def t_fields_uppercase_name(_):
    """§8.2 and §8.2.1: field names are lowercase; a request with an
    uppercase character in one is malformed (§8.1.1: a stream error of
    type PROTOCOL_ERROR)."""
    with Server() as srv, H2C(srv) as cl:
        for name in (b"X-Upper", b"x-uppeR", b"Accept"):
            refused_stream(srv, cl, request_fields(srv, extra=[(name, b"1")]),
                           "the field name %r" % name)
        sid = cl.get("/demo/echo", extra=[(b"x-lower", b"1")])
        st = expect_answer(cl, sid, 200)
        checked(["x-lower", "1"] in echo_json(st)["headers"], "x-lower not echoed: %r" % st)


@test("fields")
def t_fields_connection_specific(_):
    """§8.2.2: connection-specific fields (Connection, Keep-Alive,
    Proxy-Connection, Transfer-Encoding, Upgrade) make a request
    malformed: RST_STREAM PROTOCOL_ERROR (§8.1.1)."""
    with Server() as srv, H2C(srv) as cl:
        for name, value in ((b"connection", b"close"), (b"connection", b"keep-alive"),
                            (b"keep-alive", b"timeout=5"),
                            (b"proxy-connection", b"keep-alive"),
                            (b"transfer-encoding", b"chunked"),
                            (b"transfer-encoding", b"identity"),
                            (b"upgrade", b"websocket"), (b"upgrade", b"h2c")):
            refused_stream(srv, cl, request_fields(srv, "/demo/echo", extra=[(name, value)]),
                           "%s: %s" % (name.decode(), value.decode()))


@test("fields")
def t_fields_te(_):
    """§8.2.2: TE may be present only with the value "trailers": `te:
    gzip` is malformed (RST_STREAM PROTOCOL_ERROR), `te: trailers` is
    served."""
    with Server() as srv, H2C(srv) as cl:
        for value in (b"gzip", b"trailers, gzip", b"chunked"):
            refused_stream(srv, cl, request_fields(srv, "/demo/echo", extra=[(b"te", value)]),
                           "te: %s" % value.decode())
        sid = cl.request(request_fields(srv, "/demo/echo", extra=[(b"te", b"trailers")]))
        expect_answer(cl, sid, 200, what="te: trailers: ")
        fresh_ok(srv)


@test("fields")
def t_fields_te_case(_):
    """§8.2.2's one TE value "trailers" is the t-coding keyword of RFC
    9110 §10.1.4, an ABNF literal and so case-insensitive (RFC 5234
    §2.3): `te: Trailers` is that same value and is served."""
    with Server() as srv, H2C(srv) as cl:
        for value in (b"Trailers", b"TRAILERS"):
            sid = cl.request(request_fields(srv, "/demo/echo", extra=[(b"te", value)]))
            expect_answer(cl, sid, 200, what="te: %s: " % value.decode())
        fresh_ok(srv)


@test("fields")
def t_fields_value_ctl(_):
    """§8.2.1: a field value must not contain NUL, LF or CR; a request
    with one is malformed (§8.1.1): RST_STREAM PROTOCOL_ERROR. (Passing
    such a field on would let it split the request's HTTP/1.1 form.)"""
    with Server() as srv, H2C(srv) as cl:
        for value in (b"a\rb", b"a\nb", b"a\r\nx-injected: 1", b"a\x00b", b"\x00"):
            refused_stream(srv, cl, request_fields(srv, "/demo/echo",
                                                   extra=[(b"x-bad", value)]),
                           "the value %r" % value)


@test("fields")
def t_fields_value_whitespace(_):
    """§8.2.1: a field value must not start or end with whitespace (SP,
    HTAB); a request with one is malformed (§8.1.1): RST_STREAM
    PROTOCOL_ERROR. Whitespace inside a value is fine."""
    with Server() as srv, H2C(srv) as cl:
        for value in (b" lead", b"trail ", b"\tlead", b"trail\t", b" "):
            refused_stream(srv, cl, request_fields(srv, "/demo/echo",
                                                   extra=[(b"x-ws", value)]),
                           "the value %r" % value)
        sid = cl.request(request_fields(srv, "/demo/echo", extra=[(b"x-ws", b"in \t side")]))
        st = expect_answer(cl, sid, 200)
        checked(["x-ws", "in \t side"] in echo_json(st)["headers"],
                "x-ws not echoed as sent: %r" % bytes(st.data))


@test("fields")
def t_fields_cookie_joined(_):
    """§8.2.3: a cookie split over several `cookie` fields reaches the
    application as one field, its pieces joined with "; "."""
    with Server() as srv, H2C(srv) as cl:
        sid = cl.request(request_fields(srv, "/demo/echo", extra=[
            (b"cookie", b"a=1"), (b"x-between", b"y"), (b"cookie", b"b=2"),
            (b"cookie", b"c=3; d=4")]))
        hs = echo_json(expect_answer(cl, sid, 200))["headers"]
        cookies = [v for k, v in hs if k.lower() == "cookie"]
        checked(cookies == ["a=1; b=2; c=3; d=4"], "cookies echoed as %r (fields %r)"
                % (cookies, hs))
        checked(["x-between", "y"] in hs, "x-between lost: %r" % hs)


@test("fields")
def t_fields_host_authority(_):
    """§8.3.1: a Host field that names another authority than :authority
    makes the request malformed (RST_STREAM PROTOCOL_ERROR); the same
    one, or Host alone without :authority, is served with that Host."""
    with Server() as srv, H2C(srv) as cl:
        auth = b"127.0.0.1:%d" % srv.port
        for host in (b"other.example", b"127.0.0.1:1", b"127.0.0.1"):
            refused_stream(srv, cl, request_fields(srv, "/demo/echo", extra=[(b"host", host)]),
                           "host %s with :authority %s" % (host.decode(), auth.decode()))
        sid = cl.request(request_fields(srv, "/demo/echo", extra=[(b"host", auth)]))
        hs = echo_json(expect_answer(cl, sid, 200))["headers"]
        checked([v for k, v in hs if k.lower() == "host"] == [auth.decode()], repr(hs))
        fields = [f for f in request_fields(srv, "/demo/echo") if f[0] != b":authority"]
        sid = cl.request(fields + [(b"host", b"alone.example")])
        hs = echo_json(expect_answer(cl, sid, 200))["headers"]
        checked([v for k, v in hs if k.lower() == "host"] == ["alone.example"], repr(hs))


@test("fields")
def t_fields_content_length(_):
    """§8.1.1: a request whose content-length differs from the sum of its
    DATA payloads is malformed: RST_STREAM PROTOCOL_ERROR, whether fewer
    bytes come (END_STREAM early, or on HEADERS) or more."""
    with Server() as srv, H2C(srv) as cl:
        post = lambda n: request_fields(srv, "/demo/echo", "POST",  # noqa: E731
                                        extra=[(b"content-length", b"%d" % n)])
        refused_stream(srv, cl, post(10), "content-length 10 with 5 bytes", body=b"x" * 5)
        refused_stream(srv, cl, post(5), "content-length 5 with 10 bytes", body=b"x" * 10)
        refused_stream(srv, cl, post(3), "content-length 3 with END_STREAM on HEADERS")
        sid = cl.request(post(5), body=b"12345")
        checked(echo_json(expect_answer(cl, sid, 200))["body"] == "12345", "body not echoed")


@test("fields")
def t_fields_request_trailers(_):
    """§8.1: a request's trailers (a HEADERS frame with END_STREAM after
    its DATA) after a body without content-length: served, the body
    whole (200); after a body with content-length too. Trailers holding
    a pseudo-header field (§8.1), a HEADERS frame after DATA without
    END_STREAM (§8.1: the trailer section's frame ends the stream), or a
    CR LF in a trailer value (§8.2.1) are malformed: RST_STREAM
    PROTOCOL_ERROR."""
    with Server() as srv:
        with H2C(srv) as cl:
            for length in (False, True):
                fields = request_fields(srv, "/demo/echo", "POST",
                                        extra=[(b"content-length", b"11")] if length else [])
                sid = cl.request(fields, body=b"hello ", end=False)
                cl.send_body(sid, b"world", end=False)
                cl.conn.send_headers(sid, [(b"x-checksum", b"abc")], end_stream=True)
                cl.flush()
                j = echo_json(expect_answer(cl, sid, 200))
                checked(j["body_length"] == 11 and j["body"] == "hello world",
                        "echo (content-length %s): %r" % (length, j))
                # the handler sees them, apart from the header fields, when
                # the body goes to it chunked; a body whose length was
                # declared has no trailer section to carry them
                want = [] if length else [["x-checksum", "abc"]]
                checked(j["trailers"] == want and
                        not any(k.lower() == "x-checksum" for k, _ in j["headers"]),
                        "echo's trailers (content-length %s): %r" % (length, j))
            still_answers(cl)
        fresh_ok(srv)
        with Raw(srv) as cl:
            for trailers, end, what in (([(b":path", b"/x")], True, "a pseudo-header field"),
                                        ([(b"x-t", b"1")], False, "no END_STREAM"),
                                        ([(b"x-t", b"a\r\nb")], True, "CR LF in a value")):
                sid = cl.request(request_fields(srv, "/demo/echo", "POST"), end_stream=False,
                                 body=b"hello")
                cl.send(cl.headers(sid, trailers, end_stream=end) +
                        (b"" if end else data_frame(sid, b"", end=True)))
                expect_reset(cl, sid, PROTOCOL_ERROR, "trailers with %s: " % what)
                still_answers(cl, "after trailers with %s: " % what)
                fresh_ok(srv, "after trailers with %s: " % what)


@test("fields")
def t_fields_answer_trailers(_):
    """§8.1: an answer's trailers (RFC 9110 §6.5), as gRPC sends its
    grpc-status, come in a HEADERS frame that ends the stream after the
    DATA, whose last frame does not end it (python-h2 refuses any other
    order): after an empty body, after 300,000 bytes that wait for the
    client's window, and on many streams at once; none after HEAD. A
    field that may not be a trailer (RFC 9110 §6.5.1) is refused by the
    toolkit before any byte goes out: a 400."""
    with Server() as srv, H2C(srv) as cl:
        path = "/demo/trailers?grpc-status=0&grpc-message=fine"
        want = [(b"grpc-status", b"0"), (b"grpc-message", b"fine")]
        for size in (0, 300000):
            sid = cl.get(path + "&size=%d" % size)
            st = expect_answer(cl, sid, 200)
            checked(len(st.data) == size and st.trailers == want,
                    "size %d: %r, trailers %r" % (size, st, st.trailers))
            checked(st.field(b"trailer") == b"grpc-status, grpc-message" or size > 16384,
                    "size %d: the head's trailer field %r" % (size, st.field(b"trailer")))
        sids = [cl.get(path + "&n=%d&size=%d" % (i, i * 1000)) for i in range(20)]
        for i, sid in enumerate(sids):
            st = expect_answer(cl, sid, 200)
            checked(len(st.data) == i * 1000 and
                    st.trailers == [want[0], want[1], (b"n", b"%d" % i)],
                    "stream %d of 20: %r, trailers %r" % (i, st, st.trailers))
        sid = cl.request(request_fields(srv, path, "HEAD"))
        st = expect_answer(cl, sid, 200, b"")
        checked(st.trailers is None, "HEAD: trailers %r" % (st.trailers,))
        sid = cl.get("/demo/trailers?content-length=5")
        st = expect_answer(cl, sid, 400)
        checked(st.field(b"x-trailer-error") == b"CSHW_E_TRAILER_FIELD" and st.trailers is None,
                "a content-length trailer: %r %r" % (st.headers, st.trailers))
        still_answers(cl)


# ---- pseudo-header fields (RFC 9113 §8.3) ----

def without(fields, name):
    return [f for f in fields if f[0] != name]


@test("pseudo")
def t_pseudo_missing(_):
    """§8.3.1: every request but CONNECT has exactly one :method, :scheme
    and :path; one missing makes it malformed (RST_STREAM
    PROTOCOL_ERROR, §8.1.1)."""
    with Server() as srv, H2C(srv) as cl:
        for name in (b":method", b":path", b":scheme"):
            refused_stream(srv, cl, without(request_fields(srv), name),
                           "no %s" % name.decode())
        refused_stream(srv, cl, [(b":authority", b"127.0.0.1:%d" % srv.port)],
                       "no pseudo-header field but :authority")


@test("pseudo")
def t_pseudo_duplicated(_):
    """§8.3.1: each of :method, :scheme, :path exactly once (and
    :authority at most once, §8.3): a second one is malformed."""
    with Server() as srv, H2C(srv) as cl:
        base = request_fields(srv)
        for name, value in ((b":path", b"/demo/plaintext"), (b":path", b"/other"),
                            (b":method", b"GET"), (b":scheme", b"http"),
                            (b":authority", b"127.0.0.1:%d" % srv.port)):
            refused_stream(srv, cl, base + [(name, value)], "%s twice" % name.decode())


@test("pseudo")
def t_pseudo_after_regular(_):
    """§8.3: all pseudo-header fields come before the regular fields; one
    after a regular field is malformed."""
    with Server() as srv, H2C(srv) as cl:
        f = request_fields(srv)
        for i, name in ((0, b":method"), (2, b":path"), (3, b":authority")):
            moved = f[:i] + f[i + 1:] + [(b"x-regular", b"1"), f[i]]
            refused_stream(srv, cl, moved, "%s after a regular field" % name.decode())
        f = request_fields(srv)
        refused_stream(srv, cl, [(b"x-first", b"1")] + f, "a regular field first")


@test("pseudo")
def t_pseudo_unknown(_):
    """§8.3: an undefined pseudo-header field (`:foo`), one defined for
    responses (`:status`), or `:protocol` without
    SETTINGS_ENABLE_CONNECT_PROTOCOL (RFC 8441 §4) is malformed."""
    with Server() as srv, H2C(srv) as cl:
        for name, value in ((b":foo", b"bar"), (b":status", b"200"),
                            (b":protocol", b"websocket")):
            refused_stream(srv, cl, request_fields(srv) + [(name, value)],
                           "the pseudo-header field %s" % name.decode())


@test("pseudo")
def t_pseudo_path(_):
    """§8.3.1: :path is not empty for http URIs; it is the path and query
    of the target URI (an absolute path, RFC 3986 §3.3, so neither a
    relative path nor an absolute URI), and a space or another character
    no URI holds makes it malformed. `*` is for OPTIONS only (§8.3.1, RFC
    9110 §7.1): with GET it is malformed, with OPTIONS answered."""
    with Server() as srv, H2C(srv) as cl:
        def with_path(path, method=b"GET"):
            return [(k, path if k == b":path" else method if k == b":method" else v)
                    for k, v in request_fields(srv, "/demo/echo")]
        for path in (b"", b"/demo/echo with space", b"/demo/echo\x7f", b"/a\tb", b"demo/echo",
                     b"http://127.0.0.1/demo/echo", b"*"):
            refused_stream(srv, cl, with_path(path), ":path %r" % path)
        sid = cl.request(request_fields(srv, "/demo/echo?q=a%20b"))
        j = echo_json(expect_answer(cl, sid, 200))
        checked(j["target"] == "/demo/echo?q=a%20b", "target echoed as %r" % j["target"])
        sid = cl.request(with_path(b"*", b"OPTIONS"))
        st = expect_answer(cl, sid, 204, b"", "OPTIONS *: ")
        checked(st.field(b"allow") is not None, "OPTIONS * without Allow: %r" % st.headers)


@test("pseudo")
def t_pseudo_connect(_):
    """§8.5: a CONNECT request has :method and :authority only; with
    :path (or :scheme) it is malformed (RST_STREAM PROTOCOL_ERROR)."""
    with Server() as srv, H2C(srv) as cl:
        auth = (b":authority", b"127.0.0.1:%d" % srv.port)
        refused_stream(srv, cl, [(b":method", b"CONNECT"), auth, (b":path", b"/")],
                       "CONNECT with :path")
        refused_stream(srv, cl, [(b":method", b"CONNECT"), auth, (b":scheme", b"http")],
                       "CONNECT with :scheme")
        refused_stream(srv, cl, [(b":method", b"CONNECT"), auth, (b":scheme", b"http"),
                                 (b":path", b"/")], "CONNECT with :scheme and :path")
        refused_stream(srv, cl, [(b":method", b"CONNECT")], "CONNECT without :authority")


# ---- limits ----

def open_streams(srv, cl, n):
    """n streams left open: POST /demo/echo, HEADERS without END_STREAM
    (the body to come). Their ids."""
    return [cl.request(request_fields(srv, "/demo/echo", "POST"), end_stream=False)
            for _ in range(n)]


@test("limits")
def t_limits_streams_before_ack(_):
    """§5.1.2: past SETTINGS_MAX_CONCURRENT_STREAMS (--h2-max-streams 4)
    a new stream is a stream error, PROTOCOL_ERROR or REFUSED_STREAM.
    Here the streams come with the preface, before the client has even
    read the server's SETTINGS (§3.4 lets it send at once): the fifth is
    refused, the four go on, and once one ends a new one is served."""
    with Server("--h2-max-streams", "4") as srv, Raw(srv) as cl:
        sids = open_streams(srv, cl, 5)
        expect_reset(cl, sids[4], (REFUSED_STREAM, PROTOCOL_ERROR), "a fifth stream: ")
        checked(cl.server_settings.get(S_MAX_CONCURRENT_STREAMS) == 4,
                "SETTINGS_MAX_CONCURRENT_STREAMS %r, expected 4" % cl.server_settings)
        cl.send(data_frame(sids[0], b"one", end=True))
        checked(echo_json(expect_answer(cl, sids[0], 200))["body"] == "one", "echo")
        still_answers(cl, "after a stream refused: ")
        for sid in sids[1:4]:
            cl.send(data_frame(sid, b"%d" % sid, end=True))
            checked(echo_json(expect_answer(cl, sid, 200))["body"] == "%d" % sid, "echo")
        fresh_ok(srv)


@test("limits")
def t_limits_streams_after_ack(_):
    """§5.1.2: the same past the limit the client has acknowledged
    (its SETTINGS ACK, §6.5.3, sent before the streams): "MUST treat
    this as a stream error (Section 5.4.2) of type PROTOCOL_ERROR or
    REFUSED_STREAM", and §5.4.1 lets an endpoint "treat a stream error
    as a connection error". So either RST_STREAM on the fifth stream
    with one of the two codes, the four others going on, or GOAWAY
    PROTOCOL_ERROR and the close; a fresh connection is served."""
    with Server("--h2-max-streams", "4") as srv, Raw(srv) as cl:
        cl.until(lambda: cl.server_settings is not None and cl.settings_acked,
                 what="the server's SETTINGS and its ACK of ours")
        sids = open_streams(srv, cl, 4)
        cl.send(ping_frame(b"4 opened"))  # its ACK: the four are taken
        cl.until(lambda: cl.ping_acks or cl.goaways, what="the PING ACK")
        checked(not cl.goaways, "GOAWAY with 4 streams of 4: %s" % cl.frames_seen())
        fifth = cl.request(request_fields(srv, "/demo/echo", "POST"), end_stream=False)
        cl.until(lambda: cl.done(fifth) or cl.goaways, what="the fifth stream's refusal")
        if cl.goaways:  # a connection error (§5.4.1)
            code, last = expect_goaway(cl, PROTOCOL_ERROR, "a fifth stream: ")
            checked(last == sids[-1], "GOAWAY's last stream %d, expected %d (the fifth, %d, "
                    "not taken)" % (last, sids[-1], fifth))
            print("     the fifth stream: GOAWAY PROTOCOL_ERROR (a connection error, §5.4.1); "
                  "the four open streams are lost with the connection")
        else:  # a stream error (§5.1.2)
            expect_reset(cl, fifth, (REFUSED_STREAM, PROTOCOL_ERROR), "a fifth stream: ")
            for sid in sids:
                cl.send(data_frame(sid, b"%d" % sid, end=True))
                checked(echo_json(expect_answer(cl, sid, 200))["body"] == "%d" % sid, "echo")
            still_answers(cl, "after a stream refused: ")
        fresh_ok(srv, "after a fifth stream: ")


@test("limits")
def t_limits_header_list_431(_):
    """RFC 6585 §5 and RFC 9113 §10.5.1: a header list past --max-head
    (4096 bytes, each field counted as name + value + 32, §6.5.2, as
    SETTINGS_MAX_HEADER_LIST_SIZE announces) is answered `:status 431`
    with END_STREAM; the connection goes on. One below it is served."""
    with Server("--max-head", "4096") as srv, H2C(srv) as cl:
        st = cl.streams
        big = [(b"x-fill-%02d" % i, b"v" * 150) for i in range(30)]  # ~5.7 KB
        sid = cl.request(request_fields(srv, "/demo/echo", extra=big))
        cl.until(lambda: cl.done(sid), what="the answer to a large header list")
        limit = cl.conn.remote_settings.max_header_list_size
        checked(limit == 4096, "SETTINGS_MAX_HEADER_LIST_SIZE %r, expected 4096" % limit)
        checked(st[sid].status == 431 and st[sid].ended and st[sid].reset is None,
                "a header list past --max-head: %r, expected 431 and END_STREAM" % st[sid])
        still_answers(cl, "after 431: ")
        fresh_ok(srv, "after 431: ")
        small = big[:12]  # ~2.3 KB
        sid = cl.request(request_fields(srv, "/demo/echo", extra=small))
        hs = echo_json(expect_answer(cl, sid, 200))["headers"]
        checked(["x-fill-11", "v" * 150] in hs, "a header list below the limit: %r" % hs[:3])
        # the same past the limit in a POST with a body: 431, the body ignored
        sid = cl.request(request_fields(srv, "/demo/echo", "POST", extra=big), body=b"x" * 1000)
        cl.until(lambda: cl.done(sid), what="the answer to a large header list with a body")
        checked(st[sid].status == 431, "a POST past --max-head: %r" % st[sid])
        still_answers(cl, "after 431 with a body: ")


@test("limits")
def t_limits_continuations(_):
    """A field block in HEADERS and CONTINUATION frames (§6.10): up to
    --h2-max-continuations (8) CONTINUATION frames it is served; one more
    and the connection ends (CVE-2024-27316's flood: a GOAWAY, then the
    close). Each connection's fate is its own: a fresh one is served."""
    with Server("--h2-max-continuations", "8") as srv:
        fields = request_fields(srv, extra=[(b"x-pad", b"p" * 200)])
        with Raw(srv) as cl:
            cl.send(cl.headers(1, fields, pieces=1 + 8))
            expect_answer(cl, 1, 200, HELLO, "8 CONTINUATION frames: ")
            still_answers(cl, "after 8 CONTINUATION frames: ")
        for n in (9, 200):
            with Raw(srv) as cl:
                cl.send(cl.headers(1, fields, pieces=1 + n))
                # no code is set for this case; PROTOCOL_ERROR is what the
                # connection error of a block refused by the decoder
                # carries, ENHANCE_YOUR_CALM (§7) would name the cause
                expect_goaway(cl, (PROTOCOL_ERROR, ENHANCE_YOUR_CALM),
                              "%d CONTINUATION frames: " % n)
                checked(not cl.stream(1).headers, "stream 1 answered: %r" % cl.stream(1))
            fresh_ok(srv, "after %d CONTINUATION frames: " % n)
        # endless CONTINUATION frames of one byte each, the block never ended
        with Raw(srv) as cl:
            block = cl.block(fields)
            cl.send(frame(HEADERS, F_END_STREAM, 1, block[:1]) +
                    b"".join(frame(CONTINUATION, 0, 1, block[i:i + 1])
                             for i in range(1, len(block))) +
                    frame(CONTINUATION, 0, 1, b"") * 1000)
            expect_goaway(cl, (PROTOCOL_ERROR, ENHANCE_YOUR_CALM), "endless CONTINUATION: ")
        fresh_ok(srv)


def sample_threads(pid, stop, out):
    while not stop.is_set():
        out.append(proc_status(pid, "Threads"))
        stop.wait(0.02)


def sleepers_threads(max_handlers, n=10, ms=600):
    """n streams of /demo/sleep?ms=ms on one connection under
    --h2-max-handlers max_handlers, the process's threads sampled while
    they run: (threads before, samples)."""
    with Server("--h2-max-handlers", str(max_handlers), "--loops", "1") as srv:
        fresh_ok(srv)  # the first connection's work done before counting
        before = proc_status(srv.proc.pid, "Threads")
        samples, stop = [], threading.Event()
        sampler = threading.Thread(target=sample_threads, args=(srv.proc.pid, stop, samples))
        with H2C(srv) as cl:
            sids = [cl.get("/demo/sleep?ms=%d" % ms) for _ in range(n)]
            sampler.start()
            try:
                for sid in sids:
                    expect_answer(cl, sid, 200, b"slept %d ms\n" % ms,
                                  "stream %d of %d: " % (sid, n))
            finally:
                stop.set()
                sampler.join()
        fresh_ok(srv)
    return before, samples


@test("limits")
def t_limits_handlers_threads(_):
    """--h2-max-handlers 2: ten streams of /demo/sleep?ms=600 (a handler
    that blocks its thread) on one connection all answer 200, and while
    they run the process holds at most 2 threads more than before, plus
    a slack of 2: a job's thread that has answered but not yet parked
    when the next stream's handler is offloaded (threads.c:
    cshs__offload spawns a thread when none is parked), and the
    supervisor's hand over of the loop (--loops 1) if its owner is held
    past --grow-after-us (hand_over: a thread more per loop). The same
    streams under --h2-max-handlers 10 pass that bound, so the samples do
    see the handlers' threads."""
    slack = 2
    before, samples = sleepers_threads(2)
    print("     threads %d before, %d at most over %d samples (--h2-max-handlers 2)"
          % (before, max(samples), len(samples)))
    checked(len(samples) >= 5, "only %d samples while the streams ran" % len(samples))
    checked(max(samples) <= before + 2 + slack,
            "threads went from %d to %d with --h2-max-handlers 2 (bound %d)"
            % (before, max(samples), before + 2 + slack))
    before, samples = sleepers_threads(10)
    print("     threads %d before, %d at most (--h2-max-handlers 10)" % (before, max(samples)))
    checked(max(samples) > before + 2 + slack,
            "with --h2-max-handlers 10 the threads went only from %d to %d: the samples "
            "do not see the handlers" % (before, max(samples)))


# ---- floods (RFC 9113 §10.5) ----

class Checker:
    """Fresh connections (python-h2) asking GET /demo/plaintext one after
    another on a thread, until stopped: how many were answered, and the
    first failure."""

    def __init__(self, srv):
        self.srv = srv
        self.ok = 0
        self.error = None
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run)
        self.thread.start()

    def run(self):
        while not self.stop.is_set():
            try:
                fresh_ok(self.srv, "meanwhile: ")
                self.ok += 1
            except Exception as e:  # noqa: BLE001  (reported by end())
                self.error = e
                return
            self.stop.wait(0.02)

    def end(self, what):
        self.stop.set()
        self.thread.join()
        checked(self.error is None, "%s: another client was not answered meanwhile: %s"
                % (what, self.error))
        checked(self.ok >= 1, "%s: no other client's request completed meanwhile" % what)


def flood_sender(cl, chunks, result):
    """Sends chunks one after another on a thread; result["sent"] is how
    many went before the server closed (all of them, or fewer)."""
    def run():
        n = 0
        for c in chunks:
            if not cl.send(c):
                break
            n += 1
        result["sent"] = n
    t = threading.Thread(target=run)
    t.start()
    return t


@test("floods")
def t_floods_rapid_reset(_):
    """Rapid reset (CVE-2023-44487): 10,000 HEADERS + RST_STREAM pairs on
    one connection. Past --h2-max-resets (1000, refilled at 1000/30 a
    second) the connection ends with GOAWAY ENHANCE_YOUR_CALM (§7: "the
    peer is exhibiting a behavior that might be generating excessive
    load"; §10.5) naming the last stream taken, then the close; another
    client is answered while the first 900 resets are spent, while the
    rest come, and afterwards."""
    with Server("--h2-max-resets", "1000") as srv, Raw(srv) as cl:
        cl.until(lambda: cl.server_settings is not None, what="the server's SETTINGS")
        fields = request_fields(srv)
        pairs = [cl.headers(2 * i + 1, fields) + rst_frame(2 * i + 1, CANCEL)
                 for i in range(10000)]
        cl.send(b"".join(pairs[:900]))
        cl.send(ping_frame(b"900 sent"))  # its ACK: the 900 are taken
        cl.until(lambda: cl.ping_acks or cl.goaways, what="the PING ACK after 900 resets")
        checked(not cl.goaways, "GOAWAY after 900 resets, below --h2-max-resets 1000: %s"
                % cl.frames_seen())
        fresh_ok(srv, "after 900 resets: ")
        checker = Checker(srv)
        result = {}
        sender = flood_sender(cl, [b"".join(pairs[k:k + 100]) for k in range(900, 10000, 100)],
                              result)
        try:
            cl.until(lambda: cl.goaways, what="a GOAWAY for 10,000 resets")
            cl.wait_end(what="after the GOAWAY: ")
        finally:
            sender.join()
            checker.end("during the flood")
        fresh_ok(srv, "after the flood: ")
        code, last, _ = cl.goaways[0]
        print("     GOAWAY %s, last stream %d, %d of 91 chunks of 100 pairs sent"
              % (err_name(code), last, result.get("sent", 0)))
        # 1000 resets in a burst: the 1001st (stream 2001's) is the first
        # past the limit, so the GOAWAY names stream 2001, or a later one
        # when the bucket refilled meanwhile (1000/30 a second)
        checked(2001 <= last < 20001, "GOAWAY's last stream %d: the limit was reached before "
                "1001 resets, or never" % last)
        checked(code == ENHANCE_YOUR_CALM, "rapid reset ended with GOAWAY %s (last stream %d), "
                "expected ENHANCE_YOUR_CALM; frames: %s" % (err_name(code), last,
                                                            cl.frames_seen()))


def flood_then_read(srv, flood, what):
    """flood sent in one go without reading a byte (the socket's receive
    buffer small), then what came read to the end: the connection must
    end, with no GOAWAY or with GOAWAY ENHANCE_YOUR_CALM (§10.5), while
    another client is answered meanwhile and afterwards."""
    with Raw(srv, rcvbuf=4096) as cl:
        cl.until(lambda: cl.server_settings is not None and cl.settings_acked,
                 what="the SETTINGS exchange")
        checker = Checker(srv)
        try:
            cl.sock.settimeout(WAIT)
            try:
                cl.sock.sendall(flood)
                sent = "whole"
            except (BrokenPipeError, ConnectionResetError):
                sent = "cut by the server's close"
            except socket.timeout:
                sent = "stopped: the server no longer reads"
            cl.wait_end(timeout=WAIT * 3, what="%s: " % what)
        finally:
            checker.end(what)
        fresh_ok(srv, "after %s: " % what)
        kinds = {}
        for x in cl.log:
            k = x.split("(")[0]
            kinds[k] = kinds.get(k, 0) + 1
        print("     %s: sent %s; the server's frames: %s" % (what, sent, kinds))
        bad = [g for g in cl.goaways if g[0] != ENHANCE_YOUR_CALM]
        checked(not bad, "%s ended with GOAWAY %s (last stream %d), expected ENHANCE_YOUR_CALM "
                "or a close without GOAWAY; frames: %s"
                % (what, err_name(bad[0][0]) if bad else "", bad[0][1] if bad else 0,
                   cl.frames_seen()))


@test("floods")
def t_floods_ping(_):
    """A PING flood (CVE-2019-9512): 100,000 PINGs sent without reading
    their ACKs (§6.7). The connection is ended (GOAWAY ENHANCE_YOUR_CALM,
    or closed) rather than its ACKs queued without end, and others are
    answered."""
    with Server() as srv:
        flood_then_read(srv, ping_frame(b"pingpong") * 100000, "100,000 PINGs")


@test("floods")
def t_floods_settings(_):
    """A SETTINGS flood (CVE-2019-9515): 100,000 SETTINGS frames sent
    without reading their ACKs (§6.5.3): the same."""
    with Server() as srv:
        flood_then_read(srv, settings_frame([(S_INITIAL_WINDOW_SIZE, 65535)]) * 100000,
                        "100,000 SETTINGS")


@test("floods")
def t_floods_empty_data(_):
    """Empty DATA frames (CVE-2019-9518, §10.5): 64 in a row on an open
    stream are taken (a frame with a byte starts the count again), the
    65th ends the connection with GOAWAY ENHANCE_YOUR_CALM."""
    with Server() as srv:
        with Raw(srv) as cl:
            sid = cl.request(request_fields(srv, "/demo/echo", "POST"), end_stream=False)
            cl.send(data_frame(sid) * 64 + data_frame(sid, b"x") + data_frame(sid) * 64 +
                    data_frame(sid, b"y", end=True))
            j = echo_json(expect_answer(cl, sid, 200))
            checked(j["body"] == "xy", "echo: %r" % j)
            still_answers(cl, "after 2 x 64 empty DATA frames: ")
        for n in (65, 10000):
            with Raw(srv) as cl:
                sid = cl.request(request_fields(srv, "/demo/echo", "POST"), end_stream=False)
                cl.send(data_frame(sid) * n + data_frame(sid, b"x", end=True))
                code, last = expect_goaway(cl, ENHANCE_YOUR_CALM, "%d empty DATA frames: " % n)
                checked(last == sid, "GOAWAY's last stream %d, expected %d" % (last, sid))
            fresh_ok(srv, "after %d empty DATA frames: " % n)


def read_to_end(s, timeout=WAIT):
    s.settimeout(timeout)
    got = b""
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            d = s.recv(65536)
        except (ConnectionResetError, ConnectionAbortedError):
            break
        except socket.timeout:
            raise AssertionError("the server did not close within %ds: %r" % (timeout, got[:200]))
        if not d:
            break
        got += d
    return got


@test("floods")
def t_floods_preface(_):
    """§3.4: the client preface is the 24 octets PRI * HTTP/2.0 ... SM
    and then a SETTINGS frame. A first frame other than SETTINGS, or
    bytes that are no frame, is a connection error PROTOCOL_ERROR
    (GOAWAY, then the close). Bytes that are not the preface
    ("PRI * HTTP/2.0\\r\\n\\r\\nXX\\r\\n\\r\\n") never start HTTP/2 on the
    plain port: they are read as the HTTP/1.1 request they look like, a
    request of HTTP/2.0, answered 505 (RFC 9110 §15.6.6) and closed, and
    no HTTP/2 frame comes. The real preface sent a byte at a time is
    taken."""
    with Server() as srv:
        s = srv.connect()
        s.sendall(b"PRI * HTTP/2.0\r\n\r\nXX\r\n\r\n")
        got = read_to_end(s)
        s.close()
        checked(got.startswith(b"HTTP/1.1 505 ") and b"\r\nConnection: close\r\n" in got,
                "a bad preface answered %r, expected HTTP/1.1 505 and close" % got[:200])
        fresh_ok(srv, "after a bad preface: ")
        for rest, what in ((ping_frame(), "a PING first"),
                           (b"garbage, no frame at all", "garbage after the preface"),
                           (window_frame(0, 1000), "WINDOW_UPDATE first")):
            with Raw(srv, preface=False) as cl:
                cl.send(PREFACE + rest)
                expect_goaway(cl, PROTOCOL_ERROR, "%s: " % what)
            fresh_ok(srv, "after %s: " % what)
        with Raw(srv, preface=False) as cl:
            for i in range(len(PREFACE)):
                cl.send(PREFACE[i:i + 1])
                time.sleep(0.005)
            cl.send(settings_frame())
            still_answers(cl, "a preface sent a byte at a time: ")


# ---- flow control (RFC 9113 §5.2, §6.9) ----

BIG = 5 << 20


def big_file(root):
    """A 5 MiB file of random bytes in root, served as /big.bin."""
    data = os.urandom(BIG)
    with open(os.path.join(root, "big.bin"), "wb") as f:
        f.write(data)
    return data


def whole_body(cl, sid, data, what):
    """Stream sid ends with 200 and exactly data. When it stalls, a PING
    tells whether the server held bytes it could send (they come after
    any frame of the client's)."""
    try:
        st = cl.until(lambda: cl.done(sid) and cl.streams[sid],
                      what="%sthe end of %d bytes" % (what, len(data)))
    except AssertionError as e:
        have = len(cl.streams[sid].data)
        cl.send(ping_frame(b"stalled?"))
        try:
            cl.until(lambda: cl.done(sid), timeout=3)
            after = "after a PING from the client the rest came (%d bytes)" % (
                len(cl.streams[sid].data) - have)
        except AssertionError:
            after = "a PING did not move it"
        raise AssertionError("%s%d of %d bytes came, then nothing, with the windows open; %s. "
                             "%s" % (what, have, len(data), after, e)) from None
    checked(st.status == 200 and st.reset is None,
            "%sstream %d: %r" % (what, sid, st))
    got = bytes(st.data)
    if got != data:
        at = next((i for i in range(min(len(got), len(data))) if got[i] != data[i]),
                  min(len(got), len(data)))
        checked(False, "%s%d bytes came of %d, the first difference at byte %d"
                % (what, len(got), len(data), at))
    checked(True, "every byte")


@test("flow")
def t_flow_window_zero(tmp):
    """§6.9.2: SETTINGS_INITIAL_WINDOW_SIZE 0 and no WINDOW_UPDATE: a 5
    MiB file's response head comes (HEADERS are not flow-controlled,
    §6.9) but not one byte of its body, while another stream of the same
    connection whose window is opened and another client are answered;
    then WINDOW_UPDATE for the connection and the stream (§6.9.1)
    delivers every byte, byte for byte. Done again on five more
    connections, each opening its window once its head came."""
    root = os.path.join(tmp, "www")
    os.mkdir(root)
    data = big_file(root)
    with Server(root=root) as srv:
        with Raw(srv, settings=[(S_INITIAL_WINDOW_SIZE, 0)], auto_window=False) as cl:
            sid = cl.get("/big.bin")
            st = cl.until(lambda: cl.streams[sid].headers and cl.streams[sid],
                          what="the head of /big.bin")
            checked(st.status == 200 and st.field(b"content-length") == b"%d" % BIG,
                    "/big.bin's head: %r" % st.headers)
            cl.drain(1.0)
            checked(len(st.data) == 0 and not st.ended and st.reset is None,
                    "with a window of 0: %r" % st)
            other = cl.get("/demo/plaintext")
            cl.send(window_frame(other, 1000))
            expect_answer(cl, other, 200, HELLO, "another stream with its window opened: ")
            fresh_ok(srv, "while a window is 0: ")
            cl.drain(0.2)
            checked(len(st.data) == 0 and not st.ended and st.reset is None,
                    "with a window of 0: %r" % st)
            cl.send(window_frame(0, 16 << 20) + window_frame(sid, 8 << 20))
            whole_body(cl, sid, data, "/big.bin once its window opened: ")
            again = cl.get("/demo/plaintext")  # its window 0 too, until opened
            cl.send(window_frame(again, 1000))
            expect_answer(cl, again, 200, HELLO, "a new stream on the same connection: ")
        for i in range(5):
            with Raw(srv, settings=[(S_INITIAL_WINDOW_SIZE, 0)], auto_window=False) as cl:
                sid = cl.get("/big.bin")
                cl.until(lambda: cl.streams[sid].headers, what="the head of /big.bin")
                cl.send(window_frame(0, 16 << 20) + window_frame(sid, 8 << 20))
                whole_body(cl, sid, data, "connection %d, /big.bin once its window opened: "
                           % (i + 2))
        fresh_ok(srv)


@test("flow")
def t_flow_upload(_):
    """§6.9: a 1 MiB request body to /demo/echo in DATA frames within the
    server's windows (python-h2 sends no more than they allow and waits
    for WINDOW_UPDATE): the echo's body_length is exact and the body byte
    for byte the same, with content-length and without (the body then
    passed on chunked)."""
    body = bytes(b"abcdefghijklmnopqrstuvwxyz0123456789"[i * 7 % 36] for i in range(1 << 20))
    with Server() as srv, H2C(srv) as cl:
        for with_length in (True, False):
            sid = cl.request(request_fields(srv, "/demo/echo", "POST"), body=body,
                             content_length=with_length)
            j = echo_json(expect_answer(cl, sid, 200))
            what = "with" if with_length else "without"
            checked(j["body_length"] == len(body) and "body_error" not in j,
                    "1 MiB %s content-length: body_length %r, body_error %r"
                    % (what, j["body_length"], j.get("body_error")))
            checked(j["body"].encode() == body, "1 MiB %s content-length: the body differs"
                    % what)
        still_answers(cl)
        fresh_ok(srv)


@test("flow")
def t_flow_window_never_opened(tmp):
    """--send-timeout-ms 1000: a client that never opens its window (0
    from SETTINGS_INITIAL_WINDOW_SIZE) holds a stream whose body cannot
    move. The server must not keep it forever: within a generous 15 s
    the stream is reset (RST_STREAM) or the connection closed, and
    others are answered meanwhile and afterwards."""
    root = os.path.join(tmp, "www")
    os.mkdir(root)
    big_file(root)
    with Server("--send-timeout-ms", "1000", "--sweep-interval-ms", "50", root=root) as srv:
        checker = Checker(srv)
        try:
            with Raw(srv, settings=[(S_INITIAL_WINDOW_SIZE, 0)], auto_window=False) as cl:
                sid = cl.get("/big.bin")
                try:
                    cl.until(lambda: cl.done(sid) or cl.goaways or cl.eof, timeout=15,
                             what="the end of a stream whose window stays 0")
                except AssertionError as e:
                    if not cl.eof:
                        raise AssertionError("--send-timeout-ms 1000: after 15 s the stream "
                                             "whose window stays 0 is still open: %r; %s"
                                             % (cl.streams[sid], e)) from None
                st = cl.streams[sid]
                print("     ended by: %s" % cl.frames_seen())
                checked(len(st.data) == 0, "body bytes came past a window of 0: %r" % st)
        finally:
            checker.end("while a stream waits for its window")
        fresh_ok(srv)


# ---- ending connections (RFC 9113 §6.8) ----

@test("stop")
def t_stop_idle(_):
    """An idle connection past --keepalive-timeout-ms 500: GOAWAY
    NO_ERROR naming the last stream taken (§6.8), then the close. Also
    for a connection that never opened a stream (last stream 0)."""
    args = ("--keepalive-timeout-ms", "500", "--sweep-interval-ms", "50")
    with Server(*args) as srv:
        with Raw(srv) as cl:
            sid = cl.get()
            expect_answer(cl, sid, 200, HELLO)
            code, last = expect_goaway(cl, NO_ERROR, "idle: ")
            checked(last == sid, "idle GOAWAY's last stream %d, expected %d" % (last, sid))
            checked(len(cl.goaways) == 1, "GOAWAYs: %r" % cl.goaways)
        with Raw(srv) as cl:
            code, last = expect_goaway(cl, NO_ERROR, "idle without a stream: ")
            checked(last == 0, "idle GOAWAY's last stream %d, expected 0" % last)
        fresh_ok(srv)


@test("stop")
def t_stop_graceful(_):
    """A graceful stop (SIGTERM) while /demo/sleep?ms=800 runs on stream
    1: GOAWAY NO_ERROR whose last stream id covers stream 1 (§6.8), and
    stream 1 still completes, 200 with its body; then the close, and the
    server exits 0. A stream the client opens after the GOAWAY (which
    §6.8 forbids it: "Receivers of a GOAWAY frame MUST NOT open
    additional streams") is answered only if the last GOAWAY's last
    stream id covers it, and otherwise left unprocessed ("the sender
    will ignore frames sent on streams initiated by the receiver if the
    stream has an identifier higher than the included last stream
    identifier")."""
    with Server() as srv, Raw(srv) as cl:
        sid = cl.get("/demo/sleep?ms=800")
        cl.send(ping_frame(b"taken?"))  # its ACK: stream 1's HEADERS were read
        cl.until(lambda: cl.ping_acks, what="the PING ACK")
        srv.proc.send_signal(signal.SIGTERM)
        cl.until(lambda: cl.goaways, what="a GOAWAY on SIGTERM")
        late = cl.get("/demo/plaintext")
        cl.wait_end(what="after the stop's GOAWAY: ")
        checked(all(g[0] == NO_ERROR for g in cl.goaways), "GOAWAYs %r" % cl.goaways)
        lasts = [g[1] for g in cl.goaways]
        checked(lasts[-1] >= sid and lasts == sorted(lasts, reverse=True),
                "GOAWAYs' last stream ids %r: each covers stream %d, none above the one "
                "before (§6.8)" % (lasts, sid))
        st = cl.streams[sid]
        checked(st.status == 200 and st.ended and st.reset is None and
                bytes(st.data) == b"slept 800 ms\n",
                "stream 1 after the stop's GOAWAY: %r; frames %s" % (st, cl.frames_seen()))
        lt = cl.streams[late]
        if lasts[-1] >= late:
            checked(lt.status == 200, "stream %d, covered by the last GOAWAY, not answered: %r"
                    % (late, lt))
        else:
            checked(lt.headers is None and lt.reset in (None, REFUSED_STREAM),
                    "stream %d, opened after the GOAWAY (last stream %d), was processed: %r"
                    % (late, lasts[-1], lt))
        rc = srv.stop()
        checked(rc == 0, "cshttpd exited %r" % rc)


@test("stop")
def t_stop_http2_off(_):
    """--http2 off: the h2c preface (§3.4) is not taken as HTTP/2; it is
    read as the HTTP/1.1 request it looks like ("PRI * HTTP/2.0"),
    answered 505 with Connection: close, and no SETTINGS frame comes.
    HTTP/1.1 is served; --http2 on answers the same bytes with SETTINGS."""
    with Server("--http2", "off") as srv:
        s = srv.connect()
        s.sendall(PREFACE + settings_frame())
        got = read_to_end(s)
        s.close()
        checked(got.startswith(b"HTTP/1.1 505 ") and b"\r\nConnection: close\r\n" in got,
                "--http2 off answered the preface with %r" % got[:200])
        checked(got[3:4] != bytes([SETTINGS]), "an HTTP/2 SETTINGS frame came: %r" % got[:30])
        s = T.Sock(srv.connect())
        s.sendall(b"GET /demo/plaintext HTTP/1.1\r\nHost: x\r\n\r\n")
        status, _, body, _ = T.read_response(s)
        s.close()
        checked(status == 200 and body == HELLO, "HTTP/1.1 after: %r %r" % (status, body))
    with Server() as srv, Raw(srv) as cl:
        cl.until(lambda: cl.server_settings is not None, what="SETTINGS with --http2 on")
        checked(cl.log[0].startswith("SETTINGS"), "the first frame: %s" % cl.frames_seen())


# ---- WebSockets and other protocols over a stream (RFC 8441) ----

S_ENABLE_CONNECT_PROTOCOL = 8  # RFC 8441 §3
WS_TEXT, WS_BINARY, WS_CLOSE, WS_PING, WS_PONG = 1, 2, 8, 9, 10


def ws_frame(opcode, payload=b"", fin=True, mask=b"\x11\x22\x33\x44"):
    """A WebSocket frame (RFC 6455 §5.2), masked as a client's must be."""
    n = len(payload)
    head = bytes([(0x80 if fin else 0) | opcode])
    m = 0x80 if mask else 0
    if n < 126:
        head += bytes([m | n])
    elif n < 65536:
        head += bytes([m | 126]) + struct.pack("!H", n)
    else:
        head += bytes([m | 127]) + struct.pack("!Q", n)
    if mask:
        key = (mask * (n // 4 + 1))[:n]
        payload = (int.from_bytes(payload, "big") ^ int.from_bytes(key, "big")).to_bytes(n, "big")
        head += mask
    return head + payload


def ws_frames(data):
    """The complete frames (fin, opcode, payload) at data's start, from a
    server: never masked (RFC 6455 §5.1)."""
    out, at = [], 0
    while len(data) - at >= 2:
        b0, b1 = data[at], data[at + 1]
        if b1 & 0x80:
            raise AssertionError("a masked frame from the server: %r" % bytes(data[at:at + 16]))
        n, pos = b1 & 0x7F, at + 2
        if n == 126:
            if len(data) - pos < 2:
                break
            n, pos = struct.unpack("!H", bytes(data[pos:pos + 2]))[0], pos + 2
        elif n == 127:
            if len(data) - pos < 8:
                break
            n, pos = struct.unpack("!Q", bytes(data[pos:pos + 8]))[0], pos + 8
        if len(data) - pos < n:
            break
        out.append((bool(b0 & 0x80), b0 & 0x0F, bytes(data[pos:pos + n])))
        at = pos + n
    return out


def connect_fields(srv, path="/demo/ws", protocol="websocket",
                   extra=((b"sec-websocket-version", b"13"),)):
    """An extended CONNECT (RFC 8441 §4): :protocol, :scheme, :path and
    :authority, then extra fields."""
    return [(b":method", b"CONNECT"), (b":protocol", protocol.encode()), (b":scheme", b"http"),
            (b":path", path.encode()), (b":authority", b"127.0.0.1:%d" % srv.port)] + list(extra)


def open_socket(cl, srv, path="/demo/ws", protocol="websocket", what=""):
    """An extended CONNECT answered 200, its stream left open: its id."""
    sid = cl.request(connect_fields(srv, path, protocol), end=False)
    st = cl.until(lambda: cl.streams[sid].headers is not None and cl.streams[sid]
                  or cl.done(sid) and cl.streams[sid], what="%sthe CONNECT's answer" % what)
    checked(st.status == 200 and not st.ended and st.reset is None,
            "%sCONNECT %s (:protocol %s): %r %r" % (what, path, protocol, st, st.headers))
    checked(st.field(b"sec-websocket-accept") is None and st.field(b"upgrade") is None and
            st.field(b"connection") is None,
            "%sthe 200's fields (RFC 8441 §5: no accept, no connection-specific field): %r"
            % (what, st.headers))
    return sid


def ws_expect(cl, sid, n, what=""):
    """The first n WebSocket frames the server sent on stream sid."""
    st = cl.streams[sid]
    return cl.until(lambda: len(ws_frames(st.data)) >= n and ws_frames(st.data)[:n],
                    what="%s%d WebSocket frames on stream %d" % (what, n, sid))


@test("connect")
def t_connect_websocket_echo(_):
    """RFC 8441: the server's SETTINGS allow extended CONNECT (§3); a
    CONNECT with :protocol websocket to /demo/ws is answered 200 without
    Sec-WebSocket-Accept (§5), and the stream then carries RFC 6455
    frames both ways: a text message, a 70,000-byte binary one in three
    fragments (DATA frames past the client's window), a ping's pong, and
    the close handshake, after which the server ends the stream. The
    connection goes on serving."""
    with Server() as srv, H2C(srv) as cl:
        cl.until(lambda: "RemoteSettingsChanged" in cl.log, what="the server's SETTINGS")
        checked(cl.conn.remote_settings.get(S_ENABLE_CONNECT_PROTOCOL) == 1,
                "SETTINGS_ENABLE_CONNECT_PROTOCOL %r" %
                cl.conn.remote_settings.get(S_ENABLE_CONNECT_PROTOCOL))
        sid = open_socket(cl, srv)
        big = os.urandom(70000)
        cl.send_body(sid, ws_frame(WS_TEXT, b"hello over h2") +
                     ws_frame(WS_BINARY, big[:1000], fin=False) +
                     ws_frame(0, big[1000:40000], fin=False) + ws_frame(0, big[40000:]) +
                     ws_frame(WS_PING, b"p1"), end=False)
        st = cl.streams[sid]

        def all_back():
            fr = ws_frames(st.data)
            binary = b"".join(f[2] for f in fr if f[1] in (WS_BINARY, 0))
            return len(binary) >= len(big) and any(f[1] == WS_PONG for f in fr) and fr

        fr = cl.until(all_back, what="the echoes and the pong")
        checked(fr[0] == (True, WS_TEXT, b"hello over h2"), "the text's echo: %r" % (fr[0],))
        binary = [f for f in fr if f[1] in (WS_BINARY, 0)]
        checked(binary[0][1] == WS_BINARY and binary[-1][0] and
                b"".join(f[2] for f in binary) == big,
                "the binary message's echo: %d frames, %d bytes"
                % (len(binary), sum(len(f[2]) for f in binary)))
        pongs = [f for f in fr if f[1] == WS_PONG]
        checked(pongs[0][2] == b"p1", "the pong: %r" % (pongs,))
        cl.send_body(sid, ws_frame(WS_CLOSE, struct.pack("!H", 1000) + b"bye"), end=False)
        st = cl.until(lambda: cl.done(sid) and cl.streams[sid], what="the server's end")
        last = ws_frames(st.data)[-1]
        # the socket over, its stream ends; the client, which has not ended
        # its side, may be told to stop sending (RST_STREAM NO_ERROR, §8.1)
        checked(last[1] == WS_CLOSE and last[2][:2] == struct.pack("!H", 1000) and st.ended and
                st.reset in (None, NO_ERROR), "after the close: %r, last frame %r" % (st, last))
        still_answers(cl)


@test("connect")
def t_connect_many_sockets(_):
    """An open WebSocket holds no handler's place: 20 of them on one
    connection with --h2-max-handlers 2 each echo, and a plain request
    on the same connection is still answered. A client's END_STREAM
    (its input ended) and its RST_STREAM each end their socket: the
    status page's count of tunnels goes back to 0."""
    with Server("--h2-max-handlers", "2") as srv, H2C(srv) as cl:
        sids = [open_socket(cl, srv, what="socket %d: " % i) for i in range(20)]
        for i, sid in enumerate(sids):
            cl.send_body(sid, ws_frame(WS_TEXT, b"n%d" % i), end=False)
        for i, sid in enumerate(sids):
            f = ws_expect(cl, sid, 1, "socket %d: " % i)
            checked(f[0] == (True, WS_TEXT, b"n%d" % i), "socket %d echoed %r" % (i, f))
        still_answers(cl)
        for i, sid in enumerate(sids):
            if i % 2:
                cl.conn.end_stream(sid)
            else:
                cl.conn.reset_stream(sid, CANCEL)
            cl.flush()
        for i, sid in enumerate(sids[1::2]):
            cl.until(lambda: cl.done(sid), what="the end of socket %d after END_STREAM" % sid)
        deadline = time.time() + WAIT
        while T.get_json(srv, "/status.json").get("tunnels", 0) and time.time() < deadline:
            time.sleep(0.05)
        checked(T.get_json(srv, "/status.json").get("tunnels", 0) == 0,
                "tunnels still open: %r" % T.get_json(srv, "/status.json").get("tunnels"))
        still_answers(cl)


@test("connect")
def t_connect_refusals(_):
    """What an extended CONNECT may not be (RFC 8441 §4, RFC 9113
    §8.3): :protocol on a GET, or without :path, is malformed
    (RST_STREAM PROTOCOL_ERROR). Answers the toolkit gives an HTTP/1.1
    WebSocket handshake come back as they are: no sec-websocket-version,
    426; an Origin of another site, 403. A resource that does not
    switch (a 2xx without 101, such as /demo/plaintext) is 501, without
    the 2xx's fields or body."""
    with Server() as srv, H2C(srv) as cl:
        bad = [f for f in connect_fields(srv) if f[0] != b":method"] + [(b":method", b"GET")]
        refused_stream(srv, cl, bad, ":protocol on a GET")
        cl2 = H2C(srv)
        refused_stream(srv, cl2, [f for f in connect_fields(srv) if f[0] != b":path"],
                       "an extended CONNECT without :path")
        cl2.close()
        for fields, status, what in (
                (connect_fields(srv, extra=()), 426, "no sec-websocket-version"),
                (connect_fields(srv, extra=((b"sec-websocket-version", b"13"),
                                            (b"origin", b"http://evil.example"))), 403,
                 "an Origin of another site"),
                (connect_fields(srv, "/demo/plaintext"), 501, "a resource that does not switch"),
                (connect_fields(srv, "/nope"), 404, "no such resource")):
            sid = cl.request(fields, end=False)
            st = cl.until(lambda: cl.done(sid) and cl.streams[sid], what=what)
            checked(st.status == status and st.ended,
                    "%s: %r, expected %d" % (what, st, status))
            if status == 501:
                checked(st.data == b"" and st.field(b"content-length") is None and
                        st.field(b"content-type") is None, "the 501: %r %r" % (st, st.headers))
        still_answers(cl)


@test("connect")
def t_connect_other_protocol(_):
    """Any protocol a handler switches to is carried the same way: the
    demo's "echo" tunnel (/demo/tunnel) sends back 300,000 bytes as they
    came, and the client's END_STREAM ends the server's side too, alone
    or on the DATA frame of the last bytes."""
    with Server() as srv, H2C(srv) as cl:
        sid = open_socket(cl, srv, "/demo/tunnel", "echo")
        data = os.urandom(300000)
        cl.send_body(sid, data, end=False)
        st = cl.until(lambda: len(cl.streams[sid].data) >= len(data) and cl.streams[sid],
                      what="the echo of 300,000 bytes")
        checked(bytes(st.data) == data, "the echo differs (%d bytes)" % len(st.data))
        cl.conn.end_stream(sid)
        cl.flush()
        st = cl.until(lambda: cl.done(sid) and cl.streams[sid], what="the tunnel's end")
        checked(st.ended and st.reset is None, "after END_STREAM: %r" % st)
        # the END_STREAM on the DATA frame of the last bytes: the end is
        # read after them, though no later frame says it again
        sid = open_socket(cl, srv, "/demo/tunnel", "echo")
        cl.send_body(sid, b"last bytes", end=True)
        st = cl.until(lambda: cl.done(sid) and cl.streams[sid], what="the second tunnel's end")
        checked(bytes(st.data) == b"last bytes" and st.ended and st.reset is None,
                "END_STREAM with the last bytes: %r" % st)
        still_answers(cl)


@test("connect")
def t_connect_through_the_proxy(_):
    """A WebSocket over HTTP/2 to a route cshttpd proxies: the origin (a
    second cshttpd's /demo/ws) gets an HTTP/1.1 Upgrade, and messages go
    both ways through both."""
    with Server() as origin:
        with Server("--proxy", "/demo=" + origin.url(""), demo=False) as px, H2C(px) as cl:
            sid = open_socket(cl, px)
            cl.send_body(sid, ws_frame(WS_TEXT, b"through the proxy"), end=False)
            f = ws_expect(cl, sid, 1)
            checked(f[0] == (True, WS_TEXT, b"through the proxy"), "the echo: %r" % (f,))
            cl.send_body(sid, ws_frame(WS_CLOSE, struct.pack("!H", 1000)), end=False)
            st = cl.until(lambda: cl.done(sid) and cl.streams[sid], what="the end")
            checked(ws_frames(st.data)[-1][1] == WS_CLOSE and st.ended, "after close: %r" % st)
            still_answers(cl)


# ---- the runner ----

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--group", default=None)
    args = ap.parse_args()
    args.tmp = tempfile.mkdtemp(prefix="cshttpd-h2-test-")
    args.root = os.path.join(args.tmp, "www")
    os.mkdir(args.root)
    args.curl = shutil.which("curl") or "curl"  # the status page's JSON (T.get_json)
    T.ARGS = args
    print("python-h2 %s, hpack %s" % (h2.__version__, hpack.__version__), flush=True)
    try:
        failed = T.run_groups(TESTS, args.group, args.tmp, CHECKS)
    finally:
        shutil.rmtree(args.tmp, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
