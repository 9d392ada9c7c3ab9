/* A connect for cshs_client_send_async's waiters on a reactor, which holds
 * no thread: the name's look-up, the race of its addresses (dial.h), then
 * the TLS handshake. */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "client_impl.h"
#include "thread_reactor.h"

/* The end of a connect started for async waiters on rx: the connection
 * goes to the first waiter (or idle), or the failure counts as any failed
 * connect's (the backoff; waiters at a dead end fail). A retry's own
 * connect (`own`) goes to that call, or it waits as any request. Last,
 * the connect's hold on rx ends (thread_reactor.h). */
static void open_ended(cshs_client *c, pool *p, cshs_reactor *rx, conn *cn, int r,
                       struct cshs_call *own)
{
    /* the pool's: it may go idle, which a thread's own loop keeps no
     * connection for (cshs__client_release says why); whoever takes it
     * registers it where it waits */
    if (r == 1 && !own && !cshs__reactor_live(rx)) cshs__persistent_unregister(&cn->pw);
    pthread_mutex_lock(&c->mu);
    p->nopening--;
    if (r == 1) {
        p->open++;
        p->opens++;
        cn->state = C_IDLE;
        cn->born_ms = now_ms();
        cn->opened_for = NULL;
        if (own) { /* a retry's: that call's */
            cn->state = C_BUSY;
            own->aw.got = cn;
            cshs__client_record_wait(p, own->aw.since_us);
            cshs__client_make_due(c, &own->aw);
        } else {
            cshs__client_give(c, p, cn);
        }
        cn = NULL;
    } else {
        cshs__client_open_failed(c, p, r);
        if (own) { /* as any request now: it waits, or fails at a dead end */
            if (cshs__client_dead_end(p, now_ms())) {
                own->aw.err = r;
                cshs__client_make_due(c, &own->aw);
            } else {
                cshs__client_enqueue_async(c, p, &own->aw);
            }
        }
    }
    due_work hw = cshs__client_take_due(c);
    pthread_mutex_unlock(&c->mu);
    cshs__client_conn_close(cn);
    cshs__client_serve_due(c, hw);
    cshs__reactor_release(rx);
}

/* Its socket was ready (or, given 0, the connect's deadline passed, or
 * the reactor stops). On the reactor's thread. */
static void open_ready(cshs_watch *w, uint32_t events)
{
    conn *cn = w->arg;
    cshs_client *c = cn->p->c;
    int r = CSHS_CLIENT_E_CONNECT_TIMEOUT;
    if (events) {
        short want = 0;
        r = cshs__client_open_advance(c, cn, &want);
        if (r == 0) { /* the TLS handshake goes on: armed again */
            w->events = want == POLLIN ? EPOLLIN | EPOLLRDHUP : EPOLLOUT;
            if (cshs__persistent_arm(&cn->pw) == 0) return;
            r = CSHS_CLIENT_E_CONNECT;
        }
    }
    open_ended(c, cn->p, cn->pw.w.reg, cn, r, cn->opened_for);
}

/* An open for async waiters on a reactor (open_async): the TCP connect
 * to the name's addresses (dial.h), each attempt a connection of its own
 * whose socket is watched on the reactor, until one wins the race and
 * goes on alone to its TLS handshake (open_ready). The reactor's thread
 * runs the race once its first attempt is armed; the attempt that ends
 * it frees it. An attempt's deadline is the open's, but for the newest
 * attempt's, which is the next one's start while an address is left. */
typedef struct race {
    cshs_dial d;
    pool *p;
    cshs_reactor *rx;
    struct cshs_call *own; /* open_job.own */
    int64_t started_ms;    /* the open's start: its deadline runs from here */
    unsigned connect_ms;
    int stopping;                   /* the reactor stops: no attempt starts */
    conn *att[CSHS_DIAL_MAX_ADDRS]; /* the attempts in flight: d.inflight of them */
} race;

static void race_ready(cshs_watch *w, uint32_t events);

