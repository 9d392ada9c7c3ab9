/* One connection's life, driven by its loop's events without ever waiting
 * on the network, except inside a handler that streams its body or
 * writes beyond the high-water mark:
 *
 *   accept ─> [TLS handshake] ─> READ <──────────────────────────────┐
 *                                 │  head and body read into the      │
 *                                 │  exchange as they arrive          │
 *                                 │  (cshw_exchange_input); parked    │
 *                                 │  when the socket says EAGAIN      │
 *                                 ▼                                   │
 *                  run the handler (cshw_exchange_run): inline on the │
 *                  loop's thread, or as a job on another thread while │
 *                  handlers wait (busy: the loop leaves it alone); a  │
 *                  deferred one (cshs_defer) stays busy, no thread    │
 *                  held, until its continuation runs                  │
 *                                 │  output the socket does not take  │
 *                                 │  is queued (bytes, file ranges)   │
 *                                 ▼                                   │
 *                               WRITE ──(writable)──> sent ───────────┘
 *                                 │                    or
 *                                 ▼
 *                               LINGER: our side shut down, what the
 *                               client still sends read and discarded
 *                               (bounded), then closed
 *
 * The socket is registered once, edge-triggered, for both directions: an
 * event says only "something changed", and whoever serves it reads and
 * writes until the socket says EAGAIN (or posts the connection to go on
 * after the batch). Every HTTP byte comes from the toolkit's exchange
 * (libcshttp-web): this file owns the socket, the queue of what is left
 * to send, the deadlines and the lingering close. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <cshttp/web/error.h>
#include <cshttp/web/response.h>

#include "server_impl.h"
#include "sock_io.h"

#define STREAM_BUF 16384u     /* a streaming route's read buffer */
#define TLS_FILE_CHUNK 16384u /* a file sent over TLS is read this much at a time */
#define OUT_MIN 4096u         /* the smallest output block */
#define DRIVE_TURNS 32        /* exchanges in a row before others go first */
#define SPARE_LATER_MAX 64    /* cshs_later a worker keeps for handlers that defer */
#define SPARE_X_MAX 64        /* exchanges a worker keeps (one a request in flight) */

/* The connection whose handler runs inline on this thread, and the
 * worker running it: what cshs_defer finds. */
static _Thread_local cshs_conn *running_conn;
static _Thread_local cshs_worker *running_worker;
/* The connection whose handler runs as a job on this thread (what
 * cshs_upgrade finds there; cshs_defer does not). */
static _Thread_local cshs_conn *job_conn;

cshs_conn *cshs__handler_conn(void)
{
    return running_conn ? running_conn : job_conn;
}

/* ---- the plain stream (server_impl.h, cshs_stream_ops) ---- */

static ssize_t plain_read(cshs_conn *c, void *buf, size_t len)
{
    c->tls_wait = POLLIN;
    for (;;) {
        ssize_t n = cshs__recv(c->fd, buf, len, 0);
        if (n >= 0) return n;
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) return -EAGAIN;
        return -errno;
    }
}

/* Writes set tls_wait only when they have to wait: after one that went,
 * it still says what the last read waits for (park_input asks). */
static ssize_t plain_write(cshs_conn *c, const void *buf, size_t len)
{
    for (;;) {
        ssize_t n = cshs__send(c->fd, buf, len, MSG_NOSIGNAL);
        if (n >= 0) return n;
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
            c->tls_wait = POLLOUT;
            return -EAGAIN;
        }
        return -errno;
    }
}

static ssize_t plain_sendfile(cshs_conn *c, int fd, off_t *off, size_t len)
{
    for (;;) {
        ssize_t n = sendfile(c->fd, fd, off, len);
        if (n > 0) return n;
        if (n == 0) return -EIO; /* the file is shorter than said */
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
            c->tls_wait = POLLOUT;
            return -EAGAIN;
        }
        return -errno;
    }
}

static int plain_pending(const cshs_conn *c)
{
    (void)c;
    return 0;
}

static void plain_close(cshs_conn *c)
{
    (void)c;
}

const cshs_stream_ops cshs__plain_stream = {plain_read, plain_write, plain_sendfile, plain_pending,
                                            plain_close};

/* Waits for `events` until until_ms (0: no limit), in slices so that a
 * forced stop is noticed. 0 when ready, -ETIMEDOUT, -ECONNABORTED. Only a
 * worker inside a handler waits (a streaming route, or output above the
 * high-water mark). */
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

/* ---- output: sent at once, or queued for the loop ---- */

static void out_pop(cshs_conn *c)
{
    cshs_out *o = c->out;
    c->out = o->next;
    if (!c->out) c->out_tail = NULL;
    if (o->fd >= 0) close(o->fd);
    c->out_bytes -= o->n - o->pos;
    free(o);
}

static void out_clear(cshs_conn *c)
{
    while (c->out) out_pop(c);
}

static void out_append(cshs_conn *c, cshs_out *o)
{
    if (c->out_tail)
        c->out_tail->next = o;
    else
        c->out = o;
    c->out_tail = o;
}

static int out_queue_bytes(cshs_conn *c, const char *p, size_t len)
{
    cshs_out *t = c->out_tail;
    if (t && t->fd < 0 && t->cap - t->n >= len) {
        memcpy(t->data + t->n, p, len);
        t->n += len;
        c->out_bytes += len;
        return 0;
    }
    size_t cap = len < OUT_MIN ? OUT_MIN : len;
    cshs_out *o = malloc(sizeof *o + cap);
    if (!o) return -ENOMEM;
    o->next = NULL;
    o->fd = -1;
    o->off = 0;
    o->left = 0;
    o->pos = 0;
    o->n = len;
    o->cap = cap;
    memcpy(o->data, p, len);
    out_append(c, o);
    c->out_bytes += len;
    return 0;
}

static int out_queue_file(cshs_conn *c, int fd, off_t off, uint64_t len)
{
    struct stat st;
    if (fstat(fd, &st) < 0) return -errno;
    /* the range that follows the last one queued, of the same file (a
     * proxy passing an answer on through its temporary file): that one
     * grows, no descriptor more */
    cshs_out *t = c->out_tail;
    if (t && t->fd >= 0 && t->dev == st.st_dev && t->ino == st.st_ino &&
        t->off + (off_t)t->left == off) {
        t->left += len;
        return 0;
    }
    /* without the stream's sendfile (TLS), the file is read into data */
    size_t cap = c->io->sendfile ? 0 : TLS_FILE_CHUNK;
    cshs_out *o = malloc(sizeof *o + cap);
    if (!o) return -ENOMEM;
    o->fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (o->fd < 0) {
        int e = -errno;
        free(o);
        return e;
    }
    o->dev = st.st_dev;
    o->ino = st.st_ino;
    o->next = NULL;
    o->off = off;
    o->left = len;
    o->pos = o->n = 0;
    o->cap = cap;
    out_append(c, o);
    return 0;
}

static void sent(cshs_conn *c, size_t n)
{
    atomic_fetch_add_explicit(&c->loop->k.bytes_out, (uint64_t)n, memory_order_relaxed);
    c->last_io_ms = cshs__now_ms();
}

/* Sends what is queued without waiting: 1 when all of it went, 0 when the
 * socket is full (wait for c->tls_wait), or a negative error. */
