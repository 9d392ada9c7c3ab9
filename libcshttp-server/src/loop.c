/* The event loops: the wait, the dispatch of each event, connections
 * given back by handlers' threads, posted work and the sweep. */
#include <errno.h>
#include <poll.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "list.h"
#include "server_impl.h"

/* ---- the loops ---- */

/* The loop this thread runs (its owner), else NULL. */
static _Thread_local cshs_loop *self_loop;

cshs_loop *cshs__self_loop(void)
{
    return self_loop;
}

cshs_loop *cshs__set_self_loop(cshs_loop *l)
{
    cshs_loop *before = self_loop;
    self_loop = l;
    return before;
}

int cshs__on_reactor(const cshs_reactor *r)
{
    return r && self_loop == (const cshs_loop *)r;
}

void cshs__wake_loop(cshs_loop *l)
{
    uint64_t one = 1;
    if (write(l->evfd, &one, sizeof one) < 0) {
        /* full (it cannot be after one write without a read): awake anyway */
    }
}

/* The supervisor is woken (once) when a loop enters a handler while it
 * sleeps its long wait. */
static void wake_supervisor(cshs_server *s)
{
    if (atomic_load_explicit(&s->sup_sleeping, memory_order_relaxed) &&
        atomic_exchange(&s->sup_sleeping, 0)) {
        /* under the mutex: the supervisor is then either inside its wait or
         * has not read the loops yet, so the signal is not lost */
        pthread_mutex_lock(&s->mu);
        pthread_cond_signal(&s->sup_cv);
        pthread_mutex_unlock(&s->mu);
    }
}

int64_t cshs__handler_begin(cshs_loop *l)
{
    int64_t now = cshs__now_us();
    atomic_store(&l->handler_since_us, now);
    wake_supervisor(l->srv);
    return now;
}

int cshs__handler_end(cshs_loop *l, int64_t since)
{
    /* the value this thread stored: after a hand-over, -1, or the next
     * owner's own handler's, which must not pass for ours */
    return atomic_compare_exchange_strong(&l->handler_since_us, &since, 0);
}

void cshs__give_back(cshs_conn *c)
{
    cshs_loop *l = c->loop;
    pthread_mutex_lock(&l->mu);
    CSHS_STACK_PUSH(l->returned, c, link);
    pthread_mutex_unlock(&l->mu);
    cshs__wake_loop(l);
}

/* Whether the loop may serve connection c now: not while a handler's
 * thread has it. Then the event is noted (busy 2), for that thread to
 * hand the connection back rather than park it. */
static int claim(cshs_conn *c)
{
    int b = atomic_load_explicit(&c->busy, memory_order_acquire);
    while (b != 0) {
        if (b == 2) return 0;
        if (atomic_compare_exchange_weak(&c->busy, &b, 2)) return 0;
    }
    return 1;
}

void cshs__conn_signal(cshs_conn *c, int gone)
{
    if (c->closed) return;
    if (claim(c)) {
        /* served after the batch, as a posted connection (take_posted
         * claims it again) */
        cshs__unpark(c);
        cshs__conn_post(c);
        return;
    }
    if (gone) cshs__conn_client_left(c);
}

/* The loop's wake-up: connections handlers gave back go on. */
static void take_returned(cshs_worker *w, cshs_loop *l)
{
    uint64_t v;
    if (read(l->evfd, &v, sizeof v) < 0) {
        /* nothing to read: woken for the stop or a sweep */
    }
    pthread_mutex_lock(&l->mu);
    cshs_conn *list = l->returned;
    l->returned = NULL;
    pthread_mutex_unlock(&l->mu);
    /* given back last first: served in the order they came */
    cshs_conn *rev = NULL, *c;
    while (list) {
        CSHS_STACK_POP(list, c, link);
        CSHS_STACK_PUSH(rev, c, link);
    }
    while (rev) {
        CSHS_STACK_POP(rev, c, link);
        if (w->lost) {
            /* this thread lost the loop in a handler met here: the rest
             * go back on the list for the new owner */
            cshs__give_back(c);
            continue;
        }
        atomic_store_explicit(&c->busy, 0, memory_order_relaxed);
        cshs__conn_resume(w, c);
    }
}

