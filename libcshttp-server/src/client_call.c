/* A call's request: checked, its head built and sent with its body as
 * the socket takes them (the rest from the reactor, client_send_async.c);
 * and the socket I/O the call's response is read with (a body read by a
 * thread, cshs_call_read, waits with poll() until its deadline). */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <cshttp/grammar.h>

#include "client_impl.h"
#include "list.h"
#include "sock_io.h"

/* ---- a call's I/O on its one socket ---- */

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

/* One SSL_read_ex (`buf` read into) or SSL_write_ex (`data` written)
 * without waiting, SIGPIPE kept from the process: SSL_ERROR_NONE with *n
 * bytes, or the SSL_ERROR_* (the socket's errno in *se). */
static int tls_once(conn *cn, void *buf, const void *data, size_t len, size_t *n, int *se)
{
    sigpipe_guard g;
    cshs__client_sigpipe_block(&g);
    ERR_clear_error();
    errno = 0;
    int r = buf ? SSL_read_ex(cn->ssl, buf, len, n) : SSL_write_ex(cn->ssl, data, len, n);
    int e = r == 1 ? SSL_ERROR_NONE : SSL_get_error(cn->ssl, r);
    *se = errno;
    ERR_clear_error();
    cshs__client_sigpipe_restore(&g);
    return e;
}

/* One SSL_read without waiting: > 0 bytes, 0 at the end of input
 * (close_notify, or none), -EAGAIN when OpenSSL wants the socket (*wait:
 * POLLIN or POLLOUT), -errno or -EIO. */
ssize_t cshs__client_tls_read_now(conn *cn, void *buf, size_t cap, short *wait)
{
    size_t n = 0;
    int se = 0;
    int e = tls_once(cn, buf, NULL, cap, &n, &se);
    if (e == SSL_ERROR_NONE) return (ssize_t)n;
    *wait = e == SSL_ERROR_WANT_WRITE ? POLLOUT : POLLIN;
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) return -EAGAIN;
    if (e == SSL_ERROR_ZERO_RETURN) return 0;
    if (e == SSL_ERROR_SYSCALL) return se ? -se : 0; /* 0: the end without close_notify */
    return -EIO;
}

/* One SSL_write without waiting: the bytes taken (> 0), -EAGAIN when
 * OpenSSL wants the socket (*wait: POLLIN or POLLOUT; offer the same
 * bytes again), -errno, -EPIPE or -EIO. */
ssize_t cshs__client_tls_write_now(conn *cn, const void *data, size_t len, short *wait)
{
    size_t took = 0;
    int se = 0;
    int e = tls_once(cn, NULL, data, len, &took, &se);
    if (e == SSL_ERROR_NONE) return (ssize_t)took;
    *wait = e == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT;
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) return -EAGAIN;
    if (e == SSL_ERROR_SYSCALL) return se ? -se : -EPIPE;
    return -EIO;
}

/* Reads what is there, waiting until deadline_ms for something: > 0
 * bytes, 0 at the end of input, -ETIMEDOUT, -ECONNRESET, -EIO; with
 * CONN_NOWAIT, -EAGAIN instead of a wait (its way in cn->io_wait). */
