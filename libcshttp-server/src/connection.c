/* One connection's life, driven by its loop's events without ever waiting
 * on the network, except inside a handler that streams its body or
 * writes beyond the high-water mark:
 *
 *   accept ─> [TLS handshake] ─> READ <──────────────────────────────┐
 *                                 │  head and body read into the      │
 *                                 │  exchange as they arrive          │
 *                                 │  (cshw_exchange_input); parked    │
 *                                 │  when the socket says EAGAIN      │
 *                                 ▼                                   │
 *                  run the handler (cshw_exchange_run): inline on the │
 *                  loop's thread, or as a job on another thread while │
 *                  handlers wait (busy: the loop leaves it alone); a  │
 *                  deferred one (cshs_defer) stays busy, no thread    │
 *                  held, until its continuation runs                  │
 *                                 │  output the socket does not take  │
 *                                 │  is queued (bytes, file ranges)   │
 *                                 ▼                                   │
 *                               WRITE ──(writable)──> sent ───────────┘
 *                                 │                    or
 *                                 ▼
 *                               LINGER: our side shut down, what the
 *                               client still sends read and discarded
 *                               (bounded), then closed
 *
 * The socket is registered once, edge-triggered, for both directions: an
 * event says only "something changed", and whoever serves it reads and
 * writes until the socket says EAGAIN (or posts the connection to go on
 * after the batch). Every HTTP byte comes from the toolkit's exchange
 * (libcshttp-web): this file owns the socket's life, the deadlines and the
 * lingering close; output.c the queue of what is left to send,
 * transport.c what the exchange reads and writes through, deferred.c the
 * requests that answer later, jobs.c the handlers run on other threads. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cshttp/web/error.h>
#include <cshttp/web/response.h>

#include "list.h"
#include "server_impl.h"
#include "sock_io.h"

#define DRIVE_TURNS 32        /* exchanges in a row before others go first */
#define SPARE_X_MAX 64        /* exchanges a worker keeps (one a request in flight) */

/* The connection whose handler runs inline on this thread, and the
 * worker running it: what cshs_defer finds. */
_Thread_local cshs_conn *cshs__running_conn;
_Thread_local cshs_worker *cshs__running_worker;
/* The connection whose handler runs as a job on this thread (what
 * cshs_upgrade finds there; cshs_defer does not). */
_Thread_local cshs_conn *cshs__job_conn;

cshs_conn *cshs__handler_conn(void)
{
    return cshs__running_conn ? cshs__running_conn : cshs__job_conn;
}

/* ---- life ---- */

cshs_conn *cshs__conn_new(cshs_server *s, int fd, const struct sockaddr *sa)
{
    cshs_conn *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->tag = TAG_CONN;
    c->fd = fd;
    c->srv = s;
    c->io = &cshs__plain_stream;
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)(const void *)sa;
        inet_ntop(AF_INET, &in->sin_addr, c->remote, sizeof c->remote);
        c->remote_port = ntohs(in->sin_port);
    } else if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)(const void *)sa;
        inet_ntop(AF_INET6, &in6->sin6_addr, c->remote, sizeof c->remote);
        c->remote_port = ntohs(in6->sin6_port);
    } else {
        strcpy(c->remote, "unix");
    }
    if (sa->sa_family != AF_UNIX) {
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }
    return c;
}

/* An idle connection with nothing pending gives its exchange back; the
 * worker keeps it for the next request it reads (no malloc per request),
 * up to SPARE_X_MAX: as many as its requests in flight at once, which
 * handlers that defer make more than one (a proxy's 32 clients, 32). Each
 * worker keeps its own: no lock. */
static void release_exchange(cshs_worker *w, cshs_conn *c)
{
    if (!c->x) return;
    if (w && !w->spare_x) w->spare_x = calloc(SPARE_X_MAX, sizeof *w->spare_x);
    if (w && w->spare_x && w->nspare_x < SPARE_X_MAX) {
        cshw_exchange_reset(c->x);
        w->spare_x[w->nspare_x++] = c->x;
    } else {
        cshw_exchange_free(c->x);
    }
    c->x = NULL;
}

