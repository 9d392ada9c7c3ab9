/* W2's ceiling on this machine, with no server and no client: THREADS
 * threads each sleeping MS milliseconds in a loop (nanosleep, as W2's
 * handler does), counted over SECONDS after a second of warm-up. A 15 ms
 * sleep takes longer than 15 ms (timer slack, wake-up latency), more so on
 * a busy or shared machine, so W2's 128 / 0.015 s is a bound no server
 * reaches; this is the one the machine allows at the moment it runs.
 *   bench_sleep_ceiling [THREADS [MS [SECONDS]]]   (default 128 15 4)
 * Prints "sleeps/s N" on its own line. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static atomic_long sleeps;
static atomic_int stop;
static long sleep_ms;

static void *sleeper(void *arg)
{
    (void)arg;
    struct timespec ts = {sleep_ms / 1000, (sleep_ms % 1000) * 1000000L};
    while (!atomic_load(&stop)) {
        nanosleep(&ts, NULL);
        atomic_fetch_add(&sleeps, 1);
    }
    return NULL;
}

static long arg_or(int argc, char **argv, int i, long dflt, long max)
{
    if (argc <= i) return dflt;
    char *end;
    long v = strtol(argv[i], &end, 10);
    if (*end || v < 1 || v > max) {
        fprintf(stderr, "bench_sleep_ceiling: argument %d (%s): a number from 1 to %ld\n", i,
                argv[i], max);
        exit(2);
    }
    return v;
}

static void wait_s(long s)
{
    struct timespec ts = {s, 0};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

int main(int argc, char **argv)
{
    long nthreads = arg_or(argc, argv, 1, 128, 4096);
    sleep_ms = arg_or(argc, argv, 2, 15, 10000);
    long seconds = arg_or(argc, argv, 3, 4, 3600);
    pthread_t *t = calloc((size_t)nthreads, sizeof *t);
    if (!t) return 1;
    long started = 0;
    for (; started < nthreads; started++)
        if (pthread_create(&t[started], NULL, sleeper, NULL) != 0) break;
    if (started < nthreads) {
        fprintf(stderr, "bench_sleep_ceiling: only %ld of %ld threads started\n", started,
                nthreads);
        atomic_store(&stop, 1);
    } else {
        wait_s(1);
        long a = atomic_load(&sleeps);
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        wait_s(seconds);
        long b = atomic_load(&sleeps);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        double dt = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
        printf("sleeps/s %.1f\n", (double)(b - a) / dt);
        atomic_store(&stop, 1);
    }
    for (long i = 0; i < started; i++) pthread_join(t[i], NULL);
    free(t);
    return started < nthreads;
}
