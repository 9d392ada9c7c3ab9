/* The engine's pooled HTTP/1.1 client (client.h has the rules and the
 * manual). It uses libcshttp for responses and nothing of the toolkit: the
 * layering test checks that this file includes no cshttp/web header.
 *
 * Locking: one mutex per client guards every pool, connection list, waiter
 * queue and counter. It is never held across a system call that can block:
 * name resolution, connects, handshakes and a call's I/O run unlocked, by
 * the thread that owns the connection at that moment (a request's thread,
 * or the tick for a min_idle connection, which sits on its pool's opening
 * list while it is being opened). The zero-timeout poll() of idle sockets
 * is done under the lock. What the lock's holder hands to async waiters
 * (cshs_client_send_async: a connection, an error, a connect to start)
 * waits on the client's handed list and is served by the same thread
 * right after it lets go of the lock (unlock_and_serve). */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <cshttp/body.h>
#include <cshttp/grammar.h>
#include <cshttp/parser.h>
#include <cshttp/server/client.h>

#include "dial.h"
#include "kept.h"
#include "lookup.h"
#include "sock_io.h"
#include "cshttp_internal/error_table.h"
#include "cshttp_internal/sized.h"

#define CONN_BUF 16384     /* a connection's buffer: the head built, the response read */
#define CONN_BUF_MAX 65536 /* grown up to this for a long head (the parser stops at 32 KiB) */
#define MAX_FIELDS 100     /* response header fields kept (the parser's default limit) */
#define BACKOFF_MIN_MS 200 /* after a failed connect: 200-400 ms, jittered */
#define BACKOFF_JITTER_MS 201
#define HIST_BUCKETS (16 + 16 * 40) /* acquire waits: 1/16-wide log buckets up to 2^44 us */

/* ---- errors ---- */

static const csh__error_row client_errors[] = {
#define CSHS_CLIENT_ERROR_ROW_(name, value, status, message)                                       \
    {value, status, "CSHS_CLIENT_E_" #name, message},
    CSHS_CLIENT_ERROR_MAP(CSHS_CLIENT_ERROR_ROW_)
#undef CSHS_CLIENT_ERROR_ROW_
};

static const csh__error_row *client_error(int code)
{
    return csh__error_find(client_errors, sizeof client_errors / sizeof client_errors[0], code);
}

const char *cshs_client_error_name(int code)
{
    if (code == 0) return "OK";
    const csh__error_row *e = client_error(code);
    const char *n = e ? e->name : csh__errno_name(code);
    return n ? n : "UNKNOWN";
}

const char *cshs_client_error_message(int code)
{
    if (code == 0) return "success";
    const csh__error_row *e = client_error(code);
    const char *m = e ? e->message : csh__errno_message(code);
    return m ? m : "unknown error";
}

int cshs_client_error_status(int code)
{
    const csh__error_row *e = client_error(code);
    if (e) return e->status;
    return code < 0 ? 500 : 0;
}

/* ---- options ---- */

CSH__SIZED_NO_TAIL_PADDING(cshs_client_options, tls_ca_file);
CSH__SIZED_NO_TAIL_PADDING(cshs_client_request, upgrade);
CSH__SIZED_NO_TAIL_PADDING(cshs_client_pool_stats, detached);

static const cshs_client_options options_defaults = {
    .size = sizeof(cshs_client_options),
    .pool_size = 32,
    .min_idle = 0,
    .idle_timeout_ms = 60000,
    .max_lifetime_ms = 3600000,
    .acquire_timeout_ms = 10000,
    .connect_timeout_ms = 5000,
    .send_timeout_ms = 60000,
    .head_timeout_ms = 60000,
    .read_timeout_ms = 60000,
    .tick_thread = 1,
    .tick_interval_ms = 200,
    .tls_insecure = 0,
    .tls_ca_file = NULL,
};

void cshs_client_options_init_sized(cshs_client_options *o, size_t size)
{
    csh__sized_init(o, size, &options_defaults, sizeof options_defaults);
}

/* The caller's struct read as far as the caller knew it, the defaults for
 * the rest (client.h: the size rule). */
static int options_copy(cshs_client_options *dst, const cshs_client_options *src)
{
    *dst = options_defaults;
    if (!src) return 0;
    return csh__sized_copy(dst, sizeof *dst, src, CSHS_CLIENT_OPTIONS_SIZE_0_3) < 0 ? -EINVAL : 0;
}

int cshs_client_options_check(const cshs_client_options *o, const char **why)
{
    const char *w = NULL;
    cshs_client_options c;
    if (!o || options_copy(&c, o) < 0)
        w = "size must be set by cshs_client_options_init";
    else if (c.pool_size < 1)
        w = "pool_size must be at least 1";
    else if (c.min_idle > c.pool_size)
        w = "min_idle must be at most pool_size";
    else if (c.acquire_timeout_ms < 1)
        w = "acquire_timeout_ms must be at least 1";
    else if (c.connect_timeout_ms < 1)
        w = "connect_timeout_ms must be at least 1";
    else if (c.send_timeout_ms < 1 || c.head_timeout_ms < 1 || c.read_timeout_ms < 1)
        w = "send_timeout_ms, head_timeout_ms and read_timeout_ms must be at least 1";
    else if (c.tick_interval_ms < 1 || c.tick_interval_ms > 60000)
        w = "tick_interval_ms must be 1..60000";
    else if (c.idle_timeout_ms < 1)
        w = "idle_timeout_ms must be at least 1";
    if (why) *why = w;
    return w ? -EINVAL : 0;
}

static const cshs_client_request request_defaults = {
    .size = sizeof(cshs_client_request),
    .method = "GET",
    .target = "/",
    .body_mode = CSHS_CLIENT_BODY_WHOLE,
    .body_fd = -1,
};

void cshs_client_request_init_sized(cshs_client_request *r, size_t size)
{
    csh__sized_init(r, size, &request_defaults, sizeof request_defaults);
}

/* ---- the objects ---- */

typedef struct pool pool;

/* Connection states. */
enum { C_IDLE = 0, C_BUSY, C_OPENING };

typedef struct conn {
    /* The socket's registration with the reactor it was last waited on
     * (kept.h): from the first wait there (its connect on a reactor, or
     * cshs_call_end_async) to its close, so that a wait costs no epoll_ctl
     * and an event while idle is seen (take_idle). Armed while `waiting`
     * waits, or while it connects on the reactor. A connection that was
     * registered is not freed when it closes but kept on the client's
     * `retired` list for the next connection: a loop may still hold an
     * event of it (dropped by its generation). */
    cshs_kept kw; /* first: a stale event of the loop reads its tag */
    struct conn *next_retired;
    struct conn *prev, *next; /* idle list (MRU first) or opening list */
    pool *p;
    cshs_client *c; /* its pool's, which may be dropped before the connection is closed */
    int fd;
    SSL *ssl;
    int state;
    int tcp_done;           /* opening: the TCP connect has completed */
    int64_t born_ms;        /* opened (or the open started, while opening) */
    int64_t idle_ms;        /* put on the idle list */
    uint64_t uses;          /* responses read on it */
    unsigned connect_ms;    /* opening by the tick: its deadline */
    char *buf;              /* the head built here; the response read here */
    size_t cap, start, end; /* unread input: buf[start .. end) */
    struct cshs_call *waiting;
    /* a read that could not wait (cshs_call_read_nowait): the way to wait,
     * POLLIN, or POLLOUT when TLS has to write first */
    short io_wait;
    /* a switched connection (cshs_call_tunnel_read): a short read emptied
     * the socket (tunnel_dry: the next read waits for an event, which
     * edge-triggered registration gives for the next bytes), or an event
     * said the input ends (tunnel_end: read until the end) */
    unsigned char tunnel_dry, tunnel_end;
    /* opened on a reactor for one call (an async retry's own connect),
     * not for the pool's first waiter */
    struct cshs_call *opened_for;
    /* counted no more in its pool (cshs_call_detach): closed at its
     * call's end, never given back */
    int detached;
    /* opening by the tick: the TCP connect to the name's addresses, until
     * one connected (then fd is that one's) */
    cshs_dialer *dialer;
    /* opening on a reactor: one attempt of that open's race (open_async),
     * until it won it */
    struct race *race;
    /* a name's look-up (lookup.h) the tick's open waits for (then fd is
     * -1), or whose end this connection's eventfd tells a reactor (then
     * `race` is the open it is for, and the connection is no socket) */
    cshs_lookup *lookup;
} conn;

typedef struct waiter {
    struct waiter *prev, *next;
    /* cshs_client_send_async's waiter (the call's own): no thread waits;
     * whatever hands it a connection or fails it puts the call on the
     * client's `handed` list, served after the lock is let go */
    struct cshs_call *call;
    pthread_cond_t cv; /* the others': their thread waits on it */
    conn *got;         /* handed over by a release or an open */
    int err;           /* failed: its deadline (the tick), or nothing left to serve it */
    int expired;       /* err is its deadline's (counted in acquire_timeouts) */
    int queued;        /* on the pool's queue */
    int opening;       /* opening a connection, unlocked */
    int64_t deadline_ms;
    int64_t since_us;
} waiter;

/* An origin, parsed: what names a pool and what connecting needs. */
typedef struct origin_id {
    char key[300]; /* "http://host:port" */
    char host[256];
    char port[8];
    char hosthdr[272]; /* Host field value */
    int tls;
    int host_is_ip;
} origin_id;

struct pool {
    pool *next;
    struct cshs_client *c;
    char given[128]; /* the origin string as first given: found without parsing */
    char key[300];   /* "http://host:port": the origin */
    char host[256];
    char port[8];
    char hosthdr[272]; /* Host field value */
    int tls;
    int host_is_ip;
    conn *idle;    /* MRU first */
    conn *opening; /* min_idle connections being opened by the tick */
    unsigned open, nidle, nopening, nwaiters;
    unsigned users; /* requests and calls that use this pool */
    waiter *wq, *wq_tail;
    int64_t backoff_until_ms;
    uint32_t last_backoff_ms; /* its length (stats) */
    int64_t last_fail_us;
    int last_error;
    uint64_t requests, opens, failures, retries, acquire_timeouts;
    uint64_t looks; /* conn_quiet calls (cshs_client_pool_stats) */
    uint64_t detached; /* connections given up by the pool (cshs_call_detach) */
    uint32_t hist[HIST_BUCKETS];
    /* the address the last open connected to, tried first by the next
     * (dial.h): a name whose first address never answers costs its
     * attempt delay once, not on every new connection (nginx skips a
     * server that failed for fail_timeout) */
    cshs_dial_addr won;
    int has_won;
};

struct cshs_client {
    cshs_client_options o;
    pthread_mutex_t mu;
    pool *pools;
    SSL_CTX *ssl_ctx;
    unsigned seed;
    /* the tick thread */
    pthread_t tick;
    int tick_running;
    pthread_mutex_t tls_mu; /* ssl_ctx, made on first use */
    pthread_mutex_t tick_mu;
    pthread_cond_t tick_cv;
    int tick_stop;
    /* calls freed, kept for the next ones (under mu): a call is some 4 KiB
     * (its field array), which malloc serves from its slow path, and a
     * proxy makes one a request */
    struct cshs_call *spare_calls;
    unsigned nspare_calls;
    /* under mu, taken whole by the thread that let go of the lock and
     * served unlocked (serve_handed): async waiters given a connection or
     * failed (FIFO), and connects to start for them on a reactor */
    struct cshs_call *handed, *handed_tail;
    struct open_job *open_jobs;
    /* closed connections that were registered with a reactor (conn.kw),
     * reused for the next ones, freed with the client */
    pthread_mutex_t retired_mu;
    struct conn *retired;
};

/* A connect started for async waiters, without a thread: watched on the
 * reactor of the waiter it was started for (open_ready). */
typedef struct open_job {
    struct open_job *next;
    pool *p;
    cshs_reactor *rx;
    unsigned connect_ms;
    struct cshs_call *own; /* a retry's connect, for that call alone; NULL: the pool's */
} open_job;

/* Calls kept for reuse, at most. */
#define SPARE_CALLS_MAX 64

/* Call states. */
/* K_SWITCHED: a 101 to a request with `upgrade`; the connection is the
 * call's, a tunnel (cshs_call_tunnel_*) */
enum { K_BODY_OUT = 0, K_HEAD_WAIT, K_BODY_IN, K_DONE, K_FAILED, K_SWITCHED };

struct cshs_call {
    cshs_client *c;
    pool *p;
    conn *cn; /* NULL once given back or closed */
    int state;
    int err;
    csh_method method;
    int idempotent;
    int reused;    /* the connection had served a response before */
    int retryable; /* failed because the origin had closed the reused connection */
    int retried;   /* cshs_client_send_async's retry was made */
    int watch;     /* sending the body: look out for an answer before its end */
    int peer_eof;  /* the origin's end of input was read while watching */
    int early;     /* the origin answered before the body was all sent */
    uint64_t bytes_sent;
    cshs_client_body_mode mode;
    uint64_t body_left; /* CSHS_CLIENT_BODY_LENGTH: bytes still to write */
    unsigned send_ms, head_ms, read_ms;
    unsigned acquire_ms, connect_ms;
    int keep_head; /* keep the head to send it again (cshs_call_end's retry) */
    char *again;   /* that head, while a retry is possible */
    size_t again_len;
    int64_t head_deadline_ms;
    csh_parser parser;
    csh_body body;
    char *head;
    size_t head_len;
    char *all; /* cshs_call_read_all */
    size_t all_len;
    /* cshs_call_end_async: what to call when the head is here */
    void (*done)(void *arg);
    void *done_arg;
    uint64_t got;                 /* response bytes read there */
    struct cshs_call *next_spare; /* on the client's spare_calls */
    /* cshs_client_send_async: the request (its strings are the caller's
     * until done runs), the reactor that waits for its head, its place in
     * the pool's queue, and its link on the client's handed list */
    cshs_client_request rq;
    cshs_reactor *rx;
    waiter aw;
    struct cshs_call *handed_next;
    /* the connection whose watch awaits its head (cshs_call_end_async),
     * set before the arm: cshs_call_cancel ends the call when it finds
     * that watch still armed, under the reactor's lock */
    struct conn *_Atomic watched;
    /* cshs_call_cancel came while the call was between states (being
     * handed a connection, its watch being armed): the arm sees it */
    _Atomic int cancel_wanted;
    /* cshs_call_wait_body's deadline passed: the next read fails */
    int read_expired;
    /* the request's `upgrade` (the caller's string, until the head is
     * here); after the 101, cshs_call_tunnel_wait's callback */
    const char *upgrade;
    void (*tunnel_ready)(void *arg, int events);
    void *tunnel_arg;
    /* cshs_client_send_async: the head and body are sent as the socket
     * takes them (conn_send says -EAGAIN rather than wait), what is left
     * of them in out_iov, the rest sent from the reactor */
    int send_nowait;
    struct iovec out_iov[2];
    /* cshs_client_send_async with a streamed body (CSHS_CLIENT_BODY_LENGTH
     * or _CHUNKED), written with cshs_call_write_async: `done` runs once
     * the head is sent and after each write the socket did not take at
     * once, until cshs_call_end_async ends the body (body_ended; then it
     * runs for the head). `frame`: a chunk's size line, after the CRLF
     * that closes the chunk before it (chunk_open), or the last chunk. */
    int streamed, body_ended, chunk_open;
    int head_out; /* a streamed body's head was sent: never sent again (retry_async) */
    char frame[32];
    /* CSHS_CLIENT_BODY_FILE: what is left of the file to send after the
     * head, and over TLS the piece of it being written (fchunk, read at
     * file_off before; freed by call_destroy) */
    int file_fd;
    uint64_t file_off, file_left;
    char *fchunk;
    size_t fchunk_pos, fchunk_len;
    csh_header fields[MAX_FIELDS]; /* last: not cleared (call_start) */
};

static int64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static int64_t now_ms(void)
{
    return now_us() / 1000;
}

/* ---- SIGPIPE: OpenSSL writes with write(2), which raises it on a socket
 * the origin closed. Blocked around TLS I/O on this thread, and a SIGPIPE
 * raised meanwhile is taken back, so the program's disposition never sees
 * it (the plain path sends with MSG_NOSIGNAL). ---- */

typedef struct {
    sigset_t old;
    int pending_before;
} sigpipe_guard;

static void sigpipe_block(sigpipe_guard *g)
{
    sigset_t pipe, pend;
    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe, &g->old);
    sigpending(&pend);
    g->pending_before = sigismember(&pend, SIGPIPE) == 1;
}

static void sigpipe_restore(sigpipe_guard *g)
{
    if (!g->pending_before) {
        sigset_t pipe, pend;
        sigemptyset(&pipe);
        sigaddset(&pipe, SIGPIPE);
        sigpending(&pend);
        if (sigismember(&pend, SIGPIPE) == 1) {
            struct timespec zero = {0, 0};
            sigtimedwait(&pipe, NULL, &zero);
        }
    }
    pthread_sigmask(SIG_SETMASK, &g->old, NULL);
}

/* ---- the acquire-wait histogram ---- */

static unsigned hist_bucket(uint64_t v)
{
    if (v < 16) return (unsigned)v;
    unsigned e = 63u - (unsigned)__builtin_clzll(v); /* >= 4 */
    unsigned b = 16 + (e - 4) * 16 + (unsigned)((v >> (e - 4)) & 15);
    return b < HIST_BUCKETS ? b : HIST_BUCKETS - 1;
}

static uint64_t hist_upper(unsigned b)
{
    if (b < 16) return b;
    unsigned e = (b - 16) / 16 + 4, m = (b - 16) % 16;
    uint64_t width = 1ull << (e - 4);
    return (1ull << e) + (m + 1) * width - 1;
}

