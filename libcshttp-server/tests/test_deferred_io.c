/* A deferred handler's own client, on its loop (server.h,
 * cshs_deferred_on_drain and _on_body), over real sockets: 1 GiB streamed
 * to a client that reads slowly with the queue held to the high-water
 * mark (and the process's memory flat), a request body read as events,
 * paused while the handler waits for something else and resumed, and a
 * client that stops reading cut at send_timeout_ms with the handler
 * told. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
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
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <stdatomic.h>

#include <cshttp/server.h>
#include <cshttp/web/request.h>
#include <cshttp/web/response.h>

#define BIG ((uint64_t)1 << 30)
#define PIECE 65536u
#define MARK (256u * 1024u) /* write_high_water */
#define STOP_EVERY ((uint64_t)8 << 20) /* the slow reader stops this often (bytes) */

static char piece[PIECE];
static atomic_ullong max_queued;
static atomic_int pump_runs, pump_errors;
static atomic_int pump_waiting; /* the pump waits for the client now (on_drain) */

/* ---- 1 GiB out: a piece at a time, never past the mark ---- */

typedef struct big_state {
    uint64_t left;
} big_state;

static void note_queued(cshw_response *res)
{
    unsigned long long q = cshw_response_queued(res);
    unsigned long long m = atomic_load(&max_queued);
    while (q > m && !atomic_compare_exchange_weak(&max_queued, &m, q)) {
    }
}

static void pump(cshw_context *ctx, void *arg)
{
    big_state *b = arg;
    cshw_response *res = cshw_context_response(ctx);
    atomic_fetch_add(&pump_runs, 1);
    atomic_store(&pump_waiting, 0);
    while (b->left && cshw_response_queued(res) <= MARK) {
        size_t n = b->left < PIECE ? (size_t)b->left : PIECE;
        if (cshw_response_write(res, piece, n) < 0) {
            atomic_fetch_add(&pump_errors, 1);
            free(b);
            return;
        }
        b->left -= n;
        note_queued(res);
    }
    if (!b->left) {
        free(b);
        return; /* the response ends */
    }
    cshs_deferred *d = cshs_defer(ctx);
    assert_non_null(d);
    atomic_store(&pump_waiting, 1);
    cshs_deferred_on_drain(d, pump, b);
}

/* ---- a body read as events, paused on an eventfd ---- */

typedef struct up_state {
    uint64_t got;
    int paused_once;
    cshs_watch w; /* on pause_fd: the test says when to go on */
    cshs_deferred *d;
} up_state;

static int pause_fd = -1;
static atomic_ullong body_got;
static atomic_int body_paused;

static void read_body(cshw_context *ctx, void *arg);

static void go_on(cshs_watch *w, uint32_t ev)
{
    up_state *u = w->arg;
    (void)ev;
    uint64_t v;
    if (read(w->fd, &v, sizeof v) < 0) {
    }
    cshs_deferred_resume(u->d, read_body, u);
}

static void read_body(cshw_context *ctx, void *arg)
{
    up_state *u = arg;
    cshw_request *req = cshw_context_request(ctx);
    cshw_response *res = cshw_context_response(ctx);
    static char buf[PIECE];
    for (;;) {
        ssize_t n = cshw_request_read(req, buf, sizeof buf);
        if (n > 0) {
            u->got += (uint64_t)n;
            atomic_store(&body_got, u->got);
            if (!u->paused_once && u->got >= (1u << 20)) {
                /* pause: wait for something else (the test's eventfd),
                 * not for the body */
                u->paused_once = 1;
                atomic_store(&body_paused, 1);
                u->d = cshs_defer(ctx);
                assert_non_null(u->d);
                memset(&u->w, 0, sizeof u->w);
                u->w.fd = pause_fd;
                u->w.events = EPOLLIN;
                u->w.ready = go_on;
                u->w.arg = u;
                assert_int_equal(cshs_reactor_arm(cshs_deferred_reactor(u->d), &u->w), 0);
                return;
            }
            continue;
        }
        if (n == -EAGAIN) { /* nothing more yet: asked for when it comes */
            cshs_deferred *d = cshs_defer(ctx);
            assert_non_null(d);
            cshs_deferred_on_body(d, read_body, u);
            return;
        }
        cshw_response_printf(res, "%lld %llu", (long long)n, (unsigned long long)u->got);
        cshs_reactor_disarm(&u->w);
        free(u);
        return;
    }
}

static void handler(cshw_context *ctx)
{
    const char *path = cshw_request_path(cshw_context_request(ctx));
    cshw_response *res = cshw_context_response(ctx);
    if (strcmp(path, "/big") == 0) {
        big_state *b = calloc(1, sizeof *b);
        b->left = BIG;
        cshw_response_set_content_length(res, BIG);
        cshw_response_set_content_type(res, "application/octet-stream", NULL);
        /* deferred first: its writes never wait for the client (past the
         * mark they are queued, and the continuation waits for the drain) */
        cshs_deferred *d = cshs_defer(ctx);
        assert_non_null(d);
        cshs_deferred_on_drain(d, pump, b);
        return;
    }
    if (strcmp(path, "/up") == 0) {
        up_state *u = calloc(1, sizeof *u);
        read_body(ctx, u);
        return;
    }
    cshw_response_puts(res, "?");
}

