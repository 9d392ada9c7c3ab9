/* The loops as reactors (reactor.h): one-shot watches armed from any
 * thread, persistent watches (persistent_watch.h) and the watches' deadlines. */
#include <errno.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "list.h"
#include "server_impl.h"

/* ---- the loops as reactors (reactor.h) ---- */

static void unlist(cshs_loop *l, cshs_watch *w)
{
    CSHS_LIST_REMOVE(l->watches, w, prev, next);
}

/* Under l->mu: the loop wakes by w's deadline. A server's loop armed
 * from another thread for sooner than it means to wake is late by up to
 * its sweep interval (reactor.h); a thread's own loop, which has no
 * sweep, is woken to look again. */
static void note_deadline(cshs_loop *l, const cshs_watch *w)
{
    int64_t due = atomic_load_explicit(&l->watch_due_ms, memory_order_relaxed);
    if (w->deadline_ms && (!due || w->deadline_ms < due)) {
        atomic_store_explicit(&l->watch_due_ms, w->deadline_ms, memory_order_relaxed);
        if (!l->srv && !cshs__on_reactor((cshs_reactor *)l)) cshs__wake_loop(l);
    }
}

/* Under l->mu: w goes on l's list of armed watches (their deadlines). */
static void enlist(cshs_loop *l, cshs_watch *w)
{
    CSHS_LIST_PUSH(l->watches, w, prev, next);
}

/* Under l->mu: the watch's registration in l, inert (no event reported
 * until armed again). */
static void make_inert(cshs_loop *l, cshs_watch *w)
{
    struct epoll_event ev;
    ev.events = EPOLLONESHOT;
    ev.data.ptr = w;
    epoll_ctl(l->epfd, EPOLL_CTL_MOD, w->fd, &ev);
}

int cshs_reactor_arm(cshs_reactor *r, cshs_watch *w)
{
    if (!r || !w || !w->ready) return -EINVAL;
    cshs_loop *l = (cshs_loop *)r;
    if (w->armed && w->reg != r) return -EINVAL;
    /* read by the loop's owner before anything else of an event (an
     * atomic access: the arming thread may be another) */
    if (__atomic_load_n(&w->tag, __ATOMIC_RELAXED) != TAG_WATCH)
        __atomic_store_n(&w->tag, TAG_WATCH, __ATOMIC_RELAXED);
    struct epoll_event ev;
    ev.events = w->events | EPOLLONESHOT;
    ev.data.ptr = w;
    /* armed and listed under the lock: the event's dispatch and the
     * deadline check (the loop's owner) take it too, and never meet a
     * watch half armed. Registered already (the reactor it was armed on
     * last): re-armed with one MOD. */
    /* A socket armed on another loop since stays registered, inert, in
     * this one too: a pooled connection used by the handlers of two loops
     * in turn would otherwise pay an ADD that fails (EEXIST) before its
     * MOD each time it comes back. */
    size_t index = l->index;
    uint64_t bit = index < 64 ? (uint64_t)1 << index : 0;
    pthread_mutex_lock(&l->mu);
    int op = w->reg == r || (w->regs & bit) ? EPOLL_CTL_MOD : EPOLL_CTL_ADD;
    int e = epoll_ctl(l->epfd, op, w->fd, &ev) < 0 ? errno : 0;
    if (e == ENOENT || e == EEXIST) {
        op = e == ENOENT ? EPOLL_CTL_ADD : EPOLL_CTL_MOD;
        e = epoll_ctl(l->epfd, op, w->fd, &ev) < 0 ? errno : 0;
    }
    if (e == 0) {
        if (!w->armed) enlist(l, w);
        note_deadline(l, w);
        w->reg = r;
        w->regs |= bit;
        w->armed = 1;
    }
    pthread_mutex_unlock(&l->mu);
    return -e;
}

void cshs_reactor_disarm(cshs_watch *w)
{
    if (!w || !w->armed) return;
    cshs_loop *l = (cshs_loop *)w->reg;
    pthread_mutex_lock(&l->mu);
    if (w->armed) {
        unlist(l, w);
        w->armed = 0;
        make_inert(l, w);
    }
    pthread_mutex_unlock(&l->mu);
}

