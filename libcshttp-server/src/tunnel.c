/* A connection that switched protocols (tunnel.h): its bytes both ways on
 * its loop's thread, as events.
 *
 *   handler: cshs_upgrade ─> 101 sent ─> the handler returns
 *     ─> the exchange says SWITCHED (connection.c, after_exchange)
 *     ─> cshs__tunnel_start: open(), then served as below
 *
 *   each event (or post): the queue is sent; drained() when it went under
 *   half the mark after a write said 1; the client's bytes are read and
 *   handed to data() until EAGAIN, a pause, or TUNNEL_TURNS reads (then
 *   posted: others go first); parked with the idle deadline
 *
 *   the end: close(), both sides ended, the idle deadline, an error or a
 *   stop: closed() once, the tunnel freed, the connection ends (what is
 *   queued is sent first after close() and a clean end)
 *
 * The tunnel belongs to its connection (c->tunnel) and is touched only by
 * the loop's owner once open. The application's calls set flags and queue
 * output; what they start (a resume, a close) is done by the next serve,
 * after the application's callback returns: the tunnel is never freed
 * under it. */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <cshttp/server/server.h>
#include <cshttp/server/tunnel.h>
#include <cshttp/web/context.h>
#include <cshttp/web/exchange.h>

#include "server_impl.h"

#define TUNNEL_BUF 16384u /* a read from the client, into the loop's buffer */
#define TUNNEL_TURNS 16   /* reads in a row before the loop's others go first */

struct cshs_tunnel {
    cshs_conn *c;
    cshs_tunnel_ops ops;
    void *arg;
    /* what the exchange read past the request: the first bytes of data() */
    char *left;
    size_t left_pos, left_len;
    int error;              /* a write failed: the tunnel ends with it */
    unsigned char serving;  /* cshs__tunnel_event runs (calls made now need no post) */
    unsigned char paused;   /* cshs_tunnel_pause */
    unsigned char in_ended; /* the client's input ended (data(NULL, 0) given) */
    unsigned char shut;     /* cshs_tunnel_shutdown: our side ends once the queue is sent */
    unsigned char shut_done;
    unsigned char closing; /* cshs_tunnel_close */
    unsigned char full;    /* a write said 1: drained() is owed */
    unsigned char ended;   /* closed() called: nothing more */
    /* a protocol's timers (cshs__tunnel_set_timer): run at each serve,
     * due again at timer_at (0: none) */
    int64_t (*timer)(void *arg, int64_t now_ms);
    void *timer_arg;
    int64_t timer_at;
    /* the last time the client took output, or a write found the queue
     * empty: the send deadline counts from it, whatever the client sends */
    int64_t out_ms;
    /* the protocol's goodbye at a graceful stop (cshs__tunnel_set_stop) */
    void (*stop)(void *arg);
    void *stop_arg;
    unsigned char stop_told;
    /* the bytes both ways since the switch, and the 101's log entry
     * (cshs__tunnel_hold_log), written at the end */
    uint64_t bytes_in, bytes_out;
    cshs_request_log *log;
    int64_t log_since_us;
};

int cshs_upgrade(cshw_context *ctx, const char *protocol, const cshs_tunnel_ops *ops, void *arg)
{
    cshs_conn *c = cshs__handler_conn();
    if (!c || !ctx || ctx != cshw_context_current() || !ops || !ops->data || !ops->closed)
        return -EINVAL;
    if (c->tunnel) return -EALREADY;
    /* HTTP/2 has no 101 (RFC 9113 §8.6): a stream asks for a protocol
     * only with an extended CONNECT (RFC 8441), which h2_stream.c writes
     * as the Upgrade the toolkit checks for; the 101 goes out as 200 */
    cshs_tunnel *t = calloc(1, sizeof *t);
    if (!t) return -ENOMEM;
    int r = cshw_exchange_switch(c->x, protocol);
    if (r < 0) {
        free(t);
        return r;
    }
    t->c = c;
    t->ops = *ops;
    t->arg = arg;
    c->tunnel = t;
    return 0;
}

/* The application's calls from outside a serve (a watch's ready): the
 * connection is served after the batch, which does what they started. */
static void poke(cshs_tunnel *t)
{
    if (t->serving) return;
    cshs__unpark(t->c);
    cshs__conn_post(t->c);
}

