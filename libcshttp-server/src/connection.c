/* One connection's life: read, parse the head with csh_parser, hand it and
 * a socket transport to the toolkit's context, keep-alive, pipelining, and
 * back to epoll when the socket is really idle.
 *
 * The read buffer holds the head at its start for the whole request (the
 * context's spans point into it); body bytes are read after the head and
 * handed out through peek/consume, and when they are all consumed the next
 * read reuses the space after the head. What a request leaves (a pipelined
 * head) moves to the front for the next parse. An idle connection with no
 * bytes pending frees its buffer and parser. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <cshttp/web/request.h>
#include <cshttp/web/response.h>

#include "server_impl.h"

static _Thread_local cshs_worker *tls_worker;

/* ThreadSanitizer does not see the order that a one-shot re-arm
 * (EPOLL_CTL_MOD) gives between the worker that re-arms and the worker that
 * receives the event, and reports the second one's close as a race on the
 * descriptor. In TSan builds the re-arm and the start of an event's service
 * take a (striped) lock, which makes that order visible; other builds need
 * nothing. */
#if defined(__SANITIZE_THREAD__)
#define CSHS_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define CSHS_TSAN 1
#endif
#endif
#ifdef CSHS_TSAN
static pthread_mutex_t tsan_locks[64] = {
#define L4                                                                                         \
    PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER,               \
        PTHREAD_MUTEX_INITIALIZER
#define L16 L4, L4, L4, L4
    L16, L16, L16, L16
#undef L16
#undef L4
};
#define TSAN_LOCK(fd) pthread_mutex_lock(&tsan_locks[(unsigned)(fd) % 64u])
#define TSAN_UNLOCK(fd) pthread_mutex_unlock(&tsan_locks[(unsigned)(fd) % 64u])
#else
#define TSAN_LOCK(fd) ((void)0)
#define TSAN_UNLOCK(fd) ((void)0)
#endif

/* ---- the socket transport ---- */

/* Waits for `events` within a deadline checked in slices, so a forced stop
 * is noticed. 0 when ready, -ETIMEDOUT, -ECONNABORTED. */
static int wait_fd(cshs_conn *c, short events, int64_t until_ms)
{
    cshs_server *s = c->srv;
    for (;;) {
        if (atomic_load(&s->forced)) return -ECONNABORTED;
        int64_t now = cshs__now_ms();
        if (until_ms && now >= until_ms) return -ETIMEDOUT;
        int64_t slice = 200;
        if (until_ms && until_ms - now < slice) slice = until_ms - now;
        struct pollfd p = {c->fd, events, 0};
        int r = poll(&p, 1, (int)slice);
        if (r > 0) return 0;
        if (r < 0 && errno != EINTR) return -errno;
    }
}

/* Reads from the socket, or through OpenSSL. > 0 bytes, 0 at the end of
 * input, -EAGAIN (wait for c->tls_wait), -errno. */
static ssize_t conn_recv(cshs_conn *c, void *buf, size_t len)
{
    c->tls_wait = POLLIN;
    if (c->ssl) {
        ssize_t n = cshs__tls_read(c, buf, len);
        if (n == -EINPROGRESS) {
            c->tls_wait = POLLOUT;
            n = -EAGAIN;
        }
        return n;
    }
    for (;;) {
        ssize_t n = recv(c->fd, buf, len, 0);
        if (n >= 0) return n;
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) return -EAGAIN;
        return -errno;
    }
}

static ssize_t conn_send(cshs_conn *c, const void *buf, size_t len)
{
    c->tls_wait = POLLOUT;
    if (c->ssl) {
        ssize_t n = cshs__tls_write(c, buf, len);
        if (n == -EAGAIN) c->tls_wait = POLLIN; /* OpenSSL wants to read first */
        if (n == -EINPROGRESS) n = -EAGAIN;
        return n;
    }
    for (;;) {
        ssize_t n = send(c->fd, buf, len, MSG_NOSIGNAL);
        if (n >= 0) return n;
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) return -EAGAIN;
        return -errno;
    }
}

