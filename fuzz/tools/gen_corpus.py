#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets: fuzz/corpus/<target>/.

    python3 fuzz/tools/gen_corpus.py

Seeds are small, valid messages of every framing kind (pipelined, chunked with
extensions and trailers, 1xx, HEAD, CONNECT, until-close...) plus the inputs
of libcshttp/SMUGGLING.md, and masked WebSocket frames for fuzz_ws, each in
the input format of its target (setup bytes in front where the target has
them, see each fuzz_*.c). Files are rewritten, never deleted: inputs added by
hand or from fuzzing runs stay.
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, '..', 'corpus')

H = b'Host: example.com\r\n'

# ---- requests: (name, bytes) -----------------------------------------------
REQUESTS = [
    ('get-minimal', b'GET / HTTP/1.1\r\n' + H + b'\r\n'),
    ('get-headers', b'GET /search?q=cshttp&lang=en HTTP/1.1\r\n' + H +
     b'User-Agent: curl/8.5.0\r\nAccept: */*\r\nAccept-Encoding: gzip, deflate, br\r\n'
     b'Cookie: a=1; b=2\r\nIf-None-Match: "abc"\r\nX-Empty:\r\nX-Obs-Text: caf\xc3\xa9\r\n\r\n'),
    ('get-http10', b'GET /index.html HTTP/1.0\r\n\r\n'),
    ('get-http10-keepalive-pipelined', b'GET /a HTTP/1.0\r\nConnection: keep-alive\r\n\r\n'
     b'GET /b HTTP/1.0\r\n\r\n'),
    ('get-absolute-form', b'GET http://example.com:8080/a/b?c=d HTTP/1.1\r\n' + H + b'\r\n'),
    ('options-asterisk', b'OPTIONS * HTTP/1.1\r\n' + H + b'\r\n'),
    ('connect', b'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n'
     b'Proxy-Authorization: Basic YTpi\r\n\r\n'),
    ('head', b'HEAD /file HTTP/1.1\r\n' + H + b'\r\n'),
    ('delete', b'DELETE /item/7 HTTP/1.1\r\n' + H + b'Content-Length: 0\r\n\r\n'),
    ('trace', b'TRACE / HTTP/1.1\r\n' + H + b'Max-Forwards: 0\r\n\r\n'),
    ('method-other', b'PROPFIND /dav/ HTTP/1.1\r\n' + H + b'Depth: 1\r\n\r\n'),
    ('post-content-length', b'POST /submit HTTP/1.1\r\n' + H +
     b'Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 21\r\n\r\n'
     b'name=value&other=1234'),
    ('put-expect-continue', b'PUT /f HTTP/1.1\r\n' + H + b'Expect: 100-continue\r\n'
     b'Content-Length: 4\r\n\r\ndata'),
    ('patch-expect-other', b'PATCH /f HTTP/1.1\r\n' + H + b'Expect: something-else\r\n'
     b'Content-Length: 2\r\n\r\n{}'),
    ('post-chunked', b'POST /upload HTTP/1.1\r\n' + H + b'Transfer-Encoding: chunked\r\n\r\n'
     b'5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n'),
    ('post-chunked-ext-trailers', b'POST /upload HTTP/1.1\r\n' + H +
     b'Transfer-Encoding: chunked\r\nTrailer: X-Checksum\r\n\r\n'
     b'5;name=value\r\nhello\r\n6 ; q="quo\\"ted" ;flag\r\n world\r\n'
     b'0\r\nX-Checksum: abc\r\nX-Other: 1\r\n\r\n'),
    ('post-chunked-gzip', b'POST / HTTP/1.1\r\n' + H + b'Transfer-Encoding: gzip, chunked\r\n\r\n'
     b'3\r\nabc\r\n0\r\n\r\n'),
    ('post-chunked-hex', b'POST / HTTP/1.1\r\n' + H + b'Transfer-Encoding: chunked\r\n\r\n'
     b'0000A\r\n0123456789\r\na\r\nabcdefghij\r\n000\r\n\r\n'),
    ('post-chunked-300', b'POST / HTTP/1.1\r\n' + H + b'Transfer-Encoding: chunked\r\n\r\n' +
     b'1\r\nx\r\n' * 300 + b'0\r\n\r\n'),
    ('upgrade-websocket', b'GET /chat HTTP/1.1\r\n' + H + b'Upgrade: websocket\r\n'
     b'Connection: keep-alive, Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n'
     b'Sec-WebSocket-Version: 13\r\n\r\n'),
    ('connection-close-then-more', b'GET /1 HTTP/1.1\r\n' + H + b'Connection: close\r\n\r\n'
     b'GET /2 HTTP/1.1\r\n' + H + b'\r\n'),
    ('leading-empty-lines', b'\r\n\r\nGET / HTTP/1.1\r\n' + H + b'\r\n'),
    ('pipelined-mixed', b'GET /1 HTTP/1.1\r\n' + H + b'\r\n'
     b'POST /2 HTTP/1.1\r\n' + H + b'Content-Length: 3\r\n\r\nabc'
     b'POST /3 HTTP/1.1\r\n' + H + b'Transfer-Encoding: chunked\r\n\r\n2\r\nde\r\n0\r\nT: v\r\n\r\n'
     b'\r\nGET /4 HTTP/1.1\r\n' + H + b'Connection: close\r\n\r\n'),
    ('incomplete-body', b'POST / HTTP/1.1\r\n' + H + b'Content-Length: 10\r\n\r\nabc'),
    ('incomplete-head', b'GET / HTTP/1.1\r\n' + H + b'Accept: te'),
    ('bare-lf-lenient', b'GET / HTTP/1.1\n' + b'Host: a\n\n'),
    ('bare-lf-chunked-lenient', b'POST / HTTP/1.1\nHost: a\nTransfer-Encoding: chunked\n\n'
     b'3\nabc\n0\n\n'),
    ('http11-minor-9', b'GET / HTTP/1.9\r\n' + H + b'\r\n'),
    ('ows-values', b'GET / HTTP/1.1\r\nHost:example.com\r\nX-A: \t spaced \t \r\n'
     b'Content-Length:\t0\r\n\r\n'),
]

