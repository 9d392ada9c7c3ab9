/* An HTTP/2 connection (RFC 9113): the session of libnghttp2 on the
 * connection's socket, its deadlines and limits, and its streams' pipes
 * (h2_impl.h has the picture, h2_stream.c the streams).
 *
 * Input is read until the socket says EAGAIN and handed to the session,
 * which calls back for each stream's fields and DATA; the pipes of the
 * streams whose heads came open once the input is taken, so a stream
 * reset in the same read (rapid reset, CVE-2023-44487) costs no
 * connection. Output is what the session has to send, gathered into
 * writes, while the socket takes it: once the socket is full the session
 * is asked for nothing more, so its streams' answers wait in their pipes
 * (each bounded) and the stream's connection behind waits for its pipe
 * as for a slow client.
 *
 * Limits: libnghttp2's own for SETTINGS and PING acknowledgements queued
 * and CONTINUATION frames per block; here, the streams at once
 * (h2_max_streams), the streams a client resets (reset_flood), the
 * header list (max_head: 431), empty DATA frames in a row, and the idle,
 * send and stop deadlines. */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "h2_impl.h"
#include "sock_io.h"

#define READ_TURNS 64     /* socket reads in a row before others go first */
#define EMPTY_DATA_MAX 64 /* DATA frames in a row without a byte: ENHANCE_YOUR_CALM */
#define READ_CHUNK 16384u
#define WRITE_GATHER 16384u /* frames gathered into one write */

static const char preface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

void cshs__h2_reset(cshs_h2 *h, int32_t id, uint32_t code)
{
    if (!h->ses) return;
    nghttp2_submit_rst_stream(h->ses, NGHTTP2_FLAG_NONE, id, code);
}

/* The connection ends with GOAWAY and `code`. */
static void terminate(cshs_h2 *h, uint32_t code)
{
    nghttp2_session_terminate_session(h->ses, code);
}

static int quick(cshs_h2 *h, const h2_stream *st);

static h2_stream *stream_of(cshs_h2 *h, int32_t id)
{
    return h->ses ? nghttp2_session_get_stream_user_data(h->ses, id) : NULL;
}

static void unqueue(cshs_h2 *h, h2_stream *st)
{
    if (!st->queued) return;
    h2_stream **p = &h->ready;
    h->ready_tail = NULL;
    while (*p) {
        if (*p == st) {
            *p = st->next_ready;
            continue;
        }
        h->ready_tail = *p;
        p = &(*p)->next_ready;
    }
    st->queued = 0;
}

/* ---- the session's callbacks ---- */

static int on_begin_headers(nghttp2_session *ses, const nghttp2_frame *f, void *arg)
{
    cshs_h2 *h = arg;
    if (f->hd.type != NGHTTP2_HEADERS || f->headers.cat != NGHTTP2_HCAT_REQUEST) return 0;
    unsigned slot = 0;
    while (slot < h->nslots && h->slots[slot]) slot++;
    unsigned max = h->c->srv->o.h2_max_streams;
    if (slot == h->nslots && h->nslots < max) { /* the slots grow with the streams */
        unsigned n = h->nslots * 2 < max ? h->nslots * 2 : max;
        h2_stream **b = realloc(h->slots, n * sizeof *b);
        if (b) {
            memset(b + h->nslots, 0, (n - h->nslots) * sizeof *b);
            h->slots = b;
            h->nslots = n;
        }
    }
    h2_stream *st = slot < h->nslots ? cshs__h2_stream_new(h, f->hd.stream_id, slot) : NULL;
    if (!st) { /* the session keeps max_streams; this is memory */
        cshs__h2_reset(h, f->hd.stream_id, NGHTTP2_REFUSED_STREAM);
        return 0;
    }
    h->slots[slot] = st;
    h->nopen++;
    nghttp2_session_set_stream_user_data(ses, f->hd.stream_id, st);
    return 0;
}

/* A field libnghttp2 found against RFC 9113 §8.2 (an uppercase name, a
 * connection-specific field, a bad value): the stream is refused at its
 * head's end, where it is logged, rather than reset by the session
 * without a word. */
static int on_invalid_header(nghttp2_session *ses, const nghttp2_frame *f, const uint8_t *name,
                             size_t nlen, const uint8_t *value, size_t vlen, uint8_t flags,
                             void *arg)
{
    (void)ses;
    (void)name;
    (void)nlen;
    (void)value;
    (void)vlen;
    (void)flags;
    h2_stream *st = stream_of(arg, f->hd.stream_id);
    if (st) st->bad = 1;
    return 0;
}