void cshs__worker_release(cshs_worker *w)
{
    for (unsigned i = 0; i < w->nspare_x; i++) cshw_exchange_free(w->spare_x[i]);
    free(w->spare_x);
    w->spare_x = NULL;
    w->nspare_x = 0;
    for (unsigned i = 0; i < w->nspare_ctx; i++) cshs__handler_ctx_free(w->spare_ctx[i]);
    free(w->spare_ctx);
    w->spare_ctx = NULL;
    w->nspare_ctx = 0;
    cshs__handler_ctx_free(w->handler_ctx);
    w->handler_ctx = NULL;
}

/* A parked connection waits for its socket (counted idle, no thread);
 * unparked, it is being served. */
void cshs__park(cshs_conn *c, int64_t deadline, int kind)
{
    cshs_loop_counters *k = &c->loop->k;
    c->deadline_ms = deadline;
    c->expire_kind = (short)kind;
    if (c->parked) return;
    c->parked = 1;
    atomic_fetch_add_explicit(&k->idle_buffers, cshs__conn_idle_held(c), memory_order_relaxed);
    atomic_fetch_sub_explicit(&k->active, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&k->idle, 1, memory_order_relaxed);
}

void cshs__unpark(cshs_conn *c)
{
    cshs_loop_counters *k = &c->loop->k;
    if (!c->parked) return;
    c->parked = 0;
    atomic_fetch_sub_explicit(&k->idle_buffers, cshs__conn_idle_held(c), memory_order_relaxed);
    atomic_fetch_sub_explicit(&k->idle, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&k->active, 1, memory_order_relaxed);
}

static void answer_unavailable(cshw_context *ctx, void *arg)
{
    (void)arg;
    cshw_response_send_error(cshw_context_response(ctx), 503);
}

void cshs__conn_close(cshs_worker *w, cshs_conn *c)
{
    cshs_server *s = c->srv;
    cshs_loop *l = c->loop;
    if (c->parked) {
        atomic_fetch_sub_explicit(&l->k.idle_buffers, cshs__conn_idle_held(c),
                                  memory_order_relaxed);
        atomic_fetch_sub_explicit(&l->k.idle, 1, memory_order_relaxed);
    } else {
        atomic_fetch_sub_explicit(&l->k.active, 1, memory_order_relaxed);
    }
    c->parked = 0;
    if (c->h2 && !CSHS_H2_STREAM(c)) cshs__h2_close(c); /* its streams end */
    /* a tunnel still open: the server stops (a forced stop cuts it) */
    if (c->tunnel) cshs__tunnel_drop(c, atomic_load(&s->forced) ? -ECONNABORTED : -ECANCELED);
    if (c->deferred) {
        /* a deferred request never resumed (the server's end, past a
         * forced stop): ended with a 503 rather than left active */
        cshw_exchange_resume(c->x, &c->deferred->t, answer_unavailable, NULL);
        cshs__handler_ctx_free(c->deferred);
        c->deferred = NULL;
    }
    if (c->io) c->io->close(c);
    cshs__out_clear(c);
    release_exchange(w, c);
    free(c->sb);
    c->sb = NULL;
    /* the descriptor closes under the lock: a forced stop shuts down the
     * sockets of the list under it, and must not meet a reused number */
    pthread_mutex_lock(&l->mu);
    CSHS_LIST_REMOVE(l->conns, c, prev, next);
    if (c->fd >= 0) close(c->fd);
    pthread_mutex_unlock(&l->mu);
    c->closed = 1;
    CSHS_STACK_PUSH(l->closed_conns, c, link);
    if (!CSHS_H2_STREAM(c)) atomic_fetch_sub(&s->c_open, 1);
}

