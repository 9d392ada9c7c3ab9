#!/usr/bin/env python3
"""Writes the seeds of fuzz_h2: fuzz/corpus/fuzz_h2/.

    python3 fuzz/tools/h2_seeds.py

Each seed is fuzz_h2's input: a setup byte (bits 0-5 a piece size 1..64,
bit 6 whole, bit 7 abrupt), then what an h2c client sends after the
preface: raw HTTP/2 frames (RFC 9113 §4.1) whose header blocks are HPACK
literals without indexing and without Huffman coding (RFC 7541 §6.2.2),
for the routes of fuzz_h2.c (/plain, /echo, /size?n=, /status?s=). Valid
exchanges of every frame type, and a few malformed requests. Files are
rewritten, never deleted.
"""
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, '..', 'corpus', 'fuzz_h2')

DATA, HEADERS, PRIORITY, RST_STREAM, SETTINGS, PUSH_PROMISE, PING, GOAWAY, \
    WINDOW_UPDATE, CONTINUATION = range(10)
END_STREAM = ACK = 0x1
END_HEADERS = 0x4
PADDED = 0x8
PRIO = 0x20

WHOLE = 0x40
ABRUPT = 0x80


def piece(n):
    """The setup byte for pieces of n bytes (1..64)."""
    return n - 1


def frame(ftype, flags, sid, payload=b''):
    return struct.pack('>I', len(payload))[1:] + bytes([ftype, flags]) + \
        struct.pack('>I', sid) + payload


def hint(n, prefix):
    """An HPACK integer with an n-bit prefix (RFC 7541 §5.1), prefix bits 0."""
    limit = (1 << prefix) - 1
    if n < limit:
        return bytes([n])
    out = [limit]
    n -= limit
    while n >= 128:
        out.append(n % 128 + 128)
        n //= 128
    out.append(n)
    return bytes(out)


def lit(name, value):
    """Literal header field without indexing, new name (RFC 7541 §6.2.2)."""
    name = name.encode() if isinstance(name, str) else name
    value = value.encode() if isinstance(value, str) else value
    return b'\x00' + hint(len(name), 7) + name + hint(len(value), 7) + value


def block(method, path, fields=(), authority='fz'):
    b = lit(':method', method) + lit(':scheme', 'http')
    if path is not None:
        b += lit(':path', path)
    if authority is not None:
        b += lit(':authority', authority)
    for n, v in fields:
        b += lit(n, v)
    return b


def settings(*pairs):
    return frame(SETTINGS, 0, 0, b''.join(struct.pack('>HI', i, v) for i, v in pairs))


def req(sid, method, path, fields=(), end=True, flags=0):
    f = END_HEADERS | (END_STREAM if end else 0) | flags
    return frame(HEADERS, f, sid, block(method, path, fields))


def data(sid, payload, end=False):
    return frame(DATA, END_STREAM if end else 0, sid, payload)


def window(sid, incr):
    return frame(WINDOW_UPDATE, 0, sid, struct.pack('>I', incr))


S0 = settings()

