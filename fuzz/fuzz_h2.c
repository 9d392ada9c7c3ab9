/* fuzz_h2: the engine's HTTP/2 (h2c with prior knowledge, RFC 9113 §3.3)
 * against a live server, over TCP.
 *
 * One cshs_server runs in the process (started on the first input, so
 * after AFL++'s fork server forked; stopped and freed at exit): port 0 on
 * 127.0.0.1, one loop, deadlines of a few hundred milliseconds, small h2
 * limits (streams, handlers, CONTINUATION frames, resets, max_head) so
 * that each is reachable, and a router of five routes: GET /plain (text),
 * * /echo (reads the body, answers the method, target, fields and body),
 * GET /size?n=N&t=T (N bytes, written 1000 at a time, so the HTTP/1.1
 * answer behind the stream is chunked past the toolkit's buffer, then T
 * as a trailer), GET /status?s=N (that status) and GET /tunnel (the
 * "echo" protocol, which an extended CONNECT asks for, RFC 8441). /plain
 * is a quick route (cshs_server_set_quick).
 *
 * Input: byte 0 is the setup: bits 0-5 a piece size (1..64), bit 6 the
 * whole input in one send, bit 7 "abrupt" (shut the sending side down as
 * soon as everything went, without acting as a client first). Then the
 * bytes an h2c client sends after the preface: frames, broken or not.
 *
 * Each input is one connection: the preface and the input sent in pieces
 * of that size (what the server sends meanwhile is read as it comes).
 * Then, unless abrupt, the target acts as a client would: it completes a
 * frame the input cut short with zero bytes (only its header when it is
 * longer than the server takes) and a header block left open (an empty
 * CONTINUATION); then, the frames being whole, it sets the stream window
 * back to 65535 if the input lowered it, gives back the window the
 * server's DATA used (WINDOW_UPDATE, again as more comes) and sends a
 * PING; it waits, at most 500 ms, for that PING's ACK and for every stream
 * the client ended to be answered or reset, or left out by a GOAWAY. Then
 * shutdown(SHUT_WR): the server must close within 2 s (else abort). Every
 * 8th input under libFuzzer, and after every input replayed, a fresh
 * connection with a valid GET /plain must get :status 200 and its 13
 * bytes within 2 s, and then no connection may be left open (counters):
 * the server still serves and holds nothing for clients gone.
 *
 * What the server sent is checked as it comes, frame by frame; only what
 * RFC 9113 makes certain (section in each message), with bounds computed
 * from everything the client sent (a superset of what the server read):
 *   - framing: 9-byte headers, lengths up to 16384 or the largest
 *     SETTINGS_MAX_FRAME_SIZE the client sent (§4.2), the reserved bit
 *     clear (§4.1), no undefined flag (§4.1), the first frame a SETTINGS
 *     (§3.4) with valid values (§6.5.2), only the types this engine sends
 *     (no PUSH_PROMISE, PRIORITY or extension frame), per-type lengths and
 *     stream 0 or not (§6.1-§6.10);
 *   - streams: HEADERS, DATA, RST_STREAM, CONTINUATION and stream
 *     WINDOW_UPDATE only on streams the client opened with HEADERS
 *     (§5.1.1: no push, no idle stream); no HEADERS or DATA after the
 *     server's END_STREAM, no frame at all after its RST_STREAM (§5.1);
 *     a header block is contiguous (§4.3, §6.10);
 *   - messages: each header block decodes (HPACK, libnghttp2's inflater;
 *     §4.3); a response starts with :status, three digits, not 101
 *     (§8.3.2, §8.6), 1xx without END_STREAM (§8.1), DATA only after a
 *     final response (§8.1), trailers end the stream and carry no
 *     pseudo-header (§8.1); names lowercase without a colon, values
 *     without NUL/CR/LF or whitespace at either end (§8.2.1), no
 *     connection-specific field (§8.2.2); a content-length equals the
 *     DATA bytes of a stream ended with some (§8.1.1; an answer without
 *     DATA may be to HEAD);
 *   - flow control: the DATA the server sent fit the windows the client
 *     gave, per connection and per stream (§6.9.1); the server's
 *     WINDOW_UPDATE increments are non-zero (§6.9) and keep its window
 *     within 2^31-1 (§6.9.1);
 *   - SETTINGS ACKs no more than the client's SETTINGS, PING ACKs echo a
 *     PING the client sent (§6.5.3, §6.7); GOAWAY names 0 or a stream the
 *     client opened, never more than an earlier GOAWAY (§6.8); after it no
 *     HEADERS or DATA on a higher stream (§6.8), and nothing at all after
 *     a GOAWAY for an error (§5.4.1).
 * FUZZ_VERBOSE=1 prints the frames both ways (to read a reproducer). */
#define _GNU_SOURCE

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <nghttp2/nghttp2.h>

#include <cshttp/server/server.h>
#include <cshttp/server/tunnel.h>
#include <cshttp/web/request.h>
#include <cshttp/web/response.h>
#include <cshttp/web/router.h>

#include "common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_INPUT 32768
#define SIZE_MAX_BODY 100000 /* /size answers at most this many bytes */
#define WAIT_MS 500          /* acting as a client: the longest wait for the answers */
#define CLOSE_MS 2000        /* after shutdown(SHUT_WR): the server must close by then */
#define PROBE_EVERY 8        /* a liveness probe every that many inputs */
#define MAX_PINGS 256
#define WINDOW_MAX 0x7fffffffu

static const char preface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
static const uint8_t end_ping[8] = {'f', 'z', '-', 'h', '2', 'e', 'n', 'd'};

enum {
    F_DATA = 0,
    F_HEADERS = 1,
    F_PRIORITY = 2,
    F_RST_STREAM = 3,
    F_SETTINGS = 4,
    F_PUSH_PROMISE = 5,
    F_PING = 6,
    F_GOAWAY = 7,
    F_WINDOW_UPDATE = 8,
    F_CONTINUATION = 9,
};
enum {
    FL_END_STREAM = 0x1,
    FL_ACK = 0x1,
    FL_END_HEADERS = 0x4,
    FL_PADDED = 0x8,
    FL_PRIORITY = 0x20
};

/* ---- the application ---- */

static void h_plain(cshw_context *ctx)
{
    cshw_response *res = cshw_context_response(ctx);
    cshw_response_set_content_type(res, "text/plain", NULL);
    cshw_response_puts(res, "Hello, World!");
}