void cshs__conn_free(cshs_conn *c)
{
    if (!CSHS_H2_STREAM(c)) cshs__h2_free(c);
    free(c);
}

/* Parked to read: the deadline of where the exchange stands. */
void cshs__park_input(cshs_worker *w, cshs_conn *c)
{
    cshs_server *s = c->srv;
    int64_t now = cshs__now_ms();
    int64_t deadline = 0;
    int kind = EXP_NONE;
    cshw_exchange_phase ph = c->x ? cshw_exchange_phase_of(c->x) : CSHW_PHASE_IDLE;
    if (c->tls_state == TLS_HANDSHAKE) {
        if (s->o.tls_handshake_timeout_ms) {
            deadline = c->accept_ms + (int64_t)s->o.tls_handshake_timeout_ms;
            kind = EXP_TLS;
        }
    } else if (ph == CSHW_PHASE_IDLE) {
        if (c->x && cshw_exchange_buffered(c->x) == 0) release_exchange(w, c);
        /* a streaming route's buffer (16 KiB) is not kept idle */
        if (c->sb && !cshs__stream_left(c)) {
            free(c->sb);
            c->sb = NULL;
        }
        if (c->served == 0 && s->o.header_timeout_ms) {
            deadline = c->accept_ms + (int64_t)s->o.header_timeout_ms;
            kind = EXP_HEAD;
        } else if (c->served && s->o.keepalive_timeout_ms) {
            deadline = now + (int64_t)s->o.keepalive_timeout_ms;
            kind = EXP_IDLE;
        }
    } else if (ph == CSHW_PHASE_HEAD) {
        /* a head in progress keeps its deadline from its first byte */
        if (s->o.header_timeout_ms) {
            deadline = cshw_exchange_body_start_us(c->x) / 1000 + (int64_t)s->o.header_timeout_ms;
            kind = EXP_HEAD;
        }
    } else if (ph == CSHW_PHASE_BODY) {
        deadline = cshs__body_deadline(c, now);
        kind = EXP_BODY;
    }
    /* TLS may have to write before it reads (a handshake's flight, a
     * read that met a key update) */
    if (c->io_wait == POLLOUT && cshs__conn_want_out(c) < 0) {
        deadline = now;
        kind = EXP_NOWAIT;
    }
    cshs__park(c, deadline, kind);
}

/* Parked until the socket takes more of the queued output. */
static void park_output(cshs_conn *c)
{
    cshs_server *s = c->srv;
    int64_t deadline = s->o.send_timeout_ms ? c->last_io_ms + (int64_t)s->o.send_timeout_ms : 0;
    int kind = EXP_SEND;
    if (cshs__conn_want_out(c) < 0) {
        deadline = cshs__now_ms(); /* no event would come: the next sweep closes it */
        kind = EXP_NOWAIT;
    }
    cshs__park(c, deadline, kind);
}

/* What an idle connection holds besides its struct: a head in progress
 * (its exchange) and queued output. */
uint64_t cshs__conn_idle_held(const cshs_conn *c)
{
    uint64_t n = c->out_bytes;
    if (c->x) n += c->srv->o.read_buffer + c->srv->o.limits->max_fields * sizeof(csh_header);
    return n;
}

/* Lingering close (nginx's lingering_close): our side is shut down, and
 * what the client still sends is read and discarded for linger_ms and up
 * to linger_bytes, so that closing does not send a reset that could
 * destroy the answer before the client read it. 1 when it is over. */
static int linger_read(cshs_conn *c)
{
    cshs_server *s = c->srv;
    char sink[4096];
    for (;;) {
        if (c->lingered >= s->o.linger_bytes) return 1;
        ssize_t n = cshs__recv(c->fd, sink, sizeof sink, 0);
        if (n > 0) {
            c->lingered += (uint64_t)n;
            atomic_fetch_add_explicit(&c->loop->k.bytes_in, (uint64_t)n, memory_order_relaxed);
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        return !(n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK));
    }
}