# libcshttp/SMUGGLING.md: each must be rejected (or framed exactly as RFC 9112 says).
TE = b'Transfer-Encoding: chunked\r\n'
SMUGGLING = [
    ('smuggle-te-twice', b'POST / HTTP/1.1\r\n' + H + TE + b'Transfer-Encoding: chunked\r\n\r\n'
     b'0\r\n\r\n'),
    ('smuggle-te-twice-identity', b'POST / HTTP/1.1\r\n' + H + TE + b'Transfer-Encoding: identity\r\n\r\n'
     b'0\r\n\r\n'),
    ('smuggle-space-before-colon', b'POST / HTTP/1.1\r\n' + H + b'Content-Length : 5\r\n\r\nhello'),
    ('smuggle-te-chunked-x', b'POST / HTTP/1.1\r\n' + H + b'Transfer-Encoding: chunked, x\r\n\r\n'
     b'0\r\n\r\n'),
    ('smuggle-te-xchunked', b'POST / HTTP/1.1\r\n' + H + b'Transfer-Encoding: xchunked\r\n\r\n'
     b'0\r\n\r\n'),
    ('smuggle-bare-lf-request-line', b'GET / HTTP/1.1\n' + H + b'\r\n'),
    ('smuggle-bare-lf-field', b'GET / HTTP/1.1\r\nHost: a\nX: b\r\n\r\n'),
    ('smuggle-obs-fold-te', b'POST / HTTP/1.1\r\n' + H + b'Transfer-Encoding:\r\n chunked\r\n\r\n'
     b'0\r\n\r\n'),
    ('smuggle-bare-cr-field', b'POST / HTTP/1.1\r\n' + H + b'X: a\rTransfer-Encoding: chunked\r\n\r\n'
     b'0\r\n\r\n'),
    ('smuggle-leading-space-first-field', b'POST / HTTP/1.1\r\n Content-Length: 5\r\n' + H +
     b'\r\nhello'),
    ('smuggle-lf-in-chunk-ext', b'POST / HTTP/1.1\r\n' + H + TE + b'\r\n1;a\nX\r\nx\r\n0\r\n\r\n'),
    ('smuggle-cl-negative', b'POST / HTTP/1.1\r\n' + H + b'Content-Length: -1\r\n\r\n'),
    ('smuggle-cl-no-colon', b'POST / HTTP/1.1\r\n' + H + b'Content-Length 10\r\n\r\n0123456789'),
    ('smuggle-empty-name', b'POST / HTTP/1.1\r\n' + H + b': x\r\nContent-Length: 5\r\n\r\nhello'),
    ('smuggle-te-empty-element', b'POST / HTTP/1.1\r\n' + H + b'Transfer-Encoding: ,chunked\r\n\r\n'
     b'0\r\n\r\n'),
    ('smuggle-no-last-chunk', b'POST / HTTP/1.1\r\n' + H + TE + b'\r\n\r\n\r\n'),
    ('smuggle-cl-differing', b'POST / HTTP/1.1\r\n' + H + b'Content-Length: 0\r\n'
     b'Content-Length: 38\r\n\r\nGET /admin HTTP/1.1\r\nHost: a\r\n\r\n'),
    ('smuggle-cl-duplicate-equal', b'POST / HTTP/1.1\r\n' + H + b'Content-Length: 3\r\n'
     b'Content-Length: 3\r\n\r\nabc'),
    ('smuggle-http10-te', b'POST / HTTP/1.0\r\n' + TE + b'\r\n3\r\nabc\r\n0\r\n\r\n'),
    ('smuggle-bare-cr-chunk-size', b'POST / HTTP/1.1\r\n' + H + TE + b'\r\n1\r0\r\nx\r\n0\r\n\r\n'),
    ('smuggle-cl-then-te', b'POST / HTTP/1.1\r\n' + H + b'Content-Length: 6\r\n' + TE +
     b'\r\n0\r\n\r\nX'),
    ('smuggle-te-then-cl', b'POST / HTTP/1.1\r\n' + H + TE + b'Content-Length: 6\r\n'
     b'\r\n0\r\n\r\nX'),
    ('smuggle-chunk-size-space', b'POST / HTTP/1.1\r\n' + H + TE + b'\r\n5 0\r\nhello\r\n0\r\n\r\n'),
    ('smuggle-chunk-size-junk', b'POST / HTTP/1.1\r\n' + H + TE + b'\r\n5zz\r\nhello\r\n0\r\n\r\n'),
    ('smuggle-chunk-size-bare-lf', b'POST / HTTP/1.1\r\n' + H + TE + b'\r\n5\nhello\r\n0\r\n\r\n'),
    ('smuggle-chunk-size-17-digits', b'POST / HTTP/1.1\r\n' + H + TE +
     b'\r\n10000000000000005\r\nhello\r\n0\r\n\r\n'),
    ('smuggle-chunk-size-max', b'POST / HTTP/1.1\r\n' + H + TE + b'\r\nffffffffffffffff\r\nx\r\n'),
    ('smuggle-chunk-size-these-bytes', b'POST / HTTP/1.1\r\n' + H + TE +
     b'\r\n1these-bytes\r\nx\r\n0\r\n\r\n'),
    ('smuggle-missing-host', b'GET / HTTP/1.1\r\n\r\n'),
    ('smuggle-duplicate-host', b'GET / HTTP/1.1\r\n' + H + H + b'\r\n'),
    ('smuggle-nul-in-value', b'GET / HTTP/1.1\r\n' + H + b'X: a\x00b\r\n\r\n'),
    ('smuggle-http2-version', b'GET / HTTP/2.0\r\n' + H + b'\r\n'),
    ('smuggle-te-gzip-last', b'POST / HTTP/1.1\r\n' + H + b'Transfer-Encoding: chunked, gzip\r\n\r\n'
     b'0\r\n\r\n'),
    ('smuggle-chunked-twice', b'POST / HTTP/1.1\r\n' + H + b'Transfer-Encoding: chunked, chunked\r\n'
     b'\r\n0\r\n\r\n'),
]