ssize_t cshs__client_conn_read(conn *cn, void *buf, size_t cap, int64_t deadline_ms)
{
    for (;;) {
        short ev = POLLIN;
        if (!cn->ssl) {
            ssize_t n = cshs__recv(cn->fd, buf, cap, 0);
            if (n >= 0) return n;
            if (errno == EINTR) continue;
            if (errno != EAGAIN && errno != EWOULDBLOCK) return -errno;
        } else {
            ssize_t n = cshs__client_tls_read_now(cn, buf, cap, &ev);
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

/* Sends what the socket takes of iov[0 .. n) (gather write; OpenSSL: one
 * write per piece), counting it in call->bytes_sent and leaving the rest
 * in iov: 0 all of it, -EAGAIN (the way to wait in cn->io_wait), -EPIPE,
 * -ECONNRESET or -errno. */
static int conn_send(cshs_call *call, struct iovec *iov, int n)
{
    conn *cn = call->cn;
    int i = 0;
    while (i < n && iov[i].iov_len == 0) i++;
    while (i < n) {
        short ev = POLLOUT;
        size_t took = 0;
        int full = 0; /* the socket took less than offered */
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
            ssize_t w = cshs__client_tls_write_now(cn, iov[i].iov_base, iov[i].iov_len, &ev);
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
        if (full) {
            cn->io_wait = ev;
            return -EAGAIN;
        }
    }
    return 0;
}

#define FILE_CHUNK 16384u /* a file body over TLS is read and written this much at a time */

/* What is left of a CSHS_CLIENT_BODY_FILE body, sent as conn_send sends:
 * 0 all of it, -EAGAIN (the way to wait in cn->io_wait), or an error. */
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
            cshs__client_sigpipe_block(&g);
            ssize_t n = sendfile(cn->fd, call->file_fd, &off, want);
            int se = errno;
            cshs__client_sigpipe_restore(&g);
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
            ssize_t w = cshs__client_tls_write_now(cn, call->fchunk + call->fchunk_pos,
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
        cn->io_wait = ev;
        return -EAGAIN;
    }
    return 0;
}

/* The request's head and body, what is left of them (out_iov, then a
 * file body). */
int cshs__client_send_rest(cshs_call *call)
{
    int e = conn_send(call, call->out_iov, 2);
    if (e == 0 && call->file_left) e = file_send(call);
    return e;
}

/* The call fails: its connection is closed, later calls return `err`. */
int cshs__client_call_fail(cshs_call *call, int err)
{
    if (call->cn) {
        cshs__client_release(call->c, call->p, call->cn, 0);
        call->cn = NULL;
    }
    call->state = K_FAILED;
    call->err = err;
    return err;
}

/* A send error as the call's error; on a reused connection, the origin
 * having closed it is what the retry rule is for. */
int cshs__client_send_failed(cshs_call *call, int e)
{
    if (e == -ETIMEDOUT) return cshs__client_call_fail(call, CSHS_CLIENT_E_SEND_TIMEOUT);
    if (is_closed_errno(e)) {
        call->retryable = call->reused;
        return cshs__client_call_fail(call, CSHS_CLIENT_E_ORIGIN_CLOSED);
    }
    return cshs__client_call_fail(call, e);
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
    if (e) return cshs__client_call_fail(call, -ENOMEM);
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
    e = cshs__client_send_rest(call);
    cn->start = cn->end = 0;
    return e;
}

int cshs__client_send_request(cshs_call *call)
{
    if (!call->again) return send_head(call, &call->rq);
    call->out_iov[0].iov_base = call->again;
    call->out_iov[0].iov_len = call->again_len;
    call->out_iov[1].iov_len = 0;
    call->file_left = 0;
    int e = cshs__client_send_rest(call);
    call->cn->start = call->cn->end = 0;
    return e;
}

/* A call made for a request, with no connection yet: its pool found (or
 * made) and counted as used. */
int cshs__client_call_new(cshs_client *c, const cshs_client_request *r, cshs_call **out)
{
    *out = NULL;
    int e = request_check(r);
    if (e < 0) return e;
    if (!r->origin) return -EINVAL;
    pthread_mutex_lock(&c->mu);
    cshs_call *call = NULL;
    if (c->spare_calls) {
        CSHS_STACK_POP(c->spare_calls, call, next_spare);
        c->nspare_calls--;
    }
    pool *p = cshs__client_pool_find(c, r->origin); /* an origin string seen before */
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
        e = cshs__client_parse_origin(r->origin, &id);
        if (e == 0 && id.tls) e = cshs__client_tls_ctx(c);
        if (e < 0) {
            free(call);
            return e;
        }
        pthread_mutex_lock(&c->mu);
        p = cshs__client_pool_get(c, &id, r->origin);
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
    call->keep_head = r->body_mode == CSHS_CLIENT_BODY_WHOLE && r->body_len == 0;
    call->send_ms = r->send_timeout_ms ? r->send_timeout_ms : c->o.send_timeout_ms;
    call->head_ms = r->head_timeout_ms ? r->head_timeout_ms : c->o.head_timeout_ms;
    call->read_ms = r->read_timeout_ms ? r->read_timeout_ms : c->o.read_timeout_ms;
    csh_parser_init(&call->parser, CSH_RESPONSE, call->fields, MAX_FIELDS, NULL, 0);
    *out = call;
    return 0;
}
