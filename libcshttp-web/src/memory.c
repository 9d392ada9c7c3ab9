/* The in-memory transport and cshw_memory_serve, a small engine over it.
 *
 * The engine's problem, solved here as a real engine would: csh_parser
 * needs a head in one contiguous buffer, while the transport hands out
 * pieces. Pieces are copied into a growing head buffer (spans are offsets,
 * so growing it by realloc is fine) until the head parses. The head buffer
 * then usually holds some bytes after the head too: the start of the body,
 * or a pipelined request. The context reads the body through a transport
 * that presents those bytes first and then the underlying transport's, so
 * nothing is lost or read twice; what the request leaves over moves to the
 * front of the head buffer for the next parse. */
#include "cshttp/web/memory.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cshttp/parser.h>

#include "context_impl.h"
#include "cshttp/web/error.h"

struct cshw_memory {
    char *in;
    size_t in_len, in_pos, piece, peeked;
    char *out;
    size_t out_len, out_cap, fail_after;
    cshw_transport transport;
};

static int mem_peek(void *io, const char **data, size_t *len)
{
    cshw_memory *m = io;
    size_t left = m->in_len - m->in_pos;
    if (m->piece && left > m->piece) left = m->piece;
    *data = m->in + m->in_pos;
    *len = left;
    m->peeked = left;
    return 0;
}

static void mem_consume(void *io, size_t n)
{
    cshw_memory *m = io;
    if (n > m->peeked) n = m->peeked; /* a caller bug: never run past the input */
    m->in_pos += n;
    m->peeked -= n;
}

static int out_append(cshw_memory *m, const void *data, size_t len)
{
    size_t room = m->fail_after == SIZE_MAX ? SIZE_MAX : m->fail_after - m->out_len;
    size_t n = len < room ? len : room;
    if (!m->out || m->out_len + n > m->out_cap) {
        size_t cap = m->out_cap ? m->out_cap : 4096;
        while (cap < m->out_len + n) cap *= 2;
        char *p = realloc(m->out, cap + 1); /* and a NUL after the bytes */
        if (!p) return -ENOMEM;
        m->out = p;
        m->out_cap = cap;
    }
    if (n) memcpy(m->out + m->out_len, data, n);
    m->out_len += n;
    m->out[m->out_len] = '\0';
    return n == len ? 0 : -EPIPE; /* the client stopped reading */
}

static int mem_write(void *io, const void *data, size_t len)
{
    return out_append(io, data, len);
}

static int mem_send_file(void *io, int fd, off_t offset, size_t len)
{
    char buf[8192];
    while (len > 0) {
        ssize_t n = pread(fd, buf, len < sizeof buf ? len : sizeof buf, offset);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return -errno;
        if (n == 0) return -EIO;
        int r = out_append(io, buf, (size_t)n);
        if (r < 0) return r;
        offset += n;
        len -= (size_t)n;
    }
    return 0;
}

static const cshw_transport_ops mem_ops = {
    mem_peek, mem_consume, mem_write, NULL, mem_send_file,
};

cshw_memory *cshw_memory_new(const char *input, size_t len, size_t piece)
{
    cshw_memory *m = calloc(1, sizeof *m);
    if (!m) return NULL;
    m->in = malloc(len ? len : 1);
    if (!m->in) {
        free(m);
        return NULL;
    }
    if (len) memcpy(m->in, input, len);
    m->in_len = len;
    m->piece = piece;
    m->fail_after = SIZE_MAX;
    m->transport.ops = &mem_ops;
    m->transport.io = m;
    m->transport.remote_addr = "192.0.2.1"; /* RFC 5737 documentation address */
    m->transport.remote_port = 49152;
    return m;
}

void cshw_memory_free(cshw_memory *m)
{
    if (!m) return;
    free(m->in);
    free(m->out);
    free(m);
}

const cshw_transport *cshw_memory_transport(cshw_memory *m)
{
    return &m->transport;
}

const char *cshw_memory_output(const cshw_memory *m, size_t *len)
{
    if (len) *len = m->out_len;
    return m->out ? m->out : "";
}

void cshw_memory_fail_writes_after(cshw_memory *m, size_t after)
{
    m->fail_after = after;
}

/* ---- the engine ---- */

typedef struct engine {
    const cshw_transport *under;
    char *buf;        /* the head buffer */
    size_t len, cap;  /* bytes in it */
    size_t pos;       /* bytes of it already handed out (the head, body bytes) */
    int under_peeked; /* the last peek came from the underlying transport */
    cshw_transport ops_view;
    cshw_transport_ops ops;
} engine;

