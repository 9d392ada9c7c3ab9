/* The server: listeners, worker threads, the supervisor (growth, parking
 * and the deadline sweep), start and graceful stop.
 *
 * Thread model (DESIGN.md, Tier 3): a few workers each wait in epoll_wait
 * (taking up to 8 events while they are served quickly, see worker_main);
 * every registration is one-shot, so a connection is served by one worker
 * at a time and nobody hands it over. The supervisor adds a worker only
 * when (nearly) every worker has been inside its current event for
 * grow_after_us and the epoll set has events waiting (a blocked handler
 * costs one thread, hot threads stay few); a worker idle for park_after_ms
 * beyond min_threads parks on a condition variable, off the epoll queue,
 * and is the first one woken when more are needed. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <cshttp/server/version.h>

#include "server_impl.h"

/* Deadlines are milliseconds apart and checked by a sweep: the coarse
 * clock (the last tick, no clock read) is precise enough and costs less,
 * and it is read on every read and write. */
int64_t cshs__now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t cshs__now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

unsigned cshs_version(void)
{
    return CSHS_VERSION_HEX;
}

size_t cshs_idle_connection_bytes(void)
{
    return sizeof(cshs_conn);
}

cshs_server *cshs_server_new(const cshs_options *options, cshw_handler handler, cshw_router *router)
{
    if ((handler == NULL) == (router == NULL)) return NULL;
    cshs_server *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    if (options)
        s->o = *options;
    else
        cshs_options_init(&s->o);
    s->o.strings_ = NULL; /* the caller's */
    s->o.nstrings_ = 0;
    if (cshs_options_check(&s->o, NULL) < 0) {
        free(s);
        return NULL;
    }
    s->handler = handler;
    s->router = router;
    s->xcfg.web = &s->o.web;
    s->xcfg.limits = &s->o.limits;
    s->xcfg.handler = handler;
    s->xcfg.router = router;
    s->xcfg.report = cshs__report;
    s->xcfg.closing = cshs__closing;
    s->xcfg.arg = s;
    s->epfd = s->evfd = -1;
    s->wake_tag = TAG_WAKE;
    s->workers = calloc(s->o.max_threads, sizeof *s->workers);
    if (!s->workers) {
        free(s);
        return NULL;
    }
    pthread_mutex_init(&s->mu, NULL);
    pthread_mutex_init(&s->tls_mu, NULL);
    pthread_cond_init(&s->park_cv, NULL);
    pthread_cond_init(&s->sup_cv, NULL);
    pthread_cond_init(&s->stopped_cv, NULL);
    return s;
}

void cshs_server_set_log(cshs_server *s, cshs_log_fn fn, void *user)
{
    s->log_fn = fn;
    s->log_user = user;
}

void cshs_server_set_streaming(cshs_server *s,
                               int (*fn)(void *arg, const char *head, const csh_message *msg),
                               void *arg)
{
    s->stream_fn = fn;
    s->stream_arg = arg;
    s->xcfg.streams = fn ? cshs__streams : NULL;
}

int cshs__streams(void *arg, const char *head, const csh_message *msg)
{
    cshs_server *s = arg;
    return s->stream_fn(s->stream_arg, head, msg);
}

int cshs__closing(void *arg)
{
    cshs_server *s = arg;
    return atomic_load(&s->stopping);
}

/* Copies at most cap-1 bytes of p[0 .. n) as a string. */
static const char *copy_str(char *out, size_t cap, const char *p, size_t n)
{
    if (n > cap - 1) n = cap - 1;
    memcpy(out, p, n);
    out[n] = '\0';
    return out;
}

/* The Referer and User-Agent values, first of each, in one pass. */
static void log_fields(const cshw_exchange_outcome *o, cshs_request_log *e, char *ref,
                       size_t ref_cap, char *ua, size_t ua_cap)
{
    for (size_t i = 0; i < o->msg->num_headers && (!e->referer || !e->user_agent); i++) {
        csh_span n = o->msg->headers[i].name;
        csh_span v = o->msg->headers[i].value;
        const char *name = o->head + n.off;
        if (n.len == 7 && !e->referer && strncasecmp(name, "Referer", 7) == 0)
            e->referer = copy_str(ref, ref_cap, o->head + v.off, v.len);
        else if (n.len == 10 && !e->user_agent && strncasecmp(name, "User-Agent", 10) == 0)
            e->user_agent = copy_str(ua, ua_cap, o->head + v.off, v.len);
    }
}

/* Every exchange once, with its real status: the counters and the access
 * log come from here. */
