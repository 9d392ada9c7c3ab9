/* cshw_ws (src/websocket.c, websocket_handshake.c, websocket_deflate.c):
 * the opening handshake's checks and answer (RFC 6455 §4.2, §4.4, the
 * Origin rule of §10.2; permessage-deflate's negotiation, RFC 7692 §7.1)
 * and the session over an in-memory transport: frames of every length
 * form (§5.2) fed whole, a byte at a time and cut at every offset, the
 * rules that fail the connection (§5.1-§5.5, §7.4.1, §8.1), the closing
 * handshake (§7), compressed messages (RFC 7692 §7.2), the timers,
 * sending, flow control and the session's life. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <zlib.h>

#include "cshttp/web/websocket.h"
#include "tw.h"

#include "ws_oracle.h"

/* ---- bytes ---- */

typedef struct bytes {
    unsigned char *p;
    size_t len, cap;
} bytes;

static void put(bytes *b, const void *data, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n + 1) cap *= 2;
        unsigned char *p = realloc(b->p, cap);
        assert_non_null(p);
        b->p = p;
        b->cap = cap;
    }
    if (n) memcpy(b->p + b->len, data, n);
    b->len += n;
    b->p[b->len] = '\0';
}

static void put_str(bytes *b, const char *s)
{
    put(b, s, strlen(s));
}

