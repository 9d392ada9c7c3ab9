/* The load loop. See load.h for the shape of a run.
 *
 * One loop per thread: an epoll set (level-triggered), its share of the
 * connections, a read buffer shared by them (bytes of a response split across
 * reads are carried in the connection's own small buffer until the rest
 * arrives), and its own counters and histogram, merged after the level.
 *
 * A connection: closed -> connecting -> (TLS handshake) -> open. When open it
 * keeps up to `pipeline` requests outstanding: since every request is the
 * same bytes, the bytes queued are a run of plan->batch, and a partial write
 * just leaves a shorter run. The send time of each outstanding request sits in
 * a ring; the response parser (csh_parser + csh_body) says where each
 * response ends, and its latency is now minus the oldest send time. */
#include "load.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <cshttp/body.h>
#include <cshttp/error.h>

#ifndef IP_BIND_ADDRESS_NO_PORT
#define IP_BIND_ADDRESS_NO_PORT 24
#endif

#define READ_BUFFER (256u * 1024u)
#define FIELDS 48                 /* response header fields kept; more is a bad response */
#define TICK_NS (20u * 1000000u)  /* deadlines and reconnects are checked this often */
#define RETRY_NS (10u * 1000000u) /* a failed connect is retried after this */

uint64_t load_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

enum conn_state { CONN_CLOSED, CONN_CONNECTING, CONN_HANDSHAKE, CONN_OPEN };

typedef struct conn {
    int fd;
    unsigned char state;
    bool in_body;     /* the head of the current response is parsed */
    bool close_after; /* the current response ends the connection */
    bool spent;       /* no-keepalive or one-shot: its one request was sent */
    bool failed;      /* one-shot: it can no longer answer */
    bool answered;    /* one-shot: its request was answered */
    uint32_t events;  /* registered with epoll */
    unsigned index;   /* its number, for the source address */
    SSL *ssl;
    size_t wpos, wend; /* queued bytes: [wpos, wend) of the endless repetition */
    unsigned outstanding;
    unsigned ring_head; /* oldest outstanding request in the loop's ring */
    uint64_t open_ns;   /* connect started */
    uint64_t retry_ns;  /* closed after a failure: reopen from then on */
    char *carry;        /* unparsed bytes of a response split across reads */
    size_t carry_len, carry_cap;
    csh_parser parser;
    csh_body body;
    csh_header fields[FIELDS];
} conn;

/* A request's place in the ring: when it was sent and whether it counts. */
typedef struct sent {
    uint64_t ns;
    bool measured;
} sent;

typedef struct shared {
    load_progress progress;
    uint64_t target;           /* --requests, 0: by duration */
    _Atomic uint64_t taken;    /* requests given a ticket in the measured window */
    _Atomic uint64_t finished; /* tickets answered or lost */
    _Atomic uint64_t stop_ns;  /* set by the thread that finished the last ticket */
} shared;

typedef struct loop {
    shared *sh;
    const load_plan *plan;
    int epfd;
    bool one_shot; /* idle connections: one request each, no reconnect */
    conn *conns;
    unsigned n;
    sent *ring; /* pipeline slots per connection */
    unsigned depth;
    char *buf;
    uint64_t next_tick_ns;
    unsigned open_one_shot; /* one-shot connections still waiting */
    load_counts counts;
    load_histogram hist;
    char first_error[LOAD_ERROR_TEXT];
    pthread_t thread;
} loop;

static int phase(const loop *l)
{
    return l->sh ? atomic_load_explicit(&l->sh->progress.phase, memory_order_relaxed)
                 : LOAD_PHASE_MEASURE;
}

static void note_error(loop *l, const char *what, const char *detail)
{
    if (l->sh) atomic_fetch_add_explicit(&l->sh->progress.errors, 1, memory_order_relaxed);
    if (!l->first_error[0]) snprintf(l->first_error, sizeof l->first_error, "%s: %s", what, detail);
}