static int streams(void *arg, const char *head, const csh_message *msg)
{
    (void)arg;
    return msg->target.len == 3 && memcmp(head + msg->target.off, "/up", 3) == 0
               ? CSHS_STREAM_ON_LOOP
               : 0;
}

/* ---- the test's side ---- */

static cshs_server *srv;

static unsigned start(unsigned send_timeout_ms)
{
    cshs_options o;
    cshs_options_init(&o);
    o.port = 0;
    o.address = "127.0.0.1";
    o.loops = 1;
    o.min_threads = 2;
    o.max_threads = 4;
    o.write_high_water = MARK;
    o.sweep_interval_ms = 50;
    if (send_timeout_ms) o.send_timeout_ms = send_timeout_ms;
    char err[128];
    assert_int_equal(cshs_options_set(&o, "max_request_body", "0", err, sizeof err), 0);
    srv = cshs_server_new(&o, handler, NULL);
    cshs_options_release(&o); /* the server has its copy */
    assert_non_null(srv);
    cshs_server_set_streaming(srv, streams, NULL);
    assert_int_equal(cshs_server_start(srv), 0);
    for (size_t i = 0; i < PIECE; i++) piece[i] = (char)(i % 251);
    atomic_store(&max_queued, 0);
    atomic_store(&pump_runs, 0);
    atomic_store(&pump_waiting, 0);
    atomic_store(&pump_errors, 0);
    return cshs_server_port(srv, 0);
}

static int dial(unsigned port, int rcvbuf)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (rcvbuf) {
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
        setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &rcvbuf, sizeof rcvbuf);
    }
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    struct timeval tv = {20, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
    return fd;
}

static long rss_kib(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long v = 0;
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "VmRSS:", 6) == 0) v = atol(line + 6);
    if (f) fclose(f);
    return v;
}

/* Reads a head byte by byte (the body follows); returns its length. */
static size_t read_head(int fd, char *out, size_t cap)
{
    size_t n = 0;
    out[0] = 0;
    while (!strstr(out, "\r\n\r\n")) {
        assert_true(n + 1 < cap);
        assert_int_equal(recv(fd, out + n, 1, 0), 1);
        out[++n] = 0;
    }
    return n;
}

static void test_gib_to_a_slow_reader(void **state)
{
    (void)state;
    unsigned port = start(0);
    int fd = dial(port, 65536);
    static const char req[] = "GET /big HTTP/1.1\r\nHost: a\r\n\r\n";
    assert_int_equal(send(fd, req, sizeof req - 1, 0), (ssize_t)sizeof req - 1);
    char head[1024];
    read_head(fd, head, sizeof head);
    assert_non_null(strstr(head, "HTTP/1.1 200 OK\r\n"));
    assert_non_null(strstr(head, "Content-Length: 1073741824\r\n"));
    long base = rss_kib(), peak = base;
    static char in[PIECE];
    uint64_t got = 0;
    unsigned reads = 0;
    struct timespec pause = {0, 50 * 1000};
    uint64_t next_stop = STOP_EVERY;
    int stops = 0;
    while (got < BIG) {
        if (got >= next_stop && got < BIG - 4 * STOP_EVERY) {
            /* the reader stops until the pump waits for it: it fills the
             * socket and its queue to the mark whatever the machine's
             * speed; the pump runs again once the reader goes on */
            for (int i = 0; i < 20000 && !atomic_load(&pump_waiting); i++) {
                struct timespec ms = {0, 1000 * 1000};
                nanosleep(&ms, NULL);
            }
            assert_true(atomic_load(&pump_waiting));
            stops++;
            next_stop += STOP_EVERY;
        }
        size_t want = sizeof in;
        if (want > BIG - got) want = (size_t)(BIG - got);
        ssize_t r = recv(fd, in, want, 0);
        assert_true(r > 0);
        /* the bytes are the pieces', in order */
        if (reads % 64 == 0)
            for (ssize_t i = 0; i < r; i++)
                if (in[i] != (char)(((got + (uint64_t)i) % PIECE) % 251))
                    fail_msg("byte %llu", (unsigned long long)(got + (uint64_t)i));
        got += (uint64_t)r;
        /* a slow reader: a pause every read */
        if (++reads % 4 == 0) nanosleep(&pause, NULL);
        if (reads % 1024 == 0) {
            long now = rss_kib();
            if (now > peak) peak = now;
        }
    }
    /* the queue never passed the mark by more than a write */
    assert_true(atomic_load(&max_queued) <= MARK + PIECE);
    /* it waited for the client at every stop, and ran again after each */
    assert_true(stops >= (int)(BIG / STOP_EVERY) - 5);
    assert_true(atomic_load(&pump_runs) > stops);
    assert_int_equal(atomic_load(&pump_errors), 0);
#if !defined(__SANITIZE_ADDRESS__)
    /* (ASan's quarantine keeps freed blocks: the queue's count above is
     * the bound there) */
    assert_true(peak - base < 64 * 1024);
#endif
    /* the connection goes on */
    static const char next[] = "GET /x HTTP/1.1\r\nHost: a\r\n\r\n";
    assert_int_equal(send(fd, next, sizeof next - 1, 0), (ssize_t)sizeof next - 1);
    read_head(fd, head, sizeof head);
    assert_non_null(strstr(head, "HTTP/1.1 200 OK\r\n"));
    close(fd);
    cshs_server_free(srv);
}