static void put_printf(bytes *b, const char *fmt, ...)
{
    char tmp[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    assert_true(n >= 0 && (size_t)n < sizeof tmp);
    put(b, tmp, (size_t)n);
}

/* Printable ASCII as is, the rest as \xHH. */
static void put_escaped(bytes *b, const void *data, size_t n)
{
    const unsigned char *s = data;
    for (size_t i = 0; i < n; i++) {
        if (s[i] >= 0x20 && s[i] < 0x7f && s[i] != '"' && s[i] != '\\')
            put(b, s + i, 1);
        else
            put_printf(b, "\\x%02x", s[i]);
    }
}

static void bytes_free(bytes *b)
{
    free(b->p);
    memset(b, 0, sizeof *b);
}

/* "what \"data\"", or its length and CRC when long. */
static void describe(bytes *b, const char *what, const void *data, size_t len)
{
    if (len <= 48) {
        put_printf(b, "%s \"", what);
        put_escaped(b, data, len);
        put_str(b, "\"");
    } else {
        put_printf(b, "%s %zu bytes crc %08lx", what, len,
                   crc32(0, (const Bytef *)data, (uInt)len));
    }
}


/* ---- what a client sends ---- */

#define UNMASKED 1u /* §5.1: a client must mask; this one does not */
#define CUT1 2u     /* the frame's last byte left out: the input ends inside it */

static unsigned key_seq;

/* A frame's head (§5.2) announcing len bytes, masked with a key that
 * changes from frame to frame (§5.3), the key into key. */
static void client_head(bytes *b, unsigned b0, uint64_t len, unsigned flags, unsigned char key[4])
{
    unsigned char h[14];
    size_t n = 0;
    unsigned char m = flags & UNMASKED ? 0 : 0x80;
    h[n++] = (unsigned char)b0;
    if (len < 126) {
        h[n++] = (unsigned char)(m | len);
    } else if (len < 65536) {
        h[n++] = m | 126;
        h[n++] = (unsigned char)(len >> 8);
        h[n++] = (unsigned char)len;
    } else {
        h[n++] = m | 127;
        for (int i = 0; i < 8; i++) h[n++] = (unsigned char)(len >> (56 - 8 * i));
    }
    key_seq++;
    for (int i = 0; i < 4; i++) key[i] = (unsigned char)(0x37 + 0x5b * key_seq + 0x1d * i);
    if (m) {
        memcpy(h + n, key, 4);
        n += 4;
    }
    put(b, h, n);
}

static void client_frame_x(bytes *b, unsigned b0, const void *data, size_t len, unsigned flags)
{
    unsigned char key[4];
    client_head(b, b0, len, flags, key);
    size_t at = b->len;
    put(b, data, len);
    if (!(flags & UNMASKED))
        for (size_t i = 0; i < len; i++) b->p[at + i] ^= key[i & 3];
    if (flags & CUT1) b->len--;
}

static void client_frame(bytes *b, unsigned b0, const void *data, size_t len)
{
    client_frame_x(b, b0, data, len, 0);
}

/* A compressed message as a client sends it (RFC 7692 §7.2.1): raw
 * DEFLATE, a sync flush, its 00 00 ff ff tail removed. */
static void client_deflate(const void *data, size_t len, int window, bytes *z)
{
    z_stream s;
    memset(&s, 0, sizeof s);
    assert_int_equal(deflateInit2(&s, 6, Z_DEFLATED, -window, 8, Z_DEFAULT_STRATEGY), Z_OK);
    s.next_in = (Bytef *)(uintptr_t)data;
    s.avail_in = (uInt)len;
    size_t start = z->len;
    int r;
    do {
        unsigned char buf[4096] = {0}; /* written by zlib */
        s.next_out = buf;
        s.avail_out = sizeof buf;
        r = deflate(&s, Z_SYNC_FLUSH);
        assert_true(r == Z_OK || r == Z_BUF_ERROR);
        put(z, buf, sizeof buf - s.avail_out);
    } while (s.avail_in > 0 || s.avail_out == 0);
    deflateEnd(&s);
    assert_true(z->len - start >= 4);
    assert_memory_equal(z->p + z->len - 4, "\x00\x00\xff\xff", 4);
    z->len -= 4;
}

/* A server's compressed message inflated (the tail put back, RFC 7692
 * §7.2.2) with a window of `window` bits: 0, or -1 when it does not
 * inflate with that window. */
static int server_inflate(const unsigned char *data, size_t len, int window, bytes *out)
{
    z_stream s;
    memset(&s, 0, sizeof s);
    assert_int_equal(inflateInit2(&s, -window), Z_OK);
    bytes in = {0};
    put(&in, data, len);
    put(&in, "\x00\x00\xff\xff", 4);
    s.next_in = in.p;
    s.avail_in = (uInt)in.len;
    int r = Z_OK;
    while (s.avail_in > 0 && (r == Z_OK || r == Z_STREAM_END)) {
        unsigned char buf[4096] = {0}; /* written by zlib */
        s.next_out = buf;
        s.avail_out = sizeof buf;
        r = inflate(&s, Z_SYNC_FLUSH);
        if (r == Z_OK || r == Z_STREAM_END || r == Z_BUF_ERROR)
            put(out, buf, sizeof buf - s.avail_out);
        if (r == Z_BUF_ERROR && s.avail_out > 0) break;
    }
    inflateEnd(&s);
    bytes_free(&in);
    return r == Z_OK || r == Z_STREAM_END || r == Z_BUF_ERROR ? 0 : -1;
}

/* ---- what the server sends ---- */

typedef struct sframe {
    unsigned b0;
    const unsigned char *data;
    size_t len;
} sframe;

#define MAX_SFRAMES 512

/* The server's frames, checked: unmasked (§5.1), the length in its
 * shortest form (§5.2), no RSV2/RSV3 and RSV1 only on the first frame of a
 * message when deflate was agreed (RFC 7692 §6), known opcodes, control
 * frames whole and up to 125 bytes (§5.5), fragments in order (§5.4), a
 * close's payload none or a valid code and UTF-8 (§5.5.1, §7.4), after it
 * no data frame and no other close. Returns the number of frames. */
static size_t server_frames(const bytes *out, int deflate, sframe *f, size_t max)
{
    size_t pos = 0, n = 0;
    int in_message = 0, closed = 0;
    while (pos < out->len) {
        assert_true(out->len - pos >= 2);
        const unsigned char *h = out->p + pos;
        unsigned b0 = h[0], op = b0 & 0x0f;
        /* §5.5.1: no data frame after our close, nor a second close */
        assert_true(!closed || op == 9 || op == 10);
        assert_int_equal(h[1] & 0x80, 0); /* §5.1: a server never masks */
        uint64_t len = h[1] & 0x7f;
        size_t hl = 2;
        if (len == 126) {
            assert_true(out->len - pos >= 4);
            len = (uint64_t)h[2] << 8 | h[3];
            hl = 4;
            assert_true(len >= 126);
        } else if (len == 127) {
            assert_true(out->len - pos >= 10);
            len = 0;
            for (int i = 0; i < 8; i++) len = len << 8 | h[2 + i];
            hl = 10;
            assert_true(len >= 65536 && len >> 63 == 0);
        }
        assert_true(len <= out->len - pos - hl);
        assert_int_equal(b0 & 0x30, 0);
        if (op >= 8) {
            assert_true(op <= 10);
            assert_true(b0 & 0x80);
            assert_true(len <= 125);
            assert_int_equal(b0 & 0x40, 0);
            if (op == 8) {
                assert_true(len != 1);
                if (len >= 2) {
                    assert_true(close_code_valid((unsigned)h[hl] << 8 | h[hl + 1]));
                    assert_true(utf8_valid(h + hl + 2, (size_t)len - 2));
                }
                closed = 1;
            }
        } else {
            assert_true(op <= 2);
            if (op == 0) {
                assert_true(in_message);
                assert_int_equal(b0 & 0x40, 0); /* RFC 7692 §6.1: the first frame only */
            } else {
                assert_false(in_message);
                if (b0 & 0x40) assert_true(deflate);
            }
            in_message = !(b0 & 0x80);
        }
        assert_true(n < max);
        f[n].b0 = b0;
        f[n].data = h + hl;
        f[n].len = (size_t)len;
        n++;
        pos += hl + (size_t)len;
    }
    return n;
}

/* One line per frame: "> text \"hi\"", "> text... \"Hel\"" (not the last
 * fragment), "> binary+z ..." (RSV1), "> close 1000 \"bye\"", "> pong". */
static void describe_frames(bytes *d, const bytes *out, int deflate)
{
    static sframe f[MAX_SFRAMES];
    size_t n = server_frames(out, deflate, f, MAX_SFRAMES);
    static const char *names[] = {"cont", "text", "binary", "?",    "?",   "?",
                                  "?",    "?",    "close",  "ping", "pong"};
    for (size_t i = 0; i < n; i++) {
        unsigned op = f[i].b0 & 0x0f;
        if (op == 8) {
            if (f[i].len == 0) {
                put_str(d, "> close\n");
                continue;
            }
            put_printf(d, "> close %u", (unsigned)f[i].data[0] << 8 | f[i].data[1]);
            if (f[i].len > 2) describe(d, "", f[i].data + 2, f[i].len - 2);
            put_str(d, "\n");
            continue;
        }
        char what[32];
        snprintf(what, sizeof what, "> %s%s%s", names[op], f[i].b0 & 0x40 ? "+z" : "",
                 f[i].b0 & 0x80 ? "" : "...");
        if (op >= 8 && f[i].len == 0)
            put_str(d, what);
        else
            describe(d, what, f[i].data, f[i].len);
        put_str(d, "\n");
    }
}

/* ---- the session's other side: transport and handlers ---- */

typedef struct peer {
    cshw_ws *ws;
    bytes out; /* every byte write() was given */
    bytes log; /* the handlers' and the transport's calls, a line each */
    int writes, closes, releases, pause_calls, paused;
    int full;        /* write says 1: the queue is above the mark */
    int write_error; /* write says this when not 0 */
    int opens, drained, closed, messages;
    int code;
    char reason[128];
    size_t reason_len;
    bytes msg;    /* the last message */
    int msg_type; /* and its type */
    int echo;     /* message() sends it back, pausing when the send says 1 */
    int quiet;    /* closed() leaves the log alone */
} peer;

static int t_write(void *io, const void *data, size_t len)
{
    peer *p = io;
    p->writes++;
    assert_true(len > 0);
    if (p->write_error) return p->write_error;
    put(&p->out, data, len);
    return p->full ? 1 : 0;
}

static void t_close(void *io)
{
    peer *p = io;
    p->closes++;
    assert_int_equal(p->closes, 1);
    put_str(&p->log, "end\n");
}

static void t_release(void *io)
{
    peer *p = io;
    p->releases++;
    assert_int_equal(p->releases, 1);
}

static void t_pause(void *io, int paused)
{
    peer *p = io;
    p->pause_calls++;
    p->paused = paused;
}

static void h_open(cshw_ws *ws, void *arg)
{
    peer *p = arg;
    assert_ptr_equal(ws, p->ws);
    p->opens++;
}

static void h_message(cshw_ws *ws, int type, const char *data, size_t len, void *arg)
{
    peer *p = arg;
    assert_ptr_equal(ws, p->ws);
    assert_non_null(data);
    assert_true(type == CSHW_WS_TEXT || type == CSHW_WS_BINARY);
    if (type == CSHW_WS_TEXT) assert_true(utf8_valid((const unsigned char *)data, len));
    p->messages++;
    p->msg_type = type;
    p->msg.len = 0;
    put(&p->msg, data, len);
    describe(&p->log, type == CSHW_WS_TEXT ? "text" : "binary", data, len);
    put_str(&p->log, "\n");
    if (p->echo && cshw_ws_send(ws, type, data, len) == 1) cshw_ws_pause(ws, 1);
}

static void h_drained(cshw_ws *ws, void *arg)
{
    peer *p = arg;
    assert_ptr_equal(ws, p->ws);
    p->drained++;
    if (p->echo) cshw_ws_pause(ws, 0);
}

static void h_closed(cshw_ws *ws, int code, const char *reason, size_t len, void *arg)
{
    peer *p = arg;
    assert_ptr_equal(ws, p->ws);
    assert_int_equal(p->closed, 0); /* exactly once */
    p->closed++;
    p->code = code;
    assert_true(len < sizeof p->reason);
    if (len) memcpy(p->reason, reason, len);
    p->reason[len] = '\0';
    p->reason_len = len;
    if (p->quiet) return;
    put_printf(&p->log, "closed %d", code);
    if (len) describe(&p->log, "", reason, len);
    put_str(&p->log, "\n");
}

static const cshw_ws_handlers handlers = {h_open, h_message, h_drained, h_closed};

static cshw_ws_options defaults(void)
{
    cshw_ws_options o;
    cshw_ws_options_init(&o);
    return o;
}

static const cshw_ws_handshake no_deflate = {0, 0, 0, ""};
static const cshw_ws_handshake deflate_15 = {1, 15, 15, ""};

/* A started session (o NULL: the defaults) whose transport is p. */
static void peer_open(peer *p, const cshw_ws_options *o, const cshw_ws_handshake *hs)
{
    memset(p, 0, sizeof *p);
    cshw_ws_options d = defaults();
    cshw_ws_transport t = {t_write, t_close, t_release, t_pause, p};
    p->ws = cshw_ws_new(o ? o : &d, hs ? hs : &no_deflate, &handlers, p, &t);
    assert_non_null(p->ws);
    assert_int_equal(p->opens, 0);
    cshw_ws_start(p->ws);
    assert_int_equal(p->opens, 1);
}

/* The client's bytes, in an exact-size copy (a read past them is
 * AddressSanitizer's); the result says whether the transport was closed. */
static int feed(peer *p, const void *data, size_t len)
{
    char *copy = malloc(len ? len : 1);
    assert_non_null(copy);
    if (len) memcpy(copy, data, len);
    int r = cshw_ws_input(p->ws, copy, len);
    free(copy);
    assert_int_equal(r, p->closes > 0);
    assert_true(p->closes <= 1);
    assert_int_equal(p->closed, 0); /* closed() waits for cshw_ws_end */
    return r;
}

/* The owner ends the session: closed() once, the transport released. */
static void peer_end(peer *p)
{
    cshw_ws_end(p->ws, 0);
    assert_int_equal(p->closed, 1);
    assert_int_equal(p->releases, 1);
}

static void peer_free(peer *p)
{
    bytes_free(&p->out);
    bytes_free(&p->log);
    bytes_free(&p->msg);
}

/* ---- the wire: the same bytes however they arrive ---- */

typedef struct setup {
    uint64_t max_message;   /* 0: the default */
    uint32_t max_fragments; /* 0: the default */
    int deflate;            /* permessage-deflate agreed, windows of 15 */
    int eof;                /* the input ends after the bytes */
} setup;

#define WHOLE ((size_t)0)
#define BYTEWISE ((size_t)-1)

/* Plays `in` whole, a byte at a time, or cut in two at `cut`, then (eof)
 * the end of input, then cshw_ws_end: the transcript (malloc'd), the
 * handlers' and the transport's lines then the server's frames. */
static char *play(const setup *s, const bytes *in, size_t cut)
{
    cshw_ws_options o = defaults();
    if (s->max_message) o.max_message = s->max_message;
    if (s->max_fragments) o.max_fragments = s->max_fragments;
    peer p;
    peer_open(&p, &o, s->deflate ? &deflate_15 : &no_deflate);
    if (cut == BYTEWISE) {
        for (size_t i = 0; i < in->len; i++) feed(&p, in->p + i, 1);
    } else if (cut > 0 && cut < in->len) {
        feed(&p, in->p, cut);
        feed(&p, in->p + cut, in->len - cut);
    } else if (in->len) {
        feed(&p, in->p, in->len);
    }
    if (s->eof) assert_int_equal(feed(&p, "", 0), 1);
    /* a session the input did not end: the owner's end is 1006, not part
     * of the transcript */
    p.quiet = p.closes == 0;
    peer_end(&p);
    if (p.quiet) assert_int_equal(p.code, CSHW_WS_ABNORMAL);
    bytes t = {0};
    put(&t, p.log.p, p.log.len);
    describe_frames(&t, &p.out, s->deflate);
    peer_free(&p);
    return (char *)t.p;
}

static void same(const char *name, const char *how, size_t cut, char *got, const char *want)
{
    if (strcmp(got, want) != 0)
        fail_msg("%s, %s %zu:\ngot:\n%swant:\n%s", name, how, cut, got, want);
    free(got);
}

/* As the .case files of the HTTP parser: the bytes whole, a byte at a
 * time and cut at every offset (every_cut 0: the first and last 24
 * offsets and 40 others) must give `want`. */
static void check_wire_x(const char *name, const setup *s, const bytes *in, const char *want,
                         int every_cut)
{
    same(name, "whole", 0, play(s, in, WHOLE), want);
    same(name, "byte by byte", 0, play(s, in, BYTEWISE), want);
    uint32_t rng = 2463534242u;
    for (size_t cut = 1; cut < in->len; cut++) {
        if (!every_cut && cut > 24 && cut + 24 < in->len) {
            rng ^= rng << 13, rng ^= rng >> 17, rng ^= rng << 5;
            if (rng % in->len >= 40) continue;
        }
        same(name, "cut at", cut, play(s, in, cut), want);
    }
}

static void check_wire(const char *name, const setup *s, const bytes *in, const char *want)
{
    check_wire_x(name, s, in, want, 1);
}

/* The closing lines of a connection we failed with `code` (§7.1.7). */
#define FAILS(code) "end\nclosed " #code "\n> close " #code "\n"

typedef struct wframe {
    unsigned b0; /* FIN, RSV1-3, opcode (§5.2) */
    const char *data;
    size_t len;
    unsigned flags;
} wframe;

#define F(b0, s)                                                                                   \
    {                                                                                              \
        (b0), (s), sizeof(s) - 1, 0                                                                \
    }
#define FX(b0, s, flags)                                                                           \
    {                                                                                              \
        (b0), (s), sizeof(s) - 1, (flags)                                                          \
    }

typedef struct wcase {
    const char *name;
    setup s;
    wframe f[8];
    const char *want;
} wcase;

#define PLAIN                                                                                      \
    {                                                                                              \
        0, 0, 0, 0                                                                                 \
    }
#define DEFLATE                                                                                    \
    {                                                                                              \
        0, 0, 1, 0                                                                                 \
    }
#define EOF_                                                                                       \
    {                                                                                              \
        0, 0, 0, 1                                                                                 \
    }
#define LIMIT(m, f)                                                                                \
    {                                                                                              \
        (m), (f), 0, 0                                                                             \
    }

static const wcase wire_cases[] = {
    /* §5.6: data frames */
    {"text", PLAIN, {F(0x81, "Hello")}, "text \"Hello\"\n"},
    {"binary", PLAIN, {F(0x82, "\x00\x01\xff")}, "binary \"\\x00\\x01\\xff\"\n"},
    {"empty text", PLAIN, {F(0x81, "")}, "text \"\"\n"},
    {"empty binary", PLAIN, {F(0x82, "")}, "binary \"\"\n"},
    {"two messages", PLAIN, {F(0x81, "a"), F(0x82, "b")}, "text \"a\"\nbinary \"b\"\n"},
    /* §5.4: fragments, control frames between them */
    {"fragmented text", PLAIN, {F(0x01, "Hel"), F(0x80, "lo")}, "text \"Hello\"\n"},
    {"fragmented binary",
     PLAIN,
     {F(0x02, "a"), F(0x00, "b"), F(0x00, ""), F(0x80, "c")},
     "binary \"abc\"\n"},
    {"ping inside a message",
     PLAIN,
     {F(0x01, "Hel"), F(0x89, "p"), F(0x00, ""), F(0x8a, "q"), F(0x80, "lo")},
     "text \"Hello\"\n> pong \"p\"\n"},
    {"continuation first", PLAIN, {F(0x80, "x")}, FAILS(1002)},
    {"continuation, not last, first", PLAIN, {F(0x00, "x")}, FAILS(1002)},
    {"text inside a message", PLAIN, {F(0x01, "a"), F(0x81, "b")}, FAILS(1002)},
    {"binary inside a message", PLAIN, {F(0x01, "a"), F(0x02, "b")}, FAILS(1002)},
    {"continuation after the last",
     PLAIN,
     {F(0x01, "a"), F(0x80, "b"), F(0x80, "c")},
     "text \"ab\"\n" FAILS(1002)},
    /* §5.5.2, §5.5.3: ping and pong */
    {"ping", PLAIN, {F(0x89, "Hello")}, "> pong \"Hello\"\n"},
    {"empty ping", PLAIN, {F(0x89, "")}, "> pong\n"},
    {"pong unasked", PLAIN, {F(0x8a, "x")}, ""},
    {"ping of 125",
     PLAIN,
     {F(0x89, "0123456789012345678901234567890123456789012345678901234567890123456789"
              "0123456789012345678901234567890123456789012345678901234")},
     "> pong 125 bytes crc f278f09f\n"},
    /* §5.5: control frames are whole and up to 125 bytes */
    {"ping of 126",
     PLAIN,
     {F(0x89, "0123456789012345678901234567890123456789012345678901234567890123456789"
              "01234567890123456789012345678901234567890123456789012345")},
     FAILS(1002)},
    {"close of 126",
     PLAIN,
     {F(0x88, "\x03\xe8"
              "2345678901234567890123456789012345678901234567890123456789012345678901234567"
              "890123456789012345678901234567890123456789012345")},
     FAILS(1002)},
    {"ping not last", PLAIN, {F(0x09, "p")}, FAILS(1002)},
    {"pong not last", PLAIN, {F(0x0a, "p")}, FAILS(1002)},
    {"close not last", PLAIN, {F(0x08, "")}, FAILS(1002)},
    /* §5.2: reserved bits with no extension agreed, reserved opcodes */
    {"RSV1 without deflate", PLAIN, {F(0xc1, "x")}, FAILS(1002)},
    {"RSV2", PLAIN, {F(0xa1, "x")}, FAILS(1002)},
    {"RSV3", PLAIN, {F(0x91, "x")}, FAILS(1002)},
    {"RSV2 on a ping", PLAIN, {F(0xa9, "")}, FAILS(1002)},
    {"opcode 3", PLAIN, {F(0x83, "")}, FAILS(1002)},
    {"opcode 7", PLAIN, {F(0x87, "")}, FAILS(1002)},
    {"opcode 0xB", PLAIN, {F(0x8b, "")}, FAILS(1002)},
    {"opcode 0xF", PLAIN, {F(0x8f, "")}, FAILS(1002)},
    /* §5.1: the server closes the connection on an unmasked frame */
    {"unmasked text", PLAIN, {FX(0x81, "Hello", UNMASKED)}, FAILS(1002)},
    {"unmasked after a message",
     PLAIN,
     {F(0x81, "a"), FX(0x82, "b", UNMASKED)},
     "text \"a\"\n" FAILS(1002)},
    {"unmasked empty ping", PLAIN, {FX(0x89, "", UNMASKED)}, FAILS(1002)},
    /* §5.5.1, §7.1.5: the closing handshake; the peer's code back */
    {"close 1000 bye",
     PLAIN,
     {F(0x88, "\x03\xe8"
              "bye")},
     "end\nclosed 1000 \"bye\"\n> close 1000\n"},
    {"close without code", PLAIN, {F(0x88, "")}, "end\nclosed 1005\n> close\n"},
    {"close of 1 byte", PLAIN, {F(0x88, "\x03")}, FAILS(1002)},
    {"close reason not UTF-8", PLAIN, {F(0x88, "\x03\xe8\xff")}, FAILS(1007)},
    {"close reason cut in a character", PLAIN, {F(0x88, "\x03\xe8\xe2\x82")}, FAILS(1007)},
    {"close reason UTF-8",
     PLAIN,
     {F(0x88, "\x03\xe8\xc3\xa9")},
     "end\nclosed 1000 \"\\xc3\\xa9\"\n> close 1000\n"},
    {"nothing after a close",
     PLAIN,
     {F(0x88, "\x03\xe9"), F(0x81, "late"), F(0x89, "")},
     "end\nclosed 1001\n> close 1001\n"},
    {"close inside a message",
     PLAIN,
     {F(0x01, "Hel"), F(0x88, "\x03\xe8")},
     "end\nclosed 1000\n> close 1000\n"},
    /* §8.1: text is UTF-8, checked across fragments */
    {"euro sign across fragments",
     PLAIN,
     {F(0x01, "\xe2"), F(0x00, "\x82"), F(0x80, "\xac")},
     "text \"\\xe2\\x82\\xac\"\n"},
    {"bad continuation across fragments",
     PLAIN,
     {F(0x01, "\xe2"), F(0x80, "\x28\xa1")},
     FAILS(1007)},
    {"a character cut by the last fragment",
     PLAIN,
     {F(0x01, "a\xf0\x9d"), F(0x80, "\x84")},
     FAILS(1007)},
    {"invalid in a fragment not last", PLAIN, {F(0x01, "ok\xff"), F(0x80, "more")}, FAILS(1007)},
    {"binary is not UTF-8",
     PLAIN,
     {F(0x82, "\xff\xfe\xc0\xaf")},
     "binary \"\\xff\\xfe\\xc0\\xaf\"\n"},
    /* max_message (after inflating) and max_fragments: 1009 */
    {"message at the limit",
     LIMIT(16, 0),
     {F(0x81, "0123456789abcdef")},
     "text \"0123456789abcdef\"\n"},
    {"one frame past the limit", LIMIT(16, 0), {F(0x81, "0123456789abcdefg")}, FAILS(1009)},
    {"fragments at the limit",
     LIMIT(16, 0),
     {F(0x02, "0123456789"), F(0x80, "abcdef")},
     "binary \"0123456789abcdef\"\n"},
    {"fragments past the limit",
     LIMIT(16, 0),
     {F(0x02, "0123456789"), F(0x80, "abcdefg")},
     FAILS(1009)},
    {"control frames do not count",
     LIMIT(4, 0),
     {F(0x89, "12345678"), F(0x81, "abcd")},
     "text \"abcd\"\n> pong \"12345678\"\n"},
    {"fragments at max_fragments",
     LIMIT(0, 3),
     {F(0x01, "a"), F(0x00, "b"), F(0x80, "c")},
     "text \"abc\"\n"},
    {"fragments past max_fragments",
     LIMIT(0, 3),
     {F(0x01, "a"), F(0x00, "b"), F(0x00, "c"), F(0x80, "d")},
     FAILS(1009)},
    {"empty fragments past max_fragments",
     LIMIT(0, 3),
     {F(0x01, ""), F(0x00, ""), F(0x00, ""), F(0x00, "")},
     FAILS(1009)},
    {"pings between fragments do not count",
     LIMIT(0, 3),
     {F(0x01, "a"), F(0x89, ""), F(0x8a, ""), F(0x00, "b"), F(0x89, ""), F(0x80, "c")},
     "text \"abc\"\n> pong\n> pong\n"},
    {"max_fragments is per message",
     LIMIT(0, 2),
     {F(0x01, "a"), F(0x80, "b"), F(0x01, "c"), F(0x80, "d")},
     "text \"ab\"\ntext \"cd\"\n"},
    /* §7.1.5: the input ends without a close frame: 1006 */
    {"end after a message", EOF_, {F(0x81, "Hello")}, "text \"Hello\"\nend\nclosed 1006\n"},
    {"end inside a message", EOF_, {F(0x01, "Hel")}, "end\nclosed 1006\n"},
    {"end inside a frame", EOF_, {FX(0x81, "Hello", CUT1)}, "end\nclosed 1006\n"},
    {"end after a close", EOF_, {F(0x88, "\x03\xe8")}, "end\nclosed 1000\n> close 1000\n"},
    {"end after a failure", EOF_, {F(0x83, "")}, FAILS(1002)},
    /* RFC 7692 §7.2.3: its examples, masked */
    {"7692 7.2.3.1 Hello", DEFLATE, {F(0xc1, "\xf2\x48\xcd\xc9\xc9\x07\x00")}, "text \"Hello\"\n"},
    {"7692 7.2.1 Hello in two fragments",
     DEFLATE,
     {F(0x41, "\xf2\x48\xcd"), F(0x80, "\xc9\xc9\x07\x00")},
     "text \"Hello\"\n"},
    {"7692 7.2.3.3 no compression",
     DEFLATE,
     {F(0xc1, "\x00\x05\x00\xfa\xff\x48\x65\x6c\x6c\x6f\x00")},
     "text \"Hello\"\n"},
    {"7692 7.2.3.4 BFINAL set",
     DEFLATE,
     {F(0xc1, "\xf3\x48\xcd\xc9\xc9\x07\x00\x00")},
     "text \"Hello\"\n"},
    {"7692 7.2.3.5 two blocks",
     DEFLATE,
     {F(0xc1, "\xf2\x48\x05\x00\x00\x00\xff\xff\xca\xc9\xc9\x07\x00")},
     "text \"Hello\"\n"},
    {"7692 7.2.3.6 empty message", DEFLATE, {F(0xc1, "\x00")}, "text \"\"\n"},
    {"compressed binary",
     DEFLATE,
     {F(0xc2, "\x00\x05\x00\xfa\xff\x48\x65\x6c\x6c\x6f\x00")},
     "binary \"Hello\"\n"},
    {"uncompressed with deflate agreed", DEFLATE, {F(0x81, "Hello")}, "text \"Hello\"\n"},
    {"ping inside a compressed message",
     DEFLATE,
     {F(0x41, "\xf2\x48\xcd"), F(0x89, "p"), F(0x80, "\xc9\xc9\x07\x00")},
     "text \"Hello\"\n> pong \"p\"\n"},
    /* RFC 7692 §6.1: RSV1 on the first frame of a data message only */
    {"RSV1 on a continuation",
     DEFLATE,
     {F(0x41, "\xf2\x48\xcd"), F(0xc0, "\xc9\xc9\x07\x00")},
     FAILS(1002)},
    {"RSV1 on a ping", DEFLATE, {F(0xc9, "")}, FAILS(1002)},
    {"compressed text not UTF-8", DEFLATE, {F(0xc1, "\x00\x01\x00\xfe\xff\xff")}, FAILS(1007)},
    {"compressed binary not UTF-8",
     DEFLATE,
     {F(0xc2, "\x00\x01\x00\xfe\xff\xff")},
     "binary \"\\xff\"\n"},
    {"not DEFLATE data", DEFLATE, {F(0xc1, "\xff\xff\xff\xff")}, FAILS(1007)},
    {"compressed past the limit",
     {5, 0, 1, 0},
     {F(0xc1, "\x00\x06\x00\xf9\xff"
              "Hello!")},
     FAILS(1009)},
    {"compressed at the limit",
     {5, 0, 1, 0},
     {F(0xc1, "\x00\x05\x00\xfa\xff"
              "Hello")},
     "text \"Hello\"\n"},
};

static void wire_bytes(const wframe *f, size_t n, bytes *in)
{
    for (size_t i = 0; i < n && f[i].data; i++)
        client_frame_x(in, f[i].b0, f[i].data, f[i].len, f[i].flags);
}

static void test_wire_cases(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof wire_cases / sizeof *wire_cases; i++) {
        const wcase *c = &wire_cases[i];
        bytes in = {0};
        wire_bytes(c->f, 8, &in);
        check_wire(c->name, &c->s, &in, c->want);
        bytes_free(&in);
    }
}