/* Bytes the client sent that nobody read yet (in the socket, or inside
 * OpenSSL). */
static int input_waiting(cshs_conn *c)
{
    int n = 0;
    return c->io->pending(c) || (ioctl(c->fd, FIONREAD, &n) == 0 && n > 0);
}

/* The connection ends after its last answer: at once, or lingering. */
static void finish(cshs_worker *w, cshs_conn *c)
{
    cshs_server *s = c->srv;
    /* an HTTP/2 stream has no socket to linger on: its session ends it */
    if (!c->linger || s->o.linger_ms == 0 || atomic_load(&s->forced) || c->fd < 0) {
        cshs__conn_close(w, c);
        return;
    }
    c->io->close(c); /* TLS: close_notify; then the raw socket */
    release_exchange(w, c);
    shutdown(c->fd, SHUT_WR);
    c->phase = CP_LINGER;
    c->lingered = 0;
    if (linger_read(c)) {
        cshs__conn_close(w, c);
        return;
    }
    cshs__park(c, cshs__now_ms() + (int64_t)s->o.linger_ms, EXP_LINGER);
}

/* The exchange's answer or the response is queued: the loop sends it, then
 * goes on (more requests) or ends the connection. */
static void after_output(cshs_conn *c, int close_after)
{
    c->close_after_write = (char)close_after;
    c->phase = CP_WRITE;
    park_output(c);
}

void cshs__conn_end(cshs_worker *w, cshs_conn *c, int flush)
{
    c->linger = 0;
    if (flush && c->out) {
        int f = cshs__out_flush(c);
        if (f == 0) {
            after_output(c, 1);
            return;
        }
    }
    cshs__out_clear(c);
    finish(w, c);
}

/* What follows an exchange: its handler ran (ran = 1, r from
 * cshw_exchange_run) or it ended without one (r from cshw_exchange_input:
 * an answer of its own, or the end of input). 1 to read on; 0 when the
 * connection left (parked for its output, lingering or closed). */
int cshs__after_exchange(cshs_worker *w, cshs_conn *c, int r, int ran)
{
    cshs_server *s = c->srv;
    if (r == CSHW_EXCHANGE_SWITCHED && c->tunnel) {
        /* the connection's bytes are the tunnel's from here on */
        cshs__tunnel_start(w, c);
        return 0;
    }
    /* a tunnel whose request ended as HTTP after all (Connection: close,
     * a stop) is told so, never opened */
    if (c->tunnel) cshs__tunnel_drop(c, -ECANCELED);
    if (r == CSHW_EXCHANGE_SWITCHED) r = CSHW_EXCHANGE_CLOSE; /* no tunnel to take it */
    if (ran) {
        c->served = 1;
        /* a close after an error answer, or with input the client still
         * sends, lingers; a plain "Connection: close" does not */
        if (r != CSHW_EXCHANGE_NEXT)
            c->linger = !c->eof && (c->last_status >= 400 || cshw_exchange_buffered(c->x) > 0 ||
                                    input_waiting(c));
    } else {
        /* the exchange answered (an error: the client may still be
         * sending what it refused), or the input ended */
        c->linger = !c->eof;
    }
    int more = r == CSHW_EXCHANGE_NEXT && !atomic_load(&s->stopping);
    if (r < 0 && r != -ENOMEM) c->linger = 0; /* the socket failed */
    if (c->out) {
        int f = cshs__out_flush(c);
        if (f == 0) {
            after_output(c, !more);
            return 0;
        }
        if (f < 0) {
            cshs__out_clear(c);
            more = 0;
            c->linger = 0;
        }
    }
    if (!more) {
        finish(w, c);
        return 0;
    }
    return 1;
}

/* Goes on after the batch: it had its turns, others go first (or its
 * deferred handler's continuation is due). */