static int t_peek(void *io, const char **data, size_t *len)
{
    cshs_conn *c = io;
    cshs_server *s = c->srv;
    /* A request's input ends with its body, whose end a Content-Length
     * gives: past it nothing is waited for on this request's behalf (on a
     * keep-alive socket a read there would wait for the next request). */
    if (c->body_consumed >= c->body_limit) {
        *data = c->buf + c->pos;
        *len = 0;
        return 0;
    }
    if (c->pos < c->len) {
        *data = c->buf + c->pos;
        *len = c->len - c->pos;
        return 0;
    }
    /* everything after the head was used: read into that space again */
    c->pos = c->len = c->body_base;
    for (;;) {
        ssize_t n = conn_recv(c, c->buf + c->len, c->cap - c->len);
        if (n > 0) {
            c->len += (size_t)n;
            c->body_bytes += (uint64_t)n;
            c->last_read_ms = cshs__now_ms();
            atomic_fetch_add(&s->c_bytes_in, (uint64_t)n);
            *data = c->buf + c->pos;
            *len = c->len - c->pos;
            return 0;
        }
        if (n == 0) {
            *data = c->buf + c->pos;
            *len = 0;
            return 0;
        }
        if (n != -EAGAIN) {
            atomic_fetch_add(&s->e_io, 1);
            return (int)n;
        }
        /* the minimum body rate (after the grace period) and the read
         * timeout, checked at least every 200 ms while waiting */
        for (;;) {
            int64_t now = cshs__now_ms();
            int64_t elapsed = now - c->body_start_ms;
            if (s->o.min_body_rate && elapsed > (int64_t)s->o.body_grace_ms &&
                c->body_bytes * 1000u < (uint64_t)s->o.min_body_rate * (uint64_t)elapsed) {
                atomic_fetch_add(&s->e_body, 1);
                return -ETIMEDOUT;
            }
            int64_t until = now + 200;
            if (s->o.read_timeout_ms) {
                int64_t rt = c->last_read_ms + (int64_t)s->o.read_timeout_ms;
                if (now >= rt) {
                    atomic_fetch_add(&s->e_body, 1);
                    return -ETIMEDOUT;
                }
                if (rt < until) until = rt;
            }
            int r = wait_fd(c, c->tls_wait, until);
            if (r == 0) break;
            if (r != -ETIMEDOUT) return r;
        }
    }
}

static void t_consume(void *io, size_t n)
{
    cshs_conn *c = io;
    if (n > c->len - c->pos) n = c->len - c->pos;
    c->pos += n;
    c->body_consumed += n;
}

static int wait_send(cshs_conn *c)
{
    cshs_server *s = c->srv;
    int64_t until = s->o.send_timeout_ms ? cshs__now_ms() + (int64_t)s->o.send_timeout_ms : 0;
    int r = wait_fd(c, c->tls_wait, until);
    if (r == -ETIMEDOUT) atomic_fetch_add(&s->e_send, 1);
    return r;
}

static int t_write(void *io, const void *data, size_t len)
{
    cshs_conn *c = io;
    cshs_server *s = c->srv;
    const char *p = data;
    while (len > 0) {
        ssize_t n = conn_send(c, p, len);
        if (n > 0) {
            p += n;
            len -= (size_t)n;
            c->req_out += (uint64_t)n;
            atomic_fetch_add(&s->c_bytes_out, (uint64_t)n);
            continue;
        }
        if (n == -EAGAIN) {
            int r = wait_send(c);
            if (r < 0) return r;
            continue;
        }
        atomic_fetch_add(&s->e_io, 1);
        return n < 0 ? (int)n : -EPIPE;
    }
    return 0;
}

static int t_send_file(void *io, int fd, off_t offset, size_t len)
{
    cshs_conn *c = io;
    cshs_server *s = c->srv;
    while (len > 0) {
        ssize_t n = sendfile(c->fd, fd, &offset, len);
        if (n > 0) {
            len -= (size_t)n;
            c->req_out += (uint64_t)n;
            atomic_fetch_add(&s->c_bytes_out, (uint64_t)n);
            continue;
        }
        if (n == 0) return -EIO; /* the file is shorter than said */
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
            c->tls_wait = POLLOUT;
            int r = wait_send(c);
            if (r < 0) return r;
            continue;
        }
        atomic_fetch_add(&s->e_io, 1);
        return -errno;
    }
    return 0;
}

