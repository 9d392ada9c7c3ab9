/* A call's waits on a reactor, which hold no thread: its response head
 * (cshs_call_end_async), its body's next bytes (cshs_call_wait_body), and
 * its cancel. */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/types.h>

#include <openssl/ssl.h>

#include "client_impl.h"
#include "sock_io.h"

/* ---- the head awaited on a reactor ---- */

/* What cshs__client_read_head found, once the watch is gone: the call fails, or its
 * bodiless response ends (the connection goes back). */
static void async_settle(cshs_call *call, int r)
{
    if (r < 0)
        cshs__client_call_fail(call, r);
    else if (r == 2)
        cshs__client_body_done(call, 1);
}

/* Arms the call's connection's watch on the reactor r for `events`,
 * until deadline_ms, `ready` to run on r's thread. The watch is published,
 * then a cancel looked for (both sequentially consistent, as
 * cshs_call_cancel's flag and look in the other order): a cancel that
 * missed the watch is seen here, one that saw it waits for the arm and
 * disarms it. 0 armed (from then ready may run, the call not to be
 * touched); 1 cancelled meanwhile (the call failed with
 * CSHS_CLIENT_E_CANCELED); -errno, not armed. */
int cshs__client_watch_arm(cshs_call *call, cshs_reactor *r, uint32_t events, int64_t deadline_ms,
                           void (*ready)(cshs_watch *w, uint32_t events))
{
    conn *cn = call->cn;
    int e = cshs__persistent_register(&cn->pw, r, cn->fd);
    if (e < 0) return e;
    cn->waiting = call;
    cn->pw.w.events = events;
    cn->pw.w.deadline_ms = deadline_ms;
    cn->pw.w.ready = ready;
    cn->pw.w.arg = cn;
    atomic_store(&call->watched, cn);
    if (atomic_load(&call->cancel_wanted)) {
        atomic_store(&call->watched, NULL);
        cn->waiting = NULL;
        cshs__client_call_fail(call, CSHS_CLIENT_E_CANCELED);
        return 1;
    }
    e = cshs__persistent_arm(&cn->pw);
    if (e < 0) {
        cn->waiting = NULL;
        atomic_store_explicit(&call->watched, NULL, memory_order_relaxed);
    }
    return e;
}

/* The head is here: whether the rest of the body is still to come from
 * the socket, read by a thread (cshs_call_read), not from the buffer. */
int cshs__client_body_from_socket(const cshs_call *call)
{
    if (call->state != K_BODY_IN) return 0;
    if (call->body.kind != CSH_BODY_LENGTH) return 1;
    const conn *cn = call->cn;
    return call->parser.msg.content_length - call->body.received > cn->end - cn->start;
}

static void async_ready(cshs_watch *w, uint32_t events)
{
    conn *cn = w->arg;
    cshs_call *call = cn->waiting;
    atomic_store_explicit(&call->watched, NULL, memory_order_relaxed);
    int r = CSHS_CLIENT_E_HEAD_TIMEOUT; /* given 0: the deadline, or the reactor stops */
    if (events) {
        r = cshs__client_read_head(call);
        if (r == 0) { /* more to come: armed again, for what OpenSSL waits for */
            cn->pw.w.events = (cn->io_wait == POLLOUT ? EPOLLOUT : EPOLLIN) | EPOLLRDHUP;
            r = cshs__persistent_arm(&cn->pw);
            if (r == 0) return;
        }
    } else if (call->state != K_HEAD_WAIT) {
        r = 1; /* the head is here: cshs_call_read waits for the body */
    }
    if (r == 1 && cshs__client_body_from_socket(call)) cshs__persistent_mute(&cn->pw);
    /* the watch is inert now: the connection may go back or be closed */
    cn->waiting = NULL;
    async_settle(call, r);
    if (cshs__client_retry_async(call)) return; /* cshs_client_send_async's: done runs later */
    call->done(call->done_arg);                 /* last: it may free the call */
}

/* cshs_call_end_async's wait for the head, with call->done as it is: a
 * call of cshs_client_send_async handed a connection by another loop's
 * thread has its head awaited from there, while its own loop may read
 * done (cshs_call_cancel), which is why it is not written again. */