/* A message that breaks two rules fails with the first one its bytes
 * break, however they arrive. */
static const wcase first_rule_cases[] = {
    /* the first rule broken in the message's bytes, however they arrive:
     * here the byte 0xff (1007) comes before the limit is passed (1009) */
    {"compressed text not UTF-8 before the limit",
     {4, 0, 1, 0},
     {F(0xc1, "\x00\x07\x00\xf8\xff"
              "ab\xff"
              "cdef")},
     FAILS(1007)},
    {"compressed text past the limit, then not UTF-8",
     {4, 0, 1, 0},
     {F(0xc1, "\x00\x06\x00\xf9\xff"
              "abcde\xff")},
     FAILS(1009)},
};

static void test_wire_first_rule_broken(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof first_rule_cases / sizeof *first_rule_cases; i++) {
        const wcase *c = &first_rule_cases[i];
        bytes in = {0};
        wire_bytes(c->f, 8, &in);
        check_wire(c->name, &c->s, &in, c->want);
        bytes_free(&in);
    }
}

/* RFC 6455 §5.7's examples, byte for byte. */
static void test_rfc6455_examples(void **state)
{
    (void)state;
    static const setup plain = PLAIN;
    /* a single-frame masked text message */
    static const unsigned char hello[] = {0x81, 0x85, 0x37, 0xfa, 0x21, 0x3d,
                                          0x7f, 0x9f, 0x4d, 0x51, 0x58};
    bytes in = {0};
    put(&in, hello, sizeof hello);
    check_wire("5.7 masked Hello", &plain, &in, "text \"Hello\"\n");
    /* a masked ping: the pong is the unmasked one of the example */
    in.p[0] = 0x89;
    peer p;
    peer_open(&p, NULL, NULL);
    feed(&p, in.p, in.len);
    assert_int_equal(p.out.len, 7);
    assert_memory_equal(p.out.p, "\x8a\x05Hello", 7);
    /* a fragmented unmasked text message, sent */
    p.out.len = 0;
    assert_int_equal(cshw_ws_send_part(p.ws, CSHW_WS_TEXT, "Hel", 3, 0), 0);
    assert_int_equal(cshw_ws_send_part(p.ws, CSHW_WS_TEXT, "lo", 2, 1), 0);
    assert_int_equal(p.out.len, 9);
    assert_memory_equal(p.out.p, "\x01\x03Hel\x80\x02lo", 9);
    /* 256 bytes and 64 KiB binary messages in a single unmasked frame */
    static char big[65536];
    p.out.len = 0;
    assert_int_equal(cshw_ws_send(p.ws, CSHW_WS_BINARY, big, 256), 0);
    assert_int_equal(p.out.len, 4 + 256);
    assert_memory_equal(p.out.p, "\x82\x7e\x01\x00", 4);
    p.out.len = 0;
    assert_int_equal(cshw_ws_send(p.ws, CSHW_WS_BINARY, big, 65536), 0);
    assert_int_equal(p.out.len, 10 + 65536);
    assert_memory_equal(p.out.p, "\x82\x7f\x00\x00\x00\x00\x00\x01\x00\x00", 10);
    assert_int_equal(cshw_ws_bytes_out(p.ws), 5 + 256 + 65536);
    peer_end(&p);
    peer_free(&p);
    bytes_free(&in);
}

/* §5.2: 7-bit lengths up to 125, 16-bit from 126 to 65535, 64-bit from
 * 65536, both ways. */
static void test_length_forms(void **state)
{
    (void)state;
    static const size_t sizes[] = {0, 1, 125, 126, 127, 1000, 65535, 65536, 70000};
    static const setup plain = PLAIN;
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        size_t n = sizes[i];
        char *data = malloc(n + 1);
        assert_non_null(data);
        for (size_t k = 0; k < n; k++) data[k] = (char)('a' + k % 26);
        for (int type = CSHW_WS_TEXT; type <= CSHW_WS_BINARY; type++) {
            bytes in = {0}, want = {0};
            client_frame(&in, 0x80u | (unsigned)type, data, n);
            assert_int_equal(in.len, n + 6 + (n < 126 ? 0 : n < 65536 ? 2 : 8));
            describe(&want, type == CSHW_WS_TEXT ? "text" : "binary", data, n);
            put_str(&want, "\n");
            char name[64];
            snprintf(name, sizeof name, "a frame of %zu", n);
            check_wire_x(name, &plain, &in, (char *)want.p, n <= 1000);

            /* the server's frame for it: the same length form */
            peer p;
            peer_open(&p, NULL, NULL);
            assert_int_equal(cshw_ws_send(p.ws, type, data, n), 0);
            want.len = 0;
            describe(&want, type == CSHW_WS_TEXT ? "> text" : "> binary", data, n);
            put_str(&want, "\n");
            bytes got = {0};
            describe_frames(&got, &p.out, 0);
            assert_string_equal(got.p, want.p);
            assert_int_equal(p.out.len, n + (n < 126 ? 2 : n < 65536 ? 4 : 10));
            peer_end(&p);
            peer_free(&p);
            bytes_free(&got);
            bytes_free(&in);
            bytes_free(&want);
        }
        free(data);
    }

    /* §5.2: the most significant bit of a 64-bit length is 0 */
    static const setup limit = LIMIT(0, 0);
    bytes in = {0};
    put(&in, "\x82\xff\x80\x00\x00\x00\x00\x00\x00\x00\x01\x02\x03\x04", 14);
    check_wire("64-bit length with its top bit", &limit, &in, FAILS(1002));
    /* a length past max_message fails at the head, before its payload */
    in.len = 0;
    put(&in, "\x82\xff\x00\x00\x01\x00\x00\x00\x00\x00\x01\x02\x03\x04", 14);
    check_wire("a 1 TiB frame", &limit, &in, FAILS(1009));
    in.len = 0;
    put(&in, "\x82\xfe\xff\xff\x01\x02\x03\x04", 8);
    static const setup small = LIMIT(65534, 0);
    check_wire("a 64 KiB frame over a 64 KiB - 2 limit", &small, &in, FAILS(1009));
    bytes_free(&in);
}

/* §5.1: an unmasked frame fails at its second byte, without waiting for
 * mask bytes it will never have (a lone "\x89\x00" from a client that
 * then waits for its pong). */
