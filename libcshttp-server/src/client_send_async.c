/* cshs_client_send_async: a call that waits for its connection without a
 * thread, its request and a streamed body sent from the reactor, its
 * retry; and what is handed under the lock, served after it. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>

#include "client_impl.h"
#include "cshttp_internal/sized.h"

/* ---- waiting for a connection without a thread (cshs_client_send_async) ---- */

/* The request is out: its head awaited on the reactor (or, for
 * cshs_client_begin, later). 0 waiting, 1 finished (the head is here, or
 * the call failed, or the request is sent and begin's done is due). */
static int head_watch(cshs_call *call)
{
    call->state = K_HEAD_WAIT;
    call->head_deadline_ms = now_ms() + call->head_ms;
    if (call->stop_sent) return 1;
    int e = cshs__client_head_arm(call, call->rx);
    /* a reactor that cannot watch the socket fails the call rather than
     * leave cshs_call_end to wait for the head on the reactor's thread */
    if (e < 0) cshs__client_call_fail(call, e);
    return e == 0 ? 0 : 1;
}

static int send_wait(cshs_call *call);

/* While the request is sent from the reactor: the origin's answer may
 * come before its end (a 413, then its close). 1 when its head is here
 * (the call goes on with it, its connection not reused), 0 when none
 * is, or an error that failed the call. */
static int send_met_answer(cshs_call *call)
{
    if (call->peer_eof) return 0;
    int a = cshs__client_early_answer(call);
    if (a == 1) a = cshs__client_answered_early(call);
    if (a < 0 && call->state != K_FAILED) cshs__client_call_fail(call, a);
    return a;
}

/* The socket takes more of the request, or the origin sent something (or,
 * given 0, send_timeout_ms passed, or the reactor stops): on the
 * reactor's thread. */
static void send_ready(cshs_watch *w, uint32_t events)
{
    conn *cn = w->arg;
    cshs_call *call = cn->waiting;
    atomic_store_explicit(&call->watched, NULL, memory_order_relaxed);
    cn->waiting = NULL;
    int e = -ETIMEDOUT, a = 0;
    if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) a = send_met_answer(call);
    if (events && a == 0) {
        e = cshs__client_send_rest(call);
        /* an origin that closed after its answer: the answer stands */
        if (e < 0 && e != -EAGAIN && is_closed_errno(e)) a = send_met_answer(call);
    }
    if (a == 0) {
        if (e == -EAGAIN && send_wait(call) == 0) return;
        if (e == 0) {
            /* a streamed body's piece or head sent: its writer goes on */
            if (call->streamed && !call->body_ended) {
                call->head_out = 1;
            } else if (head_watch(call) == 0) {
                return;
            }
        } else if (e != -EAGAIN) {
            cshs__client_send_failed(call, e);
        }
        if (cshs__client_retry_async(call)) return;
    }
    call->done(call->done_arg); /* last: it may free the call */
}

/* What the socket did not take waits for it on the reactor (input too:
 * an answer before the request's end): 0 waiting, 1 finished (cancelled,
 * or the reactor could not watch the socket: the call fails with that
 * error rather than wait for the socket on the reactor's thread). */
static int send_wait(cshs_call *call)
{
    int e = cshs__client_watch_arm(call, call->rx, EPOLLOUT | EPOLLIN | EPOLLRDHUP,
                                   now_ms() + call->send_ms, send_ready);
    if (e == 0) return 0;
    if (e < 0) cshs__client_send_failed(call, e);
    return 1;
}

static int send_and_watch(cshs_call *call)
{
    if (atomic_load(&call->cancel_wanted)) {
        /* given up meanwhile (cshs_call_cancel): nothing is sent, and the
         * connection goes to the next request */
        conn *cn = call->cn;
        call->cn = NULL;
        cshs__client_release(call->c, call->p, cn, 1);
        call->state = K_FAILED;
        call->err = CSHS_CLIENT_E_CANCELED;
        return 1;
    }
    call->reused = call->cn->uses > 0;
    /* no wait on the reactor's thread (or any): what the socket does not
     * take now is sent as it takes it */
    int e = cshs__client_send_request(call);
    if (e == -EAGAIN) return send_wait(call);
    if (e < 0 && call->state != K_FAILED) {
        /* an origin that answered and closed before the request's end:
         * the answer stands */
        if (is_closed_errno(e) && send_met_answer(call) != 0) return 1;
        cshs__client_send_failed(call, e);
    }
    if (e < 0) return 1;
    if (call->streamed) {
        call->head_out = 1;
        return 1; /* the head is out: the body is its caller's to write */
    }
    return head_watch(call);
}