# ---- responses: (name, bytes) ----------------------------------------------
RESPONSES = [
    ('200-length', b'HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\nhello'),
    ('204', b'HTTP/1.1 204 No Content\r\nDate: Mon, 30 Nov 2026 00:00:00 GMT\r\n\r\n'),
    ('304-with-length', b'HTTP/1.1 304 Not Modified\r\nETag: "x"\r\nContent-Length: 100\r\n\r\n'),
    ('100-then-200', b'HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok'),
    ('103-then-200', b'HTTP/1.1 103 Early Hints\r\nLink: </s.css>; rel=preload\r\n\r\n'
     b'HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n'),
    ('101-switching', b'HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n'
     b'Connection: Upgrade\r\n\r\n\x81\x05hello'),
    ('200-chunked-trailers', b'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n'
     b'4;ext=1\r\nWiki\r\n5\r\npedia\r\n0\r\nExpires: never\r\nX-Sum: 1\r\n\r\n'),
    ('200-gzip-chunked', b'HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n'
     b'2\r\n\x1f\x8b\r\n0\r\n\r\n'),
    ('200-until-close', b'HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n<html>until close</html>'),
    ('200-http10-until-close', b'HTTP/1.0 200 OK\r\n\r\nbody until the connection closes'),
    ('200-te-not-chunked-until-close', b'HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\nabc'),
    ('404-reason-spaces', b'HTTP/1.1 404 Not Found Here\r\nContent-Length: 9\r\n\r\nnot found'),
    ('200-empty-reason', b'HTTP/1.1 200 \r\nContent-Length: 0\r\n\r\n'),
    ('pipelined', b'HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\na'
     b'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nb\r\n0\r\n\r\n'
     b'HTTP/1.1 204 No Content\r\n\r\n'
     b'HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\nConnection: close\r\n\r\n'),
    ('bare-lf-lenient', b'HTTP/1.1 200 OK\nContent-Length: 2\n\nok'),
    ('cl-and-te', b'HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n'
     b'0\r\n\r\n'),
    ('status-999', b'HTTP/1.1 999 Nope\r\n\r\n'),
]
# (name, method bits for fuzz_response: 0 GET, 1 HEAD, 2 CONNECT)
RESPONSES_TO = [
    ('head-with-length', 1, b'HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n'
     b'HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n'),
    ('connect-200-tunnel', 2, b'HTTP/1.1 200 Connection Established\r\n\r\n\x16\x03\x01'),
    ('connect-407', 2, b'HTTP/1.1 407 Proxy Authentication Required\r\nContent-Length: 0\r\n\r\n'),
]