SEEDS = [
    ('get-plain', WHOLE, S0 + req(1, 'GET', '/plain')),
    ('post-echo-content-length', piece(16), S0 +
     req(1, 'POST', '/echo', [('content-type', 'text/plain'), ('content-length', '11')],
         end=False) + data(1, b'hello world', end=True)),
    ('post-echo-chunked', piece(7), S0 + req(1, 'POST', '/echo', end=False) +
     data(1, b'abc') + data(1, b'defgh') + data(1, b'', end=True)),
    ('streams-several', WHOLE, S0 + req(1, 'GET', '/plain') + req(3, 'GET', '/size?n=20000') +
     req(5, 'PUT', '/echo', [('content-length', '3')], end=False) + data(5, b'xyz', end=True) +
     req(7, 'HEAD', '/plain') + req(9, 'GET', '/status?s=204') +
     req(11, 'GET', '/status?s=304') + req(13, 'GET', '/nowhere')),
    ('continuation', piece(64), S0 +
     frame(HEADERS, END_STREAM, 1, lit(':method', 'GET') + lit(':scheme', 'http')) +
     frame(CONTINUATION, 0, 1, lit(':path', '/echo')) +
     frame(CONTINUATION, END_HEADERS, 1, lit(':authority', 'fz') + lit('x-a', '1'))),
    ('priority', piece(32), S0 + frame(PRIORITY, 0, 3, struct.pack('>IB', 1, 15)) +
     frame(HEADERS, END_STREAM | END_HEADERS | PRIO, 1,
           struct.pack('>IB', 0x80000000, 200) + block('GET', '/plain')) + req(3, 'GET', '/plain')),
    ('window-update', piece(24),
     settings((4, 100)) + req(1, 'GET', '/size?n=5000') + window(1, 3000) + window(0, 100000)),
    ('window-zero-then-open', WHOLE,
     settings((4, 0)) + req(1, 'GET', '/size?n=70000') + settings((4, 65535))),
    ('rst-stream', piece(16), S0 + req(1, 'POST', '/echo', end=False) + data(1, b'partial') +
     frame(RST_STREAM, 0, 1, struct.pack('>I', 8)) + req(3, 'GET', '/plain')),
    ('ping', piece(9), S0 + frame(PING, 0, 0, b'12345678') + frame(PING, ACK, 0, b'unasked!') +
     req(1, 'GET', '/plain') + frame(PING, 0, 0, b'87654321')),
    ('trailers', piece(12), S0 + req(1, 'POST', '/echo', end=False) + data(1, b'body') +
     frame(HEADERS, END_STREAM | END_HEADERS, 1, lit('x-checksum', 'abc'))),
    ('padding', piece(20), S0 +
     frame(HEADERS, END_HEADERS | PADDED, 1,
           b'\x05' + block('POST', '/echo', [('content-length', '4')]) + b'\0' * 5) +
     frame(DATA, END_STREAM | PADDED, 1, b'\x03' + b'data' + b'\0' * 3)),
    ('expect-continue', piece(5), S0 +
     req(1, 'POST', '/echo', [('expect', '100-continue'), ('content-length', '2')], end=False) +
     data(1, b'ok', end=True)),
    ('cookies', WHOLE, S0 + req(1, 'GET', '/echo', [('cookie', 'a=1'), ('cookie', 'b=2'),
                                                    ('te', 'trailers')])),
    ('header-list-past-limit', WHOLE, S0 + req(1, 'GET', '/plain', [('x-big', 'v' * 5000)]) +
     req(3, 'GET', '/plain')),
    ('big-frames', piece(64), settings((5, 65536), (4, 200000)) + window(0, 500000) +
     req(1, 'GET', '/size?n=100000')),
    ('abrupt-unfinished-body', ABRUPT | piece(3), S0 + req(1, 'POST', '/echo', end=False) +
     data(1, b'never ends') + req(3, 'GET', '/size?n=30000')),
    ('answer-trailers', piece(11), S0 + req(1, 'GET', '/size?n=3000&t=ok') +
     req(3, 'GET', '/size?n=10&t=small')),
    # RFC 8441: an extended CONNECT, its bytes echoed, ended by the client
    ('extended-connect', piece(13), S0 +
     req(1, 'CONNECT', '/tunnel', [(':protocol', 'echo')], end=False) + data(1, b'echo me') +
     data(1, b' and me', end=True) + req(3, 'GET', '/plain')),
    ('extended-connect-refused', WHOLE, S0 +
     req(1, 'CONNECT', '/plain', [(':protocol', 'websocket')], end=False) +
     req(3, 'GET', '/tunnel', [(':protocol', 'echo')]) +
     req(5, 'CONNECT', None, [(':protocol', 'echo')], end=False) + req(7, 'GET', '/plain')),
    # malformed requests (RFC 9113 §8.2, §8.1.1): stream errors, the others go on
    ('bad-uppercase-name', WHOLE, S0 + req(1, 'GET', '/plain', [('X-Upper', '1')]) +
     req(3, 'GET', '/plain')),
    ('bad-connection-field', WHOLE, S0 + req(1, 'GET', '/plain', [('connection', 'keep-alive')]) +
     req(3, 'GET', '/plain')),
    ('bad-content-length', piece(10), S0 +
     req(1, 'POST', '/echo', [('content-length', '5')], end=False) + data(1, b'abc', end=True) +
     req(3, 'GET', '/plain')),
]


def main():
    os.makedirs(OUT, exist_ok=True)
    for name, setup, body in SEEDS:
        with open(os.path.join(OUT, name), 'wb') as f:
            f.write(bytes([setup]) + body)
    print('%d seeds in %s' % (len(SEEDS), os.path.normpath(OUT)))


if __name__ == '__main__':
    main()