/* Sends what is in out_iov from the reactor's thread without waiting,
 * for cshs_call_write_async and cshs_call_end_async: 0 all of it, 1 the
 * rest waits for the socket (send_ready), or 2 the origin answered before
 * the end of the body, or the error that failed the call. */
static int stream_send(cshs_call *call)
{
    int e = cshs__client_send_rest(call);
    if (e == -EAGAIN) return send_wait(call) == 0 ? 1 : call->err;
    if (e < 0 && is_closed_errno(e) && send_met_answer(call) == 1) return 2;
    if (e < 0) {
        if (call->state != K_FAILED) cshs__client_send_failed(call, e);
        call->retryable = 0; /* body bytes may have gone: never sent twice */
        return call->err;
    }
    return 0;
}

/* Where a streamed body's call stands for its writer: -1 when it may
 * write, or what cshs_call_write_async returns instead. */
static int stream_state(cshs_call *call)
{
    if (call->early || call->state == K_BODY_IN || call->state == K_DONE) return 2;
    if (call->state == K_FAILED) return call->err;
    if (!call->streamed || call->body_ended || call->state != K_BODY_OUT) return -EINVAL;
    if (atomic_load(&call->cancel_wanted))
        return cshs__client_call_fail(call, CSHS_CLIENT_E_CANCELED);
    return -1;
}

int cshs_call_write_async(cshs_call *call, const void *data, size_t len, void (*drained)(void *arg),
                          void *arg)
{
    if (!call || !drained || (len && !data)) return -EINVAL;
    if (!cshs__on_reactor(call->rx)) return -EINVAL;
    int st = stream_state(call);
    if (st != -1) return st;
    if (len == 0) return 0;
    call->out_iov[0].iov_base = call->frame;
    call->out_iov[0].iov_len = 0;
    if (call->mode == CSHS_CLIENT_BODY_LENGTH) {
        if ((uint64_t)len > call->body_left) return cshs__client_call_fail(call, -EINVAL);
        call->body_left -= len;
    } else {
        int k = snprintf(call->frame, sizeof call->frame, "%s%zx\r\n",
                         call->chunk_open ? "\r\n" : "", len);
        call->out_iov[0].iov_len = (size_t)k;
        call->chunk_open = 1;
    }
    call->out_iov[1].iov_base = (void *)(uintptr_t)data;
    call->out_iov[1].iov_len = len;
    call->file_left = 0;
    call->done = drained;
    call->done_arg = arg;
    return stream_send(call);
}

/* cshs_call_end_async for a streamed body: its end (the last chunk, or
 * a check that every byte of its length was written) is sent without
 * waiting, then its head awaited; what the socket does not take is sent
 * from the reactor (send_ready), which then awaits the head. */
int cshs__client_stream_end(cshs_call *call, cshs_reactor *r, void (*done)(void *arg), void *arg)
{
    if (r != call->rx || !cshs__on_reactor(r)) return -EINVAL;
    int st = stream_state(call);
    if (st != -1) return 1;
    call->body_ended = 1;
    if (call->mode == CSHS_CLIENT_BODY_LENGTH && call->body_left) {
        /* fewer bytes than its length: the connection closes */
        cshs__client_call_fail(call, -EINVAL);
        return 1;
    }
    call->out_iov[0].iov_base = call->frame;
    call->out_iov[0].iov_len = 0;
    call->out_iov[1].iov_len = 0;
    if (call->mode == CSHS_CLIENT_BODY_CHUNKED) {
        int k = snprintf(call->frame, sizeof call->frame, "%s0\r\n\r\n",
                         call->chunk_open ? "\r\n" : "");
        call->out_iov[0].iov_len = (size_t)k;
    }
    call->file_left = 0;
    call->done = done;
    call->done_arg = arg;
    int e = stream_send(call);
    if (e == 1) return 0; /* send_ready awaits the head */
    if (e != 0) return 1; /* answered early, or failed */
    return head_watch(call);
}

/* The retry rule (client.h) for a call that failed on a reused
 * connection the origin had closed: its request is sent once more (the
 * head kept for it, or built again from the request while the caller's
 * request is still there) on a connection opened for it on its reactor
 * (the least recently used idle one closed to make room when the pool is
 * full), or, when none can be opened now, on the first one given back,
 * holding no thread either way. 1: retrying (done runs later); 0: the
 * rule does not allow it (or the call is not such a call). */
