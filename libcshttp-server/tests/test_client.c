/* cshs_client against a scripted origin: a real socket server in this
 * process (plain or TLS), whose behaviour is chosen per connection. The
 * pool's rules (MRU order, burst opens, FIFO waiters and their deadline,
 * backoff after a failed connect, the sweep of connections the origin
 * closed, max lifetime, the retry rule), and responses: keep-alive shorter
 * at the origin, chunked and close-delimited bodies, 1 MiB both ways, 1xx
 * skipped, an origin answering twice, malformed answers, timeouts, HTTPS
 * verification. Each of these tests makes its requests through send_via
 * and runs twice: by cshs_client_send, and by cshs_client_send_async on
 * an engine loop. No pass/fail depends on how fast the machine is: waits are
 * for conditions, with generous bounds (a connection given back kept on its
 * loop is tried until two waiters queue within the rule's 2 ms, and the
 * check is skipped on a machine that never does). */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <stdatomic.h>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <cshttp/body.h>
#include <cshttp/parser.h>
#include <cshttp/server.h>
#include <cshttp/web/arena.h>
#include <cshttp/web/context.h>
#include <cshttp/web/request.h>
#include <cshttp/web/response.h>

/* ---- time ---- */

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* ---- the scripted origin ---- */

enum {
    M_ECHO = 0,      /* answers every request: 200, X-Conn, the body echoed (or a text) */
    M_CLOSE_SECOND,  /* answers the first request, reads the second and closes unanswered */
    M_CLOSE_FIRST,   /* reads the first request and closes unanswered */
    M_TWICE,         /* answers the first request twice, in one send */
    M_TWICE_APART,   /* answers the first request, and again once the test releases it */
    M_TLS_WAITS,     /* TLS: the handshake waits until the test releases it; then M_ECHO */
    M_1XX,           /* 100 and 103 before the answer */
    M_101,           /* 101 Switching Protocols */
    M_CHUNKED,       /* the answer chunked, with a trailer */
    M_ECHO_CHUNKED,  /* the request body echoed in chunks */
    M_UNTIL_CLOSE,   /* an answer delimited by the end of the connection */
    M_MALFORMED,     /* two Content-Length values */
    M_SILENT,        /* reads requests, never answers */
    M_STALL_BODY,    /* the head and half the body, then nothing */
    M_FIN_ON_FLAG,   /* answers, then closes once the test sets fin_now */
    M_CONN_CLOSE,    /* answers with Connection: close, then closes */
    M_CLOSE_AT_HEAD, /* reads a request head and closes with the body unread (a reset) */
    M_ECHO_HEAD,     /* answers with the request's head as its body */
    M_EARLY_CLOSE,   /* reads a request head, answers 413 at once and closes (a reset) */
    M_EARLY_HOLD,    /* reads a request head, answers 413 at once, then reads nothing more */
    M_ECHO_FLAGGED,  /* M_ECHO; while idle, sends a stray answer when the test sets stray_now,
                        closes when it sets fin_now (each taken by one connection) */
    M_TWO_PARTS,     /* a Content-Length body: the head and TWO_FIRST in one send, TWO_REST
                        once the test releases it (origin_release) */
    M_TWO_CHUNKS,    /* the same chunked: one chunk of both parts, cut after TWO_FIRST */
    M_READ_LATER,    /* M_ECHO, each request read only once the test releases it
                        (origin_release): the client's writes meet a full socket */
};

#define STRAY_ANSWER "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nstray"

#define EARLY_BODY "too large: no more than a head, please"

/* M_TWO_PARTS and M_TWO_CHUNKS: a body of 25 (0x19) bytes in two sends */
#define TWO_FIRST "first half, "
#define TWO_REST "then the rest"

#define MAX_CONNS 512

typedef struct origin {
    int lfd;
    unsigned port;
    int tls;
    SSL_CTX *ctx;
    pthread_t acceptor;
    pthread_t conn_threads[MAX_CONNS];
    atomic_int nconns;
    atomic_int requests;
    atomic_int stop;
    atomic_int fin_now;
    atomic_int stray_now;
    atomic_int ended;  /* connections whose peer closed (or that it closed) */
    atomic_int sent_again; /* M_TWICE_APART: second answers sent */
    int modes[16];     /* per connection index; M_ECHO past 16 */
    int hold;          /* answers wait until this many requests arrived (burst test; mu) */
    int idle_close_ms; /* closes a connection idle this long (its keep-alive timeout) */
    int stress;        /* every 7th answer says Connection: close */
    int released;      /* M_TWO_*: rests the test allowed and no connection sent yet (mu) */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int64_t first_accept_ms;
} origin;

typedef struct peer {
    origin *o;
    int fd;
    SSL *ssl;
    int index;
} peer;

static ssize_t peer_read(peer *p, void *buf, size_t n)
{
    if (p->ssl) {
        size_t got = 0;
        if (SSL_read_ex(p->ssl, buf, n, &got) == 1) return (ssize_t)got;
        ERR_clear_error();
        return 0;
    }
    ssize_t r;
    do r = recv(p->fd, buf, n, 0);
    while (r < 0 && errno == EINTR);
    return r < 0 ? 0 : r;
}

static int peer_write(peer *p, const void *buf, size_t n)
{
    if (p->ssl) {
        size_t w = 0;
        int r = SSL_write_ex(p->ssl, buf, n, &w);
        ERR_clear_error();
        return r == 1 ? 0 : -1;
    }
    const char *b = buf;
    while (n) {
        ssize_t w = send(p->fd, b, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        b += w;
        n -= (size_t)w;
    }
    return 0;
}

/* A request read whole: its head parsed and its body decoded. */
typedef struct req {
    char *buf; /* the head, then the body's raw bytes */
    size_t len, cap;
    csh_parser parser;
    csh_header fields[64];
    char *body;
    size_t body_len;
} req;

static void req_free(req *r)
{
    free(r->buf);
    free(r->body);
    memset(r, 0, sizeof *r);
}

static int req_more(peer *p, req *r)
{
    if (r->cap - r->len < 65536) {
        r->cap = r->cap ? r->cap * 2 : 131072;
        r->buf = realloc(r->buf, r->cap);
    }
    ssize_t n = peer_read(p, r->buf + r->len, r->cap - r->len);
    if (n <= 0) return -1;
    r->len += (size_t)n;
    return 0;
}

/* Reads one request from `p`, keeping what follows it in `r` for the next
 * call (the client never pipelines: nothing follows). 0, or -1 at EOF. */
static int read_request(peer *p, req *r)
{
    free(r->body);
    r->body = NULL;
    r->body_len = 0;
    r->len = 0;
    csh_parser_init(&r->parser, CSH_REQUEST, r->fields, 64, NULL, 0);
    for (;;) {
        int e = r->len ? csh_parser_execute(&r->parser, r->buf, r->len) : CSH_INCOMPLETE;
        if (e == CSH_OK) break;
        if (e < 0) return -1;
        if (req_more(p, r) < 0) return -1;
    }
    size_t pos = r->parser.msg.head_length;
    csh_body b;
    csh_body_init(&b, &r->parser.msg, NULL, 0, NULL, 0);
    size_t bcap = 1024;
    r->body = malloc(bcap);
    for (;;) {
        size_t used = 0;
        csh_span d = {0, 0};
        int e = csh_body_read(&b, r->buf + pos, r->len - pos, &used, &d);
        if (e == CSH_DATA) {
            while (r->body_len + d.len > bcap) bcap *= 2;
            r->body = realloc(r->body, bcap);
            memcpy(r->body + r->body_len, r->buf + pos + d.off, d.len);
            r->body_len += d.len;
            pos += used;
            continue;
        }
        if (e == CSH_OK) break;
        if (e < 0) return -1;
        /* keep the unconsumed bytes at the front of the region after the head */
        pos += used;
        memmove(r->buf + r->parser.msg.head_length, r->buf + pos, r->len - pos);
        r->len = r->parser.msg.head_length + (r->len - pos);
        pos = r->parser.msg.head_length;
        if (req_more(p, r) < 0) return -1;
    }
    atomic_fetch_add(&p->o->requests, 1);
    pthread_mutex_lock(&p->o->mu);
    pthread_cond_broadcast(&p->o->cv);
    pthread_mutex_unlock(&p->o->mu);
    return 0;
}

static int send_str(peer *p, const char *s)
{
    return peer_write(p, s, strlen(s));
}

/* 200 with X-Conn and a body: the request's body echoed, or a text. */
static int answer(peer *p, req *r, int count, int close_after)
{
    char head[256];
    char text[96];
    const char *body = r->body;
    size_t blen = r->body_len;
    if (!blen) {
        snprintf(text, sizeof text, "conn %d req %d", p->index, count);
        body = text;
        blen = strlen(text);
    }
    int head_only = r->parser.msg.method == CSH_METHOD_HEAD;
    snprintf(head, sizeof head,
             "HTTP/1.1 200 OK\r\nX-Conn: %d\r\nX-Req: %d\r\n%sContent-Length: %zu\r\n\r\n",
             p->index, count, close_after ? "Connection: close\r\n" : "", blen);
    if (send_str(p, head) < 0) return -1;
    return head_only ? 0 : peer_write(p, body, blen);
}

static void wait_hold(origin *o)
{
    int64_t end = mono_ms() + 10000;
    pthread_mutex_lock(&o->mu);
    while (o->hold && atomic_load(&o->requests) < o->hold && mono_ms() < end) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 20000000;
        if (ts.tv_nsec >= 1000000000) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000;
        }
        pthread_cond_timedwait(&o->cv, &o->mu, &ts);
    }
    pthread_mutex_unlock(&o->mu);
}

/* M_TWO_*: waits until the test lets one rest go (1), or the origin
 * stops (0). The wait is for the test's signal; the 20 ms bound only lets
 * a stopping origin see `stop`. */
static int wait_release(origin *o)
{
    pthread_mutex_lock(&o->mu);
    while (o->released == 0 && !atomic_load(&o->stop)) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 20000000;
        if (ts.tv_nsec >= 1000000000) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000;
        }
        pthread_cond_timedwait(&o->cv, &o->mu, &ts);
    }
    int go = o->released > 0;
    if (go) o->released--;
    pthread_mutex_unlock(&o->mu);
    return go;
}

/* Lets one M_TWO_* connection send the rest of its body. */
static void origin_release(origin *o)
{
    pthread_mutex_lock(&o->mu);
    o->released++;
    pthread_cond_broadcast(&o->cv);
    pthread_mutex_unlock(&o->mu);
}

