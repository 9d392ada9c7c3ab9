/* The status page's figures (stats.h). Workers only add to atomic counters
 * and take no lock: the latency histogram of the current second, and the
 * path table, whose slots are claimed once with a compare-and-swap. (A
 * mutex there, taken by every request on every loop, made a handler wait
 * whenever its holder was preempted, and the engine took such a wait for
 * a blocking handler: a hand-over, then handlers run as jobs.) The sampler
 * thread swaps the histogram out once a second and writes the ring under
 * its own mutex, which the status handlers take to copy it. */
#include "stats.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Upper bounds of the latency buckets, in microseconds (about 1.5x
 * apart: a percentile is reported as its bucket's bound); the last bucket
 * holds everything above. */
static const double bucket_us[] = {50,    100,   200,    300,    500,    700,    1000,   1500,
                                   2000,  3000,  5000,   7000,   10000,  15000,  20000,  30000,
                                   50000, 70000, 100000, 150000, 200000, 300000, 500000, 700000,
                                   1e6,   2e6,   5e6,    1e7,    3e7,    6e7};
#define NBUCKETS (sizeof bucket_us / sizeof bucket_us[0] + 1)

/* A slot of the path table: empty, then claimed by one writer, then
 * ready (its path and hash fixed for good); requests only grow. */
enum { SLOT_EMPTY = 0, SLOT_CLAIMED, SLOT_READY };
typedef struct path_slot {
    _Atomic int state;
    uint32_t hash;
    char path[STATS_PATH_MAX];
    _Atomic uint64_t requests;
} path_slot;

struct stats {
    cshs_server *server;
    int64_t started_ms;
    _Atomic uint64_t hist[NBUCKETS];

    path_slot paths[STATS_PATHS]; /* open addressing by the path's hash */
    _Atomic uint64_t other;
    _Atomic uint64_t not_found; /* 404 and 410 answers, one row for all their paths */

    pthread_mutex_t ring_lock;
    stats_sample ring[STATS_SAMPLES];
    size_t head, count; /* next slot to write, samples held */

    pthread_t thread;
    int running;
    pthread_mutex_t stop_lock;
    pthread_cond_t stop_cond;
    int stopping;
};