static const char *tls_error_text(char *buf, size_t len)
{
    unsigned long e = ERR_get_error();
    if (!e) return "the TLS connection failed";
    ERR_error_string_n(e, buf, len);
    ERR_clear_error();
    return buf;
}

/* ---- requests and tickets ---- */

/* A request finished (answered or lost): with --requests, its ticket too. */
static void finish_ticket(loop *l, bool measured)
{
    if (!l->sh || !l->sh->target || !measured) return;
    uint64_t done = atomic_fetch_add(&l->sh->finished, 1) + 1;
    if (done == l->sh->target) {
        atomic_store(&l->sh->stop_ns, load_now_ns());
        atomic_store(&l->sh->progress.phase, LOAD_PHASE_STOP);
    }
}

/* May another request be sent now, and does it count? */
static bool take_request(loop *l, bool *measured)
{
    int ph = phase(l);
    if (ph == LOAD_PHASE_STOP) return false;
    *measured = ph == LOAD_PHASE_MEASURE;
    if (!l->sh || !l->sh->target || !*measured) return true;
    if (atomic_fetch_add(&l->sh->taken, 1) < l->sh->target) return true;
    return false;
}

static sent *ring_at(loop *l, conn *c, unsigned k)
{
    return &l->ring[(size_t)(c - l->conns) * l->depth + (c->ring_head + k) % l->depth];
}

static void update_events(loop *l, conn *c, uint32_t want)
{
    if (c->events == want) return;
    struct epoll_event ev = {.events = want, .data.ptr = c};
    epoll_ctl(l->epfd, EPOLL_CTL_MOD, c->fd, &ev);
    c->events = want;
}

/* Drops the connection; its outstanding requests are lost (their tickets
 * finish). A caller that sees an error counts it first (conn_fail). A
 * retry_ns of 0 lets the next tick reopen it at once. */
static void conn_close(loop *l, conn *c, uint64_t retry_ns)
{
    for (unsigned k = 0; k < c->outstanding; k++) finish_ticket(l, ring_at(l, c, k)->measured);
    c->outstanding = 0;
    c->ring_head = 0;
    if (c->ssl) {
        SSL_free(c->ssl);
        c->ssl = NULL;
    }
    if (c->fd >= 0) {
        close(c->fd); /* also leaves the epoll set */
        c->fd = -1;
    }
    c->state = CONN_CLOSED;
    c->in_body = false;
    c->close_after = false;
    c->wpos = c->wend = 0;
    c->carry_len = 0;
    c->events = 0;
    c->retry_ns = retry_ns;
    if (l->one_shot && !c->failed && !c->answered) {
        c->failed = true;
        l->open_one_shot--;
    }
}

/* An error of a kind, counted when it matters for the window: in a
 * measured window, or for a one-shot connection. */
static void count_error(loop *l, conn *c, uint64_t *counter, const char *what, const char *detail)
{
    bool any_measured = false;
    for (unsigned k = 0; k < c->outstanding; k++) any_measured |= ring_at(l, c, k)->measured;
    if (phase(l) == LOAD_PHASE_MEASURE || any_measured || l->one_shot) {
        (*counter)++;
        note_error(l, what, detail);
    }
}

static void conn_fail(loop *l, conn *c, uint64_t *counter, const char *what, const char *detail)
{
    count_error(l, c, counter, what, detail);
    conn_close(l, c, load_now_ns() + RETRY_NS);
}

static void conn_flush(loop *l, conn *c);

/* Queues requests up to the pipeline depth (one for no-keepalive and
 * one-shot connections), then writes. */
static void conn_fill(loop *l, conn *c)
{
    const load_plan *p = l->plan;
    unsigned depth = (l->one_shot || !p->opt->keepalive) ? 1 : p->opt->pipeline;
    uint64_t now = 0;
    while (c->outstanding < depth && !c->spent) {
        bool measured;
        if (!take_request(l, &measured)) break;
        if (!now) now = load_now_ns();
        sent *s = ring_at(l, c, c->outstanding);
        /* without keep-alive, the connect is part of each request's time */
        s->ns = p->opt->keepalive ? now : c->open_ns;
        s->measured = measured;
        c->outstanding++;
        c->wend += p->request_len;
        if (l->one_shot || !p->opt->keepalive) c->spent = true;
    }
    conn_flush(l, c);
}