/* The request as the toolkit saw it, its body included (up to 256 KiB). */
static void h_echo(cshw_context *ctx)
{
    cshw_request *req = cshw_context_request(ctx);
    cshw_response *res = cshw_context_response(ctx);
    char *body = NULL;
    size_t len = 0, cap = 0;
    char chunk[4096];
    ssize_t n;
    while ((n = cshw_request_read(req, chunk, sizeof chunk)) > 0) {
        if (len + (size_t)n > (256u << 10)) {
            free(body);
            cshw_response_send_error(res, 413);
            return;
        }
        if (len + (size_t)n > cap) {
            cap = (len + (size_t)n) * 2;
            char *b = realloc(body, cap);
            FZ_CHECK(b != NULL, "out of memory");
            body = b;
        }
        memcpy(body + len, chunk, (size_t)n);
        len += (size_t)n;
    }
    cshw_response_set_content_type(res, "text/plain", NULL);
    cshw_response_printf(res, "%s %s\n", cshw_request_method(req), cshw_request_target(req));
    for (size_t i = 0; i < cshw_request_header_count(req); i++) {
        const char *value;
        const char *name = cshw_request_header_at(req, i, &value);
        cshw_response_printf(res, "%s: %s\n", name, value);
    }
    cshw_response_printf(res, "body %zu (%zd)\n", len, n);
    if (len) cshw_response_write(res, body, len);
    free(body);
}

/* n bytes (the query's n, at most SIZE_MAX_BODY), written 1000 at a time,
 * then the query's t as a trailer field (RFC 9110 §6.5). */
static void h_size(cshw_context *ctx)
{
    cshw_request *req = cshw_context_request(ctx);
    cshw_response *res = cshw_context_response(ctx);
    const char *q = cshw_request_query_get(req, "n");
    unsigned long n = q ? strtoul(q, NULL, 10) : 0;
    if (n > SIZE_MAX_BODY) n = SIZE_MAX_BODY;
    char piece[1000];
    for (size_t i = 0; i < sizeof piece; i++) piece[i] = (char)('a' + i % 26);
    cshw_response_set_content_type(res, "application/octet-stream", NULL);
    while (n) {
        size_t k = n < sizeof piece ? n : sizeof piece;
        if (cshw_response_write(res, piece, k) < 0) return;
        n -= k;
    }
    const char *t = cshw_request_query_get(req, "t");
    if (t) cshw_response_add_trailer(res, "x-t", t);
}

/* GET /tunnel with Upgrade: echo, which an extended CONNECT (RFC 8441)
 * stands for: switched, every byte comes back, the client's end ends it. */
static void tunnel_data(cshs_tunnel *t, const char *p, size_t n, void *arg)
{
    (void)arg;
    if (n == 0)
        cshs_tunnel_shutdown(t);
    else if (cshs_tunnel_write(t, p, n) == 1)
        cshs_tunnel_pause(t);
}

static void tunnel_drained(cshs_tunnel *t, void *arg)
{
    (void)arg;
    cshs_tunnel_resume(t);
}

static void tunnel_closed(cshs_tunnel *t, int why, void *arg)
{
    (void)t;
    (void)why;
    (void)arg;
}

static const cshs_tunnel_ops echo_tunnel = {NULL, tunnel_data, tunnel_drained, tunnel_closed};

static void h_tunnel(cshw_context *ctx)
{
    if (cshs_upgrade(ctx, "echo", &echo_tunnel, NULL) < 0)
        cshw_response_send_error(cshw_context_response(ctx), 426); /* not asked for */
}

/* The status the query's s names (200..599), with a short body where one
 * is allowed. */
static void h_status(cshw_context *ctx)
{
    cshw_request *req = cshw_context_request(ctx);
    cshw_response *res = cshw_context_response(ctx);
    const char *q = cshw_request_query_get(req, "s");
    long s = q ? strtol(q, NULL, 10) : 200;
    if (s < 200 || s > 599) s = 400;
    cshw_response_set_status(res, (int)s);
    if (s != 204 && s != 304) cshw_response_printf(res, "status %ld\n", s);
}

/* /plain never waits: its streams skip h2_max_handlers (the quick path). */
static int quick(void *arg, const char *head, const csh_message *msg)
{
    (void)arg;
    return msg->target.len >= 6 && memcmp(head + msg->target.off, "/plain", 6) == 0;
}

static cshs_server *srv;
static cshw_router *router;
static unsigned srv_port;
static unsigned long inputs;
static unsigned long probe_every = 1; /* PROBE_EVERY under libFuzzer */

/* Called by libFuzzer only (not by the replay and AFL++ mains, which then
 * probe after every input). The server starts on the first input, after
 * AFL++'s fork server forked. */
int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    probe_every = PROBE_EVERY;
    return 0;
}

/* At exit: the server stopped and freed, so that LeakSanitizer's check at
 * exit sees what the engine did not free. */
static void stop_server(void)
{
    cshs_server_free(srv);
    cshw_router_free(router);
    srv = NULL;
}

static void start_server(void)
{
    static csh_limits lim;
    static cshw_options web;
    signal(SIGPIPE, SIG_IGN);
    csh_limits_init(&lim);
    lim.max_head = 4096; /* SETTINGS_MAX_HEADER_LIST_SIZE: 431 within reach */
    cshw_options_init(&web);
    web.body_buffer = 1024; /* bodies past it go to a temporary file */
    web.max_request_body = 65536;
    cshs_options o;
    cshs_options_init(&o);
    o.address = "127.0.0.1";
    o.port = 0;
    o.loops = 1;
    o.min_threads = 2;
    o.max_threads = 8;
    o.header_timeout_ms = 300;
    o.keepalive_timeout_ms = 300;
    o.read_timeout_ms = 300;
    o.body_grace_ms = 300;
    o.send_timeout_ms = 500;
    o.stop_timeout_ms = 200;
    o.linger_ms = 100;
    o.sweep_interval_ms = 20;
    o.h2_max_streams = 16;
    o.h2_max_handlers = 4;
    o.h2_max_continuations = 4;
    o.h2_max_resets = 30;
    o.limits = &lim;
    o.web = &web;
    cshw_router *r = router = cshw_router_new();
    FZ_CHECK(r != NULL, "out of memory");
    FZ_CHECK(cshw_router_add(r, "GET", "/plain", h_plain) == 0, "route");
    FZ_CHECK(cshw_router_add(r, "*", "/echo", h_echo) == 0, "route");
    FZ_CHECK(cshw_router_add(r, "GET", "/size", h_size) == 0, "route");
    FZ_CHECK(cshw_router_add(r, "GET", "/status", h_status) == 0, "route");
    FZ_CHECK(cshw_router_add(r, "GET", "/tunnel", h_tunnel) == 0, "route");
    const char *why = NULL;
    FZ_CHECK(cshs_options_check(&o, &why) == 0, "options: %s", why);
    srv = cshs_server_new(&o, NULL, r);
    FZ_CHECK(srv != NULL, "cshs_server_new failed");
    cshs_server_set_quick(srv, quick, NULL);
    int rc = cshs_server_start(srv);
    FZ_CHECK(rc == 0, "cshs_server_start: %s", strerror(-rc));
    srv_port = cshs_server_port(srv, 0);
    FZ_CHECK(srv_port != 0, "no port");
    atexit(stop_server);
}