static int on_header(nghttp2_session *ses, const nghttp2_frame *f, const uint8_t *name, size_t nlen,
                     const uint8_t *value, size_t vlen, uint8_t flags, void *arg)
{
    (void)ses;
    (void)flags;
    h2_stream *st = stream_of(arg, f->hd.stream_id);
    if (!st || f->hd.type != NGHTTP2_HEADERS) return 0;
    cshs__h2_stream_field(st, name, nlen, value, vlen, f->headers.cat == NGHTTP2_HCAT_HEADERS);
    return 0;
}

/* A refused stream's line in the access log, as the exchange logs a
 * request it refuses: what the stream named of itself ("-" for the
 * rest), and the status an HTTP/1.1 request would have got. */
static void log_refusal(cshs_h2 *h, const h2_stream *st, int status)
{
    cshs_server *s = h->c->srv;
    if (!s->log_fn) return;
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    cshs_request_log e;
    memset(&e, 0, sizeof e);
    e.size = sizeof e;
    e.remote_addr = h->c->remote;
    const char *path = h2_pseudo(st, P_PATH), *authority = h2_pseudo(st, P_AUTHORITY);
    e.method = h2_pseudo(st, P_METHOD) ? h2_pseudo(st, P_METHOD) : "-";
    e.target = path ? path : authority ? authority : "-";
    e.protocol = "HTTP/2.0";
    e.status = status;
    e.time_unix_ms = (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
    s->log_fn(s->log_user, &e);
}

/* A stream's head is complete: refused (a stream error, logged as the
 * 400 of HTTP/1.1), answered 431, or queued for its pipe. */
static void head_done(cshs_h2 *h, h2_stream *st)
{
    cshs_server *s = h->c->srv;
    st->headed = 1;
    if (st->too_big) {
        /* RFC 6585 §5, as an HTTP/1.1 head past max_head is answered */
        static const nghttp2_nv nv[] = {
            {(uint8_t *)":status", (uint8_t *)"431", 7, 3, NGHTTP2_NV_FLAG_NONE}};
        atomic_fetch_add(&s->e_parse, 1);
        nghttp2_submit_response(h->ses, st->id, nv, 1, NULL);
        log_refusal(h, st, 431);
        return;
    }
    if (cshs__h2_stream_head(st) < 0) {
        atomic_fetch_add(&s->e_parse, 1);
        cshs__h2_reset(h, st->id, NGHTTP2_PROTOCOL_ERROR); /* logged as it goes */
        return;
    }
    st->quick = (char)quick(h, st);
    st->queued = 1;
    st->next_ready = NULL;
    if (h->ready_tail)
        h->ready_tail->next_ready = st;
    else
        h->ready = st;
    h->ready_tail = st;
}

/* Rapid reset (CVE-2023-44487): a token bucket of h2_max_resets streams
 * reset by the client, given back at a thirtieth of it a second; empty,
 * the connection ends with ENHANCE_YOUR_CALM (RFC 9113 §7). 1 then. */
static int reset_flood(cshs_h2 *h)
{
    uint64_t burst = h->c->srv->o.h2_max_resets;
    int64_t now = cshs__now_ms();
    double tokens = h->reset_tokens + (double)(now - h->reset_ms) * (double)burst / 30000.0;
    h->reset_ms = now;
    h->reset_tokens = tokens > (double)burst ? (double)burst : tokens;
    if (h->reset_tokens < 1.0) return 1;
    h->reset_tokens -= 1.0;
    return 0;
}

static int on_frame_recv(nghttp2_session *ses, const nghttp2_frame *f, void *arg)
{
    (void)ses;
    cshs_h2 *h = arg;
    if (f->hd.type == NGHTTP2_RST_STREAM && reset_flood(h)) {
        terminate(h, NGHTTP2_ENHANCE_YOUR_CALM);
        return 0;
    }
    if (f->hd.type == NGHTTP2_DATA && f->hd.length == 0 &&
        !(f->hd.flags & NGHTTP2_FLAG_END_STREAM)) {
        /* empty DATA frames cost the server a frame each and the client
         * nothing: a flood (CVE-2019-9518) */
        if (++h->empty_data > EMPTY_DATA_MAX) {
            terminate(h, NGHTTP2_ENHANCE_YOUR_CALM);
            return 0;
        }
    } else if (f->hd.type == NGHTTP2_DATA) {
        h->empty_data = 0;
    }
    if (f->hd.type != NGHTTP2_DATA && f->hd.type != NGHTTP2_HEADERS) return 0;
    h2_stream *st = stream_of(h, f->hd.stream_id);
    if (!st) return 0;
    int end = (f->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0;
    if (f->hd.type == NGHTTP2_HEADERS && f->headers.cat == NGHTTP2_HCAT_REQUEST) {
        st->in_ended = (char)end;
        head_done(h, st);
        return 0;
    }
    if (!end || st->in_ended || st->too_big) return 0;
    if (st->bad) { /* a trailer field refused */
        cshs__h2_reset(h, st->id, NGHTTP2_PROTOCOL_ERROR);
        return 0;
    }
    if (cshs__h2_stream_end(st) < 0) cshs__h2_reset(h, st->id, NGHTTP2_INTERNAL_ERROR);
    cshs__h2_stream_write(st);
    return 0;
}

static int on_data(nghttp2_session *ses, uint8_t flags, int32_t id, const uint8_t *data, size_t len,
                   void *arg)
{
    (void)flags;
    h2_stream *st = stream_of(arg, id);
    if (!st || st->too_big || st->bad) {
        /* nobody takes these bytes: the window is given back at once */
        nghttp2_session_consume(ses, id, len);
        return 0;
    }
    if (cshs__h2_stream_data(st, data, len) < 0) {
        cshs__h2_reset(arg, id, NGHTTP2_INTERNAL_ERROR);
        return 0;
    }
    cshs__h2_stream_write(st);
    return 0;
}

/* Refusals sent, the session's and the engine's, are counted. The
 * answer went out whole while the request's body still comes (a 413, an
 * answer that did not read it): what is left of a body of known length
 * up to linger_bytes is read and dropped, as the lingering close of
 * HTTP/1.1 would, so that the client finishes its request and reads the
 * answer; beyond it, or without a length, RFC 9113 §8.1 lets the server
 * end the stream with NO_ERROR. */
static int on_frame_send(nghttp2_session *ses, const nghttp2_frame *f, void *arg)
{
    (void)ses;
    cshs_h2 *h = arg;
    if ((f->hd.type == NGHTTP2_RST_STREAM && f->rst_stream.error_code != NGHTTP2_NO_ERROR) ||
        (f->hd.type == NGHTTP2_GOAWAY && f->goaway.error_code != NGHTTP2_NO_ERROR))
        atomic_fetch_add(&h->c->srv->e_h2, 1);
    if (f->hd.type == NGHTTP2_RST_STREAM && f->rst_stream.error_code == NGHTTP2_PROTOCOL_ERROR) {
        /* a request refused before any handler saw it, by the session
         * or by the engine's checks: its access log line */
        h2_stream *bad = stream_of(h, f->hd.stream_id);
        if (bad && !bad->opened) log_refusal(h, bad, 400);
    }
    if ((f->hd.type != NGHTTP2_DATA && f->hd.type != NGHTTP2_HEADERS) ||
        !(f->hd.flags & NGHTTP2_FLAG_END_STREAM))
        return 0;
    h2_stream *st = stream_of(arg, f->hd.stream_id);
    /* a tunnel's half-close: its connection still reads the client's */
    if (!st || st->in_ended || (st->raw_answer && st->pipe)) return 0;
    uint64_t left = st->length >= 0 && (uint64_t)st->length > st->received
                        ? (uint64_t)st->length - st->received
                        : 0;
    if (st->length < 0 || left > h->c->srv->o.linger_bytes)
        cshs__h2_reset(arg, st->id, NGHTTP2_NO_ERROR);
    return 0;
}

static int on_stream_close(nghttp2_session *ses, int32_t id, uint32_t code, void *arg)
{
    (void)code;
    cshs_h2 *h = arg;
    h2_stream *st = nghttp2_session_get_stream_user_data(ses, id);
    if (!st) return 0;
    nghttp2_session_set_stream_user_data(ses, id, NULL);
    unqueue(h, st);
    h->slots[st->slot] = NULL;
    h->nopen--;
    /* the stream's connection sees its input end: a handler that waits
     * (deferred, the proxy's) is told its client left */
    cshs__h2_stream_free(st);
    return 0;
}

static nghttp2_session_callbacks *callbacks(void)
{
    nghttp2_session_callbacks *cb;
    if (nghttp2_session_callbacks_new(&cb) != 0) return NULL;
    nghttp2_session_callbacks_set_on_begin_headers_callback(cb, on_begin_headers);
    nghttp2_session_callbacks_set_on_header_callback(cb, on_header);
    nghttp2_session_callbacks_set_on_invalid_header_callback(cb, on_invalid_header);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cb, on_frame_recv);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, on_data);
    nghttp2_session_callbacks_set_on_frame_send_callback(cb, on_frame_send);
    nghttp2_session_callbacks_set_on_stream_close_callback(cb, on_stream_close);
    return cb;
}