static void test_unmasked_refused_at_once(void **state)
{
    (void)state;
    peer p;
    peer_open(&p, NULL, NULL);
    assert_int_equal(feed(&p, "\x89\x00", 2), 1);
    bytes d = {0};
    describe_frames(&d, &p.out, 0);
    assert_string_equal(d.p, "> close 1002\n");
    peer_end(&p);
    assert_int_equal(p.code, CSHW_WS_PROTOCOL_ERROR);
    peer_free(&p);
    bytes_free(&d);
}

/* §7.4.1, §7.4.2 and IANA's registry: the codes a close frame may carry
 * are echoed; the others fail the connection. */
static void test_close_codes(void **state)
{
    (void)state;
    static const unsigned valid[] = {1000, 1001, 1002, 1003, 1007, 1008, 1009, 1010,
                                     1011, 1012, 1013, 1014, 3000, 3999, 4000, 4999};
    static const unsigned invalid[] = {0,    1,    999,  1004, 1005, 1006, 1015,
                                       1016, 1100, 2000, 2999, 5000, 65535};
    static const setup plain = PLAIN;
    for (size_t i = 0; i < sizeof valid / sizeof *valid; i++) {
        unsigned char payload[4] = {(unsigned char)(valid[i] >> 8), (unsigned char)valid[i], 'o',
                                    'k'};
        char name[32], want[128];
        snprintf(name, sizeof name, "close %u", valid[i]);
        bytes in = {0};
        client_frame(&in, 0x88, payload, 2);
        snprintf(want, sizeof want, "end\nclosed %u\n> close %u\n", valid[i], valid[i]);
        check_wire(name, &plain, &in, want);
        in.len = 0;
        client_frame(&in, 0x88, payload, 4);
        snprintf(want, sizeof want, "end\nclosed %u \"ok\"\n> close %u\n", valid[i], valid[i]);
        check_wire(name, &plain, &in, want);
        bytes_free(&in);
    }
    for (size_t i = 0; i < sizeof invalid / sizeof *invalid; i++) {
        unsigned char payload[2] = {(unsigned char)(invalid[i] >> 8), (unsigned char)invalid[i]};
        char name[32];
        snprintf(name, sizeof name, "close %u", invalid[i]);
        bytes in = {0};
        client_frame(&in, 0x88, payload, 2);
        check_wire(name, &plain, &in, FAILS(1002));
        bytes_free(&in);
    }
}

/* §8.1, RFC 3629: each class of valid and invalid UTF-8, in one frame, in
 * two fragments cut at every byte and in a fragment per byte. */
static void utf8_case(const char *s, size_t n, int valid)
{
    static const setup plain = PLAIN;
    bytes want = {0}, in = {0};
    if (valid) {
        describe(&want, "text", s, n);
        put_str(&want, "\n");
    } else {
        put_str(&want, FAILS(1007));
    }
    char name[96];
    bytes esc = {0};
    put_escaped(&esc, s, n);
    snprintf(name, sizeof name, "UTF-8 \"%.60s\"", esc.p);
    client_frame(&in, 0x81, s, n);
    check_wire(name, &plain, &in, (char *)want.p);
    for (size_t k = 0; k <= n; k++) {
        in.len = 0;
        client_frame(&in, 0x01, s, k);
        client_frame(&in, 0x80, s + k, n - k);
        check_wire_x(name, &plain, &in, (char *)want.p, 0);
    }
    in.len = 0;
    for (size_t k = 0; k < n; k++)
        client_frame(&in, (k ? 0x00u : 0x01u) | (k + 1 == n ? 0x80u : 0), s + k, 1);
    check_wire_x(name, &plain, &in, (char *)want.p, 0);
    /* the same bytes in a binary message are not checked */
    in.len = 0;
    want.len = 0;
    client_frame(&in, 0x82, s, n);
    describe(&want, "binary", s, n);
    put_str(&want, "\n");
    check_wire(name, &plain, &in, (char *)want.p);
    bytes_free(&want);
    bytes_free(&in);
    bytes_free(&esc);
}

#define UTF8(lit, valid) utf8_case((lit), sizeof(lit) - 1, (valid))

static void test_utf8(void **state)
{
    (void)state;
    /* 1 to 4 bytes, at the bounds of each length */
    UTF8("a", 1);
    UTF8("\x7f", 1);
    UTF8("\xc2\x80", 1);                                     /* U+0080 */
    UTF8("\xc3\xa9", 1);                                     /* é */
    UTF8("\xdf\xbf", 1);                                     /* U+07FF */
    UTF8("\xe0\xa0\x80", 1);                                 /* U+0800 */
    UTF8("\xe2\x82\xac", 1);                                 /* € */
    UTF8("\xed\x9f\xbf", 1);                                 /* U+D7FF, below the surrogates */
    UTF8("\xee\x80\x80", 1);                                 /* U+E000, above them */
    UTF8("\xef\xbf\xbf", 1);                                 /* U+FFFF */
    UTF8("\xf0\x90\x80\x80", 1);                             /* U+10000 */
    UTF8("\xf0\x9d\x84\x9e", 1);                             /* 𝄞 */
    UTF8("\xf4\x8f\xbf\xbf", 1);                             /* U+10FFFF */
    UTF8("\xce\xba\xe1\xbd\xb9\xcf\x83\xce\xbc\xce\xb5", 1); /* κόσμε */
    UTF8("abcdefghijklmnopqrstuvwxyz0123456789\xc3\xa9z", 1);
    /* a continuation byte without a lead */
    UTF8("\x80", 0);
    UTF8("\xbf", 0);
    UTF8("abcdefgh\x80", 0);
    UTF8("abcdefghijklmnopqrstuvwx\xff", 0);
    /* overlong forms */
    UTF8("\xc0\xaf", 0);
    UTF8("\xc1\xbf", 0);
    UTF8("\xe0\x80\xaf", 0);
    UTF8("\xe0\x9f\xbf", 0);
    UTF8("\xf0\x80\x80\xaf", 0);
    UTF8("\xf0\x8f\xbf\xbf", 0);
    /* surrogates */
    UTF8("\xed\xa0\x80", 0);
    UTF8("\xed\xbf\xbf", 0);
    UTF8("\xed\xa0\x80\xed\xb0\x80", 0);
    /* past U+10FFFF, and bytes that never occur */
    UTF8("\xf4\x90\x80\x80", 0);
    UTF8("\xf5\x80\x80\x80", 0);
    UTF8("\xf8\x88\x80\x80\x80", 0);
    UTF8("\xfc\x84\x80\x80\x80\x80", 0);
    UTF8("\xfe", 0);
    UTF8("\xff", 0);
    /* a sequence cut short: by the end, by ASCII, by another lead */
    UTF8("\xc3", 0);
    UTF8("\xe2\x82", 0);
    UTF8("\xf0\x9d\x84", 0);
    UTF8("\xe2\x82"
         "A",
         0);
    UTF8("\xc3\xc3\xa9", 0);
}

/* ---- permessage-deflate (RFC 7692 §7.2) ---- */

static void fill_text(char *s, size_t n, unsigned seed)
{
    static const char *words[] = {"the ",  "quick ", "brown ", "fox ", "jumps ",
                                  "over ", "a ",     "lazy ",  "dog ", "\xc3\xa9t\xc3\xa9 "};
    size_t k = 0;
    while (k < n) {
        seed = seed * 1103515245u + 12345u;
        const char *w = words[(seed >> 16) % 10];
        size_t wl = strlen(w);
        if (k + wl > n) {
            memset(s + k, '.', n - k);
            break;
        }
        memcpy(s + k, w, wl);
        k += wl;
    }
}

static void fill_random(char *s, size_t n, unsigned seed)
{
    for (size_t k = 0; k < n; k++) {
        seed = seed * 1103515245u + 12345u;
        s[k] = (char)(seed >> 16);
    }
}

/* Client messages compressed with zlib, in one frame and in three, give
 * the message back; the server's compressed messages inflate back to
 * what was sent. */
static void test_deflate_round_trip(void **state)
{
    (void)state;
    static const size_t sizes[] = {0, 1, 63, 64, 100, 4095, 4096, 4097, 10000, 70000};
    static const setup deflate = DEFLATE;
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        size_t n = sizes[i];
        char *data = malloc(n + 1);
        assert_non_null(data);
        for (int type = CSHW_WS_TEXT; type <= CSHW_WS_BINARY; type++) {
            if (type == CSHW_WS_TEXT)
                fill_text(data, n, (unsigned)n);
            else
                fill_random(data, n, (unsigned)n);
            bytes z = {0}, in = {0}, want = {0};
            client_deflate(data, n, 15, &z);
            describe(&want, type == CSHW_WS_TEXT ? "text" : "binary", data, n);
            put_str(&want, "\n");
            char name[64];
            snprintf(name, sizeof name, "compressed %s of %zu", type == 1 ? "text" : "binary", n);
            client_frame(&in, 0xc0u | (unsigned)type, z.p, z.len);
            check_wire_x(name, &deflate, &in, (char *)want.p, z.len < 200);
            /* three fragments: RSV1 on the first only (RFC 7692 §6.1) */
            in.len = 0;
            size_t a = z.len / 3, b = 2 * z.len / 3;
            client_frame(&in, 0x40u | (unsigned)type, z.p, a);
            client_frame(&in, 0x00, z.p + a, b - a);
            client_frame(&in, 0x80, z.p + b, z.len - b);
            check_wire_x(name, &deflate, &in, (char *)want.p, 0);

            /* the server's: compressed from deflate_min (64) bytes on */
            peer p;
            peer_open(&p, NULL, &deflate_15);
            assert_int_equal(cshw_ws_send(p.ws, type, data, n), 0);
            sframe f[4];
            assert_int_equal(server_frames(&p.out, 1, f, 4), 1);
            assert_int_equal(f[0].b0 & 0x80, 0x80);
            assert_int_equal(f[0].b0 & 0x0f, (unsigned)type);
            if (n >= 64) {
                assert_int_equal(f[0].b0 & 0x40, 0x40);
                bytes back = {0};
                assert_int_equal(server_inflate(f[0].data, f[0].len, 15, &back), 0);
                assert_int_equal(back.len, n);
                if (n) assert_memory_equal(back.p, data, n);
                bytes_free(&back);
            } else {
                assert_int_equal(f[0].b0 & 0x40, 0);
                assert_int_equal(f[0].len, n);
                if (n) assert_memory_equal(f[0].data, data, n);
            }
            /* send_part: never compressed (RFC 7692 §6.1 leaves it to us) */
            p.out.len = 0;
            assert_int_equal(cshw_ws_send_part(p.ws, type, data, n, 1), 0);
            assert_int_equal(server_frames(&p.out, 1, f, 4), 1);
            assert_int_equal(f[0].b0, 0x80u | (unsigned)type);
            assert_int_equal(f[0].len, n);
            assert_int_equal(cshw_ws_bytes_out(p.ws), 2 * n);
            peer_end(&p);
            peer_free(&p);
            bytes_free(&z);
            bytes_free(&in);
            bytes_free(&want);
        }
        free(data);
    }

    /* deflate_min 0: the empty message compressed is one 0x00 byte (RFC
     * 7692 §7.2.3.6) */
    cshw_ws_options o = defaults();
    o.deflate_min = 0;
    peer p;
    peer_open(&p, &o, &deflate_15);
    assert_int_equal(cshw_ws_send(p.ws, CSHW_WS_TEXT, NULL, 0), 0);
    assert_int_equal(p.out.len, 3);
    assert_memory_equal(p.out.p, "\xc1\x01\x00", 3);
    peer_end(&p);
    peer_free(&p);
}

/* The windows agreed are the ones used: a server window of 9 bits
 * inflates with 9 (a match 1000 bytes back would not), and a client's
 * 9-bit stream inflates. */
static void test_deflate_windows(void **state)
{
    (void)state;
    char data[2000];
    fill_random(data, 1000, 7);
    memcpy(data + 1000, data, 1000); /* a repeat 1000 bytes back */
    const cshw_ws_handshake hs9 = {1, 9, 9, ""};
    peer p;
    peer_open(&p, NULL, &hs9);
    assert_int_equal(cshw_ws_send(p.ws, CSHW_WS_BINARY, data, sizeof data), 0);
    sframe f[2];
    assert_int_equal(server_frames(&p.out, 1, f, 2), 1);
    assert_int_equal(f[0].b0, 0xc2);
    bytes back = {0};
    assert_int_equal(server_inflate(f[0].data, f[0].len, 9, &back), 0);
    assert_int_equal(back.len, sizeof data);
    assert_memory_equal(back.p, data, sizeof data);
    bytes_free(&back);

    bytes z = {0}, in = {0};
    client_deflate(data, sizeof data, 9, &z);
    client_frame(&in, 0xc2, z.p, z.len);
    feed(&p, in.p, in.len);
    assert_int_equal(p.messages, 1);
    assert_int_equal(p.msg.len, sizeof data);
    assert_memory_equal(p.msg.p, data, sizeof data);
    assert_int_equal(cshw_ws_bytes_in(p.ws), sizeof data);
    peer_end(&p);
    peer_free(&p);
    bytes_free(&z);
    bytes_free(&in);
}

/* max_message counts the inflated bytes: a small frame that inflates past
 * it (a deflate bomb) fails with 1009; a message of exactly max_message
 * passes. */