void cshs__conn_post(cshs_conn *c)
{
    cshs_loop *l = c->loop;
    if (c->posted) return;
    c->posted = 1;
    CSHS_FIFO_APPEND(l->posted, l->posted_tail, c, post_next);
    atomic_fetch_add_explicit(&l->nposted, 1, memory_order_relaxed);
}

/* A deferred request's continuation is due (both its handler's return
 * and its resume came): on a job thread when it may wait
 * (cshs_deferred_run), else on the loop's thread, after the batch when
 * this is the loop's owner (`owner`), or given back to the loop. */
void cshs__continuation_run(cshs_conn *c, int owner)
{
    c->resume = RESUME_DEFERRED;
    /* a continuation is never declined: its handler ran, and the queue
     * holds at most a connection's worth of them each */
    if (c->deferred->job && cshs__offload(c->srv, c, 0) != OFFLOAD_NONE) return;
    c->deferred->job = 0; /* no thread can take it: the loop runs it */
    if (owner)
        cshs__conn_post(c);
    else
        cshs__give_back(c);
}

/* The continuation is due: it runs, unless the loop is telling the
 * request that its client left (cshs__conn_client_left), which runs it
 * after. */
void cshs__continuation_due(cshs_conn *c, int owner)
{
    char st = atomic_load(&c->waits);
    for (;;) {
        char next = st == WAITS_ABORTING ? WAITS_DUE : WAITS_NONE;
        if (atomic_compare_exchange_weak(&c->waits, &st, next)) {
            if (next == WAITS_DUE) return;
            break;
        }
    }
    cshs__continuation_run(c, owner);
}

/* What follows a handler (or a continuation) run by a loop's thread:
 * r from cshw_exchange_run or _resume; `owner`: the thread still owns
 * the loop (not handed over meanwhile). 1 when the caller goes on with
 * the connection (after_exchange); 0 when it left this thread: deferred
 * (it waits for its resume, busy), or given back to the loop. */
static int after_handler(cshs_worker *w, cshs_conn *c, int r, int owner)
{
    if (!owner) w->lost = 1; /* the loop was handed over: this thread leaves it */
    if (r == CSHW_EXCHANGE_DEFERRED && c->deferred->wait_for) {
        /* it waits for its own client: the loop's to watch */
        if (owner) {
            cshs__wait_begin(w, c);
        } else {
            c->resume = RESUME_WAIT;
            cshs__give_back(c);
        }
        return 0;
    }
    if (r == CSHW_EXCHANGE_DEFERRED) {
        /* the handler returned; when its resume came first, the
         * continuation is due */
        atomic_store(&c->waits, WAITS_FREE);
        if (atomic_fetch_sub(&c->deferred->pending, 1) == 1) cshs__continuation_due(c, owner);
        return 0;
    }
    if (c->deferred) { /* the deferred request ended: its context is kept */
        cshs__handler_ctx_put(w, c->deferred);
        c->deferred = NULL;
    }
    if (!owner) {
        /* this handler held the loop past grow_after_us with events
         * waiting (the supervisor decided whether the loop's next handlers
         * run elsewhere): the connection goes back to the loop */
        c->after_run = r;
        cshs__give_back(c);
        return 0;
    }
    atomic_store_explicit(&c->busy, 0, memory_order_relaxed);
    return 1;
}

/* Runs a ready request's handler on the loop's thread. 0 when the
 * connection left this thread (after_handler). The transport lives in the
 * worker's cshs_handler_ctx, which a deferring handler takes along: the
 * exchange writes through it later. */
static int run_inline(cshs_worker *w, cshs_conn *c, int *r)
{
    cshs_loop *l = c->loop;
    cshs_handler_ctx *hctx = w->handler_ctx;
    /* busy first: a thread that takes the loop over leaves c alone */
    atomic_store_explicit(&c->busy, 1, memory_order_relaxed);
    int64_t start = cshs__handler_begin(l);
    hctx->t = cshs__transport_of(c);
    cshs__running_conn = c;
    cshs__running_worker = w;
    *r = cshw_exchange_run(c->x, hctx->ctx, &hctx->t);
    cshs__running_conn = NULL;
    return after_handler(w, c, *r, cshs__handler_end(l, start));
}

