/* fuzz_ws: the WebSocket session of libcshttp-web (cshw_ws, websocket.h)
 * reading what a client sends: frames (RFC 6455 §5), messages, control
 * frames, the closing handshake (§7), permessage-deflate (RFC 7692 §7.2).
 *
 * Input: four setup bytes, then the client's bytes.
 *   byte 0: bit 0 permessage-deflate agreed; bits 1-2 the client's window
 *           (15, 12, 9, 8; ours the same, 9 at least); bit 3 a small
 *           max_message (byte 1); bit 4 a small max_fragments (byte 2);
 *           bit 5 every message echoed, bit 6 in two parts (send_part);
 *           bit 7 the transport's queue is sometimes above its mark
 *           (write says 1).
 *   byte 1: max_message = 1 + 8 * byte 1 (bit 3), else 64 KiB.
 *   byte 2: bits 0-2 max_fragments - 1 (bit 4); bits 3-4 the pieces (a
 *           byte at a time, 1..16, 1..512 or 1..4096 bytes); bits 5-6
 *           deflate_min (0, 1, 16, 64).
 *   byte 3: the seed of the pieces, the transport's answers and the clock.
 * The bytes are played three times, each followed by the end of input:
 * whole, in pieces, and in pieces with the clock running between them
 * (cshw_ws_tick, pings and their timeouts) and, when the seed says so, a
 * ping and a close of ours. Checks:
 *   - what the session writes is a run of well-formed server frames:
 *     unmasked (§5.1), lengths in their shortest form (§5.2), no RSV2 or
 *     RSV3, RSV1 only on the first frame of a message and only with
 *     deflate (RFC 7692 §6), known opcodes, control frames whole and up
 *     to 125 bytes (§5.5), fragments in order (§5.4), at most one close,
 *     with a code a close frame may carry and a UTF-8 reason (§7.4), and
 *     no data frame after it; nothing is written after transport->close;
 *   - transport->close at most once, cshw_ws_input's result 1 exactly
 *     when it was called; closed() exactly once, at cshw_ws_end, with a
 *     code that fits the close frames (1006: none was sent; 1005: ours
 *     was empty; otherwise ours carried it);
 *   - message() sees valid UTF-8 for text (an independent decoder) and at
 *     most max_message bytes, never after the end; bytes_in counts them;
 *   - echoed, the server's messages (inflated when RSV1 says so) are the
 *     ones received, in order;
 *   - whole and in pieces, the same messages, the same closed() and the
 *     same output bytes.
 * Self-contained: links only libcshttp-web (and libcshttp, zlib). */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include <cshttp/web/websocket.h>

#include "web_check.h"

#include "../libcshttp-web/tests/ws_oracle.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct buf {
    unsigned char *p;
    size_t len, cap;
} buf;

static void buf_put(buf *b, const void *data, size_t n)
{
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n) cap *= 2;
        unsigned char *p = realloc(b->p, cap);
        CHECK(p != NULL, "out of memory");
        b->p = p;
        b->cap = cap;
    }
    if (n) memcpy(b->p + b->len, data, n);
    b->len += n;
}

static int buf_same(const buf *a, const buf *b)
{
    return a->len == b->len && (a->len == 0 || memcmp(a->p, b->p, a->len) == 0);
}

/* A play's log for a report: messages as type, length and bytes. */
static void print_log(const char *label, const buf *log)
{
    fprintf(stderr, "%s:", label);
    for (size_t i = 0; i < log->len && i < 400; i++) {
        unsigned char c = log->p[i];
        fprintf(stderr, c >= 0x20 && c < 0x7f ? "%c" : "\\x%02x", c);
    }
    fprintf(stderr, "\n");
}

static void buf_free(buf *b)
{
    free(b->p);
    memset(b, 0, sizeof *b);
}


static uint32_t rng_next(uint32_t *s)
{
    uint32_t x = *s ? *s : 0x9e3779b9u;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    return *s = x;
}

typedef struct config {
    cshw_ws_options o;
    cshw_ws_handshake hs;
    int echo, echo_parts, full;
    unsigned pieces;
    uint32_t seed;
} config;

