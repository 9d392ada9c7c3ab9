/* A call's response: its head parsed (or a 101 that switches the
 * connection), an answer before the end of the request's body, and the
 * body read by the calling thread. */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>

#include <openssl/ssl.h>

#include "client_impl.h"
#include "sock_io.h"
#include "thread_reactor.h"

/* ---- the response ---- */

/* The response ended: bytes after it fail the call; the connection goes
 * back to the pool, or is closed when the response or the origin says so. */
int cshs__client_body_done(cshs_call *call, int keep)
{
    conn *cn = call->cn;
    if (cn->end > cn->start || (cn->ssl && SSL_pending(cn->ssl) > 0))
        return cshs__client_call_fail(call, CSHS_CLIENT_E_MALFORMED);
    const csh_message *m = &call->parser.msg;
    keep =
        keep && !call->early && (m->flags & CSH_MSG_KEEP_ALIVE) && m->body != CSH_BODY_UNTIL_CLOSE;
    /* A connection registered with a server's loop skips this look: the
     * loop takes what comes on it while it is idle, its next use looks
     * first (conn_fresh) and drops it for bytes nobody asked for, and the
     * tick looks at it. One a thread's own loop waited on goes back to
     * the pool unregistered (cshs__client_release): looked at here. */
    if (keep && !cshs__reactor_live(cn->pw.w.reg)) {
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
                n = cshs__client_conn_read(cn, &b, 1, 0);
                if (n == -ETIMEDOUT) n = -EAGAIN; /* a session ticket, no data */
            }
            if (n > 0) return cshs__client_call_fail(call, CSHS_CLIENT_E_MALFORMED);
            if (n == 0 || (n < 0 && n != -EAGAIN)) keep = 0;
        }
    }
    cn->uses++;
    call->cn = NULL;
    call->state = K_DONE;
    cshs__client_release(call->c, call->p, cn, keep);
    return 0;
}

/* Makes room at the end of the connection's buffer, keeping
 * buf[start .. end) (moved to the front: parser spans are offsets). */
int cshs__client_make_room(conn *cn)
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
void cshs__client_drop_buffer(conn *cn)
{
    if (cn->start < cn->end) return;
    free(cn->buf);
    cn->buf = NULL;
    cn->cap = cn->start = cn->end = 0;
}

/* The final head m, parsed at the start of the connection's buffer,
 * copied into the call (NUL-terminated) and consumed. 0, or -ENOMEM. */
static int take_head(cshs_call *call, const csh_message *m)
{
    conn *cn = call->cn;
    call->head = malloc(m->head_length + 1);
    if (!call->head) return -ENOMEM;
    memcpy(call->head, cn->buf + cn->start, m->head_length);
    call->head[m->head_length] = 0;
    call->head_len = m->head_length;
    cn->start += m->head_length;
    return 0;
}

/* A 101 to a request that asked for it (RFC 9110 §15.2.2): the head is
 * the call's, the bytes after it the tunnel's first, and the connection
 * leaves its pool's count (as cshs_call_detach), never to go back. 1. */
static int switched(cshs_call *call)
{
    conn *cn = call->cn;
    const csh_message *m = &call->parser.msg;
    if (take_head(call, m) < 0) return -ENOMEM;
    call->state = K_SWITCHED;
    call->upgrade = NULL;
    cshs__client_drop_buffer(cn); /* its reads go to the caller's buffer */
    if (cn->ssl) SSL_set_mode(cn->ssl, SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    cshs__client_detach(call);
    return 1;
}

/* Parses the response bytes buffered on the call's connection: 1 once a
 * final head is here (copied into the call, which moves to K_BODY_IN), 0
 * for more bytes, or an error code (the caller fails the call). 1xx are
 * skipped (RFC 9110 §15.2); 101 would switch protocols, which this client
 * never asks for. */
int cshs__client_head_parse(cshs_call *call)
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
        if (take_head(call, m) < 0) return -ENOMEM;
        csh_body_init(&call->body, m, NULL, 0, call->trailer_spans, CALL_TRAILERS);
        call->state = K_BODY_IN;
        return 1;
    }
    return 0;
}

/* Reads and parses what the origin sent without waiting: 0 when the
 * socket has to be waited for (cn->io_wait: POLLIN, or POLLOUT when
 * OpenSSL must write first); 1 when nothing more is waited for here (the
 * head is here, with a Content-Length body that fits the buffer, or the
 * end of input within a body, which cshs_call_read sees); 2 when the
 * response has no body; or the error that fails the call. The connection
 * is neither closed nor given back here: its watch is inert first
 * (async_ready), so that no event of it meets the connection in another
 * call's hands, or freed. */