/* The context's transport: the head buffer's leftover first. */
static int eng_peek(void *io, const char **data, size_t *len)
{
    engine *e = io;
    if (e->pos < e->len) {
        *data = e->buf + e->pos;
        *len = e->len - e->pos;
        e->under_peeked = 0;
        return 0;
    }
    e->under_peeked = 1;
    return e->under->ops->peek(e->under->io, data, len);
}

static void eng_consume(void *io, size_t n)
{
    engine *e = io;
    if (e->under_peeked) {
        e->under->ops->consume(e->under->io, n);
        return;
    }
    size_t left = e->len - e->pos;
    e->pos += n < left ? n : left;
}

static int eng_write(void *io, const void *data, size_t len)
{
    engine *e = io;
    return e->under->ops->write(e->under->io, data, len);
}

static int eng_flush(void *io)
{
    engine *e = io;
    return e->under->ops->flush ? e->under->ops->flush(e->under->io) : 0;
}

static int eng_send_file(void *io, int fd, off_t offset, size_t len)
{
    engine *e = io;
    return e->under->ops->send_file(e->under->io, fd, offset, len);
}

/* Appends what the underlying transport has: 1, 0 at the end of input, or
 * a negative cshw error. */
static int eng_fill(engine *e)
{
    const char *data;
    size_t n;
    int r = e->under->ops->peek(e->under->io, &data, &n);
    if (r < 0) return r;
    if (n == 0) return 0;
    if (e->len + n > e->cap) {
        size_t cap = e->cap ? e->cap : 1024;
        while (cap < e->len + n) cap *= 2;
        char *p = realloc(e->buf, cap);
        if (!p) return -ENOMEM;
        e->buf = p;
        e->cap = cap;
    }
    memcpy(e->buf + e->len, data, n);
    e->len += n;
    e->under->ops->consume(e->under->io, n);
    return 1;
}

int cshw_memory_serve(cshw_memory *m, const cshw_options *options, cshw_handler handler)
{
    cshw_options o;
    if (options)
        o = *options;
    else
        cshw_options_init(&o);
    int r = cshw_options_check(&o, NULL);
    if (r < 0) return r;
    if (!m || !handler) return -EINVAL;

    engine e;
    memset(&e, 0, sizeof e);
    e.under = &m->transport;
    e.ops.peek = eng_peek;
    e.ops.consume = eng_consume;
    e.ops.write = eng_write;
    e.ops.flush = eng_flush;
    e.ops.send_file = m->transport.ops->send_file ? eng_send_file : NULL;
    e.ops_view = m->transport;
    e.ops_view.ops = &e.ops;
    e.ops_view.io = &e;

    csh_limits limits;
    csh_limits_init(&limits);
    csh_header *fields = malloc(limits.max_fields * sizeof *fields);
    cshw_context *ctx = cshw_context_new(&o);
    if (!fields || !ctx) {
        free(fields);
        cshw_context_free(ctx);
        return -ENOMEM;
    }
    csh_parser p;
    csh_parser_init(&p, CSH_REQUEST, fields, limits.max_fields, &limits, 0);

    int served = 0;
    for (;;) {
        /* what the last request left (a pipelined head) moves to the front */
        if (e.buf && e.pos) memmove(e.buf, e.buf + e.pos, e.len - e.pos);
        e.len -= e.pos;
        e.pos = 0;
        csh_parser_reset(&p);
        int pr;
        for (;;) {
            pr = csh_parser_execute(&p, e.buf ? e.buf : "", e.len);
            if (pr != CSH_INCOMPLETE) break;
            if (eng_fill(&e) <= 0) break;
        }
        /* the input ended (between requests, or inside a head: nothing to
         * answer) or failed */
        if (pr == CSH_INCOMPLETE) break;
        if (pr < 0) {
            /* a head that does not parse: its status, and the connection
             * ends (RFC 9112 §2.2: the framing cannot be trusted) */
            cshw__write_raw_error(&m->transport, &o, csh_error_status(pr));
            break;
        }
        e.pos = p.msg.head_length;
        r = cshw_context_begin(ctx, e.buf, &p.msg, &e.ops_view);
        if (r < 0) break;
        r = cshw_context_run(ctx, handler);
        served++;
        if (r <= 0) break;
    }
    cshw_context_free(ctx);
    free(fields);
    free(e.buf);
    return served;
}