static void conn_flush(loop *l, conn *c)
{
    const load_plan *p = l->plan;
    while (c->wpos < c->wend) {
        size_t start = c->wpos % p->request_len;
        size_t len = c->wend - c->wpos;
        ssize_t n;
        if (c->ssl) {
            ERR_clear_error();
            int r = SSL_write(c->ssl, p->batch + start, (int)len);
            if (r <= 0) {
                int e = SSL_get_error(c->ssl, r);
                if (e == SSL_ERROR_WANT_WRITE || e == SSL_ERROR_WANT_READ) break;
                char text[120];
                conn_fail(l, c, &l->counts.err_reset, "write", tls_error_text(text, sizeof text));
                return;
            }
            n = r;
        } else {
            n = send(c->fd, p->batch + start, len, MSG_NOSIGNAL);
            if (n < 0) {
                if (errno == EAGAIN || errno == EINTR) break;
                conn_fail(l, c, &l->counts.err_reset, "write", strerror(errno));
                return;
            }
        }
        c->wpos += (size_t)n;
    }
    if (c->wpos == c->wend) c->wpos = c->wend = 0;
    update_events(l, c, c->wpos < c->wend ? EPOLLIN | EPOLLOUT : EPOLLIN);
}

/* ---- connecting ---- */

static void conn_ready(loop *l, conn *c)
{
    c->state = CONN_OPEN;
    conn_fill(l, c);
}

static void conn_handshake(loop *l, conn *c)
{
    ERR_clear_error();
    int r = SSL_connect(c->ssl);
    if (r == 1) {
        conn_ready(l, c);
        return;
    }
    int e = SSL_get_error(c->ssl, r);
    if (e == SSL_ERROR_WANT_READ) {
        update_events(l, c, EPOLLIN);
    } else if (e == SSL_ERROR_WANT_WRITE) {
        update_events(l, c, EPOLLOUT);
    } else {
        char text[120];
        const char *why = tls_error_text(text, sizeof text);
        if (e == SSL_ERROR_SYSCALL && !strcmp(why, "the TLS connection failed"))
            why = "the server closed the connection during the TLS handshake";
        c->open_ns = 0;
        /* a connection that never opened is a connect error, whatever the phase */
        if (phase(l) != LOAD_PHASE_STOP) {
            l->counts.err_connect++;
            note_error(l, "TLS handshake", why);
        }
        conn_close(l, c, load_now_ns() + RETRY_NS);
    }
}

static void conn_connected(loop *l, conn *c)
{
    const load_plan *p = l->plan;
    if (!p->tls) {
        conn_ready(l, c);
        return;
    }
    c->ssl = SSL_new(p->tls);
    if (!c->ssl || !SSL_set_fd(c->ssl, c->fd)) {
        l->counts.err_connect++;
        note_error(l, "TLS", "SSL_new failed (out of memory?)");
        conn_close(l, c, load_now_ns() + RETRY_NS);
        return;
    }
    struct in6_addr a6;
    struct in_addr a4;
    const char *host = p->opt->host;
    if (inet_pton(AF_INET, host, &a4) != 1 && inet_pton(AF_INET6, host, &a6) != 1)
        SSL_set_tlsext_host_name(c->ssl, host); /* SNI only for names (RFC 6066 §3) */
    if (p->opt->cacert) SSL_set1_host(c->ssl, host);
    c->state = CONN_HANDSHAKE;
    conn_handshake(l, c);
}

static void connect_failed(loop *l, conn *c, int err)
{
    if (phase(l) != LOAD_PHASE_STOP) {
        l->counts.err_connect++;
        note_error(l, "connect", strerror(err));
    }
    conn_close(l, c, load_now_ns() + RETRY_NS);
}

