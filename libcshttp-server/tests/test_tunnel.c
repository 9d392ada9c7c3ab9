/* Switching protocols (RFC 9110 §7.8, §15.2.2) through the engine's
 * tunnels (tunnel.h), over real sockets: an echo protocol both ways with
 * the bytes that followed the request, 426 for a request that did not ask,
 * backpressure that pauses a client that does not read, the idle
 * deadline, a close after the last write, a write from another thread
 * through the loop's reactor, a tunnel opened by a job's handler, and a
 * stop that ends open tunnels. And WebSockets on tunnels (websocket.h;
 * RFC 6455): messages answered from a worker thread through
 * cshs_websocket_post, the closing handshake started from one, a post
 * after the end, the session's ping and pong deadline run by the loop,
 * the handshake's refusals, the access log's line for the socket, and
 * the close frame a graceful stop sends. */
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
#include <cshttp/web/error.h>
#include <cshttp/web/request.h>
#include <cshttp/web/response.h>

/* ---- the application: "echo" sends back what it gets ---- */

static atomic_int closed_calls, opened_calls;
static atomic_int last_why;
static atomic_ullong max_queued;
static int push_fd = -1; /* an eventfd the test writes to: "pushed" goes out */
static cshs_watch push_watch;

static void push_ready(cshs_watch *w, uint32_t ev)
{
    cshs_tunnel *t = w->arg;
    if (!ev) return; /* the server's end */
    uint64_t v;
    if (read(w->fd, &v, sizeof v) == sizeof v) cshs_tunnel_write(t, "pushed\n", 7);
    cshs_reactor_arm(cshs_tunnel_reactor(t), w);
}

static void on_open(cshs_tunnel *t, void *arg)
{
    atomic_fetch_add(&opened_calls, 1);
    if (arg) { /* the push variant: a watch another thread wakes */
        cshs_tunnel_write(t, "hello\n", 6);
        memset(&push_watch, 0, sizeof push_watch);
        push_watch.fd = push_fd;
        push_watch.events = EPOLLIN;
        push_watch.ready = push_ready;
        push_watch.arg = t;
        assert_int_equal(cshs_reactor_arm(cshs_tunnel_reactor(t), &push_watch), 0);
    }
}

static void on_data(cshs_tunnel *t, const char *p, size_t n, void *arg)
{
    (void)arg;
    if (n == 0) { /* the client's end: ours after what is queued */
        cshs_tunnel_shutdown(t);
        return;
    }
    if (n == 3 && memcmp(p, "bye", 3) == 0) {
        cshs_tunnel_write(t, "ok", 2);
        cshs_tunnel_close(t);
        assert_int_equal(cshs_tunnel_write(t, "x", 1), -EPIPE);
        return;
    }
    int r = cshs_tunnel_write(t, p, n);
    uint64_t q = cshs_tunnel_queued(t);
    unsigned long long m = atomic_load(&max_queued);
    while (q > m && !atomic_compare_exchange_weak(&max_queued, &m, q)) {
    }
    if (r == 1) cshs_tunnel_pause(t);
}

static void on_drained(cshs_tunnel *t, void *arg)
{
    (void)arg;
    cshs_tunnel_resume(t);
}

static void on_closed(cshs_tunnel *t, int why, void *arg)
{
    (void)t;
    if (arg) {
        cshs_reactor_disarm(&push_watch);
        close(push_fd);
        push_fd = -1;
    }
    atomic_store(&last_why, why);
    atomic_fetch_add(&closed_calls, 1);
}

static const cshs_tunnel_ops echo = {on_open, on_data, on_drained, on_closed};

/* /flood: each byte the client sends is answered with 64 KiB, and the
 * tunnel keeps reading however much is queued (a protocol that does not
 * pause): only the send deadline stops a client that never reads. */