int cshs_tunnel_write(cshs_tunnel *t, const void *data, size_t len)
{
    if (!t || (len && !data)) return -EINVAL;
    if (t->ended || t->closing || t->shut) return -EPIPE;
    if (t->error) return t->error;
    cshs_conn *c = t->c;
    if (len == 0) return 0;
    t->bytes_out += len;
    if (!t->serving && !c->out) {
        /* parked with nothing queued (a relay's or another thread's
         * write): what the socket takes now needs no serve; the sweep
         * sees the deadline this moved (cshs__tunnel_deadline) */
        ssize_t n = cshs__out_try(c, data, len);
        if (n < 0) {
            t->error = (int)n;
            poke(t);
            return (int)n;
        }
        if ((size_t)n == len) return 0;
        data = (const char *)data + n;
        len -= (size_t)n;
    }
    /* idle counters hold what a parked connection queues: not parked
     * while its queue changes */
    if (!t->serving) cshs__unpark(c);
    /* an empty queue: the send deadline counts from now, not from the
     * last write that made progress long ago */
    if (!c->out) t->out_ms = t->serving ? c->last_io_ms : cshs__now_ms(); /* serving: now enough */
    int r = cshs__out_write(c, data, len);
    if (r < 0) {
        t->error = r;
        poke(t);
        return r;
    }
    if (!t->serving) poke(t); /* parked again by the serve, waiting for output if any */
    if (c->out_bytes > c->srv->o.write_high_water) {
        t->full = 1;
        return 1;
    }
    return 0;
}

void cshs_tunnel_pause(cshs_tunnel *t)
{
    if (t) t->paused = 1;
}

void cshs_tunnel_resume(cshs_tunnel *t)
{
    if (!t || !t->paused) return;
    t->paused = 0;
    /* edge-triggered: bytes that came while paused fire no new event */
    poke(t);
}

void cshs_tunnel_shutdown(cshs_tunnel *t)
{
    if (!t || t->shut) return;
    t->shut = 1;
    poke(t);
}

void cshs_tunnel_close(cshs_tunnel *t)
{
    if (!t || t->closing) return;
    t->closing = 1;
    poke(t);
}

uint64_t cshs_tunnel_queued(const cshs_tunnel *t)
{
    return t ? t->c->out_bytes : 0;
}

cshs_reactor *cshs_tunnel_reactor(cshs_tunnel *t)
{
    return t ? (cshs_reactor *)t->c->loop : NULL;
}

void cshs__tunnel_set_timer(cshs_tunnel *t, int64_t (*fn)(void *arg, int64_t now_ms), void *arg)
{
    t->timer = fn;
    t->timer_arg = arg;
    poke(t);
}

void cshs__tunnel_set_stop(cshs_tunnel *t, void (*fn)(void *arg), void *arg)
{
    t->stop = fn;
    t->stop_arg = arg;
}

int cshs__tunnel_stopping(cshs_worker *w, cshs_conn *c)
{
    cshs_tunnel *t = c->tunnel;
    if (!t || !t->stop || t->stop_told) return 0;
    t->stop_told = 1;
    t->serving = 1;
    t->stop(t->stop_arg);
    t->serving = 0;
    cshs__tunnel_event(w, c);
    return 1;
}

int cshs__tunnel_timer_due(const cshs_conn *c, int64_t now_ms)
{
    const cshs_tunnel *t = c->tunnel;
    return t && t->timer_at && now_ms >= t->timer_at;
}

/* One string of the held entry: copied after the struct, NULL kept. */
static const char *hold_str(char **at, const char *v)
{
    if (!v) return NULL;
    size_t n = strlen(v) + 1;
    memcpy(*at, v, n);
    const char *r = *at;
    *at += n;
    return r;
}

int cshs__tunnel_hold_log(cshs_conn *c, const cshs_request_log *e)
{
    cshs_tunnel *t = c->tunnel;
    const char *strs[] = {e->remote_addr, e->method, e->target, e->referer, e->user_agent};
    size_t n = sizeof *e;
    for (size_t i = 0; i < sizeof strs / sizeof strs[0]; i++)
        if (strs[i]) n += strlen(strs[i]) + 1;
    cshs_request_log *h = malloc(n);
    if (!h) return -ENOMEM;
    *h = *e;
    char *at = (char *)(h + 1);
    h->remote_addr = hold_str(&at, e->remote_addr);
    h->method = hold_str(&at, e->method);
    h->target = hold_str(&at, e->target);
    h->referer = hold_str(&at, e->referer);
    h->user_agent = hold_str(&at, e->user_agent);
    free(t->log);
    t->log = h;
    t->log_since_us = cshs__now_us();
    return 0;
}