static void conn_open(loop *l, conn *c)
{
    const load_plan *p = l->plan;
    c->spent = false;
    c->open_ns = load_now_ns();
    c->fd = socket(p->addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (c->fd < 0) {
        connect_failed(l, c, errno);
        return;
    }
    int one = 1;
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (p->source_addrs > 1) {
        /* the port is chosen at connect(), per destination: many more than
         * 64k connections over a few source addresses */
        setsockopt(c->fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof one);
        struct sockaddr_in src = {.sin_family = AF_INET};
        src.sin_addr.s_addr = htonl(0x7f000001u + c->index % p->source_addrs);
        if (bind(c->fd, (struct sockaddr *)&src, sizeof src)) {
            connect_failed(l, c, errno);
            return;
        }
    }
    struct epoll_event ev = {.events = EPOLLOUT, .data.ptr = c};
    c->events = EPOLLOUT;
    if (epoll_ctl(l->epfd, EPOLL_CTL_ADD, c->fd, &ev)) {
        connect_failed(l, c, errno);
        return;
    }
    c->state = CONN_CONNECTING;
    if (connect(c->fd, (const struct sockaddr *)&p->addr, p->addrlen) == 0) {
        conn_connected(l, c);
    } else if (errno != EINPROGRESS) {
        connect_failed(l, c, errno);
    }
}

/* ---- responses ---- */

static void parser_start(loop *l, conn *c)
{
    csh_parser_init(&c->parser, CSH_RESPONSE, c->fields, FIELDS, NULL, 0);
    csh_parser_set_request_method(&c->parser, l->plan->method);
}

static void response_done(loop *l, conn *c, int status)
{
    sent s = *ring_at(l, c, 0);
    c->ring_head = (c->ring_head + 1) % l->depth;
    c->outstanding--;
    uint64_t now = load_now_ns();
    bool counted = l->sh && l->sh->target ? s.measured : phase(l) == LOAD_PHASE_MEASURE;
    if (l->one_shot) {
        counted = true;
        c->answered = true;
        l->open_one_shot--;
    }
    if (counted) {
        l->counts.requests++;
        l->counts.status[status >= 100 && status < 600 ? status / 100 : 0]++;
        load_histogram_record(&l->hist, now - s.ns);
    }
    if (l->sh) atomic_fetch_add_explicit(&l->sh->progress.responses, 1, memory_order_relaxed);
    finish_ticket(l, s.measured);
}

static void bad_response(loop *l, conn *c, int r)
{
    char detail[160];
    snprintf(detail, sizeof detail, "%s (%s)", csh_error_message(r), csh_error_name(r));
    conn_fail(l, c, &l->counts.err_bad_response, "bad response", detail);
}

/* Parses buf[0, len): heads and bodies of the responses, in order. Returns
 * how many bytes are left unparsed (kept for the next read), or -1 when the
 * connection was closed. */
static long parse_responses(loop *l, conn *c, const char *buf, size_t len)
{
    size_t off = 0;
    for (;;) {
        if (!c->in_body) {
            if (off == len) break;
            if (c->outstanding == 0) {
                conn_fail(l, c, &l->counts.err_bad_response, "bad response",
                          "bytes before any request was sent");
                return -1;
            }
            int r = csh_parser_execute(&c->parser, buf + off, len - off);
            if (r == CSH_INCOMPLETE) break;
            if (r < 0) {
                bad_response(l, c, r);
                return -1;
            }
            const csh_message *m = &c->parser.msg;
            off += m->head_length;
            if (m->flags & CSH_MSG_INTERIM) { /* 100 Continue & co: the real one follows */
                parser_start(l, c);
                continue;
            }
            if (m->flags & CSH_MSG_TUNNEL) {
                conn_fail(l, c, &l->counts.err_bad_response, "bad response",
                          "the server switched protocols");
                return -1;
            }
            c->close_after = !(m->flags & CSH_MSG_KEEP_ALIVE);
            csh_body_init(&c->body, m, NULL, 0, NULL, 0);
            c->in_body = true;
        }
        size_t used = 0;
        csh_span data;
        int r = csh_body_read(&c->body, buf + off, len - off, &used, &data);
        off += used;
        if (r == CSH_DATA) continue;
        if (r == CSH_INCOMPLETE) break;
        if (r < 0) {
            bad_response(l, c, r);
            return -1;
        }
        response_done(l, c, c->parser.msg.status);
        c->in_body = false;
        bool close_now = c->close_after;
        parser_start(l, c);
        if (close_now) {
            if (c->outstanding) { /* pipelined requests the server will not answer */
                conn_fail(l, c, &l->counts.err_reset, "reset",
                          "the server closed a connection with requests outstanding");
            } else {
                conn_close(l, c, 0);
            }
            return -1;
        }
        if (l->one_shot) continue;
        conn_fill(l, c);
        if (c->state != CONN_OPEN) return -1;
    }
    return (long)(len - off);
}

/* The server closed its side. */
static void conn_eof(loop *l, conn *c)
{
    if (c->in_body && c->body.kind == CSH_BODY_UNTIL_CLOSE && csh_body_finish(&c->body) == CSH_OK) {
        response_done(l, c, c->parser.msg.status);
        c->in_body = false;
        parser_start(l, c);
    }
    if (c->outstanding || c->in_body) {
        conn_fail(l, c, &l->counts.err_reset, "reset",
                  "the server closed the connection before answering");
        return;
    }
    /* an idle keep-alive connection the server let go: open another */
    conn_close(l, c, 0);
}

static void conn_read(loop *l, conn *c)
{
    for (;;) {
        size_t have = c->carry_len;
        if (have) memcpy(l->buf, c->carry, have);
        size_t room = READ_BUFFER - have;
        ssize_t n;
        if (c->ssl) {
            ERR_clear_error();
            int r = SSL_read(c->ssl, l->buf + have, (int)room);
            if (r <= 0) {
                int e = SSL_get_error(c->ssl, r);
                if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) return;
                if (e == SSL_ERROR_ZERO_RETURN ||
                    (e == SSL_ERROR_SYSCALL && ERR_peek_error() == 0)) {
                    conn_eof(l, c);
                    return;
                }
                char text[120];
                conn_fail(l, c, &l->counts.err_reset, "read", tls_error_text(text, sizeof text));
                return;
            }
            n = r;
        } else {
            n = recv(c->fd, l->buf + have, room, 0);
            if (n < 0) {
                if (errno == EAGAIN || errno == EINTR) return;
                conn_fail(l, c, &l->counts.err_reset, "read", strerror(errno));
                return;
            }
            if (n == 0) {
                conn_eof(l, c);
                return;
            }
        }
        if (phase(l) == LOAD_PHASE_MEASURE || l->one_shot) l->counts.read_bytes += (size_t)n;
        long left = parse_responses(l, c, l->buf, have + (size_t)n);
        if (left < 0) return;
        if (left > 0) {
            if ((size_t)left > c->carry_cap) {
                size_t cap = (size_t)left < 4096 ? 4096 : (size_t)left;
                char *p = realloc(c->carry, cap);
                if (!p) {
                    conn_fail(l, c, &l->counts.err_reset, "read", "out of memory");
                    return;
                }
                c->carry = p;
                c->carry_cap = cap;
            }
            memmove(c->carry, l->buf + have + (size_t)n - (size_t)left, (size_t)left);
        }
        c->carry_len = (size_t)left;
        /* more may wait: a full buffer, or records OpenSSL already decrypted */
        if ((size_t)n < room && !(c->ssl && SSL_pending(c->ssl) > 0)) return;
    }
}