static void flood_data(cshs_tunnel *t, const char *p, size_t n, void *arg)
{
    (void)p, (void)arg;
    static char big[65536];
    for (size_t i = 0; i < n; i++) cshs_tunnel_write(t, big, sizeof big);
}

static const cshs_tunnel_ops flooding = {NULL, flood_data, NULL, on_closed};

static void ws_handler(cshw_context *ctx);

static void handler(cshw_context *ctx)
{
    const char *path = cshw_request_path(cshw_context_request(ctx));
    if (strncmp(path, "/ws", 3) == 0) {
        ws_handler(ctx);
        return;
    }
    cshw_response *res = cshw_context_response(ctx);
    cshw_response_set_header(res, "X-Tunnel", "echo");
    int r = strcmp(path, "/flood") == 0
                ? cshs_upgrade(ctx, "echo", &flooding, NULL)
                : cshs_upgrade(ctx, "echo", &echo, strcmp(path, "/push") == 0 ? &push_watch : NULL);
    if (r < 0) {
        cshw_response_set_status(res, cshw_error_status(r));
        cshw_response_printf(res, "%d", r);
        return;
    }
    /* a second switch, and HTTP output after the 101, are refused */
    assert_int_equal(cshs_upgrade(ctx, "echo", &echo, NULL), -EALREADY);
    assert_int_equal(cshw_response_write(res, "x", 1), CSHW_E_SWITCHED);
}

/* /job runs as a job (a streaming route's thread), as a handler that may
 * block does */
static int job_streams(void *arg, const char *head, const csh_message *msg)
{
    (void)arg;
    return msg->target.len == 4 && memcmp(head + msg->target.off, "/job", 4) == 0;
}

/* ---- WebSockets: the application ----
 * /ws: text "work" is answered "done" from a thread of its own (the
 * session retained there, cshs_websocket_post); "close" makes that thread
 * start the closing handshake (4000 "bye"); "keep" leaves the session
 * retained in `kept`, for a post after its end; binary is echoed on the
 * loop. /ws-live pings after 60 ms of silence and ends 60 ms after. */

static atomic_int ws_closed_calls, ws_last_code;
static _Atomic(cshw_ws *) kept;
static atomic_int logged_101;
static _Atomic unsigned long long logged_in, logged_out;

static void log_entry(void *user, const cshs_request_log *e)
{
    (void)user;
    if (e->status != 101) return;
    atomic_store(&logged_in, e->bytes_in);
    atomic_store(&logged_out, e->bytes_out);
    atomic_fetch_add(&logged_101, 1);
}

typedef struct job {
    cshw_ws *ws;
    int close;
} job;

static void *worker(void *arg)
{
    job *j = arg;
    usleep(20000); /* blocking work, off the loop */
    int r = j->close ? cshs_websocket_post_close(j->ws, 4000, "bye")
                     : cshs_websocket_post(j->ws, CSHW_WS_TEXT, "done", 4);
    assert_true(r == 0 || r == 1);
    cshw_ws_release(j->ws);
    free(j);
    return NULL;
}

static void ws_message(cshw_ws *ws, int type, const char *p, size_t n, void *arg)
{
    (void)arg;
    if (type == CSHW_WS_BINARY) {
        cshw_ws_send(ws, type, p, n);
        return;
    }
    if (n == 4 && memcmp(p, "quit", 4) == 0) { /* a close begun on the loop */
        cshw_ws_close(ws, 4001, "quit");
        return;
    }
    if (n == 4 && memcmp(p, "keep", 4) == 0) {
        cshw_ws_retain(ws);
        atomic_store(&kept, ws);
        cshw_ws_send(ws, CSHW_WS_TEXT, "kept", 4);
        return;
    }
    job *j = malloc(sizeof *j);
    assert_non_null(j);
    j->ws = ws;
    j->close = n == 5 && memcmp(p, "close", 5) == 0;
    cshw_ws_retain(ws); /* the thread's reference */
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, worker, j), 0);
    pthread_detach(t);
}

