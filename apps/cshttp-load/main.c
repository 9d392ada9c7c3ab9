/* cshttp-load: an HTTP/1.1 load generator on libcshttp's response parser.
 *
 * main: the options, the file-descriptor limit, the plan and its probe, the
 * idle connections, the levels one after another, then the summary, the CSV
 * and the Markdown report. Exit status: see load_options_usage. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "load.h"
#include "options.h"
#include "report.h"

enum { EXIT_CLEAN = 0, EXIT_ERRORS = 1, EXIT_USAGE = 2, EXIT_UNREACHABLE = 3 };

/* Set by SIGINT and SIGTERM: the running level ends and what was measured
 * is still reported. A second Ctrl-C ends the program at once. */
static volatile sig_atomic_t interrupted;

static void on_interrupt(int sig)
{
    if (interrupted) {
        signal(sig, SIG_DFL);
        raise(sig);
    }
    interrupted = 1;
}

typedef struct progress_state {
    unsigned connections;
    bool show;
    uint64_t last_responses;
    double last_elapsed;
} progress_state;

static int on_tick(void *arg, const load_progress *pr, double elapsed)
{
    progress_state *ps = arg;
    if (ps->show) {
        uint64_t n = atomic_load_explicit(&pr->responses, memory_order_relaxed);
        double dt = elapsed - ps->last_elapsed;
        double r = dt > 0 ? (double)(n - ps->last_responses) / dt : 0;
        int ph = atomic_load_explicit(&pr->phase, memory_order_relaxed);
        fprintf(stderr, "\r\033[K%u connections  %6.1f s  %-9s %10.0f req/s  %llu errors",
                ps->connections, elapsed, ph == LOAD_PHASE_WARMUP ? "warm-up" : "measuring", r,
                (unsigned long long)atomic_load_explicit(&pr->errors, memory_order_relaxed));
        fflush(stderr);
        ps->last_responses = n;
        ps->last_elapsed = elapsed;
    }
    return interrupted != 0;
}

/* Enough descriptors for every connection, raising the hard limit when we
 * may (root). */
static int raise_fd_limit(rlim_t need, char *err, size_t errlen)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl)) return 0;
    if (rl.rlim_cur >= need) return 0;
    if (rl.rlim_max < need) {
        struct rlimit want = {need, need};
        if (setrlimit(RLIMIT_NOFILE, &want) == 0) return 0;
    }
    rl.rlim_cur = rl.rlim_max < need ? rl.rlim_max : need;
    setrlimit(RLIMIT_NOFILE, &rl);
    if (rl.rlim_cur >= need) return 0;
    snprintf(err, errlen,
             "needs %llu file descriptors for its connections, but the limit is %llu "
             "(raise it: ulimit -n %llu)",
             (unsigned long long)need, (unsigned long long)rl.rlim_cur, (unsigned long long)need);
    return -1;
}

static FILE *open_output(const char *path, const char *what, char *err, size_t errlen)
{
    FILE *f = fopen(path, "w");
    if (!f) snprintf(err, errlen, "%s '%s': %s", what, path, strerror(errno));
    return f;
}