# ---- chunked bodies -----------------------------------------------------------
CHUNKED = [
    ('simple', b'5\r\nhello\r\n0\r\n\r\n'),
    ('two-chunks', b'5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n'),
    ('extensions', b'5;a=b;c\r\nhello\r\n3 ; q="x\\"y" \r\nabc\r\n0;last\r\n\r\n'),
    ('trailers', b'1\r\nx\r\n0\r\nExpires: never\r\nX-A: 1\r\nX-B:\r\n\r\n'),
    ('hex-upper-lower', b'A\r\n0123456789\r\nb\r\n0123456789a\r\n0\r\n\r\n'),
    ('leading-zeros', b'0005\r\nhello\r\n0000\r\n\r\n'),
    ('many-small', b'1\r\na\r\n' * 64 + b'0\r\n\r\n'),
    ('incomplete', b'10\r\nonly part'),
    ('bare-lf', b'5\nhello\n0\n\n'),
    ('lf-in-ext', b'1;a\nX\r\nx\r\n0\r\n\r\n'),
    ('bare-cr', b'1\r0\r\nx\r\n0\r\n\r\n'),
    ('size-space', b'5 0\r\nhello\r\n0\r\n\r\n'),
    ('size-junk', b'5zz\r\nhello\r\n0\r\n\r\n'),
    ('size-17-digits', b'10000000000000005\r\nhello\r\n0\r\n\r\n'),
    ('size-max', b'7fffffffffffffff\r\nx'),
    ('no-last-chunk', b'\r\n\r\n'),
    ('missing-crlf', b'3\r\nabcX\r\n0\r\n\r\n'),
    ('trailer-obs-fold', b'0\r\nX: a\r\n b\r\n\r\n'),
]


