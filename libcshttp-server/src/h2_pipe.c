/* The pipe of an HTTP/2 stream (h2_impl.h has the picture): the socket
 * its connection would have, in memory. The connection's side is its
 * stream ops (read, write, pending, close: never waiting) and
 * cshs__h2_pipe_wait for a handler's thread that has to wait; the
 * session's side opens it, puts the request's bytes in, takes the
 * answer's out, and ends it. Each side tells the other what a socket's
 * event would: the session signals the connection on the loop, the
 * connection kicks the pipe onto its loop's list for the session. */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "h2_impl.h"

/* The answer's bytes a pipe holds at most, as a socket's buffer would;
 * its buffer starts small and grows as an answer needs. */
#define PIPE_OUT_CAP 65536u
#define PIPE_OUT_START 4096u

/* The request's bytes appended to what the connection has not read. */
static int in_add(h2_pipe *p, const char *data, size_t n)
{
    if (p->in_pos == p->in_len) p->in_pos = p->in_len = 0;
    if (p->in_len + n > p->in_cap) {
        size_t cap = p->in_cap ? p->in_cap : 256;
        while (cap < p->in_len + n) cap *= 2;
        char *b = realloc(p->in, cap);
        if (!b) return -ENOMEM;
        p->in = b;
        p->in_cap = cap;
    }
    memcpy(p->in + p->in_len, data, n);
    p->in_len += n;
    return 0;
}

void cshs__h2_pipe_unref(h2_pipe *p)
{
    if (atomic_fetch_sub(&p->refs, 1) != 1) return;
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cv);
    free(p->in);
    free(p->out);
    free(p);
}

/* The kernel's id of the calling thread, asked once. */
static pid_t self_tid(void)
{
    static _Thread_local pid_t tid;
    if (!tid) tid = (pid_t)syscall(SYS_gettid);
    return tid;
}

/* The connection did something the session is to look at: the pipe goes
 * on its loop's kicked list, once, and the loop is woken unless this
 * thread owns it now (it takes the list after its batch). A handler whose
 * loop was handed over meanwhile wakes the new owner, which may be
 * waiting for events. Under p->mu. */
static void kick_locked(h2_pipe *p)
{
    if (p->kicked || !p->st) return;
    p->kicked = 1;
    atomic_fetch_add(&p->refs, 1);
    cshs_loop *l = p->loop;
    pthread_mutex_lock(&l->mu);
    p->next_kicked = l->h2_kicked;
    l->h2_kicked = p;
    atomic_fetch_add_explicit(&l->nkicked, 1, memory_order_release);
    pthread_mutex_unlock(&l->mu);
    if (atomic_load(&l->owner_tid) != self_tid()) cshs__wake_loop(l);
}

/* The answer's buffer, grown to hold `need` bytes (at most PIPE_OUT_CAP)
 * from PIPE_OUT_START by doubling. Under p->mu. */
static int grow_out(h2_pipe *p, size_t need)
{
    if (need <= p->out_cap) return 0;
    size_t cap = p->out_cap ? p->out_cap : PIPE_OUT_START;
    while (cap < need) cap *= 2;
    if (cap > PIPE_OUT_CAP) cap = PIPE_OUT_CAP;
    char *b = realloc(p->out, cap);
    if (!b) return -ENOMEM;
    p->out = b;
    p->out_cap = cap;
    return 0;
}

/* The connection's side: its stream ops (cshs_stream_ops), on the thread
 * that has the connection. */

static ssize_t pipe_read(cshs_conn *c, void *buf, size_t len)
{
    h2_pipe *p = c->pipe;
    ssize_t r;
    pthread_mutex_lock(&p->mu);
    size_t have = p->in_len - p->in_pos;
    if (have) {
        size_t n = have < len ? have : len;
        memcpy(buf, p->in + p->in_pos, n);
        p->in_pos += n;
        if (p->in_pos == p->in_len) {
            p->in_pos = p->in_len = 0;
            /* the body's bytes went on: the client may send as many more */
            if (p->unacked) kick_locked(p);
            /* what a socket's RDHUP says: the next read meets the end, and
             * no signal will come for it (the end came with these bytes) */
            if (p->in_end) c->rdhup = 1;
        }
        r = (ssize_t)n;
    } else if (p->in_end || p->gone) {
        r = 0;
    } else {
        c->io_wait = POLLIN;
        r = -EAGAIN;
    }
    pthread_mutex_unlock(&p->mu);
    return r;
}