/* Deadlines, the stop, and a listener paused for want of descriptors. */
static void sweep(cshs_worker *w, cshs_loop *l)
{
    cshs_server *s = l->srv;
    int64_t now = cshs__now_ms();
    atomic_store_explicit(&l->next_sweep_ms, now + (int64_t)s->o.sweep_interval_ms,
                          memory_order_relaxed);
    /* Another loop's accept adds a connection at the list's head, under
     * the lock, and changes no link the walk reads; only the owner takes
     * one out. So the head is read under the lock, and the rest without. */
    pthread_mutex_lock(&l->mu);
    cshs_conn *first = l->conns;
    pthread_mutex_unlock(&l->mu);
    for (cshs_conn *c = first, *next; c; c = next) {
        next = c->next;
        if (!atomic_load_explicit(&c->busy, memory_order_acquire) && c->parked)
            cshs__conn_sweep(w, c, now);
    }
    cshs__h2_trim_spares(l);
    if (l->listeners_paused && !atomic_load(&s->stopping)) {
        l->listeners_paused = 0;
        for (int i = 0; i < s->nlis; i++) {
            struct epoll_event ev;
            ev.events = EPOLLIN | EPOLLEXCLUSIVE;
            ev.data.ptr = &s->lis[i];
            /* EEXIST when it is there: only a paused one is added back */
            epoll_ctl(l->epfd, EPOLL_CTL_ADD, s->lis[i].fd, &ev);
        }
    }
}

/* Frees the closed connections, but those still on the posted list
 * (closed by an event after they were posted): they stay until
 * take_posted has taken them off. */
void cshs__free_closed(cshs_loop *l)
{
    cshs_conn *still_posted = NULL;
    while (l->closed_conns) {
        cshs_conn *c;
        CSHS_STACK_POP(l->closed_conns, c, link);
        if (c->posted) {
            CSHS_STACK_PUSH(still_posted, c, link);
        } else {
            cshs__conn_free(c);
        }
    }
    l->closed_conns = still_posted;
}

/* Connections that stopped early to let others go first, and deferred
 * requests' continuations (posted): the ones on the list now, in order;
 * those posted meanwhile wait for the next batch. One at a time, the rest
 * left on the list and counted (nposted): when one blocks, the supervisor
 * sees work waiting behind it and hands the loop over, and the new owner
 * finds them there (the old one touches the list no more). */
static void take_posted(cshs_worker *w, cshs_loop *l)
{
    for (int n = atomic_load_explicit(&l->nposted, memory_order_relaxed); n > 0 && !w->lost; n--) {
        cshs_conn *c;
        CSHS_FIFO_POP(l->posted, l->posted_tail, c, post_next);
        c->posted = 0;
        atomic_fetch_sub_explicit(&l->nposted, 1, memory_order_relaxed);
        if (c->closed) continue; /* the next cshs__free_closed frees it */
        if (c->resume == RESUME_DEFERRED)
            cshs__conn_continue(w, c);
        else if (claim(c))
            cshs__conn_event(w, c);
    }
}

/* Runs the loop until the thread loses it (handed over while in a
 * handler) or the server exits. */