/* The one event of an armed watch (the loop's owner): taken off the list,
 * then given. One found not armed (none can be: a disarmed registration
 * reports nothing) is ignored. */
void cshs__watch_event(cshs_loop *l, cshs_watch *w, uint32_t events)
{
    pthread_mutex_lock(&l->mu);
    int armed = w->armed && w->reg == (cshs_reactor *)l;
    if (armed) {
        unlist(l, w);
        w->armed = 0;
    }
    pthread_mutex_unlock(&l->mu);
    if (armed) w->ready(w, events);
}

/* ---- persistent watches (persistent_watch.h) ---- */

/* The loops are freed by the last of the server and the persistent watches
 * registered with them to let go. */
static void loops_ref(cshs_loop *l)
{
    atomic_fetch_add(&(l - l->index)->refs, 1);
}

void cshs__loops_unref(cshs_loop *l)
{
    cshs_loop *base = l - l->index;
    if (atomic_fetch_sub(&base->refs, 1) != 1) return;
    if (!base->srv) { /* a thread's own loop: its descriptors are its own */
        close(base->epfd);
        close(base->evfd);
    }
    for (unsigned i = 0; i < base->count; i++) pthread_mutex_destroy(&base[i].mu);
    free(base);
}

/* The socket's registration with l (ADD or MOD) for `events`; its data
 * is the struct's address and generation. 0, or errno. */
static int persistent_ctl(cshs_loop *l, cshs_persistent_watch *k, int op, uint32_t events)
{
    unsigned gen = atomic_load_explicit(&k->gen, memory_order_relaxed);
    struct epoll_event ev;
    ev.events = events;
    ev.data.u64 = (uint64_t)(uintptr_t)k | (uint64_t)(gen & 0xffff) << 48;
    return epoll_ctl(l->epfd, op, k->w.fd, &ev) < 0 ? errno : 0;
}

/* Under l->mu: the socket leaves l (not armed any more); an event of it
 * that l has taken already is dropped by its generation. */
static void persistent_leave(cshs_loop *l, cshs_persistent_watch *k)
{
    if (k->w.armed) {
        unlist(l, &k->w);
        k->w.armed = 0;
    }
    atomic_store_explicit(&k->gen, atomic_load_explicit(&k->gen, memory_order_relaxed) + 1,
                          memory_order_relaxed);
    k->w.reg = NULL;
}

int cshs__persistent_register(cshs_persistent_watch *k, cshs_reactor *r, int fd)
{
    if (!k || !r || (uint64_t)(uintptr_t)k > CSHS_EV_PTR_MASK) return -EINVAL;
    cshs_loop *l = (cshs_loop *)r;
    if (k->w.reg == r && k->w.fd == fd) return 0;
    cshs__persistent_unregister(k); /* registered with another loop: it leaves that one */
    __atomic_store_n(&k->w.tag, TAG_PERSISTENT, __ATOMIC_RELAXED);
    k->w.fd = fd;
    k->muted = 0;
    atomic_store(&k->missed, 0);
    loops_ref(l);
    pthread_mutex_lock(&l->mu);
    k->w.reg = r;
    pthread_mutex_unlock(&l->mu);
    int e = persistent_ctl(l, k, EPOLL_CTL_ADD, CSHS_PERSISTENT_EVENTS);
    if (e) cshs__persistent_forget(k);
    return -e;
}

/* What an armed persistent watch is given: its events, and errors. */
static uint32_t persistent_wants(const cshs_persistent_watch *k)
{
    return k->w.events | EPOLLERR | EPOLLHUP;
}

int cshs__persistent_arm(cshs_persistent_watch *k)
{
    if (!k || !k->w.reg || !k->w.ready) return -EINVAL;
    cshs_loop *l = (cshs_loop *)k->w.reg;
    uint32_t want = persistent_wants(k);
    int e = 0;
    /* all under the lock: once armed, the event may be given (and its
     * ready close the socket) as soon as the lock is let go */
    pthread_mutex_lock(&l->mu);
    uint32_t missed = atomic_fetch_and(&k->missed, ~want) & want;
    if (missed || k->muted) {
        /* an event came before the arm (the answer to a request sent just
         * before it, say), or the registration asked for none (muted):
         * epoll looks at the socket again and raises the event if the
         * socket is ready, to be given once armed */
        e = persistent_ctl(l, k, EPOLL_CTL_MOD, CSHS_PERSISTENT_EVENTS);
        if (!e) k->muted = 0;
    }
    if (!e && !k->w.armed) {
        enlist(l, &k->w);
        note_deadline(l, &k->w);
        k->w.armed = 1;
    }
    pthread_mutex_unlock(&l->mu);
    return -e;
}

