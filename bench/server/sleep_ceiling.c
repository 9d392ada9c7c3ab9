/* W2's ceiling on this machine, with no server and no client: THREADS
 * threads each sleeping MS milliseconds in a loop (nanosleep, as W2's
 * handler does), counted over SECONDS after a second of warm-up. A 15 ms
 * sleep takes longer than 15 ms (timer slack, wake-up latency), more so on
 * a busy or shared machine, so W2's 128 / 0.015 s is a bound no server
 * reaches; this is the one the machine allows at the moment it runs.
 *   bench_sleep_ceiling [THREADS [MS [SECONDS]]]   (default 128 15 4)
 * Prints "sleeps/s N" on its own line.
 *
 * With --exchange, each sleep is also one exchange over loopback TCP, as
 * in W2 but with nothing else: a thread per connection reads a byte,
 * sleeps, writes a byte; one client thread (epoll) answers each byte with
 * the next at once. This adds what no server can take out of W2 on this
 * machine: the client's wake-up for each response and the thread's for
 * each request, with their trips between the cores. Prints
 * "exchanges/s N". */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static atomic_long sleeps;
static atomic_int stop;
static long sleep_ms;

/* arg: NULL, or the thread's end of its connection (--exchange) */
static void *sleeper(void *arg)
{
    int fd = arg ? *(int *)arg : -1;
    struct timespec ts = {sleep_ms / 1000, (sleep_ms % 1000) * 1000000L};
    char b;
    while (!atomic_load(&stop)) {
        if (fd >= 0 && read(fd, &b, 1) != 1) break; /* the client closed it */
        nanosleep(&ts, NULL);
        if (fd >= 0 && send(fd, &b, 1, MSG_NOSIGNAL) != 1) break;
        atomic_fetch_add(&sleeps, 1);
    }
    return NULL;
}

/* The client of --exchange: each byte that comes back is sent again at
 * once, until stop. */
static void *client(void *arg)
{
    int ep = *(int *)arg;
    struct epoll_event ev[64];
    char b;
    while (!atomic_load(&stop)) {
        int n = epoll_wait(ep, ev, 64, 100);
        for (int i = 0; i < n; i++) {
            int fd = ev[i].data.fd;
            if (read(fd, &b, 1) == 1 && send(fd, &b, 1, MSG_NOSIGNAL) != 1) return NULL;
        }
    }
    return NULL;
}

/* A connected pair of loopback TCP sockets through a listener, with
 * TCP_NODELAY as the servers and cshttp-load set it; 0 or -1. */
static int tcp_pair(int listener, const struct sockaddr_in *at, int out[2])
{
    int c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (c < 0) return -1;
    if (connect(c, (const struct sockaddr *)at, sizeof *at) != 0) {
        close(c);
        return -1;
    }
    int s = accept(listener, NULL, NULL);
    if (s < 0) {
        close(c);
        return -1;
    }
    int one = 1;
    setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    out[0] = s;
    out[1] = c;
    return 0;
}

/* The connections of --exchange: fds[2 i] the thread's end, fds[2 i + 1]
 * the client's, registered in ep. 0, or -1 with a message. */
static int open_exchanges(long n, int *fds, int ep)
{
    int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in at = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof at;
    if (l < 0 || bind(l, (struct sockaddr *)&at, sizeof at) != 0 || listen(l, 4096) != 0 ||
        getsockname(l, (struct sockaddr *)&at, &len) != 0) {
        fprintf(stderr, "bench_sleep_ceiling: loopback listener: %s\n", strerror(errno));
        if (l >= 0) close(l);
        return -1;
    }
    for (long i = 0; i < n; i++) {
        if (tcp_pair(l, &at, fds + 2 * i) != 0) {
            fprintf(stderr, "bench_sleep_ceiling: connection %ld: %s\n", i, strerror(errno));
            close(l);
            return -1;
        }
        struct epoll_event ev = {.events = EPOLLIN, .data.fd = fds[2 * i + 1]};
        if (epoll_ctl(ep, EPOLL_CTL_ADD, fds[2 * i + 1], &ev) != 0) {
            fprintf(stderr, "bench_sleep_ceiling: epoll_ctl: %s\n", strerror(errno));
            close(l);
            return -1;
        }
    }
    close(l);
    return 0;
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
    int exchange = argc > 1 && strcmp(argv[1], "--exchange") == 0;
    if (exchange) {
        argv++;
        argc--;
    }
    long nthreads = arg_or(argc, argv, 1, 128, 4096);
    sleep_ms = arg_or(argc, argv, 2, 15, 10000);
    long seconds = arg_or(argc, argv, 3, 4, 3600);
    pthread_t *t = calloc((size_t)nthreads, sizeof *t);
    int *fds = calloc((size_t)nthreads * 2, sizeof *fds);
    if (!t || !fds) return 1;
    for (long i = 0; i < nthreads * 2; i++) fds[i] = -1;
    int ep = -1, failed = 0;
    pthread_t client_thread;
    int client_started = 0;
    if (exchange) {
        ep = epoll_create1(EPOLL_CLOEXEC);
        if (ep < 0) fprintf(stderr, "bench_sleep_ceiling: epoll_create1: %s\n", strerror(errno));
        failed = ep < 0 || open_exchanges(nthreads, fds, ep) != 0;
        if (!failed && pthread_create(&client_thread, NULL, client, &ep) != 0) {
            fprintf(stderr, "bench_sleep_ceiling: the client thread did not start\n");
            failed = 1;
        }
        client_started = !failed;
    }
    long started = 0;
    for (; !failed && started < nthreads; started++)
        if (pthread_create(&t[started], NULL, sleeper, exchange ? &fds[2 * started] : NULL) != 0)
            break;
    if (!failed && started < nthreads)
        fprintf(stderr, "bench_sleep_ceiling: only %ld of %ld threads started\n", started,
                nthreads);
    if (failed || started < nthreads) {
        failed = 1;
    } else {
        for (long i = 0; exchange && !failed && i < nthreads; i++) {
            if (send(fds[2 * i + 1], "x", 1, MSG_NOSIGNAL) != 1) {
                fprintf(stderr, "bench_sleep_ceiling: first byte of connection %ld: %s\n", i,
                        strerror(errno));
                failed = 1;
            }
        }
        wait_s(1);
        long a = atomic_load(&sleeps);
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        wait_s(seconds);
        long b = atomic_load(&sleeps);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        double dt = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
        if (!failed) {
            printf("%s %.1f\n", exchange ? "exchanges/s" : "sleeps/s", (double)(b - a) / dt);
            fflush(stdout);
        }
    }
    atomic_store(&stop, 1);
    /* the client's ends closed: a thread blocked in read gets 0 and ends */
    for (long i = 0; i < nthreads; i++)
        if (fds[2 * i + 1] >= 0) shutdown(fds[2 * i + 1], SHUT_RDWR);
    for (long i = 0; i < started; i++) pthread_join(t[i], NULL);
    if (client_started) pthread_join(client_thread, NULL);
    for (long i = 0; i < nthreads * 2; i++)
        if (fds[i] >= 0) close(fds[i]);
    if (ep >= 0) close(ep);
    free(t);
    free(fds);
    return failed;
}