int cshs__client_head_arm(cshs_call *call, cshs_reactor *r)
{
    conn *cn = call->cn;
    cn->io_wait = POLLIN;
    /* bytes already read (or decrypted by OpenSSL) fire no event */
    if (cn->end > cn->start || (cn->ssl && SSL_has_pending(cn->ssl))) {
        int step = cshs__client_read_head(call);
        if (step != 0) {
            async_settle(call, step);
            return 1;
        }
    }
    return cshs__client_watch_arm(call, r,
                                  (cn->io_wait == POLLOUT ? EPOLLOUT : EPOLLIN) | EPOLLRDHUP,
                                  call->head_deadline_ms, async_ready);
}

int cshs__client_end_async(cshs_call *call, cshs_reactor *r, void (*done)(void *arg), void *arg,
                           int stop_head)
{
    if (!call || !r || !done) return -EINVAL;
    call->stop_head = stop_head;
    if (call->state == K_FAILED || call->state == K_BODY_IN || call->state == K_DONE) return 1;
    if (call->state == K_BODY_OUT && call->streamed && !call->body_ended)
        return cshs__client_stream_end(call, r, done, arg);
    if (call->state != K_HEAD_WAIT) return -EINVAL;
    call->rx = r; /* where the retry rule sends it again, if it has to */
    call->done = done;
    call->done_arg = arg;
    return cshs__client_head_arm(call, r);
}

int cshs_call_end_async(cshs_call *call, cshs_reactor *r, void (*done)(void *arg), void *arg)
{
    return cshs__client_end_async(call, r, done, arg, 0);
}

int cshs_call_cancel(cshs_call *call)
{
    if (!call || !call->rx || !call->done || !cshs__on_reactor(call->rx)) return -EINVAL;
    cshs_client *c = call->c;
    /* for a call between states, whose arm will see it (end_async) */
    atomic_store(&call->cancel_wanted, 1);
    pthread_mutex_lock(&c->mu);
    /* still waiting for a connection: it leaves the queue (a connect
     * started meanwhile goes to the next waiter, or idle) */
    int queued = call->aw.queued;
    if (queued) cshs__client_wq_remove(call->p, &call->aw);
    pthread_mutex_unlock(&c->mu);
    if (!queued) {
        /* its head awaited: the watch, disarmed here while still armed
         * (under the reactor's lock, which the thread that armed it let
         * go, touching the call no more), is ours, and so is the call.
         * Not armed yet (being armed on another thread) or fired: it goes
         * on. */
        conn *cn = atomic_load(&call->watched);
        if (!cn) return 1; /* not published yet: its arm sees the flag */
        /* published: armed within a moment, on this reactor or another
         * thread, or given up there on seeing the flag (the request's
         * continuation waits for this callback's end: the call stays) */
        while (!cshs__persistent_disarm(&cn->pw, call->rx)) {
            if (atomic_load(&call->watched) != cn) return 1;
            sched_yield();
        }
        /* its request is out: the connection closes (the origin sees
         * the close) and leaves the loop */
        atomic_store_explicit(&call->watched, NULL, memory_order_relaxed);
        cn->waiting = NULL;
    }
    cshs__client_call_fail(call, CSHS_CLIENT_E_CANCELED);
    call->done(call->done_arg); /* last: it may free the call */
    return 0;
}

/* The body's next bytes came (or the origin's end, an error), or its
 * read deadline passed (events 0: the next read fails): on the reactor's
 * thread. */
static void body_ready(cshs_watch *w, uint32_t events)
{
    conn *cn = w->arg;
    cshs_call *call = cn->waiting;
    atomic_store_explicit(&call->watched, NULL, memory_order_relaxed);
    cn->waiting = NULL;
    if (!events) call->read_expired = 1;
    call->done(call->done_arg); /* last: it may free the call */
}

int cshs_call_wait_body(cshs_call *call, cshs_reactor *r, void (*done)(void *arg), void *arg)
{
    if (!call || !r || !done) return -EINVAL;
    if (call->state != K_BODY_IN) return 1; /* the end, or a failure: read it */
    conn *cn = call->cn;
    /* bytes already read (or decrypted by OpenSSL) fire no event */
    if (cn->end > cn->start || (cn->ssl && SSL_has_pending(cn->ssl))) return 1;
    call->rx = r;
    call->done = done;
    call->done_arg = arg;
    call->read_expired = 0;
    return cshs__client_watch_arm(call, r,
                                  (cn->io_wait == POLLOUT ? EPOLLOUT : EPOLLIN) | EPOLLRDHUP,
                                  now_ms() + call->read_ms, body_ready);
}