/* One play of the input. */
typedef struct play {
    const config *c;
    cshw_ws *ws;
    uint32_t rng;
    buf out;      /* what the session wrote */
    buf log;      /* messages and closed(), for the comparison */
    buf echoed;   /* the messages sent back: type, length (8 bytes), bytes */
    int closes;   /* transport->close */
    int released; /* transport->release */
    int paused;
    int closed; /* closed() */
    int code;
    int our_close; /* the code of cshw_ws_close, 0 when not called */
    uint64_t received;
} play;

static int t_write(void *io, const void *data, size_t len)
{
    play *p = io;
    CHECK(len > 0, "an empty write");
    CHECK(p->closes == 0, "a write of %zu bytes after transport->close", len);
    buf_put(&p->out, data, len);
    return p->c->full && (rng_next(&p->rng) & 3) == 0 ? 1 : 0;
}

static void t_close(void *io)
{
    play *p = io;
    CHECK(p->closes == 0, "transport->close twice");
    p->closes++;
}

static void t_release(void *io)
{
    play *p = io;
    CHECK(p->released == 0, "transport->release twice");
    p->released++;
}

static void t_pause(void *io, int paused)
{
    play *p = io;
    CHECK(paused == 0 || paused == 1, "pause(%d)", paused);
    p->paused = paused;
}

static void echo(play *p, int type, const char *data, size_t len)
{
    int r;
    if (p->c->echo_parts) {
        size_t half = len / 2;
        r = cshw_ws_send_part(p->ws, type, data, half, 0);
        CHECK(r == 0 || r == 1 || r == -EPIPE, "send_part: %d", r);
        if (r >= 0) {
            r = cshw_ws_send_part(p->ws, type, data + half, len - half, 1);
            CHECK(r == 0 || r == 1, "send_part, the last piece: %d", r);
        }
    } else {
        r = cshw_ws_send(p->ws, type, data, len);
        CHECK(r == 0 || r == 1 || r == -EPIPE, "send: %d", r);
    }
    if (r == -EPIPE) {
        CHECK(p->our_close, "send: -EPIPE while open");
        return;
    }
    unsigned char h[9];
    h[0] = (unsigned char)type;
    for (int i = 0; i < 8; i++) h[1 + i] = (unsigned char)((uint64_t)len >> (56 - 8 * i));
    buf_put(&p->echoed, h, sizeof h);
    buf_put(&p->echoed, data, len);
    if (r == 1) cshw_ws_pause(p->ws, 1);
}

static void h_message(cshw_ws *ws, int type, const char *data, size_t len, void *arg)
{
    play *p = arg;
    CHECK(ws == p->ws, "another session");
    CHECK(!p->closed && !p->closes, "a message after the end");
    CHECK(type == CSHW_WS_TEXT || type == CSHW_WS_BINARY, "message type %d", type);
    CHECK(data != NULL, "message data NULL");
    CHECK(len <= p->c->o.max_message, "a message of %zu bytes, max_message %llu", len,
          (unsigned long long)p->c->o.max_message);
    if (type == CSHW_WS_TEXT)
        CHECK(utf8_valid((const unsigned char *)data, len),
              "a text message of %zu bytes that is "
              "not UTF-8",
              len);
    p->received += len;
    unsigned char h[9];
    h[0] = (unsigned char)type;
    for (int i = 0; i < 8; i++) h[1 + i] = (unsigned char)((uint64_t)len >> (56 - 8 * i));
    buf_put(&p->log, h, sizeof h);
    buf_put(&p->log, data, len);
    if (p->c->echo) echo(p, type, data, len);
}

static void h_drained(cshw_ws *ws, void *arg)
{
    play *p = arg;
    CHECK(ws == p->ws, "another session");
    CHECK(!p->closed, "drained() after closed()");
    if (p->c->echo) cshw_ws_pause(ws, 0);
}