int cshs__persistent_mute(cshs_persistent_watch *k)
{
    if (!k || !k->w.reg) return 0;
    cshs_loop *l = (cshs_loop *)k->w.reg;
    int e = 0;
    pthread_mutex_lock(&l->mu);
    if (!k->muted) {
        /* EPOLLERR and EPOLLHUP still come: remembered as missed */
        e = persistent_ctl(l, k, EPOLL_CTL_MOD, EPOLLET);
        if (!e) k->muted = 1;
    }
    pthread_mutex_unlock(&l->mu);
    return -e;
}

int cshs__persistent_disarm(cshs_persistent_watch *k, cshs_reactor *r)
{
    cshs_loop *l = (cshs_loop *)r;
    pthread_mutex_lock(&l->mu);
    int armed = k->w.reg == r && k->w.armed;
    if (armed) {
        unlist(l, &k->w);
        k->w.armed = 0;
    }
    pthread_mutex_unlock(&l->mu);
    return armed;
}

uint32_t cshs__persistent_take_missed(cshs_persistent_watch *k, uint32_t mask)
{
    return atomic_fetch_and(&k->missed, ~mask) & mask;
}

void cshs__persistent_unregister(cshs_persistent_watch *k)
{
    if (!k || !k->w.reg) return;
    epoll_ctl(((cshs_loop *)k->w.reg)->epfd, EPOLL_CTL_DEL, k->w.fd, NULL);
    cshs__persistent_forget(k);
}

void cshs__persistent_forget(cshs_persistent_watch *k)
{
    if (!k || !k->w.reg) return;
    cshs_loop *l = (cshs_loop *)k->w.reg;
    pthread_mutex_lock(&l->mu);
    persistent_leave(l, k);
    pthread_mutex_unlock(&l->mu);
    cshs__loops_unref(l); /* after the server's free, the last one frees the loops */
}

/* An event of a persistent watch (the loop's owner): given when armed for it,
 * else remembered; one of a socket that has left since (another
 * generation) is dropped. */
void cshs__persistent_event(cshs_loop *l, cshs_persistent_watch *k, unsigned gen, uint32_t events)
{
    pthread_mutex_lock(&l->mu);
    if ((atomic_load_explicit(&k->gen, memory_order_relaxed) & 0xffff) != gen) {
        pthread_mutex_unlock(&l->mu);
        return;
    }
    /* w.events is the owner's while not armed: read only when armed */
    int give = k->w.armed && (events & persistent_wants(k));
    if (give) {
        unlist(l, &k->w);
        k->w.armed = 0;
    } else {
        atomic_fetch_or(&k->missed, events);
    }
    pthread_mutex_unlock(&l->mu);
    if (give) k->w.ready(&k->w, events);
}

void cshs__expire_watches(cshs_loop *l, int64_t now_ms)
{
    int all = l->srv && atomic_load(&l->srv->forced);
    cshs_watch *due = NULL;
    int64_t earliest = 0; /* of those left armed */
    pthread_mutex_lock(&l->mu);
    for (cshs_watch *w = l->watches, *next; w; w = next) {
        next = w->next;
        if (!all && (!w->deadline_ms || now_ms < w->deadline_ms)) {
            if (w->deadline_ms && (!earliest || w->deadline_ms < earliest))
                earliest = w->deadline_ms;
            continue;
        }
        unlist(l, w);
        w->armed = 0;
        if (w->tag != TAG_PERSISTENT) make_inert(l, w); /* a persistent watch stays registered */
        CSHS_STACK_PUSH(due, w, next);
    }
    atomic_store_explicit(&l->watch_due_ms, earliest, memory_order_relaxed);
    pthread_mutex_unlock(&l->mu);
    while (due) {
        cshs_watch *w;
        CSHS_STACK_POP(due, w, next);
        w->ready(w, 0);
    }
}
