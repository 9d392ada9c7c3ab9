/* cshs_server through its API: start on an ephemeral port, a handler,
 * keep-alive, counters, a bound port refused, the Unix listener, wait from
 * another thread, a graceful stop and a stop that has to cut, free(NULL),
 * writability registered only once a write waits, handlers that answer
 * later (cshs_defer) and the loops as reactors. */
#define _GNU_SOURCE /* pipe2 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <stdatomic.h>

#include <cshttp/server.h>
#include <cshttp/web/arena.h>
#include <cshttp/web/request.h>
#include <cshttp/web/response.h>

/* Microseconds on the monotonic clock. */
static int64_t mono_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* ?sleep=MS waits in the kernel; ?spin=MS computes as long, never waiting. */
static void hello(cshw_context *ctx)
{
    cshw_request *req = cshw_context_request(ctx);
    cshw_response *res = cshw_context_response(ctx);
    const char *ms = cshw_request_query_get(req, "sleep");
    if (ms) {
        long n = strtol(ms, NULL, 10);
        struct timespec ts = {n / 1000, (n % 1000) * 1000000L};
        nanosleep(&ts, NULL);
    }
    const char *spin = cshw_request_query_get(req, "spin");
    if (spin) {
        int64_t until = mono_us() + strtol(spin, NULL, 10) * 1000;
        while (mono_us() < until) {
        }
    }
    cshw_response_set_content_type(res, "text/plain", NULL);
    cshw_response_printf(res, "hello %s", cshw_request_path(req));
}

/* A connection to port; rcvbuf, when not 0, is its receive buffer (set
 * before connect, so that the window the server sees is that small). */