static void test_deflate_limits(void **state)
{
    (void)state;
    size_t n = 1u << 20;
    char *zeros = calloc(1, n + 1);
    assert_non_null(zeros);
    bytes z = {0}, in = {0};
    client_deflate(zeros, n, 15, &z);
    assert_true(z.len < 2048);
    client_frame(&in, 0xc2, z.p, z.len);
    const setup bomb = {65536, 0, 1, 0};
    check_wire_x("1 MiB of zeros, 64 KiB allowed", &bomb, &in, FAILS(1009), 0);

    /* the default limit, 1 MiB: exactly it passes, a byte more does not */
    const setup deflate = DEFLATE;
    bytes want = {0};
    describe(&want, "binary", zeros, n);
    put_str(&want, "\n");
    same("1 MiB of zeros", "whole", 0, play(&deflate, &in, WHOLE), (char *)want.p);
    z.len = in.len = 0;
    client_deflate(zeros, n + 1, 15, &z);
    client_frame(&in, 0xc2, z.p, z.len);
    same("1 MiB + 1 of zeros", "whole", 0, play(&deflate, &in, WHOLE), FAILS(1009));
    same("1 MiB + 1 of zeros", "byte by byte", 0, play(&deflate, &in, BYTEWISE), FAILS(1009));

    /* in fragments, the same */
    in.len = 0;
    client_frame(&in, 0x42, z.p, z.len / 2);
    client_frame(&in, 0x80, z.p + z.len / 2, z.len - z.len / 2);
    same("1 MiB + 1 of zeros in fragments", "whole", 0, play(&deflate, &in, WHOLE), FAILS(1009));

    free(zeros);
    bytes_free(&z);
    bytes_free(&in);
    bytes_free(&want);
}

/* ---- the timers ---- */

static cshw_ws_options timer_options(void)
{
    cshw_ws_options o = defaults();
    o.ping_interval_ms = 1000;
    o.pong_timeout_ms = 500;
    o.close_timeout_ms = 300;
    return o;
}

static void client_says(peer *p, unsigned b0, const char *s)
{
    bytes in = {0};
    client_frame(&in, b0, s, strlen(s));
    feed(p, in.p, in.len);
    bytes_free(&in);
}

static size_t pings_sent(const peer *p)
{
    sframe f[MAX_SFRAMES];
    size_t n = server_frames(&p->out, 0, f, MAX_SFRAMES), pings = 0;
    for (size_t i = 0; i < n; i++) pings += (f[i].b0 & 0x0f) == 9;
    return pings;
}

/* A ping after ping_interval_ms of silence, the end pong_timeout_ms after
 * it when nothing came; anything from the peer counts as an answer. */
static void test_tick_ping(void **state)
{
    (void)state;
    const int64_t t0 = 1000000;
    cshw_ws_options o = timer_options();
    peer p;
    peer_open(&p, &o, NULL);
    assert_int_equal(cshw_ws_tick(p.ws, t0), t0 + 1000);
    assert_int_equal(cshw_ws_tick(p.ws, t0 + 999), t0 + 1000);
    assert_int_equal(p.out.len, 0);
    assert_int_equal(cshw_ws_tick(p.ws, t0 + 1000), t0 + 1500);
    assert_int_equal(p.out.len, 2);
    assert_memory_equal(p.out.p, "\x89\x00", 2);
    /* the pong comes: the next ping a full interval after this tick */
    client_says(&p, 0x8a, "");
    assert_int_equal(cshw_ws_tick(p.ws, t0 + 1200), t0 + 2200);
    assert_int_equal(cshw_ws_tick(p.ws, t0 + 2199), t0 + 2200);
    assert_int_equal(pings_sent(&p), 1);
    assert_int_equal(cshw_ws_tick(p.ws, t0 + 2200), t0 + 2700);
    assert_int_equal(pings_sent(&p), 2);
    /* no answer: the end, 1006 (§7.1.5: no close frame came) */
    assert_int_equal(cshw_ws_tick(p.ws, t0 + 2699), t0 + 2700);
    assert_int_equal(p.closes, 0);
    assert_int_equal(cshw_ws_tick(p.ws, t0 + 2700), 0);
    assert_int_equal(p.closes, 1);
    assert_int_equal(cshw_ws_tick(p.ws, t0 + 5000), 0);
    assert_int_equal(feed(&p, "\x81", 1), 1);
    peer_end(&p);
    assert_int_equal(p.code, CSHW_WS_ABNORMAL);
    peer_free(&p);
}

static void test_tick_no_ping_while_the_peer_talks(void **state)
{
    (void)state;
    const int64_t t0 = 1000000;
    cshw_ws_options o = timer_options();
    peer p;
    peer_open(&p, &o, NULL);
    int64_t due = cshw_ws_tick(p.ws, t0);
    for (int64_t t = t0 + 400; t <= t0 + 10000; t += 400) {
        client_says(&p, 0x81, "still here");
        if (t >= due) due = cshw_ws_tick(p.ws, t);
        assert_true(due > t);
    }
    assert_int_equal(pings_sent(&p), 0);
    assert_int_equal(p.messages, 25);
    assert_int_equal(p.closes, 0);
    /* ping_interval_ms 0: no ping, no deadline */
    peer_end(&p);
    peer_free(&p);
    o.ping_interval_ms = 0;
    peer_open(&p, &o, NULL);
    assert_int_equal(cshw_ws_tick(p.ws, t0), 0);
    assert_int_equal(cshw_ws_tick(p.ws, t0 + 1000000), 0);
    assert_int_equal(p.out.len, 0);
    peer_end(&p);
    peer_free(&p);
}

/* §7.1.1: after our close frame, the peer's; close_timeout_ms without it
 * ends the connection. */
static void test_tick_close_timeout(void **state)
{
    (void)state;
    const int64_t t0 = 1000000;
    cshw_ws_options o = timer_options();
    peer p;
    peer_open(&p, &o, NULL);
    cshw_ws_tick(p.ws, t0);
    assert_int_equal(cshw_ws_close(p.ws, CSHW_WS_GOING_AWAY, "bye"), 0);
    assert_int_equal(p.out.len, 7);
    assert_memory_equal(p.out.p,
                        "\x88\x05\x03\xe9"
                        "bye",
                        7);
    assert_int_equal(cshw_ws_tick(p.ws, t0 + 10), t0 + 310);
    assert_int_equal(cshw_ws_tick(p.ws, t0 + 309), t0 + 310);
    assert_int_equal(p.closes, 0);
    assert_int_equal(pings_sent(&p), 0); /* no ping while closing */
    assert_int_equal(cshw_ws_tick(p.ws, t0 + 310), 0);
    assert_int_equal(p.closes, 1);
    peer_end(&p);
    assert_int_equal(p.code, CSHW_WS_ABNORMAL);
    peer_free(&p);

    /* the input ends instead: 1006 */
    peer_open(&p, &o, NULL);
    cshw_ws_tick(p.ws, t0);
    assert_int_equal(cshw_ws_close(p.ws, CSHW_WS_NORMAL, NULL), 0);
    client_says(&p, 0x81, "in flight"); /* §5.5.1: data may still come */
    assert_int_equal(feed(&p, "", 0), 1);
    assert_int_equal(p.messages, 1);
    bytes d = {0};
    describe_frames(&d, &p.out, 0);
    assert_string_equal(d.p, "> close 1000\n");
    peer_end(&p);
    assert_int_equal(p.code, CSHW_WS_ABNORMAL);
    peer_free(&p);
    /* the peer's close comes: the end, its code, no second close frame */
    peer_open(&p, &o, NULL);
    assert_int_equal(cshw_ws_close(p.ws, CSHW_WS_NORMAL, NULL), 0);
    client_says(&p, 0x81, "in flight");
    client_says(&p, 0x88, "\x03\xe8");
    assert_int_equal(p.closes, 1);
    assert_int_equal(cshw_ws_tick(p.ws, t0 + 1000), 0);
    d.len = 0;
    describe_frames(&d, &p.out, 0);
    assert_string_equal(d.p, "> close 1000\n");
    assert_int_equal(p.messages, 1);
    peer_end(&p);
    assert_int_equal(p.code, CSHW_WS_NORMAL);
    bytes_free(&d);
    peer_free(&p);
}

/* §5.5.2: "Upon receipt of a Ping frame, an endpoint MUST send a Pong
 * frame in response, unless it already received a Close frame": after
 * ours, the peer's pings still get theirs (§5.5.1 forbids data frames
 * only). */
static void test_pong_after_our_close(void **state)
{
    (void)state;
    peer p;
    peer_open(&p, NULL, NULL);
    assert_int_equal(cshw_ws_close(p.ws, CSHW_WS_NORMAL, NULL), 0);
    client_says(&p, 0x89, "still there?");
    client_says(&p, 0x88, "\x03\xe8");
    client_says(&p, 0x89, "after its close");
    bytes d = {0};
    describe_frames(&d, &p.out, 0);
    assert_string_equal(d.p, "> close 1000\n> pong \"still there?\"\n");
    peer_end(&p);
    assert_int_equal(p.code, CSHW_WS_NORMAL);
    peer_free(&p);
    bytes_free(&d);
}

/* ---- sending ---- */

static void test_send_rules(void **state)
{
    (void)state;
    peer p;
    peer_open(&p, NULL, NULL);
    assert_int_equal(cshw_ws_send(p.ws, CSHW_WS_TEXT, "hi", 2), 0);
    assert_int_equal(cshw_ws_send(p.ws, CSHW_WS_BINARY, NULL, 0), 0);
    assert_int_equal(cshw_ws_send(p.ws, 0, "x", 1), -EINVAL);
    assert_int_equal(cshw_ws_send(p.ws, 3, "x", 1), -EINVAL);
    assert_int_equal(cshw_ws_send(p.ws, 9, "x", 1), -EINVAL);
    assert_int_equal(cshw_ws_send(p.ws, CSHW_WS_TEXT, NULL, 1), -EINVAL);
    /* §5.4: a message in parts; control frames may come between */
    assert_int_equal(cshw_ws_send_part(p.ws, 3, "x", 1, 0), -EINVAL);
    assert_int_equal(cshw_ws_send_part(p.ws, CSHW_WS_BINARY, "ab", 2, 0), 0);
    assert_int_equal(cshw_ws_send(p.ws, CSHW_WS_TEXT, "x", 1), -EBUSY);
    assert_int_equal(cshw_ws_send(p.ws, CSHW_WS_BINARY, "x", 1), -EBUSY);
    assert_int_equal(cshw_ws_send_part(p.ws, CSHW_WS_TEXT, "x", 1, 1), -EBUSY);
    assert_int_equal(cshw_ws_ping(p.ws, "p", 1), 0);
    assert_int_equal(cshw_ws_send_part(p.ws, CSHW_WS_BINARY, "c", 1, 0), 0);
    assert_int_equal(cshw_ws_send_part(p.ws, CSHW_WS_BINARY, "", 0, 0), 0);
    assert_int_equal(cshw_ws_send_part(p.ws, CSHW_WS_BINARY, "d", 1, 1), 0);
    assert_int_equal(cshw_ws_send(p.ws, CSHW_WS_TEXT, "after", 5), 0);
    assert_int_equal(cshw_ws_send_part(p.ws, CSHW_WS_TEXT, "one", 3, 1), 0);
    /* pings: up to 125 bytes (§5.5) */
    char big[126];
    memset(big, 'p', sizeof big);
    assert_int_equal(cshw_ws_ping(p.ws, big, 126), -EINVAL);
    assert_int_equal(cshw_ws_ping(p.ws, big, 125), 0);
    bytes d = {0}, want = {0};
    describe_frames(&d, &p.out, 0);
    put_str(&want, "> text \"hi\"\n> binary \"\"\n> binary... \"ab\"\n> ping \"p\"\n"
                   "> cont... \"c\"\n> cont... \"\"\n> cont \"d\"\n> text \"after\"\n"
                   "> text \"one\"\n");
    describe(&want, "> ping", big, 125);
    put_str(&want, "\n");
    assert_string_equal(d.p, want.p);
    assert_int_equal(cshw_ws_bytes_out(p.ws), 2 + 2 + 1 + 0 + 1 + 5 + 3);

    /* §7.4: the codes a close frame may carry; then nothing more */
    static const int bad[] = {0, 999, 1004, 1005, 1006, 1015, 2999, 5000};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        assert_int_equal(cshw_ws_close(p.ws, bad[i], "x"), -EINVAL);
    assert_int_equal(cshw_ws_close(p.ws, 4000, "done"), 0);
    assert_int_equal(cshw_ws_close(p.ws, 1000, NULL), -EPIPE);
    assert_int_equal(cshw_ws_send(p.ws, CSHW_WS_TEXT, "x", 1), -EPIPE);
    assert_int_equal(cshw_ws_send_part(p.ws, CSHW_WS_TEXT, "x", 1, 1), -EPIPE);
    assert_int_equal(cshw_ws_ping(p.ws, "", 0), -EPIPE);
    d.len = 0;
    describe_frames(&d, &p.out, 0);
    assert_non_null(strstr((char *)d.p, "> close 4000 \"done\"\n"));
    peer_end(&p);
    peer_free(&p);
    bytes_free(&d);
    bytes_free(&want);

    /* after the end of input, after closed(), and the transport's error */
    peer_open(&p, NULL, NULL);
    feed(&p, "", 0);
    assert_int_equal(cshw_ws_send(p.ws, CSHW_WS_TEXT, "x", 1), -EPIPE);
    assert_int_equal(cshw_ws_close(p.ws, 1000, NULL), -EPIPE);
    cshw_ws_retain(p.ws);
    cshw_ws_end(p.ws, 0);
    assert_int_equal(p.closed, 1);
    assert_int_equal(p.releases, 0);
    assert_int_equal(cshw_ws_send(p.ws, CSHW_WS_BINARY, "x", 1), -EPIPE);
    assert_int_equal(cshw_ws_send_part(p.ws, CSHW_WS_BINARY, "x", 1, 1), -EPIPE);
    assert_int_equal(cshw_ws_ping(p.ws, "", 0), -EPIPE);
    assert_int_equal(p.out.len, 0);
    cshw_ws_release(p.ws);
    assert_int_equal(p.releases, 1);
    peer_free(&p);
    peer_open(&p, NULL, NULL);
    p.write_error = -EPIPE;
    assert_int_equal(cshw_ws_send(p.ws, CSHW_WS_TEXT, "x", 1), -EPIPE);
    assert_int_equal(cshw_ws_send(p.ws, CSHW_WS_BINARY, big, 5000), -EPIPE);
    peer_end(&p);
    peer_free(&p);
}

