/* A connection's bytes: the plain stream (the TLS one is tls.c's), and
 * the output sent at once or queued for the loop when the socket is full. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <unistd.h>

#include "list.h"
#include "server_impl.h"
#include "sock_io.h"

#define TLS_FILE_CHUNK 16384u /* a file sent over TLS is read this much at a time */
#define OUT_MIN 4096u         /* the smallest output block */

/* ---- the plain stream (server_impl.h, cshs_stream_ops) ---- */

static ssize_t plain_read(cshs_conn *c, void *buf, size_t len)
{
    c->io_wait = POLLIN;
    for (;;) {
        ssize_t n = cshs__recv(c->fd, buf, len, 0);
        if (n >= 0) return n;
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) return -EAGAIN;
        return -errno;
    }
}

/* Writes set io_wait only when they have to wait: after one that went,
 * it still says what the last read waits for (park_input asks). */
static ssize_t plain_write(cshs_conn *c, const void *buf, size_t len)
{
    for (;;) {
        ssize_t n = cshs__send(c->fd, buf, len, MSG_NOSIGNAL);
        if (n >= 0) return n;
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
            c->io_wait = POLLOUT;
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
            c->io_wait = POLLOUT;
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
int cshs__wait_fd(cshs_conn *c, short events, int64_t until_ms)
{
    cshs_server *s = c->srv;
    if (CSHS_H2_STREAM(c)) return cshs__h2_pipe_wait(c, events, until_ms);
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
    cshs_out *o;
    CSHS_FIFO_POP(c->out, c->out_tail, o, next);
    if (o->fd >= 0) close(o->fd);
    c->out_bytes -= o->n - o->pos;
    free(o);
}

void cshs__out_clear(cshs_conn *c)
{
    while (c->out) out_pop(c);
}

static void out_append(cshs_conn *c, cshs_out *o)
{
    CSHS_FIFO_APPEND(c->out, c->out_tail, o, next);
}

int cshs__out_queue_bytes(cshs_conn *c, const char *p, size_t len)
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

int cshs__out_queue_file(cshs_conn *c, int fd, off_t off, uint64_t len)
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

void cshs__out_sent(cshs_conn *c, size_t n)
{
    atomic_fetch_add_explicit(&c->loop->k.bytes_out, (uint64_t)n, memory_order_relaxed);
    c->last_io_ms = cshs__now_ms();
}

/* Sends what is queued without waiting: 1 when all of it went, 0 when the
 * socket is full (wait for c->io_wait), or a negative error. */
int cshs__out_flush(cshs_conn *c)
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
                cshs__out_sent(c, (size_t)n);
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
            cshs__out_sent(c, (size_t)n);
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
int cshs__out_throttle(cshs_conn *c)
{
    cshs_server *s = c->srv;
    size_t mark = s->o.write_high_water;
    while (c->out_bytes > mark / 2) {
        int r = cshs__out_flush(c);
        if (r < 0) return r;
        if (r == 1) break;
        int64_t until = s->o.send_timeout_ms ? c->last_io_ms + (int64_t)s->o.send_timeout_ms : 0;
        r = cshs__wait_fd(c, c->io_wait, until);
        if (r == -ETIMEDOUT) atomic_fetch_add(&s->e_send, 1);
        if (r < 0) return r;
    }
    return 0;
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
                cshs__out_sent(c, (size_t)n);
                continue;
            }
            if (n == -EAGAIN) break;
            atomic_fetch_add(&c->srv->e_io, 1);
            return n < 0 ? (int)n : -EPIPE;
        }
        if (len == 0) return 0;
    }
    return cshs__out_queue_bytes(c, p, len);
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
            cshs__out_sent(c, (size_t)n);
            continue;
        }
        if (n == -EAGAIN) break;
        atomic_fetch_add(&c->srv->e_io, 1);
        return n < 0 ? n : -EPIPE;
    }
    return (ssize_t)done;
}
