/* The in-memory transport and cshw_memory_serve, which drives it through
 * the exchange (exchange.c) exactly as the engine drives a socket: the same
 * parse, validation, body reading, error pages and pipelining. */
#include "cshttp/web/memory.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cshttp/web/error.h"
#include "options_impl.h"
#include "cshttp/web/exchange.h"

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

/* Never waits: what is left of the input, at most a piece; 0 at its end. */
static ssize_t mem_read(void *io, void *buf, size_t cap)
{
    cshw_memory *m = io;
    size_t left = m->in_len - m->in_pos;
    if (m->piece && left > m->piece) left = m->piece;
    if (left > cap) left = cap;
    memcpy(buf, m->in + m->in_pos, left);
    m->in_pos += left;
    m->peeked = 0;
    return (ssize_t)left;
}

static const cshw_transport_ops mem_ops = {
    sizeof(cshw_transport_ops),
    mem_peek,
    mem_consume,
    mem_write,
    NULL,
    mem_send_file,
    mem_read,
    NULL, /* everything written is taken at once */
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
    m->transport.size = sizeof m->transport;
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

/* ---- the driver ---- */

int cshw_memory_serve(cshw_memory *m, const cshw_options *options, cshw_handler handler)
{
    cshw_options o;
    int r = cshw__options_copy(&o, options);
    if (r == 0) r = cshw_options_check(&o, NULL);
    if (r < 0) return r;
    if (!m || !handler) return -EINVAL;

    cshw_exchange_config cfg;
    cshw_exchange_config_init(&cfg);
    cfg.web = &o;
    cfg.handler = handler;
    cshw_exchange *x = cshw_exchange_new(&cfg);
    cshw_context *ctx = cshw_context_new(&o);
    if (!x || !ctx) {
        cshw_exchange_free(x);
        cshw_context_free(ctx);
        return -ENOMEM;
    }
    int served = 0;
    for (;;) {
        r = cshw_exchange_input(x, &m->transport);
        /* the memory input never makes anyone wait: ask again */
        if (r == CSHW_EXCHANGE_WANT_INPUT) continue;
        if (r != CSHW_EXCHANGE_READY) break;
        r = cshw_exchange_run(x, ctx, &m->transport);
        served++;
        if (r != CSHW_EXCHANGE_NEXT) break;
    }
    cshw_context_free(ctx);
    cshw_exchange_free(x);
    return served;
}
