/* The load itself: connections on epoll, requests written, responses read
 * with libcshttp's response parser, latencies and errors counted.
 *
 * A run is a plan (what to send where, built once from the options) and then
 * one level after another: a level opens its connections on its threads (each
 * thread has its own epoll set, connections and counters, so nothing is
 * shared on the hot path but two atomics), loads the server through the
 * warm-up and the measured window, and closes them. Idle connections (--idle)
 * are held apart, by the calling thread, across all levels.
 *
 * Ownership: load_plan and load_result are caller-owned; load_plan_init
 * allocates what load_plan_free releases. A load_idle is a heap object. */
#ifndef CSHTTP_LOAD_LOAD_H
#define CSHTTP_LOAD_LOAD_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include <cshttp/parser.h>

#include "histogram.h"
#include "options.h"

typedef struct ssl_ctx_st SSL_CTX;

typedef struct load_plan {
    const load_options *opt;
    struct sockaddr_storage addr;
    socklen_t addrlen;
    char addr_text[64];    /* the address connected to, for messages */
    unsigned source_addrs; /* > 1: bind each connection to 127.0.0.(1 + i % n) */
    char *request;         /* one request, as sent */
    size_t request_len;
    char *batch; /* pipeline + 1 copies of request, so any run of queued bytes is contiguous */
    size_t batch_len;
    csh_method method; /* a HEAD's response has no body */
    SSL_CTX *tls;      /* NULL for http:// */
    uint64_t timeout_ns;
} load_plan;

/* Counters of one level (or of the idle connections). */
typedef struct load_counts {
    uint64_t requests;   /* responses completed in the measured window */
    uint64_t read_bytes; /* bytes received in the window, heads and bodies */
    uint64_t status[6];  /* by status / 100; [0]: none of 1xx..5xx (cannot happen) */
    uint64_t err_connect;
    uint64_t err_timeout;
    uint64_t err_reset;
    uint64_t err_bad_response;
} load_counts;

#define LOAD_ERROR_TEXT 160

typedef struct load_result {
    unsigned connections;
    double duration_s; /* of the measured window */
    bool stalled;      /* ended early: nothing answered for longer than --timeout */
    bool interrupted;  /* ended early: the tick asked to stop */
    load_counts counts;
    load_histogram hist;
    char first_error[LOAD_ERROR_TEXT]; /* the first error seen, in words; "" if none */
} load_result;

/* What a level shows while it runs (read by the progress line). */
typedef struct load_progress {
    _Atomic uint64_t responses; /* all responses so far, warm-up included */
    _Atomic uint64_t errors;
    _Atomic int phase; /* LOAD_PHASE_* */
} load_progress;

enum { LOAD_PHASE_WARMUP = 0, LOAD_PHASE_MEASURE = 1, LOAD_PHASE_STOP = 2 };

/* Resolves the target, builds the request and the TLS context. Returns 0, or
 * 2 (a setting is unusable) or 3 (the target cannot be reached: the name does
 * not resolve) with a message in `err`. */
int load_plan_init(load_plan *p, const load_options *o, unsigned max_connections, char *err,
                   size_t errlen);
/* One connection (and TLS handshake) to the target before the load, so an
 * unreachable target is one clear message instead of a table of errors.
 * Returns 0, or 3 with a message. */
int load_plan_probe(const load_plan *p, char *err, size_t errlen);
void load_plan_free(load_plan *p);

/* Runs one level: `connections` connections over opt->threads threads,
 * warm-up then the measured window (by duration or request count). `tick`,
 * when not NULL, is called about every 250 ms from the calling thread while
 * the level runs; a nonzero return ends the level there (Ctrl-C). */
typedef int load_tick_fn(void *arg, const load_progress *progress, double elapsed_s);
int load_run_level(const load_plan *p, unsigned connections, load_result *out, load_tick_fn *tick,
                   void *tick_arg);

/* Idle connections (workload W3). load_idle_open opens n keep-alive
 * connections, each sends one request and waits for its answer; `held` says
 * how many got one. load_idle_check sends one more request on each held
 * connection and returns how many answered it. Both run on the calling
 * thread. The connections are numbered from `first_index` for the source
 * addresses. */
typedef struct load_idle load_idle;
load_idle *load_idle_open(const load_plan *p, unsigned n, unsigned first_index, unsigned *held,
                          char *first_error, size_t errlen);
unsigned load_idle_check(load_idle *idle, char *first_error, size_t errlen);
void load_idle_free(load_idle *idle);

uint64_t load_now_ns(void);

#endif
