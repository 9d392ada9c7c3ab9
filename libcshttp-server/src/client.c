/* The engine's pooled HTTP/1.1 client (client.h has the rules and the
 * manual): the public glue, errors, options, the client's making and
 * freeing. A request is one state machine, run on a reactor whichever API
 * made it; its parts have a file each: client_send_async.c (a call waits
 * for its connection, its request is sent, its retry),
 * client_open_async.c (connects for waiting calls), client_async.c (its
 * waits: the head, the body, a cancel), client_call.c (the request's
 * bytes), client_response.c (the response), client_blocking.c (the
 * blocking calls: the machine run on the calling thread's own loop),
 * client_pool.c (the pools' rules, the tick, statistics), client_conn.c
 * (origins, connections opened and closed, TLS), client_tunnel.c (a
 * switched connection); client_impl.h has their objects. It uses
 * libcshttp for responses and nothing of the toolkit: the layering test
 * checks that these files include no cshttp/web header.
 *
 * Locking: one mutex per client guards every pool, connection list, waiter
 * queue and counter. It is never held across a system call that can block:
 * name resolution, connects, handshakes and a call's I/O run unlocked, by
 * the thread that owns the connection at that moment (a reactor's, or a
 * thread reading a body, or the tick for a min_idle connection, which
 * sits on its pool's opening list while it is being opened). The
 * zero-timeout poll() of idle sockets is done under the lock. What the
 * lock's holder hands to waiting calls (a connection, an error, a connect
 * to start) waits on the client's due list and is served by the same
 * thread right after it lets go of the lock (unlock_and_serve). */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/uio.h>
#include <time.h>

#include <openssl/ssl.h>

#include "client_impl.h"
#include "list.h"
#include "cshttp_internal/error_table.h"
#include "cshttp_internal/sized.h"

/* ---- errors ---- */

