/* Private to the engine: a persistent watch, a socket that stays
 * registered with one loop for as long as it is open.
 *
 * cshs_reactor_arm (reactor.h) arms a watch for one event, an epoll_ctl
 * each time. A socket that is waited on again and again, as a pooled
 * connection of the client is for each response, is kept registered
 * instead: edge-triggered for input, output and the peer's close, from
 * the first wait on a loop to its close, as nginx keeps its upstream
 * connections. Arming it is a flag set under the loop's lock, with no
 * system call; an event that comes while it is not armed is remembered
 * (`missed`): the next arm for those events asks epoll to look at the
 * socket again (one EPOLL_CTL_MOD, which raises the event when the socket
 * is ready), and the client reads an idle connection's missed input as
 * "the origin sent something" (a FIN, or bytes nobody asked for), which
 * is what a poll() before each reuse looked for.
 *
 * Lifetime. The loop's events carry the struct's address and its
 * generation (bumped each time the socket leaves the loop), so an event
 * the loop took before the socket left is recognised and dropped. For
 * that the struct must stay readable while a loop may still hold such an
 * event: its owner (the client) reuses it for its next connections and
 * frees it only once the loops it was registered with have stopped. The
 * loops, in turn, are freed by the last of the server and the persistent
 * watches registered with them to let go, so a client may close its
 * connections after the server was freed. */
#ifndef CSHS_PERSISTENT_WATCH_H
#define CSHS_PERSISTENT_WATCH_H

#include <stdatomic.h>
#include <stdint.h>
#include <sys/epoll.h>

#include <cshttp/server/reactor.h>

/* The tag of a persistent watch's registration (server_impl.h's TAG_*). */
#define CSHS_TAG_PERSISTENT 5

/* The registration's events: all of them, for as long as it lasts. */
#define CSHS_PERSISTENT_EVENTS (EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET)

typedef struct cshs_persistent_watch {
    /* first (the tag): w.fd, w.events (those to be given while armed,
     * besides EPOLLERR and EPOLLHUP), w.deadline_ms, w.ready and w.arg are
     * the owner's to set before each cshs__persistent_arm; w.reg is the loop the
     * socket is registered with (NULL: none), w.armed and the deadline
     * list are the loop's, under its lock */
    cshs_watch w;
    _Atomic uint32_t missed; /* events that came while not armed */
    int muted; /* registered for no event (cshs__persistent_mute); under the loop's lock */
    _Atomic unsigned gen; /* bumped under the loop's lock when the socket leaves it */
} cshs_persistent_watch;

/* Registers fd with r (leaving the loop it was registered with, if
 * another). 0, or -errno (EINVAL: r is not an engine loop, or the struct's
 * address does not fit an event's 48 bits). The owner's thread. */
int cshs__persistent_register(cshs_persistent_watch *k, cshs_reactor *r, int fd);

/* Armed for one event of w.events (or EPOLLERR, EPOLLHUP) on its loop,
 * or for its deadline: w.ready runs on the loop's thread. 0, or -errno
 * from the EPOLL_CTL_MOD that looks again after a missed event (not
 * armed then). Registered first. Any thread. */
int cshs__persistent_arm(cshs_persistent_watch *k);

/* No event while a thread reads the socket itself (a long response body),
 * which would wake the loop for each piece that arrives: the registration
 * asks for none (one EPOLL_CTL_MOD) until the next arm asks for them again
 * (another, which raises the event if the socket is ready). 0, or -errno.
 * Not armed; the owner's thread. */
int cshs__persistent_mute(cshs_persistent_watch *k);

/* Disarms it when it is armed on r (under r's lock, as the loop gives
 * an event): 1, and its ready will not run; 0 when it was not (not yet
 * armed, or its event given). On r's thread. */
int cshs__persistent_disarm(cshs_persistent_watch *k, cshs_reactor *r);

/* The missed events among `mask`, forgotten. */
uint32_t cshs__persistent_take_missed(cshs_persistent_watch *k, uint32_t mask);

/* The socket is about to close: it leaves its loop (nothing when it is
 * registered with none). Not armed. */
void cshs__persistent_forget(cshs_persistent_watch *k);

/* The socket, which stays open, leaves its loop's epoll set and the loop
 * (nothing when it is registered with none). Not armed. */
void cshs__persistent_unregister(cshs_persistent_watch *k);

/* Whether the calling thread is r's: its loop's owner, between events
 * (loop.c). */
int cshs__on_reactor(const cshs_reactor *r);

/* Whether it was ever registered with a loop (its tag is set then and
 * stays): a loop may still hold an event of it, so its owner keeps the
 * struct readable (persistent_watch.h's Lifetime). */
static inline int cshs__persistent_ever(const cshs_persistent_watch *k)
{
    return __atomic_load_n(&k->w.tag, __ATOMIC_RELAXED) == CSHS_TAG_PERSISTENT;
}

#endif