/* Arms attempt cn for its connect's end, and for its deadline. */
static int race_arm(race *rc, conn *cn, int newest)
{
    cn->pw.w.events = EPOLLOUT;
    cn->pw.w.deadline_ms = newest ? cshs__dial_wake_ms(&rc->d) : rc->d.deadline_ms;
    cn->pw.w.ready = race_ready;
    cn->pw.w.arg = cn;
    return cshs__persistent_arm(&cn->pw);
}

/* Takes attempt cn out of the race once the dial counted its end (it is
 * closed by the caller): att[0 .. d.inflight] still holds it. */
static void race_remove(race *rc, conn *cn)
{
    for (unsigned i = 0; i <= rc->d.inflight; i++)
        if (rc->att[i] == cn) {
            rc->att[i] = rc->att[rc->d.inflight];
            break;
        }
    cn->race = NULL;
}

/* Starts the attempts that are due, each armed on the reactor. 1 when one
 * was armed: from then on the reactor's thread may run the race, and the
 * caller touches it no more. 0 when none was (none due, or none could
 * start). */
static int race_start(race *rc)
{
    while (!rc->stopping && cshs__dial_due(&rc->d, now_ms())) {
        int connected = 0; /* writable at once then: its event comes */
        int fd = cshs__dial_start(&rc->d, now_ms(), &connected);
        if (fd < 0) return 0;
        conn *cn = cshs__client_conn_alloc(rc->p);
        if (!cn) {
            close(fd);
            cshs__dial_abandon(&rc->d, -ENOMEM);
            return 0;
        }
        cn->fd = fd;
        cn->state = C_OPENING;
        cn->race = rc;
        rc->att[rc->d.inflight - 1] = cn;
        if (cshs__persistent_register(&cn->pw, rc->rx, fd) == 0 && race_arm(rc, cn, 1) == 0)
            return 1;
        cshs__dial_abandon(&rc->d, CSHS_CLIENT_E_CONNECT);
        race_remove(rc, cn);
        cshs__client_conn_close(cn);
        return 0;
    }
    return 0;
}

/* The race is over when no attempt is in flight: the open failed. */
static void race_over_if_done(cshs_client *c, race *rc)
{
    if (rc->d.inflight > 0) return;
    pool *p = rc->p;
    cshs_reactor *rx = rc->rx;
    struct cshs_call *own = rc->own;
    int r = cshs__dial_error(&rc->d);
    free(rc);
    open_ended(c, p, rx, NULL, r, own);
}

/* An attempt's socket was ready, or its deadline passed (0), or the
 * reactor stops (0 before the deadline). On the reactor's thread. */
static void race_ready(cshs_watch *w, uint32_t events)
{
    conn *cn = w->arg;
    race *rc = cn->race;
    cshs_client *c = rc->p->c;
    int64_t now = now_ms();
    if (!events) {
        if (now < w->deadline_ms) {
            rc->stopping = 1;
        } else if (now < rc->d.deadline_ms) {
            /* its attempt delay: the next address starts, and this
             * attempt waits on beside it (RFC 8305 §5) */
            if (race_arm(rc, cn, 0) == 0) {
                race_start(rc);
                return;
            }
        }
        cshs__dial_abandon(&rc->d, CSHS_CLIENT_E_CONNECT_TIMEOUT); /* or stopped */
        race_remove(rc, cn);
        cshs__client_conn_close(cn);
        race_over_if_done(c, rc);
        return;
    }
    if (cshs__dial_done(&rc->d, cn->fd) != 0) {
        race_remove(rc, cn);
        cshs__client_conn_close(cn);
        if (race_start(rc)) return; /* the next address, at once */
        race_over_if_done(c, rc);
        return;
    }
    /* won: the other attempts are closed, and this one goes on */
    cshs__client_won_set(rc->p, cn->fd);
    race_remove(rc, cn);
    while (rc->d.inflight > 0) {
        conn *other = rc->att[--rc->d.inflight];
        other->race = NULL;
        cshs__client_conn_close(other);
    }
    cn->opened_for = rc->own;
    cn->pw.w.deadline_ms = rc->d.deadline_ms;
    free(rc);
    cn->pw.w.ready = open_ready;
    open_ready(w, events);
}

/* The race of the addresses of res (r: the look-up's result), within the
 * open's connect_ms from its start. Ends the open when none can start. */
