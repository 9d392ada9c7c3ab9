/* The transport the exchange writes and reads through (cshw_transport):
 * a connection's socket, for a handler on the loop or on another thread. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "server_impl.h"

#define STREAM_BUF 16384u /* a streaming route's read buffer */

/* ---- the transport the exchange uses ---- */

/* Bytes a streaming route's handler read past its body, not yet taken. */
int cshs__stream_left(const cshs_conn *c)
{
    return c->sb && c->sb->pos < c->sb->len;
}

static ssize_t t_read(void *io, void *buf, size_t cap)
{
    cshs_conn *c = io;
    /* a streaming route's handler read past its body: those bytes first */
    if (cshs__stream_left(c)) {
        cshs_stream_buf *b = c->sb;
        size_t n = b->len - b->pos < cap ? b->len - b->pos : cap;
        memcpy(buf, b->data + b->pos, n);
        b->pos += n;
        return (ssize_t)n;
    }
    ssize_t n = c->io->read(c, buf, cap);
    if (n > 0) {
        atomic_fetch_add_explicit(&c->loop->k.bytes_in, (uint64_t)n, memory_order_relaxed);
        c->last_io_ms = cshs__now_ms();
    } else if (n == 0) {
        c->eof = 1;
    } else if (n != -EAGAIN) {
        atomic_fetch_add(&c->srv->e_io, 1);
    }
    return n;
}

/* A deferred request's handler or continuation on its loop's thread:
 * it never waits for its client (it waits for the queue to drain, or its
 * body's next bytes, with the loop: cshs_deferred_on_drain, _on_body). */
static int on_loop_deferred(const cshs_conn *c)
{
    return cshs__running_conn == c && c->deferred;
}

static int t_write(void *io, const void *data, size_t len)
{
    cshs_conn *c = io;
    if (c->deferred && c->deferred->wait_error) return c->deferred->wait_error;
    int r = cshs__out_write(c, data, len);
    if (r < 0) return r;
    if (c->out_bytes > c->srv->o.write_high_water && !on_loop_deferred(c))
        return cshs__out_throttle(c);
    return 0;
}

static int t_send_file(void *io, int fd, off_t offset, size_t len)
{
    cshs_conn *c = io;
    /* what is queued goes first, as far as the socket takes it now: a
     * client that keeps up gets each range as it comes (a proxy passing a
     * stream on through its temporary file) */
    if (c->out && c->io->sendfile) {
        int f = cshs__out_flush(c);
        if (f < 0) return f;
    }
    if (!c->out && c->io->sendfile) {
        while (len > 0) {
            ssize_t n = c->io->sendfile(c, fd, &offset, len);
            if (n > 0) {
                len -= (size_t)n;
                cshs__out_sent(c, (size_t)n);
                continue;
            }
            if (n == -EAGAIN) break;
            if (n != -EIO) atomic_fetch_add(&c->srv->e_io, 1);
            return (int)n;
        }
        if (len == 0) return 0;
    }
    /* the rest goes out from the loop: no worker waits for a slow reader;
     * a stream that reads and writes the file starts at once */
    int r = cshs__out_queue_file(c, fd, offset, len);
    if (r == 0 && !c->io->sendfile) {
        r = cshs__out_flush(c);
        r = r < 0 ? r : 0;
    }
    return r;
}

/* The minimum body rate, over windows of body_grace_ms (1 s when it is
 * 0), the first of them the grace: each window must bring min_body_rate
 * bytes a second on average. A client that sent much at first and then
 * trickles is cut within two windows, where an average since the body's
 * start would let it trickle for as long as its early bytes last. 0 while
 * the body keeps the rate, *window_end the end of the current window; -1
 * when the window that ended brought too little. A window that ended
 * with enough starts the next one now. */
static int body_rate(cshs_conn *c, int64_t now, int64_t *window_end)
{
    cshs_server *s = c->srv;
    int64_t w = s->o.body_grace_ms ? (int64_t)s->o.body_grace_ms : 1000;
    int64_t start = cshw_exchange_body_start_us(c->x) / 1000;
    uint64_t got = cshw_exchange_body_received(c->x);
    /* this request's body: its first window (a pipelined body may have
     * begun before the last look at the one before it: its count is then
     * below the mark) */
    if (c->rate_mark_ms < start || got < c->rate_mark_bytes) {
        c->rate_mark_ms = start;
        c->rate_mark_bytes = 0;
    }
    if (now >= c->rate_mark_ms + w) {
        uint64_t span = (uint64_t)(now - c->rate_mark_ms);
        if ((got - c->rate_mark_bytes) * 1000u < (uint64_t)s->o.min_body_rate * span) return -1;
        c->rate_mark_ms = now;
        c->rate_mark_bytes = got;
    }
    *window_end = c->rate_mark_ms + w;
    return 0;
}