static void conn_event(loop *l, conn *c, uint32_t events)
{
    switch (c->state) {
    case CONN_CONNECTING: {
        int err = 0;
        socklen_t len = sizeof err;
        getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len);
        if (err) {
            connect_failed(l, c, err);
            return;
        }
        conn_connected(l, c);
        return;
    }
    case CONN_HANDSHAKE:
        conn_handshake(l, c);
        return;
    case CONN_OPEN:
        if (events & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
            conn_read(l, c);
            if (c->state != CONN_OPEN) return;
        }
        if ((events & EPOLLOUT) && c->wpos < c->wend) conn_flush(l, c);
        return;
    default:
        return;
    }
}

/* Every TICK_NS: requests past their deadline, connections to reopen. */
static void loop_tick(loop *l, uint64_t now)
{
    const load_plan *p = l->plan;
    bool stopping = phase(l) == LOAD_PHASE_STOP;
    for (unsigned i = 0; i < l->n; i++) {
        conn *c = &l->conns[i];
        if (c->state == CONN_CLOSED) {
            if (!l->one_shot && !stopping && now >= c->retry_ns) conn_open(l, c);
            continue;
        }
        uint64_t since =
            c->state == CONN_OPEN ? (c->outstanding ? ring_at(l, c, 0)->ns : 0) : c->open_ns;
        if (since && now - since > p->timeout_ns) {
            if (c->state == CONN_OPEN) {
                conn_fail(l, c, &l->counts.err_timeout, "timeout",
                          "no complete response within --timeout");
            } else {
                if (!stopping) {
                    l->counts.err_timeout++;
                    note_error(l, "timeout", "the connection did not open within --timeout");
                }
                conn_close(l, c, now);
            }
        }
    }
}