/* ---- bytes ---- */

static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void put_frame_head(uint8_t *h, size_t len, int type, int flags, uint32_t sid)
{
    h[0] = (uint8_t)(len >> 16);
    h[1] = (uint8_t)(len >> 8);
    h[2] = (uint8_t)len;
    h[3] = (uint8_t)type;
    h[4] = (uint8_t)flags;
    h[5] = (uint8_t)(sid >> 24);
    h[6] = (uint8_t)(sid >> 16);
    h[7] = (uint8_t)(sid >> 8);
    h[8] = (uint8_t)sid;
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- streams, as both sides used them ---- */

typedef struct stream {
    uint32_t id; /* 0: a free slot */
    /* the client's side */
    char cli_headers;  /* a HEADERS frame on it */
    char cli_opened;   /* its header block complete */
    char cli_ended;    /* END_STREAM after the block completed */
    char cli_reset;    /* RST_STREAM */
    char cli_stale;    /* opened below a stream opened before */
    uint64_t cli_incr; /* WINDOW_UPDATE increments */
    /* the server's side */
    char srv_final;         /* a final response's HEADERS */
    char srv_ended;         /* END_STREAM */
    char srv_reset;         /* RST_STREAM */
    int status;             /* the final status */
    uint64_t srv_flow;      /* DATA frame lengths (flow-controlled) */
    uint64_t srv_data;      /* DATA payload bytes, padding left out */
    uint64_t given;         /* window given back by the target acting as a client */
    int64_t content_length; /* -1: none */
} stream;

typedef struct conn {
    int fd;
    int verbose;
    /* the client's frames: everything it sends (input and own frames) */
    stream *st;
    size_t nst, cap;
    uint32_t max_frame;         /* SETTINGS_MAX_FRAME_SIZE: the largest the client sent */
    uint64_t max_init;          /* SETTINGS_INITIAL_WINDOW_SIZE: the largest the client sent */
    int64_t last_init;          /* the last the client sent */
    uint64_t cli_conn_incr;     /* connection WINDOW_UPDATE increments */
    uint64_t cli_data;          /* DATA frame lengths */
    unsigned long cli_settings; /* SETTINGS frames (not ACK) */
    uint8_t pings[MAX_PINGS][8];
    size_t npings;
    int pings_overflow;
    uint32_t cli_max_id; /* the highest stream it opened */
    uint32_t cli_block;  /* a header block open in the client's frames (its stream) */
    int cli_block_end;   /* its HEADERS had END_STREAM */
    int cli_boundary;    /* the input ended on a frame boundary */
    /* the server's frames */
    uint8_t *in;
    size_t in_len, in_cap, in_pos;
    unsigned long frames;
    unsigned long settings_acks;
    uint64_t srv_flow;      /* DATA frame lengths, all streams */
    uint64_t srv_conn_incr; /* its connection WINDOW_UPDATE increments */
    uint64_t conn_given;    /* window given back by the target */
    int goaway;             /* a GOAWAY came */
    uint32_t goaway_last;
    int goaway_error; /* ... with an error code */
    int ping_acked;   /* the ACK of end_ping came */
    int data_came;    /* DATA since the windows were last given back */
    uint32_t block;   /* a header block open (its stream), 0: none */
    int block_flags;  /* its HEADERS frame's flags */
    uint8_t *blk;
    size_t blk_len, blk_cap;
    nghttp2_hd_inflater *inf;
    int eof; /* the server closed (or reset) */
} conn;

static stream *find(conn *k, uint32_t id, int add)
{
    if (id == 0) return NULL;
    if (add && (k->nst + 1) * 2 > k->cap) {
        size_t ncap = k->cap ? k->cap * 2 : 64;
        stream *n = calloc(ncap, sizeof *n);
        FZ_CHECK(n != NULL, "out of memory");
        for (size_t i = 0; i < k->cap; i++) {
            if (!k->st[i].id) continue;
            size_t j = (k->st[i].id * 2654435761u) & (ncap - 1);
            while (n[j].id) j = (j + 1) & (ncap - 1);
            n[j] = k->st[i];
        }
        free(k->st);
        k->st = n;
        k->cap = ncap;
    }
    if (!k->cap) return NULL;
    size_t j = (id * 2654435761u) & (k->cap - 1);
    while (k->st[j].id && k->st[j].id != id) j = (j + 1) & (k->cap - 1);
    if (k->st[j].id) return &k->st[j];
    if (!add) return NULL;
    memset(&k->st[j], 0, sizeof k->st[j]);
    k->st[j].id = id;
    k->st[j].content_length = -1;
    k->nst++;
    return &k->st[j];
}

static const char *type_name(int t)
{
    static const char *const names[] = {"DATA",          "HEADERS",      "PRIORITY", "RST_STREAM",
                                        "SETTINGS",      "PUSH_PROMISE", "PING",     "GOAWAY",
                                        "WINDOW_UPDATE", "CONTINUATION"};
    return t >= 0 && t < 10 ? names[t] : "UNKNOWN";
}

/* One frame the client sends: what it promises the server, as a bound. */
static void client_frame(conn *k, int type, int flags, uint32_t sid, const uint8_t *p, size_t len)
{
    if (k->verbose)
        fprintf(stderr, "  > %s flags=0x%02x stream=%u len=%zu\n", type_name(type), flags, sid,
                len);
    if (k->cli_block && type != F_CONTINUATION) k->cli_block = 0; /* the server's error */
    stream *s;
    switch (type) {
    case F_DATA:
        k->cli_data += len;
        s = find(k, sid, 0);
        if (s && s->cli_opened && (flags & FL_END_STREAM)) s->cli_ended = 1;
        break;
    case F_HEADERS:
        s = find(k, sid, 1);
        if (!s) break;
        /* a new stream's id is above all the client opened (§5.1.1):
         * libnghttp2 ignores a HEADERS below them */
        if (!s->cli_headers && sid < k->cli_max_id) s->cli_stale = 1;
        if (sid > k->cli_max_id) k->cli_max_id = sid;
        s->cli_headers = 1;
        if (flags & FL_END_HEADERS) {
            s->cli_opened = 1;
            if (flags & FL_END_STREAM) s->cli_ended = 1;
        } else {
            k->cli_block = sid;
            k->cli_block_end = flags & FL_END_STREAM;
        }
        break;
    case F_CONTINUATION:
        if (k->cli_block != sid) {
            k->cli_block = 0;
            break;
        }
        if (flags & FL_END_HEADERS) {
            s = find(k, sid, 0);
            if (s) {
                s->cli_opened = 1;
                if (k->cli_block_end) s->cli_ended = 1;
            }
            k->cli_block = 0;
        }
        break;
    case F_RST_STREAM:
        s = find(k, sid, 1);
        if (s) s->cli_reset = 1;
        break;
    case F_SETTINGS:
        if (flags & FL_ACK) break;
        k->cli_settings++;
        for (size_t i = 0; len % 6 == 0 && i < len; i += 6) {
            unsigned id = (unsigned)p[i] << 8 | p[i + 1];
            uint32_t v = be32(p + i + 2);
            if (id == NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE && v <= WINDOW_MAX) {
                if (v > k->max_init) k->max_init = v;
                k->last_init = v;
            }
            if (id == NGHTTP2_SETTINGS_MAX_FRAME_SIZE && v >= 16384 && v <= 16777215 &&
                v > k->max_frame)
                k->max_frame = v;
        }
        break;
    case F_PING:
        if ((flags & FL_ACK) || len != 8) break;
        if (k->npings < MAX_PINGS)
            memcpy(k->pings[k->npings++], p, 8);
        else
            k->pings_overflow = 1;
        break;
    case F_WINDOW_UPDATE:
        if (len != 4) break;
        if (sid == 0) {
            k->cli_conn_incr += be32(p) & WINDOW_MAX;
        } else {
            s = find(k, sid, 1);
            if (s) s->cli_incr += be32(p) & WINDOW_MAX;
        }
        break;
    default:
        break;
    }
}

#define TAIL_MAX (9 + 16384) /* a frame the server may take (its SETTINGS_MAX_FRAME_SIZE) */

/* The client's bytes as frames; sets cli_boundary. A last frame cut short
 * counts as far as its header goes (libnghttp2 acts on a frame before it
 * is whole: a HEADERS frame's fields are decoded as they come, DATA is
 * taken as it comes). With `tail` (TAIL_MAX bytes), a frame cut short is
 * completed with zero bytes, or only its header when it is longer than
 * the server takes: what completes it is written to `tail`, to be sent
 * after the input, and its length returned. */
static size_t client_frames(conn *k, const uint8_t *p, size_t n, uint8_t *tail)
{
    size_t pos = 0;
    while (n - pos >= 9) {
        size_t len = (size_t)p[pos] << 16 | (size_t)p[pos + 1] << 8 | p[pos + 2];
        if (n - pos - 9 < len) break;
        client_frame(k, p[pos + 3], p[pos + 4], be32(p + pos + 5) & WINDOW_MAX, p + pos + 9, len);
        pos += 9 + len;
    }
    k->cli_boundary = pos == n;
    if (pos == n) return 0;
    size_t have = n - pos;
    uint8_t h[9] = {0};
    memcpy(h, p + pos, have < 9 ? have : 9);
    size_t len = (size_t)h[0] << 16 | (size_t)h[1] << 8 | h[2];
    uint32_t sid = be32(h + 5) & WINDOW_MAX;
    if (!tail || 9 + len > TAIL_MAX) {
        /* too long for the server (FRAME_SIZE_ERROR once it has the
         * header): only the header is completed */
        if (!tail && have < 9) return 0;
        if (k->verbose)
            fprintf(stderr, "  > %s flags=0x%02x stream=%u len=%zu, cut short\n", type_name(h[3]),
                    h[4], sid, len);
        stream *s = h[3] == F_HEADERS ? find(k, sid, 1) : NULL;
        if (s) s->cli_headers = 1;
        if (h[3] == F_DATA) k->cli_data += len;
        if (!tail || have >= 9) return 0;
        memcpy(tail, h + have, 9 - have);
        return 9 - have;
    }
    uint8_t *f = calloc(1, 9 + len);
    FZ_CHECK(f != NULL, "out of memory");
    memcpy(f, p + pos, have);
    client_frame(k, f[3], f[4], sid, f + 9, len);
    memcpy(tail, f + have, 9 + len - have);
    free(f);
    k->cli_boundary = 1;
    return 9 + len - have;
}

/* ---- the server's frames ---- */

static int is_token_lower(const uint8_t *p, size_t n)
{
    /* RFC 9113 §8.2.1: no 0x00-0x20, 0x41-0x5a (uppercase), 0x7f-0xff */
    for (size_t i = 0; i < n; i++)
        if (p[i] <= 0x20 || (p[i] >= 0x41 && p[i] <= 0x5a) || p[i] >= 0x7f) return 0;
    return 1;
}

static int name_is(const nghttp2_nv *nv, const char *lit)
{
    return nv->namelen == strlen(lit) && memcmp(nv->name, lit, nv->namelen) == 0;
}

/* A header block complete: decoded and checked as a response head or
 * trailers. */
static void header_block(conn *k)
{
    uint32_t sid = k->block;
    int flags = k->block_flags;
    k->block = 0;
    stream *s = find(k, sid, 0);
    int trailers = s->srv_final;
    int fields = 0, regular = 0, status = -1;
    int64_t cl = -1;
    const uint8_t *in = k->blk;
    size_t inlen = k->blk_len;
    for (;;) {
        nghttp2_nv nv;
        int fl = 0;
        ssize_t rv = nghttp2_hd_inflate_hd2(k->inf, &nv, &fl, in, inlen, 1);
        /* §4.3: a block that does not decode is a connection error */
        FZ_CHECK(rv >= 0, "stream %u: the header block does not decode (HPACK: %s)", sid,
                 nghttp2_strerror((int)rv));
        in += rv;
        inlen -= (size_t)rv;
        if (fl & NGHTTP2_HD_INFLATE_EMIT) {
            if (k->verbose) {
                fz_buf b = {0};
                fz_buf_escaped(&b, nv.name, nv.namelen);
                fz_buf_put(&b, ": ", 2);
                fz_buf_escaped(&b, nv.value, nv.valuelen);
                fprintf(stderr, "    %.*s\n", (int)b.len, b.data);
                fz_buf_free(&b);
            }
            fields++;
            FZ_CHECK(nv.namelen > 0, "stream %u: an empty field name", sid);
            int pseudo = nv.name[0] == ':';
            if (pseudo) {
                /* §8.3: pseudo-header fields first; a response has
                 * :status only, once; trailers have none (§8.1) */
                FZ_CHECK(!trailers, "stream %u: a pseudo-header field in trailers", sid);
                FZ_CHECK(!regular, "stream %u: a pseudo-header field after a regular one", sid);
                FZ_CHECK(name_is(&nv, ":status"),
                         "stream %u: pseudo-header field %.*s in a response", sid, (int)nv.namelen,
                         nv.name);
                FZ_CHECK(status < 0, "stream %u: :status twice", sid);
                FZ_CHECK(nv.valuelen == 3 && nv.value[0] >= '1' && nv.value[0] <= '9' &&
                             nv.value[1] >= '0' && nv.value[1] <= '9' && nv.value[2] >= '0' &&
                             nv.value[2] <= '9',
                         "stream %u: :status is not three digits", sid);
                status = (nv.value[0] - '0') * 100 + (nv.value[1] - '0') * 10 + (nv.value[2] - '0');
            } else {
                regular = 1;
                /* §8.2.1: lowercase, no controls, no colon */
                FZ_CHECK(is_token_lower(nv.name, nv.namelen) && !memchr(nv.name, ':', nv.namelen),
                         "stream %u: field name %.*s is not lowercase visible ASCII", sid,
                         (int)nv.namelen, nv.name);
                /* §8.2.2: no connection-specific field (TE only in requests) */
                FZ_CHECK(
                    !name_is(&nv, "connection") && !name_is(&nv, "keep-alive") &&
                        !name_is(&nv, "proxy-connection") && !name_is(&nv, "transfer-encoding") &&
                        !name_is(&nv, "upgrade") && !name_is(&nv, "te"),
                    "stream %u: connection-specific field %.*s", sid, (int)nv.namelen, nv.name);
                if (name_is(&nv, "content-length") && !trailers) {
                    int64_t v = 0;
                    FZ_CHECK(nv.valuelen > 0 && nv.valuelen < 16, "stream %u: content-length %.*s",
                             sid, (int)nv.valuelen, nv.value);
                    for (size_t i = 0; i < nv.valuelen; i++) {
                        FZ_CHECK(nv.value[i] >= '0' && nv.value[i] <= '9',
                                 "stream %u: content-length %.*s", sid, (int)nv.valuelen, nv.value);
                        v = v * 10 + (nv.value[i] - '0');
                    }
                    FZ_CHECK(cl < 0 || cl == v, "stream %u: two content-length values", sid);
                    cl = v;
                }
            }
            /* §8.2.1: no NUL, CR or LF; no whitespace at either end */
            for (size_t i = 0; i < nv.valuelen; i++)
                FZ_CHECK(nv.value[i] != 0 && nv.value[i] != '\r' && nv.value[i] != '\n',
                         "stream %u: field %.*s has a NUL, CR or LF", sid, (int)nv.namelen,
                         nv.name);
            FZ_CHECK(nv.valuelen == 0 ||
                         (nv.value[0] != ' ' && nv.value[0] != '\t' &&
                          nv.value[nv.valuelen - 1] != ' ' && nv.value[nv.valuelen - 1] != '\t'),
                     "stream %u: field %.*s has whitespace at an end", sid, (int)nv.namelen,
                     nv.name);
        }
        if (fl & NGHTTP2_HD_INFLATE_FINAL) {
            nghttp2_hd_inflate_end_headers(k->inf);
            break;
        }
        FZ_CHECK(rv > 0 || inlen > 0, "stream %u: the header block ends inside a field", sid);
    }
    k->blk_len = 0;
    if (trailers) {
        /* §8.1: trailers are the last frame of the stream */
        FZ_CHECK(flags & FL_END_STREAM, "stream %u: trailers without END_STREAM", sid);
        FZ_CHECK(s->content_length < 0 || s->srv_data == 0 ||
                     (uint64_t)s->content_length == s->srv_data,
                 "stream %u: content-length %lld, %llu bytes of DATA (§8.1.1)", sid,
                 (long long)s->content_length, (unsigned long long)s->srv_data);
    } else {
        FZ_CHECK(status >= 0, "stream %u: a response without :status (%d fields)", sid, fields);
        FZ_CHECK(status != 101, "stream %u: 101 (§8.6)", sid);
        if (status < 200) {
            FZ_CHECK(!(flags & FL_END_STREAM), "stream %u: a %d with END_STREAM (§8.1)", sid,
                     status);
        } else {
            s->srv_final = 1;
            s->status = status;
            s->content_length = cl;
        }
    }
    if (flags & FL_END_STREAM) s->srv_ended = 1;
}

/* A DATA or HEADERS frame's padding and priority: the payload's start and
 * length, checked (§6.1, §6.2). */
static void payload_of(int type, int flags, const uint8_t *p, size_t len, size_t *off, size_t *n)
{
    size_t pad = 0, o = 0;
    if (flags & FL_PADDED) {
        FZ_CHECK(len >= 1, "%s: PADDED without a pad length", type_name(type));
        pad = p[0];
        o = 1;
    }
    if (type == F_HEADERS && (flags & FL_PRIORITY)) o += 5;
    FZ_CHECK(o + pad <= len, "%s: padding (%zu) past the frame (%zu)", type_name(type), pad, len);
    *off = o;
    *n = len - o - pad;
}

/* Streams the server may send on: those the client opened with HEADERS
 * (§5.1.1: the server opens none, it pushes nothing). */
static stream *client_stream(conn *k, int type, uint32_t sid)
{
    stream *s = find(k, sid, 0);
    FZ_CHECK(s && s->cli_headers, "%s on stream %u, which the client never opened", type_name(type),
             sid);
    return s;
}

static void server_frame(conn *k, int type, int flags, uint32_t sid_raw, const uint8_t *p,
                         size_t len)
{
    uint32_t sid = sid_raw & WINDOW_MAX;
    if (k->verbose)
        fprintf(stderr, "  < %s flags=0x%02x stream=%u len=%zu\n", type_name(type), flags, sid,
                len);
    FZ_CHECK(!(sid_raw & 0x80000000u), "%s: the reserved bit is set (§4.1)", type_name(type));
    FZ_CHECK(len <= k->max_frame, "%s: %zu bytes, past SETTINGS_MAX_FRAME_SIZE %u (§4.2)",
             type_name(type), len, k->max_frame);
    FZ_CHECK(k->frames > 0 || (type == F_SETTINGS && !(flags & FL_ACK)),
             "the server's first frame is %s, not SETTINGS (§3.4)", type_name(type));
    FZ_CHECK(!k->goaway_error, "%s after a GOAWAY for an error (§5.4.1: the connection closes)",
             type_name(type));
    /* §4.3, §6.10: a header block is a contiguous run of frames */
    FZ_CHECK(!k->block || (type == F_CONTINUATION && sid == k->block),
             "%s on stream %u inside the header block of stream %u", type_name(type), sid,
             k->block);
    k->frames++;
    stream *s;
    size_t off, n;
    switch (type) {
    case F_DATA: {
        FZ_CHECK(!(flags & ~(FL_END_STREAM | FL_PADDED)), "DATA: flags 0x%02x (§4.1)", flags);
        FZ_CHECK(sid != 0, "DATA on stream 0 (§6.1)");
        s = client_stream(k, type, sid);
        FZ_CHECK(!k->goaway || sid <= k->goaway_last,
                 "DATA on stream %u after GOAWAY with last stream %u (§6.8)", sid, k->goaway_last);
        FZ_CHECK(s->srv_final, "DATA on stream %u before a final response (§8.1)", sid);
        FZ_CHECK(!s->srv_ended && !s->srv_reset, "DATA on stream %u after it ended (§5.1)", sid);
        payload_of(type, flags, p, len, &off, &n);
        /* §6.9.1: within the windows the client gave */
        s->srv_flow += len;
        k->srv_flow += len;
        FZ_CHECK(k->srv_flow <= 65535 + k->cli_conn_incr,
                 "DATA: %llu bytes sent, the connection window the client gave is %llu (§6.9.1)",
                 (unsigned long long)k->srv_flow, (unsigned long long)(65535 + k->cli_conn_incr));
        FZ_CHECK(s->srv_flow <= k->max_init + s->cli_incr,
                 "DATA: %llu bytes on stream %u, its window is at most %llu (§6.9.1)",
                 (unsigned long long)s->srv_flow, sid,
                 (unsigned long long)(k->max_init + s->cli_incr));
        if (len) k->data_came = 1;
        s->srv_data += n;
        if (flags & FL_END_STREAM) {
            s->srv_ended = 1;
            /* §8.1.1; a response without DATA may answer HEAD (or be 304) */
            FZ_CHECK(s->content_length < 0 || s->srv_data == 0 ||
                         (uint64_t)s->content_length == s->srv_data,
                     "stream %u: content-length %lld, %llu bytes of DATA (§8.1.1)", sid,
                     (long long)s->content_length, (unsigned long long)s->srv_data);
        }
        break;
    }
    case F_HEADERS:
        FZ_CHECK(!(flags & ~(FL_END_STREAM | FL_END_HEADERS | FL_PADDED | FL_PRIORITY)),
                 "HEADERS: flags 0x%02x (§4.1)", flags);
        FZ_CHECK(sid != 0, "HEADERS on stream 0 (§6.2)");
        s = client_stream(k, type, sid);
        FZ_CHECK(!k->goaway || sid <= k->goaway_last,
                 "HEADERS on stream %u after GOAWAY with last stream %u (§6.8)", sid,
                 k->goaway_last);
        FZ_CHECK(!s->srv_ended && !s->srv_reset, "HEADERS on stream %u after it ended (§5.1)", sid);
        payload_of(type, flags, p, len, &off, &n);
        k->block = sid;
        k->block_flags = flags;
        k->blk_len = 0;
        fz_buf b = {(char *)k->blk, k->blk_len, k->blk_cap};
        fz_buf_put(&b, p + off, n);
        k->blk = (uint8_t *)b.data;
        k->blk_len = b.len;
        k->blk_cap = b.cap;
        if (flags & FL_END_HEADERS) header_block(k);
        break;
    case F_CONTINUATION: {
        FZ_CHECK(k->block, "CONTINUATION on stream %u outside a header block (§6.10)", sid);
        FZ_CHECK(!(flags & ~FL_END_HEADERS), "CONTINUATION: flags 0x%02x (§4.1)", flags);
        fz_buf b = {(char *)k->blk, k->blk_len, k->blk_cap};
        fz_buf_put(&b, p, len);
        k->blk = (uint8_t *)b.data;
        k->blk_len = b.len;
        k->blk_cap = b.cap;
        if (flags & FL_END_HEADERS) header_block(k);
        break;
    }
    case F_RST_STREAM:
        FZ_CHECK(flags == 0, "RST_STREAM: flags 0x%02x (§4.1)", flags);
        FZ_CHECK(sid != 0 && len == 4, "RST_STREAM on stream %u, %zu bytes (§6.4)", sid, len);
        s = client_stream(k, type, sid);
        FZ_CHECK(!s->srv_reset, "RST_STREAM on stream %u a second time (§5.1: closed)", sid);
        s->srv_reset = 1;
        break;
    case F_SETTINGS:
        FZ_CHECK(!(flags & ~FL_ACK), "SETTINGS: flags 0x%02x (§4.1)", flags);
        FZ_CHECK(sid == 0, "SETTINGS on stream %u (§6.5)", sid);
        if (flags & FL_ACK) {
            FZ_CHECK(len == 0, "SETTINGS ACK with %zu bytes (§6.5)", len);
            k->settings_acks++;
            FZ_CHECK(k->settings_acks <= k->cli_settings,
                     "%lu SETTINGS ACKs for %lu SETTINGS sent (§6.5.3)", k->settings_acks,
                     k->cli_settings);
            break;
        }
        FZ_CHECK(len % 6 == 0, "SETTINGS of %zu bytes (§6.5)", len);
        for (size_t i = 0; i < len; i += 6) {
            unsigned id = (unsigned)p[i] << 8 | p[i + 1];
            uint32_t v = be32(p + i + 2);
            /* §6.5.2 */
            FZ_CHECK(id != NGHTTP2_SETTINGS_ENABLE_PUSH || v == 0, "SETTINGS_ENABLE_PUSH %u", v);
            FZ_CHECK(id != NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE || v <= WINDOW_MAX,
                     "SETTINGS_INITIAL_WINDOW_SIZE %u", v);
            FZ_CHECK(id != NGHTTP2_SETTINGS_MAX_FRAME_SIZE || (v >= 16384 && v <= 16777215),
                     "SETTINGS_MAX_FRAME_SIZE %u", v);
        }
        break;
    case F_PING:
        FZ_CHECK(!(flags & ~FL_ACK), "PING: flags 0x%02x (§4.1)", flags);
        FZ_CHECK(sid == 0 && len == 8, "PING on stream %u, %zu bytes (§6.7)", sid, len);
        if (flags & FL_ACK) {
            int known = k->pings_overflow;
            for (size_t i = 0; i < k->npings && !known; i++) known = memcmp(k->pings[i], p, 8) == 0;
            FZ_CHECK(known, "a PING ACK whose payload no PING of the client's had (§6.7)");
            if (memcmp(p, end_ping, 8) == 0) k->ping_acked = 1;
        }
        break;
    case F_GOAWAY: {
        FZ_CHECK(flags == 0, "GOAWAY: flags 0x%02x (§4.1)", flags);
        FZ_CHECK(sid == 0 && len >= 8, "GOAWAY on stream %u, %zu bytes (§6.8)", sid, len);
        FZ_CHECK(!(p[0] & 0x80), "GOAWAY: the reserved bit is set (§6.8)");
        uint32_t last = be32(p) & WINDOW_MAX;
        uint32_t code = be32(p + 4);
        if (last) {
            stream *ls = find(k, last, 0);
            FZ_CHECK(ls && ls->cli_headers,
                     "GOAWAY names stream %u, which the client never opened (§6.8)", last);
        }
        FZ_CHECK(!k->goaway || last <= k->goaway_last,
                 "GOAWAY's last stream went up from %u to %u (§6.8)", k->goaway_last, last);
        k->goaway = 1;
        k->goaway_last = last;
        if (code != NGHTTP2_NO_ERROR) k->goaway_error = 1;
        if (k->verbose) fprintf(stderr, "    last %u, error %u\n", last, code);
        break;
    }
    case F_WINDOW_UPDATE: {
        FZ_CHECK(flags == 0, "WINDOW_UPDATE: flags 0x%02x (§4.1)", flags);
        FZ_CHECK(len == 4, "WINDOW_UPDATE of %zu bytes (§6.9)", len);
        FZ_CHECK(!(p[0] & 0x80), "WINDOW_UPDATE: the reserved bit is set (§6.9)");
        uint32_t incr = be32(p) & WINDOW_MAX;
        FZ_CHECK(incr != 0, "WINDOW_UPDATE of 0 on stream %u (§6.9)", sid);
        if (sid == 0) {
            k->srv_conn_incr += incr;
            /* §6.9.1: the window it announces is at least this */
            FZ_CHECK((int64_t)(65535 + k->srv_conn_incr) - (int64_t)k->cli_data <= WINDOW_MAX,
                     "WINDOW_UPDATE: the connection window passes 2^31-1 (§6.9.1)");
        } else {
            s = client_stream(k, type, sid);
            FZ_CHECK(!s->srv_reset, "WINDOW_UPDATE on stream %u after its RST_STREAM (§5.1)", sid);
        }
        break;
    }
    default:
        /* no PUSH_PROMISE, PRIORITY or extension frame: the engine submits none */
        FZ_CHECK(0, "a %s frame (type %d) the engine never sends", type_name(type), type);
    }
}

static void server_bytes(conn *k, const uint8_t *p, size_t n)
{
    fz_buf b = {(char *)k->in, k->in_len, k->in_cap};
    fz_buf_put(&b, p, n);
    k->in = (uint8_t *)b.data;
    k->in_len = b.len;
    k->in_cap = b.cap;
    while (k->in_len - k->in_pos >= 9) {
        const uint8_t *h = k->in + k->in_pos;
        size_t len = (size_t)h[0] << 16 | (size_t)h[1] << 8 | h[2];
        if (k->in_len - k->in_pos - 9 < len) break;
        server_frame(k, h[3], h[4], be32(h + 5), h + 9, len);
        k->in_pos += 9 + len;
    }
    if (k->in_pos == k->in_len) k->in_pos = k->in_len = 0;
}

/* ---- the connection ---- */

static void conn_init(conn *k)
{
    memset(k, 0, sizeof *k);
    k->fd = -1;
    k->verbose = fz_verbose();
    k->max_frame = 16384;
    k->max_init = 65535;
    k->last_init = 65535;
    FZ_CHECK(nghttp2_hd_inflate_new(&k->inf) == 0, "out of memory");
}

static void conn_free(conn *k)
{
    if (k->fd >= 0) {
        /* a reset, not a FIN: no TIME_WAIT left behind on either side */
        struct linger lg = {1, 0};
        setsockopt(k->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
        close(k->fd);
    }
    nghttp2_hd_inflate_del(k->inf);
    free(k->st);
    free(k->in);
    free(k->blk);
}

static void dial(conn *k)
{
    k->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    FZ_CHECK(k->fd >= 0, "socket: %s", strerror(errno));
    int one = 1;
    setsockopt(k->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)srv_port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int rc = connect(k->fd, (struct sockaddr *)&sa, sizeof sa);
    if (rc < 0 && errno == EINTR) {
        /* libFuzzer's SIGALRM: the connection goes on being made */
        struct pollfd pf = {k->fd, POLLOUT, 0};
        while (poll(&pf, 1, CLOSE_MS) < 0 && errno == EINTR) {
        }
        int err = 0;
        socklen_t el = sizeof err;
        getsockopt(k->fd, SOL_SOCKET, SO_ERROR, &err, &el);
        rc = err ? -1 : 0;
        errno = err ? err : ETIMEDOUT;
        if (!err && !(pf.revents & POLLOUT)) rc = -1;
    }
    FZ_CHECK(rc == 0, "connect to the server: %s (it no longer listens?)", strerror(errno));
}

/* Reads what is there (the socket is ready or the call is allowed to
 * wait): checks the frames; sets eof when the server closed. */
static void read_some(conn *k)
{
    uint8_t buf[16384];
    ssize_t n = recv(k->fd, buf, sizeof buf, MSG_DONTWAIT);
    if (n > 0) {
        server_bytes(k, buf, (size_t)n);
        return;
    }
    if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) k->eof = 1;
}

/* Sends `n` bytes in pieces of `piece`, reading what comes meanwhile;
 * stops early when the server closed or reset. Aborts if the server takes
 * nothing for CLOSE_MS. */
static void send_all(conn *k, const uint8_t *p, size_t n, size_t piece)
{
    size_t pos = 0;
    int64_t last = now_ms();
    while (pos < n && !k->eof) {
        struct pollfd pf = {k->fd, POLLIN | POLLOUT, 0};
        int left = (int)(last + CLOSE_MS - now_ms());
        FZ_CHECK(left > 0, "the server took no byte for %d ms (%zu of %zu sent)", CLOSE_MS, pos, n);
        if (poll(&pf, 1, left) <= 0) continue;
        if (pf.revents & (POLLIN | POLLHUP | POLLERR)) read_some(k);
        if (k->eof || !(pf.revents & POLLOUT)) continue;
        size_t m = n - pos < piece ? n - pos : piece;
        ssize_t w = send(k->fd, p + pos, m, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w > 0) {
            pos += (size_t)w;
            last = now_ms();
        } else if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
            k->eof = 1; /* EPIPE, ECONNRESET: the server closed */
        }
    }
}