void cshs__conn_continue(cshs_worker *w, cshs_conn *c)
{
    cshs_loop *l = c->loop;
    c->resume = RESUME_AFTER_RUN;
    /* events the loop noted while the request waited (busy 2; 0: given
     * back, unknown): the next input reads rather than trusting an
     * earlier short read */
    if (atomic_exchange(&c->busy, 1) != 1) cshw_exchange_recheck(c->x);
    int64_t start = cshs__handler_begin(l);
    cshs_handler_ctx *d = c->deferred;
    d->t = cshs__transport_of(c);
    cshs__running_conn = c;
    cshs__running_worker = w;
    int r = cshw_exchange_resume(c->x, &d->t, d->fn, d->arg);
    cshs__running_conn = NULL;
    if (after_handler(w, c, r, cshs__handler_end(l, start)) && cshs__after_exchange(w, c, r, 1))
        cshs__drive(w, c);
}

/* Whether the ready request's handler runs on the loop's thread: yes,
 * unless the loop's handlers lately blocked (offload_ms) or handlers wait
 * for a thread; then only when the application says it never waits
 * (cshs_server_set_quick), so static files and answers from memory go on
 * while slow handlers queue. */
static int runs_on_loop(cshs_conn *c)
{
    cshs_server *s = c->srv;
    int64_t until = atomic_load_explicit(&c->loop->offload_until_ms, memory_order_relaxed);
    if (atomic_load_explicit(&s->c_waiting, memory_order_relaxed) == 0 &&
        !(until && cshs__now_ms() < until))
        return 1;
    const char *head;
    const csh_message *msg = s->quick_fn ? cshw_exchange_request(c->x, &head) : NULL;
    return msg && s->quick_fn(s->quick_arg, head, msg);
}

/* Reads, runs and answers requests until the socket says EAGAIN, the
 * output has to wait for the client, the handler goes to another thread,
 * or the connection ends. */
void cshs__drive(cshs_worker *w, cshs_conn *c)
{
    cshs_server *s = c->srv;
    int rechecked = 0;
    for (int turn = 0;; turn++) {
        if (turn == DRIVE_TURNS) {
            cshs__conn_post(c);
            return;
        }
        if (!c->x) {
            if (w->nspare_x) {
                c->x = w->spare_x[--w->nspare_x];
            } else if (!(c->x = cshw_exchange_new(&s->xcfg))) {
                cshs__conn_close(w, c);
                return;
            }
        }
        cshw_transport t = cshs__transport_of(c);
        int r = cshw_exchange_input(c->x, &t);
        if (r == CSHW_EXCHANGE_WANT_INPUT) {
            /* bytes OpenSSL already decrypted count as buffered, and so do
             * those a streaming route's handler read past its body: the
             * socket would not say they are there */
            if (c->io->pending(c) || cshs__stream_left(c)) continue;
            /* a short read does not say the input ended after it: when an
             * event said so, the next read meets the end (nginx's
             * pending_eof); edge-triggered, no event would come again */
            if (c->rdhup && !rechecked) {
                rechecked = 1;
                cshw_exchange_recheck(c->x);
                continue;
            }
            cshs__park_input(w, c);
            return;
        }
        int ran = 0;
        if (r == CSHW_EXCHANGE_READY) {
            /* a handler that reads its body from the network, or one that
             * may block while the loop's handlers lately took long or
             * handlers wait for a thread, runs elsewhere; when even the
             * queue is full, it is answered 503 without running */
            int how = OFFLOAD_NONE;
            int streams = cshw_exchange_streams(c->x);
            /* one that reads its body as events on the loop never waits */
            if (streams != CSHS_STREAM_ON_LOOP && (streams || !runs_on_loop(c)))
                how = cshs__offload(s, c, 1);
            if (how == OFFLOAD_RUNS || how == OFFLOAD_WAITS) return;
            if (how == OFFLOAD_FULL) {
                atomic_fetch_add(&s->c_declined, 1);
                r = cshw_exchange_decline(c->x, &t, CSHW_E_OVERLOADED);
            } else {
                if (!run_inline(w, c, &r)) return;
                ran = 1;
            }
        }
        if (!cshs__after_exchange(w, c, r, ran)) return;
    }
}