static int64_t now_ms(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

stats *stats_new(cshs_server *s)
{
    stats *st = calloc(1, sizeof *st);
    if (!st) return NULL;
    st->server = s;
    st->started_ms = now_ms(CLOCK_REALTIME);
    pthread_mutex_init(&st->ring_lock, NULL);
    pthread_mutex_init(&st->stop_lock, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&st->stop_cond, &ca);
    pthread_condattr_destroy(&ca);
    return st;
}

void stats_free(stats *st)
{
    if (!st) return;
    stats_stop(st);
    pthread_mutex_destroy(&st->ring_lock);
    pthread_mutex_destroy(&st->stop_lock);
    pthread_cond_destroy(&st->stop_cond);
    free(st);
}

double stats_percentile(const uint64_t *counts, size_t n, double q)
{
    uint64_t total = 0;
    for (size_t i = 0; i < n; i++) total += counts[i];
    if (total == 0) return 0;
    /* the smallest bucket holding the ceil(q * total)-th request */
    uint64_t rank = (uint64_t)(q * (double)total + 0.999999);
    if (rank < 1) rank = 1;
    uint64_t seen = 0;
    for (size_t i = 0; i < n; i++) {
        seen += counts[i];
        if (seen >= rank)
            return (i < NBUCKETS - 1 ? bucket_us[i] : bucket_us[NBUCKETS - 2] * 2) / 1000.0;
    }
    return bucket_us[NBUCKETS - 2] * 2 / 1000.0;
}

void stats_record(stats *st, const cshs_request_log *e, int64_t latency_us)
{
    size_t b = 0;
    while (b < NBUCKETS - 1 && (double)latency_us > bucket_us[b]) b++;
    atomic_fetch_add_explicit(&st->hist[b], 1, memory_order_relaxed);

    /* paths that name nothing take no slot: a client asking for many of
     * them would fill the table for good, and the busy paths would be
     * counted as "(other)" from then on */
    if (e->status == 404 || e->status == 410) {
        atomic_fetch_add_explicit(&st->not_found, 1, memory_order_relaxed);
        return;
    }
    /* the path: the target without its query, cut to the slot */
    char path[STATS_PATH_MAX];
    const char *t = e->target ? e->target : "";
    size_t n = strcspn(t, "?#");
    if (n >= sizeof path) n = sizeof path - 1;
    memcpy(path, t, n);
    path[n] = '\0';
    uint32_t h = 2166136261u; /* FNV-1a */
    for (size_t k = 0; k < n; k++) h = (h ^ (unsigned char)path[k]) * 16777619u;
    /* Its slot, or the first empty one on its probe sequence. A slot
     * another thread is filling is passed over: the same new path may then
     * take two slots, which stats_routes adds up. */
    for (size_t k = 0; k < STATS_PATHS; k++) {
        path_slot *sl = &st->paths[(h + k) % STATS_PATHS];
        int state = atomic_load_explicit(&sl->state, memory_order_acquire);
        if (state == SLOT_EMPTY) {
            int empty = SLOT_EMPTY;
            if (atomic_compare_exchange_strong_explicit(
                    &sl->state, &empty, SLOT_CLAIMED, memory_order_acq_rel, memory_order_acquire)) {
                sl->hash = h;
                memcpy(sl->path, path, n + 1);
                atomic_fetch_add_explicit(&sl->requests, 1, memory_order_relaxed);
                atomic_store_explicit(&sl->state, SLOT_READY, memory_order_release);
                return;
            }
            state = empty;
        }
        if (state == SLOT_READY && sl->hash == h && strcmp(sl->path, path) == 0) {
            atomic_fetch_add_explicit(&sl->requests, 1, memory_order_relaxed);
            return;
        }
    }
    atomic_fetch_add_explicit(&st->other, 1, memory_order_relaxed);
}

static void take_sample(stats *st, uint64_t *last_requests, int64_t *last_ms)
{
    uint64_t counts[NBUCKETS];
    for (size_t i = 0; i < NBUCKETS; i++)
        counts[i] = atomic_exchange_explicit(&st->hist[i], 0, memory_order_relaxed);
    cshs_counters c;
    cshs_server_counters(st->server, &c);
    int64_t mono = now_ms(CLOCK_MONOTONIC);
    double secs = (double)(mono - *last_ms) / 1000.0;
    stats_sample s = {
        .t_ms = now_ms(CLOCK_REALTIME),
        .rps = secs > 0 ? (double)(c.requests - *last_requests) / secs : 0,
        .p50_ms = stats_percentile(counts, NBUCKETS, 0.50),
        .p99_ms = stats_percentile(counts, NBUCKETS, 0.99),
        .open = c.connections_open,
        .idle = c.connections_idle,
        .active = c.connections_active,
    };
    *last_requests = c.requests;
    *last_ms = mono;
    pthread_mutex_lock(&st->ring_lock);
    st->ring[st->head] = s;
    st->head = (st->head + 1) % STATS_SAMPLES;
    if (st->count < STATS_SAMPLES) st->count++;
    pthread_mutex_unlock(&st->ring_lock);
}

static void *sampler(void *arg)
{
    stats *st = arg;
    cshs_counters c;
    cshs_server_counters(st->server, &c);
    uint64_t last_requests = c.requests;
    int64_t last_ms = now_ms(CLOCK_MONOTONIC);
    struct timespec next;
    clock_gettime(CLOCK_MONOTONIC, &next);
    pthread_mutex_lock(&st->stop_lock);
    while (!st->stopping) {
        next.tv_sec += 1;
        while (!st->stopping &&
               pthread_cond_timedwait(&st->stop_cond, &st->stop_lock, &next) != ETIMEDOUT) {
        }
        if (st->stopping) break;
        pthread_mutex_unlock(&st->stop_lock);
        take_sample(st, &last_requests, &last_ms);
        pthread_mutex_lock(&st->stop_lock);
    }
    pthread_mutex_unlock(&st->stop_lock);
    return NULL;
}

int stats_start(stats *st)
{
    if (st->running) return 0;
    int r = pthread_create(&st->thread, NULL, sampler, st);
    if (r != 0) return -r;
    st->running = 1;
    return 0;
}

void stats_stop(stats *st)
{
    if (!st->running) return;
    pthread_mutex_lock(&st->stop_lock);
    st->stopping = 1;
    pthread_cond_signal(&st->stop_cond);
    pthread_mutex_unlock(&st->stop_lock);
    pthread_join(st->thread, NULL);
    st->running = 0;
}

size_t stats_series(stats *st, stats_sample *out, size_t cap)
{
    pthread_mutex_lock(&st->ring_lock);
    size_t n = st->count < cap ? st->count : cap;
    size_t first = (st->head + STATS_SAMPLES - n) % STATS_SAMPLES;
    for (size_t i = 0; i < n; i++) out[i] = st->ring[(first + i) % STATS_SAMPLES];
    pthread_mutex_unlock(&st->ring_lock);
    return n;
}

static int route_cmp(const void *a, const void *b)
{
    const stats_route *x = a, *y = b;
    return x->requests < y->requests ? 1 : x->requests > y->requests ? -1 : 0;
}

size_t stats_routes(stats *st, stats_route *out, size_t cap)
{
    stats_route all[STATS_PATHS + 2];
    size_t n = 0;
    for (size_t i = 0; i < STATS_PATHS; i++) {
        path_slot *sl = &st->paths[i];
        if (atomic_load_explicit(&sl->state, memory_order_acquire) != SLOT_READY) continue;
        uint64_t r = atomic_load_explicit(&sl->requests, memory_order_relaxed);
        size_t j = 0;
        while (j < n && strcmp(all[j].path, sl->path) != 0) j++;
        if (j < n) { /* a path two threads added at once */
            all[j].requests += r;
            continue;
        }
        memcpy(all[n].path, sl->path, sizeof all[n].path);
        all[n++].requests = r;
    }
    uint64_t other = atomic_load_explicit(&st->other, memory_order_relaxed);
    if (other) {
        strcpy(all[n].path, "(other)");
        all[n++].requests = other;
    }
    uint64_t not_found = atomic_load_explicit(&st->not_found, memory_order_relaxed);
    if (not_found) {
        strcpy(all[n].path, "(not found)");
        all[n++].requests = not_found;
    }
    qsort(all, n, sizeof all[0], route_cmp);
    if (n > cap) n = cap;
    memcpy(out, all, n * sizeof *out);
    return n;
}

int64_t stats_started_ms(const stats *st)
{
    return st->started_ms;
}

cshs_server *stats_server(const stats *st)
{
    return st->server;
}