int cshs__client_read_head(cshs_call *call)
{
    conn *cn = call->cn;
    for (;;) {
        if (call->state == K_HEAD_WAIT) {
            int r = cshs__client_head_parse(call);
            if (r < 0) return r;
            if (r == 1 && call->state == K_SWITCHED) return 1;
            if (r == 1 && call->parser.msg.body == CSH_BODY_NONE) return 2;
            if (r == 0 && (r = cshs__client_make_room(cn)) < 0) return r;
        }
        if (call->state != K_HEAD_WAIT) {
            /* the body: waited for here only when its length is known and
             * all of it fits the buffer, and not by a blocking call */
            if (call->body.kind != CSH_BODY_LENGTH || call->stop_head) return 1;
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
        short wait = POLLIN;
        if (!cn->ssl) {
            n = cshs__recv(cn->fd, cn->buf + cn->end, cn->cap - cn->end, MSG_DONTWAIT);
            if (n < 0) n = errno == EWOULDBLOCK ? -EAGAIN : -errno;
            if (n == -EINTR) continue;
        } else {
            n = cshs__client_tls_read_now(cn, cn->buf + cn->end, cn->cap - cn->end, &wait);
        }
        if (n > 0) {
            cn->end += (size_t)n;
            call->got += (uint64_t)n;
            continue;
        }
        if (n == -EAGAIN) {
            cn->io_wait = wait;
            return 0;
        }
        if (call->state != K_HEAD_WAIT) return 1; /* cshs_call_read sees the body's end */
        if (!is_closed_errno((int)n)) return (int)n;
        call->retryable = call->reused && call->got == 0;
        return CSHS_CLIENT_E_ORIGIN_CLOSED;
    }
}

/* An answer before the end of the request body (RFC 9112 §9.5 lets a
 * server answer early, and close): reads what the origin sent, without
 * waiting. 1 when a final response head is here, 0 when not (yet), or an
 * error code: the response is malformed (the caller fails the call). The
 * origin's end of input is remembered: the body's send then fails on its
 * own. */
int cshs__client_early_answer(cshs_call *call)
{
    conn *cn = call->cn;
    for (;;) {
        int e = cshs__client_make_room(cn);
        if (e < 0) return e;
        if (cn->ssl) {
            /* a write OpenSSL could not finish stays in its buffer: the
             * session allows a read in between, and after an answer the
             * connection is never used again anyway */
            short wait;
            ssize_t n = cshs__client_tls_read_now(cn, cn->buf + cn->end, cn->cap - cn->end, &wait);
            if (n > 0) {
                cn->end += (size_t)n;
                e = cshs__client_head_parse(call);
                if (e != 0) return e;
                continue;
            }
            if (n != -EAGAIN) call->peer_eof = 1;
            return cshs__client_head_parse(call);
        }
        ssize_t n = cshs__recv(cn->fd, cn->buf + cn->end, cn->cap - cn->end, MSG_DONTWAIT);
        if (n > 0) {
            cn->end += (size_t)n;
            e = cshs__client_head_parse(call);
            if (e != 0) return e;
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) call->peer_eof = 1;
        return cshs__client_head_parse(call);
    }
}

/* The origin answered before the body was all sent: the call goes on with
 * the response; its connection is not reused (the request's framing was
 * cut). 1 for cshs_call_write, or the error that failed the call. */
int cshs__client_answered_early(cshs_call *call)
{
    call->early = 1;
    call->retryable = 0;
    if (call->parser.msg.body == CSH_BODY_NONE) {
        int e = cshs__client_body_done(call, 0);
        if (e < 0) return e;
    }
    return 1;
}

static int have_head(const cshs_call *call)
{
    return call && call->head != NULL;
}

int cshs_call_body_here(const cshs_call *call)
{
    if (!have_head(call)) return 0;
    return call->state == K_DONE ||
           (call->state == K_BODY_IN && !cshs__client_body_from_socket(call));
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

/* A chunked body ended in `base` (the decoder's last input): its trailer
 * fields, spans into base, copied before the connection's buffer is
 * reused, as pointers to NUL-terminated strings in one allocation. */
static int keep_trailers(cshs_call *call, const char *base)
{
    if (call->body.kind != CSH_BODY_CHUNKED) return 0;
    size_t n = call->body.chunked.num_trailers;
    if (n > CALL_TRAILERS) n = CALL_TRAILERS;
    if (n == 0) return 0;
    size_t bytes = 2 * n * sizeof(char *);
    for (size_t i = 0; i < n; i++)
        bytes += call->trailer_spans[i].name.len + call->trailer_spans[i].value.len + 2;
    char **t = malloc(bytes);
    if (!t) return -ENOMEM;
    char *at = (char *)(t + 2 * n);
    for (size_t i = 0; i < 2 * n; i++) {
        const csh_header *f = &call->trailer_spans[i / 2];
        csh_span sp = i % 2 ? f->value : f->name;
        memcpy(at, base + sp.off, sp.len);
        at[sp.len] = '\0';
        t[i] = at;
        at += sp.len + 1;
    }
    free(call->trailers);
    call->trailers = t;
    call->ntrailers = n;
    return 0;
}

size_t cshs_call_trailer_count(const cshs_call *call)
{
    return call ? call->ntrailers : 0;
}

const char *cshs_call_trailer_at(const cshs_call *call, size_t i, const char **value)
{
    if (!call || i >= call->ntrailers) {
        if (value) *value = NULL;
        return NULL;
    }
    if (value) *value = call->trailers[2 * i + 1];
    return call->trailers[2 * i];
}

/* cshs_call_read, and with wait 0 cshs_call_read_nowait */
static ssize_t call_read(cshs_call *call, void *buf, size_t cap, int wait)
{
    if (!call) return -EINVAL;
    if (call->state == K_DONE) return 0;
    if (call->state == K_FAILED) return call->err;
    if (call->state != K_BODY_IN || !buf || !cap) return cshs__client_call_fail(call, -EINVAL);
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
                int e = cshs__client_body_done(call, 1);
                if (e < 0) return e;
            }
            return (ssize_t)data.len;
        }
        if (r == CSH_OK) {
            int e = keep_trailers(call, cn->buf + cn->start - used);
            if (e == 0) e = cshs__client_body_done(call, 1);
            return e < 0 ? e : 0;
        }
        if (r < 0) return cshs__client_call_fail(call, CSHS_CLIENT_E_MALFORMED);
        if (used) continue; /* framing consumed, bytes left: decode on */
        /* more bytes: a Content-Length body with nothing buffered goes
         * straight into the caller's memory */
        if (!wait && call->read_expired)
            return cshs__client_call_fail(call, CSHS_CLIENT_E_READ_TIMEOUT);
        int64_t deadline = wait ? now_ms() + call->read_ms : CONN_NOWAIT;
        ssize_t n;
        if (call->body.kind == CSH_BODY_LENGTH && cn->start == cn->end) {
            uint64_t left = call->parser.msg.content_length - call->body.received;
            n = cshs__client_conn_read(cn, buf, (uint64_t)cap < left ? cap : (size_t)left,
                                       deadline);
            if (n > 0) {
                r = csh_body_next(&call->body, buf, (size_t)n, &used, &data);
                if (r != CSH_DATA || data.off != 0)
                    return cshs__client_call_fail(call, CSHS_CLIENT_E_MALFORMED);
                if (csh_body_done(&call->body)) {
                    cn->start = cn->end = 0;
                    int e = cshs__client_body_done(call, 1);
                    if (e < 0) return e;
                }
                return (ssize_t)data.len;
            }
        } else {
            int e = cshs__client_make_room(cn);
            if (e < 0) return cshs__client_call_fail(call, e);
            n = cshs__client_conn_read(cn, cn->buf + cn->end, cn->cap - cn->end, deadline);
            if (n > 0) {
                cn->end += (size_t)n;
                continue;
            }
        }
        if (n == 0 && csh_body_finish(&call->body) == CSH_OK) { /* ended with the connection */
            int e = cshs__client_body_done(call, 0);
            return e < 0 ? e : 0;
        }
        if (n == -EAGAIN && !wait) return -EAGAIN;
        if (n == -ETIMEDOUT) return cshs__client_call_fail(call, CSHS_CLIENT_E_READ_TIMEOUT);
        if (is_closed_errno((int)n))
            return cshs__client_call_fail(call, CSHS_CLIENT_E_ORIGIN_CLOSED);
        return cshs__client_call_fail(call, (int)n);
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
        if (!b) return cshs__client_call_fail(call, -ENOMEM);
        call->all = b;
    }
    while (call->state != K_DONE) {
        if (have + 1 == cap) {
            if (have >= limit) {
                /* one byte more than the limit says it is too large */
                char b;
                ssize_t n = cshs_call_read(call, &b, 1);
                if (n < 0) return (int)n;
                if (n > 0) return cshs__client_call_fail(call, CSHS_CLIENT_E_TOO_LARGE);
                break;
            }
            size_t ncap = cap * 2 > limit + 1 ? limit + 1 : cap * 2;
            if (ncap <= cap) ncap = cap + 1;
            char *b = realloc(call->all, ncap);
            if (!b) return cshs__client_call_fail(call, -ENOMEM);
            call->all = b;
            cap = ncap;
        }
        size_t room = cap - 1 - have;
        if (have + room > limit) room = limit > have ? limit - have : 0;
        if (room == 0) {
            char b;
            ssize_t n = cshs_call_read(call, &b, 1);
            if (n < 0) return (int)n;
            if (n > 0) return cshs__client_call_fail(call, CSHS_CLIENT_E_TOO_LARGE);
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