/* A deadline passed while the connection waited. */
static void expired(cshs_worker *w, cshs_conn *c)
{
    cshs_server *s = c->srv;
    int kind = c->expire_kind;
    if ((kind == EXP_HEAD || kind == EXP_BODY) && c->x && c->phase == CP_READ &&
        !atomic_load(&s->stopping)) {
        cshw_transport t = cshs__transport_of(c);
        cshw_exchange_expire(c->x, &t); /* 408 for a request in progress */
        c->linger = 1;
        if (c->out && cshs__out_flush(c) == 0) {
            after_output(c, 1);
            return;
        }
        cshs__out_clear(c);
        finish(w, c);
        return;
    }
    if (kind == EXP_TUNNEL && c->tunnel) cshs__tunnel_drop(c, -ETIMEDOUT);
    cshs__conn_close(w, c);
}

void cshs__conn_sweep(cshs_worker *w, cshs_conn *c, int64_t now_ms)
{
    cshs_server *s = c->srv;
    /* a stop closes what waits between requests (or for a head); what
     * sends a response or lingers goes on until the stop's deadline */
    int stop = atomic_load(&s->forced) ||
               (atomic_load(&s->stopping) &&
                (c->phase == CP_READ || c->phase == CP_TUNNEL || c->phase == CP_H2));
    if (!stop) {
        if (!c->deadline_ms || now_ms < c->deadline_ms) return;
        int kind = c->expire_kind;
        if (kind == EXP_TUNNEL && cshs__tunnel_timer_due(c, now_ms)) {
            /* the protocol's timer (a WebSocket's ping), not the tunnel's */
            cshs__unpark(c);
            cshs__tunnel_event(w, c);
            return;
        }
        if (kind == EXP_TUNNEL) {
            /* output written while it was parked moved the deadline on */
            int64_t d = cshs__tunnel_deadline(c);
            if (d == 0 || d > now_ms) { /* 0: none now */
                c->deadline_ms = d;
                return;
            }
        }
        if (kind == EXP_BODY) {
            /* the end of a window of the minimum rate that the body kept:
             * the next window's */
            int64_t d = cshs__body_deadline(c, now_ms);
            if (d > now_ms) {
                c->deadline_ms = d;
                return;
            }
        }
        if (kind == EXP_TLS)
            atomic_fetch_add(&s->e_tls, 1);
        else if (kind == EXP_HEAD)
            atomic_fetch_add(&s->e_head, 1);
        else if (kind == EXP_BODY)
            atomic_fetch_add(&s->e_body, 1);
        else if (kind == EXP_SEND)
            atomic_fetch_add(&s->e_send, 1);
        else if (kind == EXP_IDLE || kind == EXP_TUNNEL)
            atomic_fetch_add(&s->e_idle, 1);
        else if (kind == EXP_WAIT)
            atomic_fetch_add(c->deferred->wait_for == WAIT_DRAIN ? &s->e_send : &s->e_body, 1);
    }
    /* HTTP/2: a GOAWAY first, when idle or at a graceful stop */
    if (c->phase == CP_H2) {
        cshs__h2_sweep(w, c, stop);
        return;
    }
    /* a deferred request waiting for its client: its continuation is
     * told (and ends it) */
    if (c->phase == CP_WAIT) {
        cshs__wait_end(c, stop ? -ECONNABORTED : -ETIMEDOUT);
        return;
    }
    cshs__unpark(c);
    /* a graceful stop lets a tunnel's protocol say goodbye once (a
     * WebSocket's close frame, 1001); the next sweep closes what is left */
    if (stop && !atomic_load(&s->forced) && c->phase == CP_TUNNEL && cshs__tunnel_stopping(w, c))
        return;
    if (stop)
        cshs__conn_close(w, c);
    else
        expired(w, c);
}