static bool loop_done(loop *l)
{
    if (l->one_shot) return l->open_one_shot == 0;
    return phase(l) == LOAD_PHASE_STOP;
}

/* One round: wait up to 10 ms for events, handle them, and the tick. */
static void loop_poll(loop *l)
{
    struct epoll_event events[256];
    int n = epoll_wait(l->epfd, events, 256, 10);
    for (int i = 0; i < n; i++) conn_event(l, events[i].data.ptr, events[i].events);
    uint64_t now = load_now_ns();
    if (now >= l->next_tick_ns) {
        loop_tick(l, now);
        l->next_tick_ns = now + TICK_NS;
    }
}

/* The one-shot rounds of the idle connections: each of them answers or fails
 * within the timeout (loop_tick), the deadline is only a safety net. */
static void loop_run_one_shot(loop *l)
{
    uint64_t deadline = load_now_ns() + 2 * l->plan->timeout_ns;
    l->next_tick_ns = load_now_ns() + TICK_NS;
    while (!loop_done(l) && load_now_ns() < deadline) loop_poll(l);
}

static int loop_init(loop *l, shared *sh, const load_plan *p, unsigned n, unsigned first_index,
                     bool one_shot)
{
    memset(l, 0, sizeof *l);
    l->sh = sh;
    l->plan = p;
    l->one_shot = one_shot;
    l->n = n;
    l->depth = p->opt->pipeline;
    l->epfd = epoll_create1(EPOLL_CLOEXEC);
    l->conns = calloc(n ? n : 1, sizeof *l->conns);
    l->ring = calloc((size_t)(n ? n : 1) * l->depth, sizeof *l->ring);
    l->buf = malloc(READ_BUFFER);
    load_histogram_init(&l->hist);
    if (l->epfd < 0 || !l->conns || !l->ring || !l->buf) return -1;
    for (unsigned i = 0; i < n; i++) {
        l->conns[i].fd = -1;
        l->conns[i].index = first_index + i;
        parser_start(l, &l->conns[i]);
    }
    return 0;
}

static void loop_free(loop *l)
{
    for (unsigned i = 0; l->conns && i < l->n; i++) {
        conn *c = &l->conns[i];
        c->outstanding = 0; /* the run is over: nothing is lost */
        if (l->one_shot) c->answered = true;
        conn_close(l, c, 0);
        free(c->carry);
    }
    if (l->epfd >= 0) close(l->epfd);
    free(l->conns);
    free(l->ring);
    free(l->buf);
}

static void *loop_thread(void *arg)
{
    loop *l = arg;
    for (unsigned i = 0; i < l->n; i++) conn_open(l, &l->conns[i]);
    l->next_tick_ns = load_now_ns() + TICK_NS;
    while (!loop_done(l)) loop_poll(l);
    return NULL;
}

