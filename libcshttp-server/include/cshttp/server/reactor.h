/* cshs_reactor: what tells a waiting request that its socket is ready,
 * without a thread waiting for it. The engine's event loops are reactors
 * (a deferred handler's, cshs_deferred_reactor in server.h); the client
 * (client.h, cshs_call_end_async) waits on one for an origin's answer.
 *
 * A watch is the caller's struct, registered for one socket:
 *
 *   w->fd = fd;
 *   w->events = EPOLLIN | EPOLLRDHUP;   // epoll's flags; edge-triggered
 *   w->deadline_ms = now + 5000;        // CLOCK_MONOTONIC ms; 0: none
 *   w->ready = on_ready;
 *   cshs_reactor_add(r, w);
 *
 * ready(w, events) runs on the reactor's thread: with the epoll events
 * that came (edge-triggered: read and write until EAGAIN, as nothing
 * fires again for what is already there), or with 0 once deadline_ms has
 * passed (checked every sweep_interval_ms, so up to that much late) or
 * the reactor's server is forced to stop. The watch stays registered until
 * cshs_reactor_remove, which ready may call (and, after it, free the
 * watch); a watch given 0 must be removed by its ready (it is not given
 * 0 again). Adding registers the socket at once, and an event may run
 * ready on the reactor's thread before cshs_reactor_add returns: set
 * everything ready reads first.
 *
 * Ownership: the watch, and its socket, are the caller's; they must stay
 * until cshs_reactor_remove. Threads: add from any thread; ready, modify
 * and remove on the reactor's thread (the one running its loop, which a
 * hand-over may change: one at a time), so that no event already taken
 * by the loop meets a watch removed and freed. */
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
    int tag; /* the reactor's: set by cshs_reactor_add */
    int fd;
    uint32_t events;     /* epoll's EPOLLIN, EPOLLOUT, EPOLLRDHUP (EPOLLET is added) */
    int64_t deadline_ms; /* CLOCK_MONOTONIC milliseconds; 0: none */
    void (*ready)(cshs_watch *w, uint32_t events);
    void *arg;                /* the caller's */
    cshs_watch *prev, *next;  /* the reactor's list of deadlines */
    struct cshs_reactor *reg; /* the reactor it is registered with, NULL: none */
    int listed;               /* the reactor's: on its list */
};

/* Registers w (fd, events, deadline_ms, ready set): 0, or -errno from
 * epoll_ctl (nothing registered). -EINVAL for NULL, or a watch already
 * registered. Any thread. */
CSHS_EXPORT int cshs_reactor_add(cshs_reactor *r, cshs_watch *w);

/* Changes the events watched (w registered): 0 or -errno. On the
 * reactor's thread. */
CSHS_EXPORT int cshs_reactor_modify(cshs_watch *w, uint32_t events);

/* Unregisters w: ready is not called again. A watch not registered:
 * nothing. On the reactor's thread (from ready). */
CSHS_EXPORT void cshs_reactor_remove(cshs_watch *w);

#ifdef __cplusplus
}
#endif

#endif