static uint64_t hist_quantile(const pool *p, double q)
{
    uint64_t total = 0;
    for (unsigned i = 0; i < HIST_BUCKETS; i++) total += p->hist[i];
    if (!total) return 0;
    uint64_t rank = (uint64_t)(q * (double)total + 0.999999);
    if (rank < 1) rank = 1;
    uint64_t seen = 0;
    for (unsigned i = 0; i < HIST_BUCKETS; i++) {
        seen += p->hist[i];
        if (seen >= rank) return hist_upper(i);
    }
    return hist_upper(HIST_BUCKETS - 1);
}

static void record_wait(pool *p, int64_t since_us)
{
    int64_t w = now_us() - since_us;
    p->hist[hist_bucket(w > 0 ? (uint64_t)w : 0)]++;
    p->requests++;
}

/* ---- origins ---- */

/* Parses "http://host[:port]" into `p`. */
static int parse_origin(const char *origin, origin_id *p)
{
    if (!origin) return -EINVAL;
    const char *s = origin;
    if (strncasecmp(s, "http://", 7) == 0) {
        p->tls = 0;
        s += 7;
    } else if (strncasecmp(s, "https://", 8) == 0) {
        p->tls = 1;
        s += 8;
    } else {
        return -EINVAL;
    }
    const char *h = s, *he;
    int v6 = 0;
    if (*s == '[') {
        const char *rb = strchr(s, ']');
        if (!rb) return -EINVAL;
        h = s + 1;
        he = rb;
        s = rb + 1;
        v6 = 1;
    } else {
        while (*s && *s != ':' && *s != '/') {
            unsigned char ch = (unsigned char)*s;
            /* reg-name or IPv4 (RFC 3986 §3.2.2), without percent-encoding */
            if (!(ch == '-' || ch == '.' || ch == '_' || ch == '~' || (ch >= '0' && ch <= '9') ||
                  ((ch | 0x20) >= 'a' && (ch | 0x20) <= 'z')))
                return -EINVAL;
            s++;
        }
        he = s;
    }
    size_t hl = (size_t)(he - h);
    if (hl == 0 || hl >= sizeof p->host) return -EINVAL;
    for (size_t i = 0; i < hl; i++)
        p->host[i] = (char)(h[i] >= 'A' && h[i] <= 'Z' ? h[i] | 0x20 : h[i]);
    p->host[hl] = 0;
    unsigned long port = p->tls ? 443 : 80;
    int explicit_port = 0;
    if (*s == ':') {
        s++;
        if (*s < '0' || *s > '9') return -EINVAL;
        port = 0;
        while (*s >= '0' && *s <= '9') {
            port = port * 10 + (unsigned long)(*s - '0');
            if (port > 65535) return -EINVAL;
            s++;
        }
        if (port == 0) return -EINVAL;
        explicit_port = 1;
    }
    if (*s == '/') s++;
    if (*s) return -EINVAL;
    if (v6) {
        struct in6_addr a6;
        if (inet_pton(AF_INET6, p->host, &a6) != 1) return -EINVAL;
        p->host_is_ip = 1;
    } else {
        struct in_addr a4;
        p->host_is_ip = inet_pton(AF_INET, p->host, &a4) == 1;
    }
    snprintf(p->port, sizeof p->port, "%lu", port);
    const char *lb = v6 ? "[" : "", *rbk = v6 ? "]" : "";
    snprintf(p->key, sizeof p->key, "%s://%s%s%s:%lu", p->tls ? "https" : "http", lb, p->host, rbk,
             port);
    int defport = (p->tls && port == 443) || (!p->tls && port == 80);
    if (explicit_port && !defport)
        snprintf(p->hosthdr, sizeof p->hosthdr, "%s%s%s:%lu", lb, p->host, rbk, port);
    else
        snprintf(p->hosthdr, sizeof p->hosthdr, "%s%s%s", lb, p->host, rbk);
    return 0;
}

/* Under the lock: the pool of an origin string seen before, or NULL. */
static pool *pool_find(cshs_client *c, const char *given)
{
    for (pool *p = c->pools; p; p = p->next)
        if (p->given[0] && strcmp(p->given, given) == 0) return p;
    return NULL;
}

/* Under the lock: the pool of `id`'s origin, created on first use. */
static pool *pool_get(cshs_client *c, const origin_id *id, const char *given)
{
    for (pool *p = c->pools; p; p = p->next)
        if (strcmp(p->key, id->key) == 0) return p;
    pool *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    if (strlen(given) < sizeof p->given) memcpy(p->given, given, strlen(given) + 1);
    memcpy(p->key, id->key, sizeof p->key);
    memcpy(p->host, id->host, sizeof p->host);
    memcpy(p->port, id->port, sizeof p->port);
    memcpy(p->hosthdr, id->hosthdr, sizeof p->hosthdr);
    p->tls = id->tls;
    p->host_is_ip = id->host_is_ip;
    p->c = c;
    p->next = c->pools;
    c->pools = p;
    return p;
}

/* ---- connections: opening and closing ---- */

/* The pool's preferred address (pool.won), copied for an open that runs
 * unlocked: `out`, or NULL when it has none. */
static const cshs_dial_addr *won_get(pool *p, cshs_dial_addr *out)
{
    pthread_mutex_lock(&p->c->mu);
    int has = p->has_won;
    if (has) *out = p->won;
    pthread_mutex_unlock(&p->c->mu);
    return has ? out : NULL;
}

/* An open connected socket fd: its peer's address is the pool's
 * preferred one from now on. */
static void won_set(pool *p, int fd)
{
    cshs_dial_addr a;
    if (cshs__dial_peer(fd, &a) < 0) return;
    pthread_mutex_lock(&p->c->mu);
    p->won = a;
    p->has_won = 1;
    pthread_mutex_unlock(&p->c->mu);
}

static void conn_close(conn *cn)
{
    if (!cn) return;
    if (cn->ssl) {
        sigpipe_guard g;
        sigpipe_block(&g);
        ERR_clear_error();
        SSL_shutdown(cn->ssl); /* one try at a close_notify; the socket is non-blocking */
        ERR_clear_error();
        sigpipe_restore(&g);
        SSL_free(cn->ssl);
    }
    if (cn->dialer) {
        cshs__dialer_cancel(cn->dialer);
        free(cn->dialer);
        cn->dialer = NULL;
    }
    cshs__lookup_release(cn->lookup); /* a look-up in flight ends by itself */
    cn->lookup = NULL;
    cshs__kept_forget(&cn->kw); /* before the close: the loop lets go of it */
    if (cn->fd >= 0) close(cn->fd);
    free(cn->buf);
    cn->buf = NULL;
    if (!cshs__kept_ever(&cn->kw)) {
        free(cn);
        return;
    }
    cshs_client *c = cn->c;
    pthread_mutex_lock(&c->retired_mu);
    cn->next_retired = c->retired;
    c->retired = cn;
    pthread_mutex_unlock(&c->retired_mu);
}

static void close_list(conn *cn)
{
    while (cn) {
        conn *n = cn->next;
        conn_close(cn);
        cn = n;
    }
}

static conn *conn_alloc(pool *p)
{
    cshs_client *c = p->c;
    pthread_mutex_lock(&c->retired_mu);
    conn *cn = c->retired;
    if (cn) c->retired = cn->next_retired;
    pthread_mutex_unlock(&c->retired_mu);
    if (cn) {
        /* a retired one: its registration (not registered; its generation
         * goes on, read by a loop that holds a stale event) is left as is */
        memset((char *)cn + sizeof cn->kw, 0, sizeof *cn - sizeof cn->kw);
    } else {
        cn = calloc(1, sizeof *cn);
        if (!cn) return NULL;
        cn->kw.w.fd = -1;
    }
    cn->buf = malloc(CONN_BUF);
    cn->c = c;
    if (!cn->buf) {
        cn->fd = -1;
        cn->p = p;
        conn_close(cn);
        return NULL;
    }
    cn->cap = CONN_BUF;
    cn->fd = -1;
    cn->p = p;
    cn->born_ms = now_ms();
    return cn;
}

static int resolve(const pool *p, struct addrinfo **res)
{
    struct addrinfo hints;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV | (p->host_is_ip ? AI_NUMERICHOST : 0);
    int r = getaddrinfo(p->host, p->port, &hints, res);
    if (r == EAI_MEMORY) return -ENOMEM;
    return r ? CSHS_CLIENT_E_RESOLVE : 0;
}

static int tls_setup(cshs_client *c, conn *cn)
{
    pool *p = cn->p;
    SSL *ssl = SSL_new(c->ssl_ctx);
    if (!ssl) return -ENOMEM;
    if (!p->host_is_ip) SSL_set_tlsext_host_name(ssl, p->host); /* SNI: names only (RFC 6066 §3) */
    if (!c->o.tls_insecure) {
        int ok = p->host_is_ip ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), p->host)
                               : SSL_set1_host(ssl, p->host);
        if (ok != 1) {
            SSL_free(ssl);
            return -ENOMEM;
        }
    }
    SSL_set_fd(ssl, cn->fd);
    SSL_set_connect_state(ssl);
    cn->ssl = ssl;
    return 0;
}

/* One step of the TLS handshake: 1 done, 0 wants *events, or an error. */
static int tls_step(cshs_client *c, conn *cn, short *events)
{
    sigpipe_guard g;
    sigpipe_block(&g);
    ERR_clear_error();
    int r = SSL_do_handshake(cn->ssl);
    int e = r == 1 ? SSL_ERROR_NONE : SSL_get_error(cn->ssl, r);
    sigpipe_restore(&g);
    if (r == 1) return 1;
    if (e == SSL_ERROR_WANT_READ) {
        *events = POLLIN;
        return 0;
    }
    if (e == SSL_ERROR_WANT_WRITE) {
        *events = POLLOUT;
        return 0;
    }
    long v = SSL_get_verify_result(cn->ssl);
    ERR_clear_error();
    if (!c->o.tls_insecure && v != X509_V_OK) return CSHS_CLIENT_E_CERTIFICATE;
    return CSHS_CLIENT_E_TLS;
}

/* Opens a connection for a request, blocking this thread: resolve, the
 * TCP connect to the name's addresses (dial.h), then the TLS handshake,
 * all within timeout_ms. */
static int open_blocking(cshs_client *c, pool *p, unsigned timeout_ms, conn **out)
{
    *out = NULL;
    struct addrinfo *res = NULL;
    int r = resolve(p, &res);
    if (r < 0) return r;
    cshs_dial_addr pref;
    const cshs_dial_addr *prefer = won_get(p, &pref);
    int64_t start = now_ms(), deadline = start + timeout_ms;
    cshs_dialer dl;
    r = cshs__dialer_init(&dl, res, start, timeout_ms, prefer);
    freeaddrinfo(res);
    int fd = -1;
    if (r == 0) r = cshs__dialer_run(&dl, -1, &fd);
    if (r < 0) return r;
    won_set(p, fd);
    conn *cn = conn_alloc(p);
    if (!cn) {
        close(fd);
        return -ENOMEM;
    }
    cn->fd = fd;
    unsigned ut = c->o.send_timeout_ms;
    setsockopt(cn->fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &ut, sizeof ut);
    r = 0;
    if (p->tls) {
        r = tls_setup(c, cn);
        while (r == 0) {
            short ev = 0;
            r = tls_step(c, cn, &ev);
            if (r == 1) {
                r = 0;
                break;
            }
            if (r < 0) break;
            int64_t left = deadline - now_ms();
            if (left <= 0) {
                r = CSHS_CLIENT_E_CONNECT_TIMEOUT;
                break;
            }
            struct pollfd pf = {cn->fd, ev, 0};
            if (poll(&pf, 1, (int)left) < 0 && errno != EINTR) r = -errno;
        }
    }
    if (r < 0) {
        conn_close(cn);
        return r;
    }
    cn->born_ms = now_ms();
    *out = cn;
    return 0;
}

/* The TCP connect of the tick's open, to the addresses of res (its
 * deadline from the open's start, born_ms). 0, or an error. */
static int open_dial(conn *cn, struct addrinfo *res)
{
    cshs_dialer *dl = malloc(sizeof *dl);
    if (!dl) return -ENOMEM;
    cn->dialer = dl;
    cshs_dial_addr pref;
    return cshs__dialer_init(dl, res, cn->born_ms, cn->connect_ms, won_get(cn->p, &pref));
}

/* The tick's non-blocking open (min_idle): the name looked up on a thread
 * of its own (lookup.h; an address is read at once), then the TCP connect
 * to its addresses; later ticks see it through (open_progress), the next
 * address started at the first tick past its attempt delay. */
static int open_start(pool *p, unsigned connect_ms, conn **out)
{
    *out = NULL;
    conn *cn = conn_alloc(p);
    if (!cn) return -ENOMEM;
    cn->state = C_OPENING;
    cn->connect_ms = connect_ms;
    int r = 0;
    if (p->host_is_ip) {
        struct addrinfo *res = NULL;
        r = resolve(p, &res); /* numeric: never waits */
        if (r == 0) r = open_dial(cn, res);
        if (res) freeaddrinfo(res);
    } else {
        cn->lookup = cshs__lookup_start(p->host, p->port, -1);
        if (!cn->lookup) r = -ENOMEM;
    }
    if (r < 0) {
        conn_close(cn);
        return r;
    }
    *out = cn;
    return 0;
}

/* A non-blocking open once its TCP connect won (dial.h), then each time
 * its socket is ready as the TLS handshake asked: 1 ready, 0 the
 * handshake wants *events, or an error. */
static int open_advance(cshs_client *c, conn *cn, short *events)
{
    if (!cn->tcp_done) { /* connected: the dial saw it (cshs__dial_done) */
        cn->tcp_done = 1;
        unsigned ut = c->o.send_timeout_ms;
        setsockopt(cn->fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &ut, sizeof ut);
        if (!cn->p->tls) return 1;
        int r = tls_setup(c, cn);
        if (r < 0) return r;
    }
    return tls_step(c, cn, events);
}

/* One look at a connection the tick is opening: 1 ready, 0 not yet, or an
 * error. Never waits. */
static int open_progress(cshs_client *c, conn *cn)
{
    if (cn->lookup) {
        struct addrinfo *res = NULL;
        int r;
        if (!cshs__lookup_done(cn->lookup, &res, &r)) goto not_yet;
        cshs__lookup_release(cn->lookup);
        cn->lookup = NULL;
        if (r == 0) r = open_dial(cn, res);
        if (res) freeaddrinfo(res);
        if (r < 0) return r;
    }
    if (cn->dialer) {
        int fd = -1;
        int r = cshs__dialer_run(cn->dialer, 0, &fd);
        if (r < 0) return r;
        if (r == 0) goto not_yet;
        free(cn->dialer);
        cn->dialer = NULL;
        cn->fd = fd;
        won_set(cn->p, fd);
    }
    short ev = 0;
    int r = open_advance(c, cn, &ev);
    if (r != 0) return r;
not_yet:
    if (now_ms() - cn->born_ms >= (int64_t)cn->connect_ms) return CSHS_CLIENT_E_CONNECT_TIMEOUT;
    return 0;
}

/* 1 when an idle connection is still fit to send on: not closed by the
 * origin, no bytes nobody asked for, not past max_lifetime_ms. */
static int conn_too_old(const cshs_client *c, const conn *cn, int64_t now)
{
    return c->o.max_lifetime_ms && now - cn->born_ms >= (int64_t)c->o.max_lifetime_ms;
}

/* The look at the socket of conn_fresh: 1 when the origin sent nothing
 * (no FIN, no byte) since the connection went idle. */
static int conn_quiet(conn *cn)
{
    if (cn->ssl && SSL_pending(cn->ssl) > 0) return 0; /* decrypted, unasked for */
    struct pollfd pf = {cn->fd, POLLIN | POLLRDHUP, 0};
    if (poll(&pf, 1, 0) <= 0 || !pf.revents) return 1;
    if (!cn->ssl || (pf.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL))) return 0;
    /* TLS: a record may be a session ticket, which is no answer; any
     * application byte is one nobody asked for */
    char b;
    size_t n = 0;
    sigpipe_guard g;
    sigpipe_block(&g);
    ERR_clear_error();
    int r = SSL_read_ex(cn->ssl, &b, 1, &n);
    int e = r == 1 ? SSL_ERROR_NONE : SSL_get_error(cn->ssl, r);
    ERR_clear_error();
    sigpipe_restore(&g);
    return r != 1 && e == SSL_ERROR_WANT_READ;
}

/* Whether an idle connection's socket has to be looked at (conn_quiet)
 * before it is reused. One registered with a reactor (kept.h) has the
 * origin's FIN, or bytes nobody asked for, given there as an event while
 * idle: it is looked at only after such an event (or any event that came
 * while it was not waited on there, as the end of a long body read by a
 * thread), and is reused without a system call otherwise. This is nginx's
 * way with its upstream keep-alive connections, whose read event closes an
 * idle one; as there, a FIN the loop has not yet taken when a request
 * takes the connection is met by that request, which the retry rule sends
 * again. The others (waited on by threads alone) are always looked at. */
static int conn_needs_look(conn *cn)
{
    if (!cn->kw.w.reg || cn->kw.muted) return 1; /* muted: no event comes */
    return cshs__kept_take_missed(&cn->kw, EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR) != 0;
}

/* Under the lock. */
static int conn_fresh(const cshs_client *c, conn *cn, int64_t now)
{
    if (conn_too_old(c, cn, now)) return 0;
    if (!conn_needs_look(cn)) return 1;
    cn->p->looks++;
    return conn_quiet(cn);
}

/* ---- the pool's rules (under the lock) ---- */

static int can_open(const pool *p, unsigned pool_size, int64_t now)
{
    return now >= p->backoff_until_ms && p->open + p->nopening < pool_size &&
           p->nopening < p->nwaiters;
}

static void wq_remove(pool *p, waiter *w)
{
    if (w->prev)
        w->prev->next = w->next;
    else
        p->wq = w->next;
    if (w->next)
        w->next->prev = w->prev;
    else
        p->wq_tail = w->prev;
    w->prev = w->next = NULL;
    w->queued = 0;
    p->nwaiters--;
}

