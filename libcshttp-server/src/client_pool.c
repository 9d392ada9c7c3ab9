/* The client's pools: the rules by which a connection is taken and given
 * back, under the client's lock, the waiters' queues, the tick that keeps
 * deadlines and min_idle, and the acquire-wait histogram and statistics. */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>

#include "client_impl.h"
#include "list.h"
#include "thread_reactor.h"
#include "cshttp_internal/sized.h"

/* ---- the acquire-wait histogram ---- */

static unsigned hist_bucket(uint64_t v)
{
    if (v < 16) return (unsigned)v;
    unsigned e = 63u - (unsigned)__builtin_clzll(v); /* >= 4 */
    unsigned b = 16 + (e - 4) * 16 + (unsigned)((v >> (e - 4)) & 15);
    return b < HIST_BUCKETS ? b : HIST_BUCKETS - 1;
}

static uint64_t hist_upper(unsigned b)
{
    if (b < 16) return b;
    unsigned e = (b - 16) / 16 + 4, m = (b - 16) % 16;
    uint64_t width = 1ull << (e - 4);
    return (1ull << e) + (m + 1) * width - 1;
}

static uint64_t hist_quantile(const pool *p, double q)
{
    uint64_t total = 0;
    for (unsigned i = 0; i < HIST_BUCKETS; i++) total += p->hist[i];
    if (!total) return 0;
    uint64_t rank = (uint64_t)(q * (double)total + 0.999999);
    if (rank < 1) rank = 1;
    uint64_t seen = 0;
    for (unsigned i = 0; i < HIST_BUCKETS; i++) {
        seen += p->hist[i];
        if (seen >= rank) return hist_upper(i);
    }
    return hist_upper(HIST_BUCKETS - 1);
}

void cshs__client_record_wait(pool *p, int64_t since_us)
{
    int64_t w = now_us() - since_us;
    p->hist[hist_bucket(w > 0 ? (uint64_t)w : 0)]++;
    p->requests++;
}

ssize_t cshs_client_stats_sized(cshs_client *c, cshs_client_pool_stats *out, size_t cap,
                                size_t size)
{
    if (!c || (cap && !out) || size < CSHS_CLIENT_POOL_STATS_SIZE_0_3) return -EINVAL;
    size_t n = 0;
    int64_t now = now_ms();
    pthread_mutex_lock(&c->mu);
    for (pool *p = c->pools; p; p = p->next, n++) {
        if (n >= cap) continue;
        cshs_client_pool_stats one, *s = &one; /* this build's, then what fits in the caller's */
        memset(s, 0, sizeof *s);
        snprintf(s->origin, sizeof s->origin, "%s", p->key);
        s->open = p->open;
        s->idle = p->nidle;
        s->opening = p->nopening;
        s->waiters = p->nwaiters;
        s->requests = p->requests;
        s->opens = p->opens;
        s->failures = p->failures;
        s->retries = p->retries;
        s->acquire_timeouts = p->acquire_timeouts;
        s->backoff_ms = p->backoff_until_ms > now ? (uint32_t)(p->backoff_until_ms - now) : 0;
        s->acquire_wait_p50_us = hist_quantile(p, 0.50);
        s->acquire_wait_p99_us = hist_quantile(p, 0.99);
        s->last_backoff_ms = p->last_backoff_ms;
        s->looks = p->looks;
        s->detached = p->detached;
        /* the caller's array: elements of its size */
        csh__sized_out((char *)out + n * size, size, s, sizeof *s);
    }
    pthread_mutex_unlock(&c->mu);
    return (ssize_t)n;
}

/* ---- the pool's rules (under the lock) ---- */

static int can_open(const pool *p, unsigned pool_size, int64_t now)
{
    return now >= p->backoff_until_ms && p->open + p->nopening < pool_size &&
           p->nopening < p->nwaiters;
}

void cshs__client_wq_remove(pool *p, waiter *w)
{
    CSHS_QUEUE_REMOVE(p->wq, p->wq_tail, w, prev, next);
    w->queued = 0;
    p->nwaiters--;
}

static void idle_push(pool *p, conn *cn)
{
    cn->state = C_IDLE;
    cn->idle_ms = now_ms();
    CSHS_LIST_PUSH(p->idle, cn, prev, next);
    p->nidle++;
}

void cshs__client_idle_remove(pool *p, conn *cn)
{
    CSHS_LIST_REMOVE(p->idle, cn, prev, next);
    p->nidle--;
}

/* An async waiter, out of the queue with a connection or an error: served
 * (its request sent, or its call failed) once the lock is let go. */
void cshs__client_make_due(cshs_client *c, waiter *w)
{
    cshs_call *call = w->call;
    CSHS_FIFO_APPEND(c->due, c->due_tail, call, due_next);
}