void cshs__report(void *arg, const cshw_exchange_outcome *o)
{
    cshs_server *s = arg;
    /* every engine transport's io is its connection */
    if (o->transport) ((cshs_conn *)o->transport->io)->last_status = o->status;
    if (o->msg)
        atomic_fetch_add(&s->c_requests, 1);
    else if (o->status >= 400 && o->error)
        atomic_fetch_add(&s->e_parse, 1);
    if (!s->log_fn) return;
    char method[32], target[2048], ref[512], ua[512];
    cshs_request_log e;
    memset(&e, 0, sizeof e);
    e.remote_addr = o->transport && o->transport->remote_addr ? o->transport->remote_addr : "-";
    if (o->msg) {
        e.method = copy_str(method, sizeof method, o->head + o->msg->method_span.off,
                            o->msg->method_span.len);
        e.target =
            copy_str(target, sizeof target, o->head + o->msg->target.off, o->msg->target.len);
        e.version_minor = o->msg->version_minor;
        log_fields(o, &e, ref, sizeof ref, ua, sizeof ua);
    } else {
        /* a head that did not parse: its request line as it came, split at
         * its first space (the log escapes what it holds) */
        const char *sp = o->line_len ? memchr(o->line, ' ', o->line_len) : NULL;
        size_t ml = sp ? (size_t)(sp - o->line) : o->line_len;
        e.method = ml ? copy_str(method, sizeof method, o->line, ml) : "-";
        e.target = sp ? copy_str(target, sizeof target, sp + 1, o->line_len - ml - 1) : "-";
        e.version_minor = 1;
    }
    e.status = o->status;
    e.bytes_out = o->bytes_out;
    e.bytes_in = o->bytes_in;
    e.duration_us = o->duration_us;
    e.time_unix_ms = o->start_unix_ms;
    s->log_fn(s->log_user, &e);
}

void cshs_server_set_app_data(cshs_server *s, void *data)
{
    s->app_data = data;
}

void *cshs_server_app_data(const cshs_server *s)
{
    return s->app_data;
}

/* ---- listeners ---- */

static int listen_tcp(cshs_server *s, const char *address, unsigned port, int tls, cshs_listener *l)
{
    struct sockaddr_storage ss;
    socklen_t sl;
    memset(&ss, 0, sizeof ss);
    struct sockaddr_in *in = (struct sockaddr_in *)&ss;
    struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
    if (inet_pton(AF_INET, address, &in->sin_addr) == 1) {
        in->sin_family = AF_INET;
        in->sin_port = htons((uint16_t)port);
        sl = sizeof *in;
    } else if (inet_pton(AF_INET6, address, &in6->sin6_addr) == 1) {
        in6->sin6_family = AF_INET6;
        in6->sin6_port = htons((uint16_t)port);
        sl = sizeof *in6;
    } else {
        return -EINVAL;
    }
    int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return -errno;
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (s->o.reuseport) setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
    if (ss.ss_family == AF_INET6) setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
    if (bind(fd, (struct sockaddr *)&ss, sl) < 0 || listen(fd, s->o.backlog) < 0) {
        int e = -errno;
        close(fd);
        return e;
    }
    sl = sizeof ss;
    getsockname(fd, (struct sockaddr *)&ss, &sl);
    l->port = ntohs(ss.ss_family == AF_INET ? in->sin_port : in6->sin6_port);
    l->fd = fd;
    l->family = ss.ss_family;
    l->tls = tls;
    l->tag = TAG_LISTENER;
    return 0;
}

