/* Handlers run as jobs on other threads: whether they blocked, the
 * loop's handlers offloaded for a while, and a job's connection given
 * back to its loop. */
#include <errno.h>
#include <poll.h>
#include <sys/resource.h>

#include "server_impl.h"

/* Times this thread gave up its CPU to wait (blocked in a system call). */
static long voluntary_switches(void)
{
    struct rusage ru;
    return getrusage(RUSAGE_THREAD, &ru) == 0 ? ru.ru_nvcsw : 0;
}

/* Whether a job's handler blocked is asked of the kernel (getrusage before
 * and after: two system calls, a large part of what a blocking
 * application's request costs) for the first of a run of handlers that
 * block, and then for one in BLOCKED_RECHECK_EVERY. In between, a handler
 * that took a quarter of grow_after_us or more is taken to have blocked as
 * the checked one did: a run of handlers that stop blocking but take long
 * (computing, or preempted on a machine short of cores) is found out at
 * the next check, BLOCKED_RECHECK_EVERY requests later at most. */
#define BLOCKED_RECHECK_EVERY 16

typedef struct job_clock {
    int check;    /* this handler's blocking is asked of the kernel */
    long waits;   /* voluntary_switches() before it, when check */
    int64_t t0us; /* when it started, when not check */
} job_clock;

static void job_clock_start(const cshs_worker *w, job_clock *jc)
{
    jc->check = w->blocked_run % BLOCKED_RECHECK_EVERY == 0;
    if (jc->check)
        jc->waits = voluntary_switches();
    else
        jc->t0us = cshs__now_us();
}

/* 1 when the handler timed by jc blocked (or, between checks, took long
 * after handlers that blocked). */
static int job_clock_blocked(cshs_worker *w, const job_clock *jc)
{
    int blocked;
    if (jc->check)
        blocked = voluntary_switches() != jc->waits;
    else
        blocked = cshs__now_us() - jc->t0us >= (int64_t)w->srv->o.grow_after_us / 4;
    w->blocked_run = blocked ? w->blocked_run + 1 : 0;
    return blocked;
}

/* The loop's handlers run on other threads a while (offload_ms): a job's
 * handler waited, or the loop was handed over for a blocked one. */
void cshs__offload_more(cshs_loop *l)
{
    cshs_server *s = l->srv;
    if (s->o.offload_ms)
        atomic_store_explicit(&l->offload_until_ms, cshs__now_ms() + (int64_t)s->o.offload_ms,
                              memory_order_relaxed);
}

/* After a job's handler that blocked, its thread waits a little for the
 * connection's next request (next_request_wait_us), as a thread per
 * connection would: a client that sends it at once is served with no trip
 * through the loop and no other thread woken (a loop's wake-up, its
 * read and a parked worker's wake-up less per request). Meanwhile the connection's
 * registration asks for no input, so the loop is not woken for what this
 * thread reads (one EPOLL_CTL_MOD while the thread keeps the connection,
 * and one when it gives it back: give_back_input). 1 when input came: an
 * event the loop noted before (busy 2) is this thread's to read, and the
 * next read trusts no earlier short one. */
static int wait_next_request(cshs_conn *c)
{
    cshs_server *s = c->srv;
    uint64_t us = s->o.next_request_wait_us;
    if (!us || atomic_load(&s->stopping) || c->fd < 0) return 0; /* no socket (HTTP/2) */
    cshs__conn_input_events(c, 0);
    struct pollfd p = {c->fd, POLLIN | POLLRDHUP, 0};
    struct timespec ts = {(time_t)(us / 1000000), (long)(us % 1000000) * 1000L};
    int r;
    do r = ppoll(&p, 1, &ts, NULL);
    while (r < 0 && errno == EINTR);
    if (r <= 0) return 0;
    atomic_store(&c->busy, 1);
    cshw_exchange_recheck(c->x);
    return 1;
}

/* Before a job's thread lets go of its connection: input registered again
 * (wait_next_request took it out). Bytes that came meanwhile fire an
 * event, which the loop serves or notes (busy 2) for this thread. */