static void h_closed(cshw_ws *ws, int code, const char *reason, size_t len, void *arg)
{
    play *p = arg;
    CHECK(ws == p->ws, "another session");
    CHECK(p->closed == 0, "closed() twice");
    p->closed++;
    p->code = code;
    CHECK(close_code_valid((unsigned)code) || code == CSHW_WS_NO_STATUS || code == CSHW_WS_ABNORMAL,
          "closed() with code %d", code);
    CHECK(len <= 123, "a reason of %zu bytes", len);
    CHECK(len == 0 || reason != NULL, "a reason without bytes");
    if (len) CHECK(utf8_valid((const unsigned char *)reason, len), "a reason that is not UTF-8");
    CHECK(len == 0 || close_code_valid((unsigned)code), "a reason with code %d", code);
    char line[32];
    int n = snprintf(line, sizeof line, "closed %d ", code);
    buf_put(&p->log, line, (size_t)n);
    buf_put(&p->log, reason, len);
}

/* A server message (inflated when compressed) against the next one echoed. */
static void check_echoed(play *p, size_t *at, int type, int deflated, const buf *m)
{
    buf plain = {0};
    const buf *got = m;
    if (deflated) {
        z_stream z;
        memset(&z, 0, sizeof z);
        CHECK(inflateInit2(&z, -p->c->hs.server_window) == Z_OK, "inflateInit2");
        buf in = {0};
        buf_put(&in, m->p, m->len);
        buf_put(&in, "\x00\x00\xff\xff", 4);
        z.next_in = in.p;
        z.avail_in = (uInt)in.len;
        int r = Z_OK;
        while (z.avail_in > 0) {
            unsigned char chunk[4096];
            z.next_out = chunk;
            z.avail_out = sizeof chunk;
            r = inflate(&z, Z_SYNC_FLUSH);
            CHECK(r == Z_OK || r == Z_BUF_ERROR, "the server's message does not inflate: %d", r);
            buf_put(&plain, chunk, sizeof chunk - z.avail_out);
            if (r == Z_BUF_ERROR) break;
        }
        CHECK(z.avail_in == 0, "the server's message: %u bytes left uninflated", z.avail_in);
        inflateEnd(&z);
        buf_free(&in);
        got = &plain;
    }
    CHECK(*at + 9 <= p->echoed.len, "the server sent a message that was not echoed");
    const unsigned char *h = p->echoed.p + *at;
    uint64_t len = 0;
    for (int i = 0; i < 8; i++) len = len << 8 | h[1 + i];
    CHECK(h[0] == type, "echoed type %d, sent %d", h[0], type);
    CHECK(len == got->len && (len == 0 || memcmp(h + 9, got->p, got->len) == 0),
          "a message of %zu bytes went out as %zu other bytes", (size_t)len, got->len);
    *at += 9 + (size_t)len;
    buf_free(&plain);
}

/* The session's output, frame by frame (see the top). Returns the code
 * of its close frame: -1 none, 0 an empty one. */