static void ws_closed(cshw_ws *ws, int code, const char *reason, size_t len, void *arg)
{
    (void)ws, (void)reason, (void)len, (void)arg;
    atomic_store(&ws_last_code, code);
    atomic_fetch_add(&ws_closed_calls, 1);
}

static const cshw_ws_handlers ws_app = {.message = ws_message, .closed = ws_closed};

static void ws_handler(cshw_context *ctx)
{
    cshw_ws_options o;
    cshw_ws_options_init(&o);
    const char *path = cshw_request_path(cshw_context_request(ctx));
    if (strcmp(path, "/ws-live") == 0) {
        o.ping_interval_ms = 60;
        o.pong_timeout_ms = 60;
    } else if (strcmp(path, "/ws-quiet") == 0) { /* no pings: the close's own timer */
        o.ping_interval_ms = 0;
        o.close_timeout_ms = 100;
    }
    cshs_websocket(ctx, &o, &ws_app, NULL); /* a refusal is answered */
}

/* ---- the test's side ---- */

static cshs_server *srv;

static unsigned start(const cshs_options *extra)
{
    cshs_options o;
    cshs_options_init(&o);
    if (extra) o = *extra;
    o.port = 0;
    o.address = "127.0.0.1";
    o.loops = 1;
    o.min_threads = 2;
    o.max_threads = 4;
    srv = cshs_server_new(&o, handler, NULL);
    assert_non_null(srv);
    cshs_server_set_streaming(srv, job_streams, NULL);
    cshs_server_set_log(srv, log_entry, NULL);
    atomic_store(&logged_101, 0);
    atomic_store(&ws_closed_calls, 0);
    assert_int_equal(cshs_server_start(srv), 0);
    atomic_store(&closed_calls, 0);
    atomic_store(&opened_calls, 0);
    atomic_store(&max_queued, 0);
    return cshs_server_port(srv, 0);
}

static int dial(unsigned port, int bufsize)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (bufsize) {
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bufsize, sizeof bufsize);
        setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bufsize, sizeof bufsize);
    }
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    struct timeval tv = {10, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
    return fd;
}

static void send_all(int fd, const void *p, size_t n)
{
    assert_int_equal(send(fd, p, n, MSG_NOSIGNAL), (ssize_t)n);
}

/* Reads exactly n bytes (fails on EOF or the 10 s timeout). */
static void recv_exact(int fd, char *out, size_t n)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = recv(fd, out + got, n - got, 0);
        assert_true(r > 0);
        got += (size_t)r;
    }
}

/* Reads a response head; returns its status, the head in out. */
static int recv_head(int fd, char *out, size_t cap)
{
    size_t n = 0;
    out[0] = 0;
    while (!strstr(out, "\r\n\r\n")) {
        assert_true(n + 1 < cap);
        ssize_t r = recv(fd, out + n, 1, 0); /* byte by byte: the tunnel's follow */
        assert_true(r == 1);
        n++;
        out[n] = 0;
    }
    return atoi(out + 9);
}

static void expect_eof(int fd)
{
    char b;
    assert_int_equal(recv(fd, &b, 1, 0), 0);
}

static void wait_closed(int n)
{
    for (int i = 0; i < 10000 && atomic_load(&closed_calls) < n; i++) usleep(1000);
    assert_int_equal(atomic_load(&closed_calls), n);
}

static const char upgrade_req[] = "GET /echo HTTP/1.1\r\nHost: a\r\n"
                                  "Connection: Upgrade\r\nUpgrade: echo\r\n\r\n";