static void serve_loop(cshs_worker *w, cshs_loop *l)
{
    cshs_server *s = l->srv;
    while (!atomic_load(&s->exiting)) {
        int next = atomic_load_explicit(&l->next, memory_order_relaxed);
        int nev = atomic_load_explicit(&l->nev, memory_order_relaxed);
        if (next >= nev) {
            cshs__free_closed(l);
            /* between batches, so that no event taken meets a watch its
             * ready removed */
            int64_t now = cshs__now_ms();
            int64_t due = atomic_load_explicit(&l->watch_due_ms, memory_order_relaxed);
            if (now >= l->next_watch_check_ms || (due && now >= due) || atomic_load(&s->forced)) {
                l->next_watch_check_ms = now + (int64_t)s->o.sweep_interval_ms;
                cshs__expire_watches(l, now);
            }
            int64_t wait = 0;
            if (!l->posted && !atomic_load_explicit(&l->nkicked, memory_order_acquire)) {
                now = cshs__now_ms();
                wait = atomic_load_explicit(&l->next_sweep_ms, memory_order_relaxed) - now;
                /* a watch's deadline wakes the loop when it comes (one
                 * armed from another thread meanwhile, by the sweep's) */
                due = atomic_load_explicit(&l->watch_due_ms, memory_order_relaxed);
                if (due && due - now < wait) wait = due - now;
                if (wait < 0) wait = 0;
                if (wait > 1000) wait = 1000;
            }
            int n = epoll_wait(l->epfd, l->evs, CSHS_LOOP_BATCH, (int)wait);
            if (n < 0) n = 0;
            atomic_store_explicit(&l->next, 0, memory_order_relaxed);
            atomic_store_explicit(&l->nev, n, memory_order_relaxed);
            next = 0;
            nev = n;
        }
        if (cshs__now_ms() >= atomic_load_explicit(&l->next_sweep_ms, memory_order_relaxed)) {
            sweep(w, l);
            if (w->lost) return;
        }
        while (next < nev) {
            /* the cursor moves before the event is served: a thread that
             * takes the loop over goes on with the next one */
            atomic_store_explicit(&l->next, next + 1, memory_order_relaxed);
            uint64_t data = l->evs[next].data.u64;
            void *ptr = (void *)(uintptr_t)(data & CSHS_EV_PTR_MASK);
            /* what the registration points at says what it is (a watch's
             * tag may have been written by another thread: atomic) */
            int tag = __atomic_load_n((int *)ptr, __ATOMIC_RELAXED);
            if (tag == TAG_CONN) {
                cshs_conn *c = ptr;
                uint32_t ev = l->evs[next].events;
                /* writability alone means nothing to a connection that
                 * reads and waits for no write of its own (once a write
                 * waited, writability stays registered), as nginx's empty
                 * write handler: no read is spent to see EAGAIN */
                if (!c->closed && claim(c)) {
                    int idle_out = !(ev & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) &&
                                   c->phase == CP_READ && c->io_wait != POLLOUT;
                    if (ev & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) c->rdhup = 1;
                    if (!idle_out) cshs__conn_event(w, c);
                } else if (!c->closed && (ev & (EPOLLRDHUP | EPOLLHUP | EPOLLERR))) {
                    /* busy: a request that waits for a peer (deferred)
                     * learns that its client left */
                    cshs__conn_client_left(c);
                }
            } else if (tag == TAG_LISTENER) {
                if (!atomic_load(&s->stopping)) cshs__accept_one(w, l, ptr);
            } else if (tag == TAG_WATCH) {
                cshs__watch_event(l, ptr, l->evs[next].events);
            } else if (tag == TAG_PERSISTENT) {
                cshs__persistent_event(l, ptr, (unsigned)(data >> 48), l->evs[next].events);

            } else {
                take_returned(w, l);
            }
            if (w->lost) return;
            next = atomic_load_explicit(&l->next, memory_order_relaxed);
            nev = atomic_load_explicit(&l->nev, memory_order_relaxed);
        }
        if (l->posted) {
            take_posted(w, l);
            if (w->lost) return;
        }
        if (atomic_load_explicit(&l->nkicked, memory_order_acquire)) {
            cshs__h2_take_kicked(w, l);
            if (w->lost) return;
        }
    }
}

void cshs__run_loop(cshs_worker *w, cshs_loop *l)
{
    w->lost = 0;
    atomic_store(&l->owner_tid, w->tid);
    self_loop = l;
    serve_loop(w, l);
    self_loop = NULL;
}