/* Under the lock: a connect to start for async waiters on `rx` (counted
 * as opening now). 0 when out of memory: the waiters keep waiting (a
 * release, the tick's next look, their deadline). */
int cshs__client_open_job_add(cshs_client *c, pool *p, struct cshs_call *for_call, int own)
{
    open_job *j = malloc(sizeof *j);
    if (!j) return 0;
    j->p = p;
    j->rx = for_call->rx;
    cshs__reactor_hold(j->rx); /* a thread's own loop runs until the connect ends */
    j->connect_ms = for_call->connect_ms;
    j->own = own ? for_call : NULL;
    CSHS_STACK_PUSH(c->open_jobs, j, next);
    p->nopening++;
    return 1;
}

/* Connects started for the waiters, on their reactors: one for each
 * while the rule allows (opens in flight fewer than waiters). */
static void wake_opener(cshs_client *c, pool *p)
{
    int64_t now = now_ms();
    for (waiter *w = p->wq; w && can_open(p, c->o.pool_size, now); w = w->next)
        if (!cshs__client_open_job_add(c, p, w->call, 0)) return;
}

/* How much longer than a waiter of a connection's own reactor the
 * pool's first waiter may have waited and still be passed over for it
 * (next_waiter), and how far down the queue such a waiter is looked
 * for. */
#define OWN_REACTOR_SLACK_US 2000
#define OWN_REACTOR_LOOK 32

/* The waiter a connection given back goes to: the first async waiter on
 * the reactor the connection is registered with, if one is among the
 * first OWN_REACTOR_LOOK and came at most OWN_REACTOR_SLACK_US after the
 * pool's first waiter; else the first waiter. On its own reactor the
 * connection stays where it is watched and the waiter's request is sent
 * by the thread that runs that loop; handed to another loop it costs two
 * epoll_ctl and a wakeup of that loop (in a proxy of two loops with a
 * full pool, every second request). The slack is on the waiters' ages,
 * not on a count of turns: while both loops' first waiters are about as
 * old, connections stay on their loops; once one loop's have waited
 * longer by the slack (a loop with fewer connections than its share), a
 * connection crosses over, as strict first in, first out would have
 * sent it. */
static waiter *next_waiter(pool *p, const conn *cn)
{
    waiter *first = p->wq;
    const cshs_reactor *rx = cn->pw.w.reg;
    if (!rx || first->call->rx == rx) return first;
    int looked = 1;
    for (waiter *w = first->next; w && looked < OWN_REACTOR_LOOK; w = w->next, looked++) {
        if (w->since_us - first->since_us > OWN_REACTOR_SLACK_US) break; /* the queue is in order */
        if (w->call->rx == rx) return w;
    }
    return first;
}

/* A usable connection goes to a waiter (next_waiter), or to the idle
 * list. */
void cshs__client_give(cshs_client *c, pool *p, conn *cn)
{
    if (p->wq) {
        waiter *w = next_waiter(p, cn);
        cshs__client_wq_remove(p, w);
        cn->state = C_BUSY;
        w->got = cn;
        cshs__client_record_wait(p, w->since_us);
        cshs__client_make_due(c, w);
        return;
    }
    idle_push(p, cn);
}

/* A waiter out of the queue with an error, handed to be failed. */
static void fail_waiter(cshs_client *c, pool *p, waiter *w, int err)
{
    cshs__client_wq_remove(p, w);
    w->err = err;
    cshs__client_make_due(c, w);
}

due_work cshs__client_take_due(cshs_client *c)
{
    due_work hw = {c->due, c->open_jobs};
    c->due = c->due_tail = NULL;
    c->open_jobs = NULL;
    return hw;
}

/* Lets go of the lock, then serves what was handed under it. */
void cshs__client_detach(cshs_call *call)
{
    cshs_client *c = call->c;
    pthread_mutex_lock(&c->mu);
    call->cn->detached = 1;
    call->p->detached++;
    cshs__client_dropped(c, call->p); /* a place for the next request: a waiter's open */
    cshs__client_unlock_and_serve(c);
}

void cshs__client_unlock_and_serve(cshs_client *c)
{
    due_work hw = cshs__client_take_due(c);
    pthread_mutex_unlock(&c->mu);
    cshs__client_serve_due(c, hw);
}

/* 1 when nothing can serve a waiter of `p` before its backoff ends: a
 * connect failed, none is open (idle or in use: one given back would do)
 * and none is being opened. Waiting would only wait for the deadline: such
 * requests fail at once with that connect's error, as nginx answers 502
 * at once for a refused origin; the backoff still keeps them from trying
 * the origin again. */
int cshs__client_dead_end(const pool *p, int64_t now)
{
    return now < p->backoff_until_ms && p->last_error && p->open == 0 && p->nopening == 0;
}

