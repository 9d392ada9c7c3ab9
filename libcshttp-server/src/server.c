/* The server: its making and settings, the access log's report, start and
 * graceful stop. The parts it runs have a file each: listen.c (listeners,
 * accepting), loop.c (the event loops), reactor.c (watches and kept
 * sockets on the loops), threads.c (workers, parked workers, the supervisor).
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
 * grow_after_us the supervisor hands the loop to a parked worker, and the
 * old owner, once its handler returns, gives its connection back and
 * parks (Go's scheduler takes a P back from an M blocked in a
 * system call the same way). Parked workers beyond min_threads leave after
 * park_after_ms. */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
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
    static const char *const h1[] = {"HTTP/1.0", "HTTP/1.1", "HTTP/1.2", "HTTP/1.3", "HTTP/1.4",
                                     "HTTP/1.5", "HTTP/1.6", "HTTP/1.7", "HTTP/1.8", "HTTP/1.9"};
    if (c && CSHS_H2_STREAM(c)) {
        e.protocol = "HTTP/2.0";
        e.version_minor = 0;
    } else {
        e.protocol = h1[e.version_minor >= 0 && e.version_minor <= 9 ? e.version_minor : 1];
    }
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
        cshs__free_closed(l);
        while (l->conns) {
            cshs_conn *c = l->conns;
            atomic_store(&c->busy, 0);
            cshs__conn_close(NULL, c);
            cshs__free_closed(l);
        }
        l->returned = NULL;
        cshs__h2_drop_kicked(l);
        cshs__h2_drop_spares(l);
        free(l->tunnel_buf);
        l->tunnel_buf = NULL;
    }
    close_loops(s);
}

static void release_server(cshs_server *s)
{
    cshs__tls_free(s);
    cshs__loops_unref(s->loops);
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
void cshs__worker_exit(cshs_server *s, cshs_worker *w)
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
        if (s->loops[i].evfd >= 0) cshs__wake_loop(&s->loops[i]);
    pthread_mutex_lock(&s->mu);
    /* every parked worker taken off the list and posted: each then sees exiting */
    while (s->parked) {
        cshs_worker *w = cshs__take_parked(s);
        sem_post(&w->wake);
    }
    pthread_cond_broadcast(&s->sup_cv);
    pthread_mutex_unlock(&s->mu);
}

/* Stops and joins every thread, then frees the workers and the connections
 * left. until_ms (0: no limit): a worker still inside a handler then is
 * abandoned (detached): a handler may block without end, and a stop has a
 * deadline. The server and what the abandoned workers use stay until the
 * last of them returns (cshs__worker_exit). Returns the number abandoned. */
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
        r = cshs__listen_tcp(s, s->o.address, s->o.port, 0, &s->lis[s->nlis++]);
    if (r == 0 && s->o.address6 && *s->o.address6)
        r = cshs__listen_tcp(s, s->o.address6, s->o.port, 0, &s->lis[s->nlis++]);
    if (r == 0 && tls && s->o.address && *s->o.address)
        r = cshs__listen_tcp(s, s->o.address, s->o.tls_port, 1, &s->lis[s->nlis++]);
    if (r == 0 && tls && s->o.address6 && *s->o.address6)
        r = cshs__listen_tcp(s, s->o.address6, s->o.tls_port, 1, &s->lis[s->nlis++]);
    if (r == 0 && s->o.unix_path && *s->o.unix_path) r = cshs__listen_unix(s, &s->lis[s->nlis++]);
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
        if (!cshs__spawn_worker(s, &s->loops[i], NULL, s->o.max_threads)) r = -EAGAIN;
    /* parked workers ready for the first handlers that wait */
    unsigned keep = s->o.min_threads > s->nloops + 1 ? s->o.min_threads : s->nloops + 1;
    while (r == 0 && s->nworkers < keep && cshs__spawn_worker(s, NULL, NULL, s->o.max_threads)) {
    }
    pthread_mutex_unlock(&s->mu);
    if (r == 0) {
        int e = pthread_create(&s->supervisor, NULL, cshs__supervisor_main, s);
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
            cshs__wake_loop(&s->loops[k]);
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
            cshs__wake_loop(l);
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
     * they hold (persistent_watch.h) would never be freed. */
    if (!cut) {
        atomic_store(&s->forced, 1);
        for (unsigned k = 0; k < s->nloops; k++) cshs__wake_loop(&s->loops[k]);
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
    return cshs__loop_load(&s->loops[index]);
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

CSH__SIZED_NO_TAIL_PADDING(cshs_counters, h2_refused);
CSH__SIZED_NO_TAIL_PADDING(cshs_request_log, protocol);

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
    o->workers_parked = atomic_load(&m->c_parked);
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
    o->h2_connections = atomic_load(&m->c_h2_open);
    o->h2_connections_total = atomic_load(&m->c_h2_total);
    o->h2_streams = atomic_load(&m->c_h2_streams);
    o->h2_refused = atomic_load(&m->e_h2);
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