/* A client that stops reading: the wait for the drain ends at
 * send_timeout_ms, and the continuation's writes fail (it frees what it
 * holds): no request left waiting, no leak. */
static void test_reader_that_stops(void **state)
{
    (void)state;
    unsigned port = start(300);
    int fd = dial(port, 65536);
    static const char req[] = "GET /big HTTP/1.1\r\nHost: a\r\n\r\n";
    assert_int_equal(send(fd, req, sizeof req - 1, 0), (ssize_t)sizeof req - 1);
    for (int i = 0; i < 10000 && atomic_load(&pump_errors) == 0; i++) usleep(1000);
    assert_int_equal(atomic_load(&pump_errors), 1);
    cshs_counters k;
    cshs_server_counters(srv, &k);
    assert_true(k.err_send_timeout >= 1);
    close(fd);
    cshs_server_free(srv);
}

typedef struct sender {
    int fd;
    size_t total;
    atomic_ullong sent;
} sender;

static void *send_body(void *arg)
{
    sender *s = arg;
    static char chunk[PIECE];
    memset(chunk, 'b', sizeof chunk);
    size_t off = 0;
    while (off < s->total) {
        size_t n = s->total - off < sizeof chunk ? s->total - off : sizeof chunk;
        ssize_t w = send(s->fd, chunk, n, MSG_NOSIGNAL);
        if (w <= 0) break;
        off += (size_t)w;
        atomic_store(&s->sent, off);
    }
    return NULL;
}

static void test_body_as_events(void **state)
{
    (void)state;
    unsigned port = start(0);
    pause_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    atomic_store(&body_got, 0);
    atomic_store(&body_paused, 0);
    sender s = {.fd = dial(port, 65536), .total = 32u << 20};
    char req[256];
    int n = snprintf(req, sizeof req, "POST /up HTTP/1.1\r\nHost: a\r\nContent-Length: %zu\r\n\r\n",
                     s.total);
    assert_int_equal(send(s.fd, req, (size_t)n, 0), n);
    pthread_t th;
    pthread_create(&th, NULL, send_body, &s);
    /* paused after 1 MiB: the handler reads nothing, the sender stalls */
    for (int i = 0; i < 10000 && !atomic_load(&body_paused); i++) usleep(1000);
    assert_true(atomic_load(&body_paused));
    uint64_t last = 0;
    for (int still = 0; still < 10;) {
        usleep(20000);
        uint64_t now = atomic_load(&s.sent);
        still = now == last ? still + 1 : 0;
        last = now;
    }
    assert_true(last < s.total);
    uint64_t got = atomic_load(&body_got);
    assert_true(got >= (1u << 20) && got < (2u << 20));
    /* resumed: all of it, and the answer */
    uint64_t one = 1;
    assert_int_equal(write(pause_fd, &one, sizeof one), (ssize_t)sizeof one);
    pthread_join(th, NULL);
    assert_int_equal(atomic_load(&s.sent), s.total);
    char head[1024], body[64];
    read_head(s.fd, head, sizeof head);
    assert_non_null(strstr(head, "HTTP/1.1 200 OK\r\n"));
    const char *cl = strstr(head, "Content-Length: ");
    assert_non_null(cl);
    size_t blen = (size_t)atoi(cl + 16);
    assert_true(blen < sizeof body);
    size_t have = 0;
    while (have < blen) {
        ssize_t r = recv(s.fd, body + have, blen - have, 0);
        assert_true(r > 0);
        have += (size_t)r;
    }
    body[blen] = 0;
    char want[64];
    snprintf(want, sizeof want, "0 %zu", s.total);
    assert_string_equal(body, want);
    close(s.fd);
    /* the server first: its thread read pause_fd last, and only the stop
     * orders that read before this close */
    cshs_server_free(srv);
    close(pause_fd);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_body_as_events),
        cmocka_unit_test(test_reader_that_stops),
        cmocka_unit_test(test_gib_to_a_slow_reader),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
