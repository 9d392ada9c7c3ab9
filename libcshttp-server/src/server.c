/* The server: listeners, event loops, threads, the supervisor, start and
 * graceful stop.
 *
 * Thread model (README.md, "Threads"): `loops` event loops (one per core
 * by default), each an epoll set of its own in which its connections are
 * registered once, edge-triggered, for their whole life: no re-arm per
 * request, many events per wait. A loop is run by one thread at a time,
 * its owner, which also runs quick handlers inline. Handlers that wait
 * (a streaming route; any handler while its loop has lately seen one take
 * longer than grow_after_us) are run on other threads instead, as jobs,
 * and their connections given back to the loop. A handler that blocks
 * unannounced while its loop has events waiting loses the loop: after
 * grow_after_us the supervisor hands the loop to a spare thread, and the
 * old owner, once its handler returns, gives its connection back and
 * becomes a spare (Go's scheduler takes a P back from an M blocked in a
 * system call the same way). Spares beyond min_threads leave after
 * park_after_ms. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <cshttp/server/version.h>

#include "options_impl.h"
#include "server_impl.h"
#include "cshttp_internal/sized.h"

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

/* ---- sizing ---- */

/* The CPUs this process may run on: those of its affinity mask (taskset,
 * a container's cpuset), fewer if its cgroup (v2) has a CPU quota
 * (cpu.max "200000 100000" is two CPUs' worth, rounded up). A loop per
 * CPU the machine has but the process may not use would only hold
 * connections whose turn comes late. The online count when neither can
 * be read. */
static unsigned usable_cpus(void)
{
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    unsigned n = online > 0 ? (unsigned)online : 1;
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
        n = (unsigned)CPU_COUNT(&set);
    /* the process's own cgroup: "0::/path" (v2), its cpu.max under /sys/fs/cgroup */
    char line[512], path[640];
    FILE *f = fopen("/proc/self/cgroup", "re");
    if (!f) return n;
    path[0] = '\0';
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "0::", 3) != 0) continue;
        line[strcspn(line, "\n")] = '\0';
        snprintf(path, sizeof path, "/sys/fs/cgroup%s/cpu.max",
                 strcmp(line + 3, "/") ? line + 3 : "");
        break;
    }
    fclose(f);
    if (!path[0] || !(f = fopen(path, "re"))) return n;
    long long period = 0;
    char max[16]; /* the quota, or "max": none */
    if (fscanf(f, "%15s %lld", max, &period) == 2 && strcmp(max, "max") != 0 && period > 0) {
        long long quota = atoll(max);
        long long q = quota > 0 ? (quota + period - 1) / period : 0;
        if (q > 0 && q < (long long)n) n = (unsigned)q;
    }
    fclose(f);
    return n;
}

