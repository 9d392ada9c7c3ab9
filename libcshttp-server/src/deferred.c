/* Deferred requests (cshs_defer): the state a handler that returns before
 * its answer takes along, and a request that waits for its own client
 * (CP_WAIT). */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>

#include "server_impl.h"

#define SPARE_CTX_MAX 64 /* cshs_handler_ctx a worker keeps for handlers that defer */

/* ---- the state a deferred request takes along (cshs_handler_ctx) ---- */

cshs_handler_ctx *cshs__handler_ctx_new(cshs_server *s)
{
    cshs_handler_ctx *d = calloc(1, sizeof *d);
    if (!d) return NULL;
    if (!(d->ctx = cshw_context_new(s->o.web))) {
        free(d);
        return NULL;
    }
    cshw_context_set_app_data(d->ctx, s->app_data);
    return d;
}

void cshs__handler_ctx_free(cshs_handler_ctx *d)
{
    if (!d) return;
    cshw_context_free(d->ctx);
    free(d);
}

/* For a worker whose own went with a deferred request: one it kept, or a
 * new one. NULL when out of memory. */
cshs_handler_ctx *cshs__handler_ctx_take(cshs_worker *w, cshs_server *s)
{
    if (w->nspare_ctx) return w->spare_ctx[--w->nspare_ctx];
    return cshs__handler_ctx_new(s);
}

/* A deferred request's, its request ended: kept for the next one (up to
 * SPARE_CTX_MAX, then freed). Each worker keeps its own: no lock. */
void cshs__handler_ctx_put(cshs_worker *w, cshs_handler_ctx *d)
{
    if (!w->spare_ctx) w->spare_ctx = calloc(SPARE_CTX_MAX, sizeof *w->spare_ctx);
    if (w->spare_ctx && w->nspare_ctx < SPARE_CTX_MAX)
        w->spare_ctx[w->nspare_ctx++] = d;
    else
        cshs__handler_ctx_free(d);
}

static void nothing_more(cshw_context *ctx, void *arg);

/* ---- a deferred request waiting for its own client (CP_WAIT) ----
 *
 * cshs_deferred_on_drain and _on_body, called instead of a resume, leave
 * the request to the loop once its handler returns: the connection is
 * no longer busy, its events are served here (the queue sent, the
 * socket's input looked at), parked with a deadline (send_timeout_ms,
 * read_timeout_ms), and the continuation is posted when what it waits
 * for is there, or the wait failed (its error then fails the
 * continuation's writes and reads). */

void cshs__wait_end(cshs_conn *c, int err)
{
    cshs_handler_ctx *d = c->deferred;
    cshs__unpark(c);
    if (err && d->wait_for == WAIT_DRAIN) cshs__out_clear(c);
    d->wait_for = WAIT_NONE;
    if (err) d->wait_error = err;
    c->phase = CP_READ;
    atomic_store(&c->busy, 1);
    atomic_store(&d->pending, 0);
    c->resume = RESUME_DEFERRED;
    cshs__conn_post(c);
}

/* 1 when the wait is over (the continuation posted). */
int cshs__wait_over(cshs_conn *c)
{
    cshs_handler_ctx *d = c->deferred;
    int err = 0, ready;
    if (d->wait_for == WAIT_DRAIN) {
        int f = cshs__out_flush(c);
        err = f < 0 ? f : 0;
        ready = err || cshs__transport_queued(c) <= c->srv->o.write_high_water / 2;
    } else {
        /* the next bytes, read into the stream buffer the handler's
         * reads take first; the end or an error is news too */
        const char *p;
        size_t n;
        int r = cshs__conn_peek(c, &p, &n, 0);
        ready = r != -EAGAIN;
        err = r < 0 && r != -EAGAIN ? r : 0;
    }
    if (!ready) return 0;
    cshs__wait_end(c, err);
    return 1;
}

void cshs__wait_park(cshs_conn *c)
{
    cshs_server *s = c->srv;
    int drain = c->deferred->wait_for == WAIT_DRAIN;
    unsigned ms = drain ? s->o.send_timeout_ms : s->o.read_timeout_ms;
    int64_t deadline = ms ? c->last_io_ms + (int64_t)ms : 0;
    int kind = EXP_WAIT;
    if ((drain || c->io_wait == POLLOUT) && cshs__conn_want_out(c) < 0) {
        deadline = cshs__now_ms();
        kind = EXP_NOWAIT;
    }
    cshs__park(c, deadline, kind);
}

void cshs__wait_begin(cshs_worker *w, cshs_conn *c)
{
    (void)w;
    c->phase = CP_WAIT;
    atomic_store(&c->waits, WAITS_NONE);
    c->last_io_ms = cshs__now_ms();
    if (cshs__wait_over(c)) return;
    /* the loop's owner (this thread) serves its events from here on: an
     * event that came meanwhile is still in the epoll set's queue */
    atomic_store(&c->busy, 0);
    cshs__wait_park(c);
}