static void race_begin(cshs_client *c, race *rc, int r, struct addrinfo *res)
{
    if (r == 0) {
        cshs_dial_addr pref;
        const cshs_dial_addr *prefer = cshs__client_won_get(rc->p, &pref);
        r = cshs__dial_init(&rc->d, res, rc->started_ms, rc->connect_ms, prefer);
    }
    if (r < 0) {
        pool *p = rc->p;
        cshs_reactor *rx = rc->rx;
        struct cshs_call *own = rc->own;
        free(rc);
        open_ended(c, p, rx, NULL, r, own);
        return;
    }
    /* last: once an attempt is armed, the reactor's thread runs the race */
    if (race_start(rc)) return;
    race_over_if_done(c, rc);
}

/* The end of the name's look-up for an open on a reactor (its eventfd
 * readable), or its deadline (the open's), or the reactor stops (0). On
 * the reactor's thread. */
static void lookup_ready(cshs_watch *w, uint32_t events)
{
    conn *lc = w->arg;
    race *rc = lc->race;
    cshs_client *c = rc->p->c;
    struct addrinfo *res = NULL;
    int r;
    if (!events || !cshs__lookup_done(lc->lookup, &res, &r)) {
        if (events && cshs__persistent_arm(&lc->pw) == 0) return; /* not yet: no such event */
        r = CSHS_CLIENT_E_RESOLVE; /* not within the connect's time, or the reactor stops */
    }
    lc->race = NULL;
    cshs__client_conn_close(lc); /* lets go of the look-up, which ends by itself if it runs */
    race_begin(c, rc, r, res);
    if (res) freeaddrinfo(res);
}

/* The name of an open on a reactor, looked up on a thread of its own
 * (lookup.h) whose end is an event on the reactor (an eventfd, kept
 * registered as a connection's socket is, persistent_watch.h). 0, or an error. */
static int lookup_async(race *rc)
{
    conn *lc = cshs__client_conn_alloc(rc->p);
    if (!lc) return -ENOMEM;
    lc->fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    int tell = lc->fd >= 0 ? fcntl(lc->fd, F_DUPFD_CLOEXEC, 0) : -1;
    if (tell < 0) {
        int e = -errno;
        cshs__client_conn_close(lc);
        return e;
    }
    lc->state = C_OPENING;
    lc->race = rc;
    lc->lookup = cshs__lookup_start(rc->p->host, rc->p->port, tell);
    if (!lc->lookup) {
        int e = -errno;
        cshs__client_conn_close(lc);
        return e;
    }
    int e = cshs__persistent_register(&lc->pw, rc->rx, lc->fd);
    if (e == 0) {
        lc->pw.w.events = EPOLLIN;
        lc->pw.w.deadline_ms = rc->started_ms + (int64_t)rc->connect_ms;
        lc->pw.w.ready = lookup_ready;
        lc->pw.w.arg = lc;
        /* last: from here the reactor's thread may run lookup_ready */
        e = cshs__persistent_arm(&lc->pw);
    }
    if (e < 0) {
        lc->race = NULL;
        cshs__client_conn_close(lc);
    }
    return e;
}

/* Starts a connect for async waiters on the job's reactor, within
 * connect_ms: the name's look-up (on a thread of its own, lookup.h; an
 * address is read at once), the race of its addresses, then its TLS
 * handshake. No step waits on this thread or the reactor's. */
void cshs__client_open_async(cshs_client *c, const open_job *j)
{
    race *rc = calloc(1, sizeof *rc);
    if (!rc) {
        open_ended(c, j->p, j->rx, NULL, -ENOMEM, j->own);
        return;
    }
    rc->p = j->p;
    rc->rx = j->rx;
    rc->own = j->own;
    rc->started_ms = now_ms();
    rc->connect_ms = j->connect_ms;
    if (!j->p->host_is_ip) {
        int r = lookup_async(rc);
        if (r < 0) race_begin(c, rc, r, NULL);
        return;
    }
    struct addrinfo *res = NULL;
    int r = cshs__client_resolve(j->p, &res); /* numeric: never waits */
    race_begin(c, rc, r, res);
    if (res) freeaddrinfo(res);
}