static void idle_push(pool *p, conn *cn)
{
    cn->state = C_IDLE;
    cn->idle_ms = now_ms();
    cn->prev = NULL;
    cn->next = p->idle;
    if (p->idle) p->idle->prev = cn;
    p->idle = cn;
    p->nidle++;
}

static void idle_remove(pool *p, conn *cn)
{
    if (cn->prev)
        cn->prev->next = cn->next;
    else
        p->idle = cn->next;
    if (cn->next) cn->next->prev = cn->prev;
    cn->prev = cn->next = NULL;
    p->nidle--;
}

/* An async waiter, out of the queue with a connection or an error: served
 * (its request sent, or its call failed) once the lock is let go. */
static void hand(cshs_client *c, waiter *w)
{
    cshs_call *call = w->call;
    call->handed_next = NULL;
    if (c->handed_tail)
        c->handed_tail->handed_next = call;
    else
        c->handed = call;
    c->handed_tail = call;
}

/* Under the lock: a connect to start for async waiters on `rx` (counted
 * as opening now). 0 when out of memory: the waiters keep waiting (a
 * release, the tick's next look, their deadline). */
static int open_job_add(cshs_client *c, pool *p, struct cshs_call *for_call, int own)
{
    open_job *j = malloc(sizeof *j);
    if (!j) return 0;
    j->p = p;
    j->rx = for_call->rx;
    j->connect_ms = for_call->connect_ms;
    j->own = own ? for_call : NULL;
    j->next = c->open_jobs;
    c->open_jobs = j;
    p->nopening++;
    return 1;
}

/* Wakes the first waiter that could open a connection now; for async
 * waiters, which no thread waits for, connects are started (one for each
 * while the rule allows: opens in flight fewer than waiters). */
static void wake_opener(cshs_client *c, pool *p)
{
    int64_t now = now_ms();
    for (waiter *w = p->wq; w && can_open(p, c->o.pool_size, now); w = w->next) {
        if (w->opening) continue;
        if (!w->call) {
            pthread_cond_signal(&w->cv);
            return;
        }
        if (!open_job_add(c, p, w->call, 0)) return;
    }
}

/* How much longer than a waiter of a connection's own reactor the
 * pool's first waiter may have waited and still be passed over for it
 * (next_waiter), and how far down the queue such a waiter is looked
 * for. */
#define OWN_REACTOR_SLACK_US 2000
#define OWN_REACTOR_LOOK 32

/* The waiter a connection given back goes to: the first async waiter on
 * the reactor the connection is registered with, if one is among the
 * first OWN_REACTOR_LOOK and came at most OWN_REACTOR_SLACK_US after the
 * pool's first waiter; else the first waiter. On its own reactor the
 * connection stays where it is watched and the waiter's request is sent
 * by the thread that runs that loop; handed to another loop it costs two
 * epoll_ctl and a wakeup of that loop (in a proxy of two loops with a
 * full pool, every second request). The slack is on the waiters' ages,
 * not on a count of turns: while both loops' first waiters are about as
 * old, connections stay on their loops; once one loop's have waited
 * longer by the slack (a loop with fewer connections than its share), a
 * connection crosses over, as strict first in, first out would have
 * sent it. */
static waiter *next_waiter(pool *p, const conn *cn)
{
    waiter *first = p->wq;
    const cshs_reactor *rx = cn->kw.w.reg;
    if (!rx || (first->call && first->call->rx == rx)) return first;
    int looked = 1;
    for (waiter *w = first->next; w && looked < OWN_REACTOR_LOOK; w = w->next, looked++) {
        if (w->since_us - first->since_us > OWN_REACTOR_SLACK_US) break; /* the queue is in order */
        if (w->call && w->call->rx == rx) return w;
    }
    return first;
}

/* A usable connection goes to a waiter (next_waiter), or to the idle
 * list. */
static void give(cshs_client *c, pool *p, conn *cn)
{
    if (p->wq) {
        waiter *w = next_waiter(p, cn);
        wq_remove(p, w);
        cn->state = C_BUSY;
        w->got = cn;
        record_wait(p, w->since_us);
        if (w->call)
            hand(c, w);
        else
            pthread_cond_signal(&w->cv);
        return;
    }
    idle_push(p, cn);
}

/* A waiter out of the queue with an error: its thread woken, or an async
 * one handed to be failed. */
static void fail_waiter(cshs_client *c, pool *p, waiter *w, int err)
{
    wq_remove(p, w);
    w->err = err;
    if (w->call)
        hand(c, w);
    else
        pthread_cond_signal(&w->cv);
}

/* What async waiters were handed, taken under the lock to be served
 * after it (serve_handed). */
typedef struct handed_work {
    struct cshs_call *calls;
    open_job *jobs;
} handed_work;

static handed_work take_handed(cshs_client *c)
{
    handed_work hw = {c->handed, c->open_jobs};
    c->handed = c->handed_tail = NULL;
    c->open_jobs = NULL;
    return hw;
}

static void serve_handed(cshs_client *c, handed_work hw);

/* Lets go of the lock, then serves what was handed under it. */
static void unlock_and_serve(cshs_client *c)
{
    handed_work hw = take_handed(c);
    pthread_mutex_unlock(&c->mu);
    serve_handed(c, hw);
}

/* 1 when nothing can serve a waiter of `p` before its backoff ends: a
 * connect failed, none is open (idle or in use: one given back would do)
 * and none is being opened. Waiting would only wait for the deadline: such
 * requests fail at once with that connect's error, as nginx answers 502
 * at once for a refused origin; the backoff still keeps them from trying
 * the origin again. */
static int dead_end(const pool *p, int64_t now)
{
    return now < p->backoff_until_ms && p->last_error && p->open == 0 && p->nopening == 0;
}

/* Under the lock: every waiter not opening a connection itself fails with
 * the last connect's error when the pool is at a dead end. */
static void fail_waiters(cshs_client *c, pool *p)
{
    if (!dead_end(p, now_ms())) return;
    for (waiter *w = p->wq, *nx; w; w = nx) {
        nx = w->next;
        if (!w->opening) fail_waiter(c, p, w, p->last_error);
    }
}

/* Counts a connection closed; the caller closes it after unlocking. */
static void dropped(cshs_client *c, pool *p)
{
    p->open--;
    fail_waiters(c, p);
    wake_opener(c, p);
}

static void open_failed(cshs_client *c, pool *p, int err)
{
    p->failures++;
    p->last_error = err;
    p->last_fail_us = now_us();
    c->seed = c->seed * 1103515245u + 12345u;
    p->last_backoff_ms = BACKOFF_MIN_MS + (uint32_t)((c->seed >> 16) % BACKOFF_JITTER_MS);
    p->backoff_until_ms = now_ms() + (int64_t)p->last_backoff_ms;
    fail_waiters(c, p);
}

/* Under the lock, with no waiter queued: the most recently used idle
 * connection still fit to send on (counted as a request that waited
 * since `since_us`), or NULL; the unfit ones go on *stale, to be closed
 * after unlocking. A request that will wait on reactor `rx` takes the most
 * recently used of those registered there, if any: one registered with
 * another loop would have to leave it (two epoll_ctl). Its socket is
 * looked at, when it has to be (conn_needs_look), with the lock let go
 * meanwhile: the connection is this thread's then, and the other threads
 * (another loop's requests) do not wait for it. */
static conn *take_idle(cshs_client *c, pool *p, cshs_reactor *rx, int64_t since_us, conn **stale)
{
    while (p->idle && !p->wq) {
        conn *cn = p->idle;
        if (rx)
            for (conn *o = p->idle; o; o = o->next)
                if (o->kw.w.reg == rx) {
                    cn = o;
                    break;
                }
        idle_remove(p, cn);
        cn->state = C_BUSY;
        int fit = !conn_too_old(c, cn, since_us / 1000);
        if (fit && conn_needs_look(cn)) {
            pthread_mutex_unlock(&c->mu);
            fit = conn_quiet(cn);
            pthread_mutex_lock(&c->mu);
            p->looks++;
        }
        if (fit) {
            record_wait(p, since_us);
            return cn;
        }
        dropped(c, p);
        cn->next = *stale;
        *stale = cn;
    }
    return NULL;
}

/* Takes a connection for a request: the most recently used idle one, or
 * one this thread opens, or one handed over while it waits (client.h).
 * `fresh`: a retry, which opens its own connection when it can and
 * otherwise waits like any request. */
static int acquire(cshs_client *c, pool *p, unsigned acquire_ms, unsigned connect_ms, int fresh,
                   conn **out)
{
    conn *stale = NULL; /* closed after unlocking */
    int r = 0;
    waiter w;
    memset(&w, 0, sizeof w);
    w.since_us = now_us();
    w.deadline_ms = w.since_us / 1000 + acquire_ms;
    pthread_cond_init(&w.cv, NULL);
    *out = NULL;

    pthread_mutex_lock(&c->mu);
    int64_t now = w.since_us / 1000;
    if (!fresh) {
        *out = take_idle(c, p, NULL, w.since_us, &stale);
    } else {
        if (p->open + p->nopening >= c->o.pool_size && p->idle) {
            /* room for the new connection: the least recently used idle goes */
            conn *lru = p->idle;
            while (lru->next) lru = lru->next;
            idle_remove(p, lru);
            p->open--;
            lru->next = stale;
            stale = lru;
        }
        if (p->open + p->nopening < c->o.pool_size && now >= p->backoff_until_ms) {
            /* the retry's own connection, opened outside the queue; when
             * that fails, it waits like any request */
            p->nopening++;
            unlock_and_serve(c);
            close_list(stale);
            stale = NULL;
            conn *cn = NULL;
            int e = open_blocking(c, p, connect_ms, &cn);
            pthread_mutex_lock(&c->mu);
            p->nopening--;
            if (e == 0) {
                p->open++;
                p->opens++;
                cn->state = C_BUSY;
                record_wait(p, w.since_us);
                *out = cn;
            } else {
                open_failed(c, p, e);
            }
        }
    }
    if (!*out) {
        w.queued = 1;
        w.prev = p->wq_tail;
        if (p->wq_tail)
            p->wq_tail->next = &w;
        else
            p->wq = &w;
        p->wq_tail = &w;
        p->nwaiters++;
        for (;;) {
            if (w.got) {
                *out = w.got;
                break;
            }
            if (w.err) {
                r = w.err;
                break;
            }
            if (p->idle && p->wq == &w) { /* never left idle behind a queue */
                conn *cn = p->idle;
                idle_remove(p, cn);
                if (!conn_fresh(c, cn, now_ms())) {
                    p->open--;
                    cn->next = stale;
                    stale = cn;
                    continue;
                }
                wq_remove(p, &w);
                cn->state = C_BUSY;
                record_wait(p, w.since_us);
                *out = cn;
                break;
            }
            now = now_ms();
            if (dead_end(p, now)) { /* nothing to wait for but the deadline */
                w.err = p->last_error;
                r = w.err;
                break;
            }
            if (can_open(p, c->o.pool_size, now)) {
                p->nopening++;
                w.opening = 1;
                unlock_and_serve(c);
                close_list(stale);
                stale = NULL;
                conn *cn = NULL;
                int e = open_blocking(c, p, connect_ms, &cn);
                pthread_mutex_lock(&c->mu);
                w.opening = 0;
                p->nopening--;
                if (e == 0) {
                    p->open++;
                    p->opens++;
                    give(c, p, cn); /* to the first waiter: this one, or one before it */
                } else {
                    open_failed(c, p, e);
                }
                if (!w.got && !w.err && now_ms() >= w.deadline_ms) { /* past its deadline */
                    w.expired = 1;
                    w.err = e < 0 ? e : CSHS_CLIENT_E_ACQUIRE_TIMEOUT;
                    r = w.err;
                    break;
                }
                continue;
            }
            if (c->handed || c->open_jobs) { /* not left behind while this one sleeps */
                unlock_and_serve(c);
                pthread_mutex_lock(&c->mu);
                continue;
            }
            pthread_cond_wait(&w.cv, &c->mu);
        }
        if (w.queued) wq_remove(p, &w);
    }
    if (w.expired) p->acquire_timeouts++;
    unlock_and_serve(c);
    pthread_cond_destroy(&w.cv);
    close_list(stale);
    return r;
}

/* Gives a call's connection back: reused when `keep`, else closed. */
static void release(cshs_client *c, pool *p, conn *cn, int keep)
{
    if (cn->detached) { /* its place in the pool was given up already */
        conn_close(cn);
        return;
    }
    if (keep && c->o.max_lifetime_ms && now_ms() - cn->born_ms >= (int64_t)c->o.max_lifetime_ms)
        keep = 0;
    pthread_mutex_lock(&c->mu);
    if (keep) {
        cn->start = cn->end = 0;
        give(c, p, cn);
    } else {
        dropped(c, p);
    }
    handed_work hw = take_handed(c);
    pthread_mutex_unlock(&c->mu);
    if (!keep) conn_close(cn);
    serve_handed(c, hw);
}

/* ---- the tick ---- */

typedef struct tick_job {
    struct tick_job *next;
    pool *p;
    conn *cn; /* an opening connection to look at; NULL: start one */
    int result;
} tick_job;

void cshs_client_tick(cshs_client *c)
{
    if (!c) return;
    conn *closing = NULL;
    tick_job *jobs = NULL;
    pthread_mutex_lock(&c->mu);
    int64_t now = now_ms();
    for (pool *p = c->pools; p; p = p->next) {
        /* waiters past their deadline; a connect that failed while one
         * waited is the better answer than the timeout */
        for (waiter *w = p->wq, *nx; w; w = nx) {
            nx = w->next;
            if (now < w->deadline_ms || w->opening) continue; /* an opener decides itself */
            w->expired = 1;
            if (w->call) p->acquire_timeouts++; /* a thread counts its own */
            fail_waiter(c, p, w,
                        p->last_error && p->last_fail_us >= w->since_us
                            ? p->last_error
                            : CSHS_CLIENT_E_ACQUIRE_TIMEOUT);
        }
        /* a backoff that ended: the waiters may open again (async ones
         * by wake_opener below) */
        if (p->wq && can_open(p, c->o.pool_size, now))
            for (waiter *w = p->wq; w; w = w->next)
                if (!w->opening && !w->call) pthread_cond_signal(&w->cv);
        /* idle connections past idle_timeout_ms, past max_lifetime_ms, or
         * closed by the origin (an unread FIN, or bytes nobody asked for) */
        for (conn *cn = p->idle, *nx; cn; cn = nx) {
            nx = cn->next;
            if (now - cn->idle_ms < (int64_t)c->o.idle_timeout_ms && conn_fresh(c, cn, now))
                continue;
            idle_remove(p, cn);
            p->open--;
            cn->next = closing;
            closing = cn;
        }
        /* the connections the tick is opening: looked at unlocked */
        while (p->opening) {
            tick_job *j = calloc(1, sizeof *j);
            if (!j) break;
            conn *cn = p->opening;
            p->opening = cn->next;
            cn->next = NULL;
            j->p = p;
            j->cn = cn;
            j->next = jobs;
            jobs = j;
        }
        /* min_idle: one more per tick */
        if (c->o.min_idle && p->nidle + p->nopening < c->o.min_idle &&
            p->open + p->nopening < c->o.pool_size && now >= p->backoff_until_ms) {
            tick_job *j = calloc(1, sizeof *j);
            if (j) {
                p->nopening++;
                j->p = p;
                j->next = jobs;
                jobs = j;
            }
        }
        if (p->wq) wake_opener(c, p);
    }
    /* pools with nothing in them and nobody using them; one in its
     * backoff is kept until it ends, or the next request would try the
     * origin again at once (its requests fail at once now, so none waits
     * to keep it) */
    for (pool **pp = &c->pools; *pp;) {
        pool *p = *pp;
        if (!p->open && !p->nopening && !p->nwaiters && !p->users && now >= p->backoff_until_ms) {
            *pp = p->next;
            free(p);
        } else {
            pp = &p->next;
        }
    }
    handed_work hw = take_handed(c);
    pthread_mutex_unlock(&c->mu);
    serve_handed(c, hw);

    while (closing) {
        conn *n = closing->next;
        conn_close(closing);
        closing = n;
    }
    for (tick_job *j = jobs; j; j = j->next) {
        if (!j->cn)
            j->result = open_start(j->p, c->o.connect_timeout_ms, &j->cn);
        else
            j->result = open_progress(c, j->cn);
    }

    pthread_mutex_lock(&c->mu);
    for (tick_job *j = jobs, *nx; j; j = nx) {
        nx = j->next;
        pool *p = j->p;
        if (j->result < 0) { /* could not start, or failed */
            p->nopening--;
            open_failed(c, p, j->result);
            if (j->cn) {
                j->cn->next = closing;
                closing = j->cn;
            }
        } else if (j->result == 1) {
            p->nopening--;
            p->open++;
            p->opens++;
            j->cn->born_ms = now_ms();
            give(c, p, j->cn);
        } else { /* on its way: the next tick looks again */
            j->cn->next = p->opening;
            p->opening = j->cn;
        }
        free(j);
    }
    hw = take_handed(c);
    pthread_mutex_unlock(&c->mu);
    serve_handed(c, hw);
    while (closing) {
        conn *n = closing->next;
        conn_close(closing);
        closing = n;
    }
}

static void *tick_main(void *arg)
{
    cshs_client *c = arg;
    pthread_mutex_lock(&c->tick_mu);
    while (!c->tick_stop) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        int64_t ns = ts.tv_nsec + (int64_t)(c->o.tick_interval_ms % 1000) * 1000000;
        ts.tv_sec += (time_t)(c->o.tick_interval_ms / 1000) + (time_t)(ns / 1000000000);
        ts.tv_nsec = (long)(ns % 1000000000);
        pthread_cond_timedwait(&c->tick_cv, &c->tick_mu, &ts);
        if (c->tick_stop) break;
        pthread_mutex_unlock(&c->tick_mu);
        cshs_client_tick(c);
        pthread_mutex_lock(&c->tick_mu);
    }
    pthread_mutex_unlock(&c->tick_mu);
    return NULL;
}