cshs_server *cshs_server_new(const cshs_options *options, cshw_handler handler, cshw_router *router)
{
    if ((handler == NULL) == (router == NULL)) return NULL;
    cshs_server *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    /* s->o owns copies of the limits and the toolkit's options, so that
     * both are there (never NULL) for the connections to read */
    if (cshs__options_copy(&s->o, options) < 0 || cshs_options_check(&s->o, NULL) < 0) {
        cshs_options_release(&s->o);
        free(s);
        return NULL;
    }
    s->handler = handler;
    s->router = router;
    cshw_exchange_config_init(&s->xcfg);
    s->xcfg.web = s->o.web;
    s->xcfg.limits = s->o.limits;
    s->xcfg.handler = handler;
    s->xcfg.router = router;
    s->xcfg.report = cshs__report;
    s->xcfg.closing = cshs__closing;
    s->xcfg.temp_bytes = cshs__temp_bytes;
    s->xcfg.arg = s;
    s->nloops = s->o.loops ? s->o.loops : usable_cpus();
    if (s->nloops < 1) s->nloops = 1;
    if (s->nloops > s->o.max_threads) s->nloops = s->o.max_threads;
    s->workers = calloc(s->o.max_threads + s->nloops, sizeof *s->workers); /* hand_over */
    s->loops = aligned_alloc(64, ((s->nloops * sizeof *s->loops) + 63) / 64 * 64);
    if (!s->workers || !s->loops) {
        free(s->workers);
        free(s->loops);
        cshs_options_release(&s->o);
        free(s);
        return NULL;
    }
    memset(s->loops, 0, s->nloops * sizeof *s->loops);
    for (unsigned i = 0; i < s->nloops; i++) {
        cshs_loop *l = &s->loops[i];
        l->srv = s;
        l->epfd = l->evfd = -1;
        l->wake_tag = TAG_WAKE;
        l->index = i;
        l->count = s->nloops;
        pthread_mutex_init(&l->mu, NULL);
    }
    atomic_store(&s->loops[0].refs, 1); /* the server's */
    pthread_mutex_init(&s->mu, NULL);
    pthread_mutex_init(&s->tls_mu, NULL);
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

void cshs_server_set_quick(cshs_server *s,
                           int (*fn)(void *arg, const char *head, const csh_message *msg),
                           void *arg)
{
    s->quick_fn = fn;
    s->quick_arg = arg;
}

int cshs__streams(void *arg, const char *head, const csh_message *msg)
{
    cshs_server *s = arg;
    return s->stream_fn(s->stream_arg, head, msg);
}

/* The toolkit's count of request bodies in temporary files, held to
 * max_request_temp_bytes. */
int cshs__temp_bytes(void *arg, int64_t delta)
{
    cshs_server *s = arg;
    if (delta < 0) {
        atomic_fetch_sub(&s->c_temp_bytes, (uint64_t)-delta);
        return 0;
    }
    uint64_t max = s->o.max_request_temp_bytes, now = atomic_load(&s->c_temp_bytes);
    do {
        if (max && now + (uint64_t)delta > max) {
            atomic_fetch_add(&s->c_temp_refused, 1);
            return -1;
        }
    } while (!atomic_compare_exchange_weak(&s->c_temp_bytes, &now, now + (uint64_t)delta));
    return 0;
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
    cshs_conn *c = o->transport ? o->transport->io : NULL;
    if (c) c->last_status = o->status;
    if (o->msg)
        atomic_fetch_add_explicit(&c->loop->k.requests, 1, memory_order_relaxed);
    else if (o->status >= 400 && o->error)
        atomic_fetch_add(&s->e_parse, 1);
    if (!s->log_fn) return;
    char method[32], target[2048], ref[512], ua[512];
    cshs_request_log e;
    memset(&e, 0, sizeof e);
    e.size = sizeof e;
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
         * its first space into the method and the rest (the log escapes
         * what they hold); a last word "HTTP/1.d" is the protocol, which a
         * log line names once, after the target */
        const char *sp = o->line_len ? memchr(o->line, ' ', o->line_len) : NULL;
        size_t ml = sp ? (size_t)(sp - o->line) : o->line_len;
        const char *t = sp ? sp + 1 : NULL;
        size_t tl = sp ? o->line_len - ml - 1 : 0;
        e.version_minor = 1;
        if (tl >= 9 && t[tl - 9] == ' ' && !memcmp(t + tl - 8, "HTTP/1.", 7) && t[tl - 1] >= '0' &&
            t[tl - 1] <= '9') {
            e.version_minor = t[tl - 1] - '0';
            tl -= 9;
        }
        e.method = ml ? copy_str(method, sizeof method, o->line, ml) : "-";
        e.target = sp ? copy_str(target, sizeof target, t, tl) : "-";
    }
    /* a request the client left before any answer: nginx's 499 */
    e.status = o->status == 0 && o->msg ? 499 : o->status;
    e.bytes_out = o->bytes_out;
    /* a toolkit older than 0.3.2 does not say: none then */
    if (offsetof(cshw_exchange_outcome, body_bytes_out) < o->size)
        e.body_bytes_out = o->body_bytes_out;
    e.bytes_in = o->bytes_in;
    e.duration_us = o->duration_us;
    e.time_unix_ms = o->start_unix_ms;
    /* a switch is logged once its tunnel ends, with its bytes and time */
    if (o->status == 101 && c && c->tunnel && cshs__tunnel_hold_log(c, &e) == 0) return;
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

int cshs_server_add_tick(cshs_server *s, void (*fn)(void *arg), void *arg)
{
    if (!s || !fn) return -EINVAL;
    if (s->started) return -EBUSY;
    if (s->nticks == sizeof s->ticks / sizeof s->ticks[0]) return -ENOSPC;
    s->ticks[s->nticks].fn = fn;
    s->ticks[s->nticks].arg = arg;
    s->nticks++;
    return 0;
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

/* ---- accepting ---- */

/* The connections a loop serves now. */
static uint64_t loop_load(cshs_loop *l)
{
    return atomic_load_explicit(&l->k.idle, memory_order_relaxed) +
           atomic_load_explicit(&l->k.active, memory_order_relaxed);
}

/* The loop a new connection joins: the one with the fewest connections,
 * the accepting loop `l` on a tie, and never one whose owner is inside a
 * handler now (a loop held by a handler that blocks would let its new
 * connections wait). The listener is shared, and its exclusive wake-up
 * goes to the loop that waited last, the one that just accepted: without
 * this, a burst of connections joins one loop while the others idle. */
static cshs_loop *joining_loop(cshs_server *s, cshs_loop *l)
{
    cshs_loop *best = l;
    uint64_t least = loop_load(l);
    for (unsigned i = 0; i < s->nloops && least > 0; i++) {
        cshs_loop *m = &s->loops[i];
        if (m == l || atomic_load_explicit(&m->handler_since_us, memory_order_relaxed) > 0)
            continue;
        uint64_t n = loop_load(m);
        if (n < least) {
            least = n;
            best = m;
        }
    }
    return best;
}

/* c joins loop t's list and counters, or leaves them. */
static void loop_link(cshs_loop *t, cshs_conn *c)
{
    c->loop = t;
    atomic_fetch_add_explicit(&t->k.idle, 1, memory_order_relaxed);
    pthread_mutex_lock(&t->mu);
    c->prev = NULL;
    c->next = t->conns;
    if (t->conns) t->conns->prev = c;
    t->conns = c;
    pthread_mutex_unlock(&t->mu);
}

static void loop_unlink(cshs_loop *t, cshs_conn *c)
{
    pthread_mutex_lock(&t->mu);
    if (c->prev)
        c->prev->next = c->next;
    else
        t->conns = c->next;
    if (c->next) c->next->prev = c->prev;
    c->prev = c->next = NULL;
    pthread_mutex_unlock(&t->mu);
    atomic_fetch_sub_explicit(&t->k.idle, 1, memory_order_relaxed);
}

/* One connection from the listener (nginx's default: one per event),
 * served by the loop joining_loop picks: its epoll set takes the socket,
 * whose first bytes wake that loop. */
static void accept_one(cshs_worker *w, cshs_loop *l, cshs_listener *lis)
{
    cshs_server *s = l->srv;
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    int fd = accept4(lis->fd, (struct sockaddr *)&ss, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
        /* out of descriptors or memory: the listener stays ready and every
         * wait would return at once; it leaves the epoll set until the
         * next sweep */
        if ((errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) &&
            epoll_ctl(l->epfd, EPOLL_CTL_DEL, lis->fd, NULL) == 0)
            l->listeners_paused = 1;
        return;
    }
    (void)w;
    if (lis->family == AF_UNIX) ss.ss_family = AF_UNIX;
    if (atomic_load(&s->c_open) >= s->o.max_connections) {
        if (lis->tls) { /* a plain-text 503 means nothing inside TLS */
            close(fd);
            atomic_fetch_add(&s->e_rejected, 1);
        } else {
            cshs__reject(l, fd, (struct sockaddr *)&ss);
        }
        return;
    }
    cshs_conn *c = cshs__conn_new(s, fd, (struct sockaddr *)&ss);
    if (!c || (lis->tls && cshs__tls_attach(c) < 0)) {
        free(c);
        close(fd);
        return;
    }
    c->loop = l;
    c->accept_ms = cshs__now_ms();
    if (lis->tls && s->o.tls_handshake_timeout_ms) {
        c->deadline_ms = c->accept_ms + (int64_t)s->o.tls_handshake_timeout_ms;
        c->expire_kind = EXP_TLS;
    } else if (!lis->tls && s->o.header_timeout_ms) {
        c->deadline_ms = c->accept_ms + (int64_t)s->o.header_timeout_ms;
        c->expire_kind = EXP_HEAD;
    }
    c->parked = 1;
    atomic_fetch_add(&s->c_open, 1);
    atomic_fetch_add(&s->c_total, 1);
    cshs_loop *t = joining_loop(s, l);
    loop_link(t, c);
    /* Registered once, edge-triggered (whoever serves an event reads and
     * writes until the socket says EAGAIN), for input only, as nginx does:
     * a new socket is writable at once, and with writability registered
     * that alone would fire an event, a wake-up of the loop for nothing
     * (one connection in five in a run of full handshakes). The first write
     * that has to wait adds writability (cshs__conn_want_out), for the rest
     * of the connection's life. Bytes already there fire at once. */
    struct epoll_event ev;
    ev.events = EPOLLIN | EPOLLRDHUP | EPOLLET;
    ev.data.ptr = c;
    if (epoll_ctl(t->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
        /* never to be served: closed now rather than left until stop, by
         * this loop (a loop's closed connections are its owner's to free) */
        if (t != l) {
            loop_unlink(t, c);
            loop_link(l, c);
        }
        cshs__conn_close(w, c);
    }
}

/* The connection's registration as it stands: input unless muted,
 * writability once a write waited. */
static int conn_modify(cshs_conn *c, int out_armed, int in_muted)
{
    struct epoll_event ev;
    ev.events = (in_muted ? 0u : EPOLLIN) | (out_armed ? EPOLLOUT : 0u) | EPOLLRDHUP | EPOLLET;
    ev.data.ptr = c;
    return epoll_ctl(c->loop->epfd, EPOLL_CTL_MOD, c->fd, &ev) < 0 ? -errno : 0;
}

int cshs__conn_want_out(cshs_conn *c)
{
    if (c->out_armed) return 0;
    /* EPOLL_CTL_MOD looks at the socket again: if it became writable since
     * the write that said EAGAIN, the event fires now, so none is lost */
    int r = conn_modify(c, 1, c->in_muted);
    if (r < 0) return r;
    c->out_armed = 1;
    return 0;
}

void cshs__conn_input_events(cshs_conn *c, int on)
{
    if (!c->in_muted == !!on) return;
    if (conn_modify(c, c->out_armed, !on) == 0) c->in_muted = (char)!on;
}

/* ---- the loops as reactors (reactor.h) ---- */

static void unlist(cshs_loop *l, cshs_watch *w)
{
    if (w->prev)
        w->prev->next = w->next;
    else
        l->watches = w->next;
    if (w->next) w->next->prev = w->prev;
    w->prev = w->next = NULL;
}

/* Under l->mu: the loop wakes by w's deadline. */
static void note_deadline(cshs_loop *l, const cshs_watch *w)
{
    int64_t due = atomic_load_explicit(&l->watch_due_ms, memory_order_relaxed);
    if (w->deadline_ms && (!due || w->deadline_ms < due))
        atomic_store_explicit(&l->watch_due_ms, w->deadline_ms, memory_order_relaxed);
}

/* Under l->mu: w goes on l's list of armed watches (their deadlines). */
static void enlist(cshs_loop *l, cshs_watch *w)
{
    w->prev = NULL;
    w->next = l->watches;
    if (l->watches) l->watches->prev = w;
    l->watches = w;
}

/* Under l->mu: the watch's registration in l, inert (no event reported
 * until armed again). */
static void make_inert(cshs_loop *l, cshs_watch *w)
{
    struct epoll_event ev;
    ev.events = EPOLLONESHOT;
    ev.data.ptr = w;
    epoll_ctl(l->epfd, EPOLL_CTL_MOD, w->fd, &ev);
}

int cshs_reactor_arm(cshs_reactor *r, cshs_watch *w)
{
    if (!r || !w || !w->ready) return -EINVAL;
    cshs_loop *l = (cshs_loop *)r;
    if (w->armed && w->reg != r) return -EINVAL;
    /* read by the loop's owner before anything else of an event (an
     * atomic access: the arming thread may be another) */
    if (__atomic_load_n(&w->tag, __ATOMIC_RELAXED) != TAG_WATCH)
        __atomic_store_n(&w->tag, TAG_WATCH, __ATOMIC_RELAXED);
    struct epoll_event ev;
    ev.events = w->events | EPOLLONESHOT;
    ev.data.ptr = w;
    /* armed and listed under the lock: the event's dispatch and the
     * deadline check (the loop's owner) take it too, and never meet a
     * watch half armed. Registered already (the reactor it was armed on
     * last): re-armed with one MOD. */
    /* A socket armed on another loop since stays registered, inert, in
     * this one too: a pooled connection used by the handlers of two loops
     * in turn would otherwise pay an ADD that fails (EEXIST) before its
     * MOD each time it comes back. */
    size_t index = (size_t)(l - l->srv->loops);
    uint64_t bit = index < 64 ? (uint64_t)1 << index : 0;
    pthread_mutex_lock(&l->mu);
    int op = w->reg == r || (w->regs & bit) ? EPOLL_CTL_MOD : EPOLL_CTL_ADD;
    int e = epoll_ctl(l->epfd, op, w->fd, &ev) < 0 ? errno : 0;
    if (e == ENOENT || e == EEXIST) {
        op = e == ENOENT ? EPOLL_CTL_ADD : EPOLL_CTL_MOD;
        e = epoll_ctl(l->epfd, op, w->fd, &ev) < 0 ? errno : 0;
    }
    if (e == 0) {
        if (!w->armed) enlist(l, w);
        note_deadline(l, w);
        w->reg = r;
        w->regs |= bit;
        w->armed = 1;
    }
    pthread_mutex_unlock(&l->mu);
    return -e;
}

void cshs_reactor_disarm(cshs_watch *w)
{
    if (!w || !w->armed) return;
    cshs_loop *l = (cshs_loop *)w->reg;
    pthread_mutex_lock(&l->mu);
    if (w->armed) {
        unlist(l, w);
        w->armed = 0;
        make_inert(l, w);
    }
    pthread_mutex_unlock(&l->mu);
}

/* The one event of an armed watch (the loop's owner): taken off the list,
 * then given. One found not armed (none can be: a disarmed registration
 * reports nothing) is ignored. */
static void watch_event(cshs_loop *l, cshs_watch *w, uint32_t events)
{
    pthread_mutex_lock(&l->mu);
    int armed = w->armed && w->reg == (cshs_reactor *)l;
    if (armed) {
        unlist(l, w);
        w->armed = 0;
    }
    pthread_mutex_unlock(&l->mu);
    if (armed) w->ready(w, events);
}

/* ---- kept sockets (kept.h) ---- */

/* The loops are freed by the last of the server and the kept sockets
 * registered with them to let go. */
static void loops_ref(cshs_loop *l)
{
    atomic_fetch_add(&(l - l->index)->refs, 1);
}

static void loops_unref(cshs_loop *l)
{
    cshs_loop *base = l - l->index;
    if (atomic_fetch_sub(&base->refs, 1) != 1) return;
    for (unsigned i = 0; i < base->count; i++) pthread_mutex_destroy(&base[i].mu);
    free(base);
}

/* The socket's registration with l (ADD or MOD) for `events`; its data
 * is the struct's address and generation. 0, or errno. */
static int kept_ctl(cshs_loop *l, cshs_kept *k, int op, uint32_t events)
{
    unsigned gen = atomic_load_explicit(&k->gen, memory_order_relaxed);
    struct epoll_event ev;
    ev.events = events;
    ev.data.u64 = (uint64_t)(uintptr_t)k | (uint64_t)(gen & 0xffff) << 48;
    return epoll_ctl(l->epfd, op, k->w.fd, &ev) < 0 ? errno : 0;
}

/* Under l->mu: the socket leaves l (not armed any more); an event of it
 * that l has taken already is dropped by its generation. */
static void kept_leave(cshs_loop *l, cshs_kept *k)
{
    if (k->w.armed) {
        unlist(l, &k->w);
        k->w.armed = 0;
    }
    atomic_store_explicit(&k->gen, atomic_load_explicit(&k->gen, memory_order_relaxed) + 1,
                          memory_order_relaxed);
    k->w.reg = NULL;
}

int cshs__kept_register(cshs_kept *k, cshs_reactor *r, int fd)
{
    if (!k || !r || (uint64_t)(uintptr_t)k > CSHS_EV_PTR_MASK) return -EINVAL;
    cshs_loop *l = (cshs_loop *)r;
    if (k->w.reg == r && k->w.fd == fd) return 0;
    if (k->w.reg) { /* registered with another loop: it leaves that one */
        epoll_ctl(((cshs_loop *)k->w.reg)->epfd, EPOLL_CTL_DEL, k->w.fd, NULL);
        cshs__kept_forget(k);
    }
    __atomic_store_n(&k->w.tag, TAG_KEPT, __ATOMIC_RELAXED);
    k->w.fd = fd;
    k->muted = 0;
    atomic_store(&k->missed, 0);
    loops_ref(l);
    pthread_mutex_lock(&l->mu);
    k->w.reg = r;
    pthread_mutex_unlock(&l->mu);
    int e = kept_ctl(l, k, EPOLL_CTL_ADD, CSHS_KEPT_EVENTS);
    if (e) cshs__kept_forget(k);
    return -e;
}

/* What an armed kept socket is given: its events, and errors. */
static uint32_t kept_wants(const cshs_kept *k)
{
    return k->w.events | EPOLLERR | EPOLLHUP;
}

int cshs__kept_arm(cshs_kept *k)
{
    if (!k || !k->w.reg || !k->w.ready) return -EINVAL;
    cshs_loop *l = (cshs_loop *)k->w.reg;
    uint32_t want = kept_wants(k);
    int e = 0;
    /* all under the lock: once armed, the event may be given (and its
     * ready close the socket) as soon as the lock is let go */
    pthread_mutex_lock(&l->mu);
    uint32_t missed = atomic_fetch_and(&k->missed, ~want) & want;
    if (missed || k->muted) {
        /* an event came before the arm (the answer to a request sent just
         * before it, say), or the registration asked for none (muted):
         * epoll looks at the socket again and raises the event if the
         * socket is ready, to be given once armed */
        e = kept_ctl(l, k, EPOLL_CTL_MOD, CSHS_KEPT_EVENTS);
        if (!e) k->muted = 0;
    }
    if (!e && !k->w.armed) {
        enlist(l, &k->w);
        note_deadline(l, &k->w);
        k->w.armed = 1;
    }
    pthread_mutex_unlock(&l->mu);
    return -e;
}

int cshs__kept_mute(cshs_kept *k)
{
    if (!k || !k->w.reg) return 0;
    cshs_loop *l = (cshs_loop *)k->w.reg;
    int e = 0;
    pthread_mutex_lock(&l->mu);
    if (!k->muted) {
        /* EPOLLERR and EPOLLHUP still come: remembered as missed */
        e = kept_ctl(l, k, EPOLL_CTL_MOD, EPOLLET);
        if (!e) k->muted = 1;
    }
    pthread_mutex_unlock(&l->mu);
    return -e;
}

int cshs__kept_disarm(cshs_kept *k, cshs_reactor *r)
{
    cshs_loop *l = (cshs_loop *)r;
    pthread_mutex_lock(&l->mu);
    int armed = k->w.reg == r && k->w.armed;
    if (armed) {
        unlist(l, &k->w);
        k->w.armed = 0;
    }
    pthread_mutex_unlock(&l->mu);
    return armed;
}

uint32_t cshs__kept_take_missed(cshs_kept *k, uint32_t mask)
{
    return atomic_fetch_and(&k->missed, ~mask) & mask;
}

void cshs__kept_forget(cshs_kept *k)
{
    if (!k || !k->w.reg) return;
    cshs_loop *l = (cshs_loop *)k->w.reg;
    pthread_mutex_lock(&l->mu);
    kept_leave(l, k);
    pthread_mutex_unlock(&l->mu);
    loops_unref(l); /* after the server's free, the last one frees the loops */
}

/* An event of a kept socket (the loop's owner): given when armed for it,
 * else remembered; one of a socket that has left since (another
 * generation) is dropped. */
static void kept_event(cshs_loop *l, cshs_kept *k, unsigned gen, uint32_t events)
{
    pthread_mutex_lock(&l->mu);
    if ((atomic_load_explicit(&k->gen, memory_order_relaxed) & 0xffff) != gen) {
        pthread_mutex_unlock(&l->mu);
        return;
    }
    /* w.events is the owner's while not armed: read only when armed */
    int give = k->w.armed && (events & kept_wants(k));
    if (give) {
        unlist(l, &k->w);
        k->w.armed = 0;
    } else {
        atomic_fetch_or(&k->missed, events);
    }
    pthread_mutex_unlock(&l->mu);
    if (give) k->w.ready(&k->w, events);
}

void cshs__expire_watches(cshs_loop *l, int64_t now_ms)
{
    int all = atomic_load(&l->srv->forced);
    cshs_watch *due = NULL;
    int64_t earliest = 0; /* of those left armed */
    pthread_mutex_lock(&l->mu);
    for (cshs_watch *w = l->watches, *next; w; w = next) {
        next = w->next;
        if (!all && (!w->deadline_ms || now_ms < w->deadline_ms)) {
            if (w->deadline_ms && (!earliest || w->deadline_ms < earliest))
                earliest = w->deadline_ms;
            continue;
        }
        unlist(l, w);
        w->armed = 0;
        if (w->tag != TAG_KEPT) make_inert(l, w); /* a kept socket stays registered */
        w->next = due;
        due = w;
    }
    atomic_store_explicit(&l->watch_due_ms, earliest, memory_order_relaxed);
    pthread_mutex_unlock(&l->mu);
    while (due) {
        cshs_watch *w = due;
        due = w->next;
        w->next = NULL;
        w->ready(w, 0);
    }
}

/* ---- the loops ---- */

/* The loop this thread runs (its owner), else NULL. */
static _Thread_local cshs_loop *self_loop;

cshs_loop *cshs__self_loop(void)
{
    return self_loop;
}

int cshs__on_reactor(const cshs_reactor *r)
{
    return r && self_loop == (const cshs_loop *)r;
}

static void wake_loop(cshs_loop *l)
{
    uint64_t one = 1;
    if (write(l->evfd, &one, sizeof one) < 0) {
        /* full (it cannot be after one write without a read): awake anyway */
    }
}

/* The supervisor is woken (once) when a loop enters a handler while it
 * sleeps its long wait. */
static void wake_supervisor(cshs_server *s)
{
    if (atomic_load_explicit(&s->sup_sleeping, memory_order_relaxed) &&
        atomic_exchange(&s->sup_sleeping, 0)) {
        /* under the mutex: the supervisor is then either inside its wait or
         * has not read the loops yet, so the signal is not lost */
        pthread_mutex_lock(&s->mu);
        pthread_cond_signal(&s->sup_cv);
        pthread_mutex_unlock(&s->mu);
    }
}

int64_t cshs__handler_begin(cshs_loop *l)
{
    int64_t now = cshs__now_us();
    atomic_store(&l->handler_since_us, now);
    wake_supervisor(l->srv);
    return now;
}

int cshs__handler_end(cshs_loop *l, int64_t since)
{
    /* the value this thread stored: after a hand-over, -1, or the next
     * owner's own handler's, which must not pass for ours */
    return atomic_compare_exchange_strong(&l->handler_since_us, &since, 0);
}

void cshs__give_back(cshs_conn *c)
{
    cshs_loop *l = c->loop;
    pthread_mutex_lock(&l->mu);
    c->link = l->returned;
    l->returned = c;
    pthread_mutex_unlock(&l->mu);
    wake_loop(l);
}

/* Whether the loop may serve connection c now: not while a handler's
 * thread has it. Then the event is noted (busy 2), for that thread to
 * hand the connection back rather than park it. */
static int claim(cshs_conn *c)
{
    int b = atomic_load_explicit(&c->busy, memory_order_acquire);
    while (b != 0) {
        if (b == 2) return 0;
        if (atomic_compare_exchange_weak(&c->busy, &b, 2)) return 0;
    }
    return 1;
}

/* The loop's wake-up: connections handlers gave back go on. */
static void take_returned(cshs_worker *w, cshs_loop *l)
{
    uint64_t v;
    if (read(l->evfd, &v, sizeof v) < 0) {
        /* nothing to read: woken for the stop or a sweep */
    }
    pthread_mutex_lock(&l->mu);
    cshs_conn *list = l->returned;
    l->returned = NULL;
    pthread_mutex_unlock(&l->mu);
    /* given back last first: served in the order they came */
    cshs_conn *rev = NULL;
    while (list) {
        cshs_conn *n = list->link;
        list->link = rev;
        rev = list;
        list = n;
    }
    while (rev) {
        cshs_conn *c = rev;
        rev = c->link;
        c->link = NULL;
        if (w->lost) {
            /* this thread lost the loop in a handler met here: the rest
             * go back on the list for the new owner */
            cshs__give_back(c);
            continue;
        }
        atomic_store_explicit(&c->busy, 0, memory_order_relaxed);
        cshs__conn_resume(w, c);
    }
}

/* Deadlines, the stop, and a listener paused for want of descriptors. */
static void sweep(cshs_worker *w, cshs_loop *l)
{
    cshs_server *s = l->srv;
    int64_t now = cshs__now_ms();
    atomic_store_explicit(&l->next_sweep_ms, now + (int64_t)s->o.sweep_interval_ms,
                          memory_order_relaxed);
    /* Another loop's accept adds a connection at the list's head, under
     * the lock, and changes no link the walk reads; only the owner takes
     * one out. So the head is read under the lock, and the rest without. */
    pthread_mutex_lock(&l->mu);
    cshs_conn *first = l->conns;
    pthread_mutex_unlock(&l->mu);
    for (cshs_conn *c = first, *next; c; c = next) {
        next = c->next;
        if (!atomic_load_explicit(&c->busy, memory_order_acquire) && c->parked)
            cshs__conn_sweep(w, c, now);
    }
    if (l->listeners_paused && !atomic_load(&s->stopping)) {
        l->listeners_paused = 0;
        for (int i = 0; i < s->nlis; i++) {
            struct epoll_event ev;
            ev.events = EPOLLIN | EPOLLEXCLUSIVE;
            ev.data.ptr = &s->lis[i];
            /* EEXIST when it is there: only a paused one is added back */
            epoll_ctl(l->epfd, EPOLL_CTL_ADD, s->lis[i].fd, &ev);
        }
    }
}

/* Frees the closed connections, but those still on the posted list
 * (closed by an event after they were posted): they stay until
 * take_posted has taken them off. */
static void bury(cshs_loop *l)
{
    cshs_conn *kept = NULL;
    while (l->graveyard) {
        cshs_conn *c = l->graveyard;
        l->graveyard = c->link;
        if (c->posted) {
            c->link = kept;
            kept = c;
        } else {
            cshs__conn_free(c);
        }
    }
    l->graveyard = kept;
}

/* Connections that stopped early to let others go first, and deferred
 * requests' continuations (posted): the ones on the list now, in order;
 * those posted meanwhile wait for the next batch. One at a time, the rest
 * left on the list and counted (nposted): when one blocks, the supervisor
 * sees work waiting behind it and hands the loop over, and the new owner
 * finds them there (the old one touches the list no more). */
static void take_posted(cshs_worker *w, cshs_loop *l)
{
    for (int n = atomic_load_explicit(&l->nposted, memory_order_relaxed); n > 0 && !w->lost; n--) {
        cshs_conn *c = l->posted;
        l->posted = c->post_next;
        if (!l->posted) l->posted_tail = NULL;
        c->post_next = NULL;
        c->posted = 0;
        atomic_fetch_sub_explicit(&l->nposted, 1, memory_order_relaxed);
        if (c->closed) continue; /* the next bury frees it */
        if (c->resume == RESUME_DEFERRED)
            cshs__conn_continue(w, c);
        else if (claim(c))
            cshs__conn_event(w, c);
    }
}

/* Runs the loop until the thread loses it (handed over while in a
 * handler) or the server exits. */
static void serve_loop(cshs_worker *w, cshs_loop *l)
{
    cshs_server *s = l->srv;
    while (!atomic_load(&s->exiting)) {
        int next = atomic_load_explicit(&l->next, memory_order_relaxed);
        int nev = atomic_load_explicit(&l->nev, memory_order_relaxed);
        if (next >= nev) {
            bury(l);
            /* between batches, so that no event taken meets a watch its
             * ready removed */
            int64_t now = cshs__now_ms();
            int64_t due = atomic_load_explicit(&l->watch_due_ms, memory_order_relaxed);
            if (now >= l->next_watch_check_ms || (due && now >= due) || atomic_load(&s->forced)) {
                l->next_watch_check_ms = now + (int64_t)s->o.sweep_interval_ms;
                cshs__expire_watches(l, now);
            }
            int64_t wait = 0;
            if (!l->posted) {
                now = cshs__now_ms();
                wait = atomic_load_explicit(&l->next_sweep_ms, memory_order_relaxed) - now;
                /* a watch's deadline wakes the loop when it comes (one
                 * armed from another thread meanwhile, by the sweep's) */
                due = atomic_load_explicit(&l->watch_due_ms, memory_order_relaxed);
                if (due && due - now < wait) wait = due - now;
                if (wait < 0) wait = 0;
                if (wait > 1000) wait = 1000;
            }
            int n = epoll_wait(l->epfd, l->evs, CSHS_LOOP_BATCH, (int)wait);
            if (n < 0) n = 0;
            atomic_store_explicit(&l->next, 0, memory_order_relaxed);
            atomic_store_explicit(&l->nev, n, memory_order_relaxed);
            next = 0;
            nev = n;
        }
        if (cshs__now_ms() >= atomic_load_explicit(&l->next_sweep_ms, memory_order_relaxed)) {
            sweep(w, l);
            if (w->lost) return;
        }
        while (next < nev) {
            /* the cursor moves before the event is served: a thread that
             * takes the loop over goes on with the next one */
            atomic_store_explicit(&l->next, next + 1, memory_order_relaxed);
            uint64_t data = l->evs[next].data.u64;
            void *ptr = (void *)(uintptr_t)(data & CSHS_EV_PTR_MASK);
            /* what the registration points at says what it is (a watch's
             * tag may have been written by another thread: atomic) */
            int tag = __atomic_load_n((int *)ptr, __ATOMIC_RELAXED);
            if (tag == TAG_CONN) {
                cshs_conn *c = ptr;
                uint32_t ev = l->evs[next].events;
                /* writability alone means nothing to a connection that
                 * reads and waits for no write of its own (once a write
                 * waited, writability stays registered), as nginx's empty
                 * write handler: no read is spent to see EAGAIN */
                if (!c->closed && claim(c)) {
                    int idle_out = !(ev & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) &&
                                   c->phase == CP_READ && c->tls_wait != POLLOUT;
                    if (ev & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) c->rdhup = 1;
                    if (!idle_out) cshs__conn_event(w, c);
                } else if (!c->closed && (ev & (EPOLLRDHUP | EPOLLHUP | EPOLLERR))) {
                    /* busy: a request that waits for a peer (deferred)
                     * learns that its client left */
                    cshs__conn_client_left(c);
                }
            } else if (tag == TAG_LISTENER) {
                if (!atomic_load(&s->stopping)) accept_one(w, l, ptr);
            } else if (tag == TAG_WATCH) {
                watch_event(l, ptr, l->evs[next].events);
            } else if (tag == TAG_KEPT) {
                kept_event(l, ptr, (unsigned)(data >> 48), l->evs[next].events);
            } else {
                take_returned(w, l);
            }
            if (w->lost) return;
            next = atomic_load_explicit(&l->next, memory_order_relaxed);
            nev = atomic_load_explicit(&l->nev, memory_order_relaxed);
        }
        if (l->posted) {
            take_posted(w, l);
            if (w->lost) return;
        }
    }
}

static void run_loop(cshs_worker *w, cshs_loop *l)
{
    w->lost = 0;
    atomic_store(&l->owner_tid, w->tid);
    self_loop = l;
    serve_loop(w, l);
    self_loop = NULL;
}

/* ---- threads ---- */

static void worker_exit(cshs_server *s, cshs_worker *w);

/* The next handler waiting for a thread (under s->mu), or NULL. None is
 * taken once the threads leave: the connections left are freed with the
 * loops. */
static cshs_conn *next_waiting(cshs_server *s)
{
    cshs_conn *c = s->waiting;
    if (!c || atomic_load(&s->exiting)) return NULL;
    s->waiting = c->link;
    if (!s->waiting) s->waiting_tail = NULL;
    c->link = NULL;
    s->nwaiting--;
    atomic_fetch_sub(&s->c_waiting, 1);
    atomic_fetch_add(&s->c_offloaded, 1);
    return c;
}

static void *worker_main(void *arg)
{
    cshs_worker *w = arg;
    cshs_server *s = w->srv;
    w->tid = (pid_t)syscall(SYS_gettid);
    /* sendfile(2) and OpenSSL's writes to a socket the peer closed raise
     * SIGPIPE: blocked here, they fail with EPIPE instead, whatever the
     * application's disposition */
    sigset_t pipe;
    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe, NULL);
    pthread_mutex_lock(&s->mu);
    for (;;) {
        if (w->loop) {
            cshs_loop *l = w->loop;
            w->loop = NULL;
            pthread_mutex_unlock(&s->mu);
            run_loop(w, l);
            pthread_mutex_lock(&s->mu);
            continue;
        }
        if (w->job) {
            cshs_conn *c = w->job;
            w->job = NULL;
            pthread_mutex_unlock(&s->mu);
            atomic_fetch_add(&s->c_busy, 1);
            cshs__conn_job(w, c);
            atomic_fetch_sub(&s->c_busy, 1);
            pthread_mutex_lock(&s->mu);
            continue;
        }
        if ((w->job = next_waiting(s))) continue;
        if (atomic_load(&s->exiting)) break;
        /* a spare: the most recently used is the first one given work */
        w->next_spare = s->spares;
        s->spares = w;
        w->on_spares = 1;
        atomic_fetch_add(&s->c_spare, 1);
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += (time_t)(s->o.park_after_ms / 1000);
        ts.tv_nsec += (long)(s->o.park_after_ms % 1000) * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        /* The wait takes no lock: whoever takes this spare off the list
         * assigns it under the mutex and posts after unlocking, so the
         * spare wakes without meeting the mutex its waker holds (a
         * condition variable's wait would take it again at once). */
        pthread_mutex_unlock(&s->mu);
        int timed_out = 0;
        while (sem_timedwait(&w->wake, &ts) != 0) {
            if (errno == ETIMEDOUT) {
                timed_out = 1;
                break;
            }
        }
        pthread_mutex_lock(&s->mu);
        if (timed_out && !w->on_spares) {
            /* taken meanwhile: the post is on its way */
            pthread_mutex_unlock(&s->mu);
            while (sem_wait(&w->wake) != 0) {
            }
            pthread_mutex_lock(&s->mu);
            timed_out = 0;
        }
        if (timed_out) {
            /* still on the spare list: taken off it */
            for (cshs_worker **p = &s->spares; *p; p = &(*p)->next_spare)
                if (*p == w) {
                    *p = w->next_spare;
                    atomic_fetch_sub(&s->c_spare, 1);
                    break;
                }
            w->on_spares = 0;
            if (atomic_load(&s->exiting)) break;
            /* idle for park_after_ms beyond the threads kept: leaves, and
             * its slot with it (a server that grows and shrinks for days
             * must not run out of slots) */
            if (s->alive > s->o.min_threads && s->alive > s->nloops + 1) {
                for (unsigned i = 0; i < s->nworkers; i++)
                    if (s->workers[i] == w) {
                        s->workers[i] = s->workers[--s->nworkers];
                        break;
                    }
                s->alive--;
                pthread_mutex_unlock(&s->mu);
                pthread_detach(w->thread);
                cshs__worker_release(w);
                sem_destroy(&w->wake);
                free(w);
                return NULL;
            }
        }
    }
    s->alive--;
    pthread_mutex_unlock(&s->mu);
    worker_exit(s, w);
    return NULL;
}

/* A new thread (under s->mu), given `loop` or `job` to start with. NULL
 * at `limit` threads or when no thread can be made. */
static cshs_worker *spawn_worker(cshs_server *s, cshs_loop *loop, cshs_conn *job, unsigned limit)
{
    if (s->nworkers >= limit) return NULL;
    cshs_worker *w = calloc(1, sizeof *w);
    if (!w) return NULL;
    w->srv = s;
    w->loop = loop;
    w->job = job;
    w->own = cshs__later_new(s);
    if (!w->own) {
        free(w);
        return NULL;
    }
    sem_init(&w->wake, 0, 0);
    if (pthread_create(&w->thread, NULL, worker_main, w) != 0) {
        sem_destroy(&w->wake);
        cshs__later_free(w->own);
        free(w);
        return NULL;
    }
    s->workers[s->nworkers++] = w;
    s->alive++;
    return w;
}

/* A spare (under s->mu), or NULL. */
static cshs_worker *take_spare(cshs_server *s)
{
    cshs_worker *w = s->spares;
    if (w) {
        s->spares = w->next_spare;
        w->on_spares = 0;
        atomic_fetch_sub(&s->c_spare, 1);
    }
    return w;
}

/* A handler that waits runs on another thread: a spare, or a new one;
 * with max_threads running, it waits in the server's queue for the first
 * thread whose job ends (server_impl.h says what each result asks of the
 * caller). A queue is kept only while some thread besides the loops'
 * owners will come back for it. */
int cshs__offload(cshs_server *s, cshs_conn *c, int bounded)
{
    /* a deferred request's connection is busy already, and stays so */
    int was = atomic_exchange(&c->busy, 1);
    pthread_mutex_lock(&s->mu);
    cshs_worker *w = take_spare(s);
    int post = w != NULL, how = OFFLOAD_RUNS;
    if (w)
        w->job = c;
    else if (!(w = spawn_worker(s, NULL, c, s->o.max_threads))) {
        /* every thread is busy: the loops' owners, and jobs (or handlers
         * whose loop was handed over) that come back to the queue */
        if (s->nworkers <= s->nloops) {
            how = OFFLOAD_NONE;
        } else if (bounded && s->nwaiting >= s->o.max_waiting_handlers) {
            how = OFFLOAD_FULL;
        } else {
            c->link = NULL;
            if (s->waiting_tail)
                s->waiting_tail->link = c;
            else
                s->waiting = c;
            s->waiting_tail = c;
            s->nwaiting++;
            atomic_fetch_add(&s->c_waiting, 1);
            how = OFFLOAD_WAITS;
        }
    }
    pthread_mutex_unlock(&s->mu);
    if (post) sem_post(&w->wake);
    if (w) atomic_fetch_add(&s->c_offloaded, 1);
    if (how == OFFLOAD_NONE || how == OFFLOAD_FULL) atomic_store(&c->busy, was);
    return how;
}

/* ---- the supervisor ---- */

/* Whether a loop has something to serve: events of its batch not served
 * yet, connections posted to go on after it (a deferred request's
 * continuation among them), events in its epoll set, or a sweep that is
 * due. */
static int loop_has_work(cshs_loop *l)
{
    if (atomic_load_explicit(&l->next, memory_order_relaxed) <
            atomic_load_explicit(&l->nev, memory_order_relaxed) ||
        atomic_load_explicit(&l->nposted, memory_order_relaxed) > 0)
        return 1;
    if (cshs__now_ms() > atomic_load_explicit(&l->next_sweep_ms, memory_order_relaxed)) return 1;
    struct pollfd p = {l->epfd, POLLIN, 0};
    return poll(&p, 1, 0) > 0;
}

/* Whether thread tid (of this process) is waiting in the kernel (state S
 * or D in /proc), rather than running or runnable. Read only when a loop
 * has been held past grow_after_us with events waiting. */
static int thread_blocked(pid_t tid)
{
    char path[64], buf[256];
    snprintf(path, sizeof path, "/proc/self/task/%d/stat", (int)tid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 1; /* cannot tell: as before, a held loop is handed over */
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return 1;
    buf[n] = '\0';
    /* "tid (comm) S ...": the state follows the last ')' */
    const char *p = strrchr(buf, ')');
    return !p || p[1] != ' ' || (p[2] != 'R');
}

/* Hands loop l, whose owner has been in a handler since `since`, to a
 * spare or new thread. */
static void hand_over(cshs_server *s, cshs_loop *l, int64_t since, int blocked)
{
    pthread_mutex_lock(&s->mu);
    cshs_worker *w = take_spare(s);
    int fresh = 0, post = 0;
    if (!w) {
        /* at max_threads too: the loop's old owner becomes one of the
         * threads that run jobs, and a loop is never left to a handler
         * that blocks (at most a thread more per loop) */
        w = spawn_worker(s, NULL, NULL, s->o.max_threads + s->nloops);
        fresh = 1;
    }
    if (w) {
        if (atomic_compare_exchange_strong(&l->handler_since_us, &since, -1)) {
            /* the old owner no longer touches the loop: its next owner
             * finds this when it starts (the mutex orders it) */
            if (blocked) cshs__offload_more(l);
            w->loop = l;
            atomic_fetch_add(&s->c_handovers, 1);
            post = !fresh;
        } else if (!fresh) {
            /* the handler returned meanwhile: the spare stays one (it was
             * not posted, and on the list again it is owed no post) */
            w->next_spare = s->spares;
            s->spares = w;
            w->on_spares = 1;
            atomic_fetch_add(&s->c_spare, 1);
        }
        /* a fresh thread with nothing to do becomes a spare by itself */
    }
    pthread_mutex_unlock(&s->mu);
    if (post) sem_post(&w->wake);
}

static void *supervisor_main(void *arg)
{
    cshs_server *s = arg;
    int64_t next_tick = cshs__now_ms() + (int64_t)s->o.sweep_interval_ms;
    int64_t quiet_since = cshs__now_ms();
    uint64_t last_served = 0;
    unsigned backoff = 0; /* looks spaced grow_after_us << backoff apart */
    pthread_mutex_lock(&s->mu);
    while (!atomic_load(&s->exiting)) {
        pthread_mutex_unlock(&s->mu);
        if (s->nticks && cshs__now_ms() >= next_tick) {
            for (unsigned i = 0; i < s->nticks; i++) s->ticks[i].fn(s->ticks[i].arg);
            next_tick = cshs__now_ms() + (int64_t)s->o.sweep_interval_ms;
        }
        int64_t now_us = cshs__now_us();
        int in_handler = 0, slow = 0;
        for (unsigned i = 0; i < s->nloops; i++) {
            cshs_loop *l = &s->loops[i];
            int64_t since = atomic_load(&l->handler_since_us);
            if (since <= 0) continue;
            in_handler = 1;
            int64_t held = now_us - since;
            if (held >= (int64_t)s->o.grow_after_us / 4) slow = 1;
            if (held < (int64_t)s->o.grow_after_us || !loop_has_work(l)) continue;
            /* A handler blocked in the kernel: the loop goes at once, and
             * its next handlers run on other threads a while. One that
             * computes, or whose thread was only preempted (a machine
             * short of cores), keeps it unless it holds it 20 times as
             * long: another runnable thread would not run sooner. */
            int blocked = thread_blocked(atomic_load(&l->owner_tid));
            if (blocked || held >= 20 * (int64_t)s->o.grow_after_us)
                hand_over(s, l, since, blocked);
        }
        pthread_mutex_lock(&s->mu);
        /* While requests come, look again every grow_after_us: a timer
         * costs less than a loop signalling the supervisor (a futex wake
         * per handler). After 100 ms without a request or a handler,
         * sleep until a loop enters one (wake_supervisor) or a second
         * passes. sup_sleeping is set before the loops are read again: a
         * loop that entered a handler after that read sees the flag and
         * signals. */
        uint64_t served = 0;
        for (unsigned i = 0; i < s->nloops; i++)
            served += atomic_load_explicit(&s->loops[i].k.requests, memory_order_relaxed);
        if (in_handler || served != last_served) quiet_since = cshs__now_ms();
        last_served = served;
        /* While the handlers the looks meet are quick (W1's take
         * microseconds, a TLS handshake's connection none at all), look
         * less often, down to every 8 grow_after_us: each look wakes this
         * thread, which on busy cores preempts a loop or its client (1,591
         * of a handshake run's 3.3 context switches per connection were
         * the supervisor's at one look per grow_after_us). A handler seen
         * running for a quarter of grow_after_us brings the looks back to
         * every grow_after_us; so a handler that blocks after quick ones is
         * handed over within 8 grow_after_us, and after that within
         * grow_after_us as before. Go's sysmon backs off the same way. */
        if (slow)
            backoff = 0;
        else if (backoff < 3)
            backoff++;
        int64_t wait_us = (int64_t)s->o.grow_after_us << backoff;
        if (!in_handler && cshs__now_ms() - quiet_since >= 100) {
            atomic_store(&s->sup_sleeping, 1);
            for (unsigned i = 0; i < s->nloops; i++)
                if (atomic_load(&s->loops[i].handler_since_us) > 0) in_handler = 1;
            if (in_handler)
                atomic_store(&s->sup_sleeping, 0);
            else
                wait_us = 1000000;
        }
        if (s->nticks) {
            int64_t to_tick = (next_tick - cshs__now_ms()) * 1000;
            if (to_tick < wait_us) wait_us = to_tick < 100 ? 100 : to_tick;
        }
        if (atomic_load(&s->exiting)) break;
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

static void close_loops(cshs_server *s)
{
    for (unsigned i = 0; i < s->nloops; i++) {
        cshs_loop *l = &s->loops[i];
        if (l->epfd >= 0) close(l->epfd);
        if (l->evfd >= 0) close(l->evfd);
        l->epfd = l->evfd = -1;
    }
}

/* Frees the workers, the connections left and the loops' descriptors.
 * Every thread is gone. */
static void release_threads_state(cshs_server *s)
{
    for (unsigned i = 0; i < s->nworkers; i++) {
        cshs__worker_release(s->workers[i]);
        sem_destroy(&s->workers[i]->wake);
        free(s->workers[i]);
    }
    s->nworkers = 0;
    for (unsigned i = 0; i < s->nloops; i++) {
        cshs_loop *l = &s->loops[i];
        for (cshs_conn *c = l->posted; c; c = c->post_next) c->posted = 0;
        l->posted = l->posted_tail = NULL;
        atomic_store(&l->nposted, 0);
        bury(l);
        while (l->conns) {
            cshs_conn *c = l->conns;
            atomic_store(&c->busy, 0);
            cshs__conn_close(NULL, c);
            bury(l);
        }
        l->returned = NULL;
        free(l->tunnel_buf);
        l->tunnel_buf = NULL;
    }
    close_loops(s);
}

static void release_server(cshs_server *s)
{
    cshs__tls_free(s);
    loops_unref(s->loops);
    pthread_mutex_destroy(&s->tls_mu);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->sup_cv);
    pthread_cond_destroy(&s->stopped_cv);
    free(s->workers);
    cshs_options_release(&s->o);
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

static void wake_everyone(cshs_server *s)
{
    for (unsigned i = 0; i < s->nloops; i++)
        if (s->loops[i].evfd >= 0) wake_loop(&s->loops[i]);
    pthread_mutex_lock(&s->mu);
    /* every spare taken off the list and posted: each then sees exiting */
    while (s->spares) {
        cshs_worker *w = take_spare(s);
        sem_post(&w->wake);
    }
    pthread_cond_broadcast(&s->sup_cv);
    pthread_mutex_unlock(&s->mu);
}

/* Stops and joins every thread, then frees the workers and the connections
 * left. until_ms (0: no limit): a worker still inside a handler then is
 * abandoned (detached): a handler may block without end, and a stop has a
 * deadline. The server and what the abandoned workers use stay until the
 * last of them returns (worker_exit). Returns the number abandoned. */
static unsigned join_all(cshs_server *s, int64_t until_ms)
{
    atomic_store(&s->exiting, 1);
    wake_everyone(s);
    if (s->supervisor) pthread_join(s->supervisor, NULL);
    s->supervisor = 0;
    /* workers are only added under mu, and none after exiting is set
     * except by the supervisor, which is joined */
    pthread_mutex_lock(&s->mu);
    unsigned n = s->nworkers;
    pthread_mutex_unlock(&s->mu);
    unsigned abandoned = 0;
    for (unsigned i = 0; i < n; i++) {
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
    for (int i = 0; i < 5; i++) s->lis[i].fd = -1;
    for (unsigned i = 0; i < s->nloops && r == 0; i++) {
        cshs_loop *l = &s->loops[i];
        l->epfd = epoll_create1(EPOLL_CLOEXEC);
        l->evfd = l->epfd < 0 ? -1 : eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (l->epfd < 0 || l->evfd < 0) r = -errno;
    }
    if (r < 0) {
        close_loops(s);
        return r;
    }
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
    /* every loop waits on every listener; EPOLLEXCLUSIVE wakes one waiting
     * loop per connection rather than all of them */
    int64_t now = cshs__now_ms();
    for (unsigned i = 0; i < s->nloops && r == 0; i++) {
        cshs_loop *l = &s->loops[i];
        atomic_store(&l->next_sweep_ms, now + (int64_t)s->o.sweep_interval_ms);
        struct epoll_event ev;
        ev.events = EPOLLIN;
        ev.data.ptr = &l->wake_tag;
        if (epoll_ctl(l->epfd, EPOLL_CTL_ADD, l->evfd, &ev) < 0) r = -errno;
        for (int k = 0; k < s->nlis && r == 0; k++) {
            ev.events = EPOLLIN | EPOLLEXCLUSIVE;
            ev.data.ptr = &s->lis[k];
            if (epoll_ctl(l->epfd, EPOLL_CTL_ADD, s->lis[k].fd, &ev) < 0) r = -errno;
        }
    }
    if (r < 0) goto fail;
    pthread_mutex_lock(&s->mu);
    for (unsigned i = 0; i < s->nloops && r == 0; i++)
        if (!spawn_worker(s, &s->loops[i], NULL, s->o.max_threads)) r = -EAGAIN;
    /* spares ready for the first handlers that wait */
    unsigned keep = s->o.min_threads > s->nloops + 1 ? s->o.min_threads : s->nloops + 1;
    while (r == 0 && s->nworkers < keep && spawn_worker(s, NULL, NULL, s->o.max_threads)) {
    }
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
        atomic_store(&s->exiting, 0);
        goto fail;
    }
    s->started = 1;
    return 0;
fail:
    close_listeners(s);
    cshs__tls_free(s);
    close_loops(s);
    return r;
}

static uint64_t open_count(cshs_server *s)
{
    return atomic_load(&s->c_open);
}

/* Whether a loop has a watch armed still. */
static int watches_armed(cshs_server *s)
{
    int any = 0;
    for (unsigned k = 0; k < s->nloops && !any; k++) {
        pthread_mutex_lock(&s->loops[k].mu);
        any = s->loops[k].watches != NULL;
        pthread_mutex_unlock(&s->loops[k].mu);
    }
    return any;
}

int cshs_server_stop(cshs_server *s, int deadline_ms)
{
    if (!s || !s->started || s->stopped) return 0;
    atomic_store(&s->stopping, 1);
    /* stop accepting now: a listening socket shut down leaves the listen
     * state (the port is free); the descriptors close after the join */
    for (int i = 0; i < s->nlis; i++) {
        for (unsigned k = 0; k < s->nloops; k++)
            epoll_ctl(s->loops[k].epfd, EPOLL_CTL_DEL, s->lis[i].fd, NULL);
        shutdown(s->lis[i].fd, SHUT_RDWR);
    }
    if (s->o.unix_path && bound_unix(s)) unlink(s->o.unix_path);
    int64_t until =
        cshs__now_ms() + (deadline_ms < 0 ? (int64_t)s->o.stop_timeout_ms : deadline_ms);
    /* each loop's sweep closes what waits between requests; the others
     * close after their request (the exchange says Connection: close) */
    while (open_count(s) > 0 && cshs__now_ms() < until) {
        for (unsigned k = 0; k < s->nloops; k++) {
            atomic_store(&s->loops[k].next_sweep_ms, 0);
            wake_loop(&s->loops[k]);
        }
        int64_t left = until - cshs__now_ms(); /* 10 ms a look, not past the deadline */
        struct timespec ts = {0, (long)(left < 10 ? (left > 0 ? left : 0) : 10) * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    int cut = (int)open_count(s);
    if (cut) {
        atomic_store(&s->forced, 1);
        for (unsigned k = 0; k < s->nloops; k++) {
            cshs_loop *l = &s->loops[k];
            pthread_mutex_lock(&l->mu);
            for (cshs_conn *c = l->conns; c; c = c->next) shutdown(c->fd, SHUT_RDWR);
            pthread_mutex_unlock(&l->mu);
            atomic_store(&l->next_sweep_ms, 0);
            wake_loop(l);
        }
        /* the loops close what is not inside a handler */
        int64_t soon = cshs__now_ms() + 20;
        while (cshs__now_ms() < soon && open_count(s) > atomic_load(&s->c_busy)) {
            struct timespec ts = {0, 5 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
    }
    /* Watches still armed (reactor.h) are given their end, ready with 0,
     * before the loops go: a client's open on a reactor whose name is
     * still being looked up, say, which no connection of the server
     * waits for. Without this they would stay registered, and the loops
     * they hold (kept.h) would never be freed. */
    if (!cut) {
        atomic_store(&s->forced, 1);
        for (unsigned k = 0; k < s->nloops; k++) wake_loop(&s->loops[k]);
        int64_t soon = cshs__now_ms() + 100;
        while (cshs__now_ms() < soon && watches_armed(s)) {
            struct timespec ts = {0, 2 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
    }
    /* handlers get a last moment to return once their sockets are cut;
     * those that do not are left behind (join_all): the stop returns
     * within the deadline and 100 ms, the cut's 20 and this 20 with room
     * for the rest */
    join_all(s, cut ? cshs__now_ms() + 20 : 0);
    close_listeners(s);
    pthread_mutex_lock(&s->mu);
    s->stopped = 1;
    pthread_cond_broadcast(&s->stopped_cv);
    pthread_mutex_unlock(&s->mu);
    return cut;
}

uint64_t cshs_server_loop_connections(const cshs_server *s, unsigned index)
{
    if (!s || !s->started || index >= s->nloops) return 0;
    return loop_load(&s->loops[index]);
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
    unsigned unreleased = s->nworkers;
    s->free_wanted = 1;
    pthread_mutex_unlock(&s->mu);
    if (!later) {
        /* workers left behind at the stop that all returned before this
         * free (their last one saw no free wanted): their state is
         * released here, as join_all releases it when none is left */
        if (unreleased) release_threads_state(s);
        if (!s->started) close_loops(s);
        release_server(s);
    }
}

CSH__SIZED_NO_TAIL_PADDING(cshs_counters, tunnels);
CSH__SIZED_NO_TAIL_PADDING(cshs_request_log, body_bytes_out);

int cshs_server_counters_sized(const cshs_server *s, cshs_counters *out, size_t size)
{
    if (!s || !out || size < CSHS_COUNTERS_SIZE_0_3) return -EINVAL;
    cshs_server *m = (cshs_server *)s; /* atomics are read, not changed */
    cshs_counters all, *o = &all;      /* this build's, then what fits in the caller's */
    memset(o, 0, sizeof *o);
    o->connections_open = atomic_load(&m->c_open);
    o->connections_total = atomic_load(&m->c_total);
    uint64_t idle_buffers = 0;
    for (unsigned i = 0; i < m->nloops; i++) {
        cshs_loop_counters *k = &m->loops[i].k;
        o->connections_idle += atomic_load_explicit(&k->idle, memory_order_relaxed);
        o->connections_active += atomic_load_explicit(&k->active, memory_order_relaxed);
        o->requests += atomic_load_explicit(&k->requests, memory_order_relaxed);
        o->bytes_in += atomic_load_explicit(&k->bytes_in, memory_order_relaxed);
        o->bytes_out += atomic_load_explicit(&k->bytes_out, memory_order_relaxed);
        idle_buffers += atomic_load_explicit(&k->idle_buffers, memory_order_relaxed);
    }
    o->idle_memory = o->connections_idle * sizeof(cshs_conn) + idle_buffers;
    o->workers_busy = atomic_load(&m->c_busy);
    o->workers_parked = atomic_load(&m->c_spare);
    pthread_mutex_lock(&m->mu);
    o->workers_total = m->alive;
    pthread_mutex_unlock(&m->mu);
    o->loops = m->nloops;
    o->handovers = atomic_load(&m->c_handovers);
    o->offloaded = atomic_load(&m->c_offloaded);
    o->deferred = atomic_load(&m->c_deferred);
    o->handlers_waiting = atomic_load(&m->c_waiting);
    o->handlers_declined = atomic_load(&m->c_declined);
    o->request_temp_bytes = atomic_load(&m->c_temp_bytes);
    o->request_temp_refused = atomic_load(&m->c_temp_refused);
    o->upgrades = atomic_load(&m->c_upgrades);
    o->tunnels = atomic_load(&m->c_tunnels);
    o->err_parse = atomic_load(&m->e_parse);
    o->err_rejected = atomic_load(&m->e_rejected);
    o->err_head_timeout = atomic_load(&m->e_head);
    o->err_idle_timeout = atomic_load(&m->e_idle);
    o->err_body_timeout = atomic_load(&m->e_body);
    o->err_send_timeout = atomic_load(&m->e_send);
    o->err_io = atomic_load(&m->e_io);
    o->err_tls = atomic_load(&m->e_tls);
    o->tls_handshakes = atomic_load(&m->c_tls_handshakes);
    csh__sized_out(out, size, o, sizeof *o);
    return 0;
}