/* Under the lock: every waiter fails with the last connect's error when
 * the pool is at a dead end. */
static void fail_waiters(cshs_client *c, pool *p)
{
    if (!cshs__client_dead_end(p, now_ms())) return;
    for (waiter *w = p->wq, *nx; w; w = nx) {
        nx = w->next;
        fail_waiter(c, p, w, p->last_error);
    }
}

/* Counts a connection closed; the caller closes it after unlocking. */
void cshs__client_dropped(cshs_client *c, pool *p)
{
    p->open--;
    fail_waiters(c, p);
    wake_opener(c, p);
}

void cshs__client_open_failed(cshs_client *c, pool *p, int err)
{
    p->failures++;
    p->last_error = err;
    p->last_fail_us = now_us();
    c->seed = c->seed * 1103515245u + 12345u;
    p->last_backoff_ms = BACKOFF_MIN_MS + (uint32_t)((c->seed >> 16) % BACKOFF_JITTER_MS);
    p->backoff_until_ms = now_ms() + (int64_t)p->last_backoff_ms;
    fail_waiters(c, p);
}

/* Under the lock, with no waiter queued: the most recently used idle
 * connection still fit to send on (counted as a request that waited
 * since `since_us`), or NULL; the unfit ones go on *stale, to be closed
 * after unlocking. A request that will wait on reactor `rx` takes the most
 * recently used of those registered there, if any: one registered with
 * another loop would have to leave it (two epoll_ctl). Its socket is
 * looked at, when it has to be (conn_needs_look), with the lock let go
 * meanwhile: the connection is this thread's then, and the other threads
 * (another loop's requests) do not wait for it. */
conn *cshs__client_take_idle(cshs_client *c, pool *p, cshs_reactor *rx, int64_t since_us,
                             conn **stale)
{
    while (p->idle && !p->wq) {
        conn *cn = p->idle;
        if (rx)
            for (conn *o = p->idle; o; o = o->next)
                if (o->pw.w.reg == rx) {
                    cn = o;
                    break;
                }
        cshs__client_idle_remove(p, cn);
        cn->state = C_BUSY;
        int fit = !cshs__client_conn_too_old(c, cn, since_us / 1000);
        if (fit && cshs__client_conn_needs_look(cn)) {
            pthread_mutex_unlock(&c->mu);
            fit = cshs__client_conn_quiet(cn);
            pthread_mutex_lock(&c->mu);
            p->looks++;
        }
        if (fit) {
            cshs__client_record_wait(p, since_us);
            return cn;
        }
        cshs__client_dropped(c, p);
        CSHS_STACK_PUSH(*stale, cn, next);
    }
    return NULL;
}

void cshs__client_evict_lru(cshs_client *c, pool *p, conn **stale)
{
    if (p->open + p->nopening < c->o.pool_size || !p->idle) return;
    conn *lru = p->idle;
    while (lru->next) lru = lru->next;
    cshs__client_idle_remove(p, lru);
    p->open--;
    CSHS_STACK_PUSH(*stale, lru, next);
}

/* Gives a call's connection back: reused when `keep`, else closed. */
void cshs__client_release(cshs_client *c, pool *p, conn *cn, int keep)
{
    if (cn->detached) { /* its place in the pool was given up already */
        cshs__client_conn_close(cn);
        return;
    }
    if (keep && c->o.max_lifetime_ms && now_ms() - cn->born_ms >= (int64_t)c->o.max_lifetime_ms)
        keep = 0;
    /* A thread's own loop keeps no idle connection: it takes no event
     * between its thread's calls (thread_reactor.h), so none would tell of
     * the origin's close; and an event it took while serving another
     * client's call must not meet this connection freed with its client. */
    if (keep && !cshs__reactor_live(cn->pw.w.reg)) cshs__persistent_unregister(&cn->pw);
    pthread_mutex_lock(&c->mu);
    if (keep) {
        cn->start = cn->end = 0;
        cshs__client_give(c, p, cn);
    } else {
        cshs__client_dropped(c, p);
    }
    due_work hw = cshs__client_take_due(c);
    pthread_mutex_unlock(&c->mu);
    if (!keep) cshs__client_conn_close(cn);
    cshs__client_serve_due(c, hw);
}

/* Under the lock: an async call joins its pool's queue. */
void cshs__client_enqueue_async(cshs_client *c, pool *p, waiter *w)
{
    w->queued = 1;
    CSHS_QUEUE_APPEND(p->wq, p->wq_tail, w, prev, next);
    p->nwaiters++;
    wake_opener(c, p);
}

/* ---- the tick ---- */

typedef struct tick_job {
    struct tick_job *next;
    pool *p;
    conn *cn; /* an opening connection to look at; NULL: start one */
    int result;
} tick_job;