/* ---- the client ---- */

cshs_client *cshs_client_new(const cshs_client_options *o)
{
    if (o && cshs_client_options_check(o, NULL) < 0) return NULL;
    cshs_client *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    options_copy(&c->o, o);
    c->seed = (unsigned)now_us() ^ (unsigned)(uintptr_t)c;
    pthread_mutex_init(&c->mu, NULL);
    pthread_mutex_init(&c->retired_mu, NULL);
    pthread_mutex_init(&c->tls_mu, NULL);
    pthread_mutex_init(&c->tick_mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&c->tick_cv, &ca);
    pthread_condattr_destroy(&ca);
    if (c->o.tick_thread) {
        if (pthread_create(&c->tick, NULL, tick_main, c) != 0) {
            c->o.tick_thread = 0;
            cshs_client_free(c);
            return NULL;
        }
        c->tick_running = 1;
    }
    return c;
}

void cshs_client_free(cshs_client *c)
{
    if (!c) return;
    if (c->tick_running) {
        pthread_mutex_lock(&c->tick_mu);
        c->tick_stop = 1;
        pthread_cond_signal(&c->tick_cv);
        pthread_mutex_unlock(&c->tick_mu);
        pthread_join(c->tick, NULL);
    }
    for (pool *p = c->pools, *n; p; p = n) {
        n = p->next;
        close_list(p->idle);
        close_list(p->opening);
        free(p);
    }
    for (cshs_call *k = c->spare_calls, *n; k; k = n) {
        n = k->next_spare;
        free(k);
    }
    for (conn *cn = c->retired, *n; cn; cn = n) {
        n = cn->next_retired;
        free(cn);
    }
    pthread_mutex_destroy(&c->retired_mu);
    if (c->ssl_ctx) SSL_CTX_free(c->ssl_ctx);
    pthread_cond_destroy(&c->tick_cv);
    pthread_mutex_destroy(&c->tick_mu);
    pthread_mutex_destroy(&c->tls_mu);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

/* The TLS context, made on the first HTTPS origin (loading a trust store
 * costs milliseconds that a plain client never pays). */
static int tls_ctx(cshs_client *c)
{
    int r = 0;
    pthread_mutex_lock(&c->tls_mu);
    if (!c->ssl_ctx) {
        SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
        if (!ctx) {
            r = -ENOMEM;
        } else {
            static const unsigned char alpn[] = "\x08http/1.1";
            SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
            SSL_CTX_set_alpn_protos(ctx, alpn, sizeof alpn - 1);
            if (c->o.tls_insecure) {
                SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL);
            } else {
                SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
                int ok = c->o.tls_ca_file
                             ? SSL_CTX_load_verify_locations(ctx, c->o.tls_ca_file, NULL)
                             : SSL_CTX_set_default_verify_paths(ctx);
                if (ok != 1) r = CSHS_CLIENT_E_CERTIFICATE;
            }
            ERR_clear_error();
            if (r == 0)
                c->ssl_ctx = ctx;
            else
                SSL_CTX_free(ctx);
        }
    }
    pthread_mutex_unlock(&c->tls_mu);
    return r;
}

/* ---- a call's I/O: the calling thread, poll() on its one socket ---- */

/* Waits for `events` on the call's socket until deadline_ms: 0 ready,
 * -ETIMEDOUT, or -errno. */
static int wait_fd(int fd, short events, int64_t deadline_ms)
{
    for (;;) {
        int64_t left = deadline_ms - now_ms();
        if (left <= 0) return -ETIMEDOUT;
        struct pollfd pf = {fd, events, 0};
        int r = poll(&pf, 1, left > 60000 ? 60000 : (int)left);
        if (r > 0) return 0;
        if (r < 0 && errno != EINTR) return -errno;
    }
}

/* One SSL_read without waiting: > 0 bytes, 0 at the end of input
 * (close_notify, or none), -EAGAIN when OpenSSL wants the socket (*wait:
 * POLLIN or POLLOUT), -errno or -EIO. */
static ssize_t tls_read_now(conn *cn, void *buf, size_t cap, short *wait)
{
    size_t n = 0;
    sigpipe_guard g;
    sigpipe_block(&g);
    ERR_clear_error();
    errno = 0;
    int r = SSL_read_ex(cn->ssl, buf, cap, &n);
    int e = r == 1 ? SSL_ERROR_NONE : SSL_get_error(cn->ssl, r);
    int se = errno;
    ERR_clear_error();
    sigpipe_restore(&g);
    if (r == 1) return (ssize_t)n;
    *wait = e == SSL_ERROR_WANT_WRITE ? POLLOUT : POLLIN;
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) return -EAGAIN;
    if (e == SSL_ERROR_ZERO_RETURN) return 0;
    if (e == SSL_ERROR_SYSCALL) return se ? -se : 0; /* 0: the end without close_notify */
    return -EIO;
}

/* One SSL_write without waiting: the bytes taken (> 0), -EAGAIN when
 * OpenSSL wants the socket (*wait: POLLIN or POLLOUT; offer the same
 * bytes again), -errno, -EPIPE or -EIO. */
static ssize_t tls_write_now(conn *cn, const void *data, size_t len, short *wait)
{
    size_t took = 0;
    sigpipe_guard g;
    sigpipe_block(&g);
    ERR_clear_error();
    errno = 0;
    int r = SSL_write_ex(cn->ssl, data, len, &took);
    int e = r == 1 ? SSL_ERROR_NONE : SSL_get_error(cn->ssl, r);
    int se = errno;
    ERR_clear_error();
    sigpipe_restore(&g);
    if (r == 1) return (ssize_t)took;
    *wait = e == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT;
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) return -EAGAIN;
    if (e == SSL_ERROR_SYSCALL) return se ? -se : -EPIPE;
    return -EIO;
}

/* conn_read's deadline for a read that never waits */
#define CONN_NOWAIT (-1)

/* Reads what is there, waiting until deadline_ms for something: > 0
 * bytes, 0 at the end of input, -ETIMEDOUT, -ECONNRESET, -EIO; with
 * CONN_NOWAIT, -EAGAIN instead of a wait (its way in cn->io_wait). */
static ssize_t conn_read(conn *cn, void *buf, size_t cap, int64_t deadline_ms)
{
    for (;;) {
        short ev = POLLIN;
        if (!cn->ssl) {
            ssize_t n = cshs__recv(cn->fd, buf, cap, 0);
            if (n >= 0) return n;
            if (errno == EINTR) continue;
            if (errno != EAGAIN && errno != EWOULDBLOCK) return -errno;
        } else {
            ssize_t n = tls_read_now(cn, buf, cap, &ev);
            if (n != -EAGAIN) return n;
        }
        if (deadline_ms == CONN_NOWAIT) {
            cn->io_wait = ev;
            return -EAGAIN;
        }
        int w = wait_fd(cn->fd, ev, deadline_ms);
        if (w < 0) return w;
    }
}

static int early_answer(cshs_call *call);

/* While a body is sent: waits until the socket takes more (0), or the
 * origin's response head is here (1: an answer before the end of the
 * body), or the deadline (-ETIMEDOUT), or an error. Bytes that arrive
 * without completing a head are kept for wait_head (over TLS, decrypted;
 * records that carry no data, a session ticket, are taken by OpenSSL). */
static int wait_send_or_answer(cshs_call *call, short events, int64_t deadline_ms)
{
    conn *cn = call->cn;
    for (;;) {
        int64_t left = deadline_ms - now_ms();
        if (left <= 0) return -ETIMEDOUT;
        short want = (short)(events | (call->peer_eof ? 0 : POLLIN));
        struct pollfd pf = {cn->fd, want, 0};
        int r = poll(&pf, 1, left > 60000 ? 60000 : (int)left);
        if (r < 0 && errno != EINTR) return -errno;
        if (r <= 0) continue;
        if (!call->peer_eof && (pf.revents & (POLLIN | POLLHUP | POLLERR))) {
            int a = early_answer(call);
            if (a != 0) return a;
        }
        if (pf.revents & (events | POLLHUP | POLLERR)) return 0; /* the send sees the error */
    }
}

/* Sends every byte of iov[0 .. n) (gather write; OpenSSL: one write per
 * piece), waiting at most send_ms between bytes taken. Counts the bytes
 * in call->bytes_sent. 0, -ETIMEDOUT, -EPIPE, -ECONNRESET or -errno; 1
 * when call->watch and the origin's response head arrived first (the rest
 * is not sent). */
static int conn_send(cshs_call *call, struct iovec *iov, int n)
{
    conn *cn = call->cn;
    int i = 0;
    while (i < n && iov[i].iov_len == 0) i++;
    while (i < n) {
        short ev = POLLOUT;
        size_t took = 0;
        int full = 0; /* the socket took less than offered: wait before the next try */
        if (!cn->ssl) {
            struct msghdr mh;
            memset(&mh, 0, sizeof mh);
            mh.msg_iov = iov + i;
            mh.msg_iovlen = (size_t)(n - i);
            size_t offered = 0;
            for (int k = i; k < n; k++) offered += iov[k].iov_len;
            ssize_t w = cshs__sendmsg(cn->fd, &mh, MSG_NOSIGNAL);
            if (w < 0) {
                if (errno == EINTR) continue;
                if (errno != EAGAIN && errno != EWOULDBLOCK) return -errno;
                full = 1;
            } else {
                took = (size_t)w;
                full = took < offered;
            }
        } else {
            ssize_t w = tls_write_now(cn, iov[i].iov_base, iov[i].iov_len, &ev);
            if (w < 0 && w != -EAGAIN) return (int)w;
            took = w > 0 ? (size_t)w : 0;
            full = w < 0;
        }
        call->bytes_sent += took;
        while (took && i < n) {
            size_t k = took < iov[i].iov_len ? took : iov[i].iov_len;
            iov[i].iov_base = (char *)iov[i].iov_base + k;
            iov[i].iov_len -= k;
            took -= k;
            if (iov[i].iov_len == 0) i++;
        }
        while (i < n && iov[i].iov_len == 0) i++;
        if (i == n) break;
        if (full && call->send_nowait) {
            cn->io_wait = ev;
            return -EAGAIN;
        }
        if (full) {
            int64_t deadline = now_ms() + call->send_ms;
            int w = call->watch ? wait_send_or_answer(call, ev, deadline)
                                : wait_fd(cn->fd, ev, deadline);
            if (w != 0) return w;
        }
    }
    return 0;
}

#define FILE_CHUNK 16384u /* a file body over TLS is read and written this much at a time */

/* What is left of a CSHS_CLIENT_BODY_FILE body, sent as conn_send sends:
 * 0 all of it, -EAGAIN (send_nowait: the way to wait in cn->io_wait), or
 * an error. */
static int file_send(cshs_call *call)
{
    conn *cn = call->cn;
    while (call->file_left) {
        short ev = POLLOUT;
        size_t took = 0;
        sigpipe_guard g;
        if (!cn->ssl) {
            off_t off = (off_t)call->file_off;
            size_t want = call->file_left > (1u << 30) ? (1u << 30) : (size_t)call->file_left;
            sigpipe_block(&g);
            ssize_t n = sendfile(cn->fd, call->file_fd, &off, want);
            int se = errno;
            sigpipe_restore(&g);
            if (n == 0) return -EIO; /* the file is shorter than said */
            if (n < 0 && se == EINTR) continue;
            if (n < 0 && se != EAGAIN && se != EWOULDBLOCK) return -se;
            if (n > 0) {
                took = (size_t)n;
                call->file_off += took;
            }
        } else {
            if (call->fchunk_pos == call->fchunk_len) {
                if (!call->fchunk && !(call->fchunk = malloc(FILE_CHUNK))) return -ENOMEM;
                size_t want = call->file_left < FILE_CHUNK ? (size_t)call->file_left : FILE_CHUNK;
                ssize_t n = pread(call->file_fd, call->fchunk, want, (off_t)call->file_off);
                if (n < 0 && errno == EINTR) continue;
                if (n <= 0) return n < 0 ? -errno : -EIO;
                call->file_off += (uint64_t)n;
                call->fchunk_pos = 0;
                call->fchunk_len = (size_t)n;
            }
            ssize_t w = tls_write_now(cn, call->fchunk + call->fchunk_pos,
                                      call->fchunk_len - call->fchunk_pos, &ev);
            if (w < 0 && w != -EAGAIN) return (int)w;
            took = w > 0 ? (size_t)w : 0;
            call->fchunk_pos += took;
        }
        if (took) {
            call->bytes_sent += took;
            call->file_left -= took;
            continue;
        }
        if (call->send_nowait) {
            cn->io_wait = ev;
            return -EAGAIN;
        }
        int w = wait_fd(cn->fd, ev, now_ms() + call->send_ms);
        if (w != 0) return w;
    }
    return 0;
}

/* The request's head and body, what is left of them (out_iov, then a
 * file body). */
static int send_rest(cshs_call *call)
{
    int e = conn_send(call, call->out_iov, 2);
    if (e == 0 && call->file_left) e = file_send(call);
    return e;
}

static int is_closed_errno(int e)
{
    return e == -EPIPE || e == -ECONNRESET || e == 0;
}

/* The call fails: its connection is closed, later calls return `err`. */
static int call_fail(cshs_call *call, int err)
{
    if (call->cn) {
        release(call->c, call->p, call->cn, 0);
        call->cn = NULL;
    }
    call->state = K_FAILED;
    call->err = err;
    return err;
}

/* A send error as the call's error; on a reused connection, the origin
 * having closed it is what the retry rule is for. */
static int send_failed(cshs_call *call, int e)
{
    if (e == -ETIMEDOUT) return call_fail(call, CSHS_CLIENT_E_SEND_TIMEOUT);
    if (is_closed_errno(e)) {
        call->retryable = call->reused;
        return call_fail(call, CSHS_CLIENT_E_ORIGIN_CLOSED);
    }
    return call_fail(call, e);
}

/* ---- the request ---- */

static int value_ok(const char *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)v[i];
        if ((ch < 0x20 && ch != '\t') || ch == 0x7f) return 0;
    }
    return 1;
}

/* Fields the client never passes on: its own framing and connection
 * handling, and hop-by-hop fields (RFC 9110 §7.6.1); Expect: see client.h. */
static int dropped_field(const char *name, size_t n)
{
    static const char *const names[] = {
        "connection",        "keep-alive", "proxy-connection", "te",
        "transfer-encoding", "upgrade",    "content-length",   "expect"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strlen(names[i]) == n && csh_mem_ieq(name, names[i], n)) return 1;
    return 0;
}

/* The request's protocol to switch to (a field of 0.4.4), or NULL. */
static const char *upgrade_of(const cshs_client_request *r)
{
    return r->size > offsetof(cshs_client_request, upgrade) ? r->upgrade : NULL;
}

static int request_check(const cshs_client_request *r)
{
    if (!r) return -EINVAL;
    if (!r->method || !csh_is_token(r->method, strlen(r->method))) return -EINVAL;
    if (strcmp(r->method, "CONNECT") == 0) return -EINVAL; /* no tunnels */
    const char *t = r->target ? r->target : "/";
    if (!(t[0] == '/' || (t[0] == '*' && t[1] == 0))) return -EINVAL;
    for (const char *q = t; *q; q++)
        if ((unsigned char)*q <= 0x20 || (unsigned char)*q >= 0x7f) return -EINVAL;
    if (r->num_headers && !r->headers) return -EINVAL;
    for (size_t i = 0; i < r->num_headers; i++) {
        const cshs_client_header *h = &r->headers[i];
        if (!h->name || !csh_is_token(h->name, h->name_len)) return -EINVAL;
        if (h->value_len && !h->value) return -EINVAL;
        if (!value_ok(h->value, h->value_len)) return -EINVAL;
    }
    if (r->body_mode != CSHS_CLIENT_BODY_WHOLE && r->body_mode != CSHS_CLIENT_BODY_LENGTH &&
        r->body_mode != CSHS_CLIENT_BODY_CHUNKED && r->body_mode != CSHS_CLIENT_BODY_FILE)
        return -EINVAL;
    if (r->body_mode == CSHS_CLIENT_BODY_FILE && r->size > offsetof(cshs_client_request, body_fd) &&
        r->body_fd < 0)
        return -EINVAL;
    if (r->body_mode == CSHS_CLIENT_BODY_WHOLE && r->body_len && !r->body) return -EINVAL;
    const char *up = upgrade_of(r);
    if (up &&
        (!csh_is_token(up, strlen(up)) || r->body_mode != CSHS_CLIENT_BODY_WHOLE || r->body_len))
        return -EINVAL;
    return 0;
}

static int method_idempotent(const char *m)
{
    static const char *const idem[] = {"GET", "HEAD", "PUT", "DELETE", "OPTIONS", "TRACE"};
    for (size_t i = 0; i < sizeof idem / sizeof idem[0]; i++)
        if (strcmp(m, idem[i]) == 0) return 1;
    return 0;
}

static csh_method method_of(const char *m)
{
    static const csh_method all[] = {CSH_METHOD_GET,   CSH_METHOD_HEAD,   CSH_METHOD_POST,
                                     CSH_METHOD_PUT,   CSH_METHOD_DELETE, CSH_METHOD_OPTIONS,
                                     CSH_METHOD_TRACE, CSH_METHOD_PATCH};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (strcmp(m, csh_method_name(all[i])) == 0) return all[i];
    return CSH_METHOD_OTHER;
}

/* Appends to the connection's buffer (grown to fit: a head is as long as
 * the caller's fields make it). */
static int put(conn *cn, size_t *len, const char *s, size_t n)
{
    if (*len + n > cn->cap) {
        size_t cap = cn->cap;
        while (cap < *len + n) cap *= 2;
        char *b = realloc(cn->buf, cap);
        if (!b) return -ENOMEM;
        cn->buf = b;
        cn->cap = cap;
    }
    memcpy(cn->buf + *len, s, n);
    *len += n;
    return 0;
}