static void give_back_input(cshs_conn *c)
{
    if (c->in_muted) cshs__conn_input_events(c, 1);
}

void cshs__conn_job(cshs_worker *w, cshs_conn *c)
{
    cshs_server *s = c->srv;
    for (;;) {
        cshw_transport t = cshs__transport_of(c);
        int streams = cshw_exchange_streams(c->x);
        int r, deferred = c->resume == RESUME_DEFERRED;
        job_clock jc = {0};
        if (!streams && !deferred) job_clock_start(w, &jc);
        if (deferred) {
            /* a deferred request's continuation that may wait
             * (cshs_deferred_run): it cannot defer again here */
            cshs_handler_ctx *d = c->deferred;
            c->resume = RESUME_AFTER_RUN;
            d->job = 0;
            d->t = t;
            cshs__job_conn = c;
            r = cshw_exchange_resume(c->x, &d->t, d->fn, d->arg);
            cshs__job_conn = NULL;
            cshs__handler_ctx_put(w, d);
            c->deferred = NULL;
        } else {
            cshs__job_conn = c;
            r = cshw_exchange_run(c->x, w->handler_ctx->ctx, &t);
            cshs__job_conn = NULL;
        }
        /* A handler that blocked (the thread waited in the kernel) keeps
         * the loop's handlers on other threads; one that only took long,
         * preempted on a machine short of cores, does not. A streamed body
         * is waited for by design, and so is what a deferred handler sent
         * here (cshs_deferred_run). */
        int blocked = !streams && !deferred && job_clock_blocked(w, &jc);
        if (blocked) cshs__offload_more(c->loop);
        /* The common end is done here rather than on the loop, a wake-up
         * less per request: the response went out whole and the client may
         * send more. A next request already here runs on this thread too;
         * when the socket says EAGAIN the connection is parked and given
         * back by clearing busy. Anything else goes back to the loop. */
        if (r != CSHW_EXCHANGE_NEXT || c->out || atomic_load(&s->stopping)) {
            give_back_input(c);
            c->after_run = r;
            c->resume = RESUME_AFTER_RUN;
            cshs__give_back(c);
            return;
        }
        c->served = 1;
        /* events the loop ignored meanwhile (busy 2): read rather than
         * trust an earlier short read. With none, no byte came since that
         * read (each arrival makes an event), and the read that would only
         * say EAGAIN is saved: a system call per request of a blocking
         * application. One that comes from here on fails the swap below. */
        if (atomic_load(&c->busy) == 2) cshw_exchange_recheck(c->x);
        int in = cshw_exchange_input(c->x, &t);
        if (in == CSHW_EXCHANGE_WANT_INPUT && blocked && !c->rdhup && !c->io->pending(c) &&
            wait_next_request(c)) {
            in = cshw_exchange_input(c->x, &t);
        }
        if (in == CSHW_EXCHANGE_READY) continue;
        if (in != CSHW_EXCHANGE_WANT_INPUT || c->rdhup || c->io->pending(c) || cshs__stream_left(c))
            break;
        give_back_input(c);
        cshs__park_input(w, c);
        int held = 1;
        if (atomic_compare_exchange_strong(&c->busy, &held, 0)) return;
        /* an event came after the read (busy became 2): the loop reads */
        break;
    }
    give_back_input(c);
    c->resume = RESUME_EVENT;
    cshs__give_back(c);
}

void cshs__conn_resume(cshs_worker *w, cshs_conn *c)
{
    int how = c->resume;
    if (how == RESUME_DEFERRED) {
        cshs__conn_continue(w, c);
        return;
    }
    if (how == RESUME_WAIT) {
        c->resume = RESUME_AFTER_RUN;
        cshs__wait_begin(w, c);
        return;
    }
    c->resume = RESUME_AFTER_RUN;
    /* the loop ignored its events while another thread had it: the next
     * input reads rather than trusting an earlier short read */
    if (c->x) cshw_exchange_recheck(c->x);
    if (how == RESUME_EVENT)
        cshs__conn_event(w, c);
    else if (cshs__after_exchange(w, c, c->after_run, 1))
        cshs__drive(w, c);
}