/* A close reason is cut at 123 bytes (§5.5: 125 with the code), and the
 * cut keeps it UTF-8 (§5.5.1: the peer fails the connection, 1007, on a
 * reason that is not). */
static void test_close_reason_cut(void **state)
{
    (void)state;
    char reason[200];
    memset(reason, 'r', 122);
    strcpy(reason + 122, "\xc3\xa9 and more");
    peer p;
    peer_open(&p, NULL, NULL);
    assert_int_equal(cshw_ws_close(p.ws, CSHW_WS_NORMAL, reason), 0);
    sframe f[2];
    assert_int_equal(server_frames(&p.out, 0, f, 2), 1);
    assert_true(f[0].len <= 125);
    assert_memory_equal(f[0].data + 2, reason, 122);
    peer_end(&p);
    peer_free(&p);

    memset(reason, 'r', 150);
    reason[150] = '\0';
    peer_open(&p, NULL, NULL);
    assert_int_equal(cshw_ws_close(p.ws, CSHW_WS_NORMAL, reason), 0);
    assert_int_equal(server_frames(&p.out, 0, f, 2), 1);
    assert_int_equal(f[0].len, 125);
    peer_end(&p);
    peer_free(&p);
}

/* A send that the transport says 1 to says 1; drained() follows
 * cshw_ws_drained once, and only when owed. */
static void test_drained(void **state)
{
    (void)state;
    peer p;
    peer_open(&p, NULL, NULL);
    cshw_ws_drained(p.ws);
    assert_int_equal(p.drained, 0);
    p.full = 1;
    assert_int_equal(cshw_ws_send(p.ws, CSHW_WS_TEXT, "x", 1), 1);
    char big[5000] = {0};
    assert_int_equal(cshw_ws_send(p.ws, CSHW_WS_BINARY, big, sizeof big), 1);
    assert_int_equal(cshw_ws_send_part(p.ws, CSHW_WS_BINARY, big, 10, 1), 1);
    assert_int_equal(cshw_ws_ping(p.ws, "", 0), 1);
    assert_int_equal(p.drained, 0);
    p.full = 0;
    cshw_ws_drained(p.ws);
    assert_int_equal(p.drained, 1);
    cshw_ws_drained(p.ws);
    assert_int_equal(p.drained, 1);
    assert_int_equal(cshw_ws_send(p.ws, CSHW_WS_TEXT, "x", 1), 0);
    cshw_ws_drained(p.ws);
    assert_int_equal(p.drained, 1);
    /* owed, then the end: no drained() after closed() */
    p.full = 1;
    assert_int_equal(cshw_ws_send(p.ws, CSHW_WS_TEXT, "x", 1), 1);
    cshw_ws_retain(p.ws);
    cshw_ws_end(p.ws, 0);
    cshw_ws_drained(p.ws);
    assert_int_equal(p.drained, 1);
    cshw_ws_release(p.ws);
    peer_free(&p);
}

/* cshw_ws_pause passes to the transport; an echo that pauses on 1 and
 * resumes at drained() sees every message. */
static void test_pause(void **state)
{
    (void)state;
    peer p;
    peer_open(&p, NULL, NULL);
    cshw_ws_pause(p.ws, 1);
    assert_int_equal(p.pause_calls, 1);
    assert_int_equal(p.paused, 1);
    cshw_ws_pause(p.ws, 0);
    assert_int_equal(p.pause_calls, 2);
    assert_int_equal(p.paused, 0);
    cshw_ws_pause(p.ws, 7);
    assert_int_equal(p.paused, 1);
    cshw_ws_pause(p.ws, 0);

    p.echo = 1;
    p.full = 1;
    client_says(&p, 0x81, "one");
    assert_int_equal(p.paused, 1);
    client_says(&p, 0x82, "two"); /* bytes already read still come */
    p.full = 0;
    cshw_ws_drained(p.ws);
    assert_int_equal(p.drained, 1);
    assert_int_equal(p.paused, 0);
    client_says(&p, 0x81, "three");
    assert_int_equal(p.paused, 0);
    bytes d = {0};
    describe_frames(&d, &p.out, 0);
    assert_string_equal(d.p, "> text \"one\"\n> binary \"two\"\n> text \"three\"\n");
    /* once the connection ended, nothing passes */
    feed(&p, "", 0);
    int calls = p.pause_calls;
    cshw_ws_pause(p.ws, 1);
    assert_int_equal(p.pause_calls, calls);
    peer_end(&p);
    peer_free(&p);
    bytes_free(&d);

    /* a transport without pause */
    memset(&p, 0, sizeof p);
    cshw_ws_options o = defaults();
    cshw_ws_transport t = {t_write, t_close, NULL, NULL, &p};
    p.ws = cshw_ws_new(&o, &no_deflate, &handlers, &p, &t);
    assert_non_null(p.ws);
    cshw_ws_start(p.ws);
    cshw_ws_pause(p.ws, 1);
    cshw_ws_pause(p.ws, 0);
    client_says(&p, 0x81, "x");
    cshw_ws_end(p.ws, 0);
    assert_int_equal(p.closed, 1);
    assert_int_equal(p.releases, 0);
    peer_free(&p);
}

/* A peer that pings and does not read: once the pongs pass the
 * transport's mark its input waits (the transport paused) until they
 * drain, whatever the application says meanwhile; the application's own
 * pause outlasts the drain. */
static void test_pings_past_the_mark(void **state)
{
    (void)state;
    peer p;
    peer_open(&p, NULL, NULL);
    p.full = 1;
    client_says(&p, 0x89, "1");
    assert_int_equal(p.paused, 1);
    client_says(&p, 0x89, "2");
    cshw_ws_pause(p.ws, 0);
    assert_int_equal(p.paused, 1);
    p.full = 0;
    cshw_ws_drained(p.ws);
    assert_int_equal(p.drained, 1);
    assert_int_equal(p.paused, 0);

    p.full = 1;
    client_says(&p, 0x89, "3");
    assert_int_equal(p.paused, 1);
    cshw_ws_pause(p.ws, 1);
    p.full = 0;
    cshw_ws_drained(p.ws);
    assert_int_equal(p.paused, 1);
    cshw_ws_pause(p.ws, 0);
    assert_int_equal(p.paused, 0);
    bytes d = {0};
    describe_frames(&d, &p.out, 0);
    assert_string_equal(d.p, "> pong \"1\"\n> pong \"2\"\n> pong \"3\"\n");
    peer_end(&p);
    peer_free(&p);
    bytes_free(&d);
}

/* The session stays while a reference is held, closed or not; the
 * transport's release runs once, at the last release. */
static void test_retain_release(void **state)
{
    (void)state;
    const cshw_ws_handshake hs = {1, 12, 10, "chat"};
    peer p;
    peer_open(&p, NULL, &hs);
    cshw_ws_retain(p.ws);
    cshw_ws_retain(p.ws);
    client_says(&p, 0x81, "abc");
    cshw_ws_end(p.ws, -ECONNRESET);
    assert_int_equal(p.closed, 1);
    assert_int_equal(p.code, CSHW_WS_ABNORMAL);
    assert_int_equal(p.releases, 0);
    assert_ptr_equal(cshw_ws_arg(p.ws), &p);
    assert_ptr_equal(cshw_ws_io(p.ws), &p);
    assert_string_equal(cshw_ws_protocol(p.ws), "chat");
    assert_int_equal(cshw_ws_deflate(p.ws), 1);
    assert_int_equal(cshw_ws_bytes_in(p.ws), 3);
    assert_int_equal(cshw_ws_input(p.ws, "\x81", 1), 1);
    assert_int_equal(cshw_ws_tick(p.ws, 1000000), 0);
    cshw_ws_release(p.ws);
    assert_int_equal(p.releases, 0);
    cshw_ws_release(p.ws);
    assert_int_equal(p.releases, 1);
    assert_int_equal(p.closed, 1);
    peer_free(&p);

    /* NULL everywhere does nothing */
    cshw_ws_retain(NULL);
    cshw_ws_release(NULL);
    cshw_ws_end(NULL, 0);
    cshw_ws_start(NULL);
    cshw_ws_drained(NULL);
    cshw_ws_pause(NULL, 1);
    assert_int_equal(cshw_ws_input(NULL, "x", 1), 1);
    assert_int_equal(cshw_ws_tick(NULL, 5), 0);
    assert_int_equal(cshw_ws_send(NULL, CSHW_WS_TEXT, "x", 1), -EINVAL);
    assert_null(cshw_ws_arg(NULL));
    assert_string_equal(cshw_ws_protocol(NULL), "");
}

/* closed() once, with 1006, when the input ended without a close frame
 * (§7.1.5); the transport closed once whatever else followed. */
static void test_end_without_close(void **state)
{
    (void)state;
    peer p;
    peer_open(&p, NULL, NULL);
    client_says(&p, 0x81, "hi");
    assert_int_equal(feed(&p, "\x81\x85", 2), 0);
    assert_int_equal(feed(&p, "", 0), 1);
    assert_int_equal(p.closes, 1);
    assert_int_equal(feed(&p, "", 0), 1);
    assert_int_equal(feed(&p, "\x88\x80\x01\x02\x03\x04", 6), 1);
    assert_int_equal(cshw_ws_close(p.ws, 1000, NULL), -EPIPE);
    assert_int_equal(p.closed, 0);
    assert_int_equal(p.out.len, 0);
    peer_end(&p);
    assert_int_equal(p.code, CSHW_WS_ABNORMAL);
    assert_int_equal(p.reason_len, 0);
    assert_int_equal(p.closes, 1);
    peer_free(&p);

    /* the owner ends a live session (the socket failed): 1006 too */
    peer_open(&p, NULL, NULL);
    client_says(&p, 0x81, "hi");
    peer_end(&p);
    assert_int_equal(p.code, CSHW_WS_ABNORMAL);
    assert_int_equal(p.closes, 0);
    peer_free(&p);
}

static void test_new_refuses(void **state)
{
    (void)state;
    cshw_ws_options o = defaults();
    cshw_ws_transport t = {t_write, t_close, NULL, NULL, NULL};
    cshw_ws_handlers h = handlers;
    assert_null(cshw_ws_new(&o, NULL, &h, NULL, &t));
    assert_null(cshw_ws_new(&o, &no_deflate, NULL, NULL, &t));
    assert_null(cshw_ws_new(&o, &no_deflate, &h, NULL, NULL));
    h.message = NULL;
    assert_null(cshw_ws_new(&o, &no_deflate, &h, NULL, &t));
    h = handlers;
    h.closed = NULL;
    assert_null(cshw_ws_new(&o, &no_deflate, &h, NULL, &t));
    h = handlers;
    t.write = NULL;
    assert_null(cshw_ws_new(&o, &no_deflate, &h, NULL, &t));
    t.write = t_write;
    t.close = NULL;
    assert_null(cshw_ws_new(&o, &no_deflate, &h, NULL, &t));
    t.close = t_close;
    o.max_message = 0;
    assert_null(cshw_ws_new(&o, &no_deflate, &h, NULL, &t));
    o = defaults();
    o.size = 0;
    assert_null(cshw_ws_new(&o, &no_deflate, &h, NULL, &t));
    assert_null(cshw_ws_new(NULL, &no_deflate, &h, NULL, &t));
}

/* An idle session costs little: about what an idle socket costs the
 * toolkit elsewhere. */
static void test_idle_bytes(void **state)
{
    (void)state;
    size_t n = cshw_ws_idle_bytes();
    assert_true(n > 0);
    if (n > 512) fail_msg("an idle session is %zu bytes, over 512", n);
}

/* ---- the opening handshake (RFC 6455 §4.2) ---- */