static void counts_add(load_counts *into, const load_counts *c)
{
    into->requests += c->requests;
    into->read_bytes += c->read_bytes;
    for (int i = 0; i < 6; i++) into->status[i] += c->status[i];
    into->err_connect += c->err_connect;
    into->err_timeout += c->err_timeout;
    into->err_reset += c->err_reset;
    into->err_bad_response += c->err_bad_response;
}

static void sleep_ns(uint64_t ns)
{
    struct timespec ts = {.tv_sec = (time_t)(ns / 1000000000u),
                          .tv_nsec = (long)(ns % 1000000000u)};
    while (nanosleep(&ts, &ts) && errno == EINTR) {
    }
}

int load_run_level(const load_plan *p, unsigned connections, load_result *out, load_tick_fn *tick,
                   void *tick_arg)
{
    const load_options *o = p->opt;
    memset(out, 0, sizeof *out);
    out->connections = connections;
    load_histogram_init(&out->hist);
    unsigned threads = o->threads < connections ? o->threads : connections;
    if (threads == 0) threads = 1;
    shared sh = {.target = o->requests};
    atomic_init(&sh.progress.phase, o->warmup_s > 0 ? LOAD_PHASE_WARMUP : LOAD_PHASE_MEASURE);
    loop *loops = calloc(threads, sizeof *loops);
    if (!loops) return -1;
    unsigned started = 0;
    int rc = 0;
    /* the clock starts before the threads: without a warm-up they measure
     * from their first request, and a short run (--requests) can end
     * before this thread would read it after them (a duration of 0) */
    uint64_t t0 = load_now_ns();
    for (unsigned t = 0; t < threads; t++) {
        unsigned from = (unsigned)((uint64_t)connections * t / threads);
        unsigned to = (unsigned)((uint64_t)connections * (t + 1) / threads);
        if (loop_init(&loops[t], &sh, p, to - from, from, false) ||
            pthread_create(&loops[t].thread, NULL, loop_thread, &loops[t])) {
            loop_free(&loops[t]);
            rc = -1;
            break;
        }
        started++;
    }
    uint64_t measure_ns = t0;
    uint64_t warm_ns = (uint64_t)(o->warmup_s * 1e9);
    uint64_t dur_ns = (uint64_t)(o->duration_s * 1e9);
    uint64_t last_count = 0, last_change = t0;
    uint64_t next_tick = t0;
    while (rc == 0) {
        /* wake at the next tick, or at the end of the warm-up or window */
        uint64_t now = load_now_ns(), wake = next_tick + 250u * 1000000u;
        int ph = atomic_load(&sh.progress.phase);
        if (ph == LOAD_PHASE_WARMUP && t0 + warm_ns < wake) wake = t0 + warm_ns;
        if (ph == LOAD_PHASE_MEASURE && !o->requests && measure_ns + dur_ns < wake)
            wake = measure_ns + dur_ns;
        if (ph == LOAD_PHASE_MEASURE && o->requests) wake = now + 5u * 1000000u;
        if (wake > now) sleep_ns(wake - now);
        now = load_now_ns();
        bool tick_now = now >= next_tick + 250u * 1000000u;
        if (tick_now) next_tick = now;
        ph = atomic_load(&sh.progress.phase);
        if (ph == LOAD_PHASE_WARMUP && now - t0 >= warm_ns) {
            measure_ns = now; /* not a later reading: now - measure_ns must not wrap */
            atomic_store(&sh.progress.phase, LOAD_PHASE_MEASURE);
            ph = LOAD_PHASE_MEASURE;
        }
        if (ph == LOAD_PHASE_MEASURE && !o->requests && now - measure_ns >= dur_ns) {
            atomic_store(&sh.stop_ns, now);
            atomic_store(&sh.progress.phase, LOAD_PHASE_STOP);
            ph = LOAD_PHASE_STOP;
        }
        /* nothing answered for longer than the timeout: the server is gone
         * or stuck, and waiting for the last tickets would never end */
        uint64_t count = atomic_load(&sh.progress.responses) + atomic_load(&sh.progress.errors);
        if (count != last_count) {
            last_count = count;
            last_change = now;
        } else if (ph != LOAD_PHASE_STOP && connections &&
                   now - last_change > p->timeout_ns + 1000000000u) {
            out->stalled = true;
            atomic_store(&sh.stop_ns, now);
            atomic_store(&sh.progress.phase, LOAD_PHASE_STOP);
            ph = LOAD_PHASE_STOP;
        }
        if (tick_now && tick && tick(tick_arg, &sh.progress, (double)(now - t0) / 1e9) &&
            ph != LOAD_PHASE_STOP) {
            out->interrupted = true;
            atomic_store(&sh.stop_ns, load_now_ns());
            ph = LOAD_PHASE_STOP;
        }
        if (ph == LOAD_PHASE_STOP) break;
    }
    atomic_store(&sh.progress.phase, LOAD_PHASE_STOP);
    for (unsigned t = 0; t < started; t++) pthread_join(loops[t].thread, NULL);
    uint64_t stop = atomic_load(&sh.stop_ns);
    if (!stop) stop = load_now_ns();
    if (stop < measure_ns) stop = measure_ns;
    out->duration_s = (double)(stop - measure_ns) / 1e9;
    for (unsigned t = 0; t < started; t++) {
        counts_add(&out->counts, &loops[t].counts);
        load_histogram_merge(&out->hist, &loops[t].hist);
        if (!out->first_error[0] && loops[t].first_error[0])
            memcpy(out->first_error, loops[t].first_error, sizeof out->first_error);
        loop_free(&loops[t]);
    }
    free(loops);
    return rc;
}