/* Before a TLS handshake starts, its first byte: a handshake record (22)
 * goes on to OpenSSL; a letter is a request line, plain HTTP sent to the
 * HTTPS port, answered 400 in plain text, as nginx does, then closed.
 * Nothing yet (an event that came before the bytes did): the connection
 * is parked, OpenSSL not called, so the first byte is still looked at when
 * it comes. 1 when the connection was dealt with here. */
static int plain_on_tls(cshs_worker *w, cshs_conn *c)
{
    unsigned char b;
    ssize_t n = cshs__recv(c->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
        cshs__park_input(w, c);
        return 1;
    }
    if (n != 1 || b == 22 || !((b >= 'A' && b <= 'Z') || (b >= 'a' && b <= 'z'))) return 0;
    cshs__tls_drop(c);
    cshw_transport t = cshs__transport_of(c);
    cshw_exchange_refuse(&c->srv->xcfg, &t, 400,
                         "A plain HTTP request was sent to the HTTPS port: use https://.");
    c->linger = 1;
    if (c->out && cshs__out_flush(c) == 0) {
        after_output(c, 1);
        return 1;
    }
    cshs__out_clear(c);
    finish(w, c);
    return 1;
}

void cshs__conn_event(cshs_worker *w, cshs_conn *c)
{
    cshs_server *s = c->srv;
    cshs__unpark(c);
    if (c->phase == CP_H2) {
        cshs__h2_event(w, c);
        return;
    }
    if (c->phase == CP_TUNNEL) {
        cshs__tunnel_event(w, c);
        return;
    }
    if (c->phase == CP_WAIT) {
        if (!cshs__wait_over(c)) cshs__wait_park(c);
        return;
    }
    if (c->phase == CP_LINGER) {
        if (linger_read(c))
            cshs__conn_close(w, c);
        else
            cshs__park(c, c->deadline_ms, EXP_LINGER);
        return;
    }
    if (c->phase == CP_WRITE) {
        int f = cshs__out_flush(c);
        if (f == 0) {
            park_output(c);
            return;
        }
        c->phase = CP_READ;
        if (f < 0 || c->close_after_write || atomic_load(&s->stopping)) {
            if (f < 0) {
                cshs__out_clear(c);
                c->linger = 0;
            }
            finish(w, c);
            return;
        }
    }

    while (c->tls_state == TLS_HANDSHAKE) {
        if (SSL_in_before(c->ssl) && plain_on_tls(w, c)) return;
        int r = cshs__tls_handshake(c);
        if (r == 1) break;
        if (r == -EAGAIN || r == -EINPROGRESS) {
            /* which way it waits: an event for writability alone is
             * ignored unless a write waits for it (loop.c) */
            c->io_wait = r == -EAGAIN ? POLLIN : POLLOUT;
            cshs__park_input(w, c);
            return;
        }
        atomic_fetch_add(&s->e_tls, 1);
        cshs__conn_close(w, c);
        return;
    }
    /* a new connection's protocol, before its first request: ALPN's
     * choice, or the h2c preface (an HTTP/2 stream's pair is HTTP/1.1) */
    if (c->phase == CP_READ && !c->served && !c->x && !CSHS_H2_STREAM(c)) {
        int h2 = cshs__h2_want(c);
        if (h2 == -EAGAIN) {
            cshs__park_input(w, c);
            return;
        }
        if (h2 == 1) {
            cshs__h2_start(w, c);
            return;
        }
    }
    cshs__drive(w, c);
}
