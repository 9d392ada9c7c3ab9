/* Private to the engine: the reactor of a thread that waits with no
 * server, which the client's blocking calls run (client_blocking.c).
 *
 * A request made by a blocking call goes through the same state machine
 * as one waiting on a server's loop (client_send_async.c): the calling
 * thread gives the machine a loop of its own, an epoll set and an eventfd
 * made at its first blocking call, and runs it until what it waits for
 * is done. Such a loop runs only while its thread waits, so it takes no
 * event of a socket between two calls: cshs__reactor_live says no, and
 * the client takes a connection out of it when the connection goes back
 * to its pool, and looks at it (poll()) before it reuses it.
 *
 * Holds: a blocking call holds its thread's loop from its start until the
 * machine's done callback lets go (from whichever thread runs it), and a
 * connect started on the loop holds it from its start to its end. The
 * loop runs until nothing holds it and no watch is armed on it. A
 * server's loops run regardless: a hold on one does nothing.
 *
 * Lifetime: the loop is freed once its thread has exited and the last
 * socket registered with it has left it (persistent_watch.h's refs). A
 * child of fork() forgets its parent's and makes its own. */
#ifndef CSHS_THREAD_REACTOR_H
#define CSHS_THREAD_REACTOR_H

#include <cshttp/server/reactor.h>

/* The calling thread's loop, made at its first use: the loop, or NULL
 * with errno set (no descriptor, no memory). */
cshs_reactor *cshs__thread_reactor(void);

/* The calling thread owns r while it runs it (cshs__on_reactor says so):
 * returns what it owned before (a server's loop, when a handler run by
 * the loop's thread makes a blocking call), for cshs__thread_reactor_leave. */
cshs_reactor *cshs__thread_reactor_enter(cshs_reactor *r);
void cshs__thread_reactor_leave(cshs_reactor *before);

/* Runs r (the calling thread's, entered) until nothing holds it and no
 * watch is armed on it: its events, and its watches' deadlines. */
void cshs__thread_reactor_run(cshs_reactor *r);

/* A hold on r, and its end (any thread; nothing for a server's loop).
 * The last end wakes r's thread when another thread lets go. */
void cshs__reactor_hold(cshs_reactor *r);
void cshs__reactor_release(cshs_reactor *r);

/* 1 when r takes its sockets' events as they come (a server's loop); 0
 * for a thread's own loop, or NULL. */
int cshs__reactor_live(const cshs_reactor *r);

#endif