static const cshw_transport_ops socket_ops = {t_peek, t_consume, t_write, NULL, t_send_file};
/* TLS: no sendfile (the toolkit reads and writes the file instead) */
static const cshw_transport_ops tls_ops = {t_peek, t_consume, t_write, NULL, NULL};

/* ---- life ---- */

cshs_conn *cshs__conn_new(cshs_server *s, int fd, const struct sockaddr *sa)
{
    cshs_conn *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->tag = TAG_CONN;
    c->fd = fd;
    c->srv = s;
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)(const void *)sa;
        inet_ntop(AF_INET, &in->sin_addr, c->remote, sizeof c->remote);
        c->remote_port = ntohs(in->sin_port);
    } else if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)(const void *)sa;
        inet_ntop(AF_INET6, &in6->sin6_addr, c->remote, sizeof c->remote);
        c->remote_port = ntohs(in6->sin6_port);
    } else {
        strcpy(c->remote, "unix");
    }
    if (sa->sa_family != AF_UNIX) {
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }
    return c;
}

/* An idle connection gives its buffer and parser back; the worker keeps
 * one of each for the next connection it serves (no malloc per request),
 * and frees the rest. */
static void release_buffers(cshs_conn *c)
{
    cshs_worker *w = tls_worker;
    if (w && w->srv == c->srv && !w->spare_rd && c->rd) {
        w->spare_rd = c->rd;
        c->rd = NULL;
    }
    if (w && w->srv == c->srv && !w->spare_buf && c->buf && c->cap == c->srv->o.read_buffer) {
        w->spare_buf = c->buf;
        c->buf = NULL;
    }
    free(c->rd);
    free(c->buf);
    c->rd = NULL;
    c->buf = NULL;
    c->cap = c->len = c->pos = 0;
}

void cshs__conn_close(cshs_conn *c)
{
    cshs_server *s = c->srv;
    pthread_mutex_lock(&s->mu);
    if (c->prev)
        c->prev->next = c->next;
    else
        s->conns = c->next;
    if (c->next) c->next->prev = c->prev;
    pthread_mutex_unlock(&s->mu);
    cshs__tls_close(c);
    close(c->fd);
    release_buffers(c);
    free(c);
    atomic_fetch_sub(&s->c_open, 1);
}

static const char reject_503[] = "HTTP/1.1 503 Service Unavailable\r\n"
                                 "Content-Type: text/plain; charset=utf-8\r\n"
                                 "Content-Length: 20\r\n"
                                 "Retry-After: 1\r\n"
                                 "Connection: close\r\n\r\n"
                                 "Server too busy.\r\n\r\n";

void cshs__reject(cshs_server *s, int fd)
{
    ssize_t n = send(fd, reject_503, sizeof reject_503 - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) atomic_fetch_add(&s->c_bytes_out, (uint64_t)n);
    shutdown(fd, SHUT_WR);
    /* what the client already sent is read, so that close sends a FIN
     * rather than a reset that could destroy the answer */
    char sink[4096];
    while (recv(fd, sink, sizeof sink, MSG_DONTWAIT) > 0) {
    }
    close(fd);
    atomic_fetch_add(&s->e_rejected, 1);
}

/* A head that does not parse: its status, a short body, Connection: close
 * (RFC 9112 §2.2: the framing cannot be trusted any more). */
static void write_parse_error(cshs_conn *c, int status)
{
    char body[96], head[256];
    const char *reason = cshw_status_reason(status);
    int bl = snprintf(body, sizeof body, "%d %s\n", status, reason ? reason : "Error");
    int hl = snprintf(head, sizeof head,
                      "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\n"
                      "Content-Length: %d\r\nConnection: close\r\n\r\n",
                      status, reason ? reason : "Error", bl);
    if (t_write(c, head, (size_t)hl) == 0) t_write(c, body, (size_t)bl);
}