static void *conn_main(void *arg)
{
    peer *p = arg;
    origin *o = p->o;
    int mode = p->index < 16 ? o->modes[p->index] : M_ECHO;
    if (o->idle_close_ms) {
        struct timeval tv = {o->idle_close_ms / 1000, (o->idle_close_ms % 1000) * 1000};
        setsockopt(p->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    }
    if (o->tls && mode == M_TLS_WAITS && !wait_release(o)) goto out;
    if (o->tls) {
        p->ssl = SSL_new(o->ctx);
        SSL_set_fd(p->ssl, p->fd);
        if (SSL_accept(p->ssl) != 1) {
            ERR_clear_error();
            goto out;
        }
    }
    req r;
    memset(&r, 0, sizeof r);
    if (mode == M_CLOSE_AT_HEAD || mode == M_EARLY_CLOSE || mode == M_EARLY_HOLD) {
        char head[8192];
        size_t n = 0;
        while (n < sizeof head - 1) {
            ssize_t k = peer_read(p, head + n, sizeof head - 1 - n);
            if (k <= 0) break;
            n += (size_t)k;
            head[n] = 0;
            if (strstr(head, "\r\n\r\n")) break;
        }
        if (mode != M_CLOSE_AT_HEAD) {
            /* the answer leaves at once: Nagle would hold it behind the
             * unacknowledged session tickets (TLS), and the close below,
             * with input unread, resets and drops what was not sent */
            int one = 1;
            setsockopt(p->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
            char a[160];
            snprintf(a, sizeof a,
                     "HTTP/1.1 413 Content Too Large\r\n%sContent-Length: %zu\r\n\r\n%s",
                     mode == M_EARLY_CLOSE ? "Connection: close\r\n" : "", strlen(EARLY_BODY),
                     EARLY_BODY);
            send_str(p, a);
            atomic_fetch_add(&o->requests, 1);
            while (mode == M_EARLY_HOLD && !atomic_load(&o->stop)) sleep_ms(2);
        }
        if (p->ssl) { /* no close_notify: the socket just goes */
            SSL_free(p->ssl);
            p->ssl = NULL;
        }
        goto out;
    }
    for (int count = 0;; count++) {
        if (mode == M_ECHO_FLAGGED) { /* idle (these tests pipeline nothing) */
            int fin = 0;
            for (;;) {
                struct pollfd pf = {p->fd, POLLIN, 0};
                if (poll(&pf, 1, 2) != 0 || atomic_load(&o->stop)) break;
                if (atomic_exchange(&o->stray_now, 0)) send_str(p, STRAY_ANSWER);
                if ((fin = atomic_exchange(&o->fin_now, 0)) != 0) break;
            }
            if (fin) break;
        }
        if (mode == M_READ_LATER && !wait_release(o)) break;
        if (read_request(p, &r) < 0) break;
        wait_hold(o);
        if (mode == M_CLOSE_FIRST || (mode == M_CLOSE_SECOND && count == 1)) break;
        if (mode == M_SILENT) continue;
        if (mode == M_TWICE) {
            const char *two = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
                              "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
            send_str(p, two);
            continue;
        }
        if (mode == M_TWICE_APART) {
            if (send_str(p, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok") < 0) break;
            if (!wait_release(o)) break;
            if (send_str(p, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nno") < 0) break;
            atomic_fetch_add(&o->sent_again, 1);
            continue;
        }
        if (mode == M_1XX) {
            send_str(p, "HTTP/1.1 100 Continue\r\n\r\n"
                        "HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\n"
                        "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nfinal");
            continue;
        }
        if (mode == M_ECHO_HEAD) {
            char h[128];
            snprintf(h, sizeof h, "HTTP/1.1 200 OK\r\nContent-Length: %zu\r\n\r\n",
                     r.parser.msg.head_length);
            send_str(p, h);
            peer_write(p, r.buf, r.parser.msg.head_length);
            continue;
        }
        if (mode == M_101) {
            send_str(p, "HTTP/1.1 101 Switching Protocols\r\nConnection: upgrade\r\n"
                        "Upgrade: websocket\r\n\r\n");
            continue;
        }
        if (mode == M_CHUNKED) {
            send_str(p, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                        "5\r\nhello\r\n1;ext=1\r\n,\r\n6\r\n world\r\n0\r\nX-Sum: 1\r\n\r\n");
            continue;
        }
        if (mode == M_ECHO_CHUNKED) {
            send_str(p, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
            for (size_t off = 0; off < r.body_len;) {
                size_t n = r.body_len - off < 3001 ? r.body_len - off : 3001;
                char line[32];
                snprintf(line, sizeof line, "%zx\r\n", n);
                send_str(p, line);
                peer_write(p, r.body + off, n);
                send_str(p, "\r\n");
                off += n;
            }
            send_str(p, "0\r\n\r\n");
            continue;
        }
        if (mode == M_UNTIL_CLOSE) {
            send_str(p, "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nuntil the end");
            break;
        }
        if (mode == M_MALFORMED) {
            send_str(p, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nok");
            continue;
        }
        if (mode == M_STALL_BODY) {
            send_str(p, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhalf.");
            continue;
        }
        if (mode == M_TWO_PARTS || mode == M_TWO_CHUNKS) {
            /* the head and the first part in one send (one TLS record):
             * the client that has the head has the first part too */
            if (send_str(p, mode == M_TWO_PARTS
                                ? "HTTP/1.1 200 OK\r\nContent-Length: 25\r\n\r\n" TWO_FIRST
                                : "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                                  "19\r\n" TWO_FIRST) < 0)
                break;
            if (!wait_release(o)) break; /* stopping: the client has gone */
            if (send_str(p, mode == M_TWO_PARTS ? TWO_REST : TWO_REST "\r\n0\r\n\r\n") < 0) break;
            continue;
        }
        int close_after = mode == M_CONN_CLOSE || (o->stress && atomic_load(&o->requests) % 7 == 0);
        if (answer(p, &r, count, close_after) < 0) break;
        if (close_after) break;
        if (mode == M_FIN_ON_FLAG) {
            while (!atomic_load(&o->fin_now) && !atomic_load(&o->stop)) sleep_ms(2);
            break;
        }
    }
    req_free(&r);
out:
    if (p->ssl) {
        SSL_shutdown(p->ssl);
        ERR_clear_error();
        SSL_free(p->ssl);
    }
    close(p->fd);
    atomic_fetch_add(&o->ended, 1);
    free(p);
    return NULL;
}

static void *accept_main(void *arg)
{
    origin *o = arg;
    for (;;) {
        int fd = accept(o->lfd, NULL, NULL);
        if (fd < 0) {
            if (atomic_load(&o->stop)) break;
            if (errno == EINTR || errno == ECONNABORTED) continue;
            if (errno == EMFILE) { /* accept() takes its descriptor before it
                                    * waits: a test's tight limit, for now */
                sleep_ms(1);
                continue;
            }
            break;
        }
        if (atomic_load(&o->stop)) {
            close(fd);
            break;
        }
        int i = atomic_load(&o->nconns);
        if (i >= MAX_CONNS) {
            close(fd);
            continue;
        }
        if (i == 0) o->first_accept_ms = mono_ms();
        peer *p = calloc(1, sizeof *p);
        p->o = o;
        p->fd = fd;
        p->index = i;
        /* counted before it can answer: a test that saw the answer sees the
         * count (origin_free joins this thread before the connections') */
        atomic_store(&o->nconns, i + 1);
        pthread_create(&o->conn_threads[i], NULL, conn_main, p);
    }
    return NULL;
}

static int listen_on(unsigned port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(fd, (struct sockaddr *)&a, sizeof a) < 0 || listen(fd, 128) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static unsigned port_of(int fd)
{
    struct sockaddr_in a;
    socklen_t l = sizeof a;
    getsockname(fd, (struct sockaddr *)&a, &l);
    return ntohs(a.sin_port);
}

/* An origin on 127.0.0.1 (port 0: ephemeral). */
static origin *origin_new_on(unsigned port, SSL_CTX *ctx)
{
    origin *o = calloc(1, sizeof *o);
    o->lfd = listen_on(port);
    assert_true(o->lfd >= 0);
    o->port = port_of(o->lfd);
    o->tls = ctx != NULL;
    o->ctx = ctx;
    pthread_mutex_init(&o->mu, NULL);
    pthread_cond_init(&o->cv, NULL);
    return o;
}

static void origin_start(origin *o)
{
    pthread_create(&o->acceptor, NULL, accept_main, o);
}

static origin *origin_new(void)
{
    origin *o = origin_new_on(0, NULL);
    origin_start(o);
    return o;
}

static void origin_free(origin *o)
{
    atomic_store(&o->stop, 1);
    shutdown(o->lfd, SHUT_RDWR);
    pthread_join(o->acceptor, NULL);
    close(o->lfd);
    int n = atomic_load(&o->nconns);
    for (int i = 0; i < n; i++) pthread_join(o->conn_threads[i], NULL);
    pthread_mutex_destroy(&o->mu);
    pthread_cond_destroy(&o->cv);
    free(o);
}

static void origin_url(const origin *o, char *out, size_t n)
{
    snprintf(out, n, "%s://127.0.0.1:%u", o->tls ? "https" : "http", o->port);
}

/* A port nothing listens on. */
static unsigned dead_port(void)
{
    int fd = listen_on(0);
    unsigned port = port_of(fd);
    close(fd);
    return port;
}

/* ---- client helpers ---- */

static cshs_client *client_with(unsigned pool_size, int tick_thread)
{
    cshs_client_options o;
    cshs_client_options_init(&o);
    o.pool_size = pool_size;
    o.tick_thread = tick_thread;
    cshs_client *c = cshs_client_new(&o);
    assert_non_null(c);
    return c;
}

static cshs_client_pool_stats stats_of(cshs_client *c)
{
    cshs_client_pool_stats s[4];
    memset(s, 0, sizeof s);
    ssize_t n = cshs_client_stats(c, s, 4);
    assert_true(n >= 0 && n <= 1);
    return s[0];
}

/* X-Conn of a response: which origin connection answered. */
static int conn_of(cshs_call *call)
{
    const char *v;
    size_t n;
    if (!cshs_call_header(call, "x-conn", &v, &n)) return -1;
    return atoi(v);
}

/* Reads fd until its end (or cap - 1 bytes), NUL-terminated: the count. */
static size_t recv_all(int fd, char *buf, size_t cap)
{
    size_t n = 0;
    ssize_t k;
    while (n < cap - 1 && (k = recv(fd, buf + n, cap - 1 - n, 0)) > 0) n += (size_t)k;
    buf[n] = 0;
    return n;
}

/* ---- the API a test's requests go through ----
 *
 * Most tests run twice: their requests made by cshs_client_send (the
 * calling thread waits), then by cshs_client_send_async on an engine
 * loop (the thread only waits for done), with the same assertions.
 * send_via is the one place that chooses; a test's setup sets api_mode. */

enum { API_BLOCKING, API_REACTOR };
static int api_mode = API_BLOCKING;

/* The loop for cshs_client_send_async: a server of one loop whose handler
 * defers the one request it gets and publishes the loop. The request
 * stays deferred while clients use the loop, and is answered when it ends.
 * client.h: a client whose calls waited on a loop is freed only once that
 * server has stopped, so the loop ends when a client that used it is
 * freed (client_free), and the next request starts another. A client
 * that used an ended loop may only be freed: its connections were
 * registered with that loop (stale). */
#define LOOP_USERS 8

static struct {
    pthread_mutex_t start; /* held by the thread that looks for the loop, or starts it */
    pthread_mutex_t mu;    /* all below (the handler publishes under it) */
    pthread_cond_t cv;
    cshs_server *srv;
    int fd; /* the deferred request's connection */
    int handled;
    cshs_deferred *d;
    cshs_reactor *rx;
    cshs_client *users[LOOP_USERS]; /* clients whose calls used this loop */
    int nusers;
    cshs_client *stale[LOOP_USERS]; /* live clients that used an ended loop */
    int nstale;
} loop_fx = {.start = PTHREAD_MUTEX_INITIALIZER,
             .mu = PTHREAD_MUTEX_INITIALIZER,
             .cv = PTHREAD_COND_INITIALIZER,
             .fd = -1};

static void loop_fx_handler(cshw_context *ctx)
{
    cshs_deferred *d = cshs_defer(ctx);
    if (!d) cshw_response_puts(cshw_context_response(ctx), "not deferred");
    pthread_mutex_lock(&loop_fx.mu);
    loop_fx.d = d;
    loop_fx.rx = d ? cshs_deferred_reactor(d) : NULL;
    loop_fx.handled = 1;
    pthread_cond_broadcast(&loop_fx.cv);
    pthread_mutex_unlock(&loop_fx.mu);
}

static void loop_fx_answer(cshw_context *ctx, void *arg)
{
    (void)arg;
    cshw_response_puts(cshw_context_response(ctx), "loop released");
}

static int loop_fx_index(cshs_client *const *list, int n, const cshs_client *c)
{
    for (int i = 0; i < n; i++)
        if (list[i] == c) return i;
    return -1;
}

/* Starts the loop: 0, or -1 said on stderr (no cmocka assertion: the
 * tests' own threads get here too). loop_fx.start and loop_fx.mu held;
 * the wait for the handler lets go of mu, not of start. */
static int loop_fx_begin(void)
{
    cshs_options so;
    cshs_options_init(&so);
    so.port = 0;
    so.loops = 1;
    cshs_server *srv = cshs_server_new(&so, loop_fx_handler, NULL);
    if (!srv || cshs_server_start(srv) != 0) {
        fprintf(stderr, "the loop's server did not start\n");
        cshs_server_free(srv);
        return -1;
    }
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)cshs_server_port(srv, 0));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    struct timeval tv = {20, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    static const char rq[] = "GET /loop HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0 ||
        send(fd, rq, sizeof rq - 1, MSG_NOSIGNAL) != (ssize_t)(sizeof rq - 1)) {
        fprintf(stderr, "the loop's request was not sent: %s\n", strerror(errno));
        close(fd);
        cshs_server_free(srv);
        return -1;
    }
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 20;
    while (!loop_fx.handled)
        if (pthread_cond_timedwait(&loop_fx.cv, &loop_fx.mu, &until) == ETIMEDOUT) break;
    if (!loop_fx.rx) {
        fprintf(stderr, "the loop's handler %s\n", loop_fx.handled ? "did not defer" : "never ran");
        close(fd);
        cshs_server_free(srv);
        loop_fx.handled = 0;
        return -1;
    }
    loop_fx.srv = srv;
    loop_fx.fd = fd;
    return 0;
}

/* The loop for c's request, started when none runs; NULL (said on
 * stderr) when it cannot be had. */
static cshs_reactor *loop_fx_for(cshs_client *c)
{
    cshs_reactor *rx = NULL;
    pthread_mutex_lock(&loop_fx.start);
    pthread_mutex_lock(&loop_fx.mu);
    if (loop_fx_index(loop_fx.stale, loop_fx.nstale, c) >= 0) {
        fprintf(stderr, "a client used again after its loop ended\n");
    } else if (loop_fx.srv || loop_fx_begin() == 0) {
        if (loop_fx_index(loop_fx.users, loop_fx.nusers, c) < 0) {
            if (loop_fx.nusers < LOOP_USERS)
                loop_fx.users[loop_fx.nusers++] = c;
            else
                fprintf(stderr, "more than %d clients on the loop\n", LOOP_USERS);
        }
        if (loop_fx_index(loop_fx.users, loop_fx.nusers, c) >= 0) rx = loop_fx.rx;
    }
    pthread_mutex_unlock(&loop_fx.mu);
    pthread_mutex_unlock(&loop_fx.start);
    return rx;
}

/* Ends the loop when `freed` used it (NULL: in any case): the deferred
 * request answered, its answer read, the server freed. The other clients
 * that used it become stale. 0, or -1 said on stderr. */
static int loop_fx_end(cshs_client *freed)
{
    pthread_mutex_lock(&loop_fx.mu);
    cshs_server *srv = loop_fx.srv;
    if (!srv || (freed && loop_fx_index(loop_fx.users, loop_fx.nusers, freed) < 0)) {
        pthread_mutex_unlock(&loop_fx.mu);
        return 0;
    }
    for (int i = 0; i < loop_fx.nusers; i++)
        if (loop_fx.users[i] != freed && loop_fx.nstale < LOOP_USERS)
            loop_fx.stale[loop_fx.nstale++] = loop_fx.users[i];
    cshs_deferred *d = loop_fx.d;
    int fd = loop_fx.fd;
    loop_fx.srv = NULL;
    loop_fx.fd = -1;
    loop_fx.handled = 0;
    loop_fx.d = NULL;
    loop_fx.rx = NULL;
    loop_fx.nusers = 0;
    pthread_mutex_unlock(&loop_fx.mu);
    cshs_deferred_resume(d, loop_fx_answer, NULL);
    char buf[512];
    recv_all(fd, buf, sizeof buf);
    close(fd);
    cshs_server_free(srv);
    if (strncmp(buf, "HTTP/1.1 200", 12) != 0 || !strstr(buf, "\r\n\r\nloop released")) {
        fprintf(stderr, "the loop's request ended with \"%s\"\n", buf);
        return -1;
    }
    return 0;
}

/* Frees a client of the tests: its loop ended first (client.h). */
static void client_free(cshs_client *c)
{
    int r = loop_fx_end(c);
    cshs_client_free(c);
    pthread_mutex_lock(&loop_fx.mu);
    int i = loop_fx_index(loop_fx.stale, loop_fx.nstale, c);
    if (i >= 0) loop_fx.stale[i] = loop_fx.stale[--loop_fx.nstale];
    pthread_mutex_unlock(&loop_fx.mu);
    assert_int_equal(r, 0);
}

static int api_blocking(void **state)
{
    (void)state;
    api_mode = API_BLOCKING;
    return 0;
}

static int api_reactor(void **state)
{
    (void)state;
    api_mode = API_REACTOR;
    return 0;
}

/* After either: a loop a failed test left is ended. */
static int api_end(void **state)
{
    (void)state;
    int r = loop_fx_end(NULL);
    pthread_mutex_lock(&loop_fx.mu);
    loop_fx.nstale = 0;
    pthread_mutex_unlock(&loop_fx.mu);
    api_mode = API_BLOCKING;
    return r;
}

/* done of a cshs_client_send_async: on any thread, maybe before
 * cshs_client_send_async returned. */
typedef struct send_wait {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int done;
} send_wait;

static void send_done(void *arg)
{
    send_wait *w = arg;
    pthread_mutex_lock(&w->mu);
    w->done = 1;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

/* The request by the API of api_mode, with cshs_client_send's result: 0
 * and *out the call with its head, or the error and *out NULL (as the
 * library set it when cshs_client_send_async made no call). A done that
 * never comes is -ETIMEDOUT after 30 s, said on stderr: the call and its
 * wait are left to it, so a late done finds them. Any thread; no cmocka
 * assertion here (the tests' threads send). */
static int send_via(cshs_client *c, const cshs_client_request *rq, cshs_call **out)
{
    if (api_mode == API_BLOCKING) return cshs_client_send(c, rq, out);
    cshs_reactor *rx = loop_fx_for(c);
    if (!rx) return -EIO;
    send_wait *w = calloc(1, sizeof *w);
    if (!w) return -ENOMEM;
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    int r = cshs_client_send_async(c, rq, rx, send_done, w, out);
    if (r == 0) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += 30;
        pthread_mutex_lock(&w->mu);
        while (!w->done)
            if (pthread_cond_timedwait(&w->cv, &w->mu, &until) == ETIMEDOUT) break;
        int done = w->done;
        pthread_mutex_unlock(&w->mu);
        if (!done) {
            fprintf(stderr, "cshs_client_send_async: no done within 30 s\n");
            *out = NULL;
            return -ETIMEDOUT;
        }
    }
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->cv);
    free(w);
    if (r < 0) return r;
    r = cshs_call_end(*out);
    if (r < 0) {
        cshs_call_free(*out);
        *out = NULL;
    }
    return r;
}

/* GET target from o: the status, and X-Conn in *conn; the body read. */
static int get(cshs_client *c, const char *url, const char *target, int *conn, int *err)
{
    cshs_client_request rq;
    cshs_client_request_init(&rq);
    rq.origin = url;
    rq.target = target;
    cshs_call *call = NULL;
    int r = send_via(c, &rq, &call);
    if (err) *err = r;
    if (r < 0) return r;
    int status = cshs_call_status(call);
    if (conn) *conn = conn_of(call);
    const char *body;
    size_t len;
    r = cshs_call_read_all(call, 1 << 20, &body, &len);
    if (err) *err = r;
    cshs_call_free(call);
    return r < 0 ? r : status;
}

/* Waits (bounded) until cond(c) holds, ticking when asked. */
static int wait_for(cshs_client *c, int tick, int (*cond)(cshs_client *, void *), void *arg)
{
    int64_t end = mono_ms() + 10000;
    while (mono_ms() < end) {
        if (tick) cshs_client_tick(c);
        if (cond(c, arg)) return 1;
        sleep_ms(5);
    }
    return 0;
}

static int waiters_at_least(cshs_client *c, void *arg)
{
    return stats_of(c).waiters >= *(unsigned *)arg;
}

static int open_is(cshs_client *c, void *arg)
{
    return stats_of(c).open == *(unsigned *)arg;
}

static int failures_are(cshs_client *c, void *arg)
{
    return stats_of(c).failures == *(unsigned *)arg;
}

/* ---- errors, options, requests refused before anything is sent ---- */

static void test_errors_and_checks(void **state)
{
    (void)state;
    assert_string_equal(cshs_client_error_name(CSHS_CLIENT_E_CONNECT), "CSHS_CLIENT_E_CONNECT");
    assert_string_equal(cshs_client_error_name(-ENOMEM), "ENOMEM");
    assert_string_equal(cshs_client_error_name(0), "OK");
    assert_string_equal(cshs_client_error_name(-99999), "UNKNOWN");
    /* a proxy's mapping: the origin failed 502, it did not answer in time 504 */
    assert_int_equal(cshs_client_error_status(CSHS_CLIENT_E_CONNECT), 502);
    assert_int_equal(cshs_client_error_status(CSHS_CLIENT_E_MALFORMED), 502);
    assert_int_equal(cshs_client_error_status(CSHS_CLIENT_E_ORIGIN_CLOSED), 502);
    assert_int_equal(cshs_client_error_status(CSHS_CLIENT_E_HEAD_TIMEOUT), 504);
    assert_int_equal(cshs_client_error_status(CSHS_CLIENT_E_CONNECT_TIMEOUT), 504);
    assert_int_equal(cshs_client_error_status(CSHS_CLIENT_E_ACQUIRE_TIMEOUT), 504);
    assert_int_equal(cshs_client_error_status(-ENOMEM), 500);
    assert_int_equal(cshs_client_error_status(0), 0);
    assert_string_equal(cshs_client_error_message(-ENOENT), "No such file or directory");
    assert_true(strlen(cshs_client_error_message(CSHS_CLIENT_E_READ_TIMEOUT)) > 10);

    cshs_client_options o;
    cshs_client_options_init(&o);
    const char *why = NULL;
    assert_int_equal(cshs_client_options_check(&o, &why), 0);
    o.pool_size = 0;
    assert_int_equal(cshs_client_options_check(&o, &why), -EINVAL);
    assert_non_null(strstr(why, "pool_size"));
    assert_null(cshs_client_new(&o));
    cshs_client_options_init(&o);
    o.min_idle = o.pool_size + 1;
    assert_int_equal(cshs_client_options_check(&o, &why), -EINVAL);
    assert_non_null(strstr(why, "min_idle"));
    /* a size below the first version's: not filled by the init */
    cshs_client_options_init(&o);
    o.size = CSHS_CLIENT_OPTIONS_SIZE_0_3 - 1;
    assert_int_equal(cshs_client_options_check(&o, &why), -EINVAL);
    assert_non_null(strstr(why, "cshs_client_options_init"));
    assert_null(cshs_client_new(&o));
    o.size = 0;
    assert_int_equal(cshs_client_options_check(&o, &why), -EINVAL);

    origin *og = origin_new();
    char url[64];
    origin_url(og, url, sizeof url);
    cshs_client *c = client_with(4, 0);
    cshs_client_request rq;
    cshs_client_request_init(&rq);
    cshs_call *call = (cshs_call *)1;
    rq.origin = url;
    cshs_client_header bad[] = {{"X-A", 3, "ok\r\nX-Injected: 1", 18}};
    rq.headers = bad;
    rq.num_headers = 1;
    assert_int_equal(cshs_client_send(c, &rq, &call), -EINVAL);
    assert_null(call);
    cshs_client_header badname[] = {{"X A", 3, "v", 1}};
    rq.headers = badname;
    assert_int_equal(cshs_client_send(c, &rq, &call), -EINVAL);
    rq.num_headers = 0;
    rq.target = "/a b";
    assert_int_equal(cshs_client_send(c, &rq, &call), -EINVAL);
    rq.target = "http://x/";
    assert_int_equal(cshs_client_send(c, &rq, &call), -EINVAL);
    rq.target = "/";
    rq.method = "GE T";
    assert_int_equal(cshs_client_send(c, &rq, &call), -EINVAL);
    rq.method = "GET";
    const char *bad_origins[] = {"ftp://127.0.0.1", "http://",        "http://a b",
                                 "http://h:0",      "http://h:65536", "http://h/path",
                                 "http://u@h",      "http://[::1",    NULL};
    for (int i = 0; bad_origins[i]; i++) {
        rq.origin = bad_origins[i];
        assert_int_equal(cshs_client_send(c, &rq, &call), -EINVAL);
    }
    rq.origin = url;
    rq.body_mode = CSHS_CLIENT_BODY_CHUNKED; /* send takes whole bodies only */
    assert_int_equal(cshs_client_send(c, &rq, &call), -EINVAL);
    assert_int_equal(atomic_load(&og->nconns), 0); /* nothing was sent */
    cshs_client_free(c);
    cshs_client_free(NULL);
    cshs_call_free(NULL);
    origin_free(og);
}

/* client.h: the options and the request are read by their sizes, the
 * pool stats written by the caller's. Each struct of the first version's
 * size, alone in its allocation (ASan sees a read or write past it), is
 * used; a newer caller's larger one has what this library does not know
 * zeroed by the init and ignored; a size below the first version's is
 * -EINVAL. */
static void test_struct_sizes(void **state)
{
    (void)state;
    origin *og = origin_new();
    char url[64];
    origin_url(og, url, sizeof url);

    cshs_client_options *oo = malloc(CSHS_CLIENT_OPTIONS_SIZE_0_3);
    assert_non_null(oo);
    cshs_client_options_init_sized(oo, CSHS_CLIENT_OPTIONS_SIZE_0_3);
    assert_int_equal(oo->size, CSHS_CLIENT_OPTIONS_SIZE_0_3);
    assert_int_equal(oo->pool_size, 32);
    assert_int_equal(oo->tick_thread, 1);
    assert_null(oo->tls_ca_file);
    oo->tick_thread = 0;
    assert_int_equal(cshs_client_options_check(oo, NULL), 0);
    cshs_client *c = cshs_client_new(oo);
    free(oo);
    assert_non_null(c);

    /* a caller of the first version: nothing written past its size (the
     * client reads the newer fields as their defaults) */
    cshs_client_request *rq = malloc(sizeof *rq);
    assert_non_null(rq);
    memset(rq, 0xee, sizeof *rq);
    cshs_client_request_init_sized(rq, CSHS_CLIENT_REQUEST_SIZE_0_3);
    assert_int_equal(rq->size, CSHS_CLIENT_REQUEST_SIZE_0_3);
    for (size_t i = CSHS_CLIENT_REQUEST_SIZE_0_3; i < sizeof *rq; i++)
        assert_int_equal(((unsigned char *)rq)[i], 0xee);
    assert_string_equal(rq->method, "GET");
    rq->origin = url;
    cshs_call *call = NULL;
    assert_int_equal(send_via(c, rq, &call), 0);
    assert_int_equal(cshs_call_status(call), 200);
    const char *body;
    size_t len;
    assert_int_equal(cshs_call_read_all(call, 1 << 20, &body, &len), 0);
    cshs_call_free(call);
    free(rq);

    /* the stats, written by the caller's size: an array of elements of
     * the first version's size with a canary after each, and one of a
     * newer caller's larger elements */
    size_t stride = sizeof(cshs_client_pool_stats) + sizeof(uint64_t);
    unsigned char *arr = malloc(2 * stride);
    assert_non_null(arr);
    memset(arr, 0xee, 2 * stride);
    assert_int_equal(cshs_client_stats_sized(c, (cshs_client_pool_stats *)(void *)arr, 1,
                                             CSHS_CLIENT_POOL_STATS_SIZE_0_3),
                     1);
    cshs_client_pool_stats *s = (cshs_client_pool_stats *)(void *)arr;
    assert_int_equal(s->size, CSHS_CLIENT_POOL_STATS_SIZE_0_3);
    assert_non_null(strstr(s->origin, url + 7));
    assert_int_equal(s->requests, 1);
    for (size_t i = CSHS_CLIENT_POOL_STATS_SIZE_0_3; i < 2 * stride; i++)
        assert_int_equal(arr[i], 0xee); /* nothing past the caller's size, nor element 1 */
    assert_int_equal(cshs_client_stats_sized(c, (cshs_client_pool_stats *)(void *)arr, 2, stride),
                     1);
    assert_int_equal(s->size, sizeof(cshs_client_pool_stats));
    for (size_t i = sizeof(cshs_client_pool_stats); i < stride; i++)
        assert_int_equal(arr[i], 0);     /* what this library does not know: zeros */
    assert_int_equal(arr[stride], 0xee); /* element 1: no pool for it */
    assert_int_equal(cshs_client_stats_sized(c, (cshs_client_pool_stats *)(void *)arr, 1,
                                             CSHS_CLIENT_POOL_STATS_SIZE_0_3 - 1),
                     -EINVAL);
    assert_int_equal(cshs_client_stats(c, NULL, 1), -EINVAL);
    assert_int_equal(cshs_client_stats(NULL, NULL, 0), -EINVAL);
    free(arr);

    size_t big[sizeof(cshs_client_request) / sizeof(size_t) + 4];
    memset(big, 0xff, sizeof big);
    cshs_client_request *newer = (cshs_client_request *)(void *)big;
    cshs_client_request_init_sized(newer, sizeof big);
    assert_int_equal(newer->size, sizeof big);
    for (size_t i = sizeof(cshs_client_request) / sizeof(size_t); i < sizeof big / sizeof big[0];
         i++)
        assert_int_equal(big[i], 0);
    big[sizeof big / sizeof big[0] - 1] = 1; /* a newer field this library ignores */
    newer->origin = url;
    assert_int_equal(send_via(c, newer, &call), 0);
    assert_int_equal(cshs_call_status(call), 200);
    cshs_call_free(call);

    cshs_client_request bad;
    cshs_client_request_init(&bad);
    assert_int_equal(bad.size, sizeof bad);
    bad.origin = url;
    bad.size = CSHS_CLIENT_REQUEST_SIZE_0_3 - 1;
    call = (cshs_call *)1;
    assert_int_equal(send_via(c, &bad, &call), -EINVAL);
    assert_null(call);
    assert_int_equal(cshs_client_begin(c, &bad, &call), -EINVAL);
    memset(&bad, 0, sizeof bad);
    bad.origin = url;
    bad.method = "GET";
    assert_int_equal(send_via(c, &bad, &call), -EINVAL);
    assert_int_equal(atomic_load(&og->nconns), 1); /* nothing sent for the refused ones */
    client_free(c);

    size_t bigo[sizeof(cshs_client_options) / sizeof(size_t) + 4];
    memset(bigo, 0xff, sizeof bigo);
    cshs_client_options *newo = (cshs_client_options *)(void *)bigo;
    cshs_client_options_init_sized(newo, sizeof bigo);
    for (size_t i = sizeof(cshs_client_options) / sizeof(size_t); i < sizeof bigo / sizeof bigo[0];
         i++)
        assert_int_equal(bigo[i], 0);
    bigo[sizeof bigo / sizeof bigo[0] - 1] = 1;
    newo->tick_thread = 0;
    assert_int_equal(cshs_client_options_check(newo, NULL), 0);
    c = cshs_client_new(newo);
    assert_non_null(c);
    client_free(c);
    origin_free(og);
}

/* ---- a plain exchange, the headers the client writes ---- */

static void test_basic_and_headers(void **state)
{
    (void)state;
    origin *og = origin_new();
    og->modes[0] = M_ECHO;
    char url[64];
    origin_url(og, url, sizeof url);
    cshs_client *c = client_with(4, 1);
    cshs_client_request rq;
    cshs_client_request_init(&rq);
    rq.origin = url;
    rq.method = "POST";
    rq.target = "/submit?x=1";
    cshs_client_header h[] = {
        {"X-Mine", 6, "yes", 3},
        {"Connection", 10, "close", 5},         /* dropped: the client's own */
        {"Expect", 6, "100-continue", 12},      /* dropped: never sent upstream */
        {"Content-Length", 14, "999", 3},       /* dropped: the framing is the client's */
        {"Transfer-Encoding", 17, "chunked", 7} /* dropped */
    };
    rq.headers = h;
    rq.num_headers = 5;
    rq.body = "abc";
    rq.body_len = 3;
    cshs_call *call;
    assert_int_equal(send_via(c, &rq, &call), 0);
    assert_int_equal(cshs_call_status(call), 200);
    const csh_message *m = cshs_call_message(call);
    assert_non_null(m);
    assert_int_equal(m->body, CSH_BODY_LENGTH);
    size_t hl;
    const char *head = cshs_call_head(call, &hl);
    assert_true(hl > 0 && memcmp(head, "HTTP/1.1 200 OK\r\n", 17) == 0);
    const char *body;
    size_t len;
    assert_int_equal(cshs_call_read_all(call, 100, &body, &len), 0);
    assert_int_equal(len, 3);
    assert_memory_equal(body, "abc", 3);
    const char *again = NULL;
    size_t again_len = 0;
    assert_int_equal(cshs_call_read_all(call, 100, &again, &again_len), 0);
    assert_ptr_equal(again, body);
    assert_int_equal(again_len, 3);
    /* the connection went back when the body was read, the call still
     * holds the head */
    cshs_client_pool_stats s = stats_of(c);
    assert_int_equal(s.idle, 1);
    assert_int_equal(cshs_call_status(call), 200);
    assert_int_equal(cshs_call_read(call, (char[4]){0}, 4), 0);
    cshs_call_free(call);
    /* the same connection again (the Connection: close given was not sent) */
    int conn = -1, err = 0;
    assert_int_equal(get(c, url, "/", &conn, &err), 200);
    assert_int_equal(conn, 0);
    s = stats_of(c);
    assert_int_equal(s.opens, 1);
    assert_int_equal(s.requests, 2);
    assert_string_equal(s.origin, url);
    client_free(c);
    origin_free(og);
}

static void test_head_and_connection_close(void **state)
{
    (void)state;
    origin *og = origin_new();
    og->modes[1] = M_CONN_CLOSE;
    char url[64];
    origin_url(og, url, sizeof url);
    cshs_client *c = client_with(1, 0);
    cshs_client_request rq;
    cshs_client_request_init(&rq);
    rq.origin = url;
    rq.method = "HEAD"; /* Content-Length and no body (RFC 9110 §9.3.2) */
    cshs_call *call;
    assert_int_equal(send_via(c, &rq, &call), 0);
    assert_int_equal(cshs_call_status(call), 200);
    assert_int_equal(stats_of(c).idle, 1); /* back at the head: there is no body */
    char b[8];
    assert_int_equal(cshs_call_read(call, b, sizeof b), 0);
    const char *none = NULL;
    size_t nlen = 1;
    assert_int_equal(cshs_call_read_all(call, 100, &none, &nlen), 0);
    assert_int_equal(nlen, 0);
    assert_string_equal(none, "");
    cshs_call_free(call);
    /* Connection: close from the origin: the connection is not reused */
    client_free(c);
    c = client_with(1, 0);
    rq.method = "GET";
    assert_int_equal(send_via(c, &rq, &call), 0); /* conn 1: M_CONN_CLOSE */
    assert_int_equal(conn_of(call), 1);
    const char *body;
    size_t len;
    assert_int_equal(cshs_call_read_all(call, 100, &body, &len), 0);
    cshs_call_free(call);
    assert_int_equal(stats_of(c).open, 0);
    client_free(c);
    origin_free(og);
}

/* A connect the origin's kernel never answers: a listener whose accept
 * queue is full drops the SYN. The kernel's deadline ends it. */
static void test_connect_timeout(void **state)
{
    (void)state;
    int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(lfd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(lfd, 0), 0);
    unsigned port = port_of(lfd);
    a.sin_port = htons((uint16_t)port);
    int fill[4];
    for (int i = 0; i < 4; i++) { /* fill the queue; later connects may hang, no matter */
        fill[i] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        connect(fill[i], (struct sockaddr *)&a, sizeof a);
    }
    sleep_ms(50);
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%u", port);
    cshs_client_options o;
    cshs_client_options_init(&o);
    o.connect_timeout_ms = 200;
    /* the connect ends first: nothing else can serve the request, which
     * fails at once with the connect's error (client.h, "The pool") */
    o.acquire_timeout_ms = 60000;
    cshs_client *c = cshs_client_new(&o);
    int err = 0;
    assert_int_equal(get(c, url, "/", NULL, &err), CSHS_CLIENT_E_CONNECT_TIMEOUT);
    assert_int_equal(stats_of(c).failures, 1);
    client_free(c);
    /* the request's deadline comes first: it fails then, whatever the
     * connect started for it does later (its own deadline ends it) */
    o.connect_timeout_ms = 400;
    o.acquire_timeout_ms = 100;
    c = cshs_client_new(&o);
    assert_int_equal(get(c, url, "/", NULL, &err), CSHS_CLIENT_E_ACQUIRE_TIMEOUT);
    assert_int_equal(stats_of(c).acquire_timeouts, 1);
    unsigned one = 1;
    assert_true(wait_for(c, 0, failures_are, &one));
    assert_int_equal(stats_of(c).failures, 1);
    client_free(c);
    for (int i = 0; i < 4; i++) close(fill[i]);
    close(lfd);
}

/* What the origin received: the request head as sent by the client. */
static int head_seen_len;
static char head_seen[2048];

static void *raw_origin_main(void *arg)
{
    int lfd = *(int *)arg;
    int fd = accept(lfd, NULL, NULL);
    size_t n = 0;
    while (n < sizeof head_seen - 1) {
        ssize_t r = recv(fd, head_seen + n, sizeof head_seen - 1 - n, 0);
        if (r <= 0) break;
        n += (size_t)r;
        head_seen[n] = 0;
        if (strstr(head_seen, "\r\n\r\n") && strstr(head_seen, "\r\n\r\nabc")) break;
    }
    head_seen_len = (int)n;
    send(fd, "HTTP/1.1 204 No Content\r\n\r\n", 27, MSG_NOSIGNAL);
    sleep_ms(50);
    close(fd);
    return NULL;
}

static void test_request_bytes(void **state)
{
    (void)state;
    int lfd = listen_on(0);
    unsigned port = port_of(lfd);
    pthread_t t;
    pthread_create(&t, NULL, raw_origin_main, &lfd);
    char url[64];
    snprintf(url, sizeof url, "http://LOCALHOST:%u", port);
    cshs_client *c = client_with(4, 1);
    cshs_client_request rq;
    cshs_client_request_init(&rq);
    rq.origin = url;
    rq.method = "PUT";
    rq.target = "/x";
    cshs_client_header h[] = {{"Expect", 6, "100-continue", 12}, {"X-Empty", 7, NULL, 0}};
    rq.headers = h;
    rq.num_headers = 2;
    rq.body = "abc";
    rq.body_len = 3;
    cshs_call *call;
    assert_int_equal(send_via(c, &rq, &call), 0);
    assert_int_equal(cshs_call_status(call), 204);
    cshs_call_free(call);
    pthread_join(t, NULL);
    close(lfd);
    char want[256];
    snprintf(want, sizeof want,
             "PUT /x HTTP/1.1\r\nHost: localhost:%u\r\nX-Empty: \r\nContent-Length: 3\r\n\r\nabc",
             port);
    assert_string_equal(head_seen, want);
    client_free(c);
}

/* Hop-by-hop and framing fields of the caller's are never sent; a Host of
 * the caller's replaces the origin's (a proxy passing its client's Host). */
static void test_fields_dropped_and_host(void **state)
{
    (void)state;
    origin *og = origin_new();
    og->modes[0] = M_ECHO_HEAD;
    char url[64];
    origin_url(og, url, sizeof url);
    cshs_client *c = client_with(1, 0);
    cshs_client_request rq;
    cshs_client_request_init(&rq);
    rq.origin = url;
    rq.target = "/p?q=1";
    cshs_client_header h[] = {
        {"connection", 10, "keep-alive, x-hop", 17},
        {"Keep-Alive", 10, "timeout=5", 9},
        {"Proxy-Connection", 16, "keep-alive", 10},
        {"TE", 2, "trailers", 8},
        {"Transfer-Encoding", 17, "chunked", 7},
        {"Upgrade", 7, "websocket", 9},
        {"Content-Length", 14, "5", 1},
        {"EXPECT", 6, "100-continue", 12},
        {"host", 4, "example.test", 12},
        {"X-Tab", 5, "a\tb", 3},
    };
    rq.headers = h;
    rq.num_headers = sizeof h / sizeof h[0];
    cshs_call *call;
    assert_int_equal(send_via(c, &rq, &call), 0);
    const char *body;
    size_t len;
    assert_int_equal(cshs_call_read_all(call, 4096, &body, &len), 0);
    assert_string_equal(body, "GET /p?q=1 HTTP/1.1\r\nhost: example.test\r\nX-Tab: a\tb\r\n\r\n");
    cshs_call_free(call);
    client_free(c);
    origin_free(og);
}

/* ---- the pool's rules ---- */

static void test_mru_order(void **state)
{
    (void)state;
    origin *og = origin_new();
    char url[64];
    origin_url(og, url, sizeof url);
    cshs_client *c = client_with(8, 1);
    cshs_client_request rq;
    cshs_client_request_init(&rq);
    rq.origin = url;
    /* three calls held at once: three connections, 0, 1, 2 */
    cshs_call *calls[3];
    for (int i = 0; i < 3; i++) {
        assert_int_equal(send_via(c, &rq, &calls[i]), 0);
        assert_int_equal(conn_of(calls[i]), i);
    }
    /* given back in the order 0, 1, 2: the most recent is 2 */
    const char *b;
    size_t l;
    for (int i = 0; i < 3; i++) assert_int_equal(cshs_call_read_all(calls[i], 1000, &b, &l), 0);
    assert_int_equal(stats_of(c).idle, 3);
    int conn = -1;
    assert_int_equal(get(c, url, "/", &conn, NULL), 200);
    assert_int_equal(conn, 2);
    assert_int_equal(get(c, url, "/", &conn, NULL), 200);
    assert_int_equal(conn, 2);
    /* with 2 held, the next most recent is 1 */
    cshs_call *held;
    assert_int_equal(send_via(c, &rq, &held), 0);
    assert_int_equal(conn_of(held), 2);
    assert_int_equal(get(c, url, "/", &conn, NULL), 200);
    assert_int_equal(conn, 1);
    cshs_call_free(held); /* its body unread: that connection is closed */
    cshs_client_pool_stats s = stats_of(c);
    assert_int_equal(s.open, 2);
    assert_int_equal(s.opens, 3);
    for (int i = 0; i < 3; i++) cshs_call_free(calls[i]);
    client_free(c);
    origin_free(og);
}

typedef struct burst {
    cshs_client *c;
    const char *url;
    pthread_barrier_t *start;
    int status;
    int err;
    unsigned acquire_ms;
    int id;
    int *order;
    atomic_int *order_n;
} burst;

static void *burst_main(void *arg)
{
    burst *b = arg;
    if (b->start) pthread_barrier_wait(b->start);
    cshs_client_request rq;
    cshs_client_request_init(&rq);
    rq.origin = b->url;
    rq.acquire_timeout_ms = b->acquire_ms;
    cshs_call *call = NULL;
    b->err = send_via(b->c, &rq, &call);
    if (b->err == 0) {
        if (b->order) b->order[atomic_fetch_add(b->order_n, 1)] = b->id;
        b->status = cshs_call_status(call);
        const char *body;
        size_t len;
        b->err = cshs_call_read_all(call, 1000, &body, &len);
        cshs_call_free(call);
    }
    return NULL;
}

static void run_burst(cshs_client *c, const char *url, int n)
{
    pthread_t t[16];
    burst b[16];
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, (unsigned)n);
    for (int i = 0; i < n; i++) {
        memset(&b[i], 0, sizeof b[i]);
        b[i].c = c;
        b[i].url = url;
        b[i].start = &start;
        pthread_create(&t[i], NULL, burst_main, &b[i]);
    }
    for (int i = 0; i < n; i++) {
        pthread_join(t[i], NULL);
        assert_int_equal(b[i].err, 0);
        assert_int_equal(b[i].status, 200);
    }
    pthread_barrier_destroy(&start);
}

static void test_burst_opens(void **state)
{
    (void)state;
    /* 4 requests at once, and the origin answers none before all 4
     * arrived: they need 4 connections in parallel, and get no more than 4
     * although pool_size allows 8 */
    origin *og = origin_new();
    og->hold = 4;
    char url[64];
    origin_url(og, url, sizeof url);
    cshs_client *c = client_with(8, 1);
    run_burst(c, url, 4);
    cshs_client_pool_stats s = stats_of(c);
    assert_int_equal(s.opens, 4);
    assert_int_equal(s.open, 4);
    assert_int_equal(atomic_load(&og->nconns), 4);
    /* the same burst again: the 4 idle connections, nothing opened */
    run_burst(c, url, 4);
    assert_int_equal(stats_of(c).opens, 4);
    client_free(c);
    origin_free(og);

    /* pool_size 2: 6 requests at once share 2 connections */
    og = origin_new();
    origin_url(og, url, sizeof url);
    c = client_with(2, 1);
    run_burst(c, url, 6);
    s = stats_of(c);
    assert_true(s.opens <= 2);
    assert_int_equal(s.requests, 6);
    assert_true(atomic_load(&og->nconns) <= 2);
    client_free(c);
    origin_free(og);
}

static void test_fifo_waiters_and_deadline(void **state)
{
    (void)state;
    origin *og = origin_new();
    char url[64];
    origin_url(og, url, sizeof url);
    cshs_client *c = client_with(1, 1);
    cshs_client_request rq;
    cshs_client_request_init(&rq);
    rq.origin = url;
    cshs_call *held;
    assert_int_equal(send_via(c, &rq, &held), 0);
    /* three waiters, queued in a known order */
    pthread_t t[3];
    burst b[3];
    int order[3] = {-1, -1, -1};
    atomic_int order_n = 0;
    for (int i = 0; i < 3; i++) {
        memset(&b[i], 0, sizeof b[i]);
        b[i].c = c;
        b[i].url = url;
        b[i].id = i;
        b[i].order = order;
        b[i].order_n = &order_n;
        pthread_create(&t[i], NULL, burst_main, &b[i]);
        unsigned want = (unsigned)i + 1;
        assert_true(wait_for(c, 0, waiters_at_least, &want));
    }
    /* a fourth with a short deadline: failed by the tick, not served */
    burst late;
    memset(&late, 0, sizeof late);
    late.c = c;
    late.url = url;
    late.acquire_ms = 50;
    pthread_t tl;
    pthread_create(&tl, NULL, burst_main, &late);
    pthread_join(tl, NULL);
    assert_int_equal(late.err, CSHS_CLIENT_E_ACQUIRE_TIMEOUT);
    assert_int_equal(stats_of(c).acquire_timeouts, 1);
    /* the held connection given back: the waiters in the order they came */
    const char *body;
    size_t len;
    assert_int_equal(cshs_call_read_all(held, 1000, &body, &len), 0);
    for (int i = 0; i < 3; i++) pthread_join(t[i], NULL);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(b[i].err, 0);
        assert_int_equal(order[i], i);
    }
    cshs_client_pool_stats s = stats_of(c);
    assert_int_equal(s.opens, 1);
    assert_true(s.acquire_wait_p99_us >= s.acquire_wait_p50_us);
    assert_true(s.acquire_wait_p99_us > 0);
    cshs_call_free(held);
    client_free(c);
    origin_free(og);
}

static void test_deadline_needs_the_tick(void **state)
{
    (void)state;
    /* no tick thread: a waiter past its deadline stays until a tick runs */
    origin *og = origin_new();
    char url[64];
    origin_url(og, url, sizeof url);
    cshs_client *c = client_with(1, 0);
    cshs_client_request rq;
    cshs_client_request_init(&rq);
    rq.origin = url;
    cshs_call *held;
    assert_int_equal(send_via(c, &rq, &held), 0);
    burst w;
    memset(&w, 0, sizeof w);
    w.c = c;
    w.url = url;
    w.acquire_ms = 1;
    w.err = 1;
    pthread_t t;
    pthread_create(&t, NULL, burst_main, &w);
    unsigned one = 1;
    assert_true(wait_for(c, 0, waiters_at_least, &one));
    sleep_ms(30); /* well past the deadline: still waiting, nothing polls */
    assert_int_equal(stats_of(c).waiters, 1);
    cshs_client_tick(c);
    pthread_join(t, NULL);
    assert_int_equal(w.err, CSHS_CLIENT_E_ACQUIRE_TIMEOUT);
    cshs_call_free(held);
    client_free(c);
    origin_free(og);
}

static int backoff_over(cshs_client *c, void *arg)
{
    (void)arg;
    return stats_of(c).backoff_ms == 0;
}

/* A dead origin (connect refused) with nothing else open: a request fails
 * at once with the connect's error, not at its acquire deadline, and so
 * does every request of a burst, each counted as no acquire timeout. */
static void test_dead_origin_fails_at_once(void **state)
{
    (void)state;
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%u", dead_port());
    cshs_client *c = client_with(4, 1);
    cshs_client_request rq;
    cshs_client_request_init(&rq);
    rq.origin = url;
    rq.acquire_timeout_ms = 60000; /* a wait for the deadline would outlast the test */
    cshs_call *call = NULL;
    assert_int_equal(send_via(c, &rq, &call), CSHS_CLIENT_E_CONNECT);
    assert_null(call);
    cshs_client_pool_stats s = stats_of(c);
    assert_int_equal(s.failures, 1);
    assert_int_equal(s.opens, 0);
    assert_int_equal(s.waiters, 0);
    assert_int_equal(s.requests, 0);
    assert_int_equal(s.acquire_timeouts, 0);
    client_free(c);

    /* a burst of four, each willing to wait a minute: all fail with the
     * connect's error, after at most one connect each (no storm) */
    c = client_with(4, 1);
    pthread_t t[4];
    burst b[4];
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, 4);
    for (int i = 0; i < 4; i++) {
        memset(&b[i], 0, sizeof b[i]);
        b[i].c = c;
        b[i].url = url;
        b[i].start = &start;
        b[i].acquire_ms = 60000;
        pthread_create(&t[i], NULL, burst_main, &b[i]);
    }
    for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
    pthread_barrier_destroy(&start);
    for (int i = 0; i < 4; i++) assert_int_equal(b[i].err, CSHS_CLIENT_E_CONNECT);
    s = stats_of(c);
    assert_true(s.failures >= 1 && s.failures <= 4);
    assert_int_equal(s.waiters, 0);
    assert_int_equal(s.acquire_timeouts, 0);
    client_free(c);
}

static void test_backoff_after_failed_connect(void **state)
{
    (void)state;
    unsigned port = dead_port();
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%u", port);
    cshs_client *c = client_with(4, 0);
    cshs_client_request rq;
    cshs_client_request_init(&rq);
    rq.origin = url;
    rq.acquire_timeout_ms = 20000;
    cshs_call *call = NULL;
    assert_int_equal(send_via(c, &rq, &call), CSHS_CLIENT_E_CONNECT);
    /* the clock first: what is left of the backoff is read after it, so
     * the origin's first accept comes at least that long after (a loaded
     * machine may read it late, even after the backoff ended: 0 left) */
    int64_t seen = mono_ms();
    cshs_client_pool_stats s = stats_of(c);
    assert_int_equal(s.failures, 1);
    assert_int_equal(s.waiters, 0); /* failed at once: nothing else could serve it */
    assert_true(s.backoff_ms <= s.last_backoff_ms);
    assert_true(s.last_backoff_ms >= 200 && s.last_backoff_ms <= 400);
    /* the origin comes up on that port; a request during the backoff
     * fails at once without trying it (when the backoff is still on after
     * the request returned, it was on during the request) */
    origin *og = origin_new_on(port, NULL);
    origin_start(og);
    int err = 0;
    int r = get(c, url, "/", NULL, &err);
    cshs_client_pool_stats during = stats_of(c);
    if (during.backoff_ms > 0) {
        assert_int_equal(r, CSHS_CLIENT_E_CONNECT);
        assert_int_equal(atomic_load(&og->nconns), 0);
        assert_int_equal(during.failures, 1);
        /* ticks during the backoff do not try either */
        assert_true(wait_for(c, 1, backoff_over, NULL));
        assert_int_equal(atomic_load(&og->nconns), 0);
        r = get(c, url, "/", NULL, &err);
    }
    /* the backoff over: the origin is tried again */
    assert_int_equal(r, 200);
    assert_int_equal(atomic_load(&og->nconns), 1);
    assert_true(og->first_accept_ms - seen >= (int64_t)s.backoff_ms - 2);
    s = stats_of(c);
    /* the empty pool is kept through its backoff, and may be dropped by a
     * tick once it ended: then the counters are a new pool's */
    assert_true(s.failures <= 1);
    assert_int_equal(s.opens, 1);
    client_free(c);
    origin_free(og);

    /* the backoff is jittered over 200-400 ms: five origins, not all equal */
    c = client_with(4, 0);
    uint32_t seen_ms[5];
    for (int i = 0; i < 5; i++) {
        unsigned p = dead_port();
        snprintf(url, sizeof url, "http://127.0.0.1:%u", p);
        /* fails at once: the connect was refused and nothing else is open */
        burst b;
        memset(&b, 0, sizeof b);
        b.c = c;
        b.url = url;
        b.acquire_ms = 1;
        pthread_t bt;
        pthread_create(&bt, NULL, burst_main, &b);
        cshs_client_pool_stats all[8];
        int64_t stop = mono_ms() + 10000;
        int done = 0;
        while (!done && mono_ms() < stop) {
            ssize_t n = cshs_client_stats(c, all, 8);
            assert_true(n >= 0);
            for (size_t k = 0; k < (size_t)n; k++)
                if (strstr(all[k].origin, url + 7) && all[k].failures) {
                    seen_ms[i] = all[k].last_backoff_ms;
                    done = 1;
                }
            sleep_ms(2);
        }
        assert_true(done);
        pthread_join(bt, NULL);
        assert_int_equal(b.err, CSHS_CLIENT_E_CONNECT);
    }
    int all_equal = 1;
    for (int i = 0; i < 5; i++) {
        assert_true(seen_ms[i] >= 200 && seen_ms[i] <= 400);
        if (seen_ms[i] != seen_ms[0]) all_equal = 0;
    }
    assert_false(all_equal);
    client_free(c);
}

static void test_sweep_closed_by_origin(void **state)
{
    (void)state;
    origin *og = origin_new();
    og->modes[0] = M_FIN_ON_FLAG;
    char url[64];
    origin_url(og, url, sizeof url);
    cshs_client *c = client_with(4, 0);
    int conn = -1;
    assert_int_equal(get(c, url, "/", &conn, NULL), 200);
    cshs_client_tick(c);
    cshs_client_pool_stats s = stats_of(c);
    assert_int_equal(s.open, 1);
    assert_int_equal(s.idle, 1);
    atomic_store(&og->fin_now, 1); /* the origin closes the idle connection */
    unsigned zero = 0;
    assert_true(wait_for(c, 1, open_is, &zero));
    /* the next request opens a new one, without an error or a retry */
    assert_int_equal(get(c, url, "/", &conn, NULL), 200);
    assert_int_equal(conn, 1);
    s = stats_of(c);
    assert_int_equal(s.retries, 0);
    assert_int_equal(s.opens, 1); /* the emptied pool was dropped; a new one */
    client_free(c);
    origin_free(og);
}

static void test_idle_timeout_and_pool_drop(void **state)
{
    (void)state;
    origin *og = origin_new();
    char url[64];
    origin_url(og, url, sizeof url);
    cshs_client_options o;
    cshs_client_options_init(&o);
    o.tick_thread = 0;
    o.idle_timeout_ms = 40;
    cshs_client *c = cshs_client_new(&o);
    assert_int_equal(get(c, url, "/", NULL, NULL), 200);
    cshs_client_tick(c);
    assert_int_equal(cshs_client_stats(c, NULL, 0), 1); /* the pool lives */
    sleep_ms(60);
    cshs_client_tick(c); /* idle past 40 ms: closed, then the empty pool dropped */
    assert_int_equal(cshs_client_stats(c, NULL, 0), 0);
    client_free(c);
    origin_free(og);
}

static void test_max_lifetime(void **state)
{
    (void)state;
    origin *og = origin_new();
    char url[64];
    origin_url(og, url, sizeof url);
    cshs_client_options o;
    cshs_client_options_init(&o);
    o.max_lifetime_ms = 50;
    o.tick_thread = 0;
    cshs_client *c = cshs_client_new(&o);
    int conn = -1;
    assert_int_equal(get(c, url, "/", &conn, NULL), 200);
    assert_int_equal(conn, 0);
    sleep_ms(70);
    assert_int_equal(get(c, url, "/", &conn, NULL), 200);
    assert_int_equal(conn, 1); /* past its lifetime: not reused */
    assert_int_equal(stats_of(c).opens, 2);
    client_free(c);
    /* the default lifetime (an hour): the same connection */
    c = client_with(4, 0);
    sleep_ms(70);
    assert_int_equal(get(c, url, "/", &conn, NULL), 200);
    assert_int_equal(conn, 2);
    sleep_ms(70);
    assert_int_equal(get(c, url, "/", &conn, NULL), 200);
    assert_int_equal(conn, 2);
    client_free(c);
    origin_free(og);
}

static void test_min_idle(void **state)
{
    (void)state;
    origin *og = origin_new();
    char url[64];
    origin_url(og, url, sizeof url);
    cshs_client_options o;
    cshs_client_options_init(&o);
    o.tick_thread = 0;
    o.min_idle = 2;
    cshs_client *c = cshs_client_new(&o);
    assert_int_equal(get(c, url, "/", NULL, NULL), 200); /* the pool exists */
    /* one connection per tick, opened without waiting in the tick */
    cshs_client_tick(c);
    cshs_client_pool_stats s = stats_of(c);
    assert_true(s.open + s.opening <= 2);
    assert_true(s.opening <= 1);
    unsigned two = 2;
    assert_true(wait_for(c, 1, open_is, &two));
    for (int i = 0; i < 5; i++) cshs_client_tick(c);
    s = stats_of(c);
    assert_int_equal(s.open, 2);
    assert_int_equal(s.idle, 2);
    assert_int_equal(s.opens, 2);
    client_free(c);
    origin_free(og);
}

/* ---- the retry rule ---- */

static void test_retry_rule(void **state)
{
    (void)state;
    /* conn 0 answers once, then closes on the second request unanswered,
     * as an origin whose keep-alive timeout just struck: a GET is sent
     * again on a new connection */
    origin *og = origin_new();
    og->modes[0] = M_CLOSE_SECOND;
    char url[64];
    origin_url(og, url, sizeof url);
    cshs_client *c = client_with(4, 0);
    int conn = -1, err = 0;
    assert_int_equal(get(c, url, "/", &conn, NULL), 200);
    assert_int_equal(conn, 0);
    assert_int_equal(get(c, url, "/", &conn, &err), 200);
    assert_int_equal(conn, 1);
    assert_int_equal(stats_of(c).retries, 1);
    client_free(c);
    origin_free(og);

    /* a POST whose bytes went is not sent twice */
    og = origin_new();
    og->modes[0] = M_CLOSE_SECOND;
    origin_url(og, url, sizeof url);
    c = client_with(4, 0);
    assert_int_equal(get(c, url, "/", &conn, NULL), 200);
    cshs_client_request rq;
    cshs_client_request_init(&rq);
    rq.origin = url;
    rq.method = "POST";
    rq.body = "data";
    rq.body_len = 4;
    cshs_call *call;
    assert_int_equal(send_via(c, &rq, &call), CSHS_CLIENT_E_ORIGIN_CLOSED);
    assert_int_equal(stats_of(c).retries, 0);
    assert_int_equal(atomic_load(&og->nconns), 1);
    client_free(c);
    origin_free(og);

    /* through cshs_client_begin and cshs_call_end (as a proxy does): a GET
     * without a body keeps its head and is sent again by cshs_call_end; a
     * PUT whose body went through cshs_client_begin is not */
    og = origin_new();
    og->modes[0] = M_CLOSE_SECOND;
    og->modes[1] = M_CLOSE_SECOND;
    origin_url(og, url, sizeof url);
    c = client_with(4, 0);
    assert_int_equal(get(c, url, "/", &conn, NULL), 200);
    cshs_client_request_init(&rq);
    rq.origin = url;
    assert_int_equal(cshs_client_begin(c, &rq, &call), 0);
    assert_int_equal(cshs_call_end(call), 0);
    assert_int_equal(conn_of(call), 1);
    const char *b;
    size_t l;
    assert_int_equal(cshs_call_read_all(call, 100, &b, &l), 0);
    cshs_call_free(call);
    assert_int_equal(stats_of(c).retries, 1);
    rq.method = "PUT";
    rq.body = "data";
    rq.body_len = 4;
    assert_int_equal(cshs_client_begin(c, &rq, &call), 0); /* conn 1, reused */
    assert_int_equal(cshs_call_end(call), CSHS_CLIENT_E_ORIGIN_CLOSED);
    cshs_call_free(call);
    assert_int_equal(stats_of(c).retries, 1);
    client_free(c);
    origin_free(og);

    /* a new connection closed unanswered is not a stale one: no retry */
    og = origin_new();
    og->modes[0] = M_CLOSE_FIRST;
    origin_url(og, url, sizeof url);
    c = client_with(4, 0);
    assert_int_equal(get(c, url, "/", &conn, &err), CSHS_CLIENT_E_ORIGIN_CLOSED);
    assert_int_equal(stats_of(c).retries, 0);
    assert_int_equal(atomic_load(&og->nconns), 1);
    client_free(c);
    origin_free(og);
}

static void test_origin_keepalive_shorter(void **state)
{
    (void)state;
    /* the origin closes connections idle for 1 s; ours would keep them 60 s.
     * Requests after gaps around that second: not one error */
    origin *og = origin_new();
    og->idle_close_ms = 1000;
    char url[64];
    origin_url(og, url, sizeof url);
    cshs_client *c = client_with(4, 1);
    static const int gaps[] = {0, 950, 1000, 1010, 1050, 1200, 10, 990, 1000};
    for (size_t i = 0; i < sizeof gaps / sizeof gaps[0]; i++) {
        sleep_ms(gaps[i]);
        int err = 0;
        assert_int_equal(get(c, url, "/", NULL, &err), 200);
        assert_int_equal(err, 0);
    }
    client_free(c);
    origin_free(og);
}

/* ---- responses ---- */

static void test_chunked_and_close_delimited(void **state)
{
    (void)state;
    origin *og = origin_new();
    og->modes[0] = M_CHUNKED;
    og->modes[1] = M_UNTIL_CLOSE;
    char url[64];
    origin_url(og, url, sizeof url);
    cshs_client *c = client_with(4, 0);
    cshs_client_request rq;
    cshs_client_request_init(&rq);
    rq.origin = url;
    for (int round = 0; round < 2; round++) { /* chunked keeps the connection */
        cshs_call *call;
        assert_int_equal(send_via(c, &rq, &call), 0);
        assert_int_equal(cshs_call_message(call)->body, CSH_BODY_CHUNKED);
        char buf[64];
        size_t n = 0;
        ssize_t r;
        assert_int_equal(cshs_call_trailer_count(call), 0); /* none before the end */
        while ((r = cshs_call_read(call, buf + n, 3)) > 0) n += (size_t)r;
        assert_int_equal(r, 0);
        assert_int_equal(n, 12);
        assert_memory_equal(buf, "hello, world", 12);
        /* RFC 9112 §7.1.2: the trailer section that ended the body */
        const char *value;
        assert_int_equal(cshs_call_trailer_count(call), 1);
        assert_string_equal(cshs_call_trailer_at(call, 0, &value), "X-Sum");
        assert_string_equal(value, "1");
        assert_null(cshs_call_trailer_at(call, 1, &value));
        assert_null(value);
        cshs_call_free(call);
    }
    cshs_client_pool_stats s = stats_of(c);
    assert_int_equal(s.opens, 1);
    assert_int_equal(s.idle, 1);
    client_free(c);
    origin_free(og);

    og = origin_new();
    og->modes[0] = M_UNTIL_CLOSE;
    origin_url(og, url, sizeof url);
    c = client_with(4, 0);
    rq.origin = url;
    cshs_call *call;
    assert_int_equal(send_via(c, &rq, &call), 0);
    assert_int_equal(cshs_call_message(call)->body, CSH_BODY_UNTIL_CLOSE);
    const char *body;
    size_t len;
    assert_int_equal(cshs_call_read_all(call, 1000, &body, &len), 0);
    assert_string_equal(body, "until the end");
    cshs_call_free(call);
    s = stats_of(c);
    assert_int_equal(s.open, 0); /* ended with the connection: closed */
    int conn = -1;
    assert_int_equal(get(c, url, "/", &conn, NULL), 200);
    assert_int_equal(conn, 1);
    client_free(c);
    origin_free(og);
}

static char *pattern(size_t n, unsigned seed)
{
    char *p = malloc(n);
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        p[i] = (char)(seed >> 16);
    }
    return p;
}

static void test_one_mib_both_ways(void **state)
{
    (void)state;
    const size_t size = 1 << 20;
    char *data = pattern(size, 7);
    origin *og = origin_new();
    og->modes[1] = M_ECHO_CHUNKED;
    char url[64];
    origin_url(og, url, sizeof url);
    cshs_client *c = client_with(1, 0); /* one connection: conn 0 then a second */
    cshs_client_request rq;
    cshs_client_request_init(&rq);
    rq.origin = url;
    rq.method = "POST";
    /* whole, from the caller's memory; echoed with Content-Length */
    rq.body = data;
    rq.body_len = size;
    cshs_call *call;
    assert_int_equal(send_via(c, &rq, &call), 0);
    const char *body;
    size_t len;
    assert_int_equal(cshs_call_read_all(call, size, &body, &len), 0);
    assert_int_equal(len, size);
    assert_memory_equal(body, data, size);
    cshs_call_free(call);

    /* a limit below the size: too large, and the connection is closed */
    assert_int_equal(send_via(c, &rq, &call), 0);
    assert_int_equal(cshs_call_read_all(call, size / 2, &body, &len), CSHS_CLIENT_E_TOO_LARGE);
    cshs_call_free(call);
    assert_int_equal(stats_of(c).open, 0);

    /* streamed out in chunks of odd sizes; echoed in chunks, read in
     * pieces of another odd size */
    rq.body_mode = CSHS_CLIENT_BODY_CHUNKED;
    rq.body = NULL;
    rq.body_len = 0;
    assert_int_equal(cshs_client_begin(c, &rq, &call), 0);
    for (size_t off = 0; off < size;) {
        size_t n = size - off < 7777 ? size - off : 7777;
        assert_int_equal(cshs_call_write(call, data + off, n), 0);
        off += n;
    }
    assert_int_equal(cshs_call_end(call), 0);
    assert_int_equal(cshs_call_status(call), 200);
    char *got = malloc(size + 1);
    size_t have = 0;
    ssize_t r;
    while ((r = cshs_call_read(call, got + have, have + 999 <= size ? 999 : size + 1 - have)) > 0)
        have += (size_t)r;
    assert_int_equal(r, 0);
    assert_int_equal(have, size);
    assert_memory_equal(got, data, size);
    cshs_call_free(call);

    /* streamed out with a Content-Length (the echo on conn 2 is plain) */
    rq.body_mode = CSHS_CLIENT_BODY_LENGTH;
    rq.content_length = size;
    assert_int_equal(cshs_client_begin(c, &rq, &call), 0);
    assert_int_equal(cshs_call_write(call, data, size / 3), 0);
    assert_int_equal(cshs_call_write(call, data + size / 3, size - size / 3), 0);
    assert_int_equal(cshs_call_end(call), 0);
    memset(got, 0, size);
    have = 0;
    while ((r = cshs_call_read(call, got + have, 65536)) > 0) have += (size_t)r;
    assert_int_equal(r, 0);
    assert_int_equal(have, size);
    assert_memory_equal(got, data, size);
    cshs_call_free(call);

    /* a streamed Content-Length body: more than announced, or fewer */
    rq.content_length = 10;
    assert_int_equal(cshs_client_begin(c, &rq, &call), 0);
    assert_int_equal(cshs_call_write(call, data, 11), -EINVAL);
    assert_int_equal(cshs_call_end(call), -EINVAL);
    cshs_call_free(call);
    assert_int_equal(cshs_client_begin(c, &rq, &call), 0);
    assert_int_equal(cshs_call_write(call, data, 5), 0);
    assert_int_equal(cshs_call_end(call), -EINVAL);
    cshs_call_free(call);
    free(got);
    free(data);
    client_free(c);
    origin_free(og);
}

static char cert_path[64]; /* tls_origin_ctx's certificate */
static SSL_CTX *tls_origin_ctx(void);

/* An origin that answers before the request body is all sent (RFC 9112
 * §9.5): at once and closing, or holding the connection and reading no
 * more, over plain TCP and over TLS. cshs_call_write says so (1) and sends
 * nothing more, cshs_call_end gives the head, the body reads whole, and
 * the connection is not reused (the request was cut): the next request
 * opens another. */
static void test_answer_before_the_body_ended(void **state)
{
    (void)state;
    static const int modes[] = {M_EARLY_CLOSE, M_EARLY_HOLD};
    static char piece[65536];
    memset(piece, 'b', sizeof piece);
    SSL_CTX *ctx = tls_origin_ctx();
    for (int k = 0; k < 4; k++) {
        int tls = k >= 2;
        origin *og = origin_new_on(0, tls ? ctx : NULL);
        og->modes[0] = og->modes[1] = modes[k % 2]; /* Content-Length, then chunked */
        origin_start(og);
        char url[64];
        origin_url(og, url, sizeof url);
        cshs_client_options co;
        cshs_client_options_init(&co);
        co.pool_size = 1;
        co.tick_thread = 1;
        co.tls_insecure = tls;
        cshs_client *c = cshs_client_new(&co);
        assert_non_null(c);
        for (int chunked = 0; chunked <= 1; chunked++) {
            cshs_client_request rq;
            cshs_client_request_init(&rq);
            rq.origin = url;
            rq.method = "POST";
            rq.body_mode = chunked ? CSHS_CLIENT_BODY_CHUNKED : CSHS_CLIENT_BODY_LENGTH;
            rq.content_length = 64u << 20; /* far more than the sockets hold */
            rq.send_timeout_ms = 20000;    /* a send blocked to its end fails the test */
            cshs_call *call = NULL;
            assert_int_equal(cshs_client_begin(c, &rq, &call), 0);
            int r = 0;
            size_t sent = 0;
            while (sent < rq.content_length) {
                r = cshs_call_write(call, piece, sizeof piece);
                if (r != 0) break;
                sent += sizeof piece;
            }
            assert_int_equal(r, 1);
            assert_true(sent < rq.content_length);
            assert_int_equal(cshs_call_write(call, piece, sizeof piece), 1); /* still nothing */
            assert_int_equal(cshs_call_end(call), 0);
            assert_int_equal(cshs_call_status(call), 413);
            const char *body;
            size_t len;
            assert_int_equal(cshs_call_read_all(call, 1000, &body, &len), 0);
            assert_int_equal(len, strlen(EARLY_BODY));
            assert_memory_equal(body, EARLY_BODY, len);
            cshs_call_free(call);
            assert_int_equal(stats_of(c).open, 0); /* closed, not pooled */
        }
        /* the next request: a new connection, answered as usual */
        int conn = -1;
        assert_int_equal(get(c, url, "/", &conn, NULL), 200);
        assert_int_equal(conn, 2);
        cshs_client_free(c);
        origin_free(og);
    }
    SSL_CTX_free(ctx);
    unlink(cert_path);
}

/* ---- a request body from a file (CSHS_CLIENT_BODY_FILE) ---- */

#define FILE_BODY (3u << 20)
#define FILE_PREFIX 1001u /* odd: the body starts on no page or block boundary */
#define FILE_POS 5        /* the file's own position, which no send moves */

/* An unlinked temporary file: FILE_PREFIX bytes, `data` (FILE_BODY
 * bytes), then bytes that must never be sent. Its position is left at
 * FILE_POS, neither 0 nor the body's offset. */
static int body_file(const char *data)
{
    char path[] = "/tmp/cshs-client-body-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    unlink(path);
    char pad[4096];
    memset(pad, 'p', sizeof pad);
    assert_int_equal(write(fd, pad, FILE_PREFIX), FILE_PREFIX);
    for (size_t off = 0; off < FILE_BODY;) {
        ssize_t w = write(fd, data + off, FILE_BODY - off);
        assert_true(w > 0);
        off += (size_t)w;
    }
    memset(pad, 's', sizeof pad);
    assert_int_equal(write(fd, pad, sizeof pad), sizeof pad);
    assert_int_equal(lseek(fd, FILE_POS, SEEK_SET), FILE_POS);
    return fd;
}

/* A POST of the file's body (FILE_BODY bytes from FILE_PREFIX). */
static void file_request(cshs_client_request *rq, const char *url, int fd)
{
    cshs_client_request_init(rq);
    rq->origin = url;
    rq->method = "POST";
    rq->target = "/upload";
    rq->body_mode = CSHS_CLIENT_BODY_FILE;
    rq->body_fd = fd;
    rq->body_offset = FILE_PREFIX;
    rq->body_len = FILE_BODY;
}

/* The file's body POSTed to an echoing origin (by cshs_client_send, or
 * cshs_client_begin and cshs_call_end) comes back whole; then a GET on the
 * same connection is answered: the origin found it right after the body's
 * last byte (RFC 9112 §6.3: Content-Length frames the body), so nothing
 * past body_len was sent. */
static void file_echoed(cshs_client *c, const char *url, int fd, const char *data, int begin)
{
    cshs_client_request rq;
    file_request(&rq, url, fd);
    cshs_call *call = NULL;
    if (begin) {
        assert_int_equal(cshs_client_begin(c, &rq, &call), 0);
        assert_int_equal(cshs_call_end(call), 0);
    } else {
        assert_int_equal(send_via(c, &rq, &call), 0);
    }
    assert_int_equal(cshs_call_status(call), 200);
    int conn = conn_of(call);
    const char *body;
    size_t len;
    assert_int_equal(cshs_call_read_all(call, FILE_BODY, &body, &len), 0);
    assert_int_equal(len, FILE_BODY);
    assert_memory_equal(body, data, FILE_BODY);
    cshs_call_free(call);
    /* read with offsets: the file's position is where the caller left it */
    assert_int_equal(lseek(fd, 0, SEEK_CUR), FILE_POS);
    int again = -1;
    assert_int_equal(get(c, url, "/", &again, NULL), 200);
    assert_int_equal(again, conn);
}

/* client.h, CSHS_CLIENT_BODY_FILE: 3 MiB of a file from an offset, with
 * Content-Length: body_len and no other framing; sent by sendfile over
 * TCP and in 16 KiB pieces over TLS, each way of sending a whole body.
 * A file request without a file is refused before anything is sent; one
 * whose file ends before body_len fails rather than wait for bytes that
 * will never come. */
static void test_body_from_a_file(void **state)
{
    (void)state;
    char *data = pattern(FILE_BODY, 11);
    int fd = body_file(data);
    origin *og = origin_new();
    og->modes[0] = M_ECHO_HEAD;
    char url[64];
    origin_url(og, url, sizeof url);

    /* the head as the origin got it */
    cshs_client *c = client_with(1, 0);
    cshs_client_request rq;
    file_request(&rq, url, fd);
    cshs_call *call = NULL;
    assert_int_equal(send_via(c, &rq, &call), 0);
    assert_int_equal(cshs_call_status(call), 200);
    const char *body;
    size_t len;
    assert_int_equal(cshs_call_read_all(call, 4096, &body, &len), 0);
    char want[160];
    snprintf(want, sizeof want,
             "POST /upload HTTP/1.1\r\nHost: 127.0.0.1:%u\r\nContent-Length: %u\r\n\r\n", og->port,
             FILE_BODY);
    assert_string_equal(body, want);
    cshs_call_free(call);
    client_free(c);

    /* the bytes (connection 1 on: M_ECHO) */
    c = client_with(1, 0);
    file_echoed(c, url, fd, data, 0);
    file_echoed(c, url, fd, data, 1);
    cshs_client_pool_stats s = stats_of(c);
    assert_int_equal(s.opens, 1);
    assert_int_equal(s.requests, 4);

    /* no file (body_fd's default is none) */
    cshs_client_request_init(&rq);
    assert_int_equal(rq.body_fd, -1);
    int seen = atomic_load(&og->requests);
    file_request(&rq, url, -1);
    call = (cshs_call *)1;
    assert_int_equal(send_via(c, &rq, &call), -EINVAL);
    assert_null(call);
    call = (cshs_call *)1;
    assert_int_equal(cshs_client_begin(c, &rq, &call), -EINVAL);
    assert_null(call);
    assert_int_equal(stats_of(c).requests, 4); /* no connection taken */
    assert_int_equal(atomic_load(&og->requests), seen);

    /* a file shorter than body_len: the call fails and its connection,
     * whose request was cut short, is closed */
    file_request(&rq, url, fd);
    rq.body_offset = FILE_PREFIX + FILE_BODY; /* 4096 bytes left in the file */
    rq.body_len = 8192;
    call = (cshs_call *)1;
    assert_true(send_via(c, &rq, &call) < 0);
    assert_null(call);
    assert_int_equal(stats_of(c).open, 0);
    assert_int_equal(lseek(fd, 0, SEEK_CUR), FILE_POS);
    client_free(c);
    origin_free(og);

    /* over TLS: the file read with pread, a piece at a time */
    SSL_CTX *ctx = tls_origin_ctx();
    og = origin_new_on(0, ctx);
    origin_start(og);
    origin_url(og, url, sizeof url);
    cshs_client_options o;
    cshs_client_options_init(&o);
    o.tick_thread = 0;
    o.tls_insecure = 1;
    c = cshs_client_new(&o);
    file_echoed(c, url, fd, data, 0);
    file_echoed(c, url, fd, data, 1);
    assert_int_equal(stats_of(c).opens, 1);
    client_free(c);
    origin_free(og);
    SSL_CTX_free(ctx);
    unlink(cert_path);
    close(fd);
    free(data);
}

/* ---- reading the body without waiting (cshs_call_read_nowait) ---- */

/* Reads what is here of the body without waiting, 5 bytes at a time (a
 * piece need not be a chunk or a read of the socket), into buf: the bytes
 * read; *last, the read that stopped (-EAGAIN, 0 at the end, an error). */
static size_t read_here(cshs_call *call, char *buf, size_t cap, ssize_t *last)
{
    size_t have = 0;
    for (;;) {
        if (have + 5 > cap) {
            *last = -ENOBUFS;
            return have;
        }
        ssize_t n = cshs_call_read_nowait(call, buf + have, 5);
        if (n <= 0) {
            *last = n;
            return have;
        }
        have += (size_t)n;
    }
}

/* client.h, cshs_call_read_nowait. The origin sends the head and the
 * first part of the body, and the rest only when the test lets it: what
 * came is read without waiting, then -EAGAIN (again and again, failing
 * nothing: the call keeps its connection), and once the rest came a read
 * goes on to the end, after which the connection is back in the pool and
 * serves the next request. A Content-Length body (read straight into the
 * caller's memory once the buffer is empty) and a chunked one cut inside
 * a chunk, over TCP and TLS. */
static void test_read_without_waiting(void **state)
{
    (void)state;
    static const int modes[] = {M_TWO_PARTS, M_TWO_CHUNKS};
    SSL_CTX *ctx = tls_origin_ctx();
    for (int tls = 0; tls < 2; tls++)
        for (int m = 0; m < 2; m++) {
            /* blocking only: cshs_client_send_async's done waits for a
             * Content-Length body that fits the buffer (client.h), and
             * the rest comes only after the reads below */
            if (modes[m] == M_TWO_PARTS && api_mode == API_REACTOR) continue;
            origin *og = origin_new_on(0, tls ? ctx : NULL);
            for (int i = 0; i < 16; i++) og->modes[i] = modes[m];
            origin_start(og);
            char url[64];
            origin_url(og, url, sizeof url);
            cshs_client_options o;
            cshs_client_options_init(&o);
            o.tick_thread = 0;
            o.tls_insecure = tls;
            cshs_client *c = cshs_client_new(&o);
            cshs_client_request rq;
            cshs_client_request_init(&rq);
            rq.origin = url;
            for (int round = 0; round < 2; round++) {
                cshs_call *call;
                assert_int_equal(send_via(c, &rq, &call), 0);
                assert_int_equal(cshs_call_status(call), 200);
                char buf[64];
                ssize_t last = 0;
                size_t have = read_here(call, buf, sizeof buf, &last);
                assert_int_equal(last, -EAGAIN);
                assert_int_equal(have, strlen(TWO_FIRST));
                assert_memory_equal(buf, TWO_FIRST, have);
                assert_int_equal(cshs_call_read_nowait(call, buf + have, 5), -EAGAIN);
                assert_int_equal(cshs_call_body_here(call), 0);
                cshs_client_pool_stats s = stats_of(c);
                assert_int_equal(s.open, 1);
                assert_int_equal(s.idle, 0); /* still the call's */
                origin_release(og);
                ssize_t n;
                while ((n = cshs_call_read(call, buf + have, sizeof buf - have)) > 0)
                    have += (size_t)n;
                assert_int_equal(n, 0);
                assert_int_equal(have, strlen(TWO_FIRST TWO_REST));
                assert_memory_equal(buf, TWO_FIRST TWO_REST, have);
                assert_int_equal(cshs_call_read_nowait(call, buf, 5), 0); /* the end, again */
                assert_int_equal(stats_of(c).idle, 1);
                cshs_call_free(call);
            }
            assert_int_equal(stats_of(c).opens, 1);
            client_free(c);
            origin_free(og);
        }
    SSL_CTX_free(ctx);
    unlink(cert_path);
}

static void test_1xx_skipped(void **state)
{
    (void)state;
    origin *og = origin_new();
    og->modes[0] = M_1XX;
    og->modes[1] = M_101;
    char url[64];
    origin_url(og, url, sizeof url);
    cshs_client *c = client_with(1, 0);
    cshs_client_request rq;
    cshs_client_request_init(&rq);
    rq.origin = url;
    cshs_call *call;
    assert_int_equal(send_via(c, &rq, &call), 0);
    assert_int_equal(cshs_call_status(call), 200);
    assert_int_equal(cshs_call_header(call, "link", NULL, NULL), 0); /* the 103's field */
    const char *body;
    size_t len;
    assert_int_equal(cshs_call_read_all(call, 100, &body, &len), 0);
    assert_string_equal(body, "final");
    cshs_call_free(call);
    assert_int_equal(stats_of(c).idle, 1);
    client_free(c);
    origin_free(og);

    /* 101 is not skipped: the client never asked to switch protocols */
    og = origin_new();
    og->modes[0] = M_101;
    origin_url(og, url, sizeof url);
    c = client_with(1, 0);
    rq.origin = url;
    assert_int_equal(send_via(c, &rq, &call), CSHS_CLIENT_E_MALFORMED);
    client_free(c);
    origin_free(og);
}

static void test_answered_twice(void **state)
{
    (void)state;
    origin *og = origin_new();
    og->modes[0] = M_TWICE;
    char url[64];
    origin_url(og, url, sizeof url);
    cshs_client *c = client_with(4, 0);
    cshs_client_request rq;
    cshs_client_request_init(&rq);
    rq.origin = url;
    cshs_call *call;
    assert_int_equal(send_via(c, &rq, &call), 0);
    const char *body;
    size_t len;
    assert_int_equal(cshs_call_read_all(call, 100, &body, &len), CSHS_CLIENT_E_MALFORMED);
    assert_int_equal(cshs_call_read(call, (char[8]){0}, 8), CSHS_CLIENT_E_MALFORMED);
    cshs_call_free(call);
    cshs_client_pool_stats s = stats_of(c);
    assert_int_equal(s.open, 0); /* dropped */
    int conn = -1;
    assert_int_equal(get(c, url, "/", &conn, NULL), 200);
    assert_int_equal(conn, 1);
    client_free(c);
    origin_free(og);
}

/* The second answer comes in a send of its own, after the client has the
 * first one's head and body in its buffer. A blocking call looks at the
 * socket when the response ends: the bytes nobody asked for fail it
 * (MALFORMED). A response awaited on a server's loop skips that look:
 * the loop sees the bytes while the connection is idle, and the tick (or
 * its next use) drops it. Either way the next request gets another
 * connection. */
static void test_answered_twice_apart(void **state)
{
    (void)state;
    origin *og = origin_new();
    og->modes[0] = M_TWICE_APART;
    char url[64];
    origin_url(og, url, sizeof url);
    cshs_client *c = client_with(4, 0);
    cshs_client_request rq;
    cshs_client_request_init(&rq);
    rq.origin = url;
    cshs_call *call;
    assert_int_equal(send_via(c, &rq, &call), 0);
    origin_release(og);
    for (int i = 0; i < 5000 && !atomic_load(&og->sent_again); i++) sleep_ms(2);
    assert_int_equal(atomic_load(&og->sent_again), 1);
    const char *body;
    size_t len;
    int r = cshs_call_read_all(call, 100, &body, &len);
    if (api_mode == API_BLOCKING) {
        assert_int_equal(r, CSHS_CLIENT_E_MALFORMED);
    } else {
        assert_int_equal(r, 0);
        assert_int_equal(len, 2);
    }
    cshs_call_free(call);
    /* closed by the failed call, or by a tick once the loop has seen the
     * bytes (a request that took the connection before the loop did would
     * meet them: the window client.h describes) */
    unsigned zero = 0;
    assert_true(wait_for(c, 1, open_is, &zero));
    int conn = -1;
    assert_int_equal(get(c, url, "/", &conn, NULL), 200);
    assert_int_equal(conn, 1);
    client_free(c);
    origin_free(og);
}

static void test_malformed_and_timeouts(void **state)
{
    (void)state;
    origin *og = origin_new();
    og->modes[0] = M_MALFORMED;
    og->modes[1] = M_SILENT;
    og->modes[2] = M_STALL_BODY;
    char url[64];
    origin_url(og, url, sizeof url);
    cshs_client *c = client_with(4, 0);
    int err = 0;
    assert_int_equal(get(c, url, "/", NULL, &err), CSHS_CLIENT_E_MALFORMED);
    assert_int_equal(stats_of(c).open, 0);
    cshs_client_request rq;
    cshs_client_request_init(&rq);
    rq.origin = url;
    rq.head_timeout_ms = 100;
    cshs_call *call;
    assert_int_equal(send_via(c, &rq, &call), CSHS_CLIENT_E_HEAD_TIMEOUT);
    rq.read_timeout_ms = 100;
    assert_int_equal(send_via(c, &rq, &call), 0);
    char buf[16];
    assert_int_equal(cshs_call_read(call, buf, sizeof buf), 5);
    assert_int_equal(cshs_call_read(call, buf, sizeof buf), CSHS_CLIENT_E_READ_TIMEOUT);
    cshs_call_free(call);
    assert_int_equal(stats_of(c).open, 0);
    /* refused: the connect's error at the deadline */
    char dead[64];
    snprintf(dead, sizeof dead, "http://127.0.0.1:%u", dead_port());
    cshs_client *c2 = client_with(4, 1);
    rq.origin = dead;
    rq.acquire_timeout_ms = 50;
    assert_int_equal(send_via(c2, &rq, &call), CSHS_CLIENT_E_CONNECT);
    client_free(c2);
    client_free(c);
    origin_free(og);
}

/* ---- threads ---- */

typedef struct worker {
    cshs_client *c;
    const char *url;
    int n;
    int errors;
    int id;
} worker;

static void *worker_main(void *arg)
{
    worker *w = arg;
    char *body = pattern(3000, (unsigned)w->id);
    for (int i = 0; i < w->n; i++) {
        cshs_client_request rq;
        cshs_client_request_init(&rq);
        rq.origin = w->url;
        if (i % 3 == 1) {
            rq.method = "PUT";
            rq.body = body;
            rq.body_len = 3000;
        }
        cshs_call *call;
        int r = send_via(w->c, &rq, &call);
        if (r < 0) {
            w->errors++;
            continue;
        }
        const char *b;
        size_t len;
        r = cshs_call_read_all(call, 1 << 16, &b, &len);
        if (r < 0 || (i % 3 == 1 && (len != 3000 || memcmp(b, body, 3000) != 0))) w->errors++;
        cshs_call_free(call);
    }
    free(body);
    return NULL;
}

static void test_threads(void **state)
{
    (void)state;
    /* 8 threads share a pool of 3 connections; the origin closes one
     * connection in seven after its answer (Connection: close) */
    origin *og = origin_new();
    og->stress = 1;
    char url[64];
    origin_url(og, url, sizeof url);
    cshs_client *c = client_with(3, 1);
    pthread_t t[8];
    worker w[8];
    for (int i = 0; i < 8; i++) {
        memset(&w[i], 0, sizeof w[i]);
        w[i].c = c;
        w[i].url = url;
        w[i].n = 60;
        w[i].id = i;
        pthread_create(&t[i], NULL, worker_main, &w[i]);
    }
    for (int i = 0; i < 8; i++) {
        pthread_join(t[i], NULL);
        assert_int_equal(w[i].errors, 0);
    }
    cshs_client_pool_stats s = stats_of(c);
    assert_true(s.open <= 3);
    assert_true(s.requests >= 480);
    assert_true(s.opens > 1);
    client_free(c);
    origin_free(og);
}

/* The epoll sets this process has open. */
static int epoll_sets(void)
{
    DIR *d = opendir("/proc/self/fd");
    if (!d) return -1;
    int n = 0;
    struct dirent *e;
    char path[300], link[64];
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        snprintf(path, sizeof path, "/proc/self/fd/%s", e->d_name);
        ssize_t k = readlink(path, link, sizeof link - 1);
        if (k < 0) continue;
        link[k] = 0;
        if (strcmp(link, "anon_inode:[eventpoll]") == 0) n++;
    }
    closedir(d);
    return n;
}

/* One GET: errors 0 when it got 200, id the connection that answered. */
static void *one_get_main(void *arg)
{
    worker *w = arg;
    w->errors = get(w->c, w->url, "/", &w->id, NULL) == 200 ? 0 : 1;
    return NULL;
}

/* A blocking call waits in its thread's own loop (an epoll set made at
 * the thread's first blocking call). Its connection leaves that loop
 * when it goes back to the pool, so the loop goes with its thread, and
 * the idle connection serves the next thread's call. */
static void test_thread_loop_let_go(void **state)
{
    (void)state;
    origin *og = origin_new();
    char url[64];
    origin_url(og, url, sizeof url);
    cshs_client *c = client_with(2, 1);
    int before = epoll_sets();
    assert_true(before >= 0);
    for (int i = 0; i < 3; i++) {
        worker w;
        memset(&w, 0, sizeof w);
        w.c = c;
        w.url = url;
        pthread_t t;
        pthread_create(&t, NULL, one_get_main, &w);
        pthread_join(t, NULL);
        assert_int_equal(w.errors, 0);
        assert_int_equal(epoll_sets(), before);
    }
    cshs_client_pool_stats s = stats_of(c);
    assert_int_equal(s.opens, 1); /* one connection, reused by each thread */
    assert_int_equal(s.idle, 1);
    client_free(c);
    origin_free(og);
}

/* The lowest descriptor number free: a limit of it lets no descriptor be
 * made, whatever holes lie above it (counting the open ones would leave
 * those holes usable). */
static int lowest_free_fd(void)
{
    int fd = dup(0);
    if (fd >= 0) close(fd);
    return fd;
}

static void *send_no_fd_main(void *arg)
{
    worker *w = arg;
    cshs_client_request rq;
    cshs_client_request_init(&rq);
    rq.origin = w->url;
    cshs_call *call = (cshs_call *)1;
    w->errors = cshs_client_send(w->c, &rq, &call);
    if (call) w->errors = 1; /* *out must be NULL on an error */
    return NULL;
}

static int opening_is(cshs_client *c, void *arg)
{
    return stats_of(c).opening == *(unsigned *)arg;
}

/* A connect a blocking call started ends after another connection served
 * that call: its connection goes idle, and leaves the thread's loop as
 * one given back does (the loop goes with its thread). */
static void test_thread_loop_connect_ends_later(void **state)
{
    (void)state;
    SSL_CTX *ctx = tls_origin_ctx();
    origin *og = origin_new_on(0, ctx);
    og->modes[1] = M_TLS_WAITS;
    origin_start(og);
    char url[64];
    origin_url(og, url, sizeof url);
    cshs_client_options o;
    cshs_client_options_init(&o);
    o.pool_size = 2;
    o.tls_insecure = 1;
    cshs_client *c = cshs_client_new(&o);
    cshs_client_request rq;
    cshs_client_request_init(&rq);
    rq.origin = url;
    cshs_call *held = NULL;
    assert_int_equal(cshs_client_send(c, &rq, &held), 0); /* connection 0, held */
    int before = epoll_sets();
    worker w;
    memset(&w, 0, sizeof w);
    w.c = c;
    w.url = url;
    w.id = -1;
    pthread_t t;
    pthread_create(&t, NULL, one_get_main, &w); /* waits; its connect's handshake waits */
    unsigned one = 1;
    assert_true(wait_for(c, 0, opening_is, &one));
    const char *body;
    size_t len;
    assert_int_equal(cshs_call_read_all(held, 1 << 16, &body, &len), 0); /* 0 goes back: to it */
    cshs_call_free(held);
    origin_release(og); /* the connect ends: connection 1, idle */
    pthread_join(t, NULL);
    assert_int_equal(w.errors, 0);
    assert_int_equal(w.id, 0);
    cshs_client_pool_stats s = stats_of(c);
    assert_int_equal(s.opens, 2);
    assert_int_equal(s.idle, 2);
    assert_int_equal(epoll_sets(), before);
    cshs_client_free(c);
    origin_free(og);
    SSL_CTX_free(ctx);
    unlink(cert_path);
}

/* A thread whose loop cannot be made (no descriptor left) gets the
 * system's error from its blocking call, and nothing is left behind. */
static void test_thread_loop_no_descriptor(void **state)
{
    (void)state;
    origin *og = origin_new();
    char url[64];
    origin_url(og, url, sizeof url);
    cshs_client *c = client_with(2, 0);
    worker w;
    memset(&w, 0, sizeof w);
    w.c = c;
    w.url = url;
    struct rlimit old, tight;
    assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
    tight = old;
    tight.rlim_cur = (rlim_t)lowest_free_fd();
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &tight), 0);
    pthread_t t;
    pthread_create(&t, NULL, send_no_fd_main, &w);
    pthread_join(t, NULL);
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
    assert_int_equal(w.errors, -EMFILE);
    /* the same request from a thread that can make its loop */
    assert_int_equal(get(c, url, "/", NULL, NULL), 200);
    assert_int_equal(stats_of(c).requests, 1);
    client_free(c);
    origin_free(og);
}

/* A child of fork() makes a loop of its own for its blocking calls rather
 * than wait on its parent's epoll set, which the parent's threads share. */
static void test_thread_loop_after_fork(void **state)
{
    (void)state;
    origin *og = origin_new();
    char url[64];
    origin_url(og, url, sizeof url);
    cshs_client *c = client_with(2, 0);
    assert_int_equal(get(c, url, "/", NULL, NULL), 200); /* this thread's loop is made */
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) { /* no cmocka here: the exit status says it */
        int before = epoll_sets();
        cshs_client_options o;
        cshs_client_options_init(&o);
        o.tick_thread = 0;
        cshs_client *cc = cshs_client_new(&o);
        cshs_client_request rq;
        cshs_client_request_init(&rq);
        rq.origin = url;
        cshs_call *call = NULL;
        int ok = cc && cshs_client_send(cc, &rq, &call) == 0 && cshs_call_status(call) == 200;
        int after = epoll_sets();
        _exit(ok && after == before + 1 ? 0 : 1);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    assert_int_equal(get(c, url, "/", NULL, NULL), 200); /* the parent's loop goes on */
    client_free(c);
    origin_free(og);
}

/* ---- from a server's handlers, ticked by the server ---- */

static cshs_client *handler_client;
static char handler_origin[64];

/* A handler that asks the origin and answers what it got, or the status a
 * proxy answers for the client's error. */
static void proxy_handler(cshw_context *ctx)
{
    cshw_request *req = cshw_context_request(ctx);
    cshw_response *res = cshw_context_response(ctx);
    cshs_client_request rq;
    cshs_client_request_init(&rq);
    rq.origin = handler_origin;
    rq.target = cshw_request_path(req);
    rq.acquire_timeout_ms = 100;
    cshs_call *call = NULL;
    int r = send_via(handler_client, &rq, &call);
    const char *body = NULL;
    size_t len = 0;
    if (r == 0) r = cshs_call_read_all(call, 1 << 16, &body, &len);
    if (r < 0) {
        cshw_response_set_status(res, cshs_client_error_status(r));
        cshw_response_puts(res, cshs_client_error_name(r));
    } else {
        cshw_response_write(res, body, len);
    }
    cshs_call_free(call);
}

static void client_tick(void *arg)
{
    cshs_client_tick(arg);
}

/* A server running `handler` whose tick drives handler_client (it has no
 * tick thread), sweeping every 50 ms; loops 0: the default. */
static cshs_server *handler_server(cshw_handler handler, unsigned loops)
{
    cshs_options so;
    cshs_options_init(&so);
    so.port = 0;
    so.loops = loops;
    so.sweep_interval_ms = 50;
    cshs_server *srv = cshs_server_new(&so, handler, NULL);
    assert_non_null(srv);
    assert_int_equal(cshs_server_add_tick(srv, client_tick, handler_client), 0);
    assert_int_equal(cshs_server_start(srv), 0);
    return srv;
}

/* A keep-alive connection to the server on 127.0.0.1:port. */
static int server_connection(unsigned port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    struct timeval tv = {20, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
    return fd;
}

static void ka_send(int fd, const char *path)
{
    char rq[128];
    int n = snprintf(rq, sizeof rq, "GET %s HTTP/1.1\r\nHost: x\r\n\r\n", path);
    assert_int_equal(send(fd, rq, (size_t)n, MSG_NOSIGNAL), n);
}

/* GET path from the server on 127.0.0.1:port; the status, the body in out. */
static int ask_server(unsigned port, const char *path, char *out, size_t cap)
{
    int fd = server_connection(port);
    char rq[256];
    snprintf(rq, sizeof rq, "GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", path);
    send(fd, rq, strlen(rq), MSG_NOSIGNAL);
    char buf[4096];
    size_t n = recv_all(fd, buf, sizeof buf);
    close(fd);
    const char *b = strstr(buf, "\r\n\r\n");
    snprintf(out, cap, "%s", b ? b + 4 : "");
    return n > 12 ? atoi(buf + 9) : -1;
}

typedef struct asker {
    unsigned port;
    int status;
    char body[256];
} asker;

static void *asker_main(void *arg)
{
    asker *a = arg;
    a->status = ask_server(a->port, "/slow", a->body, sizeof a->body);
    return NULL;
}

static void test_from_handlers(void **state)
{
    (void)state;
    origin *og = origin_new();
    og->modes[0] = M_ECHO;
    origin_url(og, handler_origin, sizeof handler_origin);
    /* no tick thread: the server's tick drives the client */
    handler_client = client_with(1, 0);
    cshs_server *srv = handler_server(proxy_handler, 0);
    unsigned port = cshs_server_port(srv, 0);
    char body[256];
    assert_int_equal(ask_server(port, "/a", body, sizeof body), 200);
    assert_string_equal(body, "conn 0 req 0");
    assert_int_equal(ask_server(port, "/b", body, sizeof body), 200);
    assert_string_equal(body, "conn 0 req 1"); /* the pooled connection */
    /* the one connection held by the test: a handler's request waits, and
     * the server's tick fails it at its deadline (504 from the proxy) */
    cshs_client_request rq;
    cshs_client_request_init(&rq);
    rq.origin = handler_origin;
    cshs_call *held;
    assert_int_equal(send_via(handler_client, &rq, &held), 0);
    asker a = {port, 0, {0}};
    pthread_t t;
    pthread_create(&t, NULL, asker_main, &a);
    pthread_join(t, NULL);
    assert_int_equal(a.status, 504);
    assert_string_equal(a.body, "CSHS_CLIENT_E_ACQUIRE_TIMEOUT");
    cshs_call_free(held);
    cshs_server_free(srv);
    client_free(handler_client);
    origin_free(og);
}

/* ---- the response head awaited on the loop (cshs_call_end_async) ---- */

static char async_origins[3][64]; /* /a...: echo; /s...: silent; /t...: answers twice */

typedef struct async_wait {
    cshs_call *call;
    cshs_deferred *d;
    pthread_t loop_thread;
    int head_first; /* cshs_client_send_async's: the head is here before the continuation */
} async_wait;

/* The continuation: what the origin answered, or the error's name. It
 * runs on the loop's thread, as the handler did. */
static void async_answer(cshw_context *ctx, void *arg)
{
    async_wait *aw = arg;
    cshw_response *res = cshw_context_response(ctx);
    int head_here = cshs_call_status(aw->call) != 0;
    int r = cshs_call_end(aw->call);
    const char *body = NULL;
    size_t len = 0;
    if (r == 0) r = cshs_call_read_all(aw->call, 1 << 16, &body, &len);
    if (r < 0) {
        cshw_response_set_status(res, cshs_client_error_status(r));
        cshw_response_puts(res, cshs_client_error_name(r));
    } else if (!pthread_equal(pthread_self(), aw->loop_thread)) {
        cshw_response_puts(res, "not on the loop's thread");
    } else if (aw->head_first && !head_here) { /* cshs_call_end did the waiting, here */
        cshw_response_puts(res, "waited in the continuation");
    } else {
        cshw_response_write(res, body, len);
    }
    cshs_call_free(aw->call);
}

static void async_ready(void *arg)
{
    async_wait *aw = arg;
    cshs_deferred_resume(aw->d, async_answer, aw);
}

/* Sends the request and waits for the answer on the loop, holding no
 * thread (a proxy's way, server.h). */
static void async_handler(cshw_context *ctx)
{
    cshw_request *req = cshw_context_request(ctx);
    cshw_response *res = cshw_context_response(ctx);
    const char *path = cshw_request_path(req);
    async_wait *aw = cshw_arena_alloc(cshw_context_arena(ctx), sizeof *aw);
    cshs_client_request rq;
    cshs_client_request_init(&rq);
    rq.origin = async_origins[path[1] == 's' ? 1 : path[1] == 't' ? 2 : 0];
    rq.target = path;
    rq.head_timeout_ms = 200;
    aw->d = cshs_defer(ctx);
    aw->loop_thread = pthread_self();
    aw->head_first = 0; /* cshs_call_end may retry in the continuation */
    if (!aw->d) {
        cshw_response_puts(res, "not deferred");
        return;
    }
    int r = cshs_client_begin(handler_client, &rq, &aw->call);
    if (r < 0) {
        cshw_response_set_status(res, cshs_client_error_status(r));
        cshw_response_puts(res, cshs_client_error_name(r));
        cshs_deferred_resume(aw->d, NULL, NULL);
        return;
    }
    if (cshs_call_end_async(aw->call, cshs_deferred_reactor(aw->d), async_ready, aw) != 0)
        cshs_deferred_resume(aw->d, async_answer, aw);
}

/* Each answer comes from the origin's bytes read on the loop: the pooled
 * connection reused; a reused connection the origin closed unanswered
 * sent again on a new one (the retry rule, by cshs_call_end); a silent
 * origin failed at head_timeout_ms by the loop's look at its deadlines
 * (504); two answers to one request fail it and drop the connection. And
 * every one of these handlers was deferred: no thread waited. */
static void test_answer_awaited_on_the_loop(void **state)
{
    (void)state;
    origin *og[3];
    for (int i = 0; i < 3; i++) {
        og[i] = origin_new();
        origin_url(og[i], async_origins[i], sizeof async_origins[i]);
    }
    og[0]->modes[0] = M_CLOSE_SECOND; /* conn 0 answers once, then closes */
    og[1]->modes[0] = M_SILENT;
    og[2]->modes[0] = M_TWICE;
    handler_client = client_with(4, 0);
    cshs_server *srv = handler_server(async_handler, 1);
    unsigned port = cshs_server_port(srv, 0);
    char body[256];
    assert_int_equal(ask_server(port, "/a1", body, sizeof body), 200);
    assert_string_equal(body, "conn 0 req 0");
    /* the pooled connection, closed by the origin as it reads the request */
    assert_int_equal(ask_server(port, "/a2", body, sizeof body), 200);
    assert_string_equal(body, "conn 1 req 0");
    assert_int_equal(ask_server(port, "/a3", body, sizeof body), 200);
    assert_string_equal(body, "conn 1 req 1");
    int64_t t0 = mono_ms();
    assert_int_equal(ask_server(port, "/s", body, sizeof body), 504);
    assert_string_equal(body, "CSHS_CLIENT_E_HEAD_TIMEOUT");
    assert_true(mono_ms() - t0 >= 200);
    assert_int_equal(ask_server(port, "/t1", body, sizeof body), 502);
    assert_string_equal(body, "CSHS_CLIENT_E_MALFORMED");
    assert_int_equal(ask_server(port, "/t2", body, sizeof body), 200);
    assert_string_equal(body, "conn 1 req 0"); /* not the second answer's connection */
    /* the silent origin's pool may be gone (empty, dropped by the tick) */
    cshs_client_pool_stats ps[4];
    ssize_t np = cshs_client_stats(handler_client, ps, 4);
    uint64_t retries = 0;
    for (ssize_t i = 0; i < np && i < 4; i++) retries += ps[i].retries;
    assert_int_equal(retries, 1);
    cshs_counters k;
    assert_int_equal(cshs_server_counters(srv, &k), 0);
    assert_int_equal(k.deferred, 6);
    assert_int_equal(k.handovers, 0);
    cshs_server_free(srv);
    cshs_client_free(handler_client);
    for (int i = 0; i < 3; i++) origin_free(og[i]);
}

/* ---- waiting for a connection on the loop (cshs_client_send_async) ---- */

/* /q...: the origin; /qd: a dead one; /qs: over TLS; /qr: one that closes */
static char queue_origins[4][64];

/* The whole request waits on the loop: for a connection, then for the
 * head. /qt waits for a connection 300 ms at most. */
static void queued_handler(cshw_context *ctx)
{
    cshw_request *req = cshw_context_request(ctx);
    cshw_response *res = cshw_context_response(ctx);
    const char *path = cshw_request_path(req);
    async_wait *q = cshw_arena_alloc(cshw_context_arena(ctx), sizeof *q);
    q->d = cshs_defer(ctx);
    q->loop_thread = pthread_self();
    q->head_first = 1;
    if (!q->d) {
        cshw_response_puts(res, "not deferred");
        return;
    }
    cshs_client_request rq;
    cshs_client_request_init(&rq);
    rq.origin = queue_origins[path[2] == 'd' ? 1 : path[2] == 's' ? 2 : path[2] == 'r' ? 3 : 0];
    rq.target = path;
    if (path[2] == 't') rq.acquire_timeout_ms = 300;
    int r = cshs_client_send_async(handler_client, &rq, cshs_deferred_reactor(q->d), async_ready, q,
                                   &q->call);
    if (r < 0) {
        cshw_response_set_status(res, cshs_client_error_status(r));
        cshw_response_puts(res, cshs_client_error_name(r));
        cshs_deferred_resume(q->d, NULL, NULL);
        return;
    }
    if (r == 1) cshs_deferred_resume(q->d, async_answer, q);
}

typedef struct path_asker {
    unsigned port;
    const char *path;
    int status;
    char body[256];
} path_asker;

static void *path_asker_main(void *arg)
{
    path_asker *a = arg;
    a->status = ask_server(a->port, a->path, a->body, sizeof a->body);
    return NULL;
}

static void wait_for_waiters(cshs_client *c, unsigned n)
{
    for (int i = 0; i < 2000 && stats_of(c).waiters != n; i++) sleep_ms(2);
    assert_int_equal(stats_of(c).waiters, n);
}

/* A call that holds the pool's one connection: its head read, its body
 * not yet. */
static cshs_call *hold_connection(const char *target)
{
    cshs_client_request rq;
    cshs_client_request_init(&rq);
    rq.origin = queue_origins[0];
    rq.target = target;
    cshs_call *held = NULL;
    assert_int_equal(cshs_client_send(handler_client, &rq, &held), 0);
    return held;
}

/* client.h, cshs_client_send_async. With one connection in the pool,
 * requests that find it taken wait on the loop, first in, first out,
 * and no thread waits for them: the loop's thread runs every handler
 * (nothing offloaded, no hand-over) while three wait, and a connection
 * given back by another thread carries the first waiter's request
 * straight away. A connect is started and seen through on the loop (the
 * first request, and after the connection in use was closed); a waiter
 * fails at its acquire deadline (the tick), and at once for a dead
 * origin (the refused connect, as nginx's 502). */
static void test_waiting_for_a_connection_on_the_loop(void **state)
{
    (void)state;
    origin *og = origin_new();
    origin_url(og, queue_origins[0], sizeof queue_origins[0]);
    int lfd = socket(AF_INET, SOCK_STREAM, 0); /* bound, never listening: refused */
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(lfd, (struct sockaddr *)&a, sizeof a), 0);
    socklen_t al = sizeof a;
    getsockname(lfd, (struct sockaddr *)&a, &al);
    snprintf(queue_origins[1], sizeof queue_origins[1], "http://127.0.0.1:%u",
             (unsigned)ntohs(a.sin_port));
    handler_client = client_with(1, 0);
    cshs_server *srv = handler_server(queued_handler, 1);
    unsigned port = cshs_server_port(srv, 0);
    char body[256];

    /* no connection yet: its connect is watched on the loop */
    assert_int_equal(ask_server(port, "/q0", body, sizeof body), 200);
    assert_string_equal(body, "conn 0 req 0");

    /* the one connection held: three requests wait for it, in order */
    cshs_call *held = hold_connection("/held");
    path_asker ask[3];
    pthread_t t[3];
    for (int i = 0; i < 3; i++) {
        ask[i] = (path_asker){.port = port, .path = i == 0 ? "/q1" : i == 1 ? "/q2" : "/q3"};
        pthread_create(&t[i], NULL, path_asker_main, &ask[i]);
        wait_for_waiters(handler_client, (unsigned)i + 1);
    }
    cshs_counters k;
    assert_int_equal(cshs_server_counters(srv, &k), 0);
    assert_int_equal(k.offloaded, 0);
    assert_int_equal(k.handovers, 0);
    assert_int_equal(k.connections_active, 3); /* waiting, each on its loop */
    const char *b;
    size_t len;
    assert_int_equal(cshs_call_read_all(held, 1 << 16, &b, &len), 0); /* given back here */
    cshs_call_free(held);
    for (int i = 0; i < 3; i++) {
        pthread_join(t[i], NULL);
        assert_int_equal(ask[i].status, 200);
        char want[32];
        snprintf(want, sizeof want, "conn 0 req %d", i + 2);
        assert_string_equal(ask[i].body, want); /* first in, first out, on the one connection */
    }

    /* its deadline: failed by the tick (the server's, every 50 ms) */
    held = hold_connection("/held");
    int64_t t0 = mono_ms();
    assert_int_equal(ask_server(port, "/qt", body, sizeof body), 504);
    assert_string_equal(body, "CSHS_CLIENT_E_ACQUIRE_TIMEOUT");
    assert_true(mono_ms() - t0 >= 300);
    assert_int_equal(stats_of(handler_client).acquire_timeouts, 1);

    /* the connection in use is closed (its body left unread): the waiter
     * gets the new connection the loop opens for it */
    path_asker next = {.port = port, .path = "/q4"};
    pthread_create(&t[0], NULL, path_asker_main, &next);
    wait_for_waiters(handler_client, 1);
    cshs_call_free(held);
    pthread_join(t[0], NULL);
    assert_int_equal(next.status, 200);
    assert_string_equal(next.body, "conn 1 req 0");
    assert_int_equal(stats_of(handler_client).opens, 2);

    /* a refused connect: 502 at once, the backoff counted */
    t0 = mono_ms();
    assert_int_equal(ask_server(port, "/qd", body, sizeof body), 502);
    assert_string_equal(body, "CSHS_CLIENT_E_CONNECT");
    assert_true(mono_ms() - t0 < 1000);
    assert_int_equal(cshs_server_counters(srv, &k), 0);
    assert_int_equal(k.offloaded, 0);
    assert_int_equal(k.deferred, 7);
    cshs_server_free(srv);
    cshs_client_free(handler_client);
    close(lfd);
    origin_free(og);
}

/* ---- a connection given back stays on its loop ---- */

static cshs_reactor *loops_seen[2]; /* the server's loops, in the order first seen */
static pthread_mutex_t loops_mu = PTHREAD_MUTEX_INITIALIZER;

static int loop_index(cshs_reactor *rx)
{
    pthread_mutex_lock(&loops_mu);
    int i = 0;
    while (i < 2 && loops_seen[i] && loops_seen[i] != rx) i++;
    if (i < 2 && !loops_seen[i]) loops_seen[i] = rx;
    pthread_mutex_unlock(&loops_mu);
    return i;
}

static void loop_answer(cshw_context *ctx, void *arg)
{
    cshw_response_printf(cshw_context_response(ctx), "loop %d", (int)(intptr_t)arg);
}

/* /loop: which loop the connection is on; anything else: queued_handler's
 * way to the origin, the path as the target. */
static void own_loop_handler(cshw_context *ctx)
{
    cshw_request *req = cshw_context_request(ctx);
    cshs_deferred *d = cshs_defer(ctx);
    assert_non_null(d);
    if (strcmp(cshw_request_path(req), "/loop") == 0) {
        cshs_deferred_resume(d, loop_answer,
                             (void *)(intptr_t)loop_index(cshs_deferred_reactor(d)));
        return;
    }
    async_wait *q = cshw_arena_alloc(cshw_context_arena(ctx), sizeof *q);
    q->d = d;
    q->loop_thread = pthread_self();
    q->head_first = 1;
    cshs_client_request rq;
    cshs_client_request_init(&rq);
    rq.origin = queue_origins[0];
    rq.target = cshw_request_path(req);
    int r = cshs_client_send_async(handler_client, &rq, cshs_deferred_reactor(d), async_ready, q,
                                   &q->call);
    assert_true(r >= 0);
    if (r == 1) cshs_deferred_resume(d, async_answer, q);
}

/* One response on a keep-alive connection (Content-Length framed): its
 * status, its body in out. */
static int ka_read(int fd, char *out, size_t cap)
{
    char buf[1024];
    size_t have = 0;
    char *end = NULL;
    while (!end) {
        ssize_t n = recv(fd, buf + have, sizeof buf - 1 - have, 0);
        if (n <= 0) return -1;
        have += (size_t)n;
        buf[have] = 0;
        end = strstr(buf, "\r\n\r\n");
    }
    const char *cl = strcasestr(buf, "\r\ncontent-length:");
    if (!cl) return -1;
    size_t len = strtoul(cl + 17, NULL, 10);
    size_t head = (size_t)(end + 4 - buf);
    while (have < head + len) {
        ssize_t n = recv(fd, buf + have, sizeof buf - 1 - have, 0);
        if (n <= 0) return -1;
        have += (size_t)n;
    }
    if (len >= cap) len = cap - 1;
    memcpy(out, buf + head, len);
    out[len] = 0;
    return atoi(buf + 9);
}

static void wait_for_waiters_now(cshs_client *c, unsigned n)
{
    for (int i = 0; i < 4000000 && stats_of(c).waiters != n; i++) sched_yield();
    assert_int_equal(stats_of(c).waiters, n);
}

static void hold_origin(origin *o, int hold)
{
    pthread_mutex_lock(&o->mu);
    o->hold = hold;
    pthread_cond_broadcast(&o->cv);
    pthread_mutex_unlock(&o->mu);
}

/* The request number of an origin's "conn 0 req N" answer. */
static int req_number(const char *body)
{
    const char *r = strstr(body, "req ");
    assert_non_null(r);
    return atoi(r + 4);
}

/* One round: the pool's one connection in use by a request of loop A;
 * then a request of loop B waits, `gap_ms` later one of loop A; the
 * connection is given back on loop A. 1 when A's waiter was served
 * first, 0 when B's was; *span_us: from B's request sent until both were
 * seen waiting, a bound on how far apart they came. */
static int round_of_waiters(origin *og, int a1, int a2, int b1, int gap_ms, int64_t *span_us)
{
    char body[256];
    hold_origin(og, INT_MAX);
    ka_send(a1, "/held");
    for (int i = 0; i < 2000; i++) {
        cshs_client_pool_stats st = stats_of(handler_client);
        if (st.open == 1 && st.idle == 0) break;
        sleep_ms(1);
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    ka_send(b1, "/b");
    wait_for_waiters_now(handler_client, 1);
    if (gap_ms) sleep_ms(gap_ms);
    ka_send(a2, "/a");
    wait_for_waiters_now(handler_client, 2);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    *span_us = (t1.tv_sec - t0.tv_sec) * 1000000 + (t1.tv_nsec - t0.tv_nsec) / 1000;
    hold_origin(og, 0);
    assert_int_equal(ka_read(a1, body, sizeof body), 200);
    char a_body[256], b_body[256];
    assert_int_equal(ka_read(a2, a_body, sizeof a_body), 200);
    assert_int_equal(ka_read(b1, b_body, sizeof b_body), 200);
    return req_number(a_body) < req_number(b_body);
}

/* client.h, "The pool": a connection given back on a loop goes to the
 * first waiter of that loop when it came within 2 ms of the pool's first
 * waiter (of another loop), which it would otherwise have to be moved to;
 * a first waiter older than that by more is served first, as strict
 * first in, first out. Two loops, a pool of one connection. */
static void test_connection_stays_on_its_loop(void **state)
{
    (void)state;
    origin *og = origin_new();
    origin_url(og, queue_origins[0], sizeof queue_origins[0]);
    handler_client = client_with(1, 0);
    memset(loops_seen, 0, sizeof loops_seen);
    cshs_server *srv = handler_server(own_loop_handler, 2);
    unsigned port = cshs_server_port(srv, 0);

    /* connections to the server until one loop has two and the other one */
    int on[2][2] = {{-1, -1}, {-1, -1}}, non[2] = {0, 0};
    for (int i = 0; i < 256 && !((non[0] == 2 && non[1] >= 1) || (non[1] == 2 && non[0] >= 1));
         i++) {
        int fd = server_connection(port);
        char body[64];
        ka_send(fd, "/loop");
        assert_int_equal(ka_read(fd, body, sizeof body), 200);
        int l = atoi(body + 5);
        assert_true(l == 0 || l == 1);
        if (non[l] < 2)
            on[l][non[l]++] = fd;
        else
            close(fd);
    }
    int la = non[0] == 2 && non[1] >= 1 ? 0 : 1;
    assert_int_equal(non[la], 2);
    assert_true(non[1 - la] >= 1);
    int a1 = on[la][0], a2 = on[la][1], b1 = on[1 - la][0];
    if (non[1 - la] == 2) close(on[1 - la][1]);

    /* the pool's connection, opened for loop A and idle there */
    char body[256];
    ka_send(a1, "/first");
    assert_int_equal(ka_read(a1, body, sizeof body), 200);
    assert_string_equal(body, "conn 0 req 0");

    /* B's waiter first, A's right after it: A's is served first (a
     * machine too slow to queue both within the slack is tried again) */
    int64_t span = 0;
    int a_first = -1;
    for (int round = 0; round < 20; round++) {
        int r = round_of_waiters(og, a1, a2, b1, 0, &span);
        if (span <= 1500) {
            a_first = r;
            break;
        }
    }
    if (a_first < 0) skip(); /* never queued within the slack: the rule cannot be seen */
    assert_int_equal(a_first, 1);

    /* B's waiter older by more than the slack: served first */
    assert_int_equal(round_of_waiters(og, a1, a2, b1, 10, &span), 0);
    assert_int_equal(stats_of(handler_client).opens, 1);

    close(a1);
    close(a2);
    close(b1);
    cshs_server_free(srv);
    cshs_client_free(handler_client);
    origin_free(og);
}

/* ---- a client that leaves gives its request up (cshs_call_cancel) ---- */

static atomic_int cancel_results; /* cshs_call_cancel's 0s */
static atomic_int canceled_ends;  /* continuations whose call ended CANCELED */

static void canceled_answer(cshw_context *ctx, void *arg)
{
    async_wait *q = arg;
    int r = cshs_call_end(q->call);
    if (r == CSHS_CLIENT_E_CANCELED) atomic_fetch_add(&canceled_ends, 1);
    cshw_response_set_status(cshw_context_response(ctx), r < 0 ? 499 : 200);
    cshs_call_free(q->call);
}

static void canceled_ready(void *arg)
{
    async_wait *q = arg;
    cshs_deferred_resume(q->d, canceled_answer, q);
}

/* The client left (cshs_deferred_on_abort): on the loop's thread, as
 * cshs_call_cancel wants. */
static void client_left(void *arg)
{
    async_wait *q = arg;
    if (cshs_call_cancel(q->call) == 0) atomic_fetch_add(&cancel_results, 1);
}

/* queued_handler's way, the origin silent, and given up when the client
 * leaves. */
static void cancel_handler(cshw_context *ctx)
{
    async_wait *q = cshw_arena_alloc(cshw_context_arena(ctx), sizeof *q);
    q->d = cshs_defer(ctx);
    assert_non_null(q->d);
    cshs_client_request rq;
    cshs_client_request_init(&rq);
    rq.origin = queue_origins[0];
    rq.target = cshw_request_path(cshw_context_request(ctx));
    rq.head_timeout_ms = 60000;
    rq.acquire_timeout_ms = 60000;
    cshs_deferred_on_abort(q->d, client_left, q);
    assert_int_equal(cshs_client_send_async(handler_client, &rq, cshs_deferred_reactor(q->d),
                                            canceled_ready, q, &q->call),
                     0);
}

/* A connection to the server with a request sent: the client that will
 * leave. */
static int ask_and_stay(unsigned port, const char *path)
{
    int fd = server_connection(port);
    ka_send(fd, path);
    return fd;
}

static void wait_atomic(atomic_int *v, int want)
{
    for (int i = 0; i < 2000 && atomic_load(v) != want; i++) sleep_ms(2);
    assert_int_equal(atomic_load(v), want);
}

/* client.h, cshs_call_cancel; server.h, cshs_deferred_on_abort. A
 * request whose head the silent origin never sends: its client closes,
 * the loop tells the request, the call is given up and its connection
 * closed (the origin sees the close), the continuation ends it with
 * CSHS_CLIENT_E_CANCELED. A request still queued for the pool's one
 * connection leaves the queue. Off its reactor's thread, or for a call
 * not on a reactor, the cancel is refused. */
static void test_client_that_leaves_cancels(void **state)
{
    (void)state;
    origin *og = origin_new();
    og->modes[0] = M_SILENT;
    origin_url(og, queue_origins[0], sizeof queue_origins[0]);
    handler_client = client_with(1, 0);
    atomic_store(&cancel_results, 0);
    atomic_store(&canceled_ends, 0);
    cshs_server *srv = handler_server(cancel_handler, 1);
    unsigned port = cshs_server_port(srv, 0);

    /* its head awaited: the origin's connection closes */
    int fd = ask_and_stay(port, "/c1");
    wait_atomic(&og->nconns, 1);
    for (int i = 0; i < 2000 && stats_of(handler_client).open != 1; i++) sleep_ms(2);
    /* a second request waits in the queue for the one connection */
    int fd2 = ask_and_stay(port, "/c2");
    wait_for_waiters(handler_client, 1);
    close(fd2);
    wait_for_waiters(handler_client, 0);
    wait_atomic(&cancel_results, 1);
    wait_atomic(&canceled_ends, 1);
    assert_int_equal(atomic_load(&og->ended), 0); /* the first still waits */
    close(fd);
    wait_atomic(&cancel_results, 2);
    wait_atomic(&canceled_ends, 2);
    wait_atomic(&og->ended, 1);
    assert_int_equal(stats_of(handler_client).open, 0);

    assert_int_equal(cshs_call_cancel(NULL), -EINVAL);
    cshs_client_request rq;
    cshs_client_request_init(&rq);
    rq.origin = queue_origins[0];
    rq.target = "/blocking";
    rq.head_timeout_ms = 100;
    cshs_call *call = NULL;
    assert_int_equal(cshs_client_begin(handler_client, &rq, &call), 0);
    assert_int_equal(cshs_call_cancel(call), -EINVAL); /* not on a reactor */
    cshs_call_free(call);
    cshs_server_free(srv);
    cshs_client_free(handler_client);
    origin_free(og);
}

/* The retry rule for a request that waits on the loop: the reused
 * connection the origin closed unanswered is replaced by one opened for
 * it on the loop, and the request sent again there, before its
 * continuation runs (which finds the head here). */
/* The end of a test on the loop: no handler was offloaded (none held a
 * thread); the server and handler_client are freed. */
static void end_on_the_loop(cshs_server *srv)
{
    cshs_counters k;
    assert_int_equal(cshs_server_counters(srv, &k), 0);
    assert_int_equal(k.offloaded, 0);
    cshs_server_free(srv);
    client_free(handler_client);
}

static int looks_are(cshs_client *c, void *arg)
{
    cshs_client_pool_stats s = stats_of(c);
    return s.idle == 0 && s.looks == *(uint64_t *)arg;
}

/* A connection waited on by a loop stays registered there (edge-triggered)
 * between its requests: taking it again looks at nothing (no poll()), and
 * what the origin sends while it is idle (a FIN, or an answer nobody asked
 * for) comes as an event there, after which the tick's sweep looks at it
 * and closes it, so that no request meets it. */
static void test_idle_connection_seen_on_the_loop(void **state)
{
    (void)state;
    origin *og = origin_new();
    for (int i = 1; i < 16; i++) og->modes[i] = M_ECHO_FLAGGED; /* 0: the held one */
    origin_url(og, queue_origins[0], sizeof queue_origins[0]);
    handler_client = client_with(4, 0);
    cshs_server *srv = handler_server(queued_handler, 1);
    unsigned port = cshs_server_port(srv, 0);
    /* connection 0, held by a call of this thread, keeps the pool (an
     * empty one is dropped with its counters) */
    cshs_call *held = hold_connection("/held");
    char body[256], want[64];
    for (int i = 0; i < 10; i++) {
        assert_int_equal(ask_server(port, "/qa", body, sizeof body), 200);
        snprintf(want, sizeof want, "conn 1 req %d", i);
        assert_string_equal(body, want);
    }
    sleep_ms(300); /* sweeps of the idle connection, each 50 ms */
    cshs_client_pool_stats ps = stats_of(handler_client);
    assert_int_equal(ps.opens, 2);
    assert_int_equal(ps.idle, 1);
    assert_int_equal(ps.looks, 0); /* nine reuses and the sweeps: no poll() */
    /* a stray answer on the idle connection: looked at once, closed, and
     * never read as the next request's answer (RFC 9112 section 9.6: a
     * response to no request is the sign of a desynchronised connection) */
    atomic_store(&og->stray_now, 1);
    uint64_t one = 1;
    assert_true(wait_for(handler_client, 0, looks_are, &one));
    assert_int_equal(ask_server(port, "/qa", body, sizeof body), 200);
    assert_string_equal(body, "conn 2 req 0");
    /* the origin's FIN while idle: the same */
    atomic_store(&og->fin_now, 1);
    uint64_t two = 2;
    assert_true(wait_for(handler_client, 0, looks_are, &two));
    assert_int_equal(ask_server(port, "/qa", body, sizeof body), 200);
    assert_string_equal(body, "conn 3 req 0");
    ps = stats_of(handler_client);
    assert_int_equal(ps.retries, 0);
    assert_int_equal(ps.looks, 2);
    assert_int_equal(ps.open, 2);
    cshs_call_free(held);
    end_on_the_loop(srv);
    origin_free(og);
}

static void test_retry_on_the_loop(void **state)
{
    (void)state;
    origin *og = origin_new();
    og->modes[0] = M_CLOSE_SECOND; /* conn 0 answers once, then closes */
    origin_url(og, queue_origins[3], sizeof queue_origins[3]);
    handler_client = client_with(4, 0);
    cshs_server *srv = handler_server(queued_handler, 1);
    unsigned port = cshs_server_port(srv, 0);
    char body[256];
    assert_int_equal(ask_server(port, "/qr0", body, sizeof body), 200);
    assert_string_equal(body, "conn 0 req 0");
    assert_int_equal(ask_server(port, "/qr1", body, sizeof body), 200);
    assert_string_equal(body, "conn 1 req 0");
    assert_int_equal(ask_server(port, "/qr2", body, sizeof body), 200);
    assert_string_equal(body, "conn 1 req 1");
    cshs_client_pool_stats ps = stats_of(handler_client);
    assert_int_equal(ps.retries, 1);
    assert_int_equal(ps.opens, 2);
    end_on_the_loop(srv);
    origin_free(og);
}

/* A burst of requests into an empty pool of 2 opens 2 connections on the
 * loop, in parallel, and no more (the rule for opens in flight). */
static void test_burst_opens_on_the_loop(void **state)
{
    (void)state;
    origin *og = origin_new();
    og->hold = 2; /* answers once both connections carry a request */
    origin_url(og, queue_origins[0], sizeof queue_origins[0]);
    handler_client = client_with(2, 0);
    cshs_server *srv = handler_server(queued_handler, 1);
    unsigned port = cshs_server_port(srv, 0);
    path_asker ask[6];
    pthread_t t[6];
    for (int i = 0; i < 6; i++) {
        ask[i] = (path_asker){.port = port, .path = "/q"};
        pthread_create(&t[i], NULL, path_asker_main, &ask[i]);
    }
    for (int i = 0; i < 6; i++) {
        pthread_join(t[i], NULL);
        assert_int_equal(ask[i].status, 200);
    }
    assert_int_equal(stats_of(handler_client).opens, 2);
    cshs_server_free(srv);
    cshs_client_free(handler_client);
    origin_free(og);
}

/* ---- a streamed body written on the loop (cshs_call_write_async) ---- */

#define STREAM_BODY (16u << 20) /* more than loopback's socket buffers hold */
#define STREAM_PIECE 16384u

static struct {
    char origin[64];       /* M_READ_LATER */
    char early_origin[64]; /* M_EARLY_HOLD */
    const char *data;      /* STREAM_BODY bytes */
    atomic_int pendings;   /* writes that returned 1 (drained followed) */
    atomic_int off_loop;   /* cshs_call_write_async off the loop: its -EINVAL */
} stream_body;

typedef struct stream_up {
    cshs_call *call;
    cshs_deferred *d;
    size_t sent, total; /* body bytes written, and to write */
    int early;          /* a write said 2 */
    int write_err;      /* a write's error */
} stream_up;

static void stream_write(cshw_context *ctx, void *arg);

/* The head is out, or a piece went, or the call failed. */
static void stream_sent(void *arg)
{
    stream_up *up = arg;
    cshs_deferred_resume(up->d, stream_write, up);
}

/* The answer, checked on a job (a 16 MiB echo is read waiting). */
static void stream_answer(cshw_context *ctx, void *arg)
{
    stream_up *up = arg;
    cshw_response *res = cshw_context_response(ctx);
    if (cshs_call_write_async(up->call, "x", 1, stream_sent, up) == -EINVAL)
        atomic_fetch_add(&stream_body.off_loop, 1);
    int r = cshs_call_end(up->call);
    const char *body = NULL;
    size_t len = 0;
    if (r == 0) r = cshs_call_read_all(up->call, STREAM_BODY, &body, &len);
    if (r < 0)
        cshw_response_printf(res, "failed %d (write %d)", r, up->write_err);
    else if (up->early)
        cshw_response_printf(res, "answered %d early", cshs_call_status(up->call));
    else if (len != up->total || memcmp(body, stream_body.data, len) != 0)
        cshw_response_printf(res, "not the bytes written (%zu)", len);
    else
        cshw_response_printf(res, "echoed %zu bytes", len);
    cshs_call_free(up->call);
}

static void stream_head(void *arg)
{
    stream_up *up = arg;
    cshs_deferred_run(up->d, stream_answer, up);
}

/* Writes the body piece by piece on the loop, then ends it. */
static void stream_write(cshw_context *ctx, void *arg)
{
    stream_up *up = arg;
    up->d = cshs_defer(ctx);
    assert_non_null(up->d);
    cshs_reactor *rx = cshs_deferred_reactor(up->d);
    while (up->sent < up->total) {
        size_t n = up->total - up->sent < STREAM_PIECE ? up->total - up->sent : STREAM_PIECE;
        int w = cshs_call_write_async(up->call, stream_body.data + up->sent, n, stream_sent, up);
        if (w == 0 || w == 1) up->sent += n;
        if (w == 1) {
            atomic_fetch_add(&stream_body.pendings, 1);
            return;
        }
        if (w == 0) continue;
        if (w == 2)
            up->early = 1;
        else
            up->write_err = w;
        break;
    }
    if (cshs_call_end_async(up->call, rx, stream_head, up) != 0)
        cshs_deferred_run(up->d, stream_answer, up);
}

/* /sl: Content-Length; /sc: chunked; /ss: a length of 2,000 with 1,000
 * written; /se: to the origin that answers 413 at the head. */
static void stream_handler(cshw_context *ctx)
{
    const char *path = cshw_request_path(cshw_context_request(ctx));
    stream_up *up = cshw_arena_alloc(cshw_context_arena(ctx), sizeof *up);
    memset(up, 0, sizeof *up);
    up->d = cshs_defer(ctx);
    assert_non_null(up->d);
    cshs_client_request rq;
    cshs_client_request_init(&rq);
    rq.origin = path[2] == 'e' ? stream_body.early_origin : stream_body.origin;
    rq.method = "POST";
    rq.target = path;
    rq.body_mode = path[2] == 'c' ? CSHS_CLIENT_BODY_CHUNKED : CSHS_CLIENT_BODY_LENGTH;
    rq.content_length = path[2] == 's' ? 2000 : STREAM_BODY;
    up->total = path[2] == 's' ? 1000 : STREAM_BODY;
    int r = cshs_client_send_async(handler_client, &rq, cshs_deferred_reactor(up->d), stream_sent,
                                   up, &up->call);
    assert_true(r >= 0);
    if (r == 1) cshs_deferred_resume(up->d, stream_write, up);
}

/* Asks `path` of the server while its origin reads nothing until a write
 * found the socket full; then lets the origin read. */
static void ask_streamed(origin *og, unsigned port, const char *path, path_asker *a)
{
    *a = (path_asker){.port = port, .path = path};
    int before = atomic_load(&stream_body.pendings);
    pthread_t t;
    pthread_create(&t, NULL, path_asker_main, a);
    for (int i = 0; i < 5000 && atomic_load(&stream_body.pendings) == before; i++) sleep_ms(2);
    assert_true(atomic_load(&stream_body.pendings) > before);
    origin_release(og);
    pthread_join(t, NULL);
}

/* client.h, "A streamed body on the reactor": 16 MiB written on the loop
 * with Content-Length and chunked, plain and over TLS, to an origin that
 * reads nothing at first: a write finds the socket full (1), drained
 * resumes the writer, the echo comes back byte for byte, on one
 * connection. A body short of its length fails at its end (-EINVAL), and
 * a write off the loop is refused; an origin that answers 413 at the head
 * and reads no more: a write says 2 and the call ends with that answer
 * (RFC 9110 §15.5.14, RFC 9112 §9.5). */
static void test_streamed_body_on_the_loop(void **state)
{
    (void)state;
    char *data = pattern(STREAM_BODY, 29);
    stream_body.data = data;
    SSL_CTX *ctx = tls_origin_ctx();
    for (int tls = 0; tls < 2; tls++) {
        origin *og = origin_new_on(0, tls ? ctx : NULL);
        for (int i = 0; i < 16; i++) og->modes[i] = M_READ_LATER;
        origin_start(og);
        origin_url(og, stream_body.origin, sizeof stream_body.origin);
        origin *early = origin_new_on(0, tls ? ctx : NULL);
        early->modes[0] = M_EARLY_HOLD;
        origin_start(early);
        origin_url(early, stream_body.early_origin, sizeof stream_body.early_origin);
        cshs_client_options o;
        cshs_client_options_init(&o);
        o.tick_thread = 0;
        o.tls_insecure = tls;
        handler_client = cshs_client_new(&o);
        atomic_store(&stream_body.off_loop, 0);
        cshs_server *srv = handler_server(stream_handler, 1);
        unsigned port = cshs_server_port(srv, 0);
        path_asker a;
        ask_streamed(og, port, "/sl", &a);
        assert_int_equal(a.status, 200);
        assert_string_equal(a.body, "echoed 16777216 bytes");
        ask_streamed(og, port, "/sc", &a);
        assert_int_equal(a.status, 200);
        assert_string_equal(a.body, "echoed 16777216 bytes");
        assert_int_equal(stats_of(handler_client).opens, 1);
        char body[256];
        assert_int_equal(ask_server(port, "/ss", body, sizeof body), 200);
        assert_string_equal(body, "failed -22 (write 0)");
        assert_int_equal(ask_server(port, "/se", body, sizeof body), 200);
        assert_string_equal(body, "answered 413 early");
        assert_int_equal(atomic_load(&stream_body.off_loop), 4);
        cshs_server_free(srv);
        cshs_client_free(handler_client);
        origin_free(og);
        origin_free(early);
    }
    SSL_CTX_free(ctx);
    unlink(cert_path);
    free(data);
}

/* ---- a file body sent from the loop (CSHS_CLIENT_BODY_FILE, async) ---- */

static struct {
    char origin[64];
    int fd;
    const char *data; /* the body's bytes, FILE_BODY of them */
} file_body;

/* The echo of the file's body, checked here: the bytes, or the error.
 * It runs as a job (cshs_deferred_run): reading 3 MiB may wait, which a
 * continuation on the loop would do holding the loop. */
static void file_answer(cshw_context *ctx, void *arg)
{
    async_wait *aw = arg;
    cshw_response *res = cshw_context_response(ctx);
    int r = cshs_call_end(aw->call);
    const char *body = NULL;
    size_t len = 0;
    if (r == 0) r = cshs_call_read_all(aw->call, FILE_BODY, &body, &len);
    if (r < 0) {
        cshw_response_set_status(res, cshs_client_error_status(r));
        cshw_response_puts(res, cshs_client_error_name(r));
    } else if (len != FILE_BODY || memcmp(body, file_body.data, len) != 0) {
        cshw_response_puts(res, "not the file's bytes");
    } else {
        cshw_response_printf(res, "echoed %zu bytes", len);
    }
    cshs_call_free(aw->call);
}

static void file_ready(void *arg)
{
    async_wait *aw = arg;
    cshs_deferred_run(aw->d, file_answer, aw);
}

static void file_handler(cshw_context *ctx)
{
    cshw_response *res = cshw_context_response(ctx);
    async_wait *aw = cshw_arena_alloc(cshw_context_arena(ctx), sizeof *aw);
    aw->d = cshs_defer(ctx);
    if (!aw->d) {
        cshw_response_puts(res, "not deferred");
        return;
    }
    cshs_client_request rq;
    file_request(&rq, file_body.origin, file_body.fd);
    int r = cshs_client_send_async(handler_client, &rq, cshs_deferred_reactor(aw->d), file_ready,
                                   aw, &aw->call);
    if (r < 0) {
        cshw_response_set_status(res, cshs_client_error_status(r));
        cshw_response_puts(res, cshs_client_error_name(r));
        cshs_deferred_resume(aw->d, NULL, NULL);
        return;
    }
    if (r == 1) cshs_deferred_run(aw->d, file_answer, aw);
}

/* client.h, CSHS_CLIENT_BODY_FILE with cshs_client_send_async: 3 MiB is
 * more than the socket takes at once, so the rest of the file goes out
 * from the loop as the socket drains (sendfile, or TLS pieces), no
 * thread waiting for it; the origin echoes every byte. */
static void test_body_from_a_file_on_the_loop(void **state)
{
    (void)state;
    char *data = pattern(FILE_BODY, 13);
    file_body.fd = body_file(data);
    file_body.data = data;
    SSL_CTX *ctx = tls_origin_ctx();
    for (int tls = 0; tls < 2; tls++) {
        origin *og = origin_new_on(0, tls ? ctx : NULL);
        origin_start(og);
        origin_url(og, file_body.origin, sizeof file_body.origin);
        cshs_client_options o;
        cshs_client_options_init(&o);
        o.tick_thread = 0;
        o.tls_insecure = tls;
        handler_client = cshs_client_new(&o);
        cshs_server *srv = handler_server(file_handler, 1);
        unsigned port = cshs_server_port(srv, 0);
        char body[256];
        for (int round = 0; round < 2; round++) {
            assert_int_equal(ask_server(port, "/f", body, sizeof body), 200);
            assert_string_equal(body, "echoed 3145728 bytes");
        }
        assert_int_equal(stats_of(handler_client).opens, 1);
        assert_int_equal(lseek(file_body.fd, 0, SEEK_CUR), FILE_POS);
        cshs_server_free(srv);
        cshs_client_free(handler_client);
        origin_free(og);
    }
    SSL_CTX_free(ctx);
    unlink(cert_path);
    close(file_body.fd);
    free(data);
}

/* ---- the body awaited on the loop (cshs_call_wait_body) ---- */

static char body_origin[64];
static atomic_int body_waits;    /* cshs_call_wait_body's 0s: a wait on the loop */
static atomic_int body_cancels;  /* cshs_call_cancel's 0s while the body was awaited */
static atomic_int body_canceled; /* continuations whose read ended CANCELED */

typedef struct body_wait {
    cshs_call *call;
    cshs_deferred *d;
    cshs_reactor *rx; /* the loop's: it outlives each defer */
    int buffered;     /* cshs_call_wait_body right after the head */
    int err;          /* a cshs_call_wait_body that failed */
    char got[64];
    size_t have;
} body_wait;

static void body_relay(cshw_context *ctx, void *arg);

static void body_ready(void *arg)
{
    body_wait *bw = arg;
    cshs_deferred_resume(bw->d, body_relay, bw);
}

/* The client left (cshs_deferred_on_abort), on the loop's thread. */
static void body_client_left(void *arg)
{
    body_wait *bw = arg;
    if (cshs_call_cancel(bw->call) == 0) atomic_fetch_add(&body_cancels, 1);
}

/* The end of the body (n 0) or its error: the answer, with what
 * cshs_call_wait_body said along the way; the call freed. */
static void body_answer(cshw_context *ctx, body_wait *bw, int n)
{
    cshw_response *res = cshw_context_response(ctx);
    if (n < 0) {
        if (n == CSHS_CLIENT_E_CANCELED) atomic_fetch_add(&body_canceled, 1);
        cshw_response_set_status(res, cshs_client_error_status(n));
        cshw_response_puts(res, cshs_client_error_name(n));
    } else {
        /* the body ended: nothing to wait for (1); NULL arguments: -EINVAL */
        int ended = cshs_call_wait_body(bw->call, bw->rx, body_ready, bw);
        int nulls = (cshs_call_wait_body(NULL, bw->rx, body_ready, bw) == -EINVAL) +
                    (cshs_call_wait_body(bw->call, NULL, body_ready, bw) == -EINVAL) +
                    (cshs_call_wait_body(bw->call, bw->rx, NULL, bw) == -EINVAL);
        cshw_response_printf(res, "%.*s|buffered %d|ended %d|nulls %d", (int)bw->have, bw->got,
                             bw->buffered, ended, nulls);
    }
    cshs_call_free(bw->call);
}

/* What is here of the body, read without waiting; then the continuation
 * defers again until the origin sends more (a proxy's relay, its own
 * client's side left out). */
static void body_relay(cshw_context *ctx, void *arg)
{
    body_wait *bw = arg;
    if (bw->err) {
        body_answer(ctx, bw, bw->err);
        return;
    }
    ssize_t n;
    bw->have += read_here(bw->call, bw->got + bw->have, sizeof bw->got - bw->have, &n);
    if (n != -EAGAIN) {
        body_answer(ctx, bw, (int)n);
        return;
    }
    cshs_deferred *d = cshs_defer(ctx);
    if (!d) {
        body_answer(ctx, bw, -ENOMEM);
        return;
    }
    bw->d = d;
    cshs_deferred_on_abort(d, body_client_left, bw);
    int w = cshs_call_wait_body(bw->call, bw->rx, body_ready, bw);
    if (w == 0) {
        atomic_fetch_add(&body_waits, 1); /* done runs on this thread, once this returns */
        return;
    }
    if (w < 0) bw->err = w;
    cshs_deferred_resume(d, body_relay, bw);
}

/* The head is here, and the body's first part with it: no wait (1). */
static void body_head(cshw_context *ctx, void *arg)
{
    body_wait *bw = arg;
    int e = cshs_call_end(bw->call);
    if (e < 0) {
        body_answer(ctx, bw, e);
        return;
    }
    bw->buffered = cshs_call_wait_body(bw->call, bw->rx, body_ready, bw);
    if (bw->buffered == 0) { /* a wait after all: done resumes the relay */
        bw->d = cshs_defer(ctx);
        return;
    }
    body_relay(ctx, bw);
}

static void body_head_ready(void *arg)
{
    body_wait *bw = arg;
    cshs_deferred_resume(bw->d, body_head, bw);
}

/* The origin's answer on the loop, from its head to its body's end; /bt
 * gives the body 200 ms between bytes. */
static void body_handler(cshw_context *ctx)
{
    cshw_response *res = cshw_context_response(ctx);
    body_wait *bw = cshw_arena_alloc(cshw_context_arena(ctx), sizeof *bw);
    memset(bw, 0, sizeof *bw);
    bw->d = cshs_defer(ctx);
    if (!bw->d) {
        cshw_response_puts(res, "not deferred");
        return;
    }
    bw->rx = cshs_deferred_reactor(bw->d);
    cshs_client_request rq;
    cshs_client_request_init(&rq);
    rq.origin = body_origin;
    rq.target = cshw_request_path(cshw_context_request(ctx));
    if (strcmp(rq.target, "/bt") == 0) rq.read_timeout_ms = 200;
    int r = cshs_client_send_async(handler_client, &rq, bw->rx, body_head_ready, bw, &bw->call);
    if (r < 0) {
        cshw_response_set_status(res, cshs_client_error_status(r));
        cshw_response_puts(res, cshs_client_error_name(r));
        cshs_deferred_resume(bw->d, NULL, NULL);
        return;
    }
    if (r == 1) cshs_deferred_resume(bw->d, body_head, bw);
}

/* Waits (bounded) until *v passes `base`: a continuation that counts. */
static void wait_above(atomic_int *v, int base)
{
    for (int i = 0; i < 2000 && atomic_load(v) <= base; i++) sleep_ms(2);
    assert_true(atomic_load(v) > base);
}

/* client.h, cshs_call_wait_body. A deferred request reads its origin's
 * chunked body with cshs_call_read_nowait, and between the two parts
 * waits on its loop with no thread held: the test lets the origin send
 * the rest only once the continuation said it waits (0), and the answer
 * carries the whole body. Along the way wait_body says 1 when bytes are
 * buffered and when the body ended, -EINVAL for a NULL argument. The rest
 * never coming: done runs at read_timeout_ms and the read fails (504).
 * The client leaving during the wait: cshs_call_cancel gives the call up
 * and closes its connection. Over TCP and TLS. */
static void test_body_awaited_on_the_loop(void **state)
{
    (void)state;
    SSL_CTX *ctx = tls_origin_ctx();
    for (int tls = 0; tls < 2; tls++) {
        origin *og = origin_new_on(0, tls ? ctx : NULL);
        for (int i = 0; i < 16; i++) og->modes[i] = M_TWO_CHUNKS;
        origin_start(og);
        origin_url(og, body_origin, sizeof body_origin);
        cshs_client_options o;
        cshs_client_options_init(&o);
        o.tick_thread = 0;
        o.tls_insecure = tls;
        handler_client = cshs_client_new(&o);
        atomic_store(&body_waits, 0);
        atomic_store(&body_cancels, 0);
        atomic_store(&body_canceled, 0);
        cshs_server *srv = handler_server(body_handler, 1);
        unsigned port = cshs_server_port(srv, 0);
        for (int round = 0; round < 2; round++) { /* the second on the pooled connection */
            int base = atomic_load(&body_waits);
            path_asker a = {.port = port, .path = "/b"};
            pthread_t t;
            pthread_create(&t, NULL, path_asker_main, &a);
            wait_above(&body_waits, base);
            cshs_client_pool_stats s = stats_of(handler_client);
            assert_int_equal(s.open, 1);
            assert_int_equal(s.idle, 0); /* the waiting call's */
            origin_release(og);
            pthread_join(t, NULL);
            assert_int_equal(a.status, 200);
            assert_string_equal(a.body, TWO_FIRST TWO_REST "|buffered 1|ended 1|nulls 3");
            assert_int_equal(stats_of(handler_client).idle, 1);
        }
        assert_int_equal(stats_of(handler_client).opens, 1);

        char body[256];
        int64_t t0 = mono_ms();
        assert_int_equal(ask_server(port, "/bt", body, sizeof body), 504);
        assert_string_equal(body, "CSHS_CLIENT_E_READ_TIMEOUT");
        assert_true(mono_ms() - t0 >= 200);
        assert_int_equal(stats_of(handler_client).open, 0);

        int base = atomic_load(&body_waits);
        int fd = ask_and_stay(port, "/b");
        wait_above(&body_waits, base);
        close(fd);
        wait_atomic(&body_cancels, 1);
        wait_atomic(&body_canceled, 1);
        assert_int_equal(stats_of(handler_client).open, 0);
        end_on_the_loop(srv);
        origin_free(og);
    }
    SSL_CTX_free(ctx);
    unlink(cert_path);
}

/* ---- HTTPS ---- */

/* A self-signed certificate for 127.0.0.1 only, written to cert_path. */
static SSL_CTX *tls_origin_ctx(void)
{
    EVP_PKEY *key = EVP_EC_gen("P-256");
    X509 *x = X509_new();
    X509_set_version(x, 2);
    ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
    X509_gmtime_adj(X509_getm_notBefore(x), -3600);
    X509_gmtime_adj(X509_getm_notAfter(x), 3600);
    X509_set_pubkey(x, key);
    X509_NAME *name = X509_get_subject_name(x);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)"127.0.0.1", -1, -1,
                               0);
    X509_set_issuer_name(x, name);
    X509V3_CTX v3;
    X509V3_set_ctx_nodb(&v3);
    X509V3_set_ctx(&v3, x, x, NULL, NULL, 0);
    X509_EXTENSION *ext = X509V3_EXT_conf_nid(NULL, &v3, NID_subject_alt_name, "IP:127.0.0.1");
    X509_add_ext(x, ext, -1);
    X509_EXTENSION_free(ext);
    ext = X509V3_EXT_conf_nid(NULL, &v3, NID_basic_constraints, "critical,CA:TRUE");
    X509_add_ext(x, ext, -1);
    X509_EXTENSION_free(ext);
    X509_sign(x, key, EVP_sha256());
    snprintf(cert_path, sizeof cert_path, "/tmp/cshs-client-test-%d.pem", (int)getpid());
    FILE *f = fopen(cert_path, "w");
    PEM_write_X509(f, x);
    fclose(f);
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
    SSL_CTX_use_certificate(ctx, x);
    SSL_CTX_use_PrivateKey(ctx, key);
    X509_free(x);
    EVP_PKEY_free(key);
    return ctx;
}

static void set_hosts(const char *fmt, ...);

static void test_https(void **state)
{
    (void)state;
    SSL_CTX *ctx = tls_origin_ctx();
    origin *og = origin_new_on(0, ctx);
    origin_start(og);
    char url[64];
    origin_url(og, url, sizeof url);

    /* verified by default: a self-signed certificate fails (at the
     * acquire deadline, with the connect's error, as the tick sees it) */
    cshs_client_options o;
    cshs_client_options_init(&o);
    o.acquire_timeout_ms = 200;
    cshs_client *c = cshs_client_new(&o);
    int err = 0;
    assert_int_equal(get(c, url, "/", NULL, &err), CSHS_CLIENT_E_CERTIFICATE);
    client_free(c);

    /* trusted through tls_ca_file: the IP address checked against it */
    cshs_client_options_init(&o);
    o.acquire_timeout_ms = 200;
    o.tls_ca_file = cert_path;
    c = cshs_client_new(&o);
    int conn = -1;
    assert_int_equal(get(c, url, "/", &conn, &err), 200);
    assert_int_equal(get(c, url, "/", &conn, &err), 200); /* reused, and over TLS */
    cshs_client_tick(c); /* a session ticket on the idle connection is no answer */
    assert_int_equal(stats_of(c).idle, 1);
    assert_int_equal(get(c, url, "/", NULL, &err), 200);
    assert_int_equal(stats_of(c).opens, 1);
    /* 1 MiB over TLS */
    char *data = pattern(1 << 20, 3);
    cshs_client_request rq;
    cshs_client_request_init(&rq);
    rq.origin = url;
    rq.method = "POST";
    rq.body = data;
    rq.body_len = 1 << 20;
    cshs_call *call;
    assert_int_equal(send_via(c, &rq, &call), 0);
    const char *body;
    size_t len;
    assert_int_equal(cshs_call_read_all(call, 1 << 20, &body, &len), 0);
    assert_int_equal(len, 1 << 20);
    assert_memory_equal(body, data, len);
    cshs_call_free(call);
    free(data);
    /* the certificate names 127.0.0.1, not localhost; localhost as
     * Debian maps it (::1, where nothing listens, then 127.0.0.1) */
    set_hosts("localhost=::1,127.0.0.1");
    char byname[64];
    snprintf(byname, sizeof byname, "https://localhost:%u", og->port);
    assert_int_equal(get(c, byname, "/", NULL, &err), CSHS_CLIENT_E_CERTIFICATE);
    client_free(c);

    /* tls_insecure: for tests only, no verification */
    cshs_client_options_init(&o);
    o.tick_thread = 0;
    o.tls_insecure = 1;
    o.min_idle = 2;
    c = cshs_client_new(&o);
    assert_int_equal(get(c, byname, "/", NULL, &err), 200);
    /* min_idle over TLS: the ticks see the connect and the handshake
     * through without waiting on a socket */
    unsigned two = 2;
    assert_true(wait_for(c, 1, open_is, &two));
    assert_int_equal(stats_of(c).idle, 2);
    int before = atomic_load(&og->nconns);
    assert_int_equal(get(c, byname, "/", NULL, &err), 200);
    assert_int_equal(atomic_load(&og->nconns), before); /* a warm one was used */
    client_free(c);
    unsetenv("CSHTTP_TEST_HOSTS");
    origin_free(og);

    /* an origin that resets the connection while the body is being sent:
     * OpenSSL's write(2) raises SIGPIPE, which must never reach the
     * program (its default action ends it); the call fails instead */
    og = origin_new_on(0, ctx);
    og->modes[0] = M_CLOSE_AT_HEAD;
    og->modes[1] = M_CLOSE_AT_HEAD;
    origin_start(og);
    origin_url(og, url, sizeof url);
    cshs_client_options_init(&o);
    o.tick_thread = 0;
    o.tls_insecure = 1;
    c = cshs_client_new(&o);
    size_t big = 8u << 20;
    data = pattern(big, 5);
    cshs_client_request_init(&rq);
    rq.origin = url;
    rq.method = "POST";
    rq.body = data;
    rq.body_len = big;
    assert_int_equal(send_via(c, &rq, &call), CSHS_CLIENT_E_ORIGIN_CLOSED);
    assert_int_equal(stats_of(c).open, 0);
    client_free(c);
    /* and the plain path (MSG_NOSIGNAL) */
    origin *plain = origin_new();
    plain->modes[0] = M_CLOSE_AT_HEAD;
    origin_url(plain, url, sizeof url);
    c = client_with(1, 0);
    rq.origin = url;
    assert_int_equal(send_via(c, &rq, &call), CSHS_CLIENT_E_ORIGIN_CLOSED);
    client_free(c);
    origin_free(plain);
    free(data);
    origin_free(og);
    SSL_CTX_free(ctx);
    unlink(cert_path);
}

/* An https origin's connect seen through on the loop, its TLS handshake
 * included, and its certificate verified there: an untrusted one fails
 * the waiting request with CSHS_CLIENT_E_CERTIFICATE (502). */
static void test_https_connect_on_the_loop(void **state)
{
    (void)state;
    SSL_CTX *ctx = tls_origin_ctx();
    origin *og = origin_new_on(0, ctx);
    origin_start(og);
    snprintf(queue_origins[2], sizeof queue_origins[2], "https://127.0.0.1:%u", og->port);
    for (int trusted = 0; trusted < 2; trusted++) {
        cshs_client_options o;
        cshs_client_options_init(&o);
        o.tick_thread = 0;
        if (trusted) o.tls_ca_file = cert_path;
        handler_client = cshs_client_new(&o);
        assert_non_null(handler_client);
        cshs_server *srv = handler_server(queued_handler, 1);
        unsigned port = cshs_server_port(srv, 0);
        char body[256];
        if (!trusted) {
            assert_int_equal(ask_server(port, "/qs", body, sizeof body), 502);
            assert_string_equal(body, "CSHS_CLIENT_E_CERTIFICATE");
        } else {
            assert_int_equal(ask_server(port, "/qs", body, sizeof body), 200);
            assert_string_equal(body, "conn 1 req 0"); /* conn 0 was the untrusted one */
            assert_int_equal(ask_server(port, "/qs", body, sizeof body), 200);
            assert_string_equal(body, "conn 1 req 1");
            assert_int_equal(stats_of(handler_client).opens, 1);
        }
        end_on_the_loop(srv);
    }
    origin_free(og);
    SSL_CTX_free(ctx);
    unlink(cert_path);
}

/* ---- a name's addresses (dial.h) ----
 *
 * tests/support/test_resolver.c, linked into this program, is the
 * getaddrinfo the client calls: it gives the names of CSHTTP_TEST_HOSTS
 * the address lists below, whatever /etc/hosts says. The origin listens
 * on 127.0.0.1 alone, as an application behind a proxy usually does. */

static void set_hosts(const char *fmt, ...)
{
    char v[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(v, sizeof v, fmt, ap);
    va_end(ap);
    setenv("CSHTTP_TEST_HOSTS", v, 1);
}

/* An address that never answers: a listener on 127.0.0.1 whose accept
 * queue (of one) is full drops further SYNs. */
typedef struct silent {
    int lfd, parked;
    unsigned port;
} silent;

static void silent_open(silent *h)
{
    h->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(h->lfd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(h->lfd, 0), 0);
    h->port = port_of(h->lfd);
    a.sin_port = htons((uint16_t)h->port);
    h->parked = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_int_equal(connect(h->parked, (struct sockaddr *)&a, sizeof a), 0);
}

static void silent_close(silent *h)
{
    close(h->parked);
    close(h->lfd);
}

/* One request to `url` by each kind of open, each with a client of its
 * own: the request's own (send_via: a thread's, or the test's loop's),
 * the tick's (min_idle) and a server loop's (cshs_client_send_async from
 * a handler). want: the status (the first one's result when negative);
 * want_error: the server loop's body for a failure. */
static void by_every_open(const char *url, int want, const char *want_error)
{
    /* the request's own */
    cshs_client *c = client_with(4, 0);
    int err = 0;
    assert_int_equal(get(c, url, "/", NULL, &err), want);
    cshs_client_pool_stats st = stats_of(c);
    assert_int_equal(st.failures, want < 0 ? 1 : 0); /* one for the whole open */
    assert_int_equal(st.opens, want < 0 ? 0 : 1);
    if (want < 0) assert_true(st.last_backoff_ms >= 200 && st.last_backoff_ms <= 400);
    client_free(c);

    /* the tick's: min_idle opened by ticks that never wait */
    if (want > 0) {
        cshs_client_options o;
        cshs_client_options_init(&o);
        o.tick_thread = 0;
        o.min_idle = 2;
        c = cshs_client_new(&o);
        assert_int_equal(get(c, url, "/", NULL, &err), want); /* the pool, and its first */
        unsigned two = 2;
        assert_true(wait_for(c, 1, open_is, &two));
        assert_int_equal(stats_of(c).failures, 0);
        client_free(c);
    }

    /* a loop's: the connect raced on the loop */
    cshs_client_options o;
    cshs_client_options_init(&o);
    o.tick_thread = 0;
    o.tls_insecure = strncmp(url, "https:", 6) == 0;
    handler_client = cshs_client_new(&o);
    snprintf(queue_origins[0], sizeof queue_origins[0], "%s", url);
    cshs_server *srv = handler_server(queued_handler, 1);
    char body[256];
    int st2 = ask_server(cshs_server_port(srv, 0), "/qa", body, sizeof body);
    if (want > 0) {
        assert_int_equal(st2, want);
        assert_int_equal(stats_of(handler_client).opens, 1);
        assert_int_equal(stats_of(handler_client).failures, 0);
    } else {
        assert_int_equal(st2, 502);
        assert_string_equal(body, want_error);
        assert_int_equal(stats_of(handler_client).failures, 1);
    }
    end_on_the_loop(srv);
}

/* `localhost` as Debian has it: ::1, where nothing listens, then
 * 127.0.0.1. Refused moves on to the next address at once. */
static void test_name_first_address_refused(void **state)
{
    (void)state;
    origin *og = origin_new();
    set_hosts("dual.test=::1,127.0.0.1");
    char url[64];
    snprintf(url, sizeof url, "http://dual.test:%u", og->port);
    by_every_open(url, 200, NULL);
    unsetenv("CSHTTP_TEST_HOSTS");
    origin_free(og);
}

/* An origin named slow.test in url[64], whose first address never
 * answers (h) and whose second is the origin's; slow_name_end undoes it. */
static origin *slow_name(silent *h, char *url)
{
    origin *og = origin_new();
    silent_open(h);
    set_hosts("slow.test=127.0.0.1:%u,127.0.0.1", h->port);
    snprintf(url, 64, "http://slow.test:%u", og->port);
    return og;
}

static void slow_name_end(origin *og, silent *h)
{
    unsetenv("CSHTTP_TEST_HOSTS");
    silent_close(h);
    origin_free(og);
}

/* An address that never answers, then one that does: the second starts
 * after the attempt delay, well within the connect deadline (5 s), where
 * a connect that waited for the first would have spent it all. */
static void test_name_silent_address_first(void **state)
{
    (void)state;
    silent h;
    char url[64];
    origin *og = slow_name(&h, url);
    by_every_open(url, 200, NULL);
    slow_name_end(og, &h);
}

/* The address that won an open is tried first by the pool's next ones:
 * a silent first address costs its attempt delay once. Here the next
 * opens have 200 ms, less than that delay: they connect only because
 * they start with the winner, by a thread and on a loop. The first open
 * (5 s) stays busy, so each next request opens; one that failed would
 * wait for it and get the connect's error at its acquire deadline (1 s,
 * which the tick keeps). */
static cshs_call *winner_seed(cshs_client *c, const char *url)
{
    cshs_client_request rq;
    cshs_client_request_init(&rq);
    rq.origin = url;
    rq.connect_timeout_ms = 5000; /* the silent address, then the other after 250 ms */
    cshs_call *held = NULL;
    assert_int_equal(send_via(c, &rq, &held), 0);
    assert_int_equal(cshs_call_status(held), 200);
    return held;
}

static void test_name_winner_tried_first(void **state)
{
    (void)state;
    silent h;
    char url[64];
    origin *og = slow_name(&h, url);
    cshs_client_options o;
    cshs_client_options_init(&o);
    o.connect_timeout_ms = 200;
    o.acquire_timeout_ms = 1000;
    /* by the request (send_via; the client's own tick) */
    cshs_client *c = cshs_client_new(&o);
    cshs_call *held = winner_seed(c, url);
    int err = 0;
    assert_int_equal(get(c, url, "/", NULL, &err), 200);
    assert_int_equal(stats_of(c).opens, 2);
    assert_int_equal(stats_of(c).failures, 0);
    cshs_call_free(held);
    client_free(c);
    /* on a loop (the server's tick) */
    o.tick_thread = 0;
    handler_client = cshs_client_new(&o);
    held = winner_seed(handler_client, url);
    snprintf(queue_origins[0], sizeof queue_origins[0], "%s", url);
    cshs_server *srv = handler_server(queued_handler, 1);
    char body[256];
    assert_int_equal(ask_server(cshs_server_port(srv, 0), "/qa", body, sizeof body), 200);
    assert_int_equal(stats_of(handler_client).opens, 2);
    assert_int_equal(stats_of(handler_client).failures, 0);
    cshs_call_free(held);
    end_on_the_loop(srv);
    slow_name_end(og, &h);
}

/* Every address refused: the open fails once (one failure, one backoff),
 * with the connect's error: 502 on the loop. */
static void test_name_every_address_refused(void **state)
{
    (void)state;
    unsigned dead = dead_port();
    set_hosts("dead.test=::1,127.0.0.1");
    char url[64];
    snprintf(url, sizeof url, "http://dead.test:%u", dead);
    by_every_open(url, CSHS_CLIENT_E_CONNECT, "CSHS_CLIENT_E_CONNECT");
    /* a name with no address at all: a resolve error */
    set_hosts("none.test=");
    cshs_client *c = client_with(1, 0);
    int err = 0;
    assert_int_equal(get(c, "http://none.test:80", "/", NULL, &err), CSHS_CLIENT_E_RESOLVE);
    client_free(c);
    unsetenv("CSHTTP_TEST_HOSTS");
}

/* The same over TLS: the handshake follows the connect that won. */
static void test_name_over_tls(void **state)
{
    (void)state;
    SSL_CTX *ctx = tls_origin_ctx();
    origin *og = origin_new_on(0, ctx);
    origin_start(og);
    silent h;
    silent_open(&h);
    set_hosts("dual.test=::1,127.0.0.1;slow.test=127.0.0.1:%u,::1,127.0.0.1", h.port);
    char url[64];
    snprintf(url, sizeof url, "https://dual.test:%u", og->port);
    cshs_client_options o;
    cshs_client_options_init(&o);
    o.tick_thread = 0;
    o.tls_insecure = 1;
    for (int i = 0; i < 2; i++) {
        if (i) snprintf(url, sizeof url, "https://slow.test:%u", og->port);
        cshs_client *c = cshs_client_new(&o);
        int err = 0;
        assert_int_equal(get(c, url, "/", NULL, &err), 200);
        assert_int_equal(stats_of(c).failures, 0);
        client_free(c);
        handler_client = cshs_client_new(&o);
        snprintf(queue_origins[0], sizeof queue_origins[0], "%s", url);
        cshs_server *srv = handler_server(queued_handler, 1);
        char body[256];
        assert_int_equal(ask_server(cshs_server_port(srv, 0), "/qa", body, sizeof body), 200);
        assert_int_equal(stats_of(handler_client).failures, 0);
        end_on_the_loop(srv);
    }
    unsetenv("CSHTTP_TEST_HOSTS");
    silent_close(&h);
    origin_free(og);
    SSL_CTX_free(ctx);
    unlink(cert_path);
}

/* A test run through each API (send_via): "name/blocking", then
 * "name/reactor"; api_end after either. */
#define API_NAME(f, api) #f "/" #api
#define API_TEST(f, api)                                                                           \
    {                                                                                              \
        API_NAME(f, api), f, api_##api, api_end, NULL                                              \
    }
#define BOTH_APIS(f) API_TEST(f, blocking), API_TEST(f, reactor)

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_errors_and_checks), /* the argument checks of cshs_client_send */
        BOTH_APIS(test_struct_sizes),
        BOTH_APIS(test_basic_and_headers),
        BOTH_APIS(test_request_bytes),
        BOTH_APIS(test_fields_dropped_and_host),
        BOTH_APIS(test_head_and_connection_close),
        BOTH_APIS(test_connect_timeout),
        BOTH_APIS(test_mru_order),
        BOTH_APIS(test_burst_opens),
        BOTH_APIS(test_fifo_waiters_and_deadline),
        BOTH_APIS(test_deadline_needs_the_tick),
        BOTH_APIS(test_backoff_after_failed_connect),
        BOTH_APIS(test_dead_origin_fails_at_once),
        BOTH_APIS(test_sweep_closed_by_origin),
        BOTH_APIS(test_idle_timeout_and_pool_drop),
        BOTH_APIS(test_max_lifetime),
        BOTH_APIS(test_min_idle),
        BOTH_APIS(test_retry_rule),
        BOTH_APIS(test_origin_keepalive_shorter),
        BOTH_APIS(test_chunked_and_close_delimited),
        BOTH_APIS(test_one_mib_both_ways),
        BOTH_APIS(test_1xx_skipped),
        cmocka_unit_test(test_answer_before_the_body_ended), /* cshs_call_write's */
        BOTH_APIS(test_body_from_a_file),
        BOTH_APIS(test_read_without_waiting),
        BOTH_APIS(test_answered_twice),
        BOTH_APIS(test_answered_twice_apart),
        /* each of these is about one API on a server's loop */
        cmocka_unit_test(test_answer_awaited_on_the_loop),
        cmocka_unit_test(test_waiting_for_a_connection_on_the_loop),
        cmocka_unit_test(test_connection_stays_on_its_loop),
        cmocka_unit_test(test_client_that_leaves_cancels),
        cmocka_unit_test(test_burst_opens_on_the_loop),
        cmocka_unit_test(test_idle_connection_seen_on_the_loop),
        cmocka_unit_test(test_retry_on_the_loop),
        cmocka_unit_test(test_body_from_a_file_on_the_loop),
        cmocka_unit_test(test_streamed_body_on_the_loop),
        cmocka_unit_test(test_body_awaited_on_the_loop),
        BOTH_APIS(test_malformed_and_timeouts),
        BOTH_APIS(test_threads),
        cmocka_unit_test(test_thread_loop_let_go),
        cmocka_unit_test(test_thread_loop_no_descriptor),
        cmocka_unit_test(test_thread_loop_connect_ends_later),
        cmocka_unit_test(test_thread_loop_after_fork),
        BOTH_APIS(test_from_handlers),
        BOTH_APIS(test_https),
        cmocka_unit_test(test_https_connect_on_the_loop),
        BOTH_APIS(test_name_first_address_refused),
        BOTH_APIS(test_name_silent_address_first),
        BOTH_APIS(test_name_every_address_refused),
        BOTH_APIS(test_name_winner_tried_first),
        BOTH_APIS(test_name_over_tls),
    };
    const char *only = getenv("CSHS_TEST_FILTER"); /* one test while debugging */
    if (only) cmocka_set_test_filter(only);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