static void test_echo_both_ways(void **state)
{
    (void)state;
    unsigned port = start(NULL);
    int fd = dial(port, 0);
    /* the first bytes of the new protocol in the request's own packet */
    char req[256];
    snprintf(req, sizeof req, "%sfirst", upgrade_req);
    send_all(fd, req, strlen(req));
    char head[1024], got[64];
    assert_int_equal(recv_head(fd, head, sizeof head), 101);
    assert_non_null(strstr(head, "\r\nConnection: Upgrade\r\n"));
    assert_non_null(strstr(head, "\r\nUpgrade: echo\r\n"));
    assert_non_null(strstr(head, "\r\nX-Tunnel: echo\r\n"));
    recv_exact(fd, got, 5);
    assert_memory_equal(got, "first", 5);
    send_all(fd, "second", 6);
    recv_exact(fd, got, 6);
    assert_memory_equal(got, "second", 6);
    cshs_counters k;
    cshs_server_counters(srv, &k);
    assert_int_equal(k.upgrades, 1);
    assert_int_equal(k.tunnels, 1);
    assert_int_equal(atomic_load(&opened_calls), 1);
    /* our end after the client's: both sides closed cleanly */
    shutdown(fd, SHUT_WR);
    expect_eof(fd);
    wait_closed(1);
    assert_int_equal(atomic_load(&last_why), 0);
    cshs_server_counters(srv, &k);
    assert_int_equal(k.tunnels, 0);
    close(fd);

    /* close after a last write: it is sent, then the connection ends */
    fd = dial(port, 0);
    send_all(fd, upgrade_req, strlen(upgrade_req));
    assert_int_equal(recv_head(fd, head, sizeof head), 101);
    send_all(fd, "bye", 3);
    recv_exact(fd, got, 2);
    assert_memory_equal(got, "ok", 2);
    expect_eof(fd);
    wait_closed(2);
    assert_int_equal(atomic_load(&last_why), 0);
    close(fd);
    cshs_server_free(srv);
}

static void test_not_asked_is_426(void **state)
{
    (void)state;
    unsigned port = start(NULL);
    int fd = dial(port, 0);
    static const char plain[] = "GET /echo HTTP/1.1\r\nHost: a\r\n\r\n";
    static const char other[] = "GET /echo HTTP/1.1\r\nHost: a\r\n"
                                "Connection: upgrade\r\nUpgrade: websocket\r\n\r\n";
    char head[1024], body[64];
    /* RFC 9110 §15.5.22; the connection goes on as HTTP/1.1 */
    char want[16];
    snprintf(want, sizeof want, "%d", CSHW_E_UPGRADE_NOT_ASKED);
    send_all(fd, plain, strlen(plain));
    assert_int_equal(recv_head(fd, head, sizeof head), 426);
    assert_non_null(strstr(head, "Content-Length: 6\r\n"));
    recv_exact(fd, body, 6);
    assert_memory_equal(body, want, 6);
    send_all(fd, other, strlen(other));
    assert_int_equal(recv_head(fd, head, sizeof head), 426);
    recv_exact(fd, body, 6);
    assert_memory_equal(body, want, 6);
    cshs_counters k;
    cshs_server_counters(srv, &k);
    assert_int_equal(k.upgrades, 0);
    assert_int_equal(atomic_load(&opened_calls), 0);
    assert_int_equal(atomic_load(&closed_calls), 0);
    close(fd);
    cshs_server_free(srv);
}

/* ---- backpressure: a client that sends and does not read ---- */

#define FLOOD (48u << 20)

typedef struct flood {
    int fd;
    atomic_ullong sent;
} flood;

static unsigned char pattern(uint64_t i)
{
    return (unsigned char)(i % 251);
}

static void *flood_writer(void *arg)
{
    flood *f = arg;
    static unsigned char chunk[65536];
    uint64_t off = 0;
    while (off < FLOOD) {
        size_t n = sizeof chunk;
        if (n > FLOOD - off) n = FLOOD - off;
        for (size_t i = 0; i < n; i++) chunk[i] = pattern(off + i);
        ssize_t w = send(f->fd, chunk, n, MSG_NOSIGNAL);
        if (w <= 0) break;
        off += (uint64_t)w;
        atomic_store(&f->sent, off);
    }
    return NULL;
}