/* A frame of the target's own, as a client: parsed like the input's. */
static void send_frame(conn *k, int type, int flags, uint32_t sid, const uint8_t *p, size_t len)
{
    uint8_t f[64];
    put_frame_head(f, len, type, flags, sid);
    memcpy(f + 9, p, len);
    client_frame(k, type, flags, sid, p, len);
    send_all(k, f, 9 + len, 9 + len);
}

static void window_update(conn *k, uint32_t sid, uint64_t incr)
{
    uint8_t v[4] = {(uint8_t)(incr >> 24), (uint8_t)(incr >> 16), (uint8_t)(incr >> 8),
                    (uint8_t)incr};
    send_frame(k, F_WINDOW_UPDATE, 0, sid, v, 4);
}

/* Gives back the window the server's DATA used, as a client reading it
 * would. */
static void give_back(conn *k)
{
    k->data_came = 0;
    for (size_t i = 0; i < k->cap && !k->eof; i++) {
        stream *s = &k->st[i];
        if (!s->id || s->srv_ended || s->srv_reset || s->srv_flow == s->given) continue;
        uint64_t d = s->srv_flow - s->given;
        s->given = s->srv_flow;
        window_update(k, s->id, d);
    }
    if (!k->eof && k->srv_flow > k->conn_given) {
        uint64_t d = k->srv_flow - k->conn_given;
        k->conn_given = k->srv_flow;
        window_update(k, 0, d);
    }
}