# ---- fuzz_ws: client frames (RFC 6455 §5.2), masked ----------------------
def ws_frame(b0, payload, key=b'\x37\xfa\x21\x3d', masked=True, form=None):
    n = len(payload)
    m = 0x80 if masked else 0
    if form == 127 or (form is None and n > 65535):
        head = bytes([b0, m | 127]) + n.to_bytes(8, 'big')
    elif form == 126 or (form is None and n > 125):
        head = bytes([b0, m | 126]) + n.to_bytes(2, 'big')
    else:
        head = bytes([b0, m | n])
    if not masked:
        return head + payload
    return head + key + bytes(c ^ key[i % 4] for i, c in enumerate(payload))


def ws_deflate(data, window=15):
    """A message compressed as RFC 7692 §7.2.1 says: raw DEFLATE, a sync
    flush, its 00 00 ff ff tail removed."""
    import zlib
    z = zlib.compressobj(6, zlib.DEFLATED, -window)
    out = z.compress(data) + z.flush(zlib.Z_SYNC_FLUSH)
    assert out.endswith(b'\x00\x00\xff\xff')
    return out[:-4]


def ws_close(code, reason=b''):
    return ws_frame(0x88, code.to_bytes(2, 'big') + reason)


# fuzz_ws: byte 0 bit 0 deflate, bits 1-2 window (15 12 9 8), bit 3 small
# max_message (byte 1), bit 4 small max_fragments (byte 2 bits 0-2), bit 5
# echo, bit 6 echo in parts, bit 7 a full queue now and then; byte 2 bits
# 3-4 the pieces, bits 5-6 deflate_min; byte 3 the seed.
HELLO_Z = bytes([0xf2, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00])  # RFC 7692 §7.2.3.1
KOSME = 'κόσμε'.encode()
WS = [
    ('text', bytes([0x20, 0, 0x08, 1]), ws_frame(0x81, b'Hello')),
    ('binary-300', bytes([0x20, 0, 0x10, 2]), ws_frame(0x82, bytes(range(256)) + b'x' * 44)),
    ('fragmented-ping', bytes([0x20, 0, 0x00, 3]),
     ws_frame(0x01, b'Hel') + ws_frame(0x89, b'ping') + ws_frame(0x00, b'') +
     ws_frame(0x80, b'lo')),
    ('close-1000', bytes([0x00, 0, 0x18, 4]), ws_frame(0x81, b'a') + ws_close(1000, b'bye')),
    ('close-empty', bytes([0x00, 0, 0x08, 5]), ws_frame(0x8a, b'unasked') + ws_frame(0x88, b'')),
    ('close-invalid-code', bytes([0x00, 0, 0x08, 6]), ws_close(1005)),
    ('unmasked', bytes([0x00, 0, 0x08, 7]),
     ws_frame(0x81, b'a') + ws_frame(0x81, b'b', masked=False)),
    ('len64-non-minimal', bytes([0x20, 0, 0x10, 8]), ws_frame(0x82, b'12345', form=127) +
     ws_frame(0x81, b'abc', form=126)),
    ('utf8-fragments', bytes([0x20, 0, 0x00, 9]),
     b''.join(ws_frame((0x01 if i == 0 else 0x00) | (0x80 if i == len(KOSME) - 1 else 0),
                       KOSME[i:i + 1]) for i in range(len(KOSME)))),
    ('utf8-surrogate', bytes([0x00, 0, 0x08, 10]), ws_frame(0x81, b'ok\xed\xa0\x80')),
    ('limits', bytes([0x18, 2, 0x0a, 11]),
     ws_frame(0x01, b'a') + ws_frame(0x00, b'b') + ws_frame(0x80, b'c') +
     ws_frame(0x01, b'a') + ws_frame(0x00, b'b') + ws_frame(0x00, b'c') + ws_frame(0x80, b'd')),
    ('deflate-hello', bytes([0x21, 0, 0x08 | 0x60, 12]), ws_frame(0xc1, HELLO_Z)),
    ('deflate-fragments', bytes([0x21, 0, 0x00 | 0x20, 13]),
     ws_frame(0x41, HELLO_Z[:3]) + ws_frame(0x89, b'') + ws_frame(0x80, HELLO_Z[3:]) +
     ws_frame(0xc2, ws_deflate(b'abc' * 100))),
    ('deflate-window-9', bytes([0x25, 0, 0x10 | 0x40, 14]),
     ws_frame(0xc1, ws_deflate(b'the quick brown fox ' * 60, 9))),
    ('deflate-parts-full-queue', bytes([0xe1, 0, 0x08, 15]),
     ws_frame(0xc1, ws_deflate(b'echo me ' * 30)) + ws_frame(0x89, b'1') + ws_frame(0x89, b'2') +
     ws_frame(0x81, b'plain')),
    ('deflate-bomb', bytes([0x09, 8, 0x10, 16]), ws_frame(0xc2, ws_deflate(bytes(20000)))),
    ('deflate-not-deflate', bytes([0x01, 0, 0x08, 17]), ws_frame(0xc1, b'\xff\xff\xff\xff')),
]