static int check_output(play *p)
{
    const buf *out = &p->out;
    size_t pos = 0, echoed_at = 0;
    int in_message = 0, type = 0, deflated = 0, close = -1;
    buf m = {0};
    while (pos < out->len) {
        CHECK(out->len - pos >= 2, "a frame cut short");
        const unsigned char *h = out->p + pos;
        unsigned b0 = h[0], op = b0 & 0x0f;
        /* §5.5.1: no data frame after the close, nor another close */
        CHECK(close < 0 || op == 9 || op == 10, "opcode %u after the close frame", op);
        CHECK(!(h[1] & 0x80), "a masked server frame");
        uint64_t len = h[1] & 0x7f;
        size_t hl = 2;
        if (len == 126) {
            CHECK(out->len - pos >= 4, "a frame head cut short");
            len = (uint64_t)h[2] << 8 | h[3];
            hl = 4;
            CHECK(len >= 126, "16-bit length %llu", (unsigned long long)len);
        } else if (len == 127) {
            CHECK(out->len - pos >= 10, "a frame head cut short");
            len = 0;
            for (int i = 0; i < 8; i++) len = len << 8 | h[2 + i];
            hl = 10;
            CHECK(len >= 65536 && !(len >> 63), "64-bit length %llu", (unsigned long long)len);
        }
        CHECK(len <= out->len - pos - hl, "a frame of %llu bytes, %zu written",
              (unsigned long long)len, out->len - pos - hl);
        CHECK(!(b0 & 0x30), "RSV2 or RSV3 set: 0x%02x", b0);
        const unsigned char *d = h + hl;
        if (op >= 8) {
            CHECK(op <= 10, "opcode %u", op);
            CHECK((b0 & 0x80) && !(b0 & 0x40), "control frame 0x%02x", b0);
            CHECK(len <= 125, "a control frame of %llu bytes", (unsigned long long)len);
            if (op == 8) {
                CHECK(len != 1, "a close frame of 1 byte");
                close = 0;
                if (len >= 2) {
                    close = d[0] << 8 | d[1];
                    CHECK(close_code_valid((unsigned)close), "close code %d", close);
                    CHECK(utf8_valid(d + 2, (size_t)len - 2), "a close reason not UTF-8");
                }
            }
        } else {
            CHECK(op <= 2, "opcode %u", op);
            if (op == 0) {
                CHECK(in_message, "a continuation without a message");
                CHECK(!(b0 & 0x40), "RSV1 on a continuation");
            } else {
                CHECK(!in_message, "a message inside a message");
                CHECK(!(b0 & 0x40) || p->c->hs.deflate, "RSV1 without deflate");
                type = (int)op;
                deflated = (b0 & 0x40) != 0;
                m.len = 0;
            }
            buf_put(&m, d, (size_t)len);
            in_message = !(b0 & 0x80);
            if (!in_message && p->c->echo) check_echoed(p, &echoed_at, type, deflated, &m);
        }
        pos += hl + (size_t)len;
    }
    CHECK(!in_message, "a message left unfinished");
    if (p->c->echo) CHECK(echoed_at == p->echoed.len, "an echoed message was not sent");
    buf_free(&m);
    return close;
}

/* Plays the input: mode 0 whole, 1 in pieces, 2 in pieces with the clock
 * and our own ping and close. */
static void run(const config *c, int mode, const uint8_t *in, size_t len, play *p)
{
    memset(p, 0, sizeof *p);
    p->c = c;
    p->rng = c->seed * 2654435761u + (uint32_t)mode;
    static const cshw_ws_handlers h = {NULL, h_message, h_drained, h_closed};
    cshw_ws_transport t = {t_write, t_close, t_release, t_pause, p};
    p->ws = cshw_ws_new(&c->o, &c->hs, &h, p, &t);
    CHECK(p->ws != NULL, "cshw_ws_new");
    cshw_ws_start(p->ws);
    int64_t now = 1000000, due = mode == 2 ? cshw_ws_tick(p->ws, now) : 0;
    size_t pos = 0;
    while (pos < len) {
        size_t n = len - pos;
        if (mode) {
            static const uint32_t caps[4] = {1, 16, 512, 4096};
            size_t piece = 1 + rng_next(&p->rng) % caps[c->pieces];
            if (piece < n) n = piece;
        }
        /* an exact-size copy: AddressSanitizer sees a read past it */
        char *copy = malloc(n);
        CHECK(copy != NULL, "out of memory");
        memcpy(copy, in + pos, n);
        int r = cshw_ws_input(p->ws, copy, n);
        free(copy);
        pos += n;
        CHECK(r == (p->closes > 0), "cshw_ws_input said %d, transport->close called %d", r,
              p->closes);
        CHECK(!p->closed, "closed() before cshw_ws_end");
        /* the queue drains before the next read */
        if (p->paused) cshw_ws_drained(p->ws);
        if (mode == 2) {
            uint32_t x = rng_next(&p->rng);
            now += x % 1500;
            if (x >> 28 == 1) {
                int pr = cshw_ws_ping(p->ws, "fz", 2);
                CHECK(pr == 0 || pr == 1 || (pr == -EPIPE && (p->our_close || p->closes)),
                      "cshw_ws_ping: %d", pr);
            }
            if (x >> 28 == 2 && !p->our_close) {
                int code = 1000 + (int)(x % 5);
                int cr = cshw_ws_close(p->ws, code, "fz");
                if (code == 1004)
                    CHECK(cr == -EINVAL, "cshw_ws_close(1004): %d", cr);
                else if (cr == 0)
                    p->our_close = code;
                else
                    CHECK(cr == -EPIPE, "cshw_ws_close: %d", cr);
            }
            if (now >= due || x % 7 == 0) {
                due = cshw_ws_tick(p->ws, now);
                CHECK(due == 0 || due > now, "tick at %lld: next at %lld", (long long)now,
                      (long long)due);
                CHECK(due == 0 || !p->closes, "a deadline after the end");
            }
        }
    }
    CHECK(cshw_ws_input(p->ws, "", 0) == 1, "the end of input did not end the session");
    CHECK(p->closes == 1, "the end without transport->close");
    CHECK(cshw_ws_bytes_in(p->ws) == p->received, "bytes_in %llu, messages %llu",
          (unsigned long long)cshw_ws_bytes_in(p->ws), (unsigned long long)p->received);
    cshw_ws_end(p->ws, 0);
    CHECK(p->closed == 1, "closed() not called by cshw_ws_end");
    CHECK(p->released == 1, "transport->release not called at the last reference");

    int close = check_output(p);
    if (p->our_close) {
        CHECK(close == p->our_close, "our close %d went out as %d", p->our_close, close);
    } else if (p->code == CSHW_WS_ABNORMAL) {
        CHECK(close < 0, "closed() says 1006 but a close frame (%d) was sent", close);
    } else if (p->code == CSHW_WS_NO_STATUS) {
        CHECK(close == 0, "closed() says 1005 but the close frame said %d", close);
    } else {
        CHECK(close == p->code, "closed() says %d but the close frame said %d", p->code, close);
    }
}