int main(int argc, char **argv)
{
    load_options o;
    char err[512];
    int r = load_options_parse(&o, argc, argv, err, sizeof err);
    if (r == LOAD_OPTIONS_EXIT) {
        load_options_free(&o);
        return EXIT_CLEAN;
    }
    if (r != LOAD_OPTIONS_OK) {
        fprintf(stderr, "cshttp-load: %s\n", err);
        load_options_free(&o);
        return EXIT_USAGE;
    }
    if (o.progress < 0) o.progress = isatty(STDERR_FILENO);

    unsigned max_conns = 0;
    for (size_t i = 0; i < o.num_levels; i++)
        if (o.levels[i] > max_conns) max_conns = o.levels[i];
    int exit_code = EXIT_USAGE;
    FILE *csv = NULL, *md = NULL;
    load_plan plan;
    memset(&plan, 0, sizeof plan);
    load_result *results = calloc(o.num_levels, sizeof *results);
    load_idle *idle = NULL;
    if (!results) {
        fprintf(stderr, "cshttp-load: out of memory\n");
        goto out;
    }
    if (raise_fd_limit((rlim_t)max_conns + o.idle + 64, err, sizeof err)) {
        fprintf(stderr, "cshttp-load: %s\n", err);
        goto out;
    }
    /* open the outputs first: a bad path should not cost a whole run */
    if (o.csv_path && !(csv = open_output(o.csv_path, "--csv", err, sizeof err))) {
        fprintf(stderr, "cshttp-load: %s\n", err);
        goto out;
    }
    if (o.report_path && !(md = open_output(o.report_path, "--report", err, sizeof err))) {
        fprintf(stderr, "cshttp-load: %s\n", err);
        goto out;
    }
    r = load_plan_init(&plan, &o, max_conns, err, sizeof err);
    if (r == 0) r = load_plan_probe(&plan, err, sizeof err);
    if (r) {
        fprintf(stderr, "cshttp-load: %s\n", err);
        exit_code = r == 3 ? EXIT_UNREACHABLE : EXIT_USAGE;
        goto out;
    }
    signal(SIGPIPE, SIG_IGN);
    struct sigaction sa = {.sa_handler = on_interrupt};
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);

    load_report rep = {.opt = &o,
                       .plan = &plan,
                       .argc = argc,
                       .argv = argv,
                       .started = time(NULL),
                       .results = results};
    if (o.idle) {
        if (o.progress) fprintf(stderr, "opening %u idle connections...", o.idle);
        idle = load_idle_open(&plan, o.idle, max_conns, &rep.idle_held, rep.idle_error,
                              sizeof rep.idle_error);
        if (o.progress) fprintf(stderr, "\r\033[K");
        if (!idle) {
            fprintf(stderr, "cshttp-load: out of memory for %u idle connections\n", o.idle);
            goto out;
        }
    }
    for (size_t i = 0; i < o.num_levels && !interrupted; i++) {
        progress_state ps = {.connections = o.levels[i], .show = o.progress != 0};
        if (o.levels[i] == 0) { /* only the idle connections: hold them for the duration */
            results[i].connections = 0;
            uint64_t t0 = load_now_ns(), end = t0 + (uint64_t)((o.warmup_s + o.duration_s) * 1e9);
            while (load_now_ns() < end && !interrupted) {
                struct timespec ts = {0, 50 * 1000000};
                nanosleep(&ts, NULL);
            }
            results[i].duration_s = (double)(load_now_ns() - t0) / 1e9 - o.warmup_s;
            if (results[i].duration_s < 0) results[i].duration_s = 0;
        } else if (load_run_level(&plan, o.levels[i], &results[i], on_tick, &ps)) {
            fprintf(stderr, "cshttp-load: cannot start the threads of %u connections\n",
                    o.levels[i]);
            goto out;
        }
        if (ps.show) fprintf(stderr, "\r\033[K");
        rep.num_results = i + 1;
        report_print_level(stdout, &rep, &results[i]);
        fflush(stdout);
    }
    if (idle) {
        char check_error[LOAD_ERROR_TEXT];
        rep.idle_answered = load_idle_check(idle, check_error, sizeof check_error);
        if (check_error[0]) snprintf(rep.idle_error, sizeof rep.idle_error, "%s", check_error);
    }
    report_print_end(stdout, &rep);
    if (csv) report_write_csv(csv, &rep);
    if (md) report_write_markdown(md, &rep);
    exit_code = report_has_errors(&rep) ? EXIT_ERRORS : EXIT_CLEAN;
    if (interrupted) exit_code = EXIT_ERRORS;

out:
    if (csv && fclose(csv)) {
        fprintf(stderr, "cshttp-load: --csv '%s': %s\n", o.csv_path, strerror(errno));
        exit_code = EXIT_USAGE;
    }
    if (md && fclose(md)) {
        fprintf(stderr, "cshttp-load: --report '%s': %s\n", o.report_path, strerror(errno));
        exit_code = EXIT_USAGE;
    }
    load_idle_free(idle);
    load_plan_free(&plan);
    free(results);
    load_options_free(&o);
    return exit_code;
}