static int out_flush(cshs_conn *c)
{
    cshs_out *o;
    while ((o = c->out)) {
        if (o->fd >= 0 && !o->cap) {
            if (o->left == 0) {
                out_pop(c);
                continue;
            }
            size_t want = o->left > (1u << 30) ? (1u << 30) : (size_t)o->left;
            ssize_t n = c->io->sendfile(c, o->fd, &o->off, want);
            if (n > 0) {
                o->left -= (uint64_t)n;
                sent(c, (size_t)n);
                continue;
            }
            return n == -EAGAIN ? 0 : (int)n;
        }
        if (o->pos == o->n) {
            if (o->fd < 0 || o->left == 0) {
                out_pop(c);
                continue;
            }
            /* a file the stream cannot send itself (TLS): the next piece
             * of it, read into memory and written */
            size_t want = o->left < o->cap ? (size_t)o->left : o->cap;
            ssize_t n = pread(o->fd, o->data, want, o->off);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) return n < 0 ? -errno : -EIO;
            o->off += n;
            o->left -= (uint64_t)n;
            o->pos = 0;
            o->n = (size_t)n;
        }
        ssize_t n = c->io->write(c, o->data + o->pos, o->n - o->pos);
        if (n > 0) {
            o->pos += (size_t)n;
            if (o->fd < 0) c->out_bytes -= (size_t)n;
            sent(c, (size_t)n);
            continue;
        }
        if (n == -EAGAIN) return 0;
        return n < 0 ? (int)n : -EPIPE;
    }
    return 1;
}

/* A handler's output above the high-water mark: the worker sends until the
 * queue is under half of it, waiting for the client within send_timeout_ms.
 * This is the one way a slow reader holds a worker: a handler that streams
 * more than write_high_water bytes of its own memory. */
static int out_throttle(cshs_conn *c)
{
    cshs_server *s = c->srv;
    size_t mark = s->o.write_high_water;
    while (c->out_bytes > mark / 2) {
        int r = out_flush(c);
        if (r < 0) return r;
        if (r == 1) break;
        int64_t until = s->o.send_timeout_ms ? c->last_io_ms + (int64_t)s->o.send_timeout_ms : 0;
        r = wait_fd(c, c->tls_wait, until);
        if (r == -ETIMEDOUT) atomic_fetch_add(&s->e_send, 1);
        if (r < 0) return r;
    }
    return 0;
}

/* ---- the transport the exchange uses ---- */

/* Bytes a streaming route's handler read past its body, not yet taken. */
static int stream_left(const cshs_conn *c)
{
    return c->sb && c->sb->pos < c->sb->len;
}

static ssize_t t_read(void *io, void *buf, size_t cap)
{
    cshs_conn *c = io;
    /* a streaming route's handler read past its body: those bytes first */
    if (stream_left(c)) {
        cshs_stream_buf *b = c->sb;
        size_t n = b->len - b->pos < cap ? b->len - b->pos : cap;
        memcpy(buf, b->data + b->pos, n);
        b->pos += n;
        return (ssize_t)n;
    }
    ssize_t n = c->io->read(c, buf, cap);
    if (n > 0) {
        atomic_fetch_add_explicit(&c->loop->k.bytes_in, (uint64_t)n, memory_order_relaxed);
        c->last_io_ms = cshs__now_ms();
    } else if (n == 0) {
        c->eof = 1;
    } else if (n != -EAGAIN) {
        atomic_fetch_add(&c->srv->e_io, 1);
    }
    return n;
}

int cshs__out_write(cshs_conn *c, const void *data, size_t len)
{
    const char *p = data;
    if (!c->out) {
        while (len > 0) {
            ssize_t n = c->io->write(c, p, len);
            if (n > 0) {
                p += n;
                len -= (size_t)n;
                sent(c, (size_t)n);
                continue;
            }
            if (n == -EAGAIN) break;
            atomic_fetch_add(&c->srv->e_io, 1);
            return n < 0 ? (int)n : -EPIPE;
        }
        if (len == 0) return 0;
    }
    return out_queue_bytes(c, p, len);
}

ssize_t cshs__out_try(cshs_conn *c, const void *data, size_t len)
{
    if (c->out) return 0;
    const char *p = data;
    size_t done = 0;
    while (done < len) {
        ssize_t n = c->io->write(c, p + done, len - done);
        if (n > 0) {
            done += (size_t)n;
            sent(c, (size_t)n);
            continue;
        }
        if (n == -EAGAIN) break;
        atomic_fetch_add(&c->srv->e_io, 1);
        return n < 0 ? n : -EPIPE;
    }
    return (ssize_t)done;
}

int cshs__out_flush(cshs_conn *c)
{
    return out_flush(c);
}

/* A deferred request's handler or continuation on its loop's thread:
 * it never waits for its client (it waits for the queue to drain, or its
 * body's next bytes, with the loop: cshs_deferred_on_drain, _on_body). */
static int on_loop_deferred(const cshs_conn *c)
{
    return running_conn == c && c->later;
}

static int t_write(void *io, const void *data, size_t len)
{
    cshs_conn *c = io;
    if (c->later && c->later->wait_error) return c->later->wait_error;
    int r = cshs__out_write(c, data, len);
    if (r < 0) return r;
    if (c->out_bytes > c->srv->o.write_high_water && !on_loop_deferred(c)) return out_throttle(c);
    return 0;
}

static int t_send_file(void *io, int fd, off_t offset, size_t len)
{
    cshs_conn *c = io;
    /* what is queued goes first, as far as the socket takes it now: a
     * client that keeps up gets each range as it comes (a proxy passing a
     * stream on through its temporary file) */
    if (c->out && c->io->sendfile) {
        int f = out_flush(c);
        if (f < 0) return f;
    }
    if (!c->out && c->io->sendfile) {
        while (len > 0) {
            ssize_t n = c->io->sendfile(c, fd, &offset, len);
            if (n > 0) {
                len -= (size_t)n;
                sent(c, (size_t)n);
                continue;
            }
            if (n == -EAGAIN) break;
            if (n != -EIO) atomic_fetch_add(&c->srv->e_io, 1);
            return (int)n;
        }
        if (len == 0) return 0;
    }
    /* the rest goes out from the loop: no worker waits for a slow reader;
     * a stream that reads and writes the file starts at once */
    int r = out_queue_file(c, fd, offset, len);
    if (r == 0 && !c->io->sendfile) {
        r = out_flush(c);
        r = r < 0 ? r : 0;
    }
    return r;
}

/* The minimum body rate, over windows of body_grace_ms (1 s when it is
 * 0), the first of them the grace: each window must bring min_body_rate
 * bytes a second on average. A client that sent much at first and then
 * trickles is cut within two windows, where an average since the body's
 * start would let it trickle for as long as its early bytes last. 0 while
 * the body keeps the rate, *window_end the end of the current window; -1
 * when the window that ended brought too little. A window that ended
 * with enough starts the next one now. */
static int body_rate(cshs_conn *c, int64_t now, int64_t *window_end)
{
    cshs_server *s = c->srv;
    int64_t w = s->o.body_grace_ms ? (int64_t)s->o.body_grace_ms : 1000;
    int64_t start = cshw_exchange_body_start_us(c->x) / 1000;
    uint64_t got = cshw_exchange_body_received(c->x);
    /* this request's body: its first window (a pipelined body may have
     * begun before the last look at the one before it: its count is then
     * below the mark) */
    if (c->rate_mark_ms < start || got < c->rate_mark_bytes) {
        c->rate_mark_ms = start;
        c->rate_mark_bytes = 0;
    }
    if (now >= c->rate_mark_ms + w) {
        uint64_t span = (uint64_t)(now - c->rate_mark_ms);
        if ((got - c->rate_mark_bytes) * 1000u < (uint64_t)s->o.min_body_rate * span) return -1;
        c->rate_mark_ms = now;
        c->rate_mark_bytes = got;
    }
    *window_end = c->rate_mark_ms + w;
    return 0;
}

/* A body's deadline: read_timeout_ms since its last bytes, and the end of
 * the minimum rate's window (body_rate); `now` when the window that ended
 * brought too little; 0 for none. */
static int64_t body_deadline(cshs_conn *c, int64_t now)
{
    cshs_server *s = c->srv;
    int64_t deadline = s->o.read_timeout_ms ? c->last_io_ms + (int64_t)s->o.read_timeout_ms : 0;
    if (s->o.min_body_rate) {
        int64_t end;
        int64_t d = body_rate(c, now, &end) < 0 ? now : end + 1;
        if (!deadline || d < deadline) deadline = d;
    }
    return deadline;
}