static ssize_t pipe_write(cshs_conn *c, const void *buf, size_t len)
{
    h2_pipe *p = c->pipe;
    ssize_t r;
    if (len == 0) return 0;
    pthread_mutex_lock(&p->mu);
    size_t room = PIPE_OUT_CAP - p->out_len;
    size_t n = len < room ? len : room;
    if (p->gone || p->out_end) {
        r = -EPIPE; /* the stream was reset, its session ended, or the answer did */
    } else if (room == 0) {
        p->out_full = 1; /* the session signals when there is room */
        c->io_wait = POLLOUT;
        r = -EAGAIN;
    } else if (grow_out(p, p->out_len + n) < 0) {
        r = -ENOMEM;
    } else {
        memcpy(p->out + p->out_len, buf, n);
        p->out_len += n;
        kick_locked(p);
        r = (ssize_t)n;
    }
    pthread_mutex_unlock(&p->mu);
    return r;
}

static int pipe_pending(const cshs_conn *c)
{
    h2_pipe *p = c->pipe;
    pthread_mutex_lock(&p->mu);
    int n = p->in_len > p->in_pos;
    pthread_mutex_unlock(&p->mu);
    return n;
}

/* The connection closes: its answer has ended. */
static void pipe_close(cshs_conn *c)
{
    h2_pipe *p = c->pipe;
    if (!p) return;
    c->pipe = NULL;
    pthread_mutex_lock(&p->mu);
    p->c_closed = 1;
    p->c = NULL;
    kick_locked(p);
    pthread_mutex_unlock(&p->mu);
    cshs__h2_pipe_unref(p);
}

void cshs__h2_pipe_shut(cshs_conn *c)
{
    h2_pipe *p = c->pipe;
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    p->out_end = 1;
    kick_locked(p);
    pthread_mutex_unlock(&p->mu);
}

const cshs_stream_ops cshs__h2_pair_stream = {pipe_read, pipe_write, NULL, pipe_pending,
                                              pipe_close};
const cshs_stream_ops cshs__h2_pair_tls_stream = {pipe_read, pipe_write, NULL, pipe_pending,
                                                  pipe_close};

int cshs__h2_pipe_wait(cshs_conn *c, short events, int64_t until_ms)
{
    h2_pipe *p = c->pipe;
    cshs_server *s = c->srv;
    if (!p) return -EPIPE;
    int r;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        int in = p->in_len > p->in_pos || p->in_end || p->gone;
        int out = p->out_len < PIPE_OUT_CAP || p->gone;
        if (((events & POLLIN) && in) || ((events & POLLOUT) && out)) {
            r = 0;
            break;
        }
        int64_t now = cshs__now_ms();
        if (atomic_load(&s->forced)) {
            r = -ECONNABORTED;
            break;
        }
        if (until_ms && now >= until_ms) {
            r = -ETIMEDOUT;
            break;
        }
        if (events & POLLOUT) p->out_full = 1;
        /* in slices, so that a forced stop is noticed */
        int64_t until = now + 200;
        if (until_ms && until_ms < until) until = until_ms;
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        int64_t ns = (int64_t)ts.tv_nsec + (until - now) * 1000000;
        ts.tv_sec += (time_t)(ns / 1000000000);
        ts.tv_nsec = (long)(ns % 1000000000);
        pthread_cond_timedwait(&p->cv, &p->mu, &ts);
    }
    pthread_mutex_unlock(&p->mu);
    return r;
}

/* The session's side, on the loop's owner. */