def write(target, name, data):
    d = os.path.join(CORPUS, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), 'wb') as f:
        f.write(data)


def main():
    reqs = REQUESTS + SMUGGLING
    for name, data in reqs:
        write('fuzz_request', name, data)
        write('fuzz_http_parser', name, data)
    # fuzz_response: setup byte bits 0-1 method, bit 2 lenient, bit 3 tiny limits,
    # bits 4-6 trailers to store.
    for name, data in RESPONSES:
        lenient = 4 if 'lenient' in name else 0
        write('fuzz_response', name, bytes([0x70 | lenient]) + data)
    for name, method, data in RESPONSES_TO:
        write('fuzz_response', name, bytes([0x70 | method]) + data)
    write('fuzz_response', 'tiny-limits', bytes([0x78]) + RESPONSES[6][1])
    # fuzz_chunked: setup byte bit 0 lenient, bits 1-3 trailers, bit 4 tiny limits,
    # bits 5-6 piece sizes, bit 7 no SIMD; two seed bytes.
    for i, (name, data) in enumerate(CHUNKED):
        lenient = 1 if name in ('bare-lf', 'lf-in-ext') else 0
        setup = lenient | 0x0e | ((i % 4) << 5)
        write('fuzz_chunked', name, bytes([setup, i, 0x5a]) + data)
    write('fuzz_chunked', 'tiny-limits', bytes([0x1e, 7, 7]) + b'1;' + b'x' * 20 + b'\r\na\r\n0\r\n\r\n')
    # fuzz_split: setup byte bit 0 response, bit 1 lenient, bits 2-3 method,
    # bits 4-5 piece sizes, bit 6 tiny limits, bit 7 no SIMD in the split run;
    # two seed bytes.
    for i, (name, data) in enumerate(reqs):
        if name.startswith('smuggle-') and i % 3:
            continue
        lenient = 2 if 'lenient' in name else 0
        setup = lenient | ((i % 4) << 4) | (0x80 if i % 2 else 0)
        write('fuzz_split', 'request-' + name, bytes([setup, i, 0x33]) + data)
    for i, (name, data) in enumerate(RESPONSES):
        lenient = 2 if 'lenient' in name else 0
        setup = 1 | lenient | ((i % 4) << 4)
        write('fuzz_split', 'response-' + name, bytes([setup, i, 0x44]) + data)
    for name, method, data in RESPONSES_TO:
        write('fuzz_split', 'response-' + name, bytes([1 | (method << 2) | 0x10, 9, 9]) + data)
    write('fuzz_split', 'request-tiny-limits', bytes([0x40 | 0x10, 1, 2]) + REQUESTS[1][1])
    for name, setup, frames in WS:
        write('fuzz_ws', name, setup + frames)
    return 0


if __name__ == '__main__':
    sys.exit(main())