void cshs__tunnel_drop(cshs_conn *c, int why)
{
    cshs_tunnel *t = c->tunnel;
    if (!t) return;
    c->tunnel = NULL;
    if (c->phase == CP_TUNNEL) atomic_fetch_sub(&c->srv->c_tunnels, 1);
    t->ended = 1;
    t->ops.closed(t, why, t->arg);
    cshs_server *s = c->srv;
    if (t->log && s->log_fn) {
        /* the 101's line, with what went through the tunnel */
        t->log->bytes_in += t->bytes_in;
        t->log->bytes_out += t->bytes_out;
        t->log->body_bytes_out += t->bytes_out;
        t->log->duration_us += cshs__now_us() - t->log_since_us;
        s->log_fn(s->log_user, t->log);
    }
    free(t->log);
    free(t->left);
    free(t);
}

/* The tunnel ends: closed(why), then the connection (what is queued sent
 * first when the end is a clean one). */
static void end(cshs_worker *w, cshs_conn *c, int why)
{
    cshs__tunnel_drop(c, why);
    cshs__conn_end(w, c, why == 0);
}

int64_t cshs__tunnel_deadline(const cshs_conn *c)
{
    const cshs_server *s = c->srv;
    const cshs_tunnel *t = c->tunnel;
    int64_t deadline = 0;
    if (s->o.tunnel_idle_timeout_ms)
        deadline = c->last_io_ms + (int64_t)s->o.tunnel_idle_timeout_ms;
    if (c->out && s->o.send_timeout_ms) {
        /* the client's reads do not put it off: only its taking output */
        int64_t d = t->out_ms + (int64_t)s->o.send_timeout_ms;
        if (!deadline || d < deadline) deadline = d;
    }
    if (t->timer_at && (!deadline || t->timer_at < deadline)) deadline = t->timer_at;
    return deadline;
}

/* Parked until the client sends, takes output, or the deadline: no byte
 * either way for tunnel_idle_timeout_ms, or output not taken for
 * send_timeout_ms. */
static void park_tunnel(cshs_worker *w, cshs_conn *c)
{
    cshs_tunnel *t = c->tunnel;
    /* the protocol's timers again: what this serve's callbacks did (a
     * close begun, say) may bring one sooner; a ping they write goes out
     * with the wait for output below, a close they make ends it now */
    if (t->timer) {
        t->serving = 1;
        t->timer_at = t->timer(t->timer_arg, cshs__now_ms());
        t->serving = 0;
        if (t->closing || t->error) {
            end(w, c, t->error);
            return;
        }
    }
    int64_t deadline = cshs__tunnel_deadline(c);
    if ((c->out || c->io_wait == POLLOUT) && cshs__conn_want_out(c) < 0) {
        end(w, c, -EIO);
        return;
    }
    cshs__park(c, deadline, EXP_TUNNEL);
}

void cshs__tunnel_start(cshs_worker *w, cshs_conn *c)
{
    cshs_tunnel *t = c->tunnel;
    const char *left;
    size_t n = cshw_exchange_leftover(c->x, &left);
    if (n && !(t->left = malloc(n))) {
        end(w, c, -ENOMEM);
        return;
    }
    if (n) memcpy(t->left, left, n);
    t->left_len = n;
    /* the exchange is done with: the tunnel reads the socket itself */
    cshw_exchange_free(c->x);
    c->x = NULL;
    c->phase = CP_TUNNEL;
    c->served = 1;
    c->last_io_ms = cshs__now_ms();
    atomic_fetch_add(&c->srv->c_upgrades, 1);
    atomic_fetch_add(&c->srv->c_tunnels, 1);
    if (t->ops.open) {
        t->serving = 1;
        t->ops.open(t, t->arg);
        t->serving = 0;
    }
    cshs__tunnel_event(w, c);
}