static int listen_unix(cshs_server *s, cshs_listener *l)
{
    struct sockaddr_un un;
    memset(&un, 0, sizeof un);
    un.sun_family = AF_UNIX;
    if (strlen(s->o.unix_path) >= sizeof un.sun_path) return -ENAMETOOLONG;
    strcpy(un.sun_path, s->o.unix_path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return -errno;
    unlink(s->o.unix_path);
    if (bind(fd, (struct sockaddr *)&un, sizeof un) < 0 || listen(fd, s->o.backlog) < 0) {
        int e = -errno;
        close(fd);
        return e;
    }
    l->fd = fd;
    l->family = AF_UNIX;
    l->tag = TAG_LISTENER;
    return 0;
}

unsigned cshs_server_port(const cshs_server *s, int index)
{
    int k = 0;
    for (int i = 0; i < s->nlis; i++) {
        if (s->lis[i].family == AF_UNIX || s->lis[i].tls) continue;
        if (k++ == index) return s->lis[i].port;
    }
    return 0;
}

unsigned cshs_server_tls_port(const cshs_server *s, int index)
{
    int k = 0;
    for (int i = 0; i < s->nlis; i++) {
        if (!s->lis[i].tls) continue;
        if (k++ == index) return s->lis[i].port;
    }
    return 0;
}

static void arm(cshs_server *s, int op, int fd, void *ptr)
{
    struct epoll_event ev;
    ev.events = EPOLLIN | EPOLLONESHOT;
    ev.data.ptr = ptr;
    epoll_ctl(s->epfd, op, fd, &ev);
}

static void accept_some(cshs_server *s, cshs_listener *l)
{
    int pause = 0;
    for (int i = 0; i < 64 && !atomic_load(&s->stopping); i++) {
        struct sockaddr_storage ss;
        socklen_t sl = sizeof ss;
        int fd = accept4(l->fd, (struct sockaddr *)&ss, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED) continue;
            /* out of descriptors or memory: re-arming now would fire again
             * at once and spin; the sweep re-arms it */
            pause = errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM;
            break;
        }
        if (l->family == AF_UNIX) ss.ss_family = AF_UNIX;
        if (atomic_load(&s->c_open) >= s->o.max_connections) {
            if (l->tls) { /* a plain-text 503 means nothing inside TLS */
                close(fd);
                atomic_fetch_add(&s->e_rejected, 1);
            } else {
                cshs__reject(s, fd, (struct sockaddr *)&ss);
            }
            continue;
        }
        cshs_conn *c = cshs__conn_new(s, fd, (struct sockaddr *)&ss);
        if (!c || (l->tls && cshs__tls_attach(c) < 0)) {
            free(c);
            close(fd);
            continue;
        }
        c->accept_ms = cshs__now_ms();
        atomic_fetch_add(&s->c_open, 1);
        atomic_fetch_add(&s->c_total, 1);
        atomic_fetch_add(&s->c_idle, 1);
        if (l->tls && s->o.tls_handshake_timeout_ms) {
            atomic_store(&c->deadline_ms, c->accept_ms + (int64_t)s->o.tls_handshake_timeout_ms);
            atomic_store(&c->expire_kind, EXP_TLS);
        } else if (!l->tls && s->o.header_timeout_ms) {
            atomic_store(&c->deadline_ms, c->accept_ms + (int64_t)s->o.header_timeout_ms);
            atomic_store(&c->expire_kind, EXP_HEAD);
        }
        atomic_store(&c->state, CONN_IDLE);
        pthread_mutex_lock(&s->mu);
        c->next = s->conns;
        if (s->conns) s->conns->prev = c;
        s->conns = c;
        pthread_mutex_unlock(&s->mu);
        struct epoll_event ev;
        ev.events = EPOLLIN | EPOLLRDHUP | EPOLLONESHOT;
        ev.data.ptr = c;
        if (epoll_ctl(s->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
            /* never to be served: closed now rather than left until stop */
            atomic_fetch_sub(&s->c_idle, 1);
            cshs__conn_close(NULL, c);
        }
    }
    if (pause)
        atomic_store(&l->paused, 1);
    else if (!atomic_load(&s->stopping))
        arm(s, EPOLL_CTL_MOD, l->fd, l);
}

/* ---- workers ---- */

static void worker_exit(cshs_server *s, cshs_worker *w);

#define WORKER_SLOW_US 200  /* an event served slower than this is slow */
#define HELD_RESCUE_US 2000 /* the supervisor hands back events held longer */

/* Parks the calling worker off the epoll queue, if more than min_threads
 * would be left waiting in it, until the supervisor hands out a token. */
static void park_self(cshs_server *s, cshs_worker *w)
{
    pthread_mutex_lock(&s->mu);
    unsigned active = s->nworkers - (unsigned)atomic_load(&s->c_parked);
    if (active > s->o.min_threads && !atomic_load(&s->exiting)) {
        atomic_store(&w->parked, 1);
        atomic_fetch_add(&s->c_parked, 1);
        while (!s->unpark_tokens && !atomic_load(&s->exiting))
            pthread_cond_wait(&s->park_cv, &s->mu);
        if (s->unpark_tokens) s->unpark_tokens--;
        atomic_fetch_sub(&s->c_parked, 1);
        atomic_store(&w->parked, 0);
    }
    pthread_mutex_unlock(&s->mu);
}

/* 7 in 8 of `of` (all of them below 8): the share of busy workers that
 * counts as "every worker" for growth (workers_stuck says why). */
static int nearly_all(uint64_t n, unsigned of)
{
    return n > 0 && n * 8 >= (uint64_t)of * 7;
}

/* One ready event: a connection or a listener, with the busy accounting
 * the supervisor reads. */
static void serve_event(cshs_server *s, cshs_worker *w, void *ptr, int tag, int64_t now_us)
{
    atomic_store(&w->busy_since_us, now_us);
    uint64_t busy = atomic_fetch_add(&s->c_busy, 1) + 1;
    if (nearly_all(busy, s->nworkers - (unsigned)atomic_load(&s->c_parked)) &&
        atomic_load(&s->sup_sleeping) && atomic_exchange(&s->sup_sleeping, 0)) {
        /* under the mutex: the supervisor is then either inside its wait or
         * has not looked at c_busy yet, so the signal is not lost */
        pthread_mutex_lock(&s->mu);
        pthread_cond_signal(&s->sup_cv);
        pthread_mutex_unlock(&s->mu);
    }
    uint64_t peak = atomic_load(&s->busy_peak);
    while (busy > peak && !atomic_compare_exchange_weak(&s->busy_peak, &peak, busy)) {
    }
    if (tag == TAG_LISTENER)
        accept_some(s, ptr);
    else
        cshs__conn_event(w, ptr);
    atomic_fetch_sub(&s->c_busy, 1);
    atomic_store(&w->busy_since_us, 0);
}

/* Puts events 1..n-1 where the supervisor can take them back. */
static void hold_events(cshs_server *s, cshs_worker *w, struct epoll_event *evs, int n,
                        int64_t now_us)
{
    for (int i = 1; i < n; i++) atomic_store(&w->held[i], evs[i].data.ptr);
    atomic_store(&w->held_since_us, now_us);
    atomic_fetch_add(&s->c_holding, 1);
    /* a supervisor in its long wait would not look for a while */
    if (atomic_load(&s->sup_sleeping) && atomic_exchange(&s->sup_sleeping, 0)) {
        pthread_mutex_lock(&s->mu);
        pthread_cond_signal(&s->sup_cv);
        pthread_mutex_unlock(&s->mu);
    }
}

/* Arms the one-shot registrations of the events still in w->held again:
 * they fire for other workers. */
static void hand_back(cshs_server *s, cshs_worker *w)
{
    for (int i = 1; i < CSHS_WORKER_BATCH; i++) {
        void *ptr = atomic_exchange(&w->held[i], NULL);
        if (!ptr) continue;
        int tag = *(int *)ptr;
        if (tag == TAG_CONN)
            cshs__conn_rearm(ptr);
        else if (tag == TAG_LISTENER && !atomic_load(&s->stopping))
            arm(s, EPOLL_CTL_MOD, ((cshs_listener *)ptr)->fd, ptr);
    }
}

/* One event another worker holds, taken from its slot (NULL: none). The
 * workers array only grows, and a slot is emptied by exchange, so each
 * event is served once. */
static void *steal_held(cshs_server *s, cshs_worker *self)
{
    unsigned n = s->nworkers;
    for (unsigned i = 0; i < n; i++) {
        cshs_worker *w = s->workers[i];
        if (w == self || !atomic_load(&w->held_since_us)) continue;
        for (int k = 1; k < CSHS_WORKER_BATCH; k++) {
            if (!atomic_load(&w->held[k])) continue;
            void *ptr = atomic_exchange(&w->held[k], NULL);
            if (ptr) return ptr;
        }
    }
    return NULL;
}

static void *worker_main(void *arg)
{
    cshs_worker *w = arg;
    cshs_server *s = w->srv;
    /* sendfile(2) and OpenSSL's writes to a socket the peer closed raise
     * SIGPIPE: blocked here, they fail with EPIPE instead, whatever the
     * application's disposition */
    sigset_t pipe;
    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe, NULL);
    /* A worker takes up to CSHS_WORKER_BATCH ready events per epoll_wait
     * while its events are served quickly: on a busy server one wait then
     * serves several connections (W1: 3.4 system calls per request instead
     * of 4). A slow event (a blocking handler) makes it take one at a
     * time and hand back what it still holds; and if it is stuck in a
     * handler while holding events, the supervisor hands them back within
     * about HELD_RESCUE_US, so no event waits long behind another's
     * handler and the supervisor sees them as ready. */
    int batch = 1;
    while (!atomic_load(&s->exiting)) {
        /* events another worker took and has not started (it may be in a
         * long handler, or preempted by the load on a shared core) are
         * served here first, before this worker waits for new ones */
        void *stolen = atomic_load(&s->c_holding) ? steal_held(s, w) : NULL;
        if (stolen) {
            int tag = *(int *)stolen;
            if (tag != TAG_WAKE) serve_event(s, w, stolen, tag, cshs__now_us());
            continue;
        }
        struct epoll_event evs[CSHS_WORKER_BATCH];
        int n = epoll_wait(s->epfd, evs, batch, (int)s->o.park_after_ms);
        if (n < 0) {
            if (errno == EINTR) continue;
            break;
        }
        if (n == 0) {
            /* idle for park_after_ms: park if more than min_threads are
             * waiting in epoll */
            park_self(s, w);
            continue;
        }
        int64_t start = cshs__now_us();
        if (n > 1) hold_events(s, w, evs, n, start);
        batch = CSHS_WORKER_BATCH;
        int tag0 = *(int *)evs[0].data.ptr;
        if (tag0 != TAG_WAKE) serve_event(s, w, evs[0].data.ptr, tag0, start);
        for (int i = 1; i < n; i++) {
            if (cshs__now_us() - start > WORKER_SLOW_US) {
                batch = 1;
                hand_back(s, w);
                break;
            }
            /* empty: another worker or the supervisor took it */
            void *ptr = atomic_exchange(&w->held[i], NULL);
            if (!ptr) continue;
            int tag = *(int *)ptr;
            if (tag != TAG_WAKE) serve_event(s, w, ptr, tag, cshs__now_us());
        }
        if (n > 1) {
            atomic_store(&w->held_since_us, 0);
            atomic_fetch_sub(&s->c_holding, 1);
        }
        if (cshs__now_us() - start > WORKER_SLOW_US) batch = 1;
        /* Surplus workers leave the epoll queue at once: with many waiters
         * the kernel wakes them in turn (FIFO) and requests spread over
         * cold threads. */
        int want = atomic_load(&s->park_wanted);
        while (want > 0 && !atomic_compare_exchange_weak(&s->park_wanted, &want, want - 1)) {
        }
        if (want > 0) park_self(s, w);
    }
    worker_exit(s, w);
    return NULL;
}

