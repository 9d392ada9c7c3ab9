/* cshs_reactor: what tells a waiting request that its socket is ready,
 * without a thread waiting for it. The engine's event loops are reactors
 * (a deferred handler's, cshs_deferred_reactor in server.h); the client
 * (client.h, cshs_call_end_async) waits on one for an origin's answer.
 *
 * A watch is the caller's struct for one socket, armed for one event:
 *
 *   w->fd = fd;
 *   w->events = EPOLLIN | EPOLLRDHUP;   // epoll's flags
 *   w->deadline_ms = now + 5000;        // CLOCK_MONOTONIC ms; 0: none
 *   w->ready = on_ready;
 *   cshs_reactor_arm(r, w);
 *
 * One shot: once armed, ready(w, events) runs once on the reactor's
 * thread, with the epoll events that came (the socket is ready now, or
 * was when armed), or with 0 once deadline_ms has passed (the loop wakes
 * for the earliest deadline it knows of; one armed from another thread
 * while the loop sleeps, for sooner than the loop means to wake, is up to
 * sweep_interval_ms late) or the reactor's server stops (once its
 * connections are closed, or cut at its deadline). The watch is then
 * inert until armed again (ready may
 * arm it again for more). A watch armed and no longer wanted is disarmed.
 *
 * The socket stays registered with the reactor while inert, so that
 * arming it again costs one epoll_ctl (a pooled connection armed on the
 * loop that used it last); closing the socket unregisters it (from every
 * reactor it was armed on). So the watch's memory must live until its
 * socket is closed.
 *
 * Threads: arm from any thread (a deferred handler's thread may have
 * lost its loop meanwhile): ready may run on the reactor's thread before
 * cshs_reactor_arm returns, so set everything ready reads first.
 * disarm on the reactor's thread (from ready, say), so that no event
 * already taken by the loop meets a watch disarmed and reused. */
#ifndef CSHTTP_SERVER_REACTOR_H
#define CSHTTP_SERVER_REACTOR_H

#include <stdint.h>

#include "export.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cshs_reactor cshs_reactor;

typedef struct cshs_watch cshs_watch;
struct cshs_watch {
    int tag; /* the reactor's: set by cshs_reactor_arm */
    int fd;
    uint32_t events;     /* epoll's EPOLLIN, EPOLLOUT, EPOLLRDHUP */
    int64_t deadline_ms; /* CLOCK_MONOTONIC milliseconds; 0: none */
    void (*ready)(cshs_watch *w, uint32_t events);
    void *arg; /* the caller's */
    /* the reactor's, zero before the first arm: */
    cshs_watch *prev, *next;  /* its list of armed watches (their deadlines) */
    struct cshs_reactor *reg; /* armed there (or was last), NULL: never armed */
    int armed;                /* armed, its one event not yet taken */
    uint64_t regs;            /* the loops (the first 64) its socket is registered in */
};

/* Arms w (fd, events, deadline_ms, ready set) on r for one event: 0, or
 * -errno from epoll_ctl (not armed). -EINVAL for NULL, or a watch armed
 * on another reactor still. Any thread. */
CSHS_EXPORT int cshs_reactor_arm(cshs_reactor *r, cshs_watch *w);

/* An armed watch will not be given its event: inert (its socket stays
 * registered). Nothing for a watch not armed. On the reactor's thread. */
CSHS_EXPORT void cshs_reactor_disarm(cshs_watch *w);

#ifdef __cplusplus
}
#endif

#endif