static int dial_with(unsigned port, int rcvbuf)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (rcvbuf) setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    struct timeval tv = {10, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static int dial(unsigned port)
{
    return dial_with(port, 0);
}

/* Sends req and reads until `until` appears (or EOF / timeout). */
static int exchange(int fd, const char *req, const char *until, char *out, size_t cap)
{
    if (req && send(fd, req, strlen(req), MSG_NOSIGNAL) < 0) return -1;
    size_t n = 0;
    out[0] = '\0';
    while (n + 1 < cap && !strstr(out, until)) {
        ssize_t r = recv(fd, out + n, cap - 1 - n, 0);
        if (r <= 0) break;
        n += (size_t)r;
        out[n] = '\0';
    }
    return strstr(out, until) ? 0 : -1;
}

static void *stopper(void *arg)
{
    struct timespec ts = {0, 100 * 1000 * 1000};
    nanosleep(&ts, NULL);
    cshs_server_stop(arg, -1);
    return NULL;
}

/* The server the first tests share (keep-alive, pipelining, the Unix
 * listener and the counters build on each other, then the graceful stop
 * ends it), and the connections still open: freed in teardown. */
static cshs_options o;
static char sock_path[64];
static cshs_server *s, *s2, *s3;
static unsigned port;
static int fd = -1, u = -1, f2 = -1, f3 = -1;
static char buf[8192];

static void close_fd(int *p)
{
    if (*p >= 0) close(*p);
    *p = -1;
}

static int group_setup(void **state)
{
    (void)state;
    cshs_options_init(&o);
    o.port = 0;
    o.min_threads = 1;
    o.max_threads = 8;
    snprintf(sock_path, sizeof sock_path, "/tmp/cshs-test-%ld.sock", (long)getpid());
    o.unix_path = sock_path;
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    close_fd(&fd);
    cshs_server_free(s);
    s = NULL;
    unlink(sock_path);
    return 0;
}

/* what a single test opens */
static int teardown(void **state)
{
    (void)state;
    cshs_server_free(s2);
    s2 = NULL;
    cshs_server_free(s3);
    s3 = NULL;
    close_fd(&u);
    close_fd(&f2);
    close_fd(&f3);
    return 0;
}

/* The application's pointer reaches every handler through its context, on
 * whichever worker runs it (libuv's `data` convention). */
static void app_data_handler(cshw_context *ctx)
{
    const char *name = cshw_context_app_data(ctx);
    cshw_response_printf(cshw_context_response(ctx), "app=%s", name ? name : "(null)");
}

static void test_app_data(void **state)
{
    (void)state;
    cshs_options lo;
    cshs_options_init(&lo);
    lo.port = 0;
    lo.min_threads = 2;
    lo.max_threads = 4;
    static char app[] = "the-app";
    s2 = cshs_server_new(&lo, app_data_handler, NULL);
    assert_non_null(s2);
    assert_null(cshs_server_app_data(s2));
    cshs_server_set_app_data(s2, app);
    assert_ptr_equal(cshs_server_app_data(s2), app);
    assert_int_equal(cshs_server_start(s2), 0);
    for (int i = 0; i < 4; i++) {
        f2 = dial(cshs_server_port(s2, 0));
        assert_true(f2 >= 0);
        assert_int_equal(exchange(f2, "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
                                  "app=the-app", buf, sizeof buf),
                         0);
        close_fd(&f2);
    }
}

/* cshs_server_add_tick: called on the engine's tick while the server runs,
 * not before start nor after stop; at most 8, none added once started. */
static _Atomic int ticks_seen;

static void count_tick(void *arg)
{
    atomic_fetch_add((_Atomic int *)arg, 1);
}

static void test_tick(void **state)
{
    (void)state;
    cshs_options lo;
    cshs_options_init(&lo);
    lo.port = 0;
    lo.sweep_interval_ms = 20;
    s2 = cshs_server_new(&lo, hello, NULL);
    assert_non_null(s2);
    assert_int_equal(cshs_server_add_tick(s2, NULL, NULL), -EINVAL);
    for (int i = 0; i < 8; i++)
        assert_int_equal(cshs_server_add_tick(s2, count_tick, &ticks_seen), 0);
    assert_int_equal(cshs_server_add_tick(s2, count_tick, &ticks_seen), -ENOSPC);
    struct timespec ts = {0, 100 * 1000 * 1000};
    nanosleep(&ts, NULL);
    assert_int_equal(atomic_load(&ticks_seen), 0); /* not started */
    assert_int_equal(cshs_server_start(s2), 0);
    assert_int_equal(cshs_server_add_tick(s2, count_tick, &ticks_seen), -EBUSY);
    /* no timing asserted: the ticks come, every callback each time */
    while (atomic_load(&ticks_seen) < 16) nanosleep(&ts, NULL);
    cshs_server_stop(s2, 0);
    int after = atomic_load(&ticks_seen);
    assert_int_equal(after % 8, 0);
    nanosleep(&ts, NULL);
    assert_int_equal(atomic_load(&ticks_seen), after); /* none after stop */
}

/* A streaming route reads its body as it arrives, on its worker; other
 * routes get theirs whole before the handler runs. Either way the handler
 * reads the same bytes, and the next request on the connection follows. */
static _Atomic int stream_seen_partial;

static int streams_upload(void *arg, const char *head, const csh_message *msg)
{
    (void)arg;
    return msg->target.len >= 7 && memcmp(head + msg->target.off, "/stream", 7) == 0;
}

static void count_body(cshw_context *ctx)
{
    cshw_request *req = cshw_context_request(ctx);
    char b[256];
    ssize_t n, total = 0, first = -1;
    while ((n = cshw_request_read(req, b, sizeof b)) > 0) {
        if (first < 0) first = n;
        total += n;
    }
    /* streaming: the first read came before the client sent the rest */
    if (first >= 0 && first < total) atomic_store(&stream_seen_partial, 1);
    cshw_response_printf(cshw_context_response(ctx), "got=%zd err=%zd", total, n);
}

static void test_streaming_route(void **state)
{
    (void)state;
    cshs_options lo;
    cshs_options_init(&lo);
    lo.port = 0;
    s2 = cshs_server_new(&lo, count_body, NULL);
    assert_non_null(s2);
    cshs_server_set_streaming(s2, streams_upload, NULL);
    assert_int_equal(cshs_server_start(s2), 0);
    for (int streaming = 0; streaming <= 1; streaming++) {
        atomic_store(&stream_seen_partial, 0);
        f2 = dial(cshs_server_port(s2, 0));
        assert_true(f2 >= 0);
        char head[128];
        snprintf(head, sizeof head,
                 "POST %s HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                 "5\r\nhello\r\n",
                 streaming ? "/stream" : "/whole");
        assert_true(send(f2, head, strlen(head), MSG_NOSIGNAL) > 0);
        struct timespec ts = {0, 150 * 1000 * 1000};
        nanosleep(&ts, NULL);
        static const char rest[] = "6\r\n world\r\n0\r\n\r\n"
                                   "GET /after HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
        assert_true(send(f2, rest, sizeof rest - 1, MSG_NOSIGNAL) > 0);
        assert_int_equal(exchange(f2, NULL, "got=0 err=0", buf, sizeof buf), 0);
        assert_non_null(strstr(buf, "got=11 err=0"));
        assert_int_equal(atomic_load(&stream_seen_partial), streaming);
        close_fd(&f2);
    }
}

/* free(NULL) does nothing; a handler and a router together are refused */
static void test_free_null_and_new_refusal(void **state)
{
    (void)state;
    cshs_server_free(NULL);
    assert_null(cshs_server_new(&o, hello, (cshw_router *)&o)); /* both */
}

/* The access log's entries: how many, and the size of the last (the
 * struct as the engine filled it, server.h). */
static atomic_int log_entries;
static atomic_size_t log_size;

static void on_log(void *user, const cshs_request_log *e)
{
    (void)user;
    atomic_store(&log_size, e->size);
    atomic_fetch_add(&log_entries, 1);
}

static void test_start_ephemeral_port(void **state)
{
    (void)state;
    s = cshs_server_new(&o, hello, NULL);
    assert_non_null(s);
    cshs_server_set_log(s, on_log, NULL);
    assert_int_equal(cshs_server_start(s), 0);
    port = cshs_server_port(s, 0);
    assert_true(port > 0);
    assert_int_equal(cshs_server_port(s, 1), 0);
    assert_int_equal(cshs_server_tls_port(s, 0), 0);
}

/* two requests on one connection */
static void test_keep_alive(void **state)
{
    (void)state;
    assert_non_null(s);
    fd = dial(port);
    assert_true(fd >= 0);
    assert_int_equal(
        exchange(fd, "GET /a HTTP/1.1\r\nHost: x\r\n\r\n", "hello /a", buf, sizeof buf), 0);
    assert_int_equal(
        exchange(fd, "GET /b HTTP/1.1\r\nHost: x\r\n\r\n", "hello /b", buf, sizeof buf), 0);
}

/* a pipelined pair on the same connection, answered in order */
static void test_pipelining(void **state)
{
    (void)state;
    assert_true(fd >= 0);
    assert_int_equal(
        exchange(fd, "GET /c HTTP/1.1\r\nHost: x\r\n\r\nGET /d HTTP/1.1\r\nHost: x\r\n\r\n",
                 "hello /d", buf, sizeof buf),
        0);
    assert_non_null(strstr(buf, "hello /c"));
    assert_true(strstr(buf, "hello /c") < strstr(buf, "hello /d"));
}

/* a port in use is refused with -EADDRINUSE */
static void test_port_in_use(void **state)
{
    (void)state;
    assert_true(port > 0);
    cshs_options o2 = o;
    o2.port = port;
    o2.unix_path = NULL;
    s2 = cshs_server_new(&o2, hello, NULL);
    assert_non_null(s2);
    assert_int_equal(cshs_server_start(s2), -EADDRINUSE);
    /* a failed start leaves a Unix socket path it never bound alone: it
     * may be another instance's */
    char other[80];
    snprintf(other, sizeof other, "/tmp/cshs-test-other-%ld.sock", (long)getpid());
    FILE *f = fopen(other, "w");
    assert_non_null(f);
    fclose(f);
    o2.unix_path = other;
    s3 = cshs_server_new(&o2, hello, NULL);
    assert_non_null(s3);
    assert_int_equal(cshs_server_start(s3), -EADDRINUSE);
    cshs_server_free(s3);
    s3 = NULL;
    assert_int_equal(access(other, F_OK), 0);
    unlink(other);
}

static void test_unix_listener(void **state)
{
    (void)state;
    u = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un un;
    memset(&un, 0, sizeof un);
    un.sun_family = AF_UNIX;
    strcpy(un.sun_path, sock_path);
    assert_int_equal(connect(u, (struct sockaddr *)&un, sizeof un), 0);
    assert_int_equal(exchange(u, "GET /u HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
                              "hello /u", buf, sizeof buf),
                     0);
}

/* the five requests above: an exchange is counted once its answer was
 * handed to the socket, so the last count may land just after the client
 * read the answer (up to 5 s are given) */
static void test_counters(void **state)
{
    (void)state;
    assert_non_null(s);
    cshs_counters c;
    for (int i = 0; i < 500; i++) {
        cshs_server_counters(s, &c);
        if (c.requests >= 5) break;
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    assert_int_equal(c.requests, 5);
    assert_int_equal(c.size, sizeof c);
    for (int i = 0; i < 500 && atomic_load(&log_entries) < 5; i++) {
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    assert_int_equal(atomic_load(&log_entries), 5);
    assert_int_equal(atomic_load(&log_size), sizeof(cshs_request_log));
    assert_true(c.connections_total >= 2);
    assert_true(c.bytes_in > 0);
    assert_true(c.bytes_out > 0);
    assert_true(c.workers_total >= 1);
    assert_int_equal(c.err_parse, 0);
}

/* server.h: the counters are written by the caller's size. One of the
 * first version's size, alone in its allocation with a canary after it
 * (ASan sees a write past it too), gets its counters and nothing past
 * them; a newer caller's larger struct gets zeros for what this library
 * does not know, and size says how much was filled; a size below the
 * first version's is -EINVAL and nothing is written. */
static void test_counters_sizes(void **state)
{
    (void)state;
    assert_non_null(s);
    unsigned char *old = malloc(CSHS_COUNTERS_SIZE_0_3 + 8);
    assert_non_null(old);
    memset(old, 0xee, CSHS_COUNTERS_SIZE_0_3 + 8);
    assert_int_equal(
        cshs_server_counters_sized(s, (cshs_counters *)(void *)old, CSHS_COUNTERS_SIZE_0_3), 0);
    /* read by offset: the struct of this build is larger than the block */
    size_t filled;
    uint64_t requests;
    memcpy(&filled, old + offsetof(cshs_counters, size), sizeof filled);
    memcpy(&requests, old + offsetof(cshs_counters, requests), sizeof requests);
    assert_int_equal(filled, CSHS_COUNTERS_SIZE_0_3);
    assert_int_equal(requests, 5);
    for (size_t i = CSHS_COUNTERS_SIZE_0_3; i < CSHS_COUNTERS_SIZE_0_3 + 8; i++)
        assert_int_equal(old[i], 0xee);
    free(old);

    uint64_t big[sizeof(cshs_counters) / sizeof(uint64_t) + 4];
    memset(big, 0xff, sizeof big);
    assert_int_equal(cshs_server_counters_sized(s, (cshs_counters *)(void *)big, sizeof big), 0);
    const cshs_counters *c = (cshs_counters *)(void *)big;
    assert_int_equal(c->size, sizeof(cshs_counters));
    assert_int_equal(c->requests, 5);
    for (size_t i = sizeof(cshs_counters) / sizeof(uint64_t); i < sizeof big / sizeof big[0]; i++)
        assert_int_equal(big[i], 0);

    memset(big, 0xff, sizeof big);
    assert_int_equal(
        cshs_server_counters_sized(s, (cshs_counters *)(void *)big, CSHS_COUNTERS_SIZE_0_3 - 1),
        -EINVAL);
    assert_true(big[0] == UINT64_MAX && big[1] == UINT64_MAX);
    cshs_counters one;
    assert_int_equal(cshs_server_counters(NULL, &one), -EINVAL);
}

/* a request in flight when the stop begins completes; wait() returns from
 * another thread's stop */
static void test_wait_and_graceful_stop(void **state)
{
    (void)state;
    assert_non_null(s);
    f2 = dial(port);
    assert_true(f2 >= 0);
    assert_int_equal(send(f2, "GET /slow?sleep=300 HTTP/1.1\r\nHost: x\r\n\r\n", 42, MSG_NOSIGNAL),
                     42);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, stopper, s), 0);
    cshs_server_wait(s);
    pthread_join(t, NULL);
    assert_int_equal(exchange(f2, NULL, "hello /slow", buf, sizeof buf), 0);
    assert_non_null(strstr(buf, "Connection: close"));
    close_fd(&f2);
    close_fd(&fd);
    int d = dial(port);
    if (d >= 0) close(d);
    assert_true(d < 0); /* nobody listens any more */
    assert_int_not_equal(access(sock_path, F_OK), 0);
    assert_int_equal(cshs_server_stop(s, -1), 0); /* a second stop does nothing */
    cshs_server_free(s);
    s = NULL;
}

/* The group's options on TCP alone, with one loop and threads from 2 to
 * max_threads. */
static cshs_options one_loop(unsigned max_threads)
{
    cshs_options o2 = o;
    o2.unix_path = NULL;
    o2.loops = 1;
    o2.min_threads = 2;
    o2.max_threads = max_threads;
    return o2;
}

/* s2 started with o2 and hello: its port. */
static unsigned start_s2(const cshs_options *o2)
{
    s2 = cshs_server_new(o2, hello, NULL);
    assert_non_null(s2);
    assert_int_equal(cshs_server_start(s2), 0);
    return cshs_server_port(s2, 0);
}

/* cshs_server_set_quick: the requests for /quick never wait. */
static int quick_path(void *arg, const char *head, const csh_message *msg)
{
    (void)arg;
    return msg->target.len >= 6 && memcmp(head + msg->target.off, "/quick", 6) == 0;
}

/* A loop takes several ready events at once. When one of them runs a slow
 * handler, the others must not wait for it: the loop is handed to another
 * thread. One loop, two threads at most: the loop's thread is kept busy (d:
 * 300 ms), then a quick request (e), a slow one (a: 2 s) and two quick ones
 * (b, c) are sent together. The loop goes to the second thread, which
 * serves e and is stuck in a; the loop goes to a third (a loop is handed
 * over at max_threads too), which serves b and c while a still sleeps.
 * The second round runs with the loop's handlers sent to other threads (a
 * slow one was seen): d takes the thread free, a waits for a thread in the
 * queue, and e, b and c, which the application calls quick
 * (cshs_server_set_quick), run on the loop meanwhile. */
static void test_slow_handler_holds_no_events(void **state)
{
    (void)state;
    cshs_options o2 = one_loop(2);
    s2 = cshs_server_new(&o2, hello, NULL);
    assert_non_null(s2);
    cshs_server_set_quick(s2, quick_path, NULL);
    assert_int_equal(cshs_server_start(s2), 0);
    unsigned p2 = cshs_server_port(s2, 0);
    const char *slow = "GET /slow?sleep=2000 HTTP/1.1\r\nHost: x\r\n\r\n";
    const char *busy = "GET /busy?sleep=300 HTTP/1.1\r\nHost: x\r\n\r\n";
    const char *quick = "GET /quick HTTP/1.1\r\nHost: x\r\n\r\n";
    for (int round = 0; round < 2; round++) {
        int a = dial(p2), b = dial(p2), c = dial(p2), d = dial(p2), e = dial(p2);
        assert_true(a >= 0 && b >= 0 && c >= 0 && d >= 0 && e >= 0);
        struct timespec ts = {0, 50 * 1000 * 1000}; /* all accepted and idle */
        nanosleep(&ts, NULL);
        assert_int_equal(send(d, busy, strlen(busy), MSG_NOSIGNAL), (ssize_t)strlen(busy));
        nanosleep(&ts, NULL);
        /* a, b and c become ready while the free worker serves e */
        assert_int_equal(send(e, quick, strlen(quick), MSG_NOSIGNAL), (ssize_t)strlen(quick));
        assert_int_equal(send(a, slow, strlen(slow), MSG_NOSIGNAL), (ssize_t)strlen(slow));
        assert_int_equal(send(b, quick, strlen(quick), MSG_NOSIGNAL), (ssize_t)strlen(quick));
        assert_int_equal(send(c, quick, strlen(quick), MSG_NOSIGNAL), (ssize_t)strlen(quick));
        assert_int_equal(exchange(e, NULL, "hello /quick", buf, sizeof buf), 0);
        assert_int_equal(exchange(b, NULL, "hello /quick", buf, sizeof buf), 0);
        assert_int_equal(exchange(c, NULL, "hello /quick", buf, sizeof buf), 0);
        /* the slow one is still being served: nothing to read on a yet */
        char one;
        assert_int_equal(recv(a, &one, 1, MSG_DONTWAIT), -1);
        assert_int_equal(exchange(a, NULL, "hello /slow", buf, sizeof buf), 0);
        assert_int_equal(exchange(d, NULL, "hello /busy", buf, sizeof buf), 0);
        close(a);
        close(b);
        close(c);
        close(d);
        close(e);
    }
}

/* ---- handlers that wait for a thread (max_threads busy) ---- */

static int gate[2] = {-1, -1};   /* a byte written lets one gated handler end */
static char gate_started[8][16]; /* the gated handlers' paths, in the order they began */
static _Atomic int gate_starts;
static _Atomic int gate_noted; /* of them, written to gate_started (its release) */
static _Atomic int gate_passed; /* of them, through the gate */

/* POST /gate/N (streamed, so always a job): reads its body, notes that it
 * began, and waits for a byte of the gate; anything else is hello's. */
static void gated(cshw_context *ctx)
{
    cshw_request *req = cshw_context_request(ctx);
    const char *path = cshw_request_path(req);
    if (strncmp(path, "/gate/", 6) != 0) {
        hello(ctx);
        return;
    }
    char b[64];
    while (cshw_request_read(req, b, sizeof b) > 0) {
    }
    int i = atomic_fetch_add(&gate_starts, 1);
    if (i < 8) snprintf(gate_started[i], sizeof gate_started[i], "%s", path);
    atomic_fetch_add(&gate_noted, 1);
    ssize_t n;
    do n = read(gate[0], b, 1);
    while (n < 0 && errno == EINTR);
    atomic_fetch_add(&gate_passed, 1);
    cshw_response_printf(cshw_context_response(ctx), "gate %s", path);
}

static int gate_streams(void *arg, const char *head, const csh_message *msg)
{
    (void)arg;
    return msg->target.len >= 6 && memcmp(head + msg->target.off, "/gate/", 6) == 0;
}

/* gate_noted once it reaches `want` (the gated handlers' notes are read
 * after it); a liveness bound, not a timing check. */
static int gate_noted_reaches(int want)
{
    for (int i = 0; i < 1000 && atomic_load(&gate_noted) < want; i++) {
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return atomic_load(&gate_noted);
}

/* Polls s2's counters until field `which` (0: workers_busy, 1:
 * handlers_waiting) is `want`; a liveness bound, not a timing check. */
static uint64_t s2_counter_reaches(int which, uint64_t want)
{
    cshs_counters k;
    uint64_t v = 0;
    for (int i = 0; i < 1000; i++) {
        cshs_server_counters(s2, &k);
        v = which == 0 ? k.workers_busy : k.handlers_waiting;
        if (v == want) break;
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return v;
}

/* s2 with one loop and three threads, running gated with its streaming
 * predicate (and quick_path when `quick`), the gate open and its counts
 * at 0: its port. */
static unsigned start_gated(size_t max_waiting, int quick)
{
    cshs_options o2 = one_loop(3);
    o2.max_waiting_handlers = max_waiting;
    s2 = cshs_server_new(&o2, gated, NULL);
    assert_non_null(s2);
    cshs_server_set_streaming(s2, gate_streams, NULL);
    if (quick) cshs_server_set_quick(s2, quick_path, NULL);
    assert_int_equal(cshs_server_start(s2), 0);
    assert_int_equal(pipe(gate), 0);
    atomic_store(&gate_starts, 0);
    atomic_store(&gate_noted, 0);
    return cshs_server_port(s2, 0);
}

/* Sends gated request i (POST /gate/i, a 1-byte body) on a new
 * connection: the connection. */
static int send_gated(unsigned port, int i)
{
    int fd = dial(port);
    assert_true(fd >= 0);
    char req[96];
    snprintf(req, sizeof req, "POST /gate/%d HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\nx", i);
    assert_true(send(fd, req, strlen(req), MSG_NOSIGNAL) > 0);
    return fd;
}

/* With max_threads busy, handlers wait for a thread in the order they
 * came, at most max_waiting_handlers of them; past that a request is
 * answered 503 without its handler (RFC 9110 §15.6.4), and counted. The
 * loop never runs a handler that may block meanwhile, and goes on with
 * the quick ones. One loop, three threads: two run gated handlers. */
static void test_handlers_wait_for_a_thread(void **state)
{
    (void)state;
    unsigned p2 = start_gated(2, 1);
    int g[5];
    for (int i = 0; i < 5; i++) {
        g[i] = send_gated(p2, i);
        if (i < 2) assert_int_equal(s2_counter_reaches(0, (uint64_t)i + 1), (uint64_t)i + 1);
        if (i >= 2 && i < 4)
            assert_int_equal(s2_counter_reaches(1, (uint64_t)i - 1), (uint64_t)i - 1);
    }
    /* the third waiting one: 503, and the connection closes */
    assert_int_equal(exchange(g[4], NULL, "\r\n\r\n", buf, sizeof buf), 0);
    assert_memory_equal(buf, "HTTP/1.1 503 ", 13);
    assert_non_null(strstr(buf, "\r\nConnection: close\r\n"));
    char one;
    while (recv(g[4], &one, 1, 0) > 0) {
    }
    /* a quick request runs on the loop meanwhile; one that may block has
     * no room in the queue */
    int q = dial(p2);
    assert_true(q >= 0);
    assert_int_equal(
        exchange(q, "GET /quick HTTP/1.1\r\nHost: x\r\n\r\n", "hello /quick", buf, sizeof buf), 0);
    assert_int_equal(
        exchange(q, "GET /other HTTP/1.1\r\nHost: x\r\n\r\n", "\r\n\r\n", buf, sizeof buf), 0);
    assert_memory_equal(buf, "HTTP/1.1 503 ", 13);
    close(q);
    cshs_counters k;
    cshs_server_counters(s2, &k);
    assert_int_equal(k.handlers_waiting, 2);
    assert_int_equal(k.handlers_declined, 2);
    assert_int_equal(atomic_load(&gate_starts), 2);
    assert_true(k.workers_total <= 3);
    /* first come, first served: a thread freed takes /gate/2 first */
    assert_int_equal(write(gate[1], "x", 1), 1);
    assert_int_equal(s2_counter_reaches(1, 1), 1);
    assert_int_equal(gate_noted_reaches(3), 3);
    assert_string_equal(gate_started[2], "/gate/2");
    assert_int_equal(write(gate[1], "xxx", 3), 3);
    for (int i = 0; i < 4; i++) {
        char want[32];
        snprintf(want, sizeof want, "gate /gate/%d", i);
        assert_int_equal(exchange(g[i], NULL, want, buf, sizeof buf), 0);
        close(g[i]);
    }
    assert_int_equal(gate_noted_reaches(4), 4);
    assert_string_equal(gate_started[3], "/gate/3");
    assert_int_equal(s2_counter_reaches(1, 0), 0);
    close(g[4]);
    assert_int_equal(cshs_server_stop(s2, 5000), 0);
    close(gate[0]);
    close(gate[1]);
    gate[0] = gate[1] = -1;
}

/* A stop while handlers wait for a thread: the running ones that pass
 * the deadline are left behind (counted), the waiting ones never run, and
 * nothing is used after it is freed (ASan) once the left ones return. */
static void test_stop_with_handlers_waiting(void **state)
{
    (void)state;
    unsigned p2 = start_gated(4, 0);
    int g[4];
    for (int i = 0; i < 4; i++) g[i] = send_gated(p2, i);
    assert_int_equal(s2_counter_reaches(0, 2), 2);
    assert_int_equal(s2_counter_reaches(1, 2), 2);
    assert_true(cshs_server_stop(s2, 200) > 0);
    assert_int_equal(cshs_server_handlers_running(s2), 2);
    assert_int_equal(atomic_load(&gate_starts), 2); /* the waiting ones never ran */
    /* the two left behind return now, most likely before the free (the
     * other order, free first, is test_stop_cuts_at_deadline's): their
     * state is released by the free then, not left to them */
    atomic_store(&gate_passed, 0);
    assert_int_equal(write(gate[1], "xxxx", 4), 4);
    for (int i = 0; i < 4; i++) close(g[i]);
    for (int i = 0; i < 1000 && atomic_load(&gate_passed) < 2; i++) {
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    assert_int_equal(atomic_load(&gate_passed), 2);
    struct timespec settle = {0, 200 * 1000 * 1000};
    nanosleep(&settle, NULL);
    cshs_server_free(s2);
    s2 = NULL;
    close(gate[0]);
    close(gate[1]);
    gate[0] = gate[1] = -1;
}

/* 1 MiB for /big, else hello's answer. */
static void big_or_hello(cshw_context *ctx)
{
    cshw_request *req = cshw_context_request(ctx);
    if (strcmp(cshw_request_path(req), "/big") != 0) {
        hello(ctx);
        return;
    }
    cshw_response *res = cshw_context_response(ctx);
    char block[16384];
    memset(block, 'b', sizeof block);
    cshw_response_set_content_type(res, "application/octet-stream", NULL);
    cshw_response_set_content_length(res, 1u << 20);
    for (int i = 0; i < 64; i++) cshw_response_write(res, block, sizeof block); /* 1 MiB */
}

/* The descriptor of this process's end of the TCP connection whose other
 * end is client_fd, or -1. */
static int server_end_of(int client_fd)
{
    struct sockaddr_in mine;
    socklen_t ml = sizeof mine;
    if (getsockname(client_fd, (struct sockaddr *)&mine, &ml) < 0) return -1;
    DIR *d = opendir("/proc/self/fd");
    if (!d) return -1;
    int found = -1;
    struct dirent *e;
    while (found < 0 && (e = readdir(d))) {
        int n = atoi(e->d_name);
        struct sockaddr_in peer;
        socklen_t pl = sizeof peer;
        if (n == client_fd || e->d_name[0] == '.') continue;
        if (getpeername(n, (struct sockaddr *)&peer, &pl) == 0 && peer.sin_family == AF_INET &&
            peer.sin_port == mine.sin_port)
            found = n;
    }
    closedir(d);
    return found;
}

/* The events an epoll set of this process registered fd for (the kernel's
 * /proc/self/fdinfo of every epoll descriptor), or -1 when none has it. */
static long registered_events(int fd)
{
    DIR *d = opendir("/proc/self/fdinfo");
    if (!d) return -1;
    long events = -1;
    struct dirent *e;
    char path[300], line[256];
    while (events < 0 && (e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        snprintf(path, sizeof path, "/proc/self/fdinfo/%s", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f) continue;
        while (fgets(line, sizeof line, f)) {
            int tfd;
            unsigned ev;
            if (sscanf(line, "tfd: %d events: %x", &tfd, &ev) == 2 && tfd == fd) events = ev;
        }
        fclose(f);
    }
    closedir(d);
    return events;
}

/* A connection is registered for input alone, as nginx's are: a new socket
 * is writable at once, and with EPOLLOUT registered that would wake the
 * loop for nothing. Once a response waits for the client to take it, the
 * registration gains EPOLLOUT (or the rest would never be sent), and the
 * whole response arrives. */
static void test_writability_registered_when_a_write_waits(void **state)
{
    (void)state;
    cshs_options o2 = o;
    o2.unix_path = NULL;
    o2.loops = 1;
    o2.write_high_water = 4u << 20; /* the handler queues all of it and returns */
    s2 = cshs_server_new(&o2, big_or_hello, NULL);
    assert_non_null(s2);
    assert_int_equal(cshs_server_start(s2), 0);
    unsigned p2 = cshs_server_port(s2, 0);
    f2 = dial_with(p2, 4096); /* the server's sends go short soon */
    assert_true(f2 >= 0);
    assert_int_equal(
        exchange(f2, "GET /a HTTP/1.1\r\nHost: x\r\n\r\n", "hello /a", buf, sizeof buf), 0);
    int mine = server_end_of(f2);
    assert_true(mine >= 0);
    long ev = registered_events(mine);
    assert_true(ev >= 0);
    assert_true(ev & EPOLLIN);
    assert_true(ev & EPOLLET);
    assert_false(ev & EPOLLOUT);

    /* the server's end holds little, so that most of the response waits
     * in the engine's queue (loopback would otherwise take it all) */
    int little = 16384;
    assert_int_equal(setsockopt(mine, SOL_SOCKET, SO_SNDBUF, &little, sizeof little), 0);
    const char *big = "GET /big HTTP/1.1\r\nHost: x\r\n\r\n";
    assert_int_equal(send(f2, big, strlen(big), MSG_NOSIGNAL), (ssize_t)strlen(big));
    /* nothing read: the loop parks the rest and waits for writability */
    for (int i = 0; i < 1000 && !(registered_events(mine) & EPOLLOUT); i++) {
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    assert_true(registered_events(mine) & EPOLLOUT);
    /* and all of it comes: the head, then 1 MiB of body */
    size_t got = 0, body = 0;
    char *end = NULL;
    static char rb[65536];
    while (!end || body < (1u << 20)) {
        ssize_t r = recv(f2, rb + (end ? 0 : got), end ? sizeof rb : sizeof rb - 1 - got, 0);
        assert_true(r > 0);
        if (end) {
            body += (size_t)r;
            continue;
        }
        got += (size_t)r;
        rb[got] = '\0';
        if ((end = strstr(rb, "\r\n\r\n"))) {
            assert_non_null(strstr(rb, "Content-Length: 1048576\r\n"));
            body = got - (size_t)(end + 4 - rb);
        }
    }
    assert_int_equal(body, 1u << 20);
    /* the connection goes on */
    assert_int_equal(
        exchange(f2, "GET /c HTTP/1.1\r\nHost: x\r\n\r\n", "hello /c", buf, sizeof buf), 0);
}

/* Blocking handlers at once on several connections of one loop: the loop
 * is handed over and the handlers run as jobs on threads made for them.
 * Idle for park_after_ms, the threads beyond those kept leave; a second
 * burst is served again, by spares and new threads; stop wakes the spares
 * left. Every answer is checked. */
static void burst_of_waiting_handlers(unsigned p2, int n)
{
    const char *slow = "GET /slow?sleep=200 HTTP/1.1\r\nHost: x\r\n\r\n";
    int fds[8];
    for (int i = 0; i < n; i++) {
        fds[i] = dial(p2);
        assert_true(fds[i] >= 0);
        assert_int_equal(send(fds[i], slow, strlen(slow), MSG_NOSIGNAL), (ssize_t)strlen(slow));
    }
    for (int i = 0; i < n; i++) {
        assert_int_equal(exchange(fds[i], NULL, "hello /slow", buf, sizeof buf), 0);
        close(fds[i]);
    }
}

static uint64_t threads_when(cshs_server *srv, int (*ok)(const cshs_counters *))
{
    cshs_counters k;
    for (int i = 0; i < 1000; i++) { /* a liveness bound, not a timing check */
        cshs_server_counters(srv, &k);
        if (ok(&k)) return k.workers_total;
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return k.workers_total;
}

static int back_to_kept(const cshs_counters *k)
{
    return k->workers_total <= 2 && k->workers_busy == 0;
}

static void test_spares_leave_and_come_back(void **state)
{
    (void)state;
    cshs_options o2 = one_loop(16);
    o2.park_after_ms = 500;
    unsigned p2 = start_s2(&o2);
    cshs_counters k;
    for (int round = 0; round < 3; round++) {
        burst_of_waiting_handlers(p2, 6);
        cshs_server_counters(s2, &k);
        assert_true(k.offloaded > 0);
        assert_true(k.workers_total > 2);
        /* more than the threads kept served it; idle, they leave */
        assert_int_equal(threads_when(s2, back_to_kept), 2);
    }
    cshs_server_counters(s2, &k);
    assert_int_equal(k.requests, 18);
    /* a burst, then stop at once: spares are woken to leave */
    burst_of_waiting_handlers(p2, 6);
    assert_int_equal(cshs_server_stop(s2, 5000), 0);
}

/* s2 with one loop whose handlers have become jobs (a hand-over for a
 * burst of waiting ones) and stay jobs, a job's thread waiting up to
 * 200 ms for its connection's next request: its port. */
static unsigned start_s2_on_jobs(void)
{
    cshs_options o2 = one_loop(16);
    o2.offload_ms = 600000; /* once jobs, the loop's handlers stay jobs */
    o2.next_request_wait_us = 200000;
    unsigned p2 = start_s2(&o2);
    burst_of_waiting_handlers(p2, 6); /* a hand-over: jobs from now on */
    return p2;
}

/* After a job's handler that waited, its thread waits up to
 * next_request_wait_us for the connection's next request: requests sent
 * at once are served by that thread, with no new hand-off (`offloaded`
 * grows once for three); one sent after the wait goes through the loop
 * again. 200 ms is a margin for a request sent at once, not a timing
 * check. */
static void test_job_waits_for_the_next_request(void **state)
{
    (void)state;
    unsigned p2 = start_s2_on_jobs();
    cshs_counters k0, k1, k2;
    cshs_server_counters(s2, &k0);
    assert_true(k0.offloaded > 0);
    const char *slow = "GET /slow?sleep=20 HTTP/1.1\r\nHost: x\r\n\r\n";
    int f = dial(p2);
    assert_true(f >= 0);
    for (int i = 0; i < 3; i++)
        assert_int_equal(exchange(f, slow, "hello /slow", buf, sizeof buf), 0);
    cshs_server_counters(s2, &k1);
    assert_int_equal(k1.offloaded - k0.offloaded, 1);
    struct timespec past_the_wait = {0, 500 * 1000 * 1000};
    nanosleep(&past_the_wait, NULL);
    assert_int_equal(exchange(f, slow, "hello /slow", buf, sizeof buf), 0);
    cshs_server_counters(s2, &k2);
    assert_int_equal(k2.offloaded - k1.offloaded, 1);
    close(f);
    assert_int_equal(cshs_server_stop(s2, 5000), 0);
}

/* The engine's getrusage calls, counted: it asks the kernel with them
 * whether a job's handler blocked. No other code of this process calls it. */
static atomic_int rusage_calls;

int getrusage(int who, struct rusage *ru)
{
    atomic_fetch_add(&rusage_calls, 1);
    return (int)syscall(SYS_getrusage, who, ru);
}

/* A run of handlers that block is checked with the kernel (getrusage before
 * and after) once in 16 requests, not for each; and handlers that then
 * take as long computing, without blocking, are found out at the next
 * check: from there on the thread no longer waits for their connection's
 * next request, which comes through the loop again (a job each). */
static void test_blocking_checked_once_in_a_run(void **state)
{
    (void)state;
    unsigned p2 = start_s2_on_jobs();
    int f = dial(p2);
    assert_true(f >= 0);
    const char *slow = "GET /slow?sleep=2 HTTP/1.1\r\nHost: x\r\n\r\n";
    int calls0 = atomic_load(&rusage_calls);
    for (int i = 0; i < 32; i++)
        assert_int_equal(exchange(f, slow, "hello /slow", buf, sizeof buf), 0);
    int calls = atomic_load(&rusage_calls) - calls0;
    /* two a request would be 64; a check is the run's first request, then
     * one in 16 (a spare that took the first may have been mid-run) */
    assert_true(calls >= 2);
    assert_true(calls <= 6);
    cshs_counters k0, k1;
    cshs_server_counters(s2, &k0);
    const char *spin = "GET /spin?spin=2 HTTP/1.1\r\nHost: x\r\n\r\n";
    struct timespec gap = {0, 10 * 1000 * 1000}; /* well inside the wait */
    for (int i = 0; i < 24; i++) {
        assert_int_equal(exchange(f, spin, "hello /spin", buf, sizeof buf), 0);
        nanosleep(&gap, NULL);
    }
    cshs_server_counters(s2, &k1);
    /* At most 15 are taken for blocking ones, until the check: after each
     * of those the thread waits and reads the next request itself. After
     * each one from the check on it does not: the next request comes
     * through the loop, a job again. Without the check none would. */
    assert_true(k1.offloaded - k0.offloaded >= 24 - 16);
    close(f);
    assert_int_equal(cshs_server_stop(s2, 5000), 0);
}

/* a stop whose deadline passes cuts the request */
static void test_stop_cuts_at_deadline(void **state)
{
    (void)state;
    cshs_options o3 = o;
    o3.unix_path = NULL;
    s3 = cshs_server_new(&o3, hello, NULL);
    assert_non_null(s3);
    assert_int_equal(cshs_server_start(s3), 0);
    f3 = dial(cshs_server_port(s3, 0));
    assert_true(f3 >= 0);
    assert_int_equal(send(f3, "GET /x?sleep=1500 HTTP/1.1\r\nHost: x\r\n\r\n", 40, MSG_NOSIGNAL),
                     40);
    struct timespec ts = {0, 200 * 1000 * 1000};
    nanosleep(&ts, NULL);
    assert_int_equal(cshs_server_stop(s3, 100), 1);
    /* the handler sleeps on past the deadline: left behind, and counted */
    assert_int_equal(cshs_server_handlers_running(s3), 1);
}

/* ---- handlers that answer later (cshs_defer) ---- */

/* One deferred request: its pipe (the thing it waits for), its watch on
 * the loop, and how it ended. */
typedef struct later {
    cshs_deferred *d;
    cshs_watch w;
    int pipe[2];
    pthread_t handler_thread;
    int given_zero; /* the watch was given 0 (a deadline, a forced stop) */
} later;

static atomic_int later_waiting; /* deferred and not yet resumed */
static atomic_int later_zeros;   /* watches given 0 */
static atomic_int later_readies; /* ready calls, 0 included */
static later *later_all[64];
static atomic_int later_n;
static int later_shared[2]; /* /dup: one pipe, each request's watch on a dup of its end */

static void later_answer(cshw_context *ctx, void *arg)
{
    later *lt = arg;
    cshw_response *res = cshw_context_response(ctx);
    cshw_request *req = cshw_context_request(ctx);
    if (!strcmp(cshw_request_path(req), "/pipe-slow") || !strcmp(cshw_request_path(req), "/dup")) {
        struct timespec ts = {0, 50 * 1000 * 1000};
        nanosleep(&ts, NULL); /* a continuation that blocks: it loses the loop */
    }
    if (lt && lt->given_zero) {
        cshw_response_send_error(res, 503);
        return;
    }
    if (lt && !strcmp(cshw_request_path(req), "/disarmed")) {
        close(lt->pipe[0]); /* its watch inert: closed, the socket unregisters */
        close(lt->pipe[1]);
    }
    const char *where = !lt || pthread_equal(pthread_self(), lt->handler_thread) ? "same" : "other";
    cshw_response_printf(res, "later %s %s", cshw_request_path(req), where);
}

static void later_ready(cshs_watch *w, uint32_t events)
{
    later *lt = w->arg;
    char b;
    atomic_fetch_add(&later_readies, 1);
    if (events == 0) {
        lt->given_zero = 1;
        atomic_fetch_add(&later_zeros, 1);
    } else if (read(lt->pipe[0], &b, 1) != 1) {
        if (cshs_reactor_arm(w->reg, w) != 0) abort(); /* not yet: one shot more */
        return;
    }
    close(lt->pipe[0]); /* the watch is inert; closed, its socket unregisters */
    close(lt->pipe[1]);
    atomic_fetch_sub(&later_waiting, 1);
    cshs_deferred_resume(lt->d, later_answer, lt);
}

/* /dup's: the byte stays in the shared pipe for the others' watches */
static void dup_ready(cshs_watch *w, uint32_t events)
{
    later *lt = w->arg;
    (void)events;
    close(lt->pipe[0]); /* the dup: its registration goes */
    atomic_fetch_sub(&later_waiting, 1);
    cshs_deferred_resume(lt->d, later_answer, lt);
}

static void *later_resumer(void *arg)
{
    later *lt = arg;
    struct timespec ts = {0, 30 * 1000 * 1000};
    nanosleep(&ts, NULL);
    atomic_fetch_sub(&later_waiting, 1);
    cshs_deferred_resume(lt->d, later_answer, lt);
    return NULL;
}

static void later_sleeps(cshw_context *ctx, void *arg)
{
    struct timespec ts = {0, 20 * 1000 * 1000};
    nanosleep(&ts, NULL); /* it may wait: a thread of its own */
    later_answer(ctx, arg);
}

/* /pipe: waits for a byte on a pipe, on the loop (the test writes it);
 * /thread: resumed by another thread (/disarmed too, its watch armed,
 * disarmed and its pipe made readable); /now: resumed before it returns;
 * /ended: resumed with no continuation after writing its answer;
 * /job: the rest runs on a thread where it may wait; /forever: a watch
 * with no deadline, never written (a forced stop gives it 0); /deadline:
 * one never written whose deadline is 100 ms away (it gives 0, 503). A
 * streaming route (/stream) runs as a job: cshs_defer says no. */
static void later_handler(cshw_context *ctx)
{
    cshw_request *req = cshw_context_request(ctx);
    const char *path = cshw_request_path(req);
    if (!strcmp(path, "/stream")) {
        cshw_response_printf(cshw_context_response(ctx), "%s %s", path,
                             cshs_defer(ctx) ? "deferred" : "not deferred");
        return;
    }
    later *lt = cshw_arena_alloc(cshw_context_arena(ctx), sizeof *lt);
    memset(lt, 0, sizeof *lt);
    lt->handler_thread = pthread_self();
    lt->d = cshs_defer(ctx);
    if (!lt->d) { /* (a cmocka assertion off the test's thread cannot report) */
        fprintf(stderr, "cshs_defer refused %s\n", path);
        abort();
    }
    if (!strcmp(path, "/now") || !strcmp(path, "/quick")) {
        cshs_deferred_resume(lt->d, later_answer, lt);
    } else if (!strcmp(path, "/job")) {
        cshs_deferred_run(lt->d, later_sleeps, lt);
    } else if (!strcmp(path, "/ended")) {
        cshw_response_puts(cshw_context_response(ctx), "ended by its handler");
        cshs_deferred_resume(lt->d, NULL, NULL);
    } else if (!strcmp(path, "/thread") || !strcmp(path, "/disarmed")) {
        if (path[1] == 'd') {
            /* armed, disarmed, then made readable: its ready must not run */
            if (pipe2(lt->pipe, O_NONBLOCK | O_CLOEXEC) != 0) abort();
            lt->w.fd = lt->pipe[0];
            lt->w.events = EPOLLIN;
            lt->w.ready = later_ready;
            lt->w.arg = lt;
            if (cshs_reactor_arm(cshs_deferred_reactor(lt->d), &lt->w) != 0) abort();
            cshs_reactor_disarm(&lt->w);
            if (write(lt->pipe[1], "x", 1) != 1) abort();
        }
        atomic_fetch_add(&later_waiting, 1);
        pthread_t t;
        if (pthread_create(&t, NULL, later_resumer, lt) != 0) abort();
        pthread_detach(t);
    } else if (!strcmp(path, "/dup")) {
        lt->pipe[0] = dup(later_shared[0]);
        if (lt->pipe[0] < 0) abort();
        lt->w.fd = lt->pipe[0];
        lt->w.events = EPOLLIN;
        lt->w.ready = dup_ready;
        lt->w.arg = lt;
        atomic_fetch_add(&later_waiting, 1);
        if (cshs_reactor_arm(cshs_deferred_reactor(lt->d), &lt->w) != 0) abort();
    } else {
        if (pipe2(lt->pipe, O_NONBLOCK | O_CLOEXEC) != 0) abort();
        lt->w.fd = lt->pipe[0];
        lt->w.events = EPOLLIN;
        lt->w.ready = later_ready;
        lt->w.arg = lt;
        if (!strcmp(path, "/deadline")) {
            struct timespec now;
            clock_gettime(CLOCK_MONOTONIC, &now);
            lt->w.deadline_ms = (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000 + 100;
        }
        later_all[atomic_fetch_add(&later_n, 1) % 64] = lt;
        /* counted once all of it is set: the test reads it then */
        atomic_fetch_add(&later_waiting, 1);
        if (cshs_reactor_arm(cshs_deferred_reactor(lt->d), &lt->w) != 0) abort();
    }
}

static int later_streams(void *arg, const char *head, const csh_message *msg)
{
    (void)arg;
    return msg->target.len == 7 && !memcmp(head + msg->target.off, "/stream", 7);
}

/* Writes the byte each /pipe request waits for, once `n` of them wait. */
static void release_pipes(int n)
{
    for (int i = 0; i < 1000 && atomic_load(&later_waiting) < n; i++) {
        struct timespec ts = {0, 5 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    assert_int_equal(atomic_load(&later_waiting), n);
    int k = atomic_load(&later_n);
    for (int i = 0; i < k && i < 64; i++) assert_int_equal(write(later_all[i]->pipe[1], "x", 1), 1);
}

/* s2 with later_handler, one loop, the counters of the tests zeroed;
 * max_threads 0: the group's; sweep_ms 0: the group's sweep interval. */
static void start_later_server_swept(unsigned max_threads, unsigned sweep_ms)
{
    atomic_store(&later_n, 0);
    atomic_store(&later_waiting, 0);
    atomic_store(&later_zeros, 0);
    cshs_options od = o;
    od.unix_path = NULL;
    od.loops = 1;
    od.offload_ms = 0; /* a slow moment (a sanitizer) must not send handlers to jobs */
    if (sweep_ms) od.sweep_interval_ms = sweep_ms;
    if (max_threads) {
        od.min_threads = 1;
        od.max_threads = max_threads;
    }
    s2 = cshs_server_new(&od, later_handler, NULL);
    assert_non_null(s2);
    cshs_server_set_streaming(s2, later_streams, NULL);
    assert_int_equal(cshs_server_start(s2), 0);
}

static void start_later_server(unsigned max_threads)
{
    start_later_server_swept(max_threads, 0);
}

/* Each kind of deferral answers, in order on a pipelined connection, on
 * the loop's thread unless it asked for a thread of its own; counted in
 * `deferred`; a job's handler is refused (it may wait anyway). Resumed
 * with no continuation, a request ends with what its handler wrote; a
 * watch disarmed is not given the event that comes after. */
static void test_deferred_handlers(void **state)
{
    (void)state;
    start_later_server(0);
    f2 = dial(cshs_server_port(s2, 0));
    assert_true(f2 >= 0);
    const char *one[][2] = {{"/now", "later /now same"},       {"/thread", "later /thread same"},
                            {"/quick", "later /quick same"},   {"/ended", "ended by its handler"},
                            {"/disarmed", "later /disarmed "}, {"/job", "later /job other"}};
    char rq[128];
    for (size_t i = 0; i < sizeof one / sizeof one[0]; i++) {
        int readies = atomic_load(&later_readies);
        snprintf(rq, sizeof rq, "GET %s HTTP/1.1\r\nHost: x\r\n\r\n", one[i][0]);
        assert_int_equal(exchange(f2, rq, one[i][1], buf, sizeof buf), 0);
        assert_int_equal(atomic_load(&later_readies), readies); /* (no watch but /pipe's) */
    }
    /* the job that ran /job's continuation may take the connection's next
     * request too (a job does, when it is already there): the rest go on
     * a new connection */
    close_fd(&f2);
    f2 = dial(cshs_server_port(s2, 0));
    assert_true(f2 >= 0);
    /* pipelined: a deferred request holds the ones behind it until it is
     * answered */
    const char *pipelined = "GET /pipe HTTP/1.1\r\nHost: x\r\n\r\n"
                            "GET /now HTTP/1.1\r\nHost: x\r\n\r\n";
    assert_int_equal(send(f2, pipelined, strlen(pipelined), MSG_NOSIGNAL),
                     (ssize_t)strlen(pipelined));
    release_pipes(1);
    assert_int_equal(exchange(f2, NULL, "later /now same", buf, sizeof buf), 0);
    assert_non_null(strstr(buf, "later /pipe same"));
    assert_true(strstr(buf, "later /pipe") < strstr(buf, "later /now"));
    /* a streaming route's handler (a request with a body) runs as a job; last,
     * since its job may take the connection's next request too */
    assert_int_equal(exchange(f2, "POST /stream HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nab",
                              "/stream not deferred", buf, sizeof buf),
                     0);
    cshs_counters k;
    assert_int_equal(cshs_server_counters(s2, &k), 0);
    assert_int_equal(k.deferred,
                     8); /* /now, /thread, /quick, /ended, /disarmed, /job, /pipe, /now */
}

/* 16 requests wait at once, deferred, with at most two threads in all:
 * none holds a thread while it waits (were it so, the 16th would never
 * begin and release_pipes would fail). */
static void test_deferred_hold_no_thread(void **state)
{
    (void)state;
    start_later_server(2);
    int fds[16];
    for (int i = 0; i < 16; i++) {
        fds[i] = dial(cshs_server_port(s2, 0));
        assert_true(fds[i] >= 0);
        assert_int_equal(send(fds[i], "GET /pipe HTTP/1.1\r\nHost: x\r\n\r\n", 32, MSG_NOSIGNAL),
                         32);
    }
    release_pipes(16);
    for (int i = 0; i < 16; i++) {
        assert_int_equal(exchange(fds[i], NULL, "later /pipe same", buf, sizeof buf), 0);
        close(fds[i]);
    }
    cshs_counters k;
    assert_int_equal(cshs_server_counters(s2, &k), 0);
    assert_true(k.workers_total <= 2);
    assert_int_equal(k.deferred, 16);
}

/* Continuations due in one batch run one after the other after it; when
 * the first blocks and loses the loop (another connection's request
 * waits), the ones behind it go to the loop's new owner through its
 * returned list and are answered (under TSan: without touching the posted
 * list the new owner has). */
static void test_deferred_behind_a_blocked_one(void **state)
{
    (void)state;
    start_later_server(8);
    int fds[4];
    const char *paths[4] = {"/pipe-slow", "/pipe", "/pipe", "/pipe"};
    char rq[128];
    for (int i = 0; i < 4; i++) {
        fds[i] = dial(cshs_server_port(s2, 0));
        assert_true(fds[i] >= 0);
        snprintf(rq, sizeof rq, "GET %s HTTP/1.1\r\nHost: x\r\n\r\n", paths[i]);
        assert_int_equal(send(fds[i], rq, strlen(rq), MSG_NOSIGNAL), (ssize_t)strlen(rq));
        /* in this order: the slow one's watch fires first */
        for (int k = 0; k < 1000 && atomic_load(&later_waiting) < i + 1; k++) {
            struct timespec ts = {0, 2 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
    }
    f2 = dial(cshs_server_port(s2, 0)); /* waits on the loop while the slow one blocks */
    assert_true(f2 >= 0);
    release_pipes(4);
    struct timespec ts = {0, 10 * 1000 * 1000};
    nanosleep(&ts, NULL);
    assert_int_equal(
        exchange(f2, "GET /now HTTP/1.1\r\nHost: x\r\n\r\n", "later /now", buf, sizeof buf), 0);
    for (int i = 0; i < 4; i++) {
        snprintf(rq, sizeof rq, "later %s ", paths[i]); /* on whichever thread has the loop */
        assert_int_equal(exchange(fds[i], NULL, rq, buf, sizeof buf), 0);
        close(fds[i]);
    }
    cshs_counters k;
    assert_int_equal(cshs_server_counters(s2, &k), 0);
    assert_true(k.handovers >= 1);
}

/* Continuations due in one batch (4 watches on one pipe, made readable
 * by one write), each blocking: while the first blocks, the ones posted
 * behind it are work waiting on the loop, so the supervisor hands the
 * loop over and the new owner takes them up (and so on), rather than
 * leaving them behind the blocked one, in its hands (nothing else waits
 * on the loop here: no event, and a sweep due only after 20 s). */
static void test_posted_continuations_behind_a_blocked_one(void **state)
{
    (void)state;
    start_later_server_swept(8, 20000);
    assert_int_equal(pipe2(later_shared, O_NONBLOCK | O_CLOEXEC), 0);
    int fds[4];
    char buf[256];
    for (int i = 0; i < 4; i++) {
        fds[i] = dial(cshs_server_port(s2, 0));
        assert_true(fds[i] >= 0);
        const char *rq = "GET /dup HTTP/1.1\r\nHost: x\r\n\r\n";
        assert_int_equal(send(fds[i], rq, strlen(rq), MSG_NOSIGNAL), (ssize_t)strlen(rq));
    }
    for (int k = 0; k < 1000 && atomic_load(&later_waiting) < 4; k++) {
        struct timespec ts = {0, 2 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    assert_int_equal(atomic_load(&later_waiting), 4);
    assert_int_equal(write(later_shared[1], "x", 1), 1);
    int other = 0;
    for (int i = 0; i < 4; i++) {
        assert_int_equal(exchange(fds[i], NULL, "later /dup ", buf, sizeof buf), 0);
        if (strstr(buf, "later /dup other")) other++;
        close(fds[i]);
    }
    close(later_shared[0]);
    close(later_shared[1]);
    cshs_counters k;
    assert_int_equal(cshs_server_counters(s2, &k), 0);
    assert_true(k.handovers >= 1);
    /* each one behind a blocked one is taken up by the loop's next owner:
     * all but the first on another thread than the handlers' */
    assert_true(k.handovers >= 3);
    assert_int_equal(other, 3);
}

/* A watch's deadline wakes the loop when it comes, not at the next
 * sweep: here 20 s away, beyond the client's 10 s bound on its read. */
static void test_watch_deadline_wakes_the_loop(void **state)
{
    (void)state;
    start_later_server_swept(0, 20000);
    f2 = dial(cshs_server_port(s2, 0));
    assert_true(f2 >= 0);
    assert_int_equal(
        exchange(f2, "GET /deadline HTTP/1.1\r\nHost: x\r\n\r\n", "\r\n\r\n", buf, sizeof buf), 0);
    assert_non_null(strstr(buf, "HTTP/1.1 503"));
    assert_int_equal(atomic_load(&later_zeros), 1);
}

/* A request waiting on a watch with no deadline at a stop that has to
 * cut: its watch is given 0, its continuation answers, and the stop ends
 * with no handler left behind. */
static void test_deferred_at_forced_stop(void **state)
{
    (void)state;
    start_later_server(0);
    f2 = dial(cshs_server_port(s2, 0));
    assert_true(f2 >= 0);
    assert_int_equal(send(f2, "GET /forever HTTP/1.1\r\nHost: x\r\n\r\n", 35, MSG_NOSIGNAL), 35);
    for (int i = 0; i < 1000 && atomic_load(&later_waiting) < 1; i++) {
        struct timespec ts = {0, 5 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    assert_int_equal(atomic_load(&later_waiting), 1);
    assert_int_equal(cshs_server_stop(s2, 100), 1);
    assert_int_equal(atomic_load(&later_zeros), 1);
    assert_int_equal(atomic_load(&later_waiting), 0);
    assert_int_equal(cshs_server_handlers_running(s2), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_free_null_and_new_refusal),
        cmocka_unit_test_teardown(test_start_ephemeral_port, teardown),
        cmocka_unit_test_teardown(test_keep_alive, teardown),
        cmocka_unit_test_teardown(test_pipelining, teardown),
        cmocka_unit_test_teardown(test_port_in_use, teardown),
        cmocka_unit_test_teardown(test_unix_listener, teardown),
        cmocka_unit_test_teardown(test_counters, teardown),
        cmocka_unit_test_teardown(test_counters_sizes, teardown),
        cmocka_unit_test_teardown(test_wait_and_graceful_stop, teardown),
        cmocka_unit_test_teardown(test_stop_cuts_at_deadline, teardown),
        cmocka_unit_test_teardown(test_app_data, teardown),
        cmocka_unit_test_teardown(test_tick, teardown),
        cmocka_unit_test_teardown(test_streaming_route, teardown),
        cmocka_unit_test_teardown(test_slow_handler_holds_no_events, teardown),
        cmocka_unit_test_teardown(test_handlers_wait_for_a_thread, teardown),
        cmocka_unit_test_teardown(test_stop_with_handlers_waiting, teardown),
        cmocka_unit_test_teardown(test_spares_leave_and_come_back, teardown),
        cmocka_unit_test_teardown(test_job_waits_for_the_next_request, teardown),
        cmocka_unit_test_teardown(test_blocking_checked_once_in_a_run, teardown),
        cmocka_unit_test_teardown(test_writability_registered_when_a_write_waits, teardown),
        cmocka_unit_test_teardown(test_deferred_handlers, teardown),
        cmocka_unit_test_teardown(test_deferred_hold_no_thread, teardown),
        cmocka_unit_test_teardown(test_deferred_behind_a_blocked_one, teardown),
        cmocka_unit_test_teardown(test_posted_continuations_behind_a_blocked_one, teardown),
        cmocka_unit_test_teardown(test_deferred_at_forced_stop, teardown),
        cmocka_unit_test_teardown(test_watch_deadline_wakes_the_loop, teardown),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