/* ---- the connection ---- */

int cshs__h2_want(cshs_conn *c)
{
    if (!c->srv->o.http2) return 0;
    if (c->ssl) return cshs__tls_alpn(c) == 2;
    /* h2c with prior knowledge (RFC 9113 §3.3): the preface's first bytes
     * are no HTTP/1.1 request line, so the first bytes decide */
    char b[sizeof preface - 1];
    ssize_t n = cshs__recv(c->fd, b, sizeof b, MSG_PEEK | MSG_DONTWAIT);
    if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? -EAGAIN : 0;
    if (n == 0 || memcmp(b, preface, (size_t)n) != 0) return 0;
    if ((size_t)n == sizeof b) return 1;
    /* a part of it, and the input ended: HTTP/1.1 answers what came */
    return c->rdhup ? 0 : -EAGAIN;
}

static void end_conn(cshs_worker *w, cshs_conn *c)
{
    cshs__conn_end(w, c, 1);
}

/* The earliest time an answer's bytes began to wait for their stream's
 * window (flow control, RFC 9113 §5.2) without a byte going out since,
 * 0 when none waits. */
static int64_t stream_waiting_since(const cshs_h2 *h)
{
    int64_t first = 0;
    for (unsigned i = 0; i < h->nslots; i++) {
        const h2_stream *st = h->slots[i];
        if (st && st->body_len > st->body_pos && (!first || st->data_ms < first))
            first = st->data_ms;
    }
    return first;
}