/* Under s->mu. */
static int spawn_worker(cshs_server *s)
{
    if (s->nworkers >= s->o.max_threads) return -EAGAIN;
    cshs_worker *w = calloc(1, sizeof *w);
    if (!w) return -ENOMEM;
    w->srv = s;
    w->ctx = cshw_context_new(&s->o.web);
    if (!w->ctx) {
        free(w);
        return -ENOMEM;
    }
    cshw_context_set_app_data(w->ctx, s->app_data);
    int r = pthread_create(&w->thread, NULL, worker_main, w);
    if (r) {
        cshw_context_free(w->ctx);
        free(w);
        return -r;
    }
    /* the slot first, then the count: steal_held reads the array without
     * the mutex, up to the count it loaded */
    s->workers[s->nworkers] = w;
    atomic_fetch_add(&s->nworkers, 1);
    return 0;
}

/* ---- the sweep ---- */

static void sweep(cshs_server *s, int all_idle)
{
    int64_t now = cshs__now_ms();
    for (int i = 0; i < s->nlis && !atomic_load(&s->stopping); i++)
        if (atomic_exchange(&s->lis[i].paused, 0)) arm(s, EPOLL_CTL_MOD, s->lis[i].fd, &s->lis[i]);
    pthread_mutex_lock(&s->mu);
    for (cshs_conn *c = s->conns; c; c = c->next) {
        if (atomic_load(&c->state) != CONN_IDLE) continue;
        int64_t d = atomic_load(&c->deadline_ms);
        int expired = all_idle || (d && now >= d);
        if (!expired) continue;
        int expected = CONN_IDLE;
        if (!atomic_compare_exchange_strong(&c->state, &expected, CONN_EXPIRED)) continue;
        int kind = atomic_load(&c->expire_kind);
        if (!all_idle) {
            if (kind == EXP_TLS)
                atomic_fetch_add(&s->e_tls, 1);
            else if (kind == EXP_HEAD)
                atomic_fetch_add(&s->e_head, 1);
            else if (kind == EXP_BODY)
                atomic_fetch_add(&s->e_body, 1);
            else if (kind == EXP_SEND)
                atomic_fetch_add(&s->e_send, 1);
            else if (kind == EXP_IDLE)
                atomic_fetch_add(&s->e_idle, 1);
        }
        /* The worker that gets its event ends it (only workers free
         * connections). A request in progress is answered 408 there, so
         * its socket is left whole and its registration armed for
         * writability, which fires at once; otherwise the socket is shut
         * down, which fires it too. */
        if (!all_idle && (kind == EXP_HEAD || kind == EXP_BODY)) {
            struct epoll_event ev;
            ev.events = EPOLLOUT | EPOLLIN | EPOLLRDHUP | EPOLLONESHOT;
            ev.data.ptr = c;
            epoll_ctl(s->epfd, EPOLL_CTL_MOD, c->fd, &ev);
        } else {
            shutdown(c->fd, SHUT_RDWR);
        }
    }
    pthread_mutex_unlock(&s->mu);
}