static void test_backpressure(void **state)
{
    (void)state;
    cshs_options o;
    cshs_options_init(&o);
    o.write_high_water = 256 * 1024;
    unsigned port = start(&o);
    flood f = {.fd = dial(port, 65536)};
    send_all(f.fd, upgrade_req, strlen(upgrade_req));
    char head[1024];
    assert_int_equal(recv_head(f.fd, head, sizeof head), 101);
    pthread_t th;
    pthread_create(&th, NULL, flood_writer, &f);
    /* nobody reads: the echo queue passes the mark, the tunnel pauses, and
     * the writer stops once the sockets' buffers are full */
    uint64_t last = 0;
    for (int still = 0; still < 20;) {
        usleep(20000);
        uint64_t now = atomic_load(&f.sent);
        still = now == last ? still + 1 : 0;
        last = now;
    }
    assert_true(last < FLOOD);
    /* the queue stayed within the mark and a read's worth */
    assert_true(atomic_load(&max_queued) <= o.write_high_water + 16384);
    /* reading now, every byte comes back in order */
    static char in[65536];
    uint64_t got = 0;
    while (got < FLOOD) {
        ssize_t r = recv(f.fd, in, sizeof in, 0);
        assert_true(r > 0);
        for (ssize_t i = 0; i < r; i++)
            if ((unsigned char)in[i] != pattern(got + (uint64_t)i))
                fail_msg("byte %llu", (unsigned long long)(got + (uint64_t)i));
        got += (uint64_t)r;
    }
    pthread_join(th, NULL);
    assert_true(atomic_load(&max_queued) <= o.write_high_water + 16384);
    shutdown(f.fd, SHUT_WR);
    expect_eof(f.fd);
    wait_closed(1);
    assert_int_equal(atomic_load(&last_why), 0);
    close(f.fd);
    cshs_server_free(srv);
}

static void test_idle_deadline(void **state)
{
    (void)state;
    cshs_options o;
    cshs_options_init(&o);
    o.tunnel_idle_timeout_ms = 300;
    o.sweep_interval_ms = 50;
    unsigned port = start(&o);
    int fd = dial(port, 0);
    send_all(fd, upgrade_req, strlen(upgrade_req));
    char head[1024], got[8];
    assert_int_equal(recv_head(fd, head, sizeof head), 101);
    send_all(fd, "ping", 4);
    recv_exact(fd, got, 4);
    /* then nothing either way: closed at the deadline */
    expect_eof(fd);
    wait_closed(1);
    assert_int_equal(atomic_load(&last_why), -ETIMEDOUT);
    close(fd);
    cshs_server_free(srv);
}

/* A tunnel opened by a handler that ran as a job, and a write made from
 * another thread through a watch on the tunnel's loop. */
static void test_send_deadline_despite_reads(void **state)
{
    (void)state;
    cshs_options o;
    cshs_options_init(&o);
    o.send_timeout_ms = 300;
    o.sweep_interval_ms = 20;
    unsigned port = start(&o);
    int fd = dial(port, 4096);
    const char req[] = "GET /flood HTTP/1.1\r\nHost: a\r\n"
                       "Connection: Upgrade\r\nUpgrade: echo\r\n\r\n";
    send_all(fd, req, strlen(req));
    char head[1024];
    assert_int_equal(recv_head(fd, head, sizeof head), 101);
    /* a byte every 20 ms, nothing read: the client's bytes keep coming,
     * its output never goes, and the send deadline ends it all the same */
    int i = 0;
    for (; i < 500 && atomic_load(&closed_calls) == 0; i++) {
        if (send(fd, "x", 1, MSG_NOSIGNAL) < 0) break;
        usleep(20000);
    }
    /* cut while the client still sent (10 s of it at most), not after */
    assert_true(i < 500);
    wait_closed(1);
    assert_int_equal(atomic_load(&last_why), -ETIMEDOUT);
    close(fd);
    cshs_server_stop(srv, 1000);
    cshs_server_free(srv);
}