int cshs__client_retry_async(cshs_call *call)
{
    if (call->state != K_FAILED || !call->rx || !cshs__client_may_retry(call, 0)) return 0;
    if (call->head_out) return 0; /* a streamed body went, or may have */
    if (!call->again && !call->rq_kept) return 0; /* nothing left to send it from */
    cshs_client *c = call->c;
    pool *p = call->p;
    call->keep_head = 0;
    cshs__client_retry_reset(call, K_BODY_OUT);
    waiter *w = &call->aw;
    w->got = NULL;
    w->err = 0;
    w->since_us = now_us();
    w->deadline_ms = w->since_us / 1000 + call->acquire_ms;
    conn *stale = NULL;
    pthread_mutex_lock(&c->mu);
    p->retries++;
    int64_t now = w->since_us / 1000;
    cshs__client_evict_lru(c, p, &stale);
    if (!(p->open + p->nopening < c->o.pool_size && now >= p->backoff_until_ms &&
          cshs__client_open_job_add(c, p, call, 1))) {
        if (cshs__client_dead_end(p, now)) {
            w->err = p->last_error;
            cshs__client_make_due(c, w);
        } else {
            cshs__client_enqueue_async(c, p, w);
        }
    }
    cshs__client_unlock_and_serve(c);
    cshs__client_close_list(stale);
    return 1;
}

/* An async waiter handed a connection (its request sent, its head
 * awaited) or an error (its call failed); done runs unless the head is
 * awaited or the request is sent again (the retry rule). */
static void start_due(cshs_call *call)
{
    if (call->aw.got) {
        call->cn = call->aw.got;
        if (send_and_watch(call) == 0 || cshs__client_retry_async(call)) return;
    } else {
        cshs__client_call_fail(call, call->aw.err);
    }
    call->done(call->done_arg); /* last: it may free the call */
}

void cshs__client_serve_due(cshs_client *c, due_work hw)
{
    for (open_job *j = hw.jobs, *nx; j; j = nx) {
        nx = j->next;
        cshs__client_open_async(c, j);
        free(j);
    }
    for (cshs_call *k = hw.calls, *nx; k; k = nx) {
        nx = k->due_next;
        start_due(k);
    }
}

int cshs__client_request_async(cshs_client *c, const cshs_client_request *r, cshs_reactor *rx,
                               void (*done)(void *arg), void *arg, int stops, cshs_call **out)
{
    if (!out) return -EINVAL;
    *out = NULL;
    if (!c || !r || !rx || !done) return -EINVAL;
    cshs_client_request rq = cshs__client_request_defaults; /* the caller's, read by its size */
    if (csh__sized_copy(&rq, sizeof rq, r, CSHS_CLIENT_REQUEST_SIZE_0_3) < 0) return -EINVAL;
    cshs_call *call;
    int e = cshs__client_call_new(c, &rq, &call);
    if (e < 0) return e;
    call->rq = rq;
    call->rq_kept = 1;
    call->stop_sent = (stops & CALL_STOP_SENT) != 0;
    call->stop_head = (stops & CALL_STOP_HEAD) != 0;
    call->rx = rx;
    call->streamed =
        rq.body_mode == CSHS_CLIENT_BODY_LENGTH || rq.body_mode == CSHS_CLIENT_BODY_CHUNKED;
    call->done = done;
    call->done_arg = arg;
    *out = call; /* before another thread may run done */
    pool *p = call->p;
    waiter *w = &call->aw;
    w->call = call;
    w->since_us = now_us();
    w->deadline_ms = w->since_us / 1000 + call->acquire_ms;
    conn *stale = NULL;
    int err = 0;
    pthread_mutex_lock(&c->mu);
    conn *got = cshs__client_take_idle(c, p, rx, w->since_us, &stale);
    if (!got && cshs__client_dead_end(p, now_ms())) {
        err = p->last_error;
    } else if (!got) {
        /* queued: a release, a connect (started here when the rule lets
         * one start) or the tick's deadline serves it */
        cshs__client_enqueue_async(c, p, w);
    }
    cshs__client_unlock_and_serve(c);
    cshs__client_close_list(stale);
    if (got) {
        call->cn = got;
        if (send_and_watch(call) == 0 || cshs__client_retry_async(call)) return 0;
        return 1;
    }
    if (err) {
        cshs__client_call_fail(call, err);
        return 1;
    }
    return 0;
}

int cshs_client_send_async(cshs_client *c, const cshs_client_request *r, cshs_reactor *rx,
                           void (*done)(void *arg), void *arg, cshs_call **out)
{
    return cshs__client_request_async(c, r, rx, done, arg, 0, out);
}