static int ensure_reader(cshs_conn *c)
{
    cshs_server *s = c->srv;
    cshs_worker *w = tls_worker;
    if (!c->rd) {
        size_t nf = s->o.limits.max_fields ? s->o.limits.max_fields : 1;
        if (w && w->spare_rd) {
            c->rd = w->spare_rd;
            w->spare_rd = NULL;
        } else {
            c->rd = malloc(sizeof *c->rd + nf * sizeof(csh_header));
        }
        if (!c->rd) return -ENOMEM;
        csh_parser_init(&c->rd->p, CSH_REQUEST, c->rd->fields, nf, &s->o.limits, 0);
    }
    if (!c->buf) {
        c->cap = s->o.read_buffer;
        if (w && w->spare_buf) {
            c->buf = w->spare_buf;
            w->spare_buf = NULL;
        } else {
            c->buf = malloc(c->cap);
        }
        if (!c->buf) return -ENOMEM;
        c->len = c->pos = 0;
    }
    return 0;
}

static int grow(cshs_conn *c, size_t want)
{
    if (c->cap >= want) return 0;
    char *nb = realloc(c->buf, want);
    if (!nb) return -ENOMEM;
    c->buf = nb;
    c->cap = want;
    return 0;
}

/* Reads once into the head buffer. >0 bytes, 0 at the end of input,
 * -EAGAIN, -errno. *filled: the read used all the room there was. */
static ssize_t read_head(cshs_conn *c, int *filled)
{
    cshs_server *s = c->srv;
    if (c->len == c->cap) {
        size_t limit = s->o.limits.max_head + s->o.read_buffer;
        if (c->cap >= limit) return -E2BIG; /* the parser refuses before this */
        size_t want = c->cap * 2 < limit ? c->cap * 2 : limit;
        if (grow(c, want) < 0) return -ENOMEM;
    }
    size_t room = c->cap - c->len;
    ssize_t n = conn_recv(c, c->buf + c->len, room);
    if (n > 0) {
        if (!c->head_start_ms) c->head_start_ms = cshs__now_ms();
        c->len += (size_t)n;
        atomic_fetch_add(&s->c_bytes_in, (uint64_t)n);
        *filled = (size_t)n == room;
        return n;
    }
    if (n < 0 && n != -EAGAIN) atomic_fetch_add(&s->e_io, 1);
    return n;
}

/* The handler as the context runs it: the application's, and the status
 * kept for the access log. */
static void trampoline(cshw_context *ctx)
{
    cshs_worker *w = tls_worker;
    cshs_server *s = w->srv;
    if (s->handler)
        s->handler(ctx);
    else
        cshw_router_dispatch(s->router, ctx);
    cshw_response *res = cshw_context_response(ctx);
    /* a graceful stop began: tell the client this connection ends here */
    if (atomic_load(&s->stopping)) cshw_response_close_connection(res);
    w->conn->status = cshw_response_status(res);
}

static const char *header_copy(const cshs_conn *c, const char *name, char *out, size_t cap)
{
    const csh_message *m = &c->rd->p.msg;
    for (size_t i = 0; i < m->num_headers; i++) {
        csh_span n = m->headers[i].name;
        if (n.len == strlen(name) && strncasecmp(c->buf + n.off, name, n.len) == 0) {
            csh_span v = m->headers[i].value;
            size_t l = v.len < cap - 1 ? v.len : cap - 1;
            memcpy(out, c->buf + v.off, l);
            out[l] = '\0';
            return out;
        }
    }
    return NULL;
}

static void log_request(cshs_worker *w, cshs_conn *c, int64_t unix_ms)
{
    cshs_server *s = w->srv;
    const csh_message *m = &c->rd->p.msg;
    char method[32], target[2048], ref[512], ua[512];
    size_t l = m->method_span.len < sizeof method - 1 ? m->method_span.len : sizeof method - 1;
    memcpy(method, c->buf + m->method_span.off, l);
    method[l] = '\0';
    l = m->target.len < sizeof target - 1 ? m->target.len : sizeof target - 1;
    memcpy(target, c->buf + m->target.off, l);
    target[l] = '\0';
    cshs_request_log e;
    e.remote_addr = c->remote;
    e.method = method;
    e.target = target;
    e.version_minor = m->version_minor;
    e.status = c->status;
    if (!e.status && (m->flags & CSH_MSG_EXPECT_OTHER)) e.status = 417;
    if (!e.status && (m->flags & CSH_MSG_TE_OTHER_CODINGS)) e.status = 501;
    e.bytes_out = c->req_out;
    e.referer = header_copy(c, "Referer", ref, sizeof ref);
    e.user_agent = header_copy(c, "User-Agent", ua, sizeof ua);
    e.time_unix_ms = unix_ms;
    s->log_fn(s->log_user, &e);
}