static void test_job_and_push(void **state)
{
    (void)state;
    unsigned port = start(NULL);
    int fd = dial(port, 0);
    static const char job[] = "GET /job HTTP/1.1\r\nHost: a\r\n"
                              "Connection: Upgrade\r\nUpgrade: Echo/1\r\n\r\n";
    send_all(fd, job, strlen(job));
    char head[1024], got[16];
    assert_int_equal(recv_head(fd, head, sizeof head), 101);
    send_all(fd, "from a job", 10);
    recv_exact(fd, got, 10);
    assert_memory_equal(got, "from a job", 10);
    close(fd);
    wait_closed(1);

    push_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    fd = dial(port, 0);
    static const char push[] = "GET /push HTTP/1.1\r\nHost: a\r\n"
                               "Connection: Upgrade\r\nUpgrade: echo\r\n\r\n";
    send_all(fd, push, strlen(push));
    assert_int_equal(recv_head(fd, head, sizeof head), 101);
    recv_exact(fd, got, 6);
    assert_memory_equal(got, "hello\n", 6);
    uint64_t one = 1;
    assert_int_equal(write(push_fd, &one, sizeof one), (ssize_t)sizeof one);
    recv_exact(fd, got, 7);
    assert_memory_equal(got, "pushed\n", 7);
    /* a client that resets: the tunnel ends with the socket's error or
     * its end, once */
    struct linger lg = {1, 0};
    setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
    close(fd);
    wait_closed(2);
    assert_int_equal(push_fd, -1);
    cshs_server_free(srv);
}

static void test_stop_ends_tunnels(void **state)
{
    (void)state;
    unsigned port = start(NULL);
    int fd = dial(port, 0);
    send_all(fd, upgrade_req, strlen(upgrade_req));
    char head[1024];
    assert_int_equal(recv_head(fd, head, sizeof head), 101);
    send_all(fd, "x", 1);
    recv_exact(fd, head, 1);
    /* a graceful stop does not wait for a tunnel: it ends it at once */
    assert_int_equal(cshs_server_stop(srv, 5000), 0);
    assert_int_equal(atomic_load(&closed_calls), 1);
    assert_int_equal(atomic_load(&last_why), -ECANCELED);
    expect_eof(fd);
    close(fd);
    cshs_server_free(srv);
}

/* ---- WebSockets: the client's side ---- */

static const char ws_req[] = "GET %s HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\n"
                             "Upgrade: websocket\r\nSec-WebSocket-Version: 13\r\n"
                             "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n";

static int ws_open(unsigned port, const char *path)
{
    int fd = dial(port, 0);
    char req[512], head[1024];
    snprintf(req, sizeof req, ws_req, path);
    send_all(fd, req, strlen(req));
    assert_int_equal(recv_head(fd, head, sizeof head), 101);
    /* RFC 6455 §1.3's example key and its answer */
    assert_non_null(strstr(head, "\r\nSec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n"));
    return fd;
}

/* A masked frame from the client (§5.3), of up to 125 bytes. */
static void ws_send(int fd, int op, const char *p, size_t n)
{
    unsigned char f[2 + 4 + 125] = {
        (unsigned char)(0x80 | op), (unsigned char)(0x80 | n), 1, 2, 3, 4};
    for (size_t i = 0; i < n; i++) f[6 + i] = (unsigned char)(p[i] ^ f[2 + (i & 3)]);
    send_all(fd, f, 6 + n);
}

/* A frame from the server, of up to 125 bytes: its first byte, the
 * payload into p (NUL-terminated), its length. */
static int ws_recv(int fd, char *p, size_t *n)
{
    unsigned char h[2];
    recv_exact(fd, (char *)h, 2);
    assert_int_equal(h[1] & 0x80, 0); /* a server does not mask */
    *n = h[1] & 0x7F;
    assert_true(*n < 126);
    recv_exact(fd, p, *n);
    p[*n] = 0;
    return h[0];
}

