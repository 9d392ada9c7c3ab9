/* The client's blocking calls (client.h: cshs_client_send,
 * cshs_client_begin, cshs_call_write, cshs_call_end): each is a step of
 * the reactor's state machine (client_send_async.c, client_async.c) run
 * on the calling thread's own loop (thread_reactor.h) until the step's
 * callback says it is over. So a request waits for its connection, is
 * sent, retried and answered one way, whichever API made it: the
 * blocking one adds only the wait.
 *
 * While it runs its loop the thread is that loop's owner (a handler
 * running on a server's loop thread is given its loop back after), and
 * it may serve what other requests were handed meanwhile (a connection
 * it gives back goes to the next waiter), as any thread that lets go of
 * the client's lock does. */
#include <errno.h>
#include <stddef.h>

#include "client_impl.h"
#include "thread_reactor.h"

/* A blocking step: the calling thread's loop, held until the step's
 * callback lets go, and the loop the thread owned before. */
typedef struct blocking {
    cshs_reactor *rx;
    cshs_reactor *before;
} blocking;

/* The step's callback (done, drained), on whichever thread runs it. */
static void step_over(void *arg)
{
    cshs__reactor_release(arg);
}

/* The calling thread's loop, held and entered: 0, or -errno when the
 * thread has none and none can be made. */
static int blocking_enter(blocking *b)
{
    b->before = NULL;
    b->rx = cshs__thread_reactor();
    if (!b->rx) return errno ? -errno : -ENOMEM;
    b->before = cshs__thread_reactor_enter(b->rx);
    cshs__reactor_hold(b->rx);
    return 0;
}

/* Runs the loop until the step is over (`waits`: its callback will run;
 * else the hold goes here) and the connects started on it have ended. */
static void blocking_wait(blocking *b, int waits)
{
    if (!waits) cshs__reactor_release(b->rx);
    cshs__thread_reactor_run(b->rx);
}

static void blocking_leave(blocking *b)
{
    cshs__thread_reactor_leave(b->before);
}

/* cshs_client_send and cshs_client_begin (CALL_STOP_SENT: over once the
 * request is sent): a call of the machine waited for until its head is
 * here, its body left to cshs_call_read. A call that failed is freed,
 * its error returned with *out NULL. */
static int request_blocking(cshs_client *c, const cshs_client_request *r, int stops,
                            cshs_call **out)
{
    blocking b;
    int e = blocking_enter(&b);
    if (e < 0) return e;
    e = cshs__client_request_async(c, r, b.rx, step_over, b.rx, stops | CALL_STOP_HEAD, out);
    blocking_wait(&b, e == 0);
    blocking_leave(&b);
    if (e < 0) return e;
    cshs_call *call = *out;
    call->stop_sent = 0;
    call->rq_kept = 0; /* the caller's request is the caller's again */
    if (call->state != K_FAILED) return 0;
    e = call->err;
    cshs__client_call_free(call);
    *out = NULL;
    return e;
}

int cshs_client_send(cshs_client *c, const cshs_client_request *r, cshs_call **out)
{
    if (!out) return -EINVAL;
    *out = NULL;
    if (!c || !r ||
        (r->body_mode != CSHS_CLIENT_BODY_WHOLE && r->body_mode != CSHS_CLIENT_BODY_FILE))
        return -EINVAL;
    return request_blocking(c, r, 0, out);
}

int cshs_client_begin(cshs_client *c, const cshs_client_request *r, cshs_call **out)
{
    if (!out) return -EINVAL;
    *out = NULL;
    if (!c) return -EINVAL;
    return request_blocking(c, r, CALL_STOP_SENT, out);
}

int cshs_call_write(cshs_call *call, const void *data, size_t len)
{
    if (!call) return -EINVAL;
    if (call->early) return 1; /* answered: nothing more is sent */
    if (call->state == K_FAILED) return call->err;
    if (call->state != K_BODY_OUT || !call->streamed || (len && !data))
        return cshs__client_call_fail(call, -EINVAL);
    if (len == 0) return 0;
    blocking b;
    int e = blocking_enter(&b);
    if (e < 0) return cshs__client_call_fail(call, e);
    call->rx = b.rx; /* nothing of the call waits on another loop between steps */
    e = cshs_call_write_async(call, data, len, step_over, b.rx);
    blocking_wait(&b, e == 1);
    if (e == 1) e = cshs_call_write_async(call, NULL, 0, step_over, b.rx); /* where it stands */
    blocking_leave(&b);
    return e == 2 ? 1 : e;
}

int cshs_call_end(cshs_call *call)
{
    if (!call) return -EINVAL;
    if (call->state == K_HEAD_WAIT ||
        (call->state == K_BODY_OUT && call->streamed && !call->body_ended)) {
        blocking b;
        int e = blocking_enter(&b);
        if (e < 0) return cshs__client_call_fail(call, e);
        call->rx = b.rx;
        e = cshs__client_end_async(call, b.rx, step_over, b.rx, 1);
        blocking_wait(&b, e == 0);
        blocking_leave(&b);
        if (e < 0) cshs__client_call_fail(call, e); /* the loop could not watch the socket */
    }
    switch (call->state) {
    case K_FAILED:
        return call->err;
    case K_BODY_IN:
    case K_DONE:
    case K_SWITCHED:
        return 0;
    default:
        return -EINVAL;
    }
}