static struct {
    const cshw_ws_options *o;
    int r;
    cshw_ws_handshake hs;
    char accept[64], protocol[80], extensions[256], version[32], allow[32];
} shook;

static void copy_field(char *dst, size_t cap, cshw_response *res, const char *name)
{
    const char *v = cshw_response_header(res, name);
    snprintf(dst, cap, "%s", v ? v : "(none)");
}

static void shake_handler(cshw_context *ctx)
{
    memset(&shook.hs, 0xa5, sizeof shook.hs);
    shook.r = cshw_ws_check(ctx, shook.o, &shook.hs);
    cshw_response *res = cshw_context_response(ctx);
    copy_field(shook.accept, sizeof shook.accept, res, "Sec-WebSocket-Accept");
    copy_field(shook.protocol, sizeof shook.protocol, res, "Sec-WebSocket-Protocol");
    copy_field(shook.extensions, sizeof shook.extensions, res, "Sec-WebSocket-Extensions");
    copy_field(shook.version, sizeof shook.version, res, "Sec-WebSocket-Version");
    copy_field(shook.allow, sizeof shook.allow, res, "Allow");
}

/* cshw_ws_check on the request `head` (over TLS when secure), o NULL: the
 * defaults. */
static int shake_x(const char *head, int secure, const cshw_ws_options *o)
{
    cshw_ws_options d = defaults();
    cshw_memory *m = cshw_memory_new("", 0, 0);
    assert_non_null(m);
    cshw_transport t = *cshw_memory_transport(m);
    t.is_secure = secure;
    cshw_context *ctx = cshw_context_new(NULL);
    assert_non_null(ctx);
    shook.o = o ? o : &d;
    shook.r = 12345;
    int r = tw_run_one(ctx, &t, head, shake_handler);
    if (r == -1000) fail_msg("the head does not parse:\n%s", head);
    if (shook.r == 12345) fail_msg("the handler did not run:\n%s", head);
    cshw_context_free(ctx);
    cshw_memory_free(m);
    return shook.r;
}

#define UPGRADE "Upgrade: websocket\r\nConnection: Upgrade\r\n"
#define KEY "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
#define V13 "Sec-WebSocket-Version: 13\r\n"
#define STD UPGRADE KEY V13

/* GET /chat HTTP/1.1, Host: server.example.com, then fields. */
static int shake_o(const char *fields, const cshw_ws_options *o)
{
    char head[2048];
    snprintf(head, sizeof head, "GET /chat HTTP/1.1\r\nHost: server.example.com\r\n%s\r\n", fields);
    return shake_x(head, 0, o);
}

static int shake(const char *fields)
{
    return shake_o(fields, NULL);
}

/* Host: host, then fields, over TLS when secure. */
static int shake_host(const char *host, const char *fields, int secure, const cshw_ws_options *o)
{
    char head[2048];
    snprintf(head, sizeof head, "GET /chat HTTP/1.1\r\nHost: %s\r\n%s\r\n", host, fields);
    return shake_x(head, secure, o);
}

