/* The figures behind the status page: a sampler thread that once a second
 * reads the engine's counters and the latencies recorded from the access
 * log into a ring of STATS_SAMPLES samples, and a bounded table of request
 * counts by path. */
#ifndef CSHTTPD_STATS_H
#define CSHTTPD_STATS_H

#include <stddef.h>
#include <stdint.h>

#include <cshttp/server.h>

#define STATS_SAMPLES 300 /* 5 minutes of one-second samples */
#define STATS_PATHS                                                                                \
    64 /* distinct paths counted; more go to "(other)", 404s and 410s to "(not found)" */
#define STATS_PATH_MAX 96 /* bytes of a path kept (longer ones are cut) */

typedef struct stats stats;

typedef struct stats_sample {
    int64_t t_ms;                /* the end of the second it covers (Unix ms) */
    double rps;                  /* requests answered in that second */
    double p50_ms;               /* latency percentiles of that second's requests */
    double p99_ms;               /* (0 when there were none) */
    uint64_t open, idle, active; /* connections at the sample */
} stats_sample;

typedef struct stats_route {
    char path[STATS_PATH_MAX];
    uint64_t requests;
} stats_route;

/* Stats of server s; NULL when out of memory. */
stats *stats_new(cshs_server *s);
/* Starts the sampler thread (after cshs_server_start). 0 or -errno. */
int stats_start(stats *st);
/* Stops and joins it; then stats_free. */
void stats_stop(stats *st);
void stats_free(stats *st);

/* From the access-log callback, any worker thread: latency_us from the
 * request's first byte to its response handed over (duration_us). */
void stats_record(stats *st, const cshs_request_log *e, int64_t latency_us);

/* The samples, oldest first, into out[cap]; their number. */
size_t stats_series(stats *st, stats_sample *out, size_t cap);
/* The busiest paths, most requests first, into out[cap]; their number. */
size_t stats_routes(stats *st, stats_route *out, size_t cap);
/* When the stats were made (Unix ms). */
int64_t stats_started_ms(const stats *st);
cshs_server *stats_server(const stats *st);

/* The latency histogram's percentile q (0..1) in ms, over counts[n] of
 * the buckets (50 us, 100 us, 200 us, 300 us, 500 us, 700 us, 1 ms, ...);
 * exposed for the tests. */
double stats_percentile(const uint64_t *counts, size_t n, double q);

#endif