/* Parked: for the socket to take the rest of the output (send_timeout_ms),
 * idle with no stream open (keepalive_timeout_ms), or for the streams. */
static void park(cshs_conn *c)
{
    cshs_server *s = c->srv;
    cshs_h2 *h = c->h2;
    int64_t now = cshs__now_ms();
    if (c->out || c->io_wait == POLLOUT) {
        if (cshs__conn_want_out(c) < 0) {
            cshs__park(c, now, EXP_NOWAIT);
            return;
        }
    }
    int64_t waits = stream_waiting_since(h);
    if (c->out) {
        cshs__park(c, s->o.send_timeout_ms ? c->last_io_ms + (int64_t)s->o.send_timeout_ms : 0,
                   EXP_SEND);
    } else if (waits && s->o.send_timeout_ms) {
        /* a stream's answer waits for the client's window */
        cshs__park(c, waits + (int64_t)s->o.send_timeout_ms, EXP_SEND);
    } else if (h->nopen == 0 && s->o.keepalive_timeout_ms) {
        cshs__park(c, now + (int64_t)s->o.keepalive_timeout_ms, EXP_IDLE);
    } else {
        cshs__park(c, 0, EXP_NONE);
    }
}

/* The pipes of the streams whose heads came: at once for a request the
 * application says never waits, else while fewer than h2_max_handlers of
 * the connection's streams wait for their answers (the rest keep their
 * order; their DATA wait within the stream's window). */
static void open_ready(cshs_h2 *h)
{
    unsigned max = h->c->srv->o.h2_max_handlers;
    h2_stream **p = &h->ready;
    h->ready_tail = NULL;
    while (*p && h->ses) {
        h2_stream *st = *p;
        if (!st->quick && h->handlers >= max) {
            h->ready_tail = st;
            p = &st->next_ready;
            continue;
        }
        *p = st->next_ready;
        st->queued = 0;
        if (!st->quick) {
            st->counted = 1;
            h->handlers++;
        }
        if (cshs__h2_stream_open(st) < 0)
            cshs__h2_reset(h, st->id, NGHTTP2_REFUSED_STREAM);
        else
            atomic_fetch_add(&h->c->srv->c_h2_streams, 1);
    }
}

/* Whether the application says the stream's handler never waits
 * (cshs_server_set_quick): its HTTP/1.1 head, parsed. */
static int quick(cshs_h2 *h, const h2_stream *st)
{
    cshs_server *s = h->c->srv;
    if (!s->quick_fn) return 0;
    csh_header f[64];
    csh_parser p;
    csh_parser_init(&p, CSH_REQUEST, f, sizeof f / sizeof f[0], s->o.limits, 0);
    if (csh_parser_execute(&p, st->out, st->out_len) != CSH_OK) return 0;
    return s->quick_fn(s->quick_arg, st->out, &p.msg);
}

/* What the session has to send, while the socket takes it; then the
 * streams whose bodies were emptied take more of their pipes. 0, or < 0
 * when the connection must end. */
static int flush(cshs_h2 *h)
{
    cshs_conn *c = h->c;
    /* the session's frames come one at a time: gathered, they go in one
     * write (and one TLS record) rather than one each */
    char gather[WRITE_GATHER];
    for (int round = 0; round < 16 && h->ses; round++) {
        size_t held = 0;
        while (!c->out) {
            const uint8_t *data;
            ssize_t n = nghttp2_session_mem_send(h->ses, &data);
            if (n < 0) return -EPROTO;
            size_t len = (size_t)n;
            int large = len > sizeof gather / 2; /* goes as it is, after what is held */
            if (held && (len == 0 || large || held + len > sizeof gather)) {
                int r = cshs__out_write(c, gather, held);
                if (r < 0) return r;
                held = 0;
            }
            if (len == 0) break;
            if (large) {
                int r = cshs__out_write(c, data, len);
                if (r < 0) return r;
                continue;
            }
            memcpy(gather + held, data, len);
            held += len;
        }
        if (held) {
            int r = cshs__out_write(c, gather, held);
            if (r < 0) return r;
        }
        int again = 0;
        for (unsigned i = 0; i < h->nslots; i++) {
            h2_stream *st = h->slots[i];
            if (!st || !st->refill) continue;
            st->refill = 0;
            if (cshs__h2_stream_read(st) < 0) cshs__h2_reset(h, st->id, NGHTTP2_INTERNAL_ERROR);
            again = 1;
        }
        if (!again || c->out) return 0;
    }
    /* more to send than these rounds took: the rest after the batch,
     * others first */
    if (h->ses && nghttp2_session_want_write(h->ses)) cshs__conn_post(c);
    return 0;
}

/* The streams a client that ended its input still waits for: those
 * whose request came whole (head and body: END_STREAM) and whose answer
 * has not ended. A request cut short never ends, as an HTTP/1.1 request
 * cut by the FIN, and an answer sent whole only waits for the rest of a
 * body that will not come. */
static unsigned headed_streams(const cshs_h2 *h)
{
    unsigned n = 0;
    for (unsigned i = 0; i < h->nslots; i++) {
        const h2_stream *st = h->slots[i];
        if (st && st->headed && st->in_ended &&
            nghttp2_session_get_stream_local_close(h->ses, st->id) == 0)
            n++;
    }
    return n;
}

/* After input or a stream's progress: open what came, send, and end or
 * park the connection. */
static void settle(cshs_worker *w, cshs_conn *c)
{
    cshs_h2 *h = c->h2;
    open_ready(h);
    if (flush(h) < 0) {
        cshs__conn_close(w, c);
        return;
    }
    if ((!nghttp2_session_want_read(h->ses) || (h->eof && headed_streams(h) == 0)) &&
        !nghttp2_session_want_write(h->ses)) {
        /* GOAWAY sent and every stream done, a connection error sent, or
         * the client's input ended and its streams are answered */
        end_conn(w, c);
        return;
    }
    park(c);
}

void cshs__h2_start(cshs_worker *w, cshs_conn *c)
{
    cshs_server *s = c->srv;
    cshs_h2 *h = calloc(1, sizeof *h);
    nghttp2_session_callbacks *cb = callbacks();
    nghttp2_option *opt = NULL;
    /* a few slots at first: an idle connection holds little */
    unsigned nslots = s->o.h2_max_streams < 8 ? s->o.h2_max_streams : 8;
    if (h) h->slots = calloc(nslots, sizeof *h->slots);
    if (!h || !h->slots || !cb || nghttp2_option_new(&opt) != 0) goto fail;
    h->c = c;
    h->nslots = nslots;
    h->reset_tokens = (double)s->o.h2_max_resets;
    h->reset_ms = cshs__now_ms();
    /* the window is given back as the streams' connections take the bytes */
    nghttp2_option_set_no_auto_window_update(opt, 1);
    nghttp2_option_set_max_continuations(opt, s->o.h2_max_continuations);
    /* the engine's own bucket (reset_flood) ends the connection first, with
     * the right code; libnghttp2's, twice as large, stays as a backstop */
    nghttp2_option_set_stream_reset_rate_limit(opt, s->o.h2_max_resets * 2,
                                               s->o.h2_max_resets * 2 / 30);
    if (nghttp2_session_server_new2(&h->ses, cb, h, opt) != 0) goto fail;
    nghttp2_option_del(opt);
    nghttp2_session_callbacks_del(cb);
    c->h2 = h;
    c->phase = CP_H2;
    atomic_fetch_add(&s->c_h2_open, 1);
    atomic_fetch_add(&s->c_h2_total, 1);
    nghttp2_settings_entry iv[] = {
        {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, s->o.h2_max_streams},
        {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, (uint32_t)s->o.limits->max_head},
        /* RFC 8441 §3: WebSockets (and any Upgrade protocol) over a stream */
        {NGHTTP2_SETTINGS_ENABLE_CONNECT_PROTOCOL, 1},
    };
    nghttp2_submit_settings(h->ses, NGHTTP2_FLAG_NONE, iv, sizeof iv / sizeof iv[0]);
    if (c->ssl && !cshs__tls_h2_adequate(c)) {
        /* RFC 9113 §9.2.1: a TLS version or cipher below the bar */
        atomic_fetch_add(&s->e_tls, 1);
        terminate(h, NGHTTP2_INADEQUATE_SECURITY);
        settle(w, c);
        return;
    }
    cshs__h2_event(w, c);
    return;
fail:
    if (opt) nghttp2_option_del(opt);
    if (cb) nghttp2_session_callbacks_del(cb);
    if (h) free(h->slots);
    free(h);
    cshs__conn_close(w, c);
}

void cshs__h2_event(cshs_worker *w, cshs_conn *c)
{
    cshs_server *s = c->srv;
    cshs_h2 *h = c->h2;
    if (c->out && cshs__out_flush(c) < 0) {
        cshs__conn_close(w, c);
        return;
    }
    char buf[READ_CHUNK];
    for (int turn = 0;; turn++) {
        if (turn == READ_TURNS) {
            cshs__conn_post(c); /* others go first; it reads on after the batch */
            break;
        }
        if (!nghttp2_session_want_read(h->ses) || h->eof) break;
        ssize_t n = c->io->read(c, buf, sizeof buf);
        if (n == -EAGAIN) break;
        if (n == 0 && headed_streams(h) > 0) {
            /* the client is done sending (a half-close): the streams whose
             * requests came are answered, then the connection ends (settle) */
            h->eof = 1;
            break;
        }
        if (n <= 0) { /* the client left (or the socket failed) */
            if (n < 0) atomic_fetch_add(&s->e_io, 1);
            cshs__conn_close(w, c);
            return;
        }
        atomic_fetch_add_explicit(&c->loop->k.bytes_in, (uint64_t)n, memory_order_relaxed);
        c->last_io_ms = cshs__now_ms();
        ssize_t r = nghttp2_session_mem_recv(h->ses, (const uint8_t *)buf, (size_t)n);
        if (r < 0) {
            /* a connection error (libnghttp2 queues no GOAWAY for these):
             * a flood of frames to acknowledge, or of CONTINUATION frames,
             * is the client's excess (RFC 9113 §7, ENHANCE_YOUR_CALM), the
             * rest its error */
            h->failed = 1;
            terminate(h, r == NGHTTP2_ERR_FLOODED || r == NGHTTP2_ERR_TOO_MANY_CONTINUATIONS
                             ? NGHTTP2_ENHANCE_YOUR_CALM
                             : NGHTTP2_PROTOCOL_ERROR);
            break;
        }
    }
    settle(w, c);
}