/* A body's deadline: read_timeout_ms since its last bytes, and the end of
 * the minimum rate's window (body_rate); `now` when the window that ended
 * brought too little; 0 for none. */
int64_t cshs__body_deadline(cshs_conn *c, int64_t now)
{
    cshs_server *s = c->srv;
    int64_t deadline = s->o.read_timeout_ms ? c->last_io_ms + (int64_t)s->o.read_timeout_ms : 0;
    if (s->o.min_body_rate) {
        int64_t end;
        int64_t d = body_rate(c, now, &end) < 0 ? now : end + 1;
        if (!deadline || d < deadline) deadline = d;
    }
    return deadline;
}

/* A streaming route's body: read on demand, waiting within the body
 * deadlines (the minimum rate's windows, read_timeout_ms). */
int cshs__conn_peek(cshs_conn *c, const char **data, size_t *len, int wait)
{
    cshs_server *s = c->srv;
    if (c->deferred && c->deferred->wait_error) return c->deferred->wait_error;
    if (cshs__stream_left(c)) {
        *data = c->sb->data + c->sb->pos;
        *len = c->sb->len - c->sb->pos;
        return 0;
    }
    if (!c->sb && !(c->sb = malloc(sizeof *c->sb + STREAM_BUF))) return -ENOMEM;
    cshs_stream_buf *b = c->sb;
    b->pos = b->len = 0;
    for (;;) {
        ssize_t n = c->io->read(c, b->data, STREAM_BUF);
        if (n >= 0) {
            if (n > 0) {
                atomic_fetch_add_explicit(&c->loop->k.bytes_in, (uint64_t)n, memory_order_relaxed);
                c->last_io_ms = cshs__now_ms();
            }
            b->len = (size_t)n;
            *data = b->data;
            *len = (size_t)n;
            return 0;
        }
        if (n != -EAGAIN) {
            atomic_fetch_add(&s->e_io, 1);
            return (int)n;
        }
        if (!wait) return -EAGAIN;
        for (;;) {
            int64_t now = cshs__now_ms();
            int64_t until = now + 200;
            int64_t window_end;
            if (s->o.min_body_rate) {
                if (body_rate(c, now, &window_end) < 0) {
                    atomic_fetch_add(&s->e_body, 1);
                    return -ETIMEDOUT;
                }
                if (window_end < until) until = window_end;
            }
            if (s->o.read_timeout_ms) {
                int64_t rt = c->last_io_ms + (int64_t)s->o.read_timeout_ms;
                if (now >= rt) {
                    atomic_fetch_add(&s->e_body, 1);
                    return -ETIMEDOUT;
                }
                if (rt < until) until = rt;
            }
            int r = cshs__wait_fd(c, c->io_wait, until);
            if (r == 0) break;
            if (r != -ETIMEDOUT) return r;
        }
    }
}

/* On its loop's thread, the read of a handler that reads its body as
 * events (CSHS_STREAM_ON_LOOP) or has deferred never waits: -EAGAIN. Any
 * other waits, even there (a streaming route run on the loop because no
 * thread can ever take it: max_threads equal to loops). */
static int t_peek(void *io, const char **data, size_t *len)
{
    cshs_conn *c = io;
    int nowait = cshs__running_conn == c &&
                 (c->deferred || cshw_exchange_streams(c->x) == CSHS_STREAM_ON_LOOP);
    return cshs__conn_peek(c, data, len, !nowait);
}

static void t_consume(void *io, size_t n)
{
    cshs_stream_buf *b = ((cshs_conn *)io)->sb;
    if (!b) return;
    if (n > b->len - b->pos) n = b->len - b->pos;
    b->pos += n;
}

/* What the loop still has to send for the handler: queued bytes and
 * file ranges (a handler passing a stream on keeps the rest elsewhere
 * rather than wait, cshw_response_queued). */
uint64_t cshs__transport_queued(void *io)
{
    const cshs_conn *c = io;
    uint64_t n = 0;
    for (const cshs_out *o = c->out; o; o = o->next)
        n += (o->n - o->pos) + (o->fd >= 0 ? o->left : 0);
    return n;
}

static const cshw_transport_ops socket_ops = {.size = sizeof(cshw_transport_ops),
                                              .peek = t_peek,
                                              .consume = t_consume,
                                              .write = t_write,
                                              .flush = NULL,
                                              .send_file = t_send_file,
                                              .read = t_read,
                                              .queued = cshs__transport_queued};

cshw_transport cshs__transport_of(cshs_conn *c)
{
    cshw_transport t = {.size = sizeof t,
                        .ops = &socket_ops,
                        .io = c,
                        .remote_addr = c->remote,
                        .is_secure =
                            c->io == &cshs__tls_stream || c->io == &cshs__h2_pair_tls_stream,
                        .remote_port = c->remote_port};
    return t;
}