static const csh__error_row client_errors[] = {
#define CSHS_CLIENT_ERROR_ROW_(name, value, status, message)                                       \
    {value, status, "CSHS_CLIENT_E_" #name, message},
    CSHS_CLIENT_ERROR_MAP(CSHS_CLIENT_ERROR_ROW_)
#undef CSHS_CLIENT_ERROR_ROW_
};

static const csh__error_row *client_error(int code)
{
    return csh__error_find(client_errors, sizeof client_errors / sizeof client_errors[0], code);
}

const char *cshs_client_error_name(int code)
{
    if (code == 0) return "OK";
    const csh__error_row *e = client_error(code);
    const char *n = e ? e->name : csh__errno_name(code);
    return n ? n : "UNKNOWN";
}

const char *cshs_client_error_message(int code)
{
    if (code == 0) return "success";
    const csh__error_row *e = client_error(code);
    const char *m = e ? e->message : csh__errno_message(code);
    return m ? m : "unknown error";
}

int cshs_client_error_status(int code)
{
    const csh__error_row *e = client_error(code);
    if (e) return e->status;
    return code < 0 ? 500 : 0;
}

/* ---- options ---- */

CSH__SIZED_NO_TAIL_PADDING(cshs_client_options, tls_ca_file);
CSH__SIZED_NO_TAIL_PADDING(cshs_client_request, upgrade);
CSH__SIZED_NO_TAIL_PADDING(cshs_client_pool_stats, detached);

static const cshs_client_options options_defaults = {
    .size = sizeof(cshs_client_options),
    .pool_size = 32,
    .min_idle = 0,
    .idle_timeout_ms = 60000,
    .max_lifetime_ms = 3600000,
    .acquire_timeout_ms = 10000,
    .connect_timeout_ms = 5000,
    .send_timeout_ms = 60000,
    .head_timeout_ms = 60000,
    .read_timeout_ms = 60000,
    .tick_thread = 1,
    .tick_interval_ms = 200,
    .tls_insecure = 0,
    .tls_ca_file = NULL,
};

void cshs_client_options_init_sized(cshs_client_options *o, size_t size)
{
    csh__sized_init(o, size, &options_defaults, sizeof options_defaults);
}

/* The caller's struct read as far as the caller knew it, the defaults for
 * the rest (client.h: the size rule). */
static int options_copy(cshs_client_options *dst, const cshs_client_options *src)
{
    *dst = options_defaults;
    if (!src) return 0;
    return csh__sized_copy(dst, sizeof *dst, src, CSHS_CLIENT_OPTIONS_SIZE_0_3) < 0 ? -EINVAL : 0;
}

int cshs_client_options_check(const cshs_client_options *o, const char **why)
{
    const char *w = NULL;
    cshs_client_options c;
    if (!o || options_copy(&c, o) < 0)
        w = "size must be set by cshs_client_options_init";
    else if (c.pool_size < 1)
        w = "pool_size must be at least 1";
    else if (c.min_idle > c.pool_size)
        w = "min_idle must be at most pool_size";
    else if (c.acquire_timeout_ms < 1)
        w = "acquire_timeout_ms must be at least 1";
    else if (c.connect_timeout_ms < 1)
        w = "connect_timeout_ms must be at least 1";
    else if (c.send_timeout_ms < 1 || c.head_timeout_ms < 1 || c.read_timeout_ms < 1)
        w = "send_timeout_ms, head_timeout_ms and read_timeout_ms must be at least 1";
    else if (c.tick_interval_ms < 1 || c.tick_interval_ms > 60000)
        w = "tick_interval_ms must be 1..60000";
    else if (c.idle_timeout_ms < 1)
        w = "idle_timeout_ms must be at least 1";
    if (why) *why = w;
    return w ? -EINVAL : 0;
}

const cshs_client_request cshs__client_request_defaults = {
    .size = sizeof(cshs_client_request),
    .method = "GET",
    .target = "/",
    .body_mode = CSHS_CLIENT_BODY_WHOLE,
    .body_fd = -1,
};

void cshs_client_request_init_sized(cshs_client_request *r, size_t size)
{
    csh__sized_init(r, size, &cshs__client_request_defaults, sizeof cshs__client_request_defaults);
}

/* ---- the client ---- */

cshs_client *cshs_client_new(const cshs_client_options *o)
{
    if (o && cshs_client_options_check(o, NULL) < 0) return NULL;
    cshs_client *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    options_copy(&c->o, o);
    c->seed = (unsigned)now_us() ^ (unsigned)(uintptr_t)c;
    pthread_mutex_init(&c->mu, NULL);
    pthread_mutex_init(&c->retired_mu, NULL);
    pthread_mutex_init(&c->tls_mu, NULL);
    pthread_mutex_init(&c->tick_mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&c->tick_cv, &ca);
    pthread_condattr_destroy(&ca);
    if (c->o.tick_thread) {
        if (pthread_create(&c->tick, NULL, cshs__client_tick_main, c) != 0) {
            c->o.tick_thread = 0;
            cshs_client_free(c);
            return NULL;
        }
        c->tick_running = 1;
    }
    return c;
}

void cshs_client_free(cshs_client *c)
{
    if (!c) return;
    if (c->tick_running) {
        pthread_mutex_lock(&c->tick_mu);
        c->tick_stop = 1;
        pthread_cond_signal(&c->tick_cv);
        pthread_mutex_unlock(&c->tick_mu);
        pthread_join(c->tick, NULL);
    }
    for (pool *p = c->pools, *n; p; p = n) {
        n = p->next;
        cshs__client_close_list(p->idle);
        cshs__client_close_list(p->opening);
        free(p);
    }
    for (cshs_call *k = c->spare_calls, *n; k; k = n) {
        n = k->next_spare;
        free(k);
    }
    for (conn *cn = c->retired, *n; cn; cn = n) {
        n = cn->next_retired;
        free(cn);
    }
    pthread_mutex_destroy(&c->retired_mu);
    if (c->ssl_ctx) SSL_CTX_free(c->ssl_ctx);
    pthread_cond_destroy(&c->tick_cv);
    pthread_mutex_destroy(&c->tick_mu);
    pthread_mutex_destroy(&c->tls_mu);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

/* ---- the public calls ---- */

void cshs__client_call_free(cshs_call *call)
{
    if (!call) return;
    /* a tunnel's wait still armed: given up (on its reactor's thread) */
    if (call->state == K_SWITCHED && call->cn && call->cn->waiting == call) {
        cshs__persistent_disarm(&call->cn->pw, call->cn->pw.w.reg);
        call->cn->waiting = NULL;
    }
    if (call->cn) cshs__client_release(call->c, call->p, call->cn, 0);
    free(call->head);
    free(call->all);
    free(call->again);
    free(call->fchunk);
    free(call->trailers);
    cshs_client *c = call->c;
    pthread_mutex_lock(&c->mu);
    call->p->users--;
    if (c->nspare_calls < SPARE_CALLS_MAX) {
        CSHS_STACK_PUSH(c->spare_calls, call, next_spare);
        c->nspare_calls++;
        call = NULL;
    }
    pthread_mutex_unlock(&c->mu);
    free(call);
}

/* The retry rule (client.h): once, on a new connection, after a failure
 * on a reused connection the origin had closed, for an idempotent method
 * or a request none of whose bytes were sent. */
int cshs__client_may_retry(const cshs_call *call, int attempt)
{
    return attempt == 0 && call && call->retryable && !call->retried &&
           (call->idempotent || call->bytes_sent == 0);
}

void cshs__client_retry_reset(cshs_call *call, int state)
{
    call->retried = 1;
    call->retryable = 0;
    call->state = state;
    call->err = 0;
    call->bytes_sent = 0;
    call->got = 0;
    csh_parser_init(&call->parser, CSH_RESPONSE, call->fields, MAX_FIELDS, NULL, 0);
}

int cshs_call_detach(cshs_call *call)
{
    if (!call || !call->cn || call->state != K_BODY_IN) return -EINVAL;
    conn *cn = call->cn;
    if (cn->detached) return 0;
    cshs__client_detach(call);
    return 0;
}

void cshs_call_free(cshs_call *call)
{
    cshs__client_call_free(call);
}