#define PUTS(s) put(cn, &len, (s), strlen(s))

/* Builds the head in the connection's buffer and sends it, with a whole
 * body (copied next to the head when it fits, else from the caller's
 * memory in the same gather write). */
static int send_head(cshs_call *call, const cshs_client_request *r)
{
    conn *cn = call->cn;
    size_t len = 0;
    int e = 0, has_host = 0;
    char num[48];
    const char *t = r->target ? r->target : "/";
    e |= PUTS(r->method);
    e |= put(cn, &len, " ", 1);
    e |= PUTS(t);
    e |= PUTS(" HTTP/1.1\r\n");
    for (size_t i = 0; i < r->num_headers; i++)
        if (r->headers[i].name_len == 4 && csh_mem_ieq(r->headers[i].name, "host", 4)) has_host = 1;
    if (!has_host) {
        e |= PUTS("Host: ");
        e |= PUTS(call->p->hosthdr);
        e |= PUTS("\r\n");
    }
    for (size_t i = 0; i < r->num_headers; i++) {
        const cshs_client_header *h = &r->headers[i];
        if (dropped_field(h->name, h->name_len)) continue;
        e |= put(cn, &len, h->name, h->name_len);
        e |= put(cn, &len, ": ", 2);
        if (h->value_len) e |= put(cn, &len, h->value, h->value_len);
        e |= put(cn, &len, "\r\n", 2);
    }
    if (call->upgrade) {
        e |= PUTS("Connection: Upgrade\r\nUpgrade: ");
        e |= PUTS(call->upgrade);
        e |= PUTS("\r\n");
    }
    uint64_t cl = 0;
    int send_cl = 0;
    if (r->body_mode == CSHS_CLIENT_BODY_WHOLE) {
        cl = r->body_len;
        send_cl = cl > 0 || call->method == CSH_METHOD_POST || call->method == CSH_METHOD_PUT ||
                  call->method == CSH_METHOD_PATCH;
    } else if (r->body_mode == CSHS_CLIENT_BODY_FILE) {
        cl = r->body_len;
        send_cl = 1;
    } else if (r->body_mode == CSHS_CLIENT_BODY_LENGTH) {
        cl = r->content_length;
        send_cl = 1;
    } else {
        e |= PUTS("Transfer-Encoding: chunked\r\n");
    }
    if (send_cl) {
        snprintf(num, sizeof num, "Content-Length: %llu\r\n", (unsigned long long)cl);
        e |= PUTS(num);
    }
    e |= put(cn, &len, "\r\n", 2);
    if (e) return call_fail(call, -ENOMEM);
    struct iovec *iov = call->out_iov; /* what a send that cannot wait leaves is there */
    iov[0].iov_base = cn->buf;
    iov[0].iov_len = len;
    iov[1].iov_base = NULL;
    iov[1].iov_len = 0;
    if (r->body_mode == CSHS_CLIENT_BODY_WHOLE && r->body_len) {
        if (len + r->body_len <= cn->cap) {
            memcpy(cn->buf + len, r->body, r->body_len);
            iov[0].iov_len += r->body_len;
        } else {
            iov[1].iov_base = (void *)(uintptr_t)r->body;
            iov[1].iov_len = r->body_len;
        }
    }
    call->file_left = 0;
    if (r->body_mode == CSHS_CLIENT_BODY_FILE) {
        call->file_fd = r->body_fd;
        call->file_off = r->body_offset;
        call->file_left = r->body_len;
        call->fchunk_pos = call->fchunk_len = 0;
    }
    if (call->keep_head && call->reused && !iov[1].iov_len && !call->file_left) {
        call->again = malloc(iov[0].iov_len);
        if (call->again) {
            memcpy(call->again, cn->buf, iov[0].iov_len);
            call->again_len = iov[0].iov_len;
        }
    }
    e = send_rest(call);
    cn->start = cn->end = 0;
    /* send_nowait: the reactor sends the rest, or its caller looks at the
     * error first (an answer may have come before it) */
    if (e < 0 && call->send_nowait) return e;
    if (e < 0) return send_failed(call, e);
    return 0;
}

/* Starts a call: checks the request, takes a connection (a newly opened
 * one when `fresh`), sends the head. *out is set once the call exists,
 * failed or not. */
/* A call made for a request, with no connection yet: its pool found (or
 * made) and counted as used. */
static int call_new(cshs_client *c, const cshs_client_request *r, int keep_head, cshs_call **out)
{
    *out = NULL;
    int e = request_check(r);
    if (e < 0) return e;
    if (!r->origin) return -EINVAL;
    pthread_mutex_lock(&c->mu);
    cshs_call *call = c->spare_calls;
    if (call) {
        c->spare_calls = call->next_spare;
        c->nspare_calls--;
    }
    pool *p = pool_find(c, r->origin); /* an origin string seen before */
    if (p) p->users++;
    pthread_mutex_unlock(&c->mu);
    if (!call && !(call = malloc(sizeof *call))) {
        if (p) {
            pthread_mutex_lock(&c->mu);
            p->users--;
            pthread_mutex_unlock(&c->mu);
        }
        return -ENOMEM;
    }
    /* the field array is not cleared: the parser fills what it reports */
    memset(call, 0, offsetof(cshs_call, fields));
    if (!p) {
        origin_id id;
        e = parse_origin(r->origin, &id);
        if (e == 0 && id.tls) e = tls_ctx(c);
        if (e < 0) {
            free(call);
            return e;
        }
        pthread_mutex_lock(&c->mu);
        p = pool_get(c, &id, r->origin);
        if (p) p->users++;
        pthread_mutex_unlock(&c->mu);
        if (!p) {
            free(call);
            return -ENOMEM;
        }
    }
    call->c = c;
    call->p = p;
    call->method = method_of(r->method);
    call->upgrade = upgrade_of(r);
    call->idempotent = method_idempotent(r->method);
    call->mode = r->body_mode;
    call->body_left = r->body_mode == CSHS_CLIENT_BODY_LENGTH ? r->content_length : 0;
    unsigned opt_acq = r->acquire_timeout_ms ? r->acquire_timeout_ms : c->o.acquire_timeout_ms;
    unsigned opt_con = r->connect_timeout_ms ? r->connect_timeout_ms : c->o.connect_timeout_ms;
    call->acquire_ms = opt_acq;
    call->connect_ms = opt_con;
    call->keep_head = keep_head && r->body_mode == CSHS_CLIENT_BODY_WHOLE && r->body_len == 0;
    call->send_ms = r->send_timeout_ms ? r->send_timeout_ms : c->o.send_timeout_ms;
    call->head_ms = r->head_timeout_ms ? r->head_timeout_ms : c->o.head_timeout_ms;
    call->read_ms = r->read_timeout_ms ? r->read_timeout_ms : c->o.read_timeout_ms;
    csh_parser_init(&call->parser, CSH_RESPONSE, call->fields, MAX_FIELDS, NULL, 0);
    *out = call;
    return 0;
}

static int call_start(cshs_client *c, const cshs_client_request *r, int fresh, int keep_head,
                      cshs_call **out)
{
    int e = call_new(c, r, keep_head, out);
    if (e < 0) return e;
    cshs_call *call = *out;
    conn *cn = NULL;
    e = acquire(c, call->p, call->acquire_ms, call->connect_ms, fresh, &cn);
    if (e < 0) {
        call->state = K_FAILED;
        call->err = e;
        return e;
    }
    call->cn = cn;
    call->reused = cn->uses > 0;
    e = send_head(call, r);
    if (e < 0) return e;
    call->state = r->body_mode == CSHS_CLIENT_BODY_WHOLE || r->body_mode == CSHS_CLIENT_BODY_FILE
                      ? K_HEAD_WAIT
                      : K_BODY_OUT;
    call->head_deadline_ms = now_ms() + call->head_ms;
    return 0;
}

/* ---- the response ---- */

/* The response ended: bytes after it fail the call; the connection goes
 * back to the pool, or is closed when the response or the origin says so. */