/* Whether every stream the client ended was answered, reset, or left out
 * by a GOAWAY. */
static int answered(conn *k)
{
    for (size_t i = 0; i < k->cap; i++) {
        const stream *s = &k->st[i];
        if (!s->id || !s->cli_opened || !s->cli_ended || s->cli_reset || s->cli_stale) continue;
        if (s->srv_ended || s->srv_reset || (k->goaway && s->id > k->goaway_last)) continue;
        return 0;
    }
    return 1;
}

/* Acting as a client after the input: completes a frame the input cut
 * short (`tail`, n bytes) and a header block left open, then gives the
 * windows back and sends a PING, if the input's frames allow frames of
 * its own. Returns 1 when everything the client ended was answered within
 * `wait_ms`. */
static int act_as_client(conn *k, const uint8_t *tail, size_t n, int wait_ms)
{
    int own = k->cli_boundary; /* frames of ours would be frames */
    if (n) send_all(k, tail, n, n);
    if (own) {
        static const uint8_t none[1];
        if (k->cli_block && !k->eof)
            send_frame(k, F_CONTINUATION, FL_END_HEADERS, k->cli_block, none, 0);
        if (k->last_init < 65535 && !k->eof) {
            uint8_t v[6] = {0, NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 0, 0, 0xff, 0xff};
            send_frame(k, F_SETTINGS, 0, 0, v, 6);
        }
        give_back(k);
        if (!k->eof) send_frame(k, F_PING, 0, 0, end_ping, 8);
    }
    int64_t end = now_ms() + wait_ms;
    while (!k->eof) {
        if ((!own || k->ping_acked || k->goaway) && answered(k)) return 1;
        int left = (int)(end - now_ms());
        if (left <= 0) return 0;
        struct pollfd pf = {k->fd, POLLIN, 0};
        if (poll(&pf, 1, left) > 0) read_some(k);
        if (own && k->data_came && !k->eof) give_back(k);
    }
    return answered(k);
}