static void wait_ws_closed(int n)
{
    for (int i = 0; i < 10000 && atomic_load(&ws_closed_calls) < n; i++) usleep(1000);
    assert_int_equal(atomic_load(&ws_closed_calls), n);
}

/* The server ended the socket: its end of input, closed() once with
 * `code`, then the server goes. */
static void ws_ended(int fd, int code)
{
    expect_eof(fd);
    close(fd);
    wait_ws_closed(1);
    assert_int_equal(atomic_load(&ws_last_code), code);
    cshs_server_stop(srv, 1000);
    cshs_server_free(srv);
}

static void test_ws_post_from_threads(void **state)
{
    (void)state;
    unsigned port = start(NULL);
    int fd = ws_open(port, "/ws");
    char p[128];
    size_t n;
    ws_send(fd, 0x2, "\x00\x01", 2); /* binary: echoed on the loop */
    assert_int_equal(ws_recv(fd, p, &n), 0x82);
    assert_true(n == 2 && memcmp(p, "\x00\x01", 2) == 0);
    ws_send(fd, 0x1, "work", 4); /* answered from another thread */
    assert_int_equal(ws_recv(fd, p, &n), 0x81);
    assert_string_equal(p, "done");
    ws_send(fd, 0x1, "keep", 4);
    assert_int_equal(ws_recv(fd, p, &n), 0x81);
    assert_string_equal(p, "kept");
    ws_send(fd, 0x1, "close", 5); /* the thread starts the closing handshake */
    assert_int_equal(ws_recv(fd, p, &n), 0x88);
    assert_true(n == 5 && (unsigned char)p[0] == 4000 >> 8 && (unsigned char)p[1] == (4000 & 255));
    assert_memory_equal(p + 2, "bye", 3);
    ws_send(fd, 0x8, p, 2); /* our close: the server ends the connection */
    expect_eof(fd);
    close(fd);
    wait_ws_closed(1);
    assert_int_equal(atomic_load(&ws_last_code), 4000);
    /* a post after the end: refused, the memory still the holder's */
    cshw_ws *ws = atomic_exchange(&kept, NULL);
    assert_non_null(ws);
    assert_int_equal(cshs_websocket_post(ws, CSHW_WS_TEXT, "late", 4), -EPIPE);
    assert_int_equal(cshs_websocket_post_close(ws, 1000, NULL), -EPIPE);
    cshw_ws_release(ws);
    /* the access log's line came at the end, with the frames both ways */
    for (int i = 0; i < 1000 && atomic_load(&logged_101) < 1; i++) usleep(1000);
    assert_int_equal(atomic_load(&logged_101), 1);
    assert_true(atomic_load(&logged_in) > sizeof ws_req + 8 * 4);
    assert_true(atomic_load(&logged_out) > 129 + 4 * 4);
    cshs_server_stop(srv, 1000);
    cshs_server_free(srv);
}

static void test_ws_ping_and_pong_deadline(void **state)
{
    (void)state;
    cshs_options o;
    cshs_options_init(&o);
    o.sweep_interval_ms = 10; /* the loop runs the session's timers within it */
    unsigned port = start(&o);
    int fd = ws_open(port, "/ws-live");
    char p[128];
    size_t n;
    /* silence: a ping (§5.5.2); answered, another after the next silence */
    assert_int_equal(ws_recv(fd, p, &n), 0x89);
    ws_send(fd, 0xA, p, n);
    assert_int_equal(ws_recv(fd, p, &n), 0x89);
    /* not answered: the end, without a close frame (a dead peer) */
    ws_ended(fd, CSHW_WS_ABNORMAL);
}