/* Hands the client's bytes to data() until EAGAIN, a pause, the end or
 * TUNNEL_TURNS reads: 1 when it stopped for its turns (posted), 0
 * otherwise; a read's error in t->error. */
static int read_in(cshs_tunnel *t)
{
    cshs_conn *c = t->c;
    for (int turn = 0; !t->paused && !t->in_ended && !t->error && !t->closing; turn++) {
        if (turn == TUNNEL_TURNS) {
            cshs__conn_post(c);
            return 1;
        }
        if (t->left_pos < t->left_len) {
            size_t n = t->left_len - t->left_pos;
            t->left_pos = t->left_len;
            t->ops.data(t, t->left + t->left_pos - n, n, t->arg);
            continue;
        }
        char *buf = c->loop->tunnel_buf;
        if (!buf && !(buf = c->loop->tunnel_buf = malloc(TUNNEL_BUF))) {
            t->error = -ENOMEM;
            break;
        }
        ssize_t n = c->io->read(c, buf, TUNNEL_BUF);
        if (n > 0) {
            atomic_fetch_add_explicit(&c->loop->k.bytes_in, (uint64_t)n, memory_order_relaxed);
            c->last_io_ms = cshs__now_ms();
            t->bytes_in += (uint64_t)n;
            t->ops.data(t, buf, (size_t)n, t->arg);
            /* a short read emptied the socket: the next bytes bring an
             * event (edge-triggered), so no read to meet EAGAIN, unless
             * OpenSSL holds some or an event said the input ends (the
             * next read meets the end) */
            if ((size_t)n < TUNNEL_BUF && !c->io->pending(c) && !c->rdhup) break;
            continue;
        }
        if (n == 0) {
            t->in_ended = 1;
            c->eof = 1;
            t->ops.data(t, NULL, 0, t->arg);
            break;
        }
        if (n == -EAGAIN) break;
        atomic_fetch_add(&c->srv->e_io, 1);
        t->error = (int)n;
    }
    return 0;
}

/* Sends what is queued; output taken moves the send deadline on (the
 * engine's write stamps last_io_ms when it makes progress). */
static int flush_out(cshs_tunnel *t)
{
    cshs_conn *c = t->c;
    uint64_t before = c->out_bytes;
    int f = cshs__out_flush(c);
    if (c->out_bytes < before) t->out_ms = c->last_io_ms;
    return f;
}

/* Output went under half the mark after a write said it was above it. */
static int drained_now(const cshs_tunnel *t)
{
    return t->full && t->c->out_bytes <= t->c->srv->o.write_high_water / 2;
}

void cshs__tunnel_event(cshs_worker *w, cshs_conn *c)
{
    cshs_tunnel *t = c->tunnel;
    t->serving = 1;
    int posted = 0;
    /* the timers first: what they send goes out with the rest */
    if (t->timer) t->timer_at = t->timer(t->timer_arg, cshs__now_ms());
    /* a queue the socket took whole owes drained() at once: no event
     * for writability would come for it */
    for (int turn = 0; !t->error && !posted && !t->closing; turn++) {
        int f = flush_out(t);
        if (f < 0) {
            t->error = f;
            break;
        }
        if (drained_now(t)) {
            t->full = 0;
            if (t->ops.drained) t->ops.drained(t, t->arg);
        }
        posted = read_in(t);
        if (t->error) break;
        if (c->out && (f = flush_out(t)) < 0) {
            t->error = f;
            break;
        }
        if (posted || !drained_now(t)) break;
        if (turn == TUNNEL_TURNS) {
            cshs__conn_post(c);
            posted = 1;
        }
    }
    t->serving = 0;
    if (t->error) {
        end(w, c, t->error);
        return;
    }
    if (t->closing) {
        end(w, c, 0);
        return;
    }
    if (t->shut && !t->shut_done && !c->out) {
        /* our side ends; reading goes on (TLS: close_notify, the session
         * kept for the client's last records) */
        t->shut_done = 1;
        if (c->ssl) SSL_shutdown(c->ssl);
        if (CSHS_H2_STREAM(c))
            cshs__h2_pipe_shut(c); /* END_STREAM, the client's bytes still read */
        else
            shutdown(c->fd, SHUT_WR);
    }
    if (t->shut_done && t->in_ended) {
        end(w, c, 0);
        return;
    }
    if (!posted) park_tunnel(w, c);
}