void cshs_client_tick(cshs_client *c)
{
    if (!c) return;
    conn *closing = NULL;
    tick_job *jobs = NULL;
    pthread_mutex_lock(&c->mu);
    int64_t now = now_ms();
    for (pool *p = c->pools; p; p = p->next) {
        /* waiters past their deadline; a connect that failed while one
         * waited is the better answer than the timeout */
        for (waiter *w = p->wq, *nx; w; w = nx) {
            nx = w->next;
            if (now < w->deadline_ms) continue;
            p->acquire_timeouts++;
            fail_waiter(c, p, w,
                        p->last_error && p->last_fail_us >= w->since_us
                            ? p->last_error
                            : CSHS_CLIENT_E_ACQUIRE_TIMEOUT);
        }
        /* idle connections past idle_timeout_ms, past max_lifetime_ms, or
         * closed by the origin (an unread FIN, or bytes nobody asked for) */
        for (conn *cn = p->idle, *nx; cn; cn = nx) {
            nx = cn->next;
            if (now - cn->idle_ms < (int64_t)c->o.idle_timeout_ms &&
                cshs__client_conn_fresh(c, cn, now))
                continue;
            cshs__client_idle_remove(p, cn);
            p->open--;
            CSHS_STACK_PUSH(closing, cn, next);
        }
        /* the connections the tick is opening: looked at unlocked */
        while (p->opening) {
            tick_job *j = calloc(1, sizeof *j);
            if (!j) break;
            conn *cn;
            CSHS_STACK_POP(p->opening, cn, next);
            j->p = p;
            j->cn = cn;
            CSHS_STACK_PUSH(jobs, j, next);
        }
        /* min_idle: one more per tick */
        if (c->o.min_idle && p->nidle + p->nopening < c->o.min_idle &&
            p->open + p->nopening < c->o.pool_size && now >= p->backoff_until_ms) {
            tick_job *j = calloc(1, sizeof *j);
            if (j) {
                p->nopening++;
                j->p = p;
                CSHS_STACK_PUSH(jobs, j, next);
            }
        }
        if (p->wq) wake_opener(c, p); /* a backoff that ended: the waiters may open again */
    }
    /* pools with nothing in them and nobody using them; one in its
     * backoff is kept until it ends, or the next request would try the
     * origin again at once (its requests fail at once now, so none waits
     * to keep it) */
    for (pool **pp = &c->pools; *pp;) {
        pool *p = *pp;
        if (!p->open && !p->nopening && !p->nwaiters && !p->users && now >= p->backoff_until_ms) {
            *pp = p->next;
            free(p);
        } else {
            pp = &p->next;
        }
    }
    cshs__client_unlock_and_serve(c);
    cshs__client_close_list(closing);
    closing = NULL;
    for (tick_job *j = jobs; j; j = j->next) {
        if (!j->cn)
            j->result = cshs__client_open_start(j->p, c->o.connect_timeout_ms, &j->cn);
        else
            j->result = cshs__client_open_progress(c, j->cn);
    }

    pthread_mutex_lock(&c->mu);
    for (tick_job *j = jobs, *nx; j; j = nx) {
        nx = j->next;
        pool *p = j->p;
        if (j->result < 0) { /* could not start, or failed */
            p->nopening--;
            cshs__client_open_failed(c, p, j->result);
            if (j->cn) {
                CSHS_STACK_PUSH(closing, j->cn, next);
            }
        } else if (j->result == 1) {
            p->nopening--;
            p->open++;
            p->opens++;
            j->cn->born_ms = now_ms();
            cshs__client_give(c, p, j->cn);
        } else { /* on its way: the next tick looks again */
            CSHS_STACK_PUSH(p->opening, j->cn, next);
        }
        free(j);
    }
    cshs__client_unlock_and_serve(c);
    cshs__client_close_list(closing);
}

void *cshs__client_tick_main(void *arg)
{
    cshs_client *c = arg;
    pthread_mutex_lock(&c->tick_mu);
    while (!c->tick_stop) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        int64_t ns = ts.tv_nsec + (int64_t)(c->o.tick_interval_ms % 1000) * 1000000;
        ts.tv_sec += (time_t)(c->o.tick_interval_ms / 1000) + (time_t)(ns / 1000000000);
        ts.tv_nsec = (long)(ns % 1000000000);
        pthread_cond_timedwait(&c->tick_cv, &c->tick_mu, &ts);
        if (c->tick_stop) break;
        pthread_mutex_unlock(&c->tick_mu);
        cshs_client_tick(c);
        pthread_mutex_lock(&c->tick_mu);
    }
    pthread_mutex_unlock(&c->tick_mu);
    return NULL;
}
