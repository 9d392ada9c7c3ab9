"""A small WebSocket client on a raw socket (RFC 6455), for tests that
need frames as sent: the opening handshake, frames of any opcode, length
form, mask and fragmentation, and the server's frames as they come.
Python's standard library only."""
import base64
import hashlib
import os
import socket
import struct

GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


def accept_of(key):
    """Sec-WebSocket-Accept for a key (§4.2.2)."""
    return base64.b64encode(hashlib.sha1(key.encode() + GUID).digest()).decode()


def mask(data, key):
    """data XOR the 4-byte key, repeated (§5.3); fast for large payloads."""
    if key == b"\0\0\0\0" or not data:
        return bytes(data)
    n = len(data)
    k = (key * (n // 4 + 1))[:n]
    return (int.from_bytes(data, "little") ^ int.from_bytes(k, "little")).to_bytes(n, "little")


def frame(op, payload=b"", fin=True, rsv=0, masked=True, key=None):
    """One client frame: opcode, payload, FIN, RSV bits (0..7), masked
    with key (random when None; b"\\0\\0\\0\\0" costs nothing)."""
    b0 = (0x80 if fin else 0) | (rsv << 4) | op
    n = len(payload)
    mbit = 0x80 if masked else 0
    if n < 126:
        head = struct.pack("!BB", b0, mbit | n)
    elif n < 65536:
        head = struct.pack("!BBH", b0, mbit | 126, n)
    else:
        head = struct.pack("!BBQ", b0, mbit | 127, n)
    if not masked:
        return head + payload
    key = os.urandom(4) if key is None else key
    return head + key + mask(payload, key)


class WS:
    """A client connection: open() does the handshake and keeps the
    response head; send_* write frames; recv_frame() reads one."""

    def __init__(self, port, path="/", host="127.0.0.1", timeout=20, extra=b""):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.buf = b""
        self.key = base64.b64encode(os.urandom(16)).decode()
        req = ("GET %s HTTP/1.1\r\nHost: %s:%d\r\nUpgrade: websocket\r\n"
               "Connection: Upgrade\r\nSec-WebSocket-Key: %s\r\n"
               "Sec-WebSocket-Version: 13\r\n" % (path, host, port, self.key)).encode()
        self.sock.sendall(req + extra + b"\r\n")
        while b"\r\n\r\n" not in self.buf:
            d = self.sock.recv(65536)
            if not d:
                break
            self.buf += d
        head, _, self.buf = self.buf.partition(b"\r\n\r\n")
        self.head = head.decode("latin-1")
        self.status = int(self.head.split(" ", 2)[1]) if self.head else 0
        self.fields = {}
        for line in self.head.split("\r\n")[1:]:
            k, _, v = line.partition(":")
            self.fields[k.strip().lower()] = v.strip()
        if self.status == 101:
            assert self.fields.get("sec-websocket-accept") == accept_of(self.key), self.head

    def send_raw(self, data):
        self.sock.sendall(data)

    def send(self, op, payload=b"", key=None):
        self.sock.sendall(frame(op, payload, key=key))

    def _need(self, n):
        while len(self.buf) < n:
            d = self.sock.recv(max(65536, n - len(self.buf)))
            if not d:
                raise EOFError("the server closed the connection")
            self.buf += d

    def recv_frame(self):
        """(fin, rsv, opcode, payload) of the server's next frame."""
        self._need(2)
        b0, b1 = self.buf[0], self.buf[1]
        assert not b1 & 0x80, "a server frame is never masked (§5.1)"
        n, at = b1 & 0x7F, 2
        if n == 126:
            self._need(4)
            n, at = struct.unpack("!H", self.buf[2:4])[0], 4
        elif n == 127:
            self._need(10)
            n, at = struct.unpack("!Q", self.buf[2:10])[0], 10
        self._need(at + n)
        payload, self.buf = self.buf[at:at + n], self.buf[at + n:]
        return bool(b0 & 0x80), (b0 >> 4) & 7, b0 & 0x0F, payload

    def recv_message(self):
        """(opcode, payload) of the next data message, its fragments put
        together; pings answered; a close frame returns (8, payload)."""
        op, parts = None, []
        while True:
            fin, _, o, p = self.recv_frame()
            if o == 0x9:
                self.send(0xA, p)
                continue
            if o in (0x8, 0xA):
                if o == 0x8:
                    return 8, p
                continue
            op = o if op is None else op
            parts.append(p)
            if fin:
                return op, b"".join(parts)

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass
