/* The exchange: parse a head, validate the request, read the body before
 * the handler (memory, then a temporary file), run, end, report, and on to
 * the next pipelined request. exchange.h has the contract.
 *
 * One buffer per connection holds, in order:
 *
 *   [ head | stored body (decoded) | raw input not yet processed ]
 *   0      head_len                 raw                          len
 *
 * The head stays where it is while its request lives (the context's spans
 * point into it). Body bytes are decoded (chunked) or taken as they are
 * (Content-Length) from the raw part and moved down to the end of the
 * stored body, so a small body costs no allocation and a pipelined request
 * after it stays in place. Past options.body_buffer the stored body moves
 * to a temporary file and the buffer keeps only the head and raw input.
 * When the request ends, what is left of the raw input (the next request)
 * moves to the front. */
#define _GNU_SOURCE /* O_TMPFILE */
#include "cshttp/web/exchange.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cshttp/body.h>
#include <cshttp/grammar.h>

#include "context_impl.h"
#include "cshttp/web/error.h"
#include "options_impl.h"
#include "cshttp_internal/sized.h"
#include "transport_impl.h"
#include "validate.h"

#define READ_ROOM 4096u    /* the least room a read is given */
#define FILE_WINDOW 16384u /* a stored body is read back from its file by this much */
#define LINE_MAX_REPORT 1024u

struct cshw_exchange {
    cshw_exchange_config cfg; /* the caller's, read by its size */
    cshw_options web;
    csh_parser p;
    csh_header *fields;
    char *buf;
    size_t cap, len;
    size_t raw;      /* first raw byte not yet processed */
    size_t head_len; /* the head of the request in progress, 0 before it parsed */
    cshw_exchange_phase phase;
    int streaming;  /* the handler reads the body from the connection */
    int short_read; /* the last read did not fill its room */

    /* the body being stored */
    csh_body body;
    size_t body_mem;   /* decoded bytes kept after the head */
    int body_fd;       /* temporary file, -1: none */
    uint64_t body_len; /* decoded bytes stored in all */
    uint64_t raw_in;   /* body bytes as received */
    uint64_t temp_counted; /* of them, in the file, told to cfg.temp_bytes */

    /* the stored body as the context reads it */
    uint64_t body_rd;
    char *win;
    size_t win_len, win_pos;
    int under_peeked; /* streaming: the last peek came from the transport */

    /* the request in progress, for its report */
    int64_t start_us, start_unix_ms;
    uint64_t bytes_out;
    uint64_t head_out; /* of bytes_out, heads: the rest is the body's */
    const cshw_transport *under;
    cshw_transport view;
    csh_message msg_view;

    /* a handler that answers later (cshw_exchange_defer): its context,
     * from the handler's start to the end of its last continuation */
    cshw_context *running;
    int in_app;   /* the handler or a continuation is running now */
    int deferred; /* it returned deferred: cshw_exchange_resume goes on */
    int switched; /* the request switched protocols: buf[raw .. len) is the new one's */

    /* a stored chunked body's trailer fields: the decoder's spans (made
     * with the first chunked body) and the bytes they refer to, copied
     * when the body ends and given to the context when it begins */
    csh_header *trailer_spans;
    char *trailer_bytes;
    size_t ntrailers;
};

static int64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* For the log's timestamp: the coarse clock (the last tick) is enough. */
static int64_t unix_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME_COARSE, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

CSH__SIZED_NO_TAIL_PADDING(cshw_exchange_config, temp_bytes);
CSH__SIZED_NO_TAIL_PADDING(cshw_exchange_outcome, body_bytes_out);
CSH__SIZED_NO_TAIL_PADDING(cshw_transport, remote_port);
CSH__SIZED_NO_TAIL_PADDING(cshw_transport_ops, queued);

void cshw_exchange_config_init_sized(cshw_exchange_config *config, size_t size)
{
    static const cshw_exchange_config defaults = {.size = sizeof(cshw_exchange_config)};
    csh__sized_init(config, size, &defaults, sizeof defaults);
}

/* The caller's config read by its size (exchange.h): 0, or -1 when its
 * size is below CSHW_EXCHANGE_CONFIG_SIZE_0_3. */
static int config_copy(cshw_exchange_config *dst, const cshw_exchange_config *src)
{
    memset(dst, 0, sizeof *dst);
    dst->size = sizeof *dst;
    return src ? csh__sized_copy(dst, sizeof *dst, src, CSHW_EXCHANGE_CONFIG_SIZE_0_3) : 0;
}

cshw_exchange *cshw_exchange_new(const cshw_exchange_config *cfg)
{
    cshw_exchange_config copy;
    if (!cfg || config_copy(&copy, cfg) < 0 || (!copy.handler && !copy.router)) return NULL;
    const cshw_exchange_config *config = &copy;
    cshw_exchange *x = calloc(1, sizeof *x);
    if (!x) return NULL;
    x->cfg = copy;
    /* The limits stay the caller's (they outlive the exchange, as the
     * config does): libcshttp reads them by their size, so a limit newer
     * than this library reaches the parser too. */
    csh_limits defaults;
    csh_limits_init(&defaults);
    size_t nf = defaults.max_fields;
    if (config->limits) {
        if (config->limits->size < CSH_LIMITS_SIZE_0_2) {
            free(x);
            return NULL;
        }
        nf = config->limits->max_fields ? config->limits->max_fields : 1;
    }
    if (cshw__options_copy(&x->web, config->web) < 0 || nf > SIZE_MAX / sizeof(csh_header)) {
        free(x);
        return NULL;
    }
    x->fields = malloc(nf * sizeof(csh_header));
    if (!x->fields) {
        free(x);
        return NULL;
    }
    csh_parser_init(&x->p, CSH_REQUEST, x->fields, nf, config->limits, 0);
    /* one body reader for the connection, reset for each body */
    csh_body_init(&x->body, NULL, config->limits, 0, NULL, 0);
    x->body_fd = -1;
    return x;
}

static void drop_body(cshw_exchange *x)
{
    if (x->temp_counted) x->cfg.temp_bytes(x->cfg.arg, -(int64_t)x->temp_counted);
    x->temp_counted = 0;
    if (x->body_fd >= 0) close(x->body_fd);
    x->body_fd = -1;
    x->body_mem = 0;
    x->body_len = x->raw_in = x->body_rd = 0;
    x->win_len = x->win_pos = 0;
}

void cshw_exchange_free(cshw_exchange *x)
{
    if (!x) return;
    drop_body(x);
    free(x->trailer_spans);
    free(x->trailer_bytes);
    free(x->fields);
    free(x->buf);
    free(x->win);
    free(x);
}

void cshw_exchange_reset(cshw_exchange *x)
{
    drop_body(x);
    csh_parser_reset(&x->p);
    x->len = x->raw = x->head_len = 0;
    x->phase = CSHW_PHASE_IDLE;
    x->streaming = x->short_read = 0;
    x->running = NULL;
    x->in_app = x->deferred = x->switched = 0;
}

cshw_exchange_phase cshw_exchange_phase_of(const cshw_exchange *x)
{
    return x->phase;
}

size_t cshw_exchange_buffered(const cshw_exchange *x)
{
    return x->len - x->raw;
}

void cshw_exchange_recheck(cshw_exchange *x)
{
    x->short_read = 0;
}

int cshw_exchange_streams(const cshw_exchange *x)
{
    return x->streaming;
}

uint64_t cshw_exchange_body_received(const cshw_exchange *x)
{
    return x->raw_in;
}

int64_t cshw_exchange_body_start_us(const cshw_exchange *x)
{
    return x->start_us;
}

/* ---- input ---- */

/* At least `want` bytes of room after len, growing the buffer (spans are
 * offsets: moving it is fine while no request runs). */
static int ensure_room(cshw_exchange *x, size_t want)
{
    if (x->cap - x->len >= want) return 0;
    size_t cap = x->cap ? x->cap : 8192;
    while (cap - x->len < want) cap *= 2;
    char *b = realloc(x->buf, cap);
    if (!b) return -ENOMEM;
    x->buf = b;
    x->cap = cap;
    return 0;
}

/* Reads once: > 0 bytes, 0 at the end of input, -EAGAIN, -errno. */
static ssize_t fill(cshw_exchange *x, const cshw_transport *t)
{
    if (ensure_room(x, READ_ROOM) < 0) return -ENOMEM;
    size_t room = x->cap - x->len;
    ssize_t n;
    if (t->ops->read) {
        n = t->ops->read(t->io, x->buf + x->len, room);
    } else {
        const char *data;
        size_t avail;
        int r = t->ops->peek(t->io, &data, &avail);
        if (r < 0) return r;
        if (avail > room) avail = room;
        memcpy(x->buf + x->len, data, avail);
        t->ops->consume(t->io, avail);
        n = (ssize_t)avail;
    }
    if (n > 0) {
        if (x->phase == CSHW_PHASE_IDLE) {
            x->phase = CSHW_PHASE_HEAD;
            x->start_us = now_us();
            x->start_unix_ms = unix_ms();
        }
        x->len += (size_t)n;
        x->short_read = (size_t)n < room;
    }
    return n;
}

/* The request line as received: up to the first CR or LF. */
static void request_line(const cshw_exchange *x, const char **line, size_t *n)
{
    size_t end = x->len < LINE_MAX_REPORT ? x->len : LINE_MAX_REPORT;
    /* RFC 9112 §2.2: empty lines before a request line are ignored */
    size_t start = 0;
    while (start < end && (x->buf[start] == '\r' || x->buf[start] == '\n')) start++;
    /* the line ends at its CR (a bare LF is an error the parser reports) */
    const char *cr = start < end ? memchr(x->buf + start, '\r', end - start) : NULL;
    const char *lf = start < end
                         ? memchr(x->buf + start, '\n', (cr ? (size_t)(cr - x->buf) : end) - start)
                         : NULL;
    size_t stop = lf ? (size_t)(lf - x->buf) : cr ? (size_t)(cr - x->buf) : end;
    *line = x->buf ? x->buf + start : "";
    *n = stop - start;
}

static void report(cshw_exchange *x, const cshw_transport *t, int status, int error,
                   const csh_message *msg, uint64_t bytes_in, int keep)
{
    if (!x->cfg.report) return;
    cshw_exchange_outcome o;
    memset(&o, 0, sizeof o);
    o.size = sizeof o;
    o.status = status;
    o.error = error;
    o.head = msg ? x->buf : NULL;
    o.msg = msg;
    request_line(x, &o.line, &o.line_len);
    o.transport = t;
    o.bytes_in = bytes_in;
    o.bytes_out = x->bytes_out;
    o.body_bytes_out = x->bytes_out > x->head_out ? x->bytes_out - x->head_out : 0;
    o.keep_alive = keep;
    o.start_unix_ms = x->start_unix_ms ? x->start_unix_ms : unix_ms();
    o.duration_us = x->start_us ? now_us() - x->start_us : 0;
    x->cfg.report(x->cfg.arg, &o);
}

/* The exchange's own answer (no handler ran): the error page, the report,
 * and the connection closes (RFC 9112 §2.2, §9.6: the framing of what
 * follows cannot be trusted). */
static int answer(cshw_exchange *x, const cshw_transport *t, int status, int error,
                  const char *detail)
{
    uint64_t written = 0, head = 0;
    int head_only = x->head_len && x->p.msg.method == CSH_METHOD_HEAD;
    cshw__write_raw_error(t, &x->web, status, detail, head_only, &written, &head);
    x->bytes_out = written;
    x->head_out = head;
    uint64_t in = x->head_len ? x->head_len + x->raw_in : x->len;
    report(x, t, status, error, x->head_len ? &x->p.msg : NULL, in, 0);
    x->phase = CSHW_PHASE_CLOSED;
    drop_body(x);
    return CSHW_EXCHANGE_CLOSE;
}

/* Whether the ready request's body is left on the connection for its
 * handler (streamed) rather than read and stored first: the owner's
 * predicate says, or, for a router with no handler, its route (a body
 * no route takes is never stored: cshw_router_body_of). */
static int body_streams(const cshw_exchange *x, const csh_message *m)
{
    if (x->cfg.streams) return x->cfg.streams(x->cfg.arg, x->buf, m);
    if (x->cfg.router && !x->cfg.handler)
        return cshw_router_body_of(x->cfg.router, x->buf, m) != CSHW_ROUTE_BODY_WHOLE;
    return 0;
}

static int open_temp(const cshw_exchange *x)
{
    int fd = open(x->web.temp_dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (fd >= 0) return fd;
    /* a file system without O_TMPFILE: a named file, unlinked at once */
    char path[4096];
    int n = snprintf(path, sizeof path, "%s/cshttp-body-XXXXXX", x->web.temp_dir);
    if (n < 0 || (size_t)n >= sizeof path) return -ENAMETOOLONG;
    fd = mkstemp(path);
    if (fd < 0) return -errno;
    unlink(path);
    return fd;
}

static int write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0) return -errno;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Keeps n decoded body bytes that start at buf + at (at >= the end of the
 * stored part): in memory while they fit in body_buffer, else in the file. */
static int store(cshw_exchange *x, size_t at, size_t n)
{
    size_t mem_end = x->head_len + x->body_mem;
    if (x->body_fd < 0 && x->body_len + n <= x->web.body_buffer) {
        if (at != mem_end) memmove(x->buf + mem_end, x->buf + at, n);
        x->body_mem += n;
    } else {
        /* the server's bound on all bodies' files, asked first */
        uint64_t k = n + (x->body_fd < 0 ? x->body_mem : 0);
        if (x->cfg.temp_bytes) {
            if (x->cfg.temp_bytes(x->cfg.arg, (int64_t)k) != 0) return CSHW_E_TEMP_FULL;
            x->temp_counted += k;
        }
        if (x->body_fd < 0) {
            int fd = open_temp(x);
            if (fd < 0) return fd;
            x->body_fd = fd;
            int r = write_all(fd, x->buf + x->head_len, x->body_mem);
            if (r < 0) return r;
            x->body_mem = 0;
        }
        int r = write_all(x->body_fd, x->buf + at, n);
        if (r < 0) return r;
    }
    x->body_len += n;
    return 0;
}

/* Drops processed raw bytes between the stored body and the unprocessed
 * rest, so the buffer does not grow with a body that goes to a file. */
static void compact(cshw_exchange *x)
{
    size_t mem_end = x->head_len + x->body_mem;
    if (x->raw > mem_end) {
        memmove(x->buf + mem_end, x->buf + x->raw, x->len - x->raw);
        x->len -= x->raw - mem_end;
        x->raw = mem_end;
    }
}

/* A chunked body ended in `section` (its last chunk and trailer section,
 * `len` bytes): the trailer fields' bytes are copied, as the raw input
 * they are in will be reused. */
static int keep_trailers(cshw_exchange *x, const char *section, size_t len)
{
    if (x->body.kind != CSH_BODY_CHUNKED || !x->body.chunked.num_trailers) return 0;
    char *b = realloc(x->trailer_bytes, len ? len : 1);
    if (!b) return -ENOMEM;
    memcpy(b, section, len);
    x->trailer_bytes = b;
    x->ntrailers = x->body.chunked.num_trailers;
    return 0;
}

/* Takes what the raw input has of the body. 1 when the body is complete, 0
 * when more is needed, or the exchange's answer (CLOSE) for a bad body. */
static int take_body(cshw_exchange *x, const cshw_transport *t)
{
    for (;;) {
        /* called on no bytes too: a body that has ended says so then */
        size_t used = 0;
        csh_span span;
        int r = csh_body_next(&x->body, x->buf + x->raw, x->len - x->raw, &used, &span);
        size_t at = x->raw;
        x->raw += used;
        x->raw_in += used;
        if (r == CSH_DATA) {
            uint64_t max = x->web.max_request_body;
            /* RFC 9110 §15.5.14: a chunked body that crosses the limit */
            if (max && x->body_len + span.len > max)
                return answer(x, t, 413, CSHW_E_BODY_LIMIT, cshw_error_message(CSHW_E_BODY_LIMIT));
            int e = store(x, at + span.off, span.len);
            if (e == CSHW_E_TEMP_FULL)
                return answer(x, t, 503, e, cshw_error_message(CSHW_E_TEMP_FULL));
            if (e < 0) return answer(x, t, 500, e, "the request body could not be stored");
            /* a Content-Length body's end is known with its last bytes;
             * otherwise, every byte used, only new bytes can say more
             * (body.h) */
            if (csh_body_done(&x->body)) {
                compact(x);
                return 1;
            }
            if (x->raw == x->len) break;
            continue;
        }
        if (r == CSH_OK) {
            if (keep_trailers(x, x->buf + at, used) < 0)
                return answer(x, t, 500, -ENOMEM, "out of memory");
            compact(x);
            return 1;
        }
        if (r == CSH_INCOMPLETE) break;
        /* RFC 9112 §7.1: a malformed chunked body is a 400 */
        int code = csh_error_status(r) == 413 ? CSHW_E_BODY_TOO_LARGE : CSHW_E_BAD_BODY;
        return answer(x, t, cshw_error_status(code), code, cshw_error_message(code));
    }
    compact(x);
    return 0;
}

/* The head parsed: validate, then decide how the body is read. */
static int head_done(cshw_exchange *x, const cshw_transport *t)
{
    const csh_message *m = &x->p.msg;
    x->head_len = m->head_length;
    x->raw = m->head_length;
    x->body_mem = 0;
    x->body_len = x->raw_in = x->body_rd = 0;
    x->bytes_out = x->head_out = 0;
    x->ntrailers = 0;
    int v = cshw__request_validate(x->buf, m);
    if (v < 0) return answer(x, t, cshw_error_status(v), v, cshw_error_message(v));
    /* RFC 9110 §10.1.1: an expectation other than 100-continue is 417,
     * before any body; RFC 9112 §6.1: a transfer coding other than chunked
     * would reach the handler still encoded: 501 */
    if (m->flags & CSH_MSG_EXPECT_OTHER)
        return answer(x, t, 417, CSHW_E_EXPECTATION_FAILED,
                      cshw_error_message(CSHW_E_EXPECTATION_FAILED));
    if (m->flags & CSH_MSG_TE_OTHER_CODINGS)
        return answer(x, t, 501, CSHW_E_TRANSFER_CODING,
                      cshw_error_message(CSHW_E_TRANSFER_CODING));
    uint64_t max = x->web.max_request_body;
    /* RFC 9110 §15.5.14: refused before any body byte is read */
    if (m->body == CSH_BODY_LENGTH && max && m->content_length > max)
        return answer(x, t, 413, CSHW_E_BODY_LIMIT, cshw_error_message(CSHW_E_BODY_LIMIT));
    /* the predicate's value, which the owner may read (cshw_exchange_streams) */
    x->streaming = m->body != CSH_BODY_NONE ? body_streams(x, m) : 0;
    if (m->body == CSH_BODY_NONE || x->streaming) {
        x->phase = CSHW_PHASE_READY;
        return CSHW_EXCHANGE_READY;
    }
    if (m->body == CSH_BODY_CHUNKED && !x->trailer_spans) {
        /* the decoder is made again once, now with room for trailers */
        x->trailer_spans = malloc(CSHW__TRAILERS * sizeof *x->trailer_spans);
        if (!x->trailer_spans) return answer(x, t, 500, -ENOMEM, "out of memory");
        csh_body_init(&x->body, NULL, x->cfg.limits, 0, x->trailer_spans, CSHW__TRAILERS);
    }
    csh_body_reset(&x->body, m); /* prepared once, with the limits, in cshw_exchange_new */
    /* RFC 9110 §10.1.1: the client waits for 100 before it sends the body;
     * it is read here, before the handler, so it is invited here. Sent even
     * when body bytes came with the head (the RFC lets a server omit it
     * then): what is answered never depends on how the bytes arrived. */
    if (m->flags & CSH_MSG_EXPECT_CONTINUE) {
        static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
        int r = t->ops->write(t->io, cont, sizeof cont - 1);
        if (r < 0) return r;
        x->bytes_out += sizeof cont - 1;
        x->head_out += sizeof cont - 1;
    }
    x->phase = CSHW_PHASE_BODY;
    return 0;
}

int cshw_exchange_input(cshw_exchange *x, const cshw_transport *t)
{
    if (!x || !cshw__transport_ok(t)) return -EINVAL;
    for (;;) {
        switch (x->phase) {
        case CSHW_PHASE_READY:
            return CSHW_EXCHANGE_READY;
        case CSHW_PHASE_CLOSED:
            return CSHW_EXCHANGE_CLOSE;
        case CSHW_PHASE_IDLE:
        case CSHW_PHASE_HEAD: {
            int pr = x->len ? csh_parser_execute(&x->p, x->buf, x->len) : CSH_INCOMPLETE;
            if (pr == CSH_OK) {
                int r = head_done(x, t);
                if (r != 0) return r;
                continue;
            }
            if (pr < 0) {
                x->head_len = 0;
                return answer(x, t, csh_error_status(pr), pr, csh_error_message(pr));
            }
            break;
        }
        case CSHW_PHASE_BODY: {
            int r = take_body(x, t);
            if (r == CSHW_EXCHANGE_CLOSE) return r;
            if (r == 1) {
                x->phase = CSHW_PHASE_READY;
                return CSHW_EXCHANGE_READY;
            }
            break;
        }
        }
        /* more input is needed: after a read that did not fill its room the
         * socket is most likely empty, and the owner's readiness wait says
         * so at no cost */
        if (x->short_read) {
            x->short_read = 0;
            return CSHW_EXCHANGE_WANT_INPUT;
        }
        ssize_t n = fill(x, t);
        if (n == -EAGAIN) return CSHW_EXCHANGE_WANT_INPUT;
        if (n < 0) {
            x->phase = CSHW_PHASE_CLOSED;
            return (int)n;
        }
        if (n == 0) {
            /* the input ended: inside a body, the request cannot be
             * answered usefully (the client is gone); inside a head or
             * between requests, there is nothing to answer */
            if (x->phase == CSHW_PHASE_BODY)
                report(x, t, 0, CSHW_E_BODY_TRUNCATED, &x->p.msg, x->head_len + x->raw_in, 0);
            x->phase = CSHW_PHASE_CLOSED;
            drop_body(x);
            return CSHW_EXCHANGE_CLOSE;
        }
    }
}

int cshw_exchange_expire(cshw_exchange *x, const cshw_transport *t)
{
    if (!x || !cshw__transport_ok(t)) return -EINVAL;
    if (x->phase == CSHW_PHASE_HEAD || x->phase == CSHW_PHASE_BODY)
        return answer(x, t, 408, -ETIMEDOUT, "the request did not arrive in time");
    x->phase = CSHW_PHASE_CLOSED;
    return CSHW_EXCHANGE_CLOSE;
}

const csh_message *cshw_exchange_request(const cshw_exchange *x, const char **head)
{
    if (!x || x->phase != CSHW_PHASE_READY || x->deferred) return NULL;
    if (head) *head = x->buf;
    return &x->p.msg;
}

int cshw_exchange_decline(cshw_exchange *x, const cshw_transport *t, int error)
{
    if (!x || !cshw__transport_ok(t)) return -EINVAL;
    int status = cshw_error_status(error);
    if (status < 400 || status > 599) return -EINVAL;
    if (x->phase != CSHW_PHASE_READY || x->deferred) return CSHW_E_NOT_ACTIVE;
    return answer(x, t, status, error, cshw_error_message(error));
}

int cshw_exchange_refuse(const cshw_exchange_config *cfg, const cshw_transport *t, int status,
                         const char *detail)
{
    uint64_t written = 0;
    if (!cshw__transport_ok(t)) return -EINVAL;
    cshw_exchange_config copy; /* the caller's, read by its size */
    if (config_copy(&copy, cfg) < 0) return CSHW_E_INVALID_OPTION;
    const cshw_exchange_config *config = &copy;
    cshw_options web; /* the caller's, read by its size */
    if (cshw__options_copy(&web, config->web) < 0) return CSHW_E_INVALID_OPTION;
    uint64_t head = 0;
    int r = cshw__write_raw_error(t, &web, status, detail, 0, &written, &head);
    if (config->report) {
        cshw_exchange_outcome o;
        memset(&o, 0, sizeof o);
        o.size = sizeof o;
        o.status = status;
        o.line = "";
        o.transport = t;
        o.bytes_out = written;
        o.body_bytes_out = written - head;
        o.start_unix_ms = unix_ms();
        config->report(config->arg, &o);
    }
    return r;
}

/* ---- the context's transport during run ---- */

/* The stored body: from memory, or from the file through a window. */
static int stored_peek(void *io, const char **data, size_t *len)
{
    cshw_exchange *x = io;
    if (x->body_fd < 0) {
        *data = x->buf + x->head_len + x->body_rd;
        *len = x->body_mem - (size_t)x->body_rd;
        return 0;
    }
    if (x->win_pos == x->win_len) {
        if (!x->win && !(x->win = malloc(FILE_WINDOW))) return -ENOMEM;
        uint64_t left = x->body_len - x->body_rd;
        size_t want = left < FILE_WINDOW ? (size_t)left : FILE_WINDOW;
        ssize_t n;
        do n = pread(x->body_fd, x->win, want, (off_t)x->body_rd);
        while (n < 0 && errno == EINTR);
        if (n < 0) return -errno;
        x->win_len = (size_t)n;
        x->win_pos = 0;
    }
    *data = x->win + x->win_pos;
    *len = x->win_len - x->win_pos;
    return 0;
}

static void stored_consume(void *io, size_t n)
{
    cshw_exchange *x = io;
    if (x->body_fd >= 0) {
        if (n > x->win_len - x->win_pos) n = x->win_len - x->win_pos;
        x->win_pos += n;
    } else if (n > x->body_mem - x->body_rd) {
        n = x->body_mem - (size_t)x->body_rd;
    }
    x->body_rd += n;
}

/* Streaming: the raw bytes already read first, then the transport's. */
static int stream_peek(void *io, const char **data, size_t *len)
{
    cshw_exchange *x = io;
    if (x->raw < x->len) {
        *data = x->buf + x->raw;
        *len = x->len - x->raw;
        x->under_peeked = 0;
        return 0;
    }
    x->under_peeked = 1;
    return x->under->ops->peek(x->under->io, data, len);
}

static void stream_consume(void *io, size_t n)
{
    cshw_exchange *x = io;
    x->raw_in += n;
    if (x->under_peeked) {
        x->under->ops->consume(x->under->io, n);
        return;
    }
    size_t left = x->len - x->raw;
    x->raw += n < left ? n : left;
}

static int view_write(void *io, const void *data, size_t len)
{
    cshw_exchange *x = io;
    int r = x->under->ops->write(x->under->io, data, len);
    if (r == 0) x->bytes_out += len;
    return r;
}

static int view_flush(void *io)
{
    cshw_exchange *x = io;
    return x->under->ops->flush ? x->under->ops->flush(x->under->io) : 0;
}

static int view_send_file(void *io, int fd, off_t offset, size_t len)
{
    cshw_exchange *x = io;
    int r = x->under->ops->send_file(x->under->io, fd, offset, len);
    if (r == 0) x->bytes_out += len;
    return r;
}

static uint64_t view_queued(void *io)
{
    cshw_exchange *x = io;
    return cshw__transport_queued(x->under);
}

static const cshw_transport_ops stored_ops = {sizeof(cshw_transport_ops),
                                              stored_peek,
                                              stored_consume,
                                              view_write,
                                              view_flush,
                                              view_send_file,
                                              NULL,
                                              view_queued};
static const cshw_transport_ops stored_ops_nofile = {sizeof(cshw_transport_ops),
                                                     stored_peek,
                                                     stored_consume,
                                                     view_write,
                                                     view_flush,
                                                     NULL,
                                                     NULL,
                                                     view_queued};
static const cshw_transport_ops stream_ops = {sizeof(cshw_transport_ops),
                                              stream_peek,
                                              stream_consume,
                                              view_write,
                                              view_flush,
                                              view_send_file,
                                              NULL,
                                              view_queued};
static const cshw_transport_ops stream_ops_nofile = {sizeof(cshw_transport_ops),
                                                     stream_peek,
                                                     stream_consume,
                                                     view_write,
                                                     view_flush,
                                                     NULL,
                                                     NULL,
                                                     view_queued};

/* The application, then: a stop that began meanwhile closes the
 * connection after this response (it says so with Connection: close). */
static void run_app(cshw_context *ctx)
{
    const cshw_exchange_config *cfg = &ctx->exchange->cfg;
    if (cfg->handler)
        cfg->handler(ctx);
    else
        cshw_router_dispatch(cfg->router, ctx);
    if (!ctx->deferred && cfg->closing && cfg->closing(cfg->arg))
        cshw_response_close_connection(&ctx->res);
}

/* The end of a request whose handler (and continuations) returned: r from
 * cshw_context_end (1: keep the connection). Reports it and moves on to
 * the next pipelined request. */
static int run_end(cshw_exchange *x, const cshw_transport *t, cshw_context *ctx, int r);

int cshw_exchange_run(cshw_exchange *x, cshw_context *ctx, const cshw_transport *t)
{
    if (!x || !ctx || !cshw__transport_ok(t)) return -EINVAL;
    if (x->phase != CSHW_PHASE_READY || x->deferred) return CSHW_E_NOT_ACTIVE;
    const csh_message *m = &x->p.msg;
    int has_file = t->ops->send_file != NULL;
    x->under = t;
    cshw__transport_copy(&x->view, t);
    x->view.io = x;
    x->msg_view = *m;
    if (x->streaming) {
        x->view.ops = has_file ? &stream_ops : &stream_ops_nofile;
    } else {
        x->view.ops = has_file ? &stored_ops : &stored_ops_nofile;
        /* the context sees the stored, decoded body: its length is known,
         * and 100 Continue was already sent */
        x->msg_view.body = x->body_len ? CSH_BODY_LENGTH : CSH_BODY_NONE;
        x->msg_view.content_length = x->body_len;
        x->msg_view.flags &= ~(unsigned)CSH_MSG_EXPECT_CONTINUE;
    }
    int r = cshw_context_begin(ctx, x->buf, &x->msg_view, &x->view);
    if (r == 0 && x->ntrailers)
        r = cshw__request_keep_trailers(&ctx->req, x->trailer_bytes, x->trailer_spans,
                                        x->ntrailers);
    if (r < 0) {
        /* out of memory before the handler: a 500 the exchange can still write */
        uint64_t written = 0, head = 0;
        cshw__write_raw_error(t, &x->web, 500, NULL, m->method == CSH_METHOD_HEAD, &written, &head);
        x->bytes_out += written;
        x->head_out += head;
        report(x, t, 500, r, m, x->head_len + x->raw_in, 0);
        drop_body(x);
        x->phase = CSHW_PHASE_CLOSED;
        return r;
    }
    ctx->body_stored = !x->streaming;
    ctx->exchange = x;
    x->running = ctx;
    x->in_app = 1;
    r = cshw__context_run(ctx, run_app);
    x->in_app = 0;
    if (r == CSHW__CONTEXT_DEFERRED) {
        x->deferred = 1;
        return CSHW_EXCHANGE_DEFERRED;
    }
    return run_end(x, t, ctx, r);
}

/* RFC 9110 §7.8: a protocol the client listed in Upgrade (with
 * "upgrade" in Connection, which the parser checked: CSH_MSG_UPGRADE),
 * compared as a token, case-insensitively; a name without a version also
 * matches the client's name/version. */
static int upgrade_asked(const char *head, const csh_message *m, const char *protocol)
{
    if (!(m->flags & CSH_MSG_UPGRADE)) return 0;
    const char *value = head + m->upgrade.off;
    size_t plen = strlen(protocol);
    csh_list l;
    csh_span e;
    csh_list_init(&l, value, m->upgrade.len);
    while (csh_list_next(&l, &e)) {
        const char *p = value + e.off;
        if (e.len >= plen && csh_mem_ieq(p, protocol, plen) &&
            (e.len == plen || (p[plen] == '/' && !memchr(protocol, '/', plen))))
            return 1;
    }
    return 0;
}

/* protocol-name ["/" protocol-version], each a token (RFC 9110 §7.8) */
static int valid_protocol(const char *protocol)
{
    size_t n = strlen(protocol);
    const char *slash = memchr(protocol, '/', n);
    if (!slash) return n > 0 && csh_is_token(protocol, n);
    size_t name = (size_t)(slash - protocol);
    return name > 0 && csh_is_token(protocol, name) && n - name - 1 > 0 &&
           csh_is_token(slash + 1, n - name - 1);
}

int cshw_exchange_switch(cshw_exchange *x, const char *protocol)
{
    if (!x || !protocol || !valid_protocol(protocol)) return -EINVAL;
    if (!x->in_app || !x->running) return CSHW_E_NOT_ACTIVE;
    cshw_context *ctx = x->running;
    const csh_message *m = &x->p.msg;
    if (m->version_minor < 1 || !upgrade_asked(x->buf, m, protocol))
        return CSHW_E_UPGRADE_NOT_ASKED;
    /* a body left on the connection would be read as the new protocol's
     * first bytes (a stored one was read whole) */
    if (x->streaming && m->body != CSH_BODY_NONE && !ctx->req.body_done)
        return CSHW_E_UPGRADE_BODY;
    return cshw__response_switch(&ctx->res, protocol);
}

size_t cshw_exchange_leftover(const cshw_exchange *x, const char **data)
{
    if (!x || !x->switched) {
        if (data) *data = NULL;
        return 0;
    }
    if (data) *data = x->buf + x->raw;
    return x->len - x->raw;
}

int cshw_request_body_whole(cshw_request *req, const char **data, int *fd, uint64_t *len)
{
    if (!req || !data || !fd || !len) return -EINVAL;
    cshw_context *ctx = req->ctx;
    if (!ctx->active) return CSHW_E_NOT_ACTIVE;
    const cshw_exchange *x = ctx->exchange;
    if (!x || !ctx->body_stored) return 0;
    *len = x->body_len;
    *fd = x->body_fd;
    *data = x->body_fd < 0 ? x->buf + x->head_len : NULL;
    return 1;
}

int cshw_exchange_defer(cshw_exchange *x)
{
    if (!x || !x->in_app || !x->running) return CSHW_E_NOT_ACTIVE;
    x->running->deferred = 1;
    return 0;
}

int cshw_exchange_resume(cshw_exchange *x, const cshw_transport *t,
                         void (*fn)(cshw_context *ctx, void *arg), void *arg)
{
    if (!x || !fn || !cshw__transport_ok(t)) return -EINVAL;
    if (!x->deferred || !x->running) return CSHW_E_NOT_ACTIVE;
    cshw_context *ctx = x->running;
    x->deferred = 0;
    x->under = t; /* the view's writes go to the connection as it is now */
    ctx->deferred = 0;
    cshw_context *saved = cshw_context_current();
    cshw_context_set_current(ctx);
    x->in_app = 1;
    fn(ctx, arg);
    x->in_app = 0;
    cshw_context_set_current(saved);
    if (ctx->deferred) {
        x->deferred = 1;
        return CSHW_EXCHANGE_DEFERRED;
    }
    const cshw_exchange_config *cfg = &x->cfg;
    if (cfg->closing && cfg->closing(cfg->arg)) cshw_response_close_connection(&ctx->res);
    return run_end(x, t, ctx, cshw_context_end(ctx));
}

static int run_end(cshw_exchange *x, const cshw_transport *t, cshw_context *ctx, int r)
{
    const csh_message *m = &x->p.msg;
    ctx->exchange = NULL;
    x->running = NULL;
    int status = ctx->res.headers_sent || ctx->res.finished ? ctx->res.status : 0;
    x->head_out += ctx->res.head_bytes;
    if (ctx->res.error) status = ctx->res.headers_sent ? ctx->res.status : 0;
    int error = ctx->req.body_error;
    int keep = r == 1;
    /* a streamed body the handler did not finish leaves the connection's
     * framing unknown */
    report(x, t, status, error, m, x->head_len + x->raw_in, keep);
    drop_body(x);
    if (keep && ctx->res.switched) {
        /* what follows the request is the new protocol's: the owner
         * takes it (cshw_exchange_leftover) with the connection */
        x->switched = 1;
        x->phase = CSHW_PHASE_CLOSED;
        return CSHW_EXCHANGE_SWITCHED;
    }
    if (!keep) {
        x->phase = CSHW_PHASE_CLOSED;
        return r < 0 ? r : CSHW_EXCHANGE_CLOSE;
    }
    /* the next request (pipelined, RFC 9112 §9.3.2) moves to the front */
    size_t left = x->len - x->raw;
    if (left) memmove(x->buf, x->buf + x->raw, left);
    x->len = left;
    x->raw = x->head_len = 0;
    x->streaming = 0;
    csh_parser_reset(&x->p);
    if (left) {
        x->phase = CSHW_PHASE_HEAD;
        x->start_us = now_us();
        x->start_unix_ms = unix_ms();
    } else {
        x->phase = CSHW_PHASE_IDLE;
        x->start_us = x->start_unix_ms = 0;
    }
    return CSHW_EXCHANGE_NEXT;
}