void cshs__h2_take_kicked(cshs_worker *w, cshs_loop *l)
{
    pthread_mutex_lock(&l->mu);
    h2_pipe *list = l->h2_kicked;
    l->h2_kicked = NULL;
    atomic_store_explicit(&l->nkicked, 0, memory_order_relaxed);
    pthread_mutex_unlock(&l->mu);
    h2_pipe *fifo = NULL;
    while (list) { /* kicked last first: taken in the order they came */
        h2_pipe *p = list;
        list = p->next_kicked;
        p->next_kicked = fifo;
        fifo = p;
    }
    /* every stream's news first (nothing here closes a stream), then each
     * session sends once */
    cshs_h2 *dirty = NULL;
    while (fifo) {
        h2_pipe *p = fifo;
        fifo = p->next_kicked;
        pthread_mutex_lock(&p->mu);
        p->kicked = 0;
        h2_stream *st = p->st;
        cshs_h2 *h = p->h;
        pthread_mutex_unlock(&p->mu);
        if (st && h && h->ses) {
            cshs__h2_stream_kicked(st);
            if (!h->dirty) {
                h->dirty = 1;
                h->next_dirty = dirty;
                dirty = h;
            }
        }
        cshs__h2_pipe_unref(p);
    }
    while (dirty) {
        cshs_h2 *h = dirty;
        dirty = h->next_dirty;
        h->dirty = 0;
        cshs_conn *c = h->c;
        if (c->closed || c->phase != CP_H2 || !h->ses) continue;
        cshs__unpark(c);
        settle(w, c);
    }
}

void cshs__h2_drop_kicked(cshs_loop *l)
{
    pthread_mutex_lock(&l->mu);
    h2_pipe *list = l->h2_kicked;
    l->h2_kicked = NULL;
    atomic_store(&l->nkicked, 0);
    pthread_mutex_unlock(&l->mu);
    while (list) {
        h2_pipe *p = list;
        list = p->next_kicked;
        cshs__h2_pipe_unref(p);
    }
}

void cshs__h2_sweep(cshs_worker *w, cshs_conn *c, int stop)
{
    cshs_server *s = c->srv;
    cshs_h2 *h = c->h2;
    cshs__unpark(c);
    if (!stop && c->expire_kind == EXP_SEND && !c->out && !atomic_load(&s->forced)) {
        /* streams whose client opened no window for send_timeout_ms are
         * given up (the socket itself takes bytes) */
        int64_t now = cshs__now_ms();
        for (unsigned i = 0; i < h->nslots; i++) {
            h2_stream *st = h->slots[i];
            if (!st || st->body_len == st->body_pos ||
                st->data_ms + (int64_t)s->o.send_timeout_ms > now)
                continue;
            atomic_fetch_add(&s->e_send, 1);
            cshs__h2_reset(h, st->id, NGHTTP2_CANCEL);
            st->body_pos = st->body_len; /* it waits no more */
        }
        settle(w, c);
        return;
    }
    if (atomic_load(&s->forced) || (!stop && c->expire_kind != EXP_IDLE)) {
        cshs__conn_close(w, c);
        return;
    }
    /* idle, or a graceful stop: GOAWAY (RFC 9113 §6.8) names the last
     * stream taken; those in flight finish, within stop_timeout_ms */
    if (!h->goaway) {
        h->goaway = 1;
        nghttp2_submit_goaway(h->ses, NGHTTP2_FLAG_NONE,
                              nghttp2_session_get_last_proc_stream_id(h->ses), NGHTTP2_NO_ERROR,
                              NULL, 0);
    }
    if (h->nopen == 0) {
        if (flush(h) < 0 || !c->out) {
            cshs__conn_close(w, c);
            return;
        }
        end_conn(w, c);
        return;
    }
    settle(w, c);
}

void cshs__h2_close(cshs_conn *c)
{
    cshs_h2 *h = c->h2;
    if (!h || !h->ses) return;
    for (unsigned i = 0; i < h->nslots; i++) {
        if (!h->slots[i]) continue;
        cshs__h2_stream_free(h->slots[i]);
        h->slots[i] = NULL;
    }
    h->ready = h->ready_tail = NULL;
    h->nopen = 0;
    nghttp2_session_del(h->ses);
    h->ses = NULL;
    atomic_fetch_sub(&c->srv->c_h2_open, 1);
}

void cshs__h2_free(cshs_conn *c)
{
    if (!c->h2) return;
    free(c->h2->slots);
    free(c->h2);
    c->h2 = NULL;
}