static int body_done(cshs_call *call, int keep)
{
    conn *cn = call->cn;
    if (cn->end > cn->start || (cn->ssl && SSL_pending(cn->ssl) > 0))
        return call_fail(call, CSHS_CLIENT_E_MALFORMED);
    const csh_message *m = &call->parser.msg;
    keep =
        keep && !call->early && (m->flags & CSH_MSG_KEEP_ALIVE) && m->body != CSH_BODY_UNTIL_CLOSE;
    /* A response read on a reactor (cshs_call_end_async) skips this look:
     * the connection's next use looks first (conn_fresh) and drops it for
     * bytes nobody asked for, and the tick looks at it while idle. */
    if (keep && !call->done) {
        /* what already arrived after the response: a second answer that
         * nobody asked for fails this one; a FIN only ends the connection */
        struct pollfd pf = {cn->fd, POLLIN | POLLRDHUP, 0};
        if (poll(&pf, 1, 0) > 0 && pf.revents) {
            char b;
            ssize_t n;
            if (!cn->ssl) {
                n = cshs__recv(cn->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
                if (n < 0) n = errno == EWOULDBLOCK ? -EAGAIN : -errno;
            } else {
                n = conn_read(cn, &b, 1, 0);
                if (n == -ETIMEDOUT) n = -EAGAIN; /* a session ticket, no data */
            }
            if (n > 0) return call_fail(call, CSHS_CLIENT_E_MALFORMED);
            if (n == 0 || (n < 0 && n != -EAGAIN)) keep = 0;
        }
    }
    cn->uses++;
    call->cn = NULL;
    call->state = K_DONE;
    release(call->c, call->p, cn, keep);
    return 0;
}

/* Makes room at the end of the connection's buffer, keeping
 * buf[start .. end) (moved to the front: parser spans are offsets). */
static int make_room(conn *cn)
{
    if (cn->start == cn->end) cn->start = cn->end = 0;
    if (cn->end < cn->cap) return 0;
    if (cn->start > 0) {
        memmove(cn->buf, cn->buf + cn->start, cn->end - cn->start);
        cn->end -= cn->start;
        cn->start = 0;
        return 0;
    }
    if (cn->cap >= CONN_BUF_MAX) return CSHS_CLIENT_E_MALFORMED;
    char *b = realloc(cn->buf, cn->cap * 2);
    if (!b) return -ENOMEM;
    cn->buf = b;
    cn->cap *= 2;
    return 0;
}

/* A switched connection's buffer goes once the bytes read past the 101
 * were taken: an idle tunnel holds none. */
static void drop_buffer(conn *cn)
{
    if (cn->start < cn->end) return;
    free(cn->buf);
    cn->buf = NULL;
    cn->cap = cn->start = cn->end = 0;
}

/* A 101 to a request that asked for it (RFC 9110 §15.2.2): the head is
 * the call's, the bytes after it the tunnel's first, and the connection
 * leaves its pool's count (as cshs_call_detach), never to go back. 1. */
static int switched(cshs_call *call)
{
    conn *cn = call->cn;
    const csh_message *m = &call->parser.msg;
    call->head = malloc(m->head_length + 1);
    if (!call->head) return -ENOMEM;
    memcpy(call->head, cn->buf + cn->start, m->head_length);
    call->head[m->head_length] = 0;
    call->head_len = m->head_length;
    cn->start += m->head_length;
    call->state = K_SWITCHED;
    call->upgrade = NULL;
    drop_buffer(cn); /* its reads go to the caller's buffer */
    if (cn->ssl) SSL_set_mode(cn->ssl, SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    cshs_client *c = call->c;
    pthread_mutex_lock(&c->mu);
    cn->detached = 1;
    call->p->detached++;
    dropped(c, call->p); /* a place for the next request: a waiter's open */
    unlock_and_serve(c);
    return 1;
}

/* Parses the response bytes buffered on the call's connection: 1 once a
 * final head is here (copied into the call, which moves to K_BODY_IN), 0
 * for more bytes, or an error code (the caller fails the call). 1xx are
 * skipped (RFC 9110 §15.2); 101 would switch protocols, which this client
 * never asks for. */
static int head_parse(cshs_call *call)
{
    conn *cn = call->cn;
    while (cn->end > cn->start) {
        csh_parser_set_request_method(&call->parser, call->method);
        int r = csh_parser_execute(&call->parser, cn->buf + cn->start, cn->end - cn->start);
        if (r < 0) return CSHS_CLIENT_E_MALFORMED;
        if (r != CSH_OK) return 0;
        const csh_message *m = &call->parser.msg;
        if (m->status == 101) return call->upgrade ? switched(call) : CSHS_CLIENT_E_MALFORMED;
        if (m->flags & CSH_MSG_INTERIM) {
            cn->start += m->head_length;
            csh_parser_reset(&call->parser);
            continue;
        }
        if (m->flags & CSH_MSG_TUNNEL) return CSHS_CLIENT_E_MALFORMED;
        call->head = malloc(m->head_length + 1);
        if (!call->head) return -ENOMEM;
        memcpy(call->head, cn->buf + cn->start, m->head_length);
        call->head[m->head_length] = 0;
        call->head_len = m->head_length;
        cn->start += m->head_length;
        csh_body_init(&call->body, m, NULL, 0, NULL, 0);
        call->state = K_BODY_IN;
        return 1;
    }
    return 0;
}

static int wait_head(cshs_call *call)
{
    conn *cn = call->cn;
    uint64_t got = 0; /* response bytes received */
    for (;;) {
        int r = head_parse(call);
        if (r < 0) return call_fail(call, r);
        if (r == 1 && call->state == K_SWITCHED) return 0;
        if (r == 1) return call->parser.msg.body == CSH_BODY_NONE ? body_done(call, 1) : 0;
        int e = make_room(cn);
        if (e < 0) return call_fail(call, e);
        /* Right after the request went out, nothing of the answer is
         * here yet as a rule (the origin has still to read it): wait for
         * it first rather than meet EAGAIN, a system call less per
         * request. */
        if (got == 0 && cn->end == cn->start && (!cn->ssl || !SSL_has_pending(cn->ssl))) {
            int w = wait_fd(cn->fd, POLLIN, call->head_deadline_ms);
            if (w == -ETIMEDOUT) return call_fail(call, CSHS_CLIENT_E_HEAD_TIMEOUT);
            if (w < 0) return call_fail(call, w);
        }
        ssize_t n = conn_read(cn, cn->buf + cn->end, cn->cap - cn->end, call->head_deadline_ms);
        if (n > 0) {
            cn->end += (size_t)n;
            got += (uint64_t)n;
            continue;
        }
        if (n == -ETIMEDOUT) return call_fail(call, CSHS_CLIENT_E_HEAD_TIMEOUT);
        if (is_closed_errno((int)n)) {
            call->retryable = call->reused && got == 0;
            return call_fail(call, CSHS_CLIENT_E_ORIGIN_CLOSED);
        }
        return call_fail(call, (int)n);
    }
}

/* An answer before the end of the request body (RFC 9112 §9.5 lets a
 * server answer early, and close): reads what the origin sent, without
 * waiting. 1 when a final response head is here, 0 when not (yet), or an
 * error code: the response is malformed (the caller fails the call). The
 * origin's end of input is remembered: the body's send then fails on its
 * own. */
static int early_answer(cshs_call *call)
{
    conn *cn = call->cn;
    for (;;) {
        int e = make_room(cn);
        if (e < 0) return e;
        if (cn->ssl) {
            /* a write OpenSSL could not finish stays in its buffer: the
             * session allows a read in between, and after an answer the
             * connection is never used again anyway */
            short wait;
            ssize_t n = tls_read_now(cn, cn->buf + cn->end, cn->cap - cn->end, &wait);
            if (n > 0) {
                cn->end += (size_t)n;
                e = head_parse(call);
                if (e != 0) return e;
                continue;
            }
            if (n != -EAGAIN) call->peer_eof = 1;
            return head_parse(call);
        }
        ssize_t n = cshs__recv(cn->fd, cn->buf + cn->end, cn->cap - cn->end, MSG_DONTWAIT);
        if (n > 0) {
            cn->end += (size_t)n;
            e = head_parse(call);
            if (e != 0) return e;
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) call->peer_eof = 1;
        return head_parse(call);
    }
}

/* The origin answered before the body was all sent: the call goes on with
 * the response; its connection is not reused (the request's framing was
 * cut). 1 for cshs_call_write, or the error that failed the call. */
static int answered_early(cshs_call *call)
{
    call->early = 1;
    call->watch = 0;
    call->retryable = 0;
    if (call->parser.msg.body == CSH_BODY_NONE) {
        int e = body_done(call, 0);
        if (e < 0) return e;
    }
    return 1;
}

/* ---- the public calls ---- */

static void call_destroy(cshs_call *call)
{
    if (!call) return;
    /* a tunnel's wait still armed: given up (on its reactor's thread) */
    if (call->state == K_SWITCHED && call->cn && call->cn->waiting == call) {
        cshs__kept_disarm(&call->cn->kw, call->cn->kw.w.reg);
        call->cn->waiting = NULL;
    }
    if (call->cn) release(call->c, call->p, call->cn, 0);
    free(call->head);
    free(call->all);
    free(call->again);
    free(call->fchunk);
    cshs_client *c = call->c;
    pthread_mutex_lock(&c->mu);
    call->p->users--;
    if (c->nspare_calls < SPARE_CALLS_MAX) {
        call->next_spare = c->spare_calls;
        c->spare_calls = call;
        c->nspare_calls++;
        call = NULL;
    }
    pthread_mutex_unlock(&c->mu);
    free(call);
}

/* The retry rule (client.h): once, on a new connection, after a failure
 * on a reused connection the origin had closed, for an idempotent method
 * or a request none of whose bytes were sent. */
static int may_retry(const cshs_call *call, int attempt)
{
    return attempt == 0 && call && call->retryable && !call->retried &&
           (call->idempotent || call->bytes_sent == 0);
}

static void count_retry(cshs_call *call)
{
    pthread_mutex_lock(&call->c->mu);
    call->p->retries++;
    pthread_mutex_unlock(&call->c->mu);
}

/* cshs_client_begin and cshs_client_send: a call started (and, for
 * `send`, its response head awaited), started once more under the retry
 * rule on a fresh connection. `begin`: the first attempt keeps its head
 * for cshs_call_end's retry (call_start). */
static int start_retrying(cshs_client *c, const cshs_client_request *caller, int begin, int send,
                          cshs_call **out)
{
    cshs_client_request rq = request_defaults; /* the caller's, read by its size */
    if (!caller || csh__sized_copy(&rq, sizeof rq, caller, CSHS_CLIENT_REQUEST_SIZE_0_3) < 0)
        return -EINVAL;
    const cshs_client_request *r = &rq;
    for (int attempt = 0;; attempt++) {
        cshs_call *call = NULL;
        int e = call_start(c, r, attempt, begin && attempt == 0, &call);
        if (e == 0 && send) e = wait_head(call);
        if (e == 0) {
            *out = call;
            return 0;
        }
        if (may_retry(call, attempt)) {
            count_retry(call);
            call_destroy(call);
            continue;
        }
        call_destroy(call);
        return e;
    }
}

int cshs_client_begin(cshs_client *c, const cshs_client_request *r, cshs_call **out)
{
    if (!out) return -EINVAL;
    *out = NULL;
    if (!c) return -EINVAL;
    return start_retrying(c, r, 1, 0, out);
}

int cshs_client_send(cshs_client *c, const cshs_client_request *r, cshs_call **out)
{
    if (!out) return -EINVAL;
    *out = NULL;
    if (!c || !r ||
        (r->body_mode != CSHS_CLIENT_BODY_WHOLE && r->body_mode != CSHS_CLIENT_BODY_FILE))
        return -EINVAL;
    return start_retrying(c, r, 0, 1, out);
}

int cshs_call_write(cshs_call *call, const void *data, size_t len)
{
    if (!call) return -EINVAL;
    if (call->early) return 1; /* answered: nothing more is sent */
    if (call->state == K_FAILED) return call->err;
    if (call->state != K_BODY_OUT || (len && !data)) return call_fail(call, -EINVAL);
    if (len == 0) return 0;
    struct iovec iov[3];
    char size_line[24];
    int n = 0;
    if (call->mode == CSHS_CLIENT_BODY_LENGTH) {
        if ((uint64_t)len > call->body_left) return call_fail(call, -EINVAL);
        call->body_left -= len;
    } else {
        int k = snprintf(size_line, sizeof size_line, "%zx\r\n", len);
        iov[n].iov_base = size_line;
        iov[n++].iov_len = (size_t)k;
    }
    iov[n].iov_base = (void *)(uintptr_t)data;
    iov[n++].iov_len = len;
    if (call->mode == CSHS_CLIENT_BODY_CHUNKED) {
        iov[n].iov_base = (void *)(uintptr_t) "\r\n";
        iov[n++].iov_len = 2;
    }
    call->watch = 1;
    int e = conn_send(call, iov, n);
    call->watch = 0;
    if (e < 0 && is_closed_errno(e)) {
        /* the origin may have answered, then closed: its answer is read */
        int a = early_answer(call);
        if (a != 0) e = a;
    }
    if (e == 1) return answered_early(call);
    if (e < 0) {
        call->retryable = 0; /* body bytes went: never sent twice */
        if (e == CSHS_CLIENT_E_MALFORMED)
            call_fail(call, e);
        else
            send_failed(call, e);
        call->retryable = 0;
        return call->err;
    }
    return 0;
}

/* cshs_call_end's retry of a request without a body: the kept head, once
 * more, on a connection the call opens itself. */
static int send_again(cshs_call *call)
{
    count_retry(call);
    conn *cn = NULL;
    int e = acquire(call->c, call->p, call->acquire_ms, call->connect_ms, 1, &cn);
    if (e < 0) {
        call->state = K_FAILED;
        call->err = e;
        return e;
    }
    call->cn = cn;
    call->reused = cn->uses > 0;
    call->retryable = 0;
    call->bytes_sent = 0;
    call->err = 0;
    call->state = K_HEAD_WAIT;
    csh_parser_init(&call->parser, CSH_RESPONSE, call->fields, MAX_FIELDS, NULL, 0);
    struct iovec iov = {call->again, call->again_len};
    e = conn_send(call, &iov, 1);
    cn->start = cn->end = 0;
    free(call->again);
    call->again = NULL;
    if (e < 0) return send_failed(call, e);
    call->head_deadline_ms = now_ms() + call->head_ms;
    return 0;
}

int cshs_call_end(cshs_call *call)
{
    if (!call) return -EINVAL;
    switch (call->state) {
    case K_FAILED:
        /* cshs_call_end_async met the origin's close of a reused
         * connection: the retry rule, as wait_head's failure below */
        if (call->again && may_retry(call, 0)) {
            int e = send_again(call);
            if (e == 0) e = wait_head(call);
            call->retryable = 0;
            free(call->again);
            call->again = NULL;
            return e;
        }
        return call->err;
    case K_BODY_IN:
    case K_DONE:
    case K_SWITCHED:
        return 0;
    case K_BODY_OUT:
        if (call->mode == CSHS_CLIENT_BODY_LENGTH) {
            if (call->body_left) return call_fail(call, -EINVAL);
        } else {
            struct iovec iov = {(void *)(uintptr_t) "0\r\n\r\n", 5};
            call->watch = 1;
            int e = conn_send(call, &iov, 1);
            call->watch = 0;
            if (e < 0 && is_closed_errno(e)) {
                int a = early_answer(call);
                if (a != 0) e = a;
            }
            if (e == 1) {
                e = answered_early(call);
                return e < 0 ? e : 0;
            }
            if (e < 0) {
                if (e == CSHS_CLIENT_E_MALFORMED)
                    call_fail(call, e);
                else
                    send_failed(call, e);
                call->retryable = 0;
                return call->err;
            }
        }
        call->state = K_HEAD_WAIT;
        call->head_deadline_ms = now_ms() + call->head_ms;
        /* fall through */
    default: {
        int e = wait_head(call);
        if (e < 0 && call->again && may_retry(call, 0)) {
            e = send_again(call);
            if (e == 0) e = wait_head(call);
        }
        call->retryable = 0; /* a body is never sent twice */
        free(call->again);
        call->again = NULL;
        return e;
    }
    }
}

/* ---- the head awaited on a reactor ---- */

/* Reads and parses what the origin sent without waiting: 0 when the
 * socket has to be waited for; 1 when nothing more is waited for here
 * (the head is here, with a Content-Length body that fits the buffer; or
 * something the blocking calls handle: a TLS read that must write, the
 * end of input within a body); 2 when the response has no body; or the
 * error that fails the call. The connection is neither closed nor given
 * back here: its watch is inert first (async_ready), so that no event of
 * it meets the connection in another call's hands, or freed. */
static int async_step(cshs_call *call)
{
    conn *cn = call->cn;
    for (;;) {
        if (call->state == K_HEAD_WAIT) {
            int r = head_parse(call);
            if (r < 0) return r;
            if (r == 1 && call->state == K_SWITCHED) return 1;
            if (r == 1 && call->parser.msg.body == CSH_BODY_NONE) return 2;
            if (r == 0 && (r = make_room(cn)) < 0) return r;
        }
        if (call->state != K_HEAD_WAIT) {
            /* the body: waited for here only when its length is known and
             * all of it fits the buffer */
            if (call->body.kind != CSH_BODY_LENGTH) return 1;
            uint64_t want = call->parser.msg.content_length - call->body.received;
            size_t have = cn->end - cn->start;
            if (have >= want || want > cn->cap) return 1;
            if (cn->start + want > cn->cap) {
                memmove(cn->buf, cn->buf + cn->start, have);
                cn->start = 0;
                cn->end = have;
            }
        }
        ssize_t n;
        if (!cn->ssl) {
            n = cshs__recv(cn->fd, cn->buf + cn->end, cn->cap - cn->end, MSG_DONTWAIT);
            if (n < 0) n = errno == EWOULDBLOCK ? -EAGAIN : -errno;
            if (n == -EINTR) continue;
        } else {
            short wait = POLLIN;
            n = tls_read_now(cn, cn->buf + cn->end, cn->cap - cn->end, &wait);
            if (n == -EAGAIN && wait == POLLOUT) return 1; /* cshs_call_end waits for that */
        }
        if (n > 0) {
            cn->end += (size_t)n;
            call->got += (uint64_t)n;
            continue;
        }
        if (n == -EAGAIN) return 0;
        if (call->state != K_HEAD_WAIT) return 1; /* cshs_call_read sees the body's end */
        if (!is_closed_errno((int)n)) return (int)n;
        call->retryable = call->reused && call->got == 0;
        return CSHS_CLIENT_E_ORIGIN_CLOSED;
    }
}

/* What async_step found, once the watch is gone: the call fails, or its
 * bodiless response ends (the connection goes back). */
static void async_settle(cshs_call *call, int r)
{
    if (r < 0)
        call_fail(call, r);
    else if (r == 2)
        body_done(call, 1);
}

static int retry_async(cshs_call *call);

/* Arms the call's connection's watch on the reactor r for `events`,
 * until deadline_ms, `ready` to run on r's thread. The watch is published,
 * then a cancel looked for (both sequentially consistent, as
 * cshs_call_cancel's flag and look in the other order): a cancel that
 * missed the watch is seen here, one that saw it waits for the arm and
 * disarms it. 0 armed (from then ready may run, the call not to be
 * touched); 1 cancelled meanwhile (the call failed with
 * CSHS_CLIENT_E_CANCELED); -errno, not armed. */
static int watch_arm(cshs_call *call, cshs_reactor *r, uint32_t events, int64_t deadline_ms,
                     void (*ready)(cshs_watch *w, uint32_t events))
{
    conn *cn = call->cn;
    int e = cshs__kept_register(&cn->kw, r, cn->fd);
    if (e < 0) return e;
    cn->waiting = call;
    cn->kw.w.events = events;
    cn->kw.w.deadline_ms = deadline_ms;
    cn->kw.w.ready = ready;
    cn->kw.w.arg = cn;
    atomic_store(&call->watched, cn);
    if (atomic_load(&call->cancel_wanted)) {
        atomic_store(&call->watched, NULL);
        cn->waiting = NULL;
        call_fail(call, CSHS_CLIENT_E_CANCELED);
        return 1;
    }
    e = cshs__kept_arm(&cn->kw);
    if (e < 0) {
        cn->waiting = NULL;
        atomic_store_explicit(&call->watched, NULL, memory_order_relaxed);
    }
    return e;
}

/* The head is here: whether the rest of the body is still to come from
 * the socket, read by a thread (cshs_call_read), not from the buffer. */
static int body_from_socket(const cshs_call *call)
{
    if (call->state != K_BODY_IN) return 0;
    if (call->body.kind != CSH_BODY_LENGTH) return 1;
    const conn *cn = call->cn;
    return call->parser.msg.content_length - call->body.received > cn->end - cn->start;
}

static void async_ready(cshs_watch *w, uint32_t events)
{
    conn *cn = w->arg;
    cshs_call *call = cn->waiting;
    atomic_store_explicit(&call->watched, NULL, memory_order_relaxed);
    int r = CSHS_CLIENT_E_HEAD_TIMEOUT; /* given 0: the deadline, or the reactor stops */
    if (events) {
        r = async_step(call);
        if (r == 0) { /* more to come: armed again */
            r = cshs__kept_arm(&cn->kw);
            if (r == 0) return;
        }
    } else if (call->state != K_HEAD_WAIT) {
        r = 1; /* the head is here: cshs_call_read waits for the body */
    }
    if (r == 1 && body_from_socket(call)) cshs__kept_mute(&cn->kw);
    /* the watch is inert now: the connection may go back or be closed */
    cn->waiting = NULL;
    async_settle(call, r);
    if (retry_async(call)) return; /* cshs_client_send_async's: done runs later */
    call->done(call->done_arg);    /* last: it may free the call */
}

static int stream_end(cshs_call *call, cshs_reactor *r, void (*done)(void *arg), void *arg);

/* cshs_call_end_async's wait for the head, with call->done as it is: a
 * call of cshs_client_send_async handed a connection by another loop's
 * thread has its head awaited from there, while its own loop may read
 * done (cshs_call_cancel), which is why it is not written again. */
static int head_arm(cshs_call *call, cshs_reactor *r)
{
    conn *cn = call->cn;
    /* bytes already read (or decrypted by OpenSSL) fire no event */
    if (cn->end > cn->start || (cn->ssl && SSL_has_pending(cn->ssl))) {
        int step = async_step(call);
        if (step != 0) {
            async_settle(call, step);
            return 1;
        }
    }
    return watch_arm(call, r, EPOLLIN | EPOLLRDHUP, call->head_deadline_ms, async_ready);
}

int cshs_call_end_async(cshs_call *call, cshs_reactor *r, void (*done)(void *arg), void *arg)
{
    if (!call || !r || !done) return -EINVAL;
    if (call->state == K_FAILED || call->state == K_BODY_IN || call->state == K_DONE) return 1;
    if (call->state == K_BODY_OUT && call->streamed && !call->body_ended)
        return stream_end(call, r, done, arg);
    if (call->state != K_HEAD_WAIT) return -EINVAL;
    call->done = done;
    call->done_arg = arg;
    return head_arm(call, r);
}

int cshs_call_cancel(cshs_call *call)
{
    if (!call || !call->rx || !call->done || !cshs__on_reactor(call->rx)) return -EINVAL;
    cshs_client *c = call->c;
    /* for a call between states, whose arm will see it (end_async) */
    atomic_store(&call->cancel_wanted, 1);
    pthread_mutex_lock(&c->mu);
    /* still waiting for a connection: it leaves the queue (a connect
     * started meanwhile goes to the next waiter, or idle) */
    int queued = call->aw.queued && !call->aw.opening;
    if (queued) wq_remove(call->p, &call->aw);
    pthread_mutex_unlock(&c->mu);
    if (!queued) {
        /* its head awaited: the watch, disarmed here while still armed
         * (under the reactor's lock, which the thread that armed it let
         * go, touching the call no more), is ours, and so is the call.
         * Not armed yet (being armed on another thread) or fired: it goes
         * on. */
        conn *cn = atomic_load(&call->watched);
        if (!cn) return 1; /* not published yet: its arm sees the flag */
        /* published: armed within a moment, on this reactor or another
         * thread, or given up there on seeing the flag (the request's
         * continuation waits for this callback's end: the call stays) */
        while (!cshs__kept_disarm(&cn->kw, call->rx)) {
            if (atomic_load(&call->watched) != cn) return 1;
            sched_yield();
        }
        /* its request is out: the connection closes (the origin sees
         * the close) and leaves the loop */
        atomic_store_explicit(&call->watched, NULL, memory_order_relaxed);
        cn->waiting = NULL;
    }
    call_fail(call, CSHS_CLIENT_E_CANCELED);
    call->done(call->done_arg); /* last: it may free the call */
    return 0;
}

/* ---- waiting for a connection without a thread (cshs_client_send_async) ---- */

static void enqueue_async(cshs_client *c, pool *p, waiter *w);

/* The end of a connect started for async waiters: the connection goes to
 * the first waiter (or idle), or the failure counts as any failed
 * connect's (the backoff; waiters at a dead end fail). A retry's own
 * connect (`own`) goes to that call, or it waits as any request. */

static void open_ended(cshs_client *c, pool *p, conn *cn, int r, struct cshs_call *own)
{
    pthread_mutex_lock(&c->mu);
    p->nopening--;
    if (r == 1) {
        p->open++;
        p->opens++;
        cn->state = C_IDLE;
        cn->born_ms = now_ms();
        cn->opened_for = NULL;
        if (own) { /* a retry's: that call's */
            cn->state = C_BUSY;
            own->aw.got = cn;
            record_wait(p, own->aw.since_us);
            hand(c, &own->aw);
        } else {
            give(c, p, cn);
        }
        cn = NULL;
    } else {
        open_failed(c, p, r);
        if (own) { /* as any request now: it waits, or fails at a dead end */
            if (dead_end(p, now_ms())) {
                own->aw.err = r;
                hand(c, &own->aw);
            } else {
                enqueue_async(c, p, &own->aw);
            }
        }
    }
    handed_work hw = take_handed(c);
    pthread_mutex_unlock(&c->mu);
    conn_close(cn);
    serve_handed(c, hw);
}

/* Its socket was ready (or, given 0, the connect's deadline passed, or
 * the reactor stops). On the reactor's thread. */
static void open_ready(cshs_watch *w, uint32_t events)
{
    conn *cn = w->arg;
    cshs_client *c = cn->p->c;
    int r = CSHS_CLIENT_E_CONNECT_TIMEOUT;
    if (events) {
        short want = 0;
        r = open_advance(c, cn, &want);
        if (r == 0) { /* the TLS handshake goes on: armed again */
            w->events = want == POLLIN ? EPOLLIN | EPOLLRDHUP : EPOLLOUT;
            if (cshs__kept_arm(&cn->kw) == 0) return;
            r = CSHS_CLIENT_E_CONNECT;
        }
    }
    open_ended(c, cn->p, cn, r, cn->opened_for);
}

/* An open for async waiters on a reactor (open_async): the TCP connect
 * to the name's addresses (dial.h), each attempt a connection of its own
 * whose socket is watched on the reactor, until one wins the race and
 * goes on alone to its TLS handshake (open_ready). The reactor's thread
 * runs the race once its first attempt is armed; the attempt that ends
 * it frees it. An attempt's deadline is the open's, but for the newest
 * attempt's, which is the next one's start while an address is left. */
typedef struct race {
    cshs_dial d;
    pool *p;
    cshs_reactor *rx;
    struct cshs_call *own;          /* open_job.own */
    int64_t started_ms;             /* the open's start: its deadline runs from here */
    unsigned connect_ms;
    int stopping;                   /* the reactor stops: no attempt starts */
    conn *att[CSHS_DIAL_MAX_ADDRS]; /* the attempts in flight: d.inflight of them */
} race;

static void race_ready(cshs_watch *w, uint32_t events);

/* Arms attempt cn for its connect's end, and for its deadline. */
static int race_arm(race *rc, conn *cn, int newest)
{
    cn->kw.w.events = EPOLLOUT;
    cn->kw.w.deadline_ms = newest ? cshs__dial_wake_ms(&rc->d) : rc->d.deadline_ms;
    cn->kw.w.ready = race_ready;
    cn->kw.w.arg = cn;
    return cshs__kept_arm(&cn->kw);
}

/* Takes attempt cn out of the race once the dial counted its end (it is
 * closed by the caller): att[0 .. d.inflight] still holds it. */
static void race_remove(race *rc, conn *cn)
{
    for (unsigned i = 0; i <= rc->d.inflight; i++)
        if (rc->att[i] == cn) {
            rc->att[i] = rc->att[rc->d.inflight];
            break;
        }
    cn->race = NULL;
}

/* Starts the attempts that are due, each armed on the reactor. 1 when one
 * was armed: from then on the reactor's thread may run the race, and the
 * caller touches it no more. 0 when none was (none due, or none could
 * start). */
static int race_start(race *rc)
{
    while (!rc->stopping && cshs__dial_due(&rc->d, now_ms())) {
        int connected = 0; /* writable at once then: its event comes */
        int fd = cshs__dial_start(&rc->d, now_ms(), &connected);
        if (fd < 0) return 0;
        conn *cn = conn_alloc(rc->p);
        if (!cn) {
            close(fd);
            cshs__dial_abandon(&rc->d, -ENOMEM);
            return 0;
        }
        cn->fd = fd;
        cn->state = C_OPENING;
        cn->race = rc;
        rc->att[rc->d.inflight - 1] = cn;
        if (cshs__kept_register(&cn->kw, rc->rx, fd) == 0 && race_arm(rc, cn, 1) == 0) return 1;
        cshs__dial_abandon(&rc->d, CSHS_CLIENT_E_CONNECT);
        race_remove(rc, cn);
        conn_close(cn);
        return 0;
    }
    return 0;
}

/* The race is over when no attempt is in flight: the open failed. */
static void race_over_if_done(cshs_client *c, race *rc)
{
    if (rc->d.inflight > 0) return;
    pool *p = rc->p;
    struct cshs_call *own = rc->own;
    int r = cshs__dial_error(&rc->d);
    free(rc);
    open_ended(c, p, NULL, r, own);
}

/* An attempt's socket was ready, or its deadline passed (0), or the
 * reactor stops (0 before the deadline). On the reactor's thread. */
static void race_ready(cshs_watch *w, uint32_t events)
{
    conn *cn = w->arg;
    race *rc = cn->race;
    cshs_client *c = rc->p->c;
    int64_t now = now_ms();
    if (!events) {
        if (now < w->deadline_ms) {
            rc->stopping = 1;
        } else if (now < rc->d.deadline_ms) {
            /* its attempt delay: the next address starts, and this
             * attempt waits on beside it (RFC 8305 §5) */
            if (race_arm(rc, cn, 0) == 0) {
                race_start(rc);
                return;
            }
        }
        cshs__dial_abandon(&rc->d, CSHS_CLIENT_E_CONNECT_TIMEOUT); /* or stopped */
        race_remove(rc, cn);
        conn_close(cn);
        race_over_if_done(c, rc);
        return;
    }
    if (cshs__dial_done(&rc->d, cn->fd) != 0) {
        race_remove(rc, cn);
        conn_close(cn);
        if (race_start(rc)) return; /* the next address, at once */
        race_over_if_done(c, rc);
        return;
    }
    /* won: the other attempts are closed, and this one goes on */
    won_set(rc->p, cn->fd);
    race_remove(rc, cn);
    while (rc->d.inflight > 0) {
        conn *other = rc->att[--rc->d.inflight];
        other->race = NULL;
        conn_close(other);
    }
    cn->opened_for = rc->own;
    cn->kw.w.deadline_ms = rc->d.deadline_ms;
    free(rc);
    cn->kw.w.ready = open_ready;
    open_ready(w, events);
}

/* The race of the addresses of res (r: the look-up's result), within the
 * open's connect_ms from its start. Ends the open when none can start. */
static void race_begin(cshs_client *c, race *rc, int r, struct addrinfo *res)
{
    if (r == 0) {
        cshs_dial_addr pref;
        const cshs_dial_addr *prefer = won_get(rc->p, &pref);
        r = cshs__dial_init(&rc->d, res, rc->started_ms, rc->connect_ms, prefer);
    }
    if (r < 0) {
        pool *p = rc->p;
        struct cshs_call *own = rc->own;
        free(rc);
        open_ended(c, p, NULL, r, own);
        return;
    }
    /* last: once an attempt is armed, the reactor's thread runs the race */
    if (race_start(rc)) return;
    race_over_if_done(c, rc);
}

/* The end of the name's look-up for an open on a reactor (its eventfd
 * readable), or its deadline (the open's), or the reactor stops (0). On
 * the reactor's thread. */
static void lookup_ready(cshs_watch *w, uint32_t events)
{
    conn *lc = w->arg;
    race *rc = lc->race;
    cshs_client *c = rc->p->c;
    struct addrinfo *res = NULL;
    int r;
    if (!events || !cshs__lookup_done(lc->lookup, &res, &r)) {
        if (events && cshs__kept_arm(&lc->kw) == 0) return; /* not yet: no such event */
        r = CSHS_CLIENT_E_RESOLVE; /* not within the connect's time, or the reactor stops */
    }
    lc->race = NULL;
    conn_close(lc); /* lets go of the look-up, which ends by itself if it runs */
    race_begin(c, rc, r, res);
    if (res) freeaddrinfo(res);
}

/* The name of an open on a reactor, looked up on a thread of its own
 * (lookup.h) whose end is an event on the reactor (an eventfd, kept
 * registered as a connection's socket is, kept.h). 0, or an error. */
static int lookup_async(race *rc)
{
    conn *lc = conn_alloc(rc->p);
    if (!lc) return -ENOMEM;
    lc->fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    int tell = lc->fd >= 0 ? fcntl(lc->fd, F_DUPFD_CLOEXEC, 0) : -1;
    if (tell < 0) {
        int e = -errno;
        conn_close(lc);
        return e;
    }
    lc->state = C_OPENING;
    lc->race = rc;
    lc->lookup = cshs__lookup_start(rc->p->host, rc->p->port, tell);
    if (!lc->lookup) {
        int e = -errno;
        conn_close(lc);
        return e;
    }
    int e = cshs__kept_register(&lc->kw, rc->rx, lc->fd);
    if (e == 0) {
        lc->kw.w.events = EPOLLIN;
        lc->kw.w.deadline_ms = rc->started_ms + (int64_t)rc->connect_ms;
        lc->kw.w.ready = lookup_ready;
        lc->kw.w.arg = lc;
        /* last: from here the reactor's thread may run lookup_ready */
        e = cshs__kept_arm(&lc->kw);
    }
    if (e < 0) {
        lc->race = NULL;
        conn_close(lc);
    }
    return e;
}

/* Starts a connect for async waiters on the job's reactor, within
 * connect_ms: the name's look-up (on a thread of its own, lookup.h; an
 * address is read at once), the race of its addresses, then its TLS
 * handshake. No step waits on this thread or the reactor's. */
static void open_async(cshs_client *c, const open_job *j)
{
    race *rc = calloc(1, sizeof *rc);
    if (!rc) {
        open_ended(c, j->p, NULL, -ENOMEM, j->own);
        return;
    }
    rc->p = j->p;
    rc->rx = j->rx;
    rc->own = j->own;
    rc->started_ms = now_ms();
    rc->connect_ms = j->connect_ms;
    if (!j->p->host_is_ip) {
        int r = lookup_async(rc);
        if (r < 0) race_begin(c, rc, r, NULL);
        return;
    }
    struct addrinfo *res = NULL;
    int r = resolve(j->p, &res); /* numeric: never waits */
    race_begin(c, rc, r, res);
    if (res) freeaddrinfo(res);
}

/* Sends an async call's request on the connection it holds and waits for
 * the head on its reactor: 0 waiting (done will run), 1 finished now
 * (the head is here, or the call failed, or the reactor could not watch:
 * cshs_call_end waits). */
/* The request is out: its head awaited on the reactor. 0 waiting, 1
 * finished (the head is here, or the call failed). */
static int head_watch(cshs_call *call)
{
    call->state = K_HEAD_WAIT;
    call->head_deadline_ms = now_ms() + call->head_ms;
    int e = head_arm(call, call->rx);
    /* a reactor that cannot watch the socket fails the call rather than
     * leave cshs_call_end to wait for the head on the reactor's thread */
    if (e < 0) call_fail(call, e);
    return e == 0 ? 0 : 1;
}

static int send_wait(cshs_call *call);

/* While the request is sent from the reactor: the origin's answer may
 * come before its end (a 413, then its close). 1 when its head is here
 * (the call goes on with it, its connection not reused), 0 when none
 * is, or an error that failed the call. */
static int send_met_answer(cshs_call *call)
{
    if (call->peer_eof) return 0;
    int a = early_answer(call);
    if (a == 1) a = answered_early(call);
    if (a < 0 && call->state != K_FAILED) call_fail(call, a);
    return a;
}

/* The socket takes more of the request, or the origin sent something (or,
 * given 0, send_timeout_ms passed, or the reactor stops): on the
 * reactor's thread. */
static void send_ready(cshs_watch *w, uint32_t events)
{
    conn *cn = w->arg;
    cshs_call *call = cn->waiting;
    atomic_store_explicit(&call->watched, NULL, memory_order_relaxed);
    cn->waiting = NULL;
    int e = -ETIMEDOUT, a = 0;
    if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) a = send_met_answer(call);
    if (events && a == 0) {
        e = send_rest(call);
        /* an origin that closed after its answer: the answer stands */
        if (e < 0 && e != -EAGAIN && is_closed_errno(e)) a = send_met_answer(call);
    }
    if (a != 0) {
        call->send_nowait = 0; /* answered early, or failed on it */
    } else {
        if (e == -EAGAIN && send_wait(call) == 0) return;
        if (e != -EAGAIN) call->send_nowait = 0;
        if (e == 0) {
            /* a streamed body's piece or head sent: its writer goes on */
            if (call->streamed && !call->body_ended) {
                call->head_out = 1;
                call->send_nowait = 1;
            } else if (head_watch(call) == 0) {
                return;
            }
        } else if (e != -EAGAIN) {
            send_failed(call, e);
        }
        if (retry_async(call)) return;
    }
    call->done(call->done_arg); /* last: it may free the call */
}

/* What the socket did not take waits for it on the reactor (input too:
 * an answer before the request's end): 0 waiting, 1 finished (cancelled,
 * or the reactor could not watch the socket: the call fails with that
 * error rather than wait for the socket on the reactor's thread). */
static int send_wait(cshs_call *call)
{
    int e = watch_arm(call, call->rx, EPOLLOUT | EPOLLIN | EPOLLRDHUP, now_ms() + call->send_ms,
                      send_ready);
    if (e == 0) return 0;
    call->send_nowait = 0;
    if (e < 0) send_failed(call, e);
    return 1;
}

static int send_and_watch(cshs_call *call)
{
    if (atomic_load(&call->cancel_wanted)) {
        /* given up meanwhile (cshs_call_cancel): nothing is sent, and the
         * connection goes to the next request */
        conn *cn = call->cn;
        call->cn = NULL;
        release(call->c, call->p, cn, 1);
        call->state = K_FAILED;
        call->err = CSHS_CLIENT_E_CANCELED;
        return 1;
    }
    call->reused = call->cn->uses > 0;
    /* no wait on the reactor's thread (or any): what the socket does not
     * take now is sent as it takes it */
    call->send_nowait = 1;
    int e = send_head(call, &call->rq);
    if (e == -EAGAIN) return send_wait(call);
    call->send_nowait = 0;
    if (e < 0 && call->state != K_FAILED) {
        /* an origin that answered and closed before the request's end:
         * the answer stands */
        if (is_closed_errno(e) && send_met_answer(call) != 0) return 1;
        send_failed(call, e);
    }
    if (e < 0) return 1;
    if (call->streamed) {
        call->head_out = 1;
        call->send_nowait = 1;
        return 1; /* the head is out: the body is its caller's to write */
    }
    return head_watch(call);
}

/* Sends what is in out_iov from the reactor's thread without waiting,
 * for cshs_call_write_async and cshs_call_end_async: 0 all of it, 1 the
 * rest waits for the socket (send_ready), or 2 the origin answered before
 * the end of the body, or the error that failed the call. */
static int stream_send(cshs_call *call)
{
    int e = send_rest(call);
    if (e == -EAGAIN) return send_wait(call) == 0 ? 1 : call->err;
    if (e < 0 && is_closed_errno(e) && send_met_answer(call) == 1) return 2;
    if (e < 0) {
        if (call->state != K_FAILED) send_failed(call, e);
        call->retryable = 0; /* body bytes may have gone: never sent twice */
        return call->err;
    }
    return 0;
}

/* Where a streamed body's call stands for its writer: -1 when it may
 * write, or what cshs_call_write_async returns instead. */
static int stream_state(cshs_call *call)
{
    if (call->early || call->state == K_BODY_IN || call->state == K_DONE) return 2;
    if (call->state == K_FAILED) return call->err;
    if (!call->streamed || call->body_ended || call->state != K_BODY_OUT) return -EINVAL;
    if (atomic_load(&call->cancel_wanted)) return call_fail(call, CSHS_CLIENT_E_CANCELED);
    return -1;
}

int cshs_call_write_async(cshs_call *call, const void *data, size_t len, void (*drained)(void *arg),
                          void *arg)
{
    if (!call || !drained || (len && !data)) return -EINVAL;
    if (!cshs__on_reactor(call->rx)) return -EINVAL;
    int st = stream_state(call);
    if (st != -1) return st;
    if (len == 0) return 0;
    call->out_iov[0].iov_base = call->frame;
    call->out_iov[0].iov_len = 0;
    if (call->mode == CSHS_CLIENT_BODY_LENGTH) {
        if ((uint64_t)len > call->body_left) return call_fail(call, -EINVAL);
        call->body_left -= len;
    } else {
        int k = snprintf(call->frame, sizeof call->frame, "%s%zx\r\n",
                         call->chunk_open ? "\r\n" : "", len);
        call->out_iov[0].iov_len = (size_t)k;
        call->chunk_open = 1;
    }
    call->out_iov[1].iov_base = (void *)(uintptr_t)data;
    call->out_iov[1].iov_len = len;
    call->file_left = 0;
    call->done = drained;
    call->done_arg = arg;
    return stream_send(call);
}

/* cshs_call_end_async for a streamed body: its end (the last chunk, or
 * a check that every byte of its length was written) is sent without
 * waiting, then its head awaited; what the socket does not take is sent
 * from the reactor (send_ready), which then awaits the head. */
static int stream_end(cshs_call *call, cshs_reactor *r, void (*done)(void *arg), void *arg)
{
    if (r != call->rx || !cshs__on_reactor(r)) return -EINVAL;
    int st = stream_state(call);
    if (st != -1) return 1;
    call->body_ended = 1;
    if (call->mode == CSHS_CLIENT_BODY_LENGTH && call->body_left) {
        call_fail(call, -EINVAL); /* fewer bytes than its length: the connection closes */
        return 1;
    }
    call->out_iov[0].iov_base = call->frame;
    call->out_iov[0].iov_len = 0;
    call->out_iov[1].iov_len = 0;
    if (call->mode == CSHS_CLIENT_BODY_CHUNKED) {
        int k = snprintf(call->frame, sizeof call->frame, "%s0\r\n\r\n",
                         call->chunk_open ? "\r\n" : "");
        call->out_iov[0].iov_len = (size_t)k;
    }
    call->file_left = 0;
    call->done = done;
    call->done_arg = arg;
    int e = stream_send(call);
    if (e == 1) return 0; /* send_ready awaits the head */
    if (e != 0) return 1; /* answered early, or failed */
    call->send_nowait = 0;
    return head_watch(call);
}

/* Under the lock: an async call joins its pool's queue. */
static void enqueue_async(cshs_client *c, pool *p, waiter *w)
{
    w->queued = 1;
    w->prev = p->wq_tail;
    w->next = NULL;
    if (p->wq_tail)
        p->wq_tail->next = w;
    else
        p->wq = w;
    p->wq_tail = w;
    p->nwaiters++;
    wake_opener(c, p);
}

/* The retry rule (client.h) for a call of cshs_client_send_async that
 * failed on a reused connection the origin had closed: its request is
 * sent once more on a connection opened for it on its reactor (the least
 * recently used idle one closed to make room when the pool is full), or,
 * when none can be opened now, on the first one given back, holding no
 * thread either way. 1: retrying (done runs later); 0: the rule does not
 * allow it (or the call is not such a call). */
static int retry_async(cshs_call *call)
{
    if (call->state != K_FAILED || !call->rx || !may_retry(call, 0)) return 0;
    if (call->head_out) return 0; /* a streamed body went, or may have */
    cshs_client *c = call->c;
    pool *p = call->p;
    free(call->again); /* the head is built again from the request */
    call->again = NULL;
    call->keep_head = 0;
    call->retried = 1;
    call->retryable = 0;
    call->state = K_BODY_OUT;
    call->err = 0;
    call->bytes_sent = 0;
    call->got = 0;
    csh_parser_init(&call->parser, CSH_RESPONSE, call->fields, MAX_FIELDS, NULL, 0);
    waiter *w = &call->aw;
    w->got = NULL;
    w->err = 0;
    w->expired = 0;
    w->since_us = now_us();
    w->deadline_ms = w->since_us / 1000 + call->acquire_ms;
    conn *stale = NULL;
    pthread_mutex_lock(&c->mu);
    p->retries++;
    int64_t now = w->since_us / 1000;
    if (p->open + p->nopening >= c->o.pool_size && p->idle) {
        conn *lru = p->idle;
        while (lru->next) lru = lru->next;
        idle_remove(p, lru);
        p->open--;
        stale = lru;
    }
    if (!(p->open + p->nopening < c->o.pool_size && now >= p->backoff_until_ms &&
          open_job_add(c, p, call, 1))) {
        if (dead_end(p, now)) {
            w->err = p->last_error;
            hand(c, w);
        } else {
            enqueue_async(c, p, w);
        }
    }
    unlock_and_serve(c);
    conn_close(stale);
    return 1;
}

/* An async waiter handed a connection (its request sent, its head
 * awaited) or an error (its call failed); done runs unless the head is
 * awaited or the request is sent again (the retry rule). */
static void start_handed(cshs_call *call)
{
    if (call->aw.got) {
        call->cn = call->aw.got;
        if (send_and_watch(call) == 0 || retry_async(call)) return;
    } else {
        call_fail(call, call->aw.err);
    }
    call->done(call->done_arg); /* last: it may free the call */
}

static void serve_handed(cshs_client *c, handed_work hw)
{
    for (open_job *j = hw.jobs, *nx; j; j = nx) {
        nx = j->next;
        open_async(c, j);
        free(j);
    }
    for (cshs_call *k = hw.calls, *nx; k; k = nx) {
        nx = k->handed_next;
        start_handed(k);
    }
}

int cshs_client_send_async(cshs_client *c, const cshs_client_request *r, cshs_reactor *rx,
                           void (*done)(void *arg), void *arg, cshs_call **out)
{
    if (!out) return -EINVAL;
    *out = NULL;
    if (!c || !r || !rx || !done) return -EINVAL;
    cshs_client_request rq = request_defaults; /* the caller's, read by its size */
    if (csh__sized_copy(&rq, sizeof rq, r, CSHS_CLIENT_REQUEST_SIZE_0_3) < 0) return -EINVAL;
    cshs_call *call;
    int e = call_new(c, &rq, 1, &call);
    if (e < 0) return e;
    call->rq = rq;
    call->rx = rx;
    call->streamed =
        rq.body_mode == CSHS_CLIENT_BODY_LENGTH || rq.body_mode == CSHS_CLIENT_BODY_CHUNKED;
    call->done = done;
    call->done_arg = arg;
    *out = call; /* before another thread may run done */
    pool *p = call->p;
    waiter *w = &call->aw;
    w->call = call;
    w->since_us = now_us();
    w->deadline_ms = w->since_us / 1000 + call->acquire_ms;
    conn *stale = NULL;
    int err = 0;
    pthread_mutex_lock(&c->mu);
    conn *got = take_idle(c, p, rx, w->since_us, &stale);
    if (!got && dead_end(p, now_ms())) {
        err = p->last_error;
    } else if (!got) {
        /* queued: a release, a connect (started here when the rule lets
         * one start) or the tick's deadline serves it */
        enqueue_async(c, p, w);
    }
    unlock_and_serve(c);
    close_list(stale);
    if (got) {
        call->cn = got;
        if (send_and_watch(call) == 0 || retry_async(call)) return 0;
        return 1;
    }
    if (err) {
        call_fail(call, err);
        return 1;
    }
    return 0;
}

static int have_head(const cshs_call *call)
{
    return call && call->head != NULL;
}

int cshs_call_detach(cshs_call *call)
{
    if (!call || !call->cn || call->state != K_BODY_IN) return -EINVAL;
    conn *cn = call->cn;
    if (cn->detached) return 0;
    cshs_client *c = call->c;
    pthread_mutex_lock(&c->mu);
    cn->detached = 1;
    call->p->detached++;
    dropped(c, call->p); /* a place for the next request: a waiter's open */
    unlock_and_serve(c);
    return 0;
}

int cshs_call_body_here(const cshs_call *call)
{
    if (!have_head(call)) return 0;
    return call->state == K_DONE || (call->state == K_BODY_IN && !body_from_socket(call));
}

int cshs_call_status(const cshs_call *call)
{
    return have_head(call) ? call->parser.msg.status : 0;
}

const csh_message *cshs_call_message(const cshs_call *call)
{
    return have_head(call) ? &call->parser.msg : NULL;
}

const char *cshs_call_head(const cshs_call *call, size_t *len)
{
    if (len) *len = have_head(call) ? call->head_len : 0;
    return have_head(call) ? call->head : NULL;
}

int cshs_call_header(const cshs_call *call, const char *name, const char **value, size_t *value_len)
{
    if (!have_head(call) || !name) return 0;
    const csh_message *m = &call->parser.msg;
    for (size_t i = 0; i < m->num_headers; i++)
        if (csh_span_ieq(call->head, m->headers[i].name, name)) {
            if (value) *value = call->head + m->headers[i].value.off;
            if (value_len) *value_len = m->headers[i].value.len;
            return 1;
        }
    return 0;
}

/* cshs_call_read, and with wait 0 cshs_call_read_nowait */
static ssize_t call_read(cshs_call *call, void *buf, size_t cap, int wait)
{
    if (!call) return -EINVAL;
    if (call->state == K_DONE) return 0;
    if (call->state == K_FAILED) return call->err;
    if (call->state != K_BODY_IN || !buf || !cap) return call_fail(call, -EINVAL);
    conn *cn = call->cn;
    for (;;) {
        size_t avail = cn->end - cn->start, used = 0;
        csh_span data = {0, 0};
        int r = CSH_INCOMPLETE;
        if (avail || call->body.kind == CSH_BODY_NONE) {
            size_t len = avail < cap ? avail : cap;
            r = csh_body_next(&call->body, cn->buf + cn->start, len, &used, &data);
            if (r == CSH_INCOMPLETE && used == 0 && len < avail) /* a trailer section */
                r = csh_body_next(&call->body, cn->buf + cn->start, avail, &used, &data);
            if (r == CSH_DATA) memcpy(buf, cn->buf + cn->start + data.off, data.len);
            cn->start += used;
        }
        if (r == CSH_DATA) {
            if (csh_body_done(&call->body)) {
                int e = body_done(call, 1);
                if (e < 0) return e;
            }
            return (ssize_t)data.len;
        }
        if (r == CSH_OK) {
            int e = body_done(call, 1);
            return e < 0 ? e : 0;
        }
        if (r < 0) return call_fail(call, CSHS_CLIENT_E_MALFORMED);
        if (used) continue; /* framing consumed, bytes left: decode on */
        /* more bytes: a Content-Length body with nothing buffered goes
         * straight into the caller's memory */
        if (!wait && call->read_expired) return call_fail(call, CSHS_CLIENT_E_READ_TIMEOUT);
        int64_t deadline = wait ? now_ms() + call->read_ms : CONN_NOWAIT;
        ssize_t n;
        if (call->body.kind == CSH_BODY_LENGTH && cn->start == cn->end) {
            uint64_t left = call->parser.msg.content_length - call->body.received;
            n = conn_read(cn, buf, (uint64_t)cap < left ? cap : (size_t)left, deadline);
            if (n > 0) {
                r = csh_body_next(&call->body, buf, (size_t)n, &used, &data);
                if (r != CSH_DATA || data.off != 0) return call_fail(call, CSHS_CLIENT_E_MALFORMED);
                if (csh_body_done(&call->body)) {
                    cn->start = cn->end = 0;
                    int e = body_done(call, 1);
                    if (e < 0) return e;
                }
                return (ssize_t)data.len;
            }
        } else {
            int e = make_room(cn);
            if (e < 0) return call_fail(call, e);
            n = conn_read(cn, cn->buf + cn->end, cn->cap - cn->end, deadline);
            if (n > 0) {
                cn->end += (size_t)n;
                continue;
            }
        }
        if (n == 0 && csh_body_finish(&call->body) == CSH_OK) { /* ended with the connection */
            int e = body_done(call, 0);
            return e < 0 ? e : 0;
        }
        if (n == -EAGAIN && !wait) return -EAGAIN;
        if (n == -ETIMEDOUT) return call_fail(call, CSHS_CLIENT_E_READ_TIMEOUT);
        if (is_closed_errno((int)n)) return call_fail(call, CSHS_CLIENT_E_ORIGIN_CLOSED);
        return call_fail(call, (int)n);
    }
}

ssize_t cshs_call_read(cshs_call *call, void *buf, size_t cap)
{
    return call_read(call, buf, cap, 1);
}

ssize_t cshs_call_read_nowait(cshs_call *call, void *buf, size_t cap)
{
    return call_read(call, buf, cap, 0);
}

/* The body's next bytes came (or the origin's end, an error), or its
 * read deadline passed (events 0: the next read fails): on the reactor's
 * thread. */
static void body_ready(cshs_watch *w, uint32_t events)
{
    conn *cn = w->arg;
    cshs_call *call = cn->waiting;
    atomic_store_explicit(&call->watched, NULL, memory_order_relaxed);
    cn->waiting = NULL;
    if (!events) call->read_expired = 1;
    call->done(call->done_arg); /* last: it may free the call */
}

int cshs_call_wait_body(cshs_call *call, cshs_reactor *r, void (*done)(void *arg), void *arg)
{
    if (!call || !r || !done) return -EINVAL;
    if (call->state != K_BODY_IN) return 1; /* the end, or a failure: read it */
    conn *cn = call->cn;
    /* bytes already read (or decrypted by OpenSSL) fire no event */
    if (cn->end > cn->start || (cn->ssl && SSL_has_pending(cn->ssl))) return 1;
    call->rx = r;
    call->done = done;
    call->done_arg = arg;
    call->read_expired = 0;
    return watch_arm(call, r, (cn->io_wait == POLLOUT ? EPOLLOUT : EPOLLIN) | EPOLLRDHUP,
                     now_ms() + call->read_ms, body_ready);
}

int cshs_call_read_all(cshs_call *call, size_t limit, const char **body, size_t *len)
{
    if (!call) return -EINVAL;
    if (call->state == K_FAILED) return call->err;
    size_t have = call->all_len, cap = have + 1;
    if (call->state == K_DONE && call->all) { /* read before: the same answer */
        if (body) *body = call->all;
        if (len) *len = have;
        return 0;
    }
    if (call->state == K_DONE) /* no body, or read by cshs_call_read: nothing left */
        ;
    else if (call->state == K_BODY_IN && call->body.kind == CSH_BODY_LENGTH &&
             call->parser.msg.content_length <= limit)
        cap = (size_t)(call->parser.msg.content_length - call->body.received) + have + 1;
    else if (cap < 65536)
        cap = 65536;
    if (!call->all || cap > have + 1) {
        char *b = realloc(call->all, cap);
        if (!b) return call_fail(call, -ENOMEM);
        call->all = b;
    }
    while (call->state != K_DONE) {
        if (have + 1 == cap) {
            if (have >= limit) {
                /* one byte more than the limit says it is too large */
                char b;
                ssize_t n = cshs_call_read(call, &b, 1);
                if (n < 0) return (int)n;
                if (n > 0) return call_fail(call, CSHS_CLIENT_E_TOO_LARGE);
                break;
            }
            size_t ncap = cap * 2 > limit + 1 ? limit + 1 : cap * 2;
            if (ncap <= cap) ncap = cap + 1;
            char *b = realloc(call->all, ncap);
            if (!b) return call_fail(call, -ENOMEM);
            call->all = b;
            cap = ncap;
        }
        size_t room = cap - 1 - have;
        if (have + room > limit) room = limit > have ? limit - have : 0;
        if (room == 0) {
            char b;
            ssize_t n = cshs_call_read(call, &b, 1);
            if (n < 0) return (int)n;
            if (n > 0) return call_fail(call, CSHS_CLIENT_E_TOO_LARGE);
            break;
        }
        ssize_t n = cshs_call_read(call, call->all + have, room);
        if (n < 0) return (int)n;
        if (n == 0) break;
        have += (size_t)n;
        call->all_len = have;
    }
    call->all[have] = 0;
    call->all_len = have;
    if (body) *body = call->all;
    if (len) *len = have;
    return 0;
}

void cshs_call_free(cshs_call *call)
{
    call_destroy(call);
}

ssize_t cshs_client_stats_sized(cshs_client *c, cshs_client_pool_stats *out, size_t cap,
                                size_t size)
{
    if (!c || (cap && !out) || size < CSHS_CLIENT_POOL_STATS_SIZE_0_3) return -EINVAL;
    size_t n = 0;
    int64_t now = now_ms();
    pthread_mutex_lock(&c->mu);
    for (pool *p = c->pools; p; p = p->next, n++) {
        if (n >= cap) continue;
        cshs_client_pool_stats one, *s = &one; /* this build's, then what fits in the caller's */
        memset(s, 0, sizeof *s);
        snprintf(s->origin, sizeof s->origin, "%s", p->key);
        s->open = p->open;
        s->idle = p->nidle;
        s->opening = p->nopening;
        s->waiters = p->nwaiters;
        s->requests = p->requests;
        s->opens = p->opens;
        s->failures = p->failures;
        s->retries = p->retries;
        s->acquire_timeouts = p->acquire_timeouts;
        s->backoff_ms = p->backoff_until_ms > now ? (uint32_t)(p->backoff_until_ms - now) : 0;
        s->acquire_wait_p50_us = hist_quantile(p, 0.50);
        s->acquire_wait_p99_us = hist_quantile(p, 0.99);
        s->last_backoff_ms = p->last_backoff_ms;
        s->looks = p->looks;
        s->detached = p->detached;
        /* the caller's array: elements of its size */
        csh__sized_out((char *)out + n * size, size, s, sizeof *s);
    }
    pthread_mutex_unlock(&c->mu);
    return (ssize_t)n;
}

/* ---- a switched connection (cshs_call_tunnel_*) ---- */

static conn *tunnel_conn(const cshs_call *call)
{
    return call && call->state == K_SWITCHED ? call->cn : NULL;
}

ssize_t cshs_call_tunnel_read(cshs_call *call, void *buf, size_t cap)
{
    conn *cn = tunnel_conn(call);
    if (!cn || (cap && !buf)) return -EINVAL;
    if (cn->end > cn->start) { /* read past the 101's head */
        size_t n = cn->end - cn->start;
        if (n > cap) n = cap;
        memcpy(buf, cn->buf + cn->start, n);
        cn->start += n;
        drop_buffer(cn);
        return (ssize_t)n;
    }
    if (cn->tunnel_dry) {
        cn->io_wait = POLLIN;
        return -EAGAIN; /* no system call to meet EAGAIN */
    }
    ssize_t n = conn_read(cn, buf, cap, CONN_NOWAIT);
    if (n > 0 && (size_t)n < cap && !cn->ssl && !cn->tunnel_end) cn->tunnel_dry = 1;
    return n;
}

ssize_t cshs_call_tunnel_write(cshs_call *call, const void *data, size_t len)
{
    conn *cn = tunnel_conn(call);
    if (!cn || (len && !data)) return -EINVAL;
    if (len == 0) return 0;
    for (;;) {
        if (!cn->ssl) {
            ssize_t w = cshs__send(cn->fd, data, len, MSG_NOSIGNAL | MSG_DONTWAIT);
            if (w >= 0) return w;
            if (errno == EINTR) continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                cn->io_wait = POLLOUT;
                return -EAGAIN;
            }
            return -errno;
        }
        short wait = POLLOUT;
        ssize_t w = tls_write_now(cn, data, len, &wait);
        if (w == -EAGAIN) cn->io_wait = wait;
        return w;
    }
}