/* One parsed request: the context's begin, run, end. 1 when the connection
 * may carry another request, else 0 or negative. */
static int serve_request(cshs_worker *w, cshs_conn *c)
{
    cshs_server *s = w->srv;
    const csh_message *m = &c->rd->p.msg;
    /* room after the head for body reads, made before begin: the head may
     * not move while the request lives */
    if (c->cap - m->head_length < 4096 && grow(c, m->head_length + s->o.read_buffer) < 0)
        return -ENOMEM;
    c->pos = c->body_base = m->head_length;
    c->body_start_ms = c->last_read_ms = cshs__now_ms();
    c->body_bytes = c->len - m->head_length;
    c->req_out = 0;
    c->status = 0;
    c->body_consumed = 0;
    c->body_limit = m->body == CSH_BODY_LENGTH ? m->content_length
                    : m->body == CSH_BODY_NONE ? 0
                                               : UINT64_MAX;
    int64_t unix_ms = 0;
    if (s->log_fn) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        unix_ms = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
    }
    cshw_transport t = {c->ssl ? &tls_ops : &socket_ops, c, c->ssl != NULL, c->remote,
                        c->remote_port};
    int r = cshw_context_begin(w->ctx, c->buf, m, &t);
    if (r < 0) return r;
    w->conn = c;
    tls_worker = w;
    atomic_fetch_add(&s->c_requests, 1);
    r = cshw_context_run(w->ctx, trampoline);
    w->conn = NULL;
    c->served++;
    if (s->log_fn) log_request(w, c, unix_ms);
    return r;
}

/* Back to epoll: the one-shot registration is re-armed (a level-triggered
 * one-shot fires again at once if bytes came meanwhile), so no read is
 * spent to see EAGAIN. Nothing may touch c after the re-arm. */
static void go_idle(cshs_conn *c)
{
    cshs_server *s = c->srv;
    int64_t now = cshs__now_ms();
    int64_t deadline = 0;
    int kind = EXP_NONE;
    uint64_t held = 0;
    if (c->tls_state == TLS_HANDSHAKE) {
        release_buffers(c);
        if (s->o.tls_handshake_timeout_ms) {
            deadline = c->accept_ms + (int64_t)s->o.tls_handshake_timeout_ms;
            kind = EXP_TLS;
        }
    } else if (c->len == 0) {
        release_buffers(c);
        c->head_start_ms = 0;
        if (c->served == 0 && s->o.header_timeout_ms) {
            deadline = now + (int64_t)s->o.header_timeout_ms;
            kind = EXP_HEAD;
        } else if (c->served && s->o.keepalive_timeout_ms) {
            deadline = now + (int64_t)s->o.keepalive_timeout_ms;
            kind = EXP_IDLE;
        }
    } else {
        /* a head in progress keeps its deadline from its first byte */
        if (s->o.header_timeout_ms) {
            int64_t start = c->head_start_ms ? c->head_start_ms : now;
            deadline = start + (int64_t)s->o.header_timeout_ms;
            kind = EXP_HEAD;
        }
        held = cshs__conn_idle_held(c);
    }
    atomic_store(&c->deadline_ms, deadline);
    atomic_store(&c->expire_kind, kind);
    atomic_fetch_add(&s->c_idle_buffers, held);
    atomic_fetch_sub(&s->c_active, 1);
    atomic_fetch_add(&s->c_idle, 1);
    atomic_store(&c->state, CONN_IDLE);
    struct epoll_event ev;
    ev.events = EPOLLIN | EPOLLRDHUP | EPOLLONESHOT;
    ev.data.ptr = c;
    int fd = c->fd;
    TSAN_LOCK(fd);
    epoll_ctl(s->epfd, EPOLL_CTL_MOD, fd, &ev);
    TSAN_UNLOCK(fd);
}

