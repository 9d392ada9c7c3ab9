/* The request body as a stream: de-framed by csh_body (Tier 1) over the
 * transport's peek/consume, "100 Continue" on the first read, and the
 * drain of what the handler left unread.
 *
 * Nothing is copied on the way, with one exception: csh_chunked leaves an
 * unfinished trailer section unconsumed and wants it again, first, with
 * more bytes after it (chunked.h); the transport cannot append to what it
 * gave, so those few bytes (at most limits.max_trailer) are copied into
 * ctx->pend and the decoder is fed from there, one byte at a time from the
 * transport so that no byte of the next request is taken. */
#include <errno.h>
#include <limits.h>
#include <string.h>

#include "context_impl.h"
#include "cshttp/web/error.h"

/* A transport that does not wait (the engine's, for a handler on its
 * loop) says -EAGAIN when no byte of the body is here yet: not an error
 * of the body, the handler reads again later. */
static int read_error(cshw_request *req, int code)
{
    if (code != -EAGAIN) req->body_error = code;
    return code;
}

/* Tier 1 errors are small negatives that mean something else here. */
static int map_csh_error(int r)
{
    if (r == CSH_E_BODY_TRUNCATED) return CSHW_E_BODY_TRUNCATED;
    if (csh_error_status(r) == 413) return CSHW_E_BODY_TOO_LARGE;
    return CSHW_E_BAD_BODY;
}

/* RFC 9110 §10.1.1: a server that receives 100-continue sends 100 unless it
 * has already answered; it is sent when the body is first wanted, so a
 * handler that rejects the request without reading never invites it. */
static int send_continue(cshw_request *req)
{
    req->expect_pending = 0;
    if (req->ctx->res.headers_sent) return 0;
    static const char line[] = "HTTP/1.1 100 Continue\r\n\r\n";
    int r = cshw__transport_write(req->ctx, line, sizeof line - 1);
    if (r < 0) return read_error(req, r);
    req->continue_sent = 1;
    req->ctx->res.head_bytes += sizeof line - 1;
    return 0;
}

/* The decoder said CSH_OK on input `base`: the body is whole, and its
 * trailer fields (spans into base) are kept before base is consumed. */
static int body_ended(cshw_request *req, const char *base)
{
    req->body_done = 1;
    if (req->body.kind != CSH_BODY_CHUNKED || !req->body.chunked.num_trailers) return 0;
    return cshw__request_keep_trailers(req, base, req->trailer_spans,
                                       req->body.chunked.num_trailers);
}

/* Feeds the decoder from ctx->pend (an unfinished trailer section), a byte
 * of input at a time, until it completes. */
static ssize_t read_pending(cshw_request *req)
{
    const cshw_transport *t = cshw__transport(req->ctx);
    cshw_buf *pend = &req->ctx->pend;
    for (;;) {
        const char *data;
        size_t len;
        int r = t->ops->peek(t->io, &data, &len);
        if (r < 0) return read_error(req, r);
        if (len == 0) return read_error(req, CSHW_E_BODY_TRUNCATED);
        size_t i = 0;
        while (i < len) {
            if (cshw_buf_append(pend, data + i, 1) < 0) return read_error(req, -ENOMEM);
            i++;
            size_t used;
            csh_span span;
            r = csh_body_next(&req->body, pend->data, pend->len, &used, &span);
            if (r == CSH_INCOMPLETE) {
                if (used) {
                    memmove(pend->data, pend->data + used, pend->len - used);
                    pend->len -= used;
                }
                continue;
            }
            if (r == CSH_OK) r = body_ended(req, pend->data);
            t->ops->consume(t->io, i);
            pend->len = 0;
            if (r == 0) return 0;
            if (r == -ENOMEM) return read_error(req, r);
            /* no data follows the last chunk: anything else is an error */
            return read_error(req, r < 0 ? map_csh_error(r) : CSHW_E_BAD_BODY);
        }
        t->ops->consume(t->io, len);
    }
}