static void play_free(play *p)
{
    buf_free(&p->out);
    buf_free(&p->log);
    buf_free(&p->echoed);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 4) return 0;
    config c;
    memset(&c, 0, sizeof c);
    cshw_ws_options_init(&c.o);
    unsigned b0 = data[0], b1 = data[1], b2 = data[2];
    static const int windows[4] = {15, 12, 9, 8};
    static const uint32_t mins[4] = {0, 1, 16, 64};
    c.hs.deflate = b0 & 1;
    if (c.hs.deflate) {
        c.hs.client_window = windows[(b0 >> 1) & 3];
        c.hs.server_window = c.hs.client_window < 9 ? 9 : c.hs.client_window;
    }
    c.o.max_message = (b0 & 8) ? 1 + 8 * (uint64_t)b1 : 65536;
    if (b0 & 16) c.o.max_fragments = 1 + (b2 & 7);
    c.echo = (b0 >> 5) & 1;
    c.echo_parts = (b0 >> 6) & 1;
    c.full = (b0 >> 7) & 1;
    c.pieces = (b2 >> 3) & 3;
    c.o.deflate_min = mins[(b2 >> 5) & 3];
    c.o.ping_interval_ms = 1000;
    c.o.pong_timeout_ms = 500;
    c.o.close_timeout_ms = 300;
    c.seed = data[3];
    const uint8_t *in = data + 4;
    size_t len = size - 4;

    play whole, split, timed;
    run(&c, 0, in, len, &whole);
    run(&c, 1, in, len, &split);
    /* how the bytes arrive changes nothing */
    if (!buf_same(&whole.log, &split.log)) {
        print_log("whole", &whole.log);
        print_log("in pieces", &split.log);
    }
    CHECK(buf_same(&whole.log, &split.log),
          "whole and in pieces: other messages or another close (%zu and %zu bytes of log)",
          whole.log.len, split.log.len);
    CHECK(buf_same(&whole.out, &split.out), "whole and in pieces: other output (%zu and %zu bytes)",
          whole.out.len, split.out.len);
    run(&c, 2, in, len, &timed);
    play_free(&whole);
    play_free(&split);
    play_free(&timed);
    return 0;
}