static void tunnel_ready(cshs_watch *w, uint32_t events)
{
    conn *cn = w->arg;
    cshs_call *call = cn->waiting;
    cn->waiting = NULL;
    atomic_store_explicit(&call->watched, NULL, memory_order_relaxed);
    int ev = 0;
    if (events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) cn->tunnel_end = 1;
    if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) {
        ev |= CSHS_TUNNEL_IN;
        cn->tunnel_dry = 0;
    }
    if (events & (EPOLLOUT | EPOLLHUP | EPOLLERR)) ev |= CSHS_TUNNEL_OUT;
    call->tunnel_ready(call->tunnel_arg, ev);
}

int cshs_call_tunnel_wait(cshs_call *call, cshs_reactor *r, int events, int64_t deadline_ms,
                          void (*ready)(void *arg, int events), void *arg)
{
    conn *cn = tunnel_conn(call);
    if (!cn || !r || !ready || !(events & (CSHS_TUNNEL_IN | CSHS_TUNNEL_OUT))) return -EINVAL;
    if (cn->waiting == call) {
        /* one armed: replaced, unless its event was taken already (its
         * ready runs in this batch, and may wait anew) */
        if (!cshs__kept_disarm(&cn->kw, r)) return 0;
        cn->waiting = NULL;
        atomic_store_explicit(&call->watched, NULL, memory_order_relaxed);
    }
    uint32_t ev = EPOLLRDHUP;
    if (events & CSHS_TUNNEL_IN) ev |= cn->ssl && cn->io_wait == POLLOUT ? EPOLLOUT : EPOLLIN;
    if (events & CSHS_TUNNEL_OUT) ev |= cn->ssl && cn->io_wait == POLLIN ? EPOLLIN : EPOLLOUT;
    call->tunnel_ready = ready;
    call->tunnel_arg = arg;
    int e = watch_arm(call, r, ev, deadline_ms, tunnel_ready);
    return e > 0 ? -ECANCELED : e;
}

int cshs_call_tunnel_shutdown(cshs_call *call)
{
    conn *cn = tunnel_conn(call);
    if (!cn) return -EINVAL;
    if (cn->ssl) {
        sigpipe_guard g;
        sigpipe_block(&g);
        SSL_shutdown(cn->ssl);
        ERR_clear_error();
        sigpipe_restore(&g);
    }
    return shutdown(cn->fd, SHUT_WR) < 0 ? -errno : 0;
}