/* Whether the workers are stuck in handlers: at least 7 in 8 of the active
 * ones (all of them below 8) have been inside their current event longer
 * than grow_after_us. Not "every one": with many workers cycling through
 * blocking handlers (W2), some worker is nearly always just starting its
 * next event, and growth would stall far below the load; with quick
 * events (W1) no event lasts that long, so none counts. */
static int workers_stuck(cshs_server *s, int64_t now_us)
{
    unsigned active = 0, stuck = 0;
    for (unsigned i = 0; i < s->nworkers; i++) {
        cshs_worker *w = s->workers[i];
        if (atomic_load(&w->parked)) continue;
        active++;
        int64_t b = atomic_load(&w->busy_since_us);
        if (b && now_us - b >= (int64_t)s->o.grow_after_us) stuck++;
    }
    if (active == 0) return s->nworkers == 0;
    return nearly_all(stuck, active);
}

static void *supervisor_main(void *arg)
{
    cshs_server *s = arg;
    int64_t next_sweep = cshs__now_ms() + (int64_t)s->o.sweep_interval_ms;
    /* every park window, workers beyond the most that were busy at once
     * (and beyond min_threads) are asked to park */
    int64_t window = s->o.park_after_ms / 4 ? (int64_t)s->o.park_after_ms / 4 : 1;
    int64_t next_park = cshs__now_ms() + window;
    pthread_mutex_lock(&s->mu);
    while (!atomic_load(&s->exiting)) {
        int64_t now = cshs__now_ms();
        if (now >= next_sweep) {
            pthread_mutex_unlock(&s->mu);
            sweep(s, 0);
            pthread_mutex_lock(&s->mu);
            next_sweep = now + (int64_t)s->o.sweep_interval_ms;
        }
        if (now >= next_park) {
            next_park = now + window;
            uint64_t peak = atomic_exchange(&s->busy_peak, atomic_load(&s->c_busy));
            unsigned active = s->nworkers - (unsigned)atomic_load(&s->c_parked);
            unsigned keep = peak > s->o.min_threads ? (unsigned)peak : s->o.min_threads;
            atomic_store(&s->park_wanted, active > keep ? (int)(active - keep) : 0);
        }
        int64_t now_us = cshs__now_us();
        for (unsigned i = 0; i < s->nworkers; i++) {
            cshs_worker *w = s->workers[i];
            int64_t since = atomic_load(&w->held_since_us);
            if (since && now_us - since > HELD_RESCUE_US) hand_back(s, w);
        }
        if (workers_stuck(s, cshs__now_us())) {
            struct pollfd p = {s->epfd, POLLIN, 0};
            if (poll(&p, 1, 0) > 0) {
                if (atomic_load(&s->c_parked) > s->unpark_tokens) {
                    s->unpark_tokens++;
                    pthread_cond_signal(&s->park_cv);
                } else {
                    spawn_worker(s);
                }
            }
        }
        /* a short tick while (nearly) every worker is busy (growth is
         * decided in about grow_after_us), else until the next sweep or park
         * window, or until a worker says they all became busy. sup_sleeping
         * is set before c_busy is read: a worker that raised c_busy after
         * that read sees the flag and signals. */
        int64_t next = next_sweep < next_park ? next_sweep : next_park;
        atomic_store(&s->sup_sleeping, 1);
        unsigned active_now = s->nworkers - (unsigned)atomic_load(&s->c_parked);
        int all_busy = nearly_all(atomic_load(&s->c_busy), active_now);
        int holding = atomic_load(&s->c_holding) > 0;
        if (all_busy || holding) atomic_store(&s->sup_sleeping, 0);
        int64_t wait_us = (next - cshs__now_ms()) * 1000;
        if (holding) wait_us = HELD_RESCUE_US / 2;
        if (all_busy && wait_us > (int64_t)s->o.grow_after_us / 2 + 100)
            wait_us = (int64_t)s->o.grow_after_us / 2 + 100;
        if (wait_us < 100) wait_us = 100;
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        int64_t ns = ts.tv_nsec + (wait_us % 1000000) * 1000;
        ts.tv_sec += (time_t)(wait_us / 1000000 + ns / 1000000000);
        ts.tv_nsec = (long)(ns % 1000000000);
        pthread_cond_timedwait(&s->sup_cv, &s->mu, &ts);
        atomic_store(&s->sup_sleeping, 0);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

/* ---- start and stop ---- */

/* 1 when this server bound its Unix socket (only then is the path its to
 * remove: a failed start must not delete another instance's socket). */
static int bound_unix(const cshs_server *s)
{
    for (int i = 0; i < s->nlis; i++)
        if (s->lis[i].family == AF_UNIX && s->lis[i].fd >= 0) return 1;
    return 0;
}

static void close_listeners(cshs_server *s)
{
    if (s->o.unix_path && bound_unix(s)) unlink(s->o.unix_path);
    for (int i = 0; i < s->nlis; i++) {
        if (s->lis[i].fd >= 0) close(s->lis[i].fd);
        s->lis[i].fd = -1;
    }
    s->nlis = 0;
}

/* Frees the workers, the connections left and the server's descriptors.
 * Every thread is gone. */
static void release_threads_state(cshs_server *s)
{
    for (unsigned i = 0; i < s->nworkers; i++) {
        cshw_context_free(s->workers[i]->ctx);
        cshs__worker_release(s->workers[i]);
        free(s->workers[i]);
    }
    s->nworkers = 0;
    while (s->conns) {
        cshs_conn *c = s->conns;
        if (atomic_load(&c->state) != CONN_BUSY) {
            atomic_fetch_sub(&s->c_idle, 1);
            atomic_fetch_sub(&s->c_idle_buffers, cshs__conn_idle_held(c));
        }
        cshs__conn_close(NULL, c);
    }
    if (s->epfd >= 0) close(s->epfd);
    if (s->evfd >= 0) close(s->evfd);
    s->epfd = s->evfd = -1;
}

static void release_server(cshs_server *s)
{
    cshs__tls_free(s);
    pthread_mutex_destroy(&s->tls_mu);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->park_cv);
    pthread_cond_destroy(&s->sup_cv);
    pthread_cond_destroy(&s->stopped_cv);
    free(s->workers);
    free(s);
}

/* A worker's last act: an abandoned one that finds cshs_server_free
 * already called, and no other abandoned worker left, frees everything. */
static void worker_exit(cshs_server *s, cshs_worker *w)
{
    pthread_mutex_lock(&s->mu);
    w->exited = 1;
    int last = w->abandoned && --s->abandoned == 0 && s->free_wanted;
    pthread_mutex_unlock(&s->mu);
    if (last) {
        release_threads_state(s);
        release_server(s);
    }
}

/* Stops and joins every thread, then frees the workers and the connections
 * left. until_ms (0: no limit): a worker still inside a handler then is
 * abandoned (detached): a handler may block without end, and a stop has a
 * deadline. The server and what the abandoned workers use stay until the
 * last of them returns (worker_exit). Returns the number abandoned. */
static unsigned join_all(cshs_server *s, int64_t until_ms)
{
    atomic_store(&s->exiting, 1);
    uint64_t one = 1;
    if (write(s->evfd, &one, sizeof one) < 0) {
        /* the eventfd cannot be full after one write */
    }
    pthread_mutex_lock(&s->mu);
    pthread_cond_broadcast(&s->park_cv);
    pthread_cond_broadcast(&s->sup_cv);
    pthread_mutex_unlock(&s->mu);
    if (s->supervisor) pthread_join(s->supervisor, NULL);
    s->supervisor = 0;
    /* every worker joined before any is freed: a running worker reads the
     * others' held slots (steal_held) */
    unsigned abandoned = 0;
    for (unsigned i = 0; i < s->nworkers; i++) {
        cshs_worker *w = s->workers[i];
        if (!until_ms) {
            pthread_join(w->thread, NULL);
            continue;
        }
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        int64_t left = until_ms - cshs__now_ms();
        if (left < 0) left = 0;
        int64_t ns = ts.tv_nsec + (left % 1000) * 1000000;
        ts.tv_sec += (time_t)(left / 1000 + ns / 1000000000);
        ts.tv_nsec = (long)(ns % 1000000000);
        if (pthread_timedjoin_np(w->thread, NULL, &ts) == 0) continue;
        pthread_mutex_lock(&s->mu);
        int done = w->exited;
        if (!done) {
            w->abandoned = 1;
            s->abandoned++;
            abandoned++;
        }
        pthread_mutex_unlock(&s->mu);
        if (done)
            pthread_join(w->thread, NULL);
        else
            pthread_detach(w->thread);
    }
    if (!abandoned) release_threads_state(s);
    return abandoned;
}

int cshs_server_start(cshs_server *s)
{
    if (!s || s->started) return -EINVAL;
    int r = 0;
    s->epfd = epoll_create1(EPOLL_CLOEXEC);
    s->evfd = s->epfd < 0 ? -1 : eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (s->epfd < 0 || s->evfd < 0) {
        int e = -errno;
        if (s->epfd >= 0) close(s->epfd);
        s->epfd = -1;
        return e;
    }
    for (int i = 0; i < 5; i++) s->lis[i].fd = -1;
    int tls = s->o.tls_cert && *s->o.tls_cert;
    if (tls && cshs__tls_init(s) < 0) r = -EIO;
    if (r == 0 && s->o.address && *s->o.address)
        r = listen_tcp(s, s->o.address, s->o.port, 0, &s->lis[s->nlis++]);
    if (r == 0 && s->o.address6 && *s->o.address6)
        r = listen_tcp(s, s->o.address6, s->o.port, 0, &s->lis[s->nlis++]);
    if (r == 0 && tls && s->o.address && *s->o.address)
        r = listen_tcp(s, s->o.address, s->o.tls_port, 1, &s->lis[s->nlis++]);
    if (r == 0 && tls && s->o.address6 && *s->o.address6)
        r = listen_tcp(s, s->o.address6, s->o.tls_port, 1, &s->lis[s->nlis++]);
    if (r == 0 && s->o.unix_path && *s->o.unix_path) r = listen_unix(s, &s->lis[s->nlis++]);
    if (r == 0 && s->nlis == 0) r = -EINVAL;
    if (r < 0) goto fail;
    struct epoll_event ev;
    ev.events = EPOLLIN;
    ev.data.ptr = &s->wake_tag;
    epoll_ctl(s->epfd, EPOLL_CTL_ADD, s->evfd, &ev);
    for (int i = 0; i < s->nlis; i++) arm(s, EPOLL_CTL_ADD, s->lis[i].fd, &s->lis[i]);
    pthread_mutex_lock(&s->mu);
    for (unsigned i = 0; i < s->o.min_threads && r == 0; i++) r = spawn_worker(s);
    pthread_mutex_unlock(&s->mu);
    if (r == 0) {
        int e = pthread_create(&s->supervisor, NULL, supervisor_main, s);
        if (e) {
            s->supervisor = 0;
            r = -e;
        }
    }
    if (r < 0) {
        join_all(s, 0);
        goto fail;
    }
    s->started = 1;
    return 0;
fail:
    close_listeners(s);
    cshs__tls_free(s);
    close(s->epfd);
    close(s->evfd);
    s->epfd = s->evfd = -1;
    return r;
}

int cshs_server_stop(cshs_server *s, int deadline_ms)
{
    if (!s || !s->started || s->stopped) return 0;
    atomic_store(&s->stopping, 1);
    /* stop accepting now: a listening socket shut down leaves the listen
     * state (the port is free); the descriptors close after the join */
    for (int i = 0; i < s->nlis; i++) {
        epoll_ctl(s->epfd, EPOLL_CTL_DEL, s->lis[i].fd, NULL);
        shutdown(s->lis[i].fd, SHUT_RDWR);
    }
    if (s->o.unix_path && bound_unix(s)) unlink(s->o.unix_path);
    int64_t until =
        cshs__now_ms() + (deadline_ms < 0 ? (int64_t)s->o.stop_timeout_ms : deadline_ms);
    while (atomic_load(&s->c_open) > 0 && cshs__now_ms() < until) {
        sweep(s, 1); /* idle ones close; busy ones close after their request */
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    int cut = (int)atomic_load(&s->c_open);
    if (cut) {
        atomic_store(&s->forced, 1);
        pthread_mutex_lock(&s->mu);
        for (cshs_conn *c = s->conns; c; c = c->next) shutdown(c->fd, SHUT_RDWR);
        pthread_mutex_unlock(&s->mu);
        sweep(s, 1);
    }
    /* handlers get a last moment to return once their sockets are cut;
     * those that do not are left behind (join_all) */
    join_all(s, cut ? cshs__now_ms() + 250 : 0);
    close_listeners(s);
    pthread_mutex_lock(&s->mu);
    s->stopped = 1;
    pthread_cond_broadcast(&s->stopped_cv);
    pthread_mutex_unlock(&s->mu);
    return cut;
}

unsigned cshs_server_handlers_running(cshs_server *s)
{
    pthread_mutex_lock(&s->mu);
    unsigned n = s->abandoned;
    pthread_mutex_unlock(&s->mu);
    return n;
}

void cshs_server_wait(cshs_server *s)
{
    pthread_mutex_lock(&s->mu);
    while (s->started && !s->stopped) pthread_cond_wait(&s->stopped_cv, &s->mu);
    pthread_mutex_unlock(&s->mu);
}

void cshs_server_free(cshs_server *s)
{
    if (!s) return;
    cshs_server_stop(s, -1);
    /* a worker left in a handler at the stop's deadline still uses the
     * server: the last such worker frees it when its handler returns */
    pthread_mutex_lock(&s->mu);
    int later = s->abandoned > 0;
    s->free_wanted = 1;
    pthread_mutex_unlock(&s->mu);
    if (!later) release_server(s);
}

void cshs_server_counters(const cshs_server *s, cshs_counters *o)
{
    cshs_server *m = (cshs_server *)s; /* atomics are read, not changed */
    memset(o, 0, sizeof *o);
    o->connections_open = atomic_load(&m->c_open);
    o->connections_idle = atomic_load(&m->c_idle);
    o->connections_active = atomic_load(&m->c_active);
    o->connections_total = atomic_load(&m->c_total);
    o->requests = atomic_load(&m->c_requests);
    o->bytes_in = atomic_load(&m->c_bytes_in);
    o->bytes_out = atomic_load(&m->c_bytes_out);
    o->idle_memory = o->connections_idle * sizeof(cshs_conn) + atomic_load(&m->c_idle_buffers);
    o->workers_busy = atomic_load(&m->c_busy);
    o->workers_parked = atomic_load(&m->c_parked);
    pthread_mutex_lock(&m->mu);
    o->workers_total = m->nworkers;
    pthread_mutex_unlock(&m->mu);
    o->err_parse = atomic_load(&m->e_parse);
    o->err_rejected = atomic_load(&m->e_rejected);
    o->err_head_timeout = atomic_load(&m->e_head);
    o->err_idle_timeout = atomic_load(&m->e_idle);
    o->err_body_timeout = atomic_load(&m->e_body);
    o->err_send_timeout = atomic_load(&m->e_send);
    o->err_io = atomic_load(&m->e_io);
    o->err_tls = atomic_load(&m->e_tls);
    o->tls_handshakes = atomic_load(&m->c_tls_handshakes);
}