static void wait_for(cshs_deferred *d, int what, void (*fn)(cshw_context *ctx, void *arg),
                     void *arg)
{
    cshs_conn *c = (cshs_conn *)d;
    if (!c) return;
    cshs_handler_ctx *l = c->deferred;
    l->fn = fn ? fn : nothing_more;
    l->arg = arg;
    l->job = 0;
    l->wait_for = (char)what;
}

void cshs_deferred_on_drain(cshs_deferred *d, void (*fn)(cshw_context *ctx, void *arg), void *arg)
{
    wait_for(d, WAIT_DRAIN, fn, arg);
}

void cshs_deferred_on_body(cshs_deferred *d, void (*fn)(cshw_context *ctx, void *arg), void *arg)
{
    wait_for(d, WAIT_BODY, fn, arg);
}

cshs_deferred *cshs_defer(cshw_context *ctx)
{
    cshs_conn *c = cshs__running_conn;
    cshs_worker *w = cshs__running_worker;
    /* only a handler run inline (not a job), once per run */
    if (!c || !ctx || (c->deferred && atomic_load(&c->deferred->pending) != 0)) return NULL;
    if (!c->deferred || ctx != c->deferred->ctx) {
        if (ctx != w->handler_ctx->ctx) return NULL;
        /* the context (and the transport the exchange holds) goes with
         * the request; the worker takes another */
        cshs_handler_ctx *spare = cshs__handler_ctx_take(w, c->srv);
        if (!spare) return NULL;
        if (cshw_exchange_defer(c->x) < 0) {
            cshs__handler_ctx_put(w, spare);
            return NULL;
        }
        c->deferred = w->handler_ctx;
        c->deferred->wait_error = 0;
        w->handler_ctx = spare;
    } else if (cshw_exchange_defer(c->x) < 0) {
        return NULL;
    }
    c->deferred->fn = NULL;
    c->deferred->abort_fn = NULL;
    c->deferred->wait_for = WAIT_NONE;
    atomic_store(&c->deferred->pending, 2);
    atomic_fetch_add_explicit(&c->srv->c_deferred, 1, memory_order_relaxed);
    return (cshs_deferred *)c;
}

cshs_reactor *cshs_deferred_reactor(cshs_deferred *d)
{
    return d ? (cshs_reactor *)((cshs_conn *)d)->loop : NULL;
}

/* The continuation of a resume given none: the request ends with what its
 * handler wrote. */
static void nothing_more(cshw_context *ctx, void *arg)
{
    (void)ctx;
    (void)arg;
}

static void resume(cshs_conn *c, void (*fn)(cshw_context *ctx, void *arg), void *arg, int job)
{
    if (!c) return;
    cshs_handler_ctx *d = c->deferred;
    d->fn = fn ? fn : nothing_more;
    d->arg = arg;
    d->job = (char)job;
    /* the handler has not returned yet: after_handler sees it due. Else,
     * on the loop's thread between handlers (a watch's ready), it runs
     * after the batch with no wake-up; from anywhere else it is given
     * back */
    if (atomic_fetch_sub(&d->pending, 1) == 1)
        cshs__continuation_due(c, !cshs__running_conn && cshs__self_loop() == c->loop);
}

void cshs_deferred_on_abort(cshs_deferred *d, void (*fn)(void *arg), void *arg)
{
    cshs_conn *c = (cshs_conn *)d;
    if (!c) return;
    c->deferred->abort_fn = fn;
    c->deferred->abort_arg = arg;
}

void cshs__conn_client_left(cshs_conn *c)
{
    /* only a request that waits, its handler returned: taken, it cannot
     * go on beside the callback (continuation_due leaves it to us) */
    char st = WAITS_FREE;
    if (!atomic_compare_exchange_strong(&c->waits, &st, WAITS_ABORTING)) return;
    cshs_handler_ctx *d = c->deferred;
    void (*fn)(void *) = d->abort_fn;
    d->abort_fn = NULL;
    /* not once resumed: what it waited for is over */
    if (fn && atomic_load(&d->pending) == 1) fn(d->abort_arg);
    if (atomic_exchange(&c->waits, WAITS_NONE) == WAITS_DUE) cshs__continuation_run(c, 1);
}

void cshs_deferred_resume(cshs_deferred *d, void (*fn)(cshw_context *ctx, void *arg), void *arg)
{
    resume((cshs_conn *)d, fn, arg, 0);
}

void cshs_deferred_run(cshs_deferred *d, void (*fn)(cshw_context *ctx, void *arg), void *arg)
{
    resume((cshs_conn *)d, fn, arg, 1);
}