/* shutdown(SHUT_WR), then everything until the server closes. */
static void finish(conn *k)
{
    shutdown(k->fd, SHUT_WR);
    int64_t end = now_ms() + CLOSE_MS;
    while (!k->eof) {
        int left = (int)(end - now_ms());
        FZ_CHECK(left > 0,
                 "the server did not close the connection within %d ms of the client's FIN",
                 CLOSE_MS);
        struct pollfd pf = {k->fd, POLLIN, 0};
        if (poll(&pf, 1, left) > 0) read_some(k);
    }
}

/* A fresh connection, a valid GET /plain: it must be answered 200 with
 * the route's body. */
static void probe(void)
{
    static const char req[] = "\x00\x00\x00\x04\x00\x00\x00\x00\x00" /* SETTINGS, empty */
                              /* HEADERS, END_STREAM | END_HEADERS, stream 1 */
                              "\x00\x00\x0e\x01\x05\x00\x00\x00\x01"
                              "\x82"           /* :method GET (static table 2) */
                              "\x86"           /* :scheme http (static table 6) */
                              "\x04\x06/plain" /* :path (4), literal without indexing */
                              "\x01\x02"
                              "fz"; /* :authority (1), literal without indexing */
    conn k;
    conn_init(&k);
    if (k.verbose) fprintf(stderr, "probe\n");
    dial(&k);
    send_all(&k, (const uint8_t *)preface, sizeof preface - 1, sizeof preface);
    client_frames(&k, (const uint8_t *)req, sizeof req - 1, NULL);
    send_all(&k, (const uint8_t *)req, sizeof req - 1, sizeof req);
    int ok = act_as_client(&k, NULL, 0, CLOSE_MS);
    const stream *s = find(&k, 1, 0);
    FZ_CHECK(ok && s && s->srv_ended && !s->srv_reset,
             "the server no longer answers a GET on a fresh connection within %d ms", CLOSE_MS);
    FZ_CHECK(s->status == 200 && s->srv_data == 13, "GET /plain: status %d, %llu bytes", s->status,
             (unsigned long long)s->srv_data);
    finish(&k);
    conn_free(&k);
    /* every connection closes once its client left: the deadlines are
     * short (no input's connection outlives it for long) */
    int64_t end = now_ms() + CLOSE_MS;
    cshs_counters c;
    for (;;) {
        cshs_server_counters(srv, &c);
        if (c.connections_open == 0 && c.h2_connections == 0) break;
        FZ_CHECK(now_ms() < end,
                 "%llu connections (%llu HTTP/2) still open %d ms after their "
                 "clients left",
                 (unsigned long long)c.connections_open, (unsigned long long)c.h2_connections,
                 CLOSE_MS);
        struct timespec ts = {0, 200000};
        nanosleep(&ts, NULL);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > MAX_INPUT) return 0;
    if (!srv) start_server();
    int setup = data[0];
    size_t piece = (setup & 0x40) ? MAX_INPUT + sizeof preface : 1 + (size_t)(setup & 0x3f);
    int abrupt = (setup & 0x80) != 0;
    data++;
    size--;

    conn k;
    conn_init(&k);
    /* everything the client will send, known before it goes: the bounds */
    static uint8_t tail[TAIL_MAX];
    size_t ntail = client_frames(&k, data, size, abrupt ? NULL : tail);
    uint8_t *out = malloc(sizeof preface - 1 + size);
    FZ_CHECK(out != NULL, "out of memory");
    memcpy(out, preface, sizeof preface - 1);
    if (size) memcpy(out + sizeof preface - 1, data, size);
    dial(&k);
    send_all(&k, out, sizeof preface - 1 + size, piece);
    free(out);
    if (!abrupt && !k.eof) act_as_client(&k, tail, ntail, WAIT_MS);
    finish(&k);
    conn_free(&k);

    if (inputs++ % probe_every == 0) probe();
    return 0;
}