ssize_t cshw__body_read(cshw_request *req, void *buf, size_t cap)
{
    if (req->body_error) return req->body_error;
    if (req->body_done || cap == 0) return 0;
    if (req->expect_pending) {
        int r = send_continue(req);
        if (r < 0) return r;
    }
    if (cap > SSIZE_MAX) cap = SSIZE_MAX;
    const cshw_transport *t = cshw__transport(req->ctx);
    for (;;) {
        if (req->ctx->pend.len) return read_pending(req);
        const char *data;
        size_t len;
        /* A body that has ended (the last byte of a Content-Length body was
         * returned) says so without a call: no peek, which on a socket would
         * wait for the next request. */
        if (csh_body_done(&req->body)) {
            req->body_done = 1;
            return 0;
        }
        int r = t->ops->peek(t->io, &data, &len);
        if (r < 0) return read_error(req, r);
        if (len == 0) {
            if (csh_body_finish(&req->body) == CSH_OK) {
                req->body_done = 1;
                return 0;
            }
            return read_error(req, CSHW_E_BODY_TRUNCATED);
        }
        /* Never more than cap data bytes: what the decoder consumed is gone
         * from the transport, so it must fit in buf. Chunk framing is
         * consumed as validated, so a short window only costs calls. */
        size_t n = len < cap ? len : cap;
        size_t used;
        csh_span span;
        r = csh_body_next(&req->body, data, n, &used, &span);
        if (r == CSH_DATA) {
            /* RFC 9110 §15.5.14: a streamed body is held to the limit as a
             * stored one is, at the byte that crosses it (a Content-Length
             * past it was refused with the head) */
            uint64_t max = req->ctx->options.max_request_body;
            if (max && req->body.received > max) {
                t->ops->consume(t->io, used);
                return read_error(req, CSHW_E_BODY_LIMIT);
            }
            memcpy(buf, data + span.off, span.len);
            t->ops->consume(t->io, used);
            req->body_done = csh_body_done(&req->body);
            return (ssize_t)span.len;
        }
        if (r == CSH_OK) {
            r = body_ended(req, data);
            t->ops->consume(t->io, used);
            return r < 0 ? read_error(req, r) : 0;
        }
        if (r < 0) {
            t->ops->consume(t->io, used);
            return read_error(req, map_csh_error(r));
        }
        /* CSH_INCOMPLETE: what was not consumed is an unfinished trailer
         * section, all of it (a complete one would have ended the body) */
        if (used < n && cshw_buf_append(&req->ctx->pend, data + used, n - used) < 0)
            return read_error(req, -ENOMEM);
        t->ops->consume(t->io, n);
    }
}

ssize_t cshw_request_read(cshw_request *req, void *buf, size_t cap)
{
    if (!req->ctx->active) return CSHW_E_NOT_ACTIVE;
    if (req->body_mode == BODY_FORM) return CSHW_E_BODY_CONSUMED;
    req->body_mode = BODY_STREAM;
    return cshw__body_read(req, buf, cap);
}

int cshw__body_forces_close(const cshw_request *req)
{
    if (req->body_done) return 0;
    if (req->body_error || req->expect_pending) return 1;
    return req->msg.body == CSH_BODY_LENGTH &&
           req->msg.content_length - req->body.received > req->ctx->options.max_drain_bytes;
}

int cshw__body_drain(cshw_request *req, uint64_t max)
{
    if (req->body_done) return 1;
    if (cshw__body_forces_close(req)) return 0;
    char scratch[4096];
    uint64_t total = 0;
    while (!req->body_done) {
        size_t cap = sizeof scratch;
        if (max - total < cap) cap = (size_t)(max - total) + 1; /* one more: see the end */
        ssize_t n = cshw__body_read(req, scratch, cap);
        if (n < 0) return 0;
        total += (uint64_t)n;
        if (total > max) return 0;
    }
    return 1;
}