int cshs__h2_stream_open(h2_stream *st)
{
    cshs_conn *pc = st->h->c;
    cshs_server *s = pc->srv;
    h2_pipe *p = calloc(1, sizeof *p);
    if (!p) return -ENOMEM;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, &ca);
    pthread_condattr_destroy(&ca);
    atomic_init(&p->refs, 2); /* the stream's and the connection's */
    struct sockaddr sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_family = AF_UNIX;
    cshs_conn *c = cshs__conn_new(s, -1, &sa);
    if (!c) {
        pthread_mutex_destroy(&p->mu);
        pthread_cond_destroy(&p->cv);
        free(p);
        return -ENOMEM;
    }
    p->h = st->h;
    p->st = st;
    p->c = c;
    p->loop = pc->loop;
    memcpy(c->remote, pc->remote, sizeof c->remote);
    c->remote_port = pc->remote_port;
    c->io = pc->ssl ? &cshs__h2_pair_tls_stream : &cshs__h2_pair_stream;
    c->pipe = p;
    c->accept_ms = cshs__now_ms();
    if (s->o.header_timeout_ms) {
        c->deadline_ms = c->accept_ms + (int64_t)s->o.header_timeout_ms;
        c->expire_kind = EXP_HEAD;
    }
    c->parked = 1;
    cshs__conn_join(pc->loop, c);
    st->pipe = p;
    st->opened = 1;
    cshs__h2_stream_write(st);
    return 0;
}

void cshs__h2_stream_write(h2_stream *st)
{
    h2_pipe *p = st->pipe;
    if (!p) return;
    size_t n = st->out_len - st->out_pos;
    int r = 0;
    pthread_mutex_lock(&p->mu);
    if (n) {
        r = in_add(p, st->out + st->out_pos, n);
        if (r == 0) {
            p->unacked += st->unacked;
            st->unacked = 0;
        }
    }
    if (r == 0 && st->in_ended) p->in_end = 1;
    cshs_conn *c = p->c_closed ? NULL : p->c;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    if (r < 0) {
        cshs__h2_reset(st->h, st->id, NGHTTP2_INTERNAL_ERROR);
        return;
    }
    st->out_pos = st->out_len = 0;
    if (st->out_cap > 65536) { /* a large body's buffer is not kept */
        free(st->out);
        st->out = NULL;
        st->out_cap = 0;
    }
    if (c) cshs__conn_signal(c, 0);
}

void cshs__h2_stream_close_pair(h2_stream *st)
{
    if (st->counted) { /* its handler's place is free */
        st->counted = 0;
        st->h->handlers--;
    }
    h2_pipe *p = st->pipe;
    if (!p) return;
    st->pipe = NULL;
    pthread_mutex_lock(&p->mu);
    p->gone = 1;
    p->st = NULL;
    p->h = NULL;
    cshs_conn *c = p->c_closed ? NULL : p->c;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    /* an answer cut short: the client left, as far as its handler knows */
    if (c) cshs__conn_signal(c, st->answer != A_DONE);
    cshs__h2_pipe_unref(p);
}

void cshs__h2_stream_kicked(h2_stream *st)
{
    h2_pipe *p = st->pipe;
    if (!p) return;
    size_t give = 0;
    pthread_mutex_lock(&p->mu);
    if (p->in_pos == p->in_len && p->unacked) {
        give = p->unacked;
        p->unacked = 0;
    }
    pthread_mutex_unlock(&p->mu);
    if (give) nghttp2_session_consume(st->h->ses, st->id, give);
    if (cshs__h2_stream_read(st) < 0) cshs__h2_reset(st->h, st->id, NGHTTP2_INTERNAL_ERROR);
}

/* What the pipe holds of the answer, as much as raw takes: the bytes
 * taken, and the end (the connection closed and all is taken). */
size_t cshs__h2_pipe_take(h2_stream *st, char *dst, size_t cap, char *eof)
{
    h2_pipe *p = st->pipe;
    if (!p) {
        *eof = 1;
        return 0;
    }
    pthread_mutex_lock(&p->mu);
    size_t n = p->out_len < cap ? p->out_len : cap;
    if (n) {
        memcpy(dst, p->out, n);
        memmove(p->out, p->out + n, p->out_len - n);
        p->out_len -= n;
    }
    cshs_conn *wake = NULL;
    if (n && p->out_full) { /* room again for a write that waited */
        p->out_full = 0;
        wake = p->c_closed ? NULL : p->c;
        pthread_cond_broadcast(&p->cv);
    }
    *eof = (p->c_closed || p->out_end) && p->out_len == 0;
    pthread_mutex_unlock(&p->mu);
    if (wake) cshs__conn_signal(wake, 0);
    return n;
}

int cshs__h2_pipe_attached(h2_stream *st)
{
    h2_pipe *p = st->pipe;
    if (!p) return 0;
    pthread_mutex_lock(&p->mu);
    int attached = !p->c_closed;
    pthread_mutex_unlock(&p->mu);
    return attached;
}