void cshs__conn_rearm(cshs_conn *c)
{
    struct epoll_event ev;
    ev.events = EPOLLIN | EPOLLRDHUP | EPOLLONESHOT;
    ev.data.ptr = c;
    int fd = c->fd;
    TSAN_LOCK(fd);
    epoll_ctl(c->srv->epfd, EPOLL_CTL_MOD, fd, &ev);
    TSAN_UNLOCK(fd);
}

/* What an idle connection holds besides its struct: a head in progress. */
uint64_t cshs__conn_idle_held(const cshs_conn *c)
{
    return c->len ? c->cap + sizeof *c->rd + c->srv->o.limits.max_fields * sizeof(csh_header) : 0;
}

void cshs__conn_event(cshs_worker *w, cshs_conn *c)
{
    cshs_server *s = w->srv;
    tls_worker = w;
    TSAN_LOCK(c->fd);
    TSAN_UNLOCK(c->fd);
    int expected = CONN_IDLE;
    if (!atomic_compare_exchange_strong(&c->state, &expected, CONN_BUSY)) {
        /* the sweep (or a stop) shut it down while idle */
        atomic_fetch_sub(&s->c_idle, 1);
        atomic_fetch_sub(&s->c_idle_buffers, cshs__conn_idle_held(c));
        cshs__conn_close(c);
        return;
    }
    atomic_fetch_sub(&s->c_idle, 1);
    atomic_fetch_add(&s->c_active, 1);
    atomic_fetch_sub(&s->c_idle_buffers, cshs__conn_idle_held(c));

    while (c->tls_state == TLS_HANDSHAKE) {
        int r = cshs__tls_handshake(c);
        if (r == 1) break;
        if (r == -EAGAIN) {
            go_idle(c);
            return;
        }
        /* the handshake's own bytes do not fit in the socket buffer: wait
         * for room as a response write would */
        if (r == -EINPROGRESS) {
            c->tls_wait = POLLOUT;
            if (wait_send(c) == 0) continue;
        }
        atomic_fetch_add(&s->e_tls, 1);
        goto out;
    }

    int read_once = 0, filled = 0;
    for (;;) {
        if (ensure_reader(c) < 0) break;
        int pr = CSH_INCOMPLETE;
        if (c->len) pr = csh_parser_execute(&c->rd->p, c->buf, c->len);
        if (pr == CSH_INCOMPLETE) {
            if (read_once && !filled && !cshs__tls_pending(c)) {
                go_idle(c);
                return;
            }
            ssize_t n = read_head(c, &filled);
            if (n == -EAGAIN) {
                go_idle(c);
                return;
            }
            if (n <= 0) break; /* closed (perhaps inside a head: nothing to answer) */
            read_once = 1;
            continue;
        }
        if (pr < 0) {
            atomic_fetch_add(&s->e_parse, 1);
            write_parse_error(c, csh_error_status(pr));
            if (!c->ssl) {
                /* a lingering close, briefly: what the client already sent
                 * is read so that close sends a FIN, not a reset that
                 * could destroy the answer before the client reads it */
                shutdown(c->fd, SHUT_WR);
                char sink[4096];
                size_t drained = 0;
                ssize_t n;
                while (drained < (256u << 10) &&
                       (n = recv(c->fd, sink, sizeof sink, MSG_DONTWAIT)) > 0)
                    drained += (size_t)n;
            }
            break;
        }
        int r = serve_request(w, c);
        if (r <= 0 || atomic_load(&s->stopping)) break;
        /* what the request left (a pipelined head) moves to the front */
        size_t left = c->len - c->pos;
        if (left) memmove(c->buf, c->buf + c->pos, left);
        c->len = left;
        c->pos = 0;
        c->head_start_ms = left ? cshs__now_ms() : 0;
        csh_parser_reset(&c->rd->p);
        if (!left && !cshs__tls_pending(c)) {
            go_idle(c);
            return;
        }
        read_once = 0;
        filled = 0;
    }
out:
    atomic_fetch_sub(&s->c_active, 1);
    cshs__conn_close(c);
}