static void test_ws_close_timeout(void **state)
{
    (void)state;
    cshs_options o;
    cshs_options_init(&o);
    o.sweep_interval_ms = 10;
    unsigned port = start(&o);
    int fd = ws_open(port, "/ws-quiet");
    char p[128];
    size_t n;
    /* the application closes from its message callback; the peer never
     * answers: close_timeout_ms later the connection ends (RFC 6455
     * §7.1.1), pings off or not */
    ws_send(fd, 0x1, "quit", 4);
    assert_int_equal(ws_recv(fd, p, &n), 0x88);
    assert_true(n == 6 && (unsigned char)p[0] == 4001 >> 8 && memcmp(p + 2, "quit", 4) == 0);
    ws_ended(fd, CSHW_WS_ABNORMAL);
}

static void test_ws_stop_says_going_away(void **state)
{
    (void)state;
    unsigned port = start(NULL);
    int fd = ws_open(port, "/ws");
    char p[128];
    size_t n;
    ws_send(fd, 0x2, "x", 1);
    assert_int_equal(ws_recv(fd, p, &n), 0x82);
    /* a graceful stop: a close frame, 1001 "going away" (RFC 6455
     * §7.4.1), then the end, without waiting for our answer */
    assert_int_equal(cshs_server_stop(srv, 5000), 0);
    assert_int_equal(ws_recv(fd, p, &n), 0x88);
    assert_true(n >= 2 && (unsigned char)p[0] == 1001 >> 8 && (unsigned char)p[1] == (1001 & 255));
    expect_eof(fd);
    close(fd);
    wait_ws_closed(1);
    assert_int_equal(atomic_load(&ws_last_code), CSHW_WS_GOING_AWAY);
    cshs_server_free(srv);
}

static void test_ws_refusals(void **state)
{
    (void)state;
    unsigned port = start(NULL);
    char head[2048];
    /* not an upgrade: 426 naming the protocol (RFC 9110 §15.5.22) */
    int fd = dial(port, 0);
    const char plain[] = "GET /ws HTTP/1.1\r\nHost: a\r\n\r\n";
    send_all(fd, plain, strlen(plain));
    assert_int_equal(recv_head(fd, head, sizeof head), 426);
    assert_non_null(strstr(head, "\r\nUpgrade: websocket\r\n"));
    close(fd);
    /* another version: 426 with the one we speak (RFC 6455 §4.4) */
    fd = dial(port, 0);
    const char v8[] = "GET /ws HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\n"
                      "Upgrade: websocket\r\nSec-WebSocket-Version: 8\r\n"
                      "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n";
    send_all(fd, v8, strlen(v8));
    assert_int_equal(recv_head(fd, head, sizeof head), 426);
    assert_non_null(strstr(head, "\r\nSec-WebSocket-Version: 13\r\n"));
    assert_null(strstr(head, "Sec-WebSocket-Accept"));
    close(fd);
    /* a page of another site (§10.2): 403 */
    fd = dial(port, 0);
    const char other[] = "GET /ws HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\n"
                         "Upgrade: websocket\r\nSec-WebSocket-Version: 13\r\n"
                         "Origin: http://evil.example\r\n"
                         "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n";
    send_all(fd, other, strlen(other));
    assert_int_equal(recv_head(fd, head, sizeof head), 403);
    close(fd);
    cshs_server_stop(srv, 1000);
    cshs_server_free(srv);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_echo_both_ways),
        cmocka_unit_test(test_not_asked_is_426),
        cmocka_unit_test(test_backpressure),
        cmocka_unit_test(test_idle_deadline),
        cmocka_unit_test(test_job_and_push),
        cmocka_unit_test(test_stop_ends_tunnels),
        cmocka_unit_test(test_send_deadline_despite_reads),
        cmocka_unit_test(test_ws_post_from_threads),
        cmocka_unit_test(test_ws_ping_and_pong_deadline),
        cmocka_unit_test(test_ws_refusals),
        cmocka_unit_test(test_ws_stop_says_going_away),
        cmocka_unit_test(test_ws_close_timeout),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