/* A streaming route's body: read on demand, waiting within the body
 * deadlines (the minimum rate's windows, read_timeout_ms). */
static int peek(cshs_conn *c, const char **data, size_t *len, int wait)
{
    cshs_server *s = c->srv;
    if (c->later && c->later->wait_error) return c->later->wait_error;
    if (stream_left(c)) {
        *data = c->sb->data + c->sb->pos;
        *len = c->sb->len - c->sb->pos;
        return 0;
    }
    if (!c->sb && !(c->sb = malloc(sizeof *c->sb + STREAM_BUF))) return -ENOMEM;
    cshs_stream_buf *b = c->sb;
    b->pos = b->len = 0;
    for (;;) {
        ssize_t n = c->io->read(c, b->data, STREAM_BUF);
        if (n >= 0) {
            if (n > 0) {
                atomic_fetch_add_explicit(&c->loop->k.bytes_in, (uint64_t)n, memory_order_relaxed);
                c->last_io_ms = cshs__now_ms();
            }
            b->len = (size_t)n;
            *data = b->data;
            *len = (size_t)n;
            return 0;
        }
        if (n != -EAGAIN) {
            atomic_fetch_add(&s->e_io, 1);
            return (int)n;
        }
        if (!wait) return -EAGAIN;
        for (;;) {
            int64_t now = cshs__now_ms();
            int64_t until = now + 200;
            int64_t window_end;
            if (s->o.min_body_rate) {
                if (body_rate(c, now, &window_end) < 0) {
                    atomic_fetch_add(&s->e_body, 1);
                    return -ETIMEDOUT;
                }
                if (window_end < until) until = window_end;
            }
            if (s->o.read_timeout_ms) {
                int64_t rt = c->last_io_ms + (int64_t)s->o.read_timeout_ms;
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

/* On its loop's thread, the read of a handler that reads its body as
 * events (CSHS_STREAM_ON_LOOP) or has deferred never waits: -EAGAIN. Any
 * other waits, even there (a streaming route run on the loop because no
 * thread can ever take it: max_threads equal to loops). */
static int t_peek(void *io, const char **data, size_t *len)
{
    cshs_conn *c = io;
    int nowait =
        running_conn == c && (c->later || cshw_exchange_streams(c->x) == CSHS_STREAM_ON_LOOP);
    return peek(c, data, len, !nowait);
}

static void t_consume(void *io, size_t n)
{
    cshs_stream_buf *b = ((cshs_conn *)io)->sb;
    if (!b) return;
    if (n > b->len - b->pos) n = b->len - b->pos;
    b->pos += n;
}

/* What the loop still has to send for the handler: queued bytes and
 * file ranges (a handler passing a stream on keeps the rest elsewhere
 * rather than wait, cshw_response_queued). */
static uint64_t t_queued(void *io)
{
    const cshs_conn *c = io;
    uint64_t n = 0;
    for (const cshs_out *o = c->out; o; o = o->next)
        n += (o->n - o->pos) + (o->fd >= 0 ? o->left : 0);
    return n;
}

static const cshw_transport_ops socket_ops = {.size = sizeof(cshw_transport_ops),
                                              .peek = t_peek,
                                              .consume = t_consume,
                                              .write = t_write,
                                              .flush = NULL,
                                              .send_file = t_send_file,
                                              .read = t_read,
                                              .queued = t_queued};

static cshw_transport transport_of(cshs_conn *c)
{
    cshw_transport t = {.size = sizeof t,
                        .ops = &socket_ops,
                        .io = c,
                        .remote_addr = c->remote,
                        .is_secure = c->io == &cshs__tls_stream,
                        .remote_port = c->remote_port};
    return t;
}

/* ---- life ---- */

cshs_conn *cshs__conn_new(cshs_server *s, int fd, const struct sockaddr *sa)
{
    cshs_conn *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->tag = TAG_CONN;
    c->fd = fd;
    c->srv = s;
    c->io = &cshs__plain_stream;
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

/* An idle connection with nothing pending gives its exchange back; the
 * worker keeps it for the next request it reads (no malloc per request),
 * up to SPARE_X_MAX: as many as its requests in flight at once, which
 * handlers that defer make more than one (a proxy's 32 clients, 32). Each
 * worker keeps its own: no lock. */
static void release_exchange(cshs_worker *w, cshs_conn *c)
{
    if (!c->x) return;
    if (w && !w->spare_x) w->spare_x = calloc(SPARE_X_MAX, sizeof *w->spare_x);
    if (w && w->spare_x && w->nspare_x < SPARE_X_MAX) {
        cshw_exchange_reset(c->x);
        w->spare_x[w->nspare_x++] = c->x;
    } else {
        cshw_exchange_free(c->x);
    }
    c->x = NULL;
}

void cshs__worker_release(cshs_worker *w)
{
    for (unsigned i = 0; i < w->nspare_x; i++) cshw_exchange_free(w->spare_x[i]);
    free(w->spare_x);
    w->spare_x = NULL;
    w->nspare_x = 0;
    for (unsigned i = 0; i < w->nspare_later; i++) cshs__later_free(w->spare_later[i]);
    free(w->spare_later);
    w->spare_later = NULL;
    w->nspare_later = 0;
    cshs__later_free(w->own);
    w->own = NULL;
}

cshs_later *cshs__later_new(cshs_server *s)
{
    cshs_later *d = calloc(1, sizeof *d);
    if (!d) return NULL;
    if (!(d->ctx = cshw_context_new(s->o.web))) {
        free(d);
        return NULL;
    }
    cshw_context_set_app_data(d->ctx, s->app_data);
    return d;
}

void cshs__later_free(cshs_later *d)
{
    if (!d) return;
    cshw_context_free(d->ctx);
    free(d);
}

/* For a worker whose own went with a deferred request: one it kept, or a
 * new one. NULL when out of memory. */
static cshs_later *later_take(cshs_worker *w, cshs_server *s)
{
    if (w->nspare_later) return w->spare_later[--w->nspare_later];
    return cshs__later_new(s);
}

/* A deferred request's, its request ended: kept for the next one (up to
 * SPARE_LATER_MAX, then freed). Each worker keeps its own: no lock. */
static void later_put(cshs_worker *w, cshs_later *d)
{
    if (!w->spare_later) w->spare_later = calloc(SPARE_LATER_MAX, sizeof *w->spare_later);
    if (w->spare_later && w->nspare_later < SPARE_LATER_MAX)
        w->spare_later[w->nspare_later++] = d;
    else
        cshs__later_free(d);
}

/* A parked connection waits for its socket (counted idle, no thread);
 * unparked, it is being served. */
static void park(cshs_conn *c, int64_t deadline, int kind)
{
    cshs_loop_counters *k = &c->loop->k;
    c->deadline_ms = deadline;
    c->expire_kind = (short)kind;
    if (c->parked) return;
    c->parked = 1;
    atomic_fetch_add_explicit(&k->idle_buffers, cshs__conn_idle_held(c), memory_order_relaxed);
    atomic_fetch_sub_explicit(&k->active, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&k->idle, 1, memory_order_relaxed);
}

static void unpark(cshs_conn *c)
{
    cshs_loop_counters *k = &c->loop->k;
    if (!c->parked) return;
    c->parked = 0;
    atomic_fetch_sub_explicit(&k->idle_buffers, cshs__conn_idle_held(c), memory_order_relaxed);
    atomic_fetch_sub_explicit(&k->idle, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&k->active, 1, memory_order_relaxed);
}

void cshs__park(cshs_conn *c, int64_t deadline, int kind)
{
    park(c, deadline, kind);
}

void cshs__unpark(cshs_conn *c)
{
    unpark(c);
}

static void answer_unavailable(cshw_context *ctx, void *arg)
{
    (void)arg;
    cshw_response_send_error(cshw_context_response(ctx), 503);
}

void cshs__conn_close(cshs_worker *w, cshs_conn *c)
{
    cshs_server *s = c->srv;
    cshs_loop *l = c->loop;
    if (c->parked) {
        atomic_fetch_sub_explicit(&l->k.idle_buffers, cshs__conn_idle_held(c),
                                  memory_order_relaxed);
        atomic_fetch_sub_explicit(&l->k.idle, 1, memory_order_relaxed);
    } else {
        atomic_fetch_sub_explicit(&l->k.active, 1, memory_order_relaxed);
    }
    c->parked = 0;
    /* a tunnel still open: the server stops (a forced stop cuts it) */
    if (c->tunnel) cshs__tunnel_drop(c, atomic_load(&s->forced) ? -ECONNABORTED : -ECANCELED);
    if (c->later) {
        /* a deferred request never resumed (the server's end, past a
         * forced stop): ended with a 503 rather than left active */
        cshw_exchange_resume(c->x, &c->later->t, answer_unavailable, NULL);
        cshs__later_free(c->later);
        c->later = NULL;
    }
    if (c->io) c->io->close(c);
    out_clear(c);
    release_exchange(w, c);
    free(c->sb);
    c->sb = NULL;
    /* the descriptor closes under the lock: a forced stop shuts down the
     * sockets of the list under it, and must not meet a reused number */
    pthread_mutex_lock(&l->mu);
    if (c->prev)
        c->prev->next = c->next;
    else
        l->conns = c->next;
    if (c->next) c->next->prev = c->prev;
    close(c->fd);
    pthread_mutex_unlock(&l->mu);
    c->closed = 1;
    c->link = l->graveyard;
    l->graveyard = c;
    atomic_fetch_sub(&s->c_open, 1);
}

void cshs__conn_free(cshs_conn *c)
{
    free(c);
}

/* Beyond max_connections: the toolkit's 503 page, written without waiting
 * (a new socket's buffer takes it), what the client already sent read so
 * that close sends a FIN rather than a reset that could destroy the
 * answer, and close. */
void cshs__reject(cshs_loop *l, int fd, const struct sockaddr *sa)
{
    cshs_server *s = l->srv;
    cshs_conn c;
    memset(&c, 0, sizeof c);
    c.fd = fd;
    c.srv = s;
    c.loop = l;
    c.io = &cshs__plain_stream;
    if (sa->sa_family == AF_INET || sa->sa_family == AF_INET6) {
        cshs_conn *tmp = cshs__conn_new(s, fd, sa);
        if (tmp) {
            memcpy(c.remote, tmp->remote, sizeof c.remote);
            c.remote_port = tmp->remote_port;
            free(tmp);
        }
    } else {
        strcpy(c.remote, "unix");
    }
    cshw_transport t = transport_of(&c);
    cshw_exchange_refuse(&s->xcfg, &t, 503, "The server has too many connections.");
    out_clear(&c); /* what a full socket did not take is dropped */
    shutdown(fd, SHUT_WR);
    char sink[4096];
    for (int i = 0; i < 16 && cshs__recv(fd, sink, sizeof sink, MSG_DONTWAIT) > 0; i++) {
    }
    close(fd);
    atomic_fetch_add(&s->e_rejected, 1);
}

/* Parked to read: the deadline of where the exchange stands. */
static void park_input(cshs_worker *w, cshs_conn *c)
{
    cshs_server *s = c->srv;
    int64_t now = cshs__now_ms();
    int64_t deadline = 0;
    int kind = EXP_NONE;
    cshw_exchange_phase ph = c->x ? cshw_exchange_phase_of(c->x) : CSHW_PHASE_IDLE;
    if (c->tls_state == TLS_HANDSHAKE) {
        if (s->o.tls_handshake_timeout_ms) {
            deadline = c->accept_ms + (int64_t)s->o.tls_handshake_timeout_ms;
            kind = EXP_TLS;
        }
    } else if (ph == CSHW_PHASE_IDLE) {
        if (c->x && cshw_exchange_buffered(c->x) == 0) release_exchange(w, c);
        /* a streaming route's buffer (16 KiB) is not kept idle */
        if (c->sb && !stream_left(c)) {
            free(c->sb);
            c->sb = NULL;
        }
        if (c->served == 0 && s->o.header_timeout_ms) {
            deadline = c->accept_ms + (int64_t)s->o.header_timeout_ms;
            kind = EXP_HEAD;
        } else if (c->served && s->o.keepalive_timeout_ms) {
            deadline = now + (int64_t)s->o.keepalive_timeout_ms;
            kind = EXP_IDLE;
        }
    } else if (ph == CSHW_PHASE_HEAD) {
        /* a head in progress keeps its deadline from its first byte */
        if (s->o.header_timeout_ms) {
            deadline = cshw_exchange_body_start_us(c->x) / 1000 + (int64_t)s->o.header_timeout_ms;
            kind = EXP_HEAD;
        }
    } else if (ph == CSHW_PHASE_BODY) {
        deadline = body_deadline(c, now);
        kind = EXP_BODY;
    }
    /* TLS may have to write before it reads (a handshake's flight, a
     * read that met a key update) */
    if (c->tls_wait == POLLOUT && cshs__conn_want_out(c) < 0) {
        deadline = now;
        kind = EXP_NOWAIT;
    }
    park(c, deadline, kind);
}

/* Parked until the socket takes more of the queued output. */
static void park_output(cshs_conn *c)
{
    cshs_server *s = c->srv;
    int64_t deadline = s->o.send_timeout_ms ? c->last_io_ms + (int64_t)s->o.send_timeout_ms : 0;
    int kind = EXP_SEND;
    if (cshs__conn_want_out(c) < 0) {
        deadline = cshs__now_ms(); /* no event would come: the next sweep closes it */
        kind = EXP_NOWAIT;
    }
    park(c, deadline, kind);
}

/* What an idle connection holds besides its struct: a head in progress
 * (its exchange) and queued output. */
uint64_t cshs__conn_idle_held(const cshs_conn *c)
{
    uint64_t n = c->out_bytes;
    if (c->x) n += c->srv->o.read_buffer + c->srv->o.limits->max_fields * sizeof(csh_header);
    return n;
}

/* Lingering close (nginx's lingering_close): our side is shut down, and
 * what the client still sends is read and discarded for linger_ms and up
 * to linger_bytes, so that closing does not send a reset that could
 * destroy the answer before the client read it. 1 when it is over. */
static int linger_read(cshs_conn *c)
{
    cshs_server *s = c->srv;
    char sink[4096];
    for (;;) {
        if (c->lingered >= s->o.linger_bytes) return 1;
        ssize_t n = cshs__recv(c->fd, sink, sizeof sink, 0);
        if (n > 0) {
            c->lingered += (uint64_t)n;
            atomic_fetch_add_explicit(&c->loop->k.bytes_in, (uint64_t)n, memory_order_relaxed);
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        return !(n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK));
    }
}

/* Bytes the client sent that nobody read yet (in the socket, or inside
 * OpenSSL). */
static int input_waiting(cshs_conn *c)
{
    int n = 0;
    return c->io->pending(c) || (ioctl(c->fd, FIONREAD, &n) == 0 && n > 0);
}

/* The connection ends after its last answer: at once, or lingering. */
static void finish(cshs_worker *w, cshs_conn *c)
{
    cshs_server *s = c->srv;
    if (!c->linger || s->o.linger_ms == 0 || atomic_load(&s->forced)) {
        cshs__conn_close(w, c);
        return;
    }
    c->io->close(c); /* TLS: close_notify; then the raw socket */
    release_exchange(w, c);
    shutdown(c->fd, SHUT_WR);
    c->phase = CP_LINGER;
    c->lingered = 0;
    if (linger_read(c)) {
        cshs__conn_close(w, c);
        return;
    }
    park(c, cshs__now_ms() + (int64_t)s->o.linger_ms, EXP_LINGER);
}

/* The exchange's answer or the response is queued: the loop sends it, then
 * goes on (more requests) or ends the connection. */
static void after_output(cshs_conn *c, int close_after)
{
    c->close_after_write = (char)close_after;
    c->phase = CP_WRITE;
    park_output(c);
}

void cshs__conn_end(cshs_worker *w, cshs_conn *c, int flush)
{
    c->linger = 0;
    if (flush && c->out) {
        int f = out_flush(c);
        if (f == 0) {
            after_output(c, 1);
            return;
        }
    }
    out_clear(c);
    finish(w, c);
}

/* What follows an exchange: its handler ran (ran = 1, r from
 * cshw_exchange_run) or it ended without one (r from cshw_exchange_input:
 * an answer of its own, or the end of input). 1 to read on; 0 when the
 * connection left (parked for its output, lingering or closed). */
static int after_exchange(cshs_worker *w, cshs_conn *c, int r, int ran)
{
    cshs_server *s = c->srv;
    if (r == CSHW_EXCHANGE_SWITCHED && c->tunnel) {
        /* the connection's bytes are the tunnel's from here on */
        cshs__tunnel_start(w, c);
        return 0;
    }
    /* a tunnel whose request ended as HTTP after all (Connection: close,
     * a stop) is told so, never opened */
    if (c->tunnel) cshs__tunnel_drop(c, -ECANCELED);
    if (r == CSHW_EXCHANGE_SWITCHED) r = CSHW_EXCHANGE_CLOSE; /* no tunnel to take it */
    if (ran) {
        c->served = 1;
        /* a close after an error answer, or with input the client still
         * sends, lingers; a plain "Connection: close" does not */
        if (r != CSHW_EXCHANGE_NEXT)
            c->linger = !c->eof && (c->last_status >= 400 || cshw_exchange_buffered(c->x) > 0 ||
                                    input_waiting(c));
    } else {
        /* the exchange answered (an error: the client may still be
         * sending what it refused), or the input ended */
        c->linger = !c->eof;
    }
    int more = r == CSHW_EXCHANGE_NEXT && !atomic_load(&s->stopping);
    if (r < 0 && r != -ENOMEM) c->linger = 0; /* the socket failed */
    if (c->out) {
        int f = out_flush(c);
        if (f == 0) {
            after_output(c, !more);
            return 0;
        }
        if (f < 0) {
            out_clear(c);
            more = 0;
            c->linger = 0;
        }
    }
    if (!more) {
        finish(w, c);
        return 0;
    }
    return 1;
}

/* Goes on after the batch: it had its turns, others go first (or its
 * deferred handler's continuation is due). */
void cshs__conn_post(cshs_conn *c)
{
    cshs_loop *l = c->loop;
    if (c->posted) return;
    c->posted = 1;
    c->post_next = NULL;
    if (l->posted)
        l->posted_tail->post_next = c;
    else
        l->posted = c;
    l->posted_tail = c;
    atomic_fetch_add_explicit(&l->nposted, 1, memory_order_relaxed);
}

/* A deferred request's continuation is due (both its handler's return
 * and its resume came): on a job thread when it may wait
 * (cshs_deferred_run), else on the loop's thread, after the batch when
 * this is the loop's owner (`owner`), or given back to the loop. */
static void continuation_run(cshs_conn *c, int owner)
{
    c->resume = RESUME_DEFERRED;
    /* a continuation is never declined: its handler ran, and the queue
     * holds at most a connection's worth of them each */
    if (c->later->job && cshs__offload(c->srv, c, 0) != OFFLOAD_NONE) return;
    c->later->job = 0; /* no thread can take it: the loop runs it */
    if (owner)
        cshs__conn_post(c);
    else
        cshs__give_back(c);
}

/* The continuation is due: it runs, unless the loop is telling the
 * request that its client left (cshs__conn_client_left), which runs it
 * after. */
static void continuation_due(cshs_conn *c, int owner)
{
    char st = atomic_load(&c->waits);
    for (;;) {
        char next = st == WAITS_ABORTING ? WAITS_DUE : WAITS_NONE;
        if (atomic_compare_exchange_weak(&c->waits, &st, next)) {
            if (next == WAITS_DUE) return;
            break;
        }
    }
    continuation_run(c, owner);
}

static void nothing_more(cshw_context *ctx, void *arg);

/* ---- a deferred request waiting for its own client (CP_WAIT) ----
 *
 * cshs_deferred_on_drain and _on_body, called instead of a resume, leave
 * the request to the loop once its handler returns: the connection is
 * no longer busy, its events are served here (the queue sent, the
 * socket's input looked at), parked with a deadline (send_timeout_ms,
 * read_timeout_ms), and the continuation is posted when what it waits
 * for is there, or the wait failed (its error then fails the
 * continuation's writes and reads). */

static void wait_end(cshs_conn *c, int err)
{
    cshs_later *d = c->later;
    unpark(c);
    if (err && d->wait_for == WAIT_DRAIN) out_clear(c);
    d->wait_for = WAIT_NONE;
    if (err) d->wait_error = err;
    c->phase = CP_READ;
    atomic_store(&c->busy, 1);
    atomic_store(&d->pending, 0);
    c->resume = RESUME_DEFERRED;
    cshs__conn_post(c);
}

/* 1 when the wait is over (the continuation posted). */
static int wait_over(cshs_conn *c)
{
    cshs_later *d = c->later;
    int err = 0, ready;
    if (d->wait_for == WAIT_DRAIN) {
        int f = out_flush(c);
        err = f < 0 ? f : 0;
        ready = err || t_queued(c) <= c->srv->o.write_high_water / 2;
    } else {
        /* the next bytes, read into the stream buffer the handler's
         * reads take first; the end or an error is news too */
        const char *p;
        size_t n;
        int r = peek(c, &p, &n, 0);
        ready = r != -EAGAIN;
        err = r < 0 && r != -EAGAIN ? r : 0;
    }
    if (!ready) return 0;
    wait_end(c, err);
    return 1;
}

static void wait_park(cshs_conn *c)
{
    cshs_server *s = c->srv;
    int drain = c->later->wait_for == WAIT_DRAIN;
    unsigned ms = drain ? s->o.send_timeout_ms : s->o.read_timeout_ms;
    int64_t deadline = ms ? c->last_io_ms + (int64_t)ms : 0;
    int kind = EXP_WAIT;
    if ((drain || c->tls_wait == POLLOUT) && cshs__conn_want_out(c) < 0) {
        deadline = cshs__now_ms();
        kind = EXP_NOWAIT;
    }
    park(c, deadline, kind);
}

static void wait_begin(cshs_worker *w, cshs_conn *c)
{
    (void)w;
    c->phase = CP_WAIT;
    atomic_store(&c->waits, WAITS_NONE);
    c->last_io_ms = cshs__now_ms();
    if (wait_over(c)) return;
    /* the loop's owner (this thread) serves its events from here on: an
     * event that came meanwhile is still in the epoll set's queue */
    atomic_store(&c->busy, 0);
    wait_park(c);
}

static void wait_for(cshs_deferred *d, int what, void (*fn)(cshw_context *ctx, void *arg),
                     void *arg)
{
    cshs_conn *c = (cshs_conn *)d;
    if (!c) return;
    cshs_later *l = c->later;
    l->fn = fn ? fn : nothing_more;
    l->arg = arg;
    l->job = 0;
    l->wait_for = (char)what;
}

void cshs_deferred_on_drain(cshs_deferred *d, void (*fn)(cshw_context *ctx, void *arg), void *arg)
{
    wait_for(d, WAIT_DRAIN, fn, arg);
}

void cshs_deferred_on_body(cshs_deferred *d, void (*fn)(cshw_context *ctx, void *arg), void *arg)
{
    wait_for(d, WAIT_BODY, fn, arg);
}

/* What follows a handler (or a continuation) run by a loop's thread:
 * r from cshw_exchange_run or _resume; `owner`: the thread still owns
 * the loop (not handed over meanwhile). 1 when the caller goes on with
 * the connection (after_exchange); 0 when it left this thread: deferred
 * (it waits for its resume, busy), or given back to the loop. */
static int after_handler(cshs_worker *w, cshs_conn *c, int r, int owner)
{
    if (!owner) w->lost = 1; /* the loop was handed over: this thread leaves it */
    if (r == CSHW_EXCHANGE_DEFERRED && c->later->wait_for) {
        /* it waits for its own client: the loop's to watch */
        if (owner) {
            wait_begin(w, c);
        } else {
            c->resume = RESUME_WAIT;
            cshs__give_back(c);
        }
        return 0;
    }
    if (r == CSHW_EXCHANGE_DEFERRED) {
        /* the handler returned; when its resume came first, the
         * continuation is due */
        atomic_store(&c->waits, WAITS_FREE);
        if (atomic_fetch_sub(&c->later->pending, 1) == 1) continuation_due(c, owner);
        return 0;
    }
    if (c->later) { /* the deferred request ended: its context is kept */
        later_put(w, c->later);
        c->later = NULL;
    }
    if (!owner) {
        /* this handler held the loop past grow_after_us with events
         * waiting (the supervisor decided whether the loop's next handlers
         * run elsewhere): the connection goes back to the loop */
        c->after_run = r;
        cshs__give_back(c);
        return 0;
    }
    atomic_store_explicit(&c->busy, 0, memory_order_relaxed);
    return 1;
}

/* Runs a ready request's handler on the loop's thread. 0 when the
 * connection left this thread (after_handler). The transport lives in the
 * worker's cshs_later, which a deferring handler takes along: the
 * exchange writes through it later. */
static int run_inline(cshs_worker *w, cshs_conn *c, int *r)
{
    cshs_loop *l = c->loop;
    cshs_later *own = w->own;
    /* busy first: a thread that takes the loop over leaves c alone */
    atomic_store_explicit(&c->busy, 1, memory_order_relaxed);
    int64_t start = cshs__handler_begin(l);
    own->t = transport_of(c);
    running_conn = c;
    running_worker = w;
    *r = cshw_exchange_run(c->x, own->ctx, &own->t);
    running_conn = NULL;
    return after_handler(w, c, *r, cshs__handler_end(l, start));
}

static void drive(cshs_worker *w, cshs_conn *c);

void cshs__conn_continue(cshs_worker *w, cshs_conn *c)
{
    cshs_loop *l = c->loop;
    c->resume = RESUME_AFTER_RUN;
    /* events the loop noted while the request waited (busy 2; 0: given
     * back, unknown): the next input reads rather than trusting an
     * earlier short read */
    if (atomic_exchange(&c->busy, 1) != 1) cshw_exchange_recheck(c->x);
    int64_t start = cshs__handler_begin(l);
    cshs_later *d = c->later;
    d->t = transport_of(c);
    running_conn = c;
    running_worker = w;
    int r = cshw_exchange_resume(c->x, &d->t, d->fn, d->arg);
    running_conn = NULL;
    if (after_handler(w, c, r, cshs__handler_end(l, start)) && after_exchange(w, c, r, 1))
        drive(w, c);
}

cshs_deferred *cshs_defer(cshw_context *ctx)
{
    cshs_conn *c = running_conn;
    cshs_worker *w = running_worker;
    /* only a handler run inline (not a job), once per run */
    if (!c || !ctx || (c->later && atomic_load(&c->later->pending) != 0)) return NULL;
    if (!c->later || ctx != c->later->ctx) {
        if (ctx != w->own->ctx) return NULL;
        /* the context (and the transport the exchange holds) goes with
         * the request; the worker takes another */
        cshs_later *spare = later_take(w, c->srv);
        if (!spare) return NULL;
        if (cshw_exchange_defer(c->x) < 0) {
            later_put(w, spare);
            return NULL;
        }
        c->later = w->own;
        c->later->wait_error = 0;
        w->own = spare;
    } else if (cshw_exchange_defer(c->x) < 0) {
        return NULL;
    }
    c->later->fn = NULL;
    c->later->abort_fn = NULL;
    c->later->wait_for = WAIT_NONE;
    atomic_store(&c->later->pending, 2);
    atomic_fetch_add_explicit(&c->srv->c_deferred, 1, memory_order_relaxed);
    return (cshs_deferred *)c;
}

cshs_reactor *cshs_deferred_reactor(cshs_deferred *d)
{
    return d ? (cshs_reactor *)((cshs_conn *)d)->loop : NULL;
}

/* The continuation of a resume given none: the request ends with what its
 * handler wrote. */
static void nothing_more(cshw_context *ctx, void *arg)
{
    (void)ctx;
    (void)arg;
}

static void resume(cshs_conn *c, void (*fn)(cshw_context *ctx, void *arg), void *arg, int job)
{
    if (!c) return;
    cshs_later *d = c->later;
    d->fn = fn ? fn : nothing_more;
    d->arg = arg;
    d->job = (char)job;
    /* the handler has not returned yet: after_handler sees it due. Else,
     * on the loop's thread between handlers (a watch's ready), it runs
     * after the batch with no wake-up; from anywhere else it is given
     * back */
    if (atomic_fetch_sub(&d->pending, 1) == 1)
        continuation_due(c, !running_conn && cshs__self_loop() == c->loop);
}

void cshs_deferred_on_abort(cshs_deferred *d, void (*fn)(void *arg), void *arg)
{
    cshs_conn *c = (cshs_conn *)d;
    if (!c) return;
    c->later->abort_fn = fn;
    c->later->abort_arg = arg;
}

void cshs__conn_client_left(cshs_conn *c)
{
    /* only a request that waits, its handler returned: taken, it cannot
     * go on beside the callback (continuation_due leaves it to us) */
    char st = WAITS_FREE;
    if (!atomic_compare_exchange_strong(&c->waits, &st, WAITS_ABORTING)) return;
    cshs_later *d = c->later;
    void (*fn)(void *) = d->abort_fn;
    d->abort_fn = NULL;
    /* not once resumed: what it waited for is over */
    if (fn && atomic_load(&d->pending) == 1) fn(d->abort_arg);
    if (atomic_exchange(&c->waits, WAITS_NONE) == WAITS_DUE) continuation_run(c, 1);
}

void cshs_deferred_resume(cshs_deferred *d, void (*fn)(cshw_context *ctx, void *arg), void *arg)
{
    resume((cshs_conn *)d, fn, arg, 0);
}

void cshs_deferred_run(cshs_deferred *d, void (*fn)(cshw_context *ctx, void *arg), void *arg)
{
    resume((cshs_conn *)d, fn, arg, 1);
}

/* Whether the ready request's handler runs on the loop's thread: yes,
 * unless the loop's handlers lately blocked (offload_ms) or handlers wait
 * for a thread; then only when the application says it never waits
 * (cshs_server_set_quick), so static files and answers from memory go on
 * while slow handlers queue. */
static int runs_on_loop(cshs_conn *c)
{
    cshs_server *s = c->srv;
    int64_t until = atomic_load_explicit(&c->loop->offload_until_ms, memory_order_relaxed);
    if (atomic_load_explicit(&s->c_waiting, memory_order_relaxed) == 0 &&
        !(until && cshs__now_ms() < until))
        return 1;
    const char *head;
    const csh_message *msg = s->quick_fn ? cshw_exchange_request(c->x, &head) : NULL;
    return msg && s->quick_fn(s->quick_arg, head, msg);
}

/* Reads, runs and answers requests until the socket says EAGAIN, the
 * output has to wait for the client, the handler goes to another thread,
 * or the connection ends. */
static void drive(cshs_worker *w, cshs_conn *c)
{
    cshs_server *s = c->srv;
    int rechecked = 0;
    for (int turn = 0;; turn++) {
        if (turn == DRIVE_TURNS) {
            cshs__conn_post(c);
            return;
        }
        if (!c->x) {
            if (w->nspare_x) {
                c->x = w->spare_x[--w->nspare_x];
            } else if (!(c->x = cshw_exchange_new(&s->xcfg))) {
                cshs__conn_close(w, c);
                return;
            }
        }
        cshw_transport t = transport_of(c);
        int r = cshw_exchange_input(c->x, &t);
        if (r == CSHW_EXCHANGE_WANT_INPUT) {
            /* bytes OpenSSL already decrypted count as buffered, and so do
             * those a streaming route's handler read past its body: the
             * socket would not say they are there */
            if (c->io->pending(c) || stream_left(c)) continue;
            /* a short read does not say the input ended after it: when an
             * event said so, the next read meets the end (nginx's
             * pending_eof); edge-triggered, no event would come again */
            if (c->rdhup && !rechecked) {
                rechecked = 1;
                cshw_exchange_recheck(c->x);
                continue;
            }
            park_input(w, c);
            return;
        }
        int ran = 0;
        if (r == CSHW_EXCHANGE_READY) {
            /* a handler that reads its body from the network, or one that
             * may block while the loop's handlers lately took long or
             * handlers wait for a thread, runs elsewhere; when even the
             * queue is full, it is answered 503 without running */
            int how = OFFLOAD_NONE;
            int streams = cshw_exchange_streams(c->x);
            /* one that reads its body as events on the loop never waits */
            if (streams != CSHS_STREAM_ON_LOOP && (streams || !runs_on_loop(c)))
                how = cshs__offload(s, c, 1);
            if (how == OFFLOAD_RUNS || how == OFFLOAD_WAITS) return;
            if (how == OFFLOAD_FULL) {
                atomic_fetch_add(&s->c_declined, 1);
                r = cshw_exchange_decline(c->x, &t, CSHW_E_OVERLOADED);
            } else {
                if (!run_inline(w, c, &r)) return;
                ran = 1;
            }
        }
        if (!after_exchange(w, c, r, ran)) return;
    }
}

/* Times this thread gave up its CPU to wait (blocked in a system call). */
static long voluntary_switches(void)
{
    struct rusage ru;
    return getrusage(RUSAGE_THREAD, &ru) == 0 ? ru.ru_nvcsw : 0;
}

/* Whether a job's handler blocked is asked of the kernel (getrusage before
 * and after, about 1 µs each here: a third of a blocking application's
 * system calls per request) for the first of a run of handlers that
 * block, and then for one in BLOCKED_RECHECK_EVERY. In between, a handler
 * that took a quarter of grow_after_us or more is taken to have blocked as
 * the checked one did: a run of handlers that stop blocking but take long
 * (computing, or preempted on a machine short of cores) is found out at
 * the next check, BLOCKED_RECHECK_EVERY requests later at most. */
#define BLOCKED_RECHECK_EVERY 16

typedef struct job_clock {
    int check;    /* this handler's blocking is asked of the kernel */
    long waits;   /* voluntary_switches() before it, when check */
    int64_t t0us; /* when it started, when not check */
} job_clock;

static void job_clock_start(const cshs_worker *w, job_clock *jc)
{
    jc->check = w->blocked_run % BLOCKED_RECHECK_EVERY == 0;
    if (jc->check)
        jc->waits = voluntary_switches();
    else
        jc->t0us = cshs__now_us();
}

/* 1 when the handler timed by jc blocked (or, between checks, took long
 * after handlers that blocked). */
static int job_clock_blocked(cshs_worker *w, const job_clock *jc)
{
    int blocked;
    if (jc->check)
        blocked = voluntary_switches() != jc->waits;
    else
        blocked = cshs__now_us() - jc->t0us >= (int64_t)w->srv->o.grow_after_us / 4;
    w->blocked_run = blocked ? w->blocked_run + 1 : 0;
    return blocked;
}

/* The loop's handlers run on other threads a while (offload_ms): a job's
 * handler waited, or the loop was handed over for a blocked one. */
void cshs__offload_more(cshs_loop *l)
{
    cshs_server *s = l->srv;
    if (s->o.offload_ms)
        atomic_store_explicit(&l->offload_until_ms, cshs__now_ms() + (int64_t)s->o.offload_ms,
                              memory_order_relaxed);
}

/* After a job's handler that blocked, its thread waits a little for the
 * connection's next request (next_request_wait_us), as a thread per
 * connection would: a client that sends it at once is served with no trip
 * through the loop and no other thread woken (W2: a loop's wake-up, its
 * read and a spare's wake-up less per request). Meanwhile the connection's
 * registration asks for no input, so the loop is not woken for what this
 * thread reads (one EPOLL_CTL_MOD while the thread keeps the connection,
 * and one when it gives it back: give_back_input). 1 when input came: an
 * event the loop noted before (busy 2) is this thread's to read, and the
 * next read trusts no earlier short one. */
static int wait_next_request(cshs_conn *c)
{
    cshs_server *s = c->srv;
    uint64_t us = s->o.next_request_wait_us;
    if (!us || atomic_load(&s->stopping)) return 0;
    cshs__conn_input_events(c, 0);
    struct pollfd p = {c->fd, POLLIN | POLLRDHUP, 0};
    struct timespec ts = {(time_t)(us / 1000000), (long)(us % 1000000) * 1000L};
    int r;
    do r = ppoll(&p, 1, &ts, NULL);
    while (r < 0 && errno == EINTR);
    if (r <= 0) return 0;
    atomic_store(&c->busy, 1);
    cshw_exchange_recheck(c->x);
    return 1;
}

/* Before a job's thread lets go of its connection: input registered again
 * (wait_next_request took it out). Bytes that came meanwhile fire an
 * event, which the loop serves or notes (busy 2) for this thread. */
static void give_back_input(cshs_conn *c)
{
    if (c->in_muted) cshs__conn_input_events(c, 1);
}

void cshs__conn_job(cshs_worker *w, cshs_conn *c)
{
    cshs_server *s = c->srv;
    for (;;) {
        cshw_transport t = transport_of(c);
        int streams = cshw_exchange_streams(c->x);
        int r, deferred = c->resume == RESUME_DEFERRED;
        job_clock jc = {0};
        if (!streams && !deferred) job_clock_start(w, &jc);
        if (deferred) {
            /* a deferred request's continuation that may wait
             * (cshs_deferred_run): it cannot defer again here */
            cshs_later *d = c->later;
            c->resume = RESUME_AFTER_RUN;
            d->job = 0;
            d->t = t;
            job_conn = c;
            r = cshw_exchange_resume(c->x, &d->t, d->fn, d->arg);
            job_conn = NULL;
            later_put(w, d);
            c->later = NULL;
        } else {
            job_conn = c;
            r = cshw_exchange_run(c->x, w->own->ctx, &t);
            job_conn = NULL;
        }
        /* A handler that blocked (the thread waited in the kernel) keeps
         * the loop's handlers on other threads; one that only took long,
         * preempted on a machine short of cores, does not. A streamed body
         * is waited for by design, and so is what a deferred handler sent
         * here (cshs_deferred_run). */
        int blocked = !streams && !deferred && job_clock_blocked(w, &jc);
        if (blocked) cshs__offload_more(c->loop);
        /* The common end is done here rather than on the loop, a wake-up
         * less per request: the response went out whole and the client may
         * send more. A next request already here runs on this thread too;
         * when the socket says EAGAIN the connection is parked and given
         * back by clearing busy. Anything else goes back to the loop. */
        if (r != CSHW_EXCHANGE_NEXT || c->out || atomic_load(&s->stopping)) {
            give_back_input(c);
            c->after_run = r;
            c->resume = RESUME_AFTER_RUN;
            cshs__give_back(c);
            return;
        }
        c->served = 1;
        /* events the loop ignored meanwhile (busy 2): read rather than
         * trust an earlier short read. With none, no byte came since that
         * read (each arrival makes an event), and the read that would only
         * say EAGAIN is saved: a system call per request of a blocking
         * application. One that comes from here on fails the swap below. */
        if (atomic_load(&c->busy) == 2) cshw_exchange_recheck(c->x);
        int in = cshw_exchange_input(c->x, &t);
        if (in == CSHW_EXCHANGE_WANT_INPUT && blocked && !c->rdhup && !c->io->pending(c) &&
            wait_next_request(c)) {
            in = cshw_exchange_input(c->x, &t);
        }
        if (in == CSHW_EXCHANGE_READY) continue;
        if (in != CSHW_EXCHANGE_WANT_INPUT || c->rdhup || c->io->pending(c) || stream_left(c))
            break;
        give_back_input(c);
        park_input(w, c);
        int held = 1;
        if (atomic_compare_exchange_strong(&c->busy, &held, 0)) return;
        /* an event came after the read (busy became 2): the loop reads */
        break;
    }
    give_back_input(c);
    c->resume = RESUME_EVENT;
    cshs__give_back(c);
}

void cshs__conn_resume(cshs_worker *w, cshs_conn *c)
{
    int how = c->resume;
    if (how == RESUME_DEFERRED) {
        cshs__conn_continue(w, c);
        return;
    }
    if (how == RESUME_WAIT) {
        c->resume = RESUME_AFTER_RUN;
        wait_begin(w, c);
        return;
    }
    c->resume = RESUME_AFTER_RUN;
    /* the loop ignored its events while another thread had it: the next
     * input reads rather than trusting an earlier short read */
    if (c->x) cshw_exchange_recheck(c->x);
    if (how == RESUME_EVENT)
        cshs__conn_event(w, c);
    else if (after_exchange(w, c, c->after_run, 1))
        drive(w, c);
}

/* A deadline passed while the connection waited. */
static void expired(cshs_worker *w, cshs_conn *c)
{
    cshs_server *s = c->srv;
    int kind = c->expire_kind;
    if ((kind == EXP_HEAD || kind == EXP_BODY) && c->x && c->phase == CP_READ &&
        !atomic_load(&s->stopping)) {
        cshw_transport t = transport_of(c);
        cshw_exchange_expire(c->x, &t); /* 408 for a request in progress */
        c->linger = 1;
        if (c->out && out_flush(c) == 0) {
            after_output(c, 1);
            return;
        }
        out_clear(c);
        finish(w, c);
        return;
    }
    if (kind == EXP_TUNNEL && c->tunnel) cshs__tunnel_drop(c, -ETIMEDOUT);
    cshs__conn_close(w, c);
}

void cshs__conn_sweep(cshs_worker *w, cshs_conn *c, int64_t now_ms)
{
    cshs_server *s = c->srv;
    /* a stop closes what waits between requests (or for a head); what
     * sends a response or lingers goes on until the stop's deadline */
    int stop = atomic_load(&s->forced) ||
               (atomic_load(&s->stopping) && (c->phase == CP_READ || c->phase == CP_TUNNEL));
    if (!stop) {
        if (!c->deadline_ms || now_ms < c->deadline_ms) return;
        int kind = c->expire_kind;
        if (kind == EXP_TUNNEL && cshs__tunnel_timer_due(c, now_ms)) {
            /* the protocol's timer (a WebSocket's ping), not the tunnel's */
            unpark(c);
            cshs__tunnel_event(w, c);
            return;
        }
        if (kind == EXP_TUNNEL) {
            /* output written while it was parked moved the deadline on */
            int64_t d = cshs__tunnel_deadline(c);
            if (d == 0 || d > now_ms) { /* 0: none now */
                c->deadline_ms = d;
                return;
            }
        }
        if (kind == EXP_BODY) {
            /* the end of a window of the minimum rate that the body kept:
             * the next window's */
            int64_t d = body_deadline(c, now_ms);
            if (d > now_ms) {
                c->deadline_ms = d;
                return;
            }
        }
        if (kind == EXP_TLS)
            atomic_fetch_add(&s->e_tls, 1);
        else if (kind == EXP_HEAD)
            atomic_fetch_add(&s->e_head, 1);
        else if (kind == EXP_BODY)
            atomic_fetch_add(&s->e_body, 1);
        else if (kind == EXP_SEND)
            atomic_fetch_add(&s->e_send, 1);
        else if (kind == EXP_IDLE || kind == EXP_TUNNEL)
            atomic_fetch_add(&s->e_idle, 1);
        else if (kind == EXP_WAIT)
            atomic_fetch_add(c->later->wait_for == WAIT_DRAIN ? &s->e_send : &s->e_body, 1);
    }
    /* a deferred request waiting for its client: its continuation is
     * told (and ends it) */
    if (c->phase == CP_WAIT) {
        wait_end(c, stop ? -ECONNABORTED : -ETIMEDOUT);
        return;
    }
    unpark(c);
    /* a graceful stop lets a tunnel's protocol say goodbye once (a
     * WebSocket's close frame, 1001); the next sweep closes what is left */
    if (stop && !atomic_load(&s->forced) && c->phase == CP_TUNNEL && cshs__tunnel_stopping(w, c))
        return;
    if (stop)
        cshs__conn_close(w, c);
    else
        expired(w, c);
}

/* Before a TLS handshake starts, its first byte: a handshake record (22)
 * goes on to OpenSSL; a letter is a request line, plain HTTP sent to the
 * HTTPS port, answered 400 in plain text, as nginx does, then closed.
 * Nothing yet (an event that came before the bytes did): the connection
 * is parked, OpenSSL not called, so the first byte is still looked at when
 * it comes. 1 when the connection was dealt with here. */
static int plain_on_tls(cshs_worker *w, cshs_conn *c)
{
    unsigned char b;
    ssize_t n = cshs__recv(c->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
        park_input(w, c);
        return 1;
    }
    if (n != 1 || b == 22 || !((b >= 'A' && b <= 'Z') || (b >= 'a' && b <= 'z'))) return 0;
    cshs__tls_drop(c);
    cshw_transport t = transport_of(c);
    cshw_exchange_refuse(&c->srv->xcfg, &t, 400,
                         "A plain HTTP request was sent to the HTTPS port: use https://.");
    c->linger = 1;
    if (c->out && out_flush(c) == 0) {
        after_output(c, 1);
        return 1;
    }
    out_clear(c);
    finish(w, c);
    return 1;
}

void cshs__conn_event(cshs_worker *w, cshs_conn *c)
{
    cshs_server *s = c->srv;
    unpark(c);
    if (c->phase == CP_TUNNEL) {
        cshs__tunnel_event(w, c);
        return;
    }
    if (c->phase == CP_WAIT) {
        if (!wait_over(c)) wait_park(c);
        return;
    }
    if (c->phase == CP_LINGER) {
        if (linger_read(c))
            cshs__conn_close(w, c);
        else
            park(c, c->deadline_ms, EXP_LINGER);
        return;
    }
    if (c->phase == CP_WRITE) {
        int f = out_flush(c);
        if (f == 0) {
            park_output(c);
            return;
        }
        c->phase = CP_READ;
        if (f < 0 || c->close_after_write || atomic_load(&s->stopping)) {
            if (f < 0) {
                out_clear(c);
                c->linger = 0;
            }
            finish(w, c);
            return;
        }
    }

    while (c->tls_state == TLS_HANDSHAKE) {
        if (SSL_in_before(c->ssl) && plain_on_tls(w, c)) return;
        int r = cshs__tls_handshake(c);
        if (r == 1) break;
        if (r == -EAGAIN || r == -EINPROGRESS) {
            /* which way it waits: an event for writability alone is
             * ignored unless a write waits for it (loop.c) */
            c->tls_wait = r == -EAGAIN ? POLLIN : POLLOUT;
            park_input(w, c);
            return;
        }
        atomic_fetch_add(&s->e_tls, 1);
        cshs__conn_close(w, c);
        return;
    }
    drive(w, c);
}