/* RFC 6455 §1.3 and §4.2.2: the key of the example and its answer. */
static void test_accept_value(void **state)
{
    (void)state;
    char out[29];
    memset(out, 'x', sizeof out);
    cshw_ws_accept_value("dGhlIHNhbXBsZSBub25jZQ==", 24, out);
    assert_string_equal(out, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
    cshw_ws_accept_value("x3JJHMbDL1EzLkh9GBhXDw==", 24, out);
    assert_string_equal(out, "HSmrc0sMlYUkAGmm5OPpG2HaGWk=");
    /* SHA-1 over more than one block */
    static const char long_key[] = "0123456789012345678901234567890123456789";
    cshw_ws_accept_value(long_key, sizeof long_key - 1, out);
    assert_string_equal(out, "XmAFJRIepQoKOqPFOfF5mREBo98=");
}

/* §4.2.1 items 1, 3 and 4: a GET, HTTP/1.1 or later, Upgrade: websocket and
 * Connection: upgrade as tokens of lists, in any field, any case. */
static void test_check_request(void **state)
{
    (void)state;
    assert_int_equal(shake(STD), 0);
    assert_string_equal(shook.accept, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
    assert_string_equal(shook.protocol, "(none)");
    assert_string_equal(shook.extensions, "(none)");
    assert_string_equal(shook.version, "(none)");
    assert_int_equal(shook.hs.deflate, 0);
    assert_string_equal(shook.hs.protocol, "");

    static const char *methods[] = {"POST", "PUT", "HEAD", "DELETE", "OPTIONS", "PATCH"};
    for (size_t i = 0; i < sizeof methods / sizeof *methods; i++) {
        char head[512];
        snprintf(head, sizeof head, "%s /chat HTTP/1.1\r\nHost: server.example.com\r\n" STD "\r\n",
                 methods[i]);
        assert_int_equal(shake_x(head, 0, NULL), CSHW_E_WS_METHOD);
        /* RFC 9110 §15.5.6: a 405 says what the resource allows */
        assert_string_equal(shook.allow, "GET");
    }
    assert_int_equal(cshw_error_status(CSHW_E_WS_METHOD), 405);

    static const struct {
        const char *fields;
        int want;
    } cases[] = {
        {"Upgrade: h2c, WebSocket\r\nConnection: keep-alive, UPGRADE\r\n" KEY V13, 0},
        {"Upgrade: WEBSOCKET\r\nConnection: upgrade\r\n" KEY V13, 0},
        {"Upgrade: h2c\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" KEY V13, 0},
        {"Upgrade: websocket\r\nConnection: keep-alive\r\nConnection: Upgrade\r\n" KEY V13, 0},
        {"Upgrade: websocket\r\nConnection: keep-alive,Upgrade , x\r\n" KEY V13, 0},
        {"Connection: Upgrade\r\n" KEY V13, CSHW_E_UPGRADE_NOT_ASKED},
        {"Upgrade: websocket\r\n" KEY V13, CSHW_E_UPGRADE_NOT_ASKED},
        {"Upgrade: websocket\r\nConnection: keep-alive\r\n" KEY V13, CSHW_E_UPGRADE_NOT_ASKED},
        {"Upgrade: websockets\r\nConnection: Upgrade\r\n" KEY V13, CSHW_E_UPGRADE_NOT_ASKED},
        {"Upgrade: h2c\r\nConnection: Upgrade\r\n" KEY V13, CSHW_E_UPGRADE_NOT_ASKED},
        {"Upgrade: websocket\r\nConnection: Upgraded\r\n" KEY V13, CSHW_E_UPGRADE_NOT_ASKED},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        int r = shake(cases[i].fields);
        if (r != cases[i].want)
            fail_msg("%s: %s, want %s", cases[i].fields, cshw_error_name(r),
                     cshw_error_name(cases[i].want));
    }
    /* HTTP/1.0 cannot switch (§4.1: HTTP/1.1 or higher) */
    assert_int_equal(
        shake_x("GET /chat HTTP/1.0\r\nHost: server.example.com\r\n" STD "\r\n", 0, NULL),
        CSHW_E_UPGRADE_NOT_ASKED);
    assert_int_equal(cshw_error_status(CSHW_E_UPGRADE_NOT_ASKED), 426);
}

/* §4.2.1 item 6, §4.4: version 13 only; otherwise 426 with the version we
 * speak. */
static void test_check_version(void **state)
{
    (void)state;
    static const char *bad[] = {
        UPGRADE KEY "Sec-WebSocket-Version: 8\r\n",
        UPGRADE KEY "Sec-WebSocket-Version: 14\r\n",
        UPGRADE KEY "Sec-WebSocket-Version: 13, 8\r\n",
        UPGRADE KEY "Sec-WebSocket-Version: 013\r\n",
        UPGRADE KEY "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Version: 13\r\n",
        UPGRADE KEY,
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        assert_int_equal(shake(bad[i]), CSHW_E_WS_VERSION);
        assert_string_equal(shook.version, "13");
        assert_string_equal(shook.accept, "(none)");
    }
    assert_int_equal(cshw_error_status(CSHW_E_WS_VERSION), 426);
}

/* §4.2.1 item 5: one key, base64 of 16 bytes. */
static void test_check_key(void **state)
{
    (void)state;
    assert_int_equal(shake(UPGRADE V13 "Sec-WebSocket-Key: x3JJHMbDL1EzLkh9GBhXDw==\r\n"), 0);
    assert_string_equal(shook.accept, "HSmrc0sMlYUkAGmm5OPpG2HaGWk=");
    assert_int_equal(shake(UPGRADE V13 "Sec-WebSocket-Key: AAAAAAAAAAAAAAAAAAAAAA==\r\n"), 0);
    assert_int_equal(shake(UPGRADE V13 "Sec-WebSocket-Key: +/+/+/+/+/+/+/+/+/+/+w==\r\n"), 0);
    static const char *bad[] = {
        UPGRADE V13,
        UPGRADE V13 KEY KEY,
        UPGRADE V13 "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ\r\n",       /* no padding */
        UPGRADE V13 "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ=\r\n",      /* half of it */
        UPGRADE V13 "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ===\r\n",    /* too much */
        UPGRADE V13 "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZ!==\r\n",     /* not base64 */
        UPGRADE V13 "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25j ZQ==\r\n",    /* a space */
        UPGRADE V13 "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZR==\r\n",     /* stray bits */
        UPGRADE V13 "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ+=\r\n",     /* 17 bytes */
        UPGRADE V13 "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQab\r\n",     /* 18 bytes */
        UPGRADE V13 "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZXh5eg==\r\n", /* 19 bytes */
        UPGRADE V13 "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25j\r\n",         /* 15 bytes */
        UPGRADE V13 "Sec-WebSocket-Key: \r\n",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        int r = shake(bad[i]);
        if (r != CSHW_E_WS_KEY) fail_msg("%s: %s", bad[i], cshw_error_name(r));
        assert_string_equal(shook.accept, "(none)");
    }
    assert_int_equal(cshw_error_status(CSHW_E_WS_KEY), 400);
}

/* §10.2, §4.2.1 item 7: a browser's Origin, its own by default, a list, or
 * any. */
static void test_check_origin(void **state)
{
    (void)state;
    static const struct {
        const char *host, *origin;
        int secure;
        const char *allowed;
        int want;
    } cases[] = {
        /* no Origin: not a browser, nothing to hijack */
        {"server.example.com", NULL, 0, NULL, 0},
        {"server.example.com", NULL, 0, "https://a.example", 0},
        /* the request's own origin, the default port of its scheme or not */
        {"server.example.com", "http://server.example.com", 0, NULL, 0},
        {"server.example.com", "http://server.example.com:80", 0, NULL, 0},
        {"server.example.com:80", "http://server.example.com", 0, NULL, 0},
        {"server.example.com:8080", "http://server.example.com:8080", 0, NULL, 0},
        {"server.example.com", "HTTP://Server.Example.COM", 0, NULL, 0},
        {"Server.Example.com", "http://server.example.com", 0, NULL, 0},
        {"server.example.com", "https://server.example.com", 1, NULL, 0},
        {"server.example.com", "https://server.example.com:443", 1, NULL, 0},
        {"server.example.com:443", "https://server.example.com", 1, NULL, 0},
        {"server.example.com:8443", "https://server.example.com:8443", 1, NULL, 0},
        {"[2001:db8::1]:8080", "http://[2001:db8::1]:8080", 0, NULL, 0},
        /* another origin */
        {"server.example.com:8080", "http://server.example.com", 0, NULL, CSHW_E_WS_ORIGIN},
        {"server.example.com", "http://server.example.com:8080", 0, NULL, CSHW_E_WS_ORIGIN},
        {"server.example.com", "https://server.example.com:8443", 1, NULL, CSHW_E_WS_ORIGIN},
        {"server.example.com", "http://evil.example", 0, NULL, CSHW_E_WS_ORIGIN},
        {"server.example.com", "http://server.example.com.evil.example", 0, NULL, CSHW_E_WS_ORIGIN},
        {"server.example.com", "http://evil.example/server.example.com", 0, NULL, CSHW_E_WS_ORIGIN},
        {"server.example.com", "http://server.example.com@evil.example", 0, NULL, CSHW_E_WS_ORIGIN},
        {"server.example.com", "http://evil.server.example.com", 0, NULL, CSHW_E_WS_ORIGIN},
        {"server.example.com", "server.example.com", 0, NULL, CSHW_E_WS_ORIGIN},
        {"server.example.com", "null", 0, NULL, CSHW_E_WS_ORIGIN},
        {"server.example.com", "", 0, NULL, CSHW_E_WS_ORIGIN},
        /* a list: those only, the request's own origin included */
        {"server.example.com", "https://b.example:8443", 0,
         "https://a.example https://b.example:8443", 0},
        {"server.example.com", "https://a.example", 0, "https://a.example https://b.example:8443",
         0},
        {"server.example.com", "HTTPS://A.example", 0, "https://a.example  https://b.example:8443",
         0},
        {"server.example.com", "https://b.example", 0, "https://a.example https://b.example:8443",
         CSHW_E_WS_ORIGIN},
        {"server.example.com", "http://server.example.com", 0, "https://a.example",
         CSHW_E_WS_ORIGIN},
        {"server.example.com", "https://a.example.evil", 0, "https://a.example", CSHW_E_WS_ORIGIN},
        {"server.example.com", "https://a.exampl", 0, "https://a.example", CSHW_E_WS_ORIGIN},
        {"server.example.com", "null", 0, "https://a.example", CSHW_E_WS_ORIGIN},
        {"server.example.com", "https://a.example", 0, "", CSHW_E_WS_ORIGIN},
        /* "*": any */
        {"server.example.com", "http://evil.example", 0, "*", 0},
        {"server.example.com", "null", 1, "*", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        cshw_ws_options o = defaults();
        o.allowed_origins = cases[i].allowed;
        char fields[512];
        if (cases[i].origin)
            snprintf(fields, sizeof fields, STD "Origin: %s\r\n", cases[i].origin);
        else
            snprintf(fields, sizeof fields, STD);
        int r = shake_host(cases[i].host, fields, cases[i].secure, &o);
        if (r != cases[i].want)
            fail_msg("Host %s, Origin %s, %s, allowed \"%s\": %s, want %s", cases[i].host,
                     cases[i].origin ? cases[i].origin : "(none)",
                     cases[i].secure ? "https" : "http",
                     cases[i].allowed ? cases[i].allowed : "(NULL)", cshw_error_name(r),
                     cshw_error_name(cases[i].want));
        if (r) assert_string_equal(shook.accept, "(none)");
    }
    assert_int_equal(cshw_error_status(CSHW_E_WS_ORIGIN), 403);
}

/* §4.2.2 (/subprotocol/), §1.9: the first of our subprotocols the client offers,
 * in our order; none is no refusal. */
static void test_check_protocol(void **state)
{
    (void)state;
    static const struct {
        const char *ours, *fields, *want;
    } cases[] = {
        {"chat.v2 chat", "Sec-WebSocket-Protocol: chat, chat.v2\r\n", "chat.v2"},
        {"chat.v2 chat", "Sec-WebSocket-Protocol: chat\r\n", "chat"},
        {"chat.v2 chat", "Sec-WebSocket-Protocol: x\r\nSec-WebSocket-Protocol: chat\r\n", "chat"},
        {"chat.v2 chat", "Sec-WebSocket-Protocol: superchat, chat.v2x, xchat\r\n", ""},
        {"chat.v2 chat", "", ""},
        {"  chat.v2   chat ", "Sec-WebSocket-Protocol: chat\r\n", "chat"},
        {NULL, "Sec-WebSocket-Protocol: chat\r\n", ""},
        {"", "Sec-WebSocket-Protocol: chat\r\n", ""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        cshw_ws_options o = defaults();
        o.protocols = cases[i].ours;
        char fields[512];
        snprintf(fields, sizeof fields, STD "%s", cases[i].fields);
        assert_int_equal(shake_o(fields, &o), 0);
        assert_string_equal(shook.hs.protocol, cases[i].want);
        assert_string_equal(shook.protocol, cases[i].want[0] ? cases[i].want : "(none)");
    }
}

/* RFC 7692 §7.1: the first offer we can take, answered with no context
 * takeover both ways; an offer with an unknown, repeated or invalid
 * parameter is declined, and the handshake goes on without it. */
static void test_check_deflate(void **state)
{
    (void)state;
#define PMD "permessage-deflate; server_no_context_takeover; client_no_context_takeover"
    static const struct {
        int bits; /* deflate_window_bits; 0: deflate off */
        const char *offer, *answer;
        int client_window, server_window;
    } cases[] = {
        {15, "permessage-deflate", PMD, 15, 15},
        /* what browsers send */
        {15, "permessage-deflate; client_max_window_bits", PMD "; client_max_window_bits=15", 15,
         15},
        {15, "permessage-deflate; client_max_window_bits=10", PMD "; client_max_window_bits=10", 10,
         15},
        {15, "permessage-deflate; client_max_window_bits=\"9\"", PMD "; client_max_window_bits=9",
         9, 15},
        {15, "permessage-deflate; client_max_window_bits=8", PMD "; client_max_window_bits=8", 8,
         15},
        {15, "permessage-deflate; server_max_window_bits=10", PMD "; server_max_window_bits=10", 15,
         10},
        {15, "permessage-deflate; server_max_window_bits=9", PMD "; server_max_window_bits=9", 15,
         9},
        {15, "permessage-deflate;server_max_window_bits=12;client_max_window_bits=11",
         PMD "; server_max_window_bits=12; client_max_window_bits=11", 11, 12},
        {15, "permessage-deflate; client_no_context_takeover; server_no_context_takeover", PMD, 15,
         15},
        /* the first offer we can take */
        {15,
         "x-webkit-deflate-frame, permessage-deflate; server_max_window_bits=8, "
         "permessage-deflate; client_max_window_bits",
         PMD "; client_max_window_bits=15", 15, 15},
        {15, "permessage-deflate; foo, permessage-deflate", PMD, 15, 15},
        /* our window: the server's, and the client's when it let us */
        {10, "permessage-deflate", PMD "; server_max_window_bits=10", 15, 10},
        {10, "permessage-deflate; client_max_window_bits",
         PMD "; server_max_window_bits=10; client_max_window_bits=10", 10, 10},
        {10, "permessage-deflate; client_max_window_bits=12; server_max_window_bits=9",
         PMD "; server_max_window_bits=9; client_max_window_bits=10", 10, 9},
        {8, "permessage-deflate; client_max_window_bits",
         PMD "; server_max_window_bits=9; client_max_window_bits=8", 8, 9},
        /* declined */
        {0, "permessage-deflate", NULL, 0, 0},
        {15, "permessage-deflate; foo", NULL, 0, 0},
        {15, "permessage-deflate; foo=1", NULL, 0, 0},
        {15, "permessage-deflate=1", NULL, 0, 0},
        {15, "permessage-deflate;;", NULL, 0, 0},
        {15, "permessage-deflate; server_no_context_takeover; server_no_context_takeover", NULL, 0,
         0},
        {15, "permessage-deflate; client_max_window_bits; client_max_window_bits=10", NULL, 0, 0},
        {15, "permessage-deflate; server_max_window_bits=10; server_max_window_bits=10", NULL, 0,
         0},
        {15, "permessage-deflate; server_no_context_takeover=1", NULL, 0, 0},
        {15, "permessage-deflate; server_max_window_bits", NULL, 0, 0},
        {15, "permessage-deflate; server_max_window_bits=8", NULL, 0, 0},
        {15, "permessage-deflate; server_max_window_bits=7", NULL, 0, 0},
        {15, "permessage-deflate; server_max_window_bits=16", NULL, 0, 0},
        {15, "permessage-deflate; client_max_window_bits=08", NULL, 0, 0},
        {15, "permessage-deflate; client_max_window_bits=abc", NULL, 0, 0},
        {15, "permessage-deflate; client_max_window_bits=\"\"", NULL, 0, 0},
        {15, "x-webkit-deflate-frame", NULL, 0, 0},
        {15, "deflate-frame; permessage-deflate", NULL, 0, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        cshw_ws_options o = defaults();
        o.deflate = cases[i].bits != 0;
        if (cases[i].bits) o.deflate_window_bits = cases[i].bits;
        char fields[512];
        snprintf(fields, sizeof fields, STD "Sec-WebSocket-Extensions: %s\r\n", cases[i].offer);
        assert_int_equal(shake_o(fields, &o), 0);
        const char *want = cases[i].answer ? cases[i].answer : "(none)";
        if (strcmp(shook.extensions, want) != 0)
            fail_msg("offer \"%s\", window %d:\ngot  %s\nwant %s", cases[i].offer, cases[i].bits,
                     shook.extensions, want);
        assert_int_equal(shook.hs.deflate, cases[i].answer != NULL);
        if (cases[i].answer) {
            assert_int_equal(shook.hs.client_window, cases[i].client_window);
            assert_int_equal(shook.hs.server_window, cases[i].server_window);
        }
    }
    /* offers in two fields */
    assert_int_equal(shake(STD "Sec-WebSocket-Extensions: foo\r\n"
                               "Sec-WebSocket-Extensions: permessage-deflate\r\n"),
                     0);
    assert_string_equal(shook.extensions, PMD);
}

/* RFC 7692 §7.1.2.1: "A server accepts an extension negotiation offer
 * with this parameter by including the server_max_window_bits extension
 * parameter in the extension negotiation response" (a client that
 * offered it fails a response without it). */
static void test_check_deflate_server_bits_echoed(void **state)
{
    (void)state;
    assert_int_equal(
        shake(STD "Sec-WebSocket-Extensions: permessage-deflate; server_max_window_bits=15\r\n"),
        0);
    assert_int_equal(shook.hs.deflate, 1);
    assert_string_equal(shook.extensions, PMD "; server_max_window_bits=15");
}

static void test_check_options(void **state)
{
    (void)state;
    cshw_ws_options o;
    memset(&o, 0xee, sizeof o);
    cshw_ws_options_init(&o);
    assert_int_equal(o.size, sizeof o);
    assert_int_equal(o.max_message, 1u << 20);
    assert_int_equal(o.max_fragments, 4096);
    assert_null(o.allowed_origins);
    assert_null(o.protocols);
    assert_int_equal(o.deflate, 1);
    assert_int_equal(o.deflate_window_bits, 15);
    assert_int_equal(o.deflate_min, 64);
    assert_int_equal(o.ping_interval_ms, 30000);
    assert_int_equal(o.pong_timeout_ms, 20000);
    assert_int_equal(o.close_timeout_ms, 5000);

    for (int i = 0; i < 6; i++) {
        o = defaults();
        switch (i) {
        case 0:
            o.size = 0;
            break;
        case 1:
            o.size = sizeof o - 8;
            break;
        case 2:
            o.max_message = 0;
            break;
        case 3:
            o.max_fragments = 0;
            break;
        case 4:
            o.deflate_window_bits = 7;
            break;
        default:
            o.deflate_window_bits = 16;
            break;
        }
        assert_int_equal(shake_o(STD, &o), CSHW_E_WS_OPTIONS);
        assert_string_equal(shook.accept, "(none)");
    }
    assert_int_equal(cshw_error_status(CSHW_E_WS_OPTIONS), 500);
    o = defaults();
    o.deflate_window_bits = 8;
    assert_int_equal(shake_o(STD, &o), 0);
    cshw_ws_handshake hs;
    assert_int_equal(cshw_ws_check(NULL, &o, &hs), -EINVAL);
}

/* max_message as large as it goes (no limit to speak of): a compressed
 * message still arrives. */
static void test_deflate_unlimited_message(void **state)
{
    (void)state;
    cshw_ws_options o = defaults();
    o.max_message = UINT64_MAX;
    peer p;
    peer_open(&p, &o, &deflate_15);
    client_says(&p, 0x81, "plain");
    bytes in = {0};
    client_frame(&in, 0xc1, "\xf2\x48\xcd\xc9\xc9\x07\x00", 7);
    feed(&p, in.p, in.len);
    if (p.messages != 2) {
        describe_frames(&p.log, &p.out, 1);
        fail_msg("the compressed message did not come:\n%s", p.log.p);
    }
    assert_int_equal(p.msg.len, 5);
    assert_memory_equal(p.msg.p, "Hello", 5);
    assert_int_equal(p.closes, 0);
    peer_end(&p);
    peer_free(&p);
    bytes_free(&in);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_accept_value),
        cmocka_unit_test(test_check_request),
        cmocka_unit_test(test_check_version),
        cmocka_unit_test(test_check_key),
        cmocka_unit_test(test_check_origin),
        cmocka_unit_test(test_check_protocol),
        cmocka_unit_test(test_check_deflate),
        cmocka_unit_test(test_check_deflate_server_bits_echoed),
        cmocka_unit_test(test_check_options),
        cmocka_unit_test(test_wire_cases),
        cmocka_unit_test(test_wire_first_rule_broken),
        cmocka_unit_test(test_rfc6455_examples),
        cmocka_unit_test(test_length_forms),
        cmocka_unit_test(test_unmasked_refused_at_once),
        cmocka_unit_test(test_close_codes),
        cmocka_unit_test(test_utf8),
        cmocka_unit_test(test_deflate_round_trip),
        cmocka_unit_test(test_deflate_windows),
        cmocka_unit_test(test_deflate_limits),
        cmocka_unit_test(test_tick_ping),
        cmocka_unit_test(test_tick_no_ping_while_the_peer_talks),
        cmocka_unit_test(test_tick_close_timeout),
        cmocka_unit_test(test_pong_after_our_close),
        cmocka_unit_test(test_send_rules),
        cmocka_unit_test(test_close_reason_cut),
        cmocka_unit_test(test_drained),
        cmocka_unit_test(test_pause),
        cmocka_unit_test(test_pings_past_the_mark),
        cmocka_unit_test(test_retain_release),
        cmocka_unit_test(test_end_without_close),
        cmocka_unit_test(test_new_refuses),
        cmocka_unit_test(test_idle_bytes),
        /* last: on the bug it finds, the process may not survive it */
        cmocka_unit_test(test_deflate_unlimited_message),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