/* ---- idle connections ---- */

struct load_idle {
    loop l;
};

load_idle *load_idle_open(const load_plan *p, unsigned n, unsigned first_index, unsigned *held,
                          char *first_error, size_t errlen)
{
    load_idle *idle = calloc(1, sizeof *idle);
    *held = 0;
    if (!idle) return NULL;
    loop *l = &idle->l;
    if (loop_init(l, NULL, p, n, first_index, true)) {
        loop_free(l);
        free(idle);
        return NULL;
    }
    l->open_one_shot = n;
    /* at most 256 opening at a time, so the server's listen backlog is not
     * flooded (dropped SYNs would cost a second each) */
    for (unsigned i = 0; i < n; i++) {
        conn_open(l, &l->conns[i]);
        uint64_t deadline = load_now_ns() + 2 * p->timeout_ns;
        while ((i + 1) - (n - l->open_one_shot) >= 256 && load_now_ns() < deadline) loop_poll(l);
    }
    loop_run_one_shot(l);
    for (unsigned i = 0; i < n; i++) {
        conn *c = &l->conns[i];
        if (c->answered) {
            (*held)++;
            /* it sits idle now: nobody reads it until the check */
            update_events(l, c, 0);
        } else if (c->state != CONN_CLOSED) {
            c->outstanding = 0;
            conn_close(l, c, 0);
        }
    }
    if (first_error && errlen) snprintf(first_error, errlen, "%s", l->first_error);
    return idle;
}

unsigned load_idle_check(load_idle *idle, char *first_error, size_t errlen)
{
    loop *l = &idle->l;
    l->open_one_shot = 0;
    l->first_error[0] = 0;
    for (unsigned i = 0; i < l->n; i++) {
        conn *c = &l->conns[i];
        bool was_held = c->answered && c->state == CONN_OPEN;
        c->answered = false;
        if (!was_held) {
            c->failed = true;
            continue;
        }
        c->failed = false;
        c->spent = false;
        l->open_one_shot++;
        update_events(l, c, EPOLLIN);
        conn_fill(l, c);
    }
    loop_run_one_shot(l);
    unsigned answered = 0;
    for (unsigned i = 0; i < l->n; i++) answered += l->conns[i].answered;
    if (first_error && errlen) snprintf(first_error, errlen, "%s", l->first_error);
    return answered;
}

void load_idle_free(load_idle *idle)
{
    if (!idle) return;
    loop_free(&idle->l);
    free(idle);
}
