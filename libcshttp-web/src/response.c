/* The response: status, fields, buffered or streamed output, framing
 * (RFC 9112 §6), gzip, redirects, error pages and files (the pages
 * themselves, reason phrases and Date are in status.c).
 *
 * Output goes to ctx->out until it outgrows it or the handler flushes;
 * a response that ends inside it is sent in one write with Content-Length
 * (compressed first when gzip applies, so the length is the compressed
 * one). Otherwise the head goes out with Transfer-Encoding: chunked
 * (HTTP/1.1) or without framing and Connection: close (HTTP/1.0, RFC 9112
 * §6.3 rule 8), and the body follows in chunks of at most a buffer.
 *
 * HEAD (RFC 9110 §9.3.2) goes through the same steps with the same
 * decisions, including gzip, so its header section is the one GET would
 * get: Content-Length of the (compressed) body when it ends in the buffer,
 * Transfer-Encoding: chunked when it would have been streamed. Only the
 * body bytes are never written, and a streamed HEAD body is never
 * compressed, only counted. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "context_impl.h"
#include "transport_impl.h"
#include "cshttp/web/error.h"
#include "cshttp/web/html.h"
#include "util.h"

/* ---- status ---- */

/* RFC 9110 §6.4.1, §15.3.5, §15.4.5: no content, ever */
static int status_has_no_body(int status)
{
    return status < 200 || status == 204 || status == 304;
}

void cshw__response_begin(cshw_response *res)
{
    cshw_context *ctx = res->ctx;
    memset(res, 0, sizeof *res);
    res->ctx = ctx;
    res->status = 200;
    res->buf = ctx->out;
    res->cap = ctx->options.response_buffer;
}

static int check_open(const cshw_response *res)
{
    if (!res->ctx->active) return CSHW_E_NOT_ACTIVE;
    if (res->headers_sent || res->file_sent) return CSHW_E_HEADERS_SENT;
    return 0;
}

int cshw_response_set_status(cshw_response *res, int status)
{
    int r = check_open(res);
    if (r < 0) return r;
    /* 1xx are interim responses (the toolkit sends 100 itself) */
    if (status < 200 || status > 599) return CSHW_E_INVALID_STATUS;
    res->status = status;
    res->answered = 1;
    return 0;
}

int cshw_response_status(const cshw_response *res)
{
    return res->status;
}

int cshw_response_headers_sent(const cshw_response *res)
{
    return res->headers_sent || res->file_sent;
}

void cshw_response_disable_gzip(cshw_response *res)
{
    res->gzip_off = 1;
}

void cshw_response_close_connection(cshw_response *res)
{
    res->close = 1;
}

int cshw_response_set_content_length(cshw_response *res, uint64_t length)
{
    int r = check_open(res);
    if (r < 0) return r;
    if (length > INT64_MAX) return -EINVAL;
    if (res->body_bytes > length) return CSHW_E_BODY_LENGTH;
    if (res->ntrailers) return CSHW_E_TRAILER_LENGTH;
    res->has_length = 1;
    res->length = length;
    return 0;
}

/* The declared length not reached: what was sent is all there is, so the
 * connection closes rather than leave the client waiting for the rest, or
 * take the next response for it (RFC 9112 §8). HEAD, 204, 205 and 304
 * send no body: nothing can be short. */
static int short_of_length(const cshw_response *res)
{
    return res->has_length && !res->is_head && !status_has_no_body(res->status) &&
           res->status != 205 && res->body_bytes < res->length;
}

/* ---- fields ---- */

static int valid_name(const char *s)
{
    if (!s || !*s) return 0;
    for (; *s; s++)
        if (!cshw__tchar((unsigned char)*s)) return 0;
    return 1;
}

/* RFC 9110 §5.5: field-content is VCHAR, obs-text, SP and HTAB; CR, LF,
 * NUL and the other controls can never be sent (they would end the line
 * or smuggle another field). */
static int valid_value(const char *s)
{
    if (!s) return 0;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if ((*p < 0x20 && *p != '\t') || *p == 0x7f) return 0;
    return 1;
}

static int name_eq(const char *a, const char *b)
{
    /* the first bytes, case folded, tell most names apart without a call
     * (every field added and every one looked up compares with each) */
    return (a[0] | 0x20) == (b[0] | 0x20) && strcasecmp(a, b) == 0;
}

/* A field appended to an array in the arena (the header fields, or the
 * trailer fields), name and value copied; the array doubles from `first`. */
static int fields_push(cshw_arena *a, cshw_field **arr, size_t *n, size_t *cap, size_t first,
                       const char *name, const char *value)
{
    if (*n == *cap) {
        size_t c = *cap ? *cap * 2 : first;
        cshw_field *f = cshw_arena_alloc(a, c * sizeof *f);
        if (!f) return -ENOMEM;
        if (*n) memcpy(f, *arr, *n * sizeof *f);
        *arr = f;
        *cap = c;
    }
    cshw_field *f = &(*arr)[*n];
    f->name = cshw_arena_strdup(a, name);
    f->value = cshw_arena_strdup(a, value);
    if (!f->name || !f->value) return -ENOMEM;
    (*n)++;
    return 0;
}

static int field_add(cshw_response *res, const char *name, const char *value)
{
    return fields_push(res->ctx->arena, &res->fields, &res->nfields, &res->fields_cap, 16, name,
                       value);
}

static void field_remove(cshw_response *res, const char *name)
{
    size_t j = 0;
    for (size_t i = 0; i < res->nfields; i++)
        if (!name_eq(res->fields[i].name, name)) res->fields[j++] = res->fields[i];
    res->nfields = j;
}

const char *cshw_response_header(const cshw_response *res, const char *name)
{
    for (size_t i = 0; i < res->nfields; i++)
        if (name_eq(res->fields[i].name, name)) return res->fields[i].value;
    return NULL;
}

/* Framing is the toolkit's (RFC 9112 §6): a Content-Length or
 * Transfer-Encoding of the application's could contradict the body sent.
 * "Connection: close" is honoured as cshw_response_close_connection. */
static int reserved(cshw_response *res, const char *name, const char *value)
{
    if (name_eq(name, "content-length") || name_eq(name, "transfer-encoding"))
        return CSHW_E_RESERVED_HEADER;
    if (name_eq(name, "connection")) {
        if (!name_eq(value, "close")) return CSHW_E_RESERVED_HEADER;
        res->close = 1;
        return 1;
    }
    return 0;
}

static int add_checked(cshw_response *res, const char *name, const char *value, int replace)
{
    int r = check_open(res);
    if (r < 0) return r;
    if (!valid_name(name) || !valid_value(value)) return CSHW_E_INVALID_HEADER;
    r = reserved(res, name, value);
    if (r) return r < 0 ? r : 0;
    if (replace) field_remove(res, name);
    return field_add(res, name, value);
}

int cshw_response_set_header(cshw_response *res, const char *name, const char *value)
{
    return add_checked(res, name, value, 1);
}

int cshw_response_append_header(cshw_response *res, const char *name, const char *value)
{
    return add_checked(res, name, value, 0);
}

int cshw_response_remove_header(cshw_response *res, const char *name)
{
    int r = check_open(res);
    if (r < 0) return r;
    if (!valid_name(name)) return CSHW_E_INVALID_HEADER;
    field_remove(res, name);
    return 0;
}

/* ---- trailers ---- */

/* RFC 9110 §6.5.1: a field that frames the message, routes or
 * authenticates it, controls the response or describes its content is
 * needed before the content, so it is never a trailer (a recipient would
 * have acted without it). */
static int trailer_forbidden(const char *name)
{
    static const char *const names[] = {"age",
                                        "authorization",
                                        "cache-control",
                                        "connection",
                                        "content-encoding",
                                        "content-length",
                                        "content-range",
                                        "content-type",
                                        "date",
                                        "expect",
                                        "expires",
                                        "host",
                                        "keep-alive",
                                        "location",
                                        "max-forwards",
                                        "pragma",
                                        "proxy-authenticate",
                                        "proxy-authorization",
                                        "range",
                                        "retry-after",
                                        "set-cookie",
                                        "te",
                                        "trailer",
                                        "transfer-encoding",
                                        "upgrade",
                                        "vary",
                                        "www-authenticate"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (name_eq(name, names[i])) return 1;
    return 0;
}

int cshw_response_add_trailer(cshw_response *res, const char *name, const char *value)
{
    if (!res->ctx->active) return CSHW_E_NOT_ACTIVE;
    if (res->switched) return CSHW_E_SWITCHED;
    if (res->file_sent || res->finished) return CSHW_E_BODY_AFTER_FILE;
    if (!valid_name(name) || !valid_value(value)) return CSHW_E_INVALID_HEADER;
    if (trailer_forbidden(name)) return CSHW_E_TRAILER_FIELD;
    /* a length was declared (and perhaps sent): no chunked body to end */
    if (res->has_length) return CSHW_E_TRAILER_LENGTH;
    return fields_push(res->ctx->arena, &res->trailers, &res->ntrailers, &res->trailers_cap, 4,
                       name, value);
}

/* Trailers go in a chunked body's end (RFC 9112 §7.1.2), so a response
 * that has them is chunked whenever the client speaks HTTP/1.1; an
 * HTTP/1.0 client cannot receive them, and they are dropped. */
static int wants_trailers(const cshw_response *res)
{
    return res->ntrailers && res->ctx->req.msg.version_minor >= 1;
}

int cshw_response_set_content_type(cshw_response *res, const char *type, const char *charset)
{
    int r = check_open(res);
    if (r < 0) return r;
    if (!type || !*type || !valid_value(type)) return CSHW_E_INVALID_HEADER;
    if (!charset) return cshw_response_set_header(res, "Content-Type", type);
    if (!valid_name(charset)) return CSHW_E_INVALID_HEADER; /* a token, RFC 9110 §8.3.2 */
    const char *v = cshw_arena_printf(res->ctx->arena, "%s; charset=%s", type, charset);
    if (!v) return -ENOMEM;
    return cshw_response_set_header(res, "Content-Type", v);
}

int cshw_response_set_cookie(cshw_response *res, const cshw_cookie *cookie)
{
    int r = check_open(res);
    if (r < 0) return r;
    if (!cookie) return -EINVAL;
    const char *v;
    r = cshw_cookie_format(res->ctx->arena, cookie, &v);
    if (r < 0) return r;
    return field_add(res, "Set-Cookie", v);
}

/* Representation fields describe the content an error page or a redirect
 * replaces (RFC 9110 §8): they go with it. */
static void drop_representation(cshw_response *res)
{
    size_t j = 0;
    for (size_t i = 0; i < res->nfields; i++) {
        const char *n = res->fields[i].name;
        if (strncasecmp(n, "content-", 8) == 0 || name_eq(n, "etag") || name_eq(n, "last-modified"))
            continue;
        res->fields[j++] = res->fields[i];
    }
    res->nfields = j;
}

/* ---- the head ---- */

int cshw__transport_write(cshw_context *ctx, const void *data, size_t len)
{
    cshw_response *res = &ctx->res;
    if (res->error) return res->error;
    if (len == 0) return 0;
    int r = ctx->transport.ops->write(ctx->transport.io, data, len);
    if (r < 0) {
        res->error = r;
        res->close = 1;
    }
    return r < 0 ? r : 0;
}

static int has_token(const char *list, const char *token)
{
    size_t n = strlen(token);
    for (const char *p = list; *p;) {
        while (*p == ' ' || *p == '\t' || *p == ',') p++;
        const char *e = p;
        while (*e && *e != ',') e++;
        const char *t = e;
        while (t > p && (t[-1] == ' ' || t[-1] == '\t')) t--;
        if ((size_t)(t - p) == n && strncasecmp(p, token, n) == 0) return 1;
        p = e;
    }
    return 0;
}

/* Vary: Accept-Encoding whenever the encoding was considered (RFC 9110
 * §12.5.5), so that caches keep the gzip and identity answers apart. */
static int needs_vary(const cshw_response *res)
{
    for (size_t i = 0; i < res->nfields; i++)
        if (name_eq(res->fields[i].name, "vary") &&
            (has_token(res->fields[i].value, "accept-encoding") ||
             has_token(res->fields[i].value, "*")))
            return 0;
    return 1;
}

/* Decides gzip: the options, the content type, the client, the size. */
static int gzip_considered(const cshw_response *res)
{
    const cshw_context *ctx = res->ctx;
    /* a declared length is the identity body's */
    if (!ctx->options.gzip || res->gzip_off || res->file_sent || res->has_length) return 0;
    if (status_has_no_body(res->status) || res->status == 205) return 0;
    if (cshw_response_header(res, "content-encoding") || cshw_response_header(res, "content-range"))
        return 0;
    const char *type = cshw_response_header(res, "content-type");
    return type && cshw__compressible(type);
}

/* A strong validator names exact bytes: a gzip-encoded body is other
 * bytes, so its ETag becomes weak (RFC 9110 §8.8.3). */
static void weaken_etag(cshw_response *res)
{
    for (size_t i = 0; i < res->nfields; i++) {
        cshw_field *f = &res->fields[i];
        if (name_eq(f->name, "etag") && f->value[0] == '"') {
            const char *w = cshw_arena_printf(res->ctx->arena, "W/%s", f->value);
            if (w) f->value = w;
        }
    }
}

static int wants_close(cshw_response *res)
{
    const cshw_request *req = &res->ctx->req;
    if (!(req->msg.flags & CSH_MSG_KEEP_ALIVE)) res->close = 1;
    return res->close;
}

/* Appends the decimal digits of v (no printf: this runs for every response). */
static int append_decimal(cshw_buf *b, uint64_t v)
{
    char d[20];
    size_t n = 0;
    do {
        d[sizeof d - ++n] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    return cshw_buf_append(b, d + sizeof d - n, n);
}

/* The status line, Date, Server and the handler's fields into ctx->wire
 * (cleared first): non-zero when out of memory. */
static int head_start(cshw_response *res)
{
    cshw_context *ctx = res->ctx;
    cshw_buf *b = &ctx->wire;
    cshw_buf_clear(b);
    /* RFC 9110 §6.2: our version, whatever the client's; the status is
     * 200..599 (cshw_response_set_status), or 101 for a switch */
    int r = cshw_buf_append(b, "HTTP/1.1 ", 9);
    r |= append_decimal(b, (uint64_t)res->status);
    r |= cshw_buf_append(b, " ", 1);
    r |= cshw_buf_append_str(b, cshw_response_status_reason(res->status));
    r |= cshw_buf_append(b, "\r\n", 2);
    if (!cshw_response_header(res, "date")) {
        char date[30];
        cshw__http_date(date);
        r |= cshw_buf_append(b, "Date: ", 6);
        r |= cshw_buf_append(b, date, 29);
        r |= cshw_buf_append(b, "\r\n", 2);
    }
    if (ctx->options.server_header && !cshw_response_header(res, "server")) {
        r |= cshw_buf_append_str(b, "Server: ");
        r |= cshw_buf_append_str(b, ctx->options.server_header);
        r |= cshw_buf_append(b, "\r\n", 2);
    }
    for (size_t i = 0; i < res->nfields; i++) {
        r |= cshw_buf_append_str(b, res->fields[i].name);
        r |= cshw_buf_append(b, ": ", 2);
        r |= cshw_buf_append_str(b, res->fields[i].value);
        r |= cshw_buf_append(b, "\r\n", 2);
    }
    return r;
}

/* The status line and fields into ctx->wire; content_length < 0: none. */
static int build_head(cshw_response *res, int64_t content_length, int vary)
{
    cshw_context *ctx = res->ctx;
    cshw_buf *b = &ctx->wire;
    /* a request whose body failed is not answered 2xx or 3xx: the context's
     * end answers the body's error instead (context.c) */
    if (ctx->req.body_error && res->status < 400) return ctx->req.body_error;
    int r = head_start(res);
    if (res->gzip_on) r |= cshw_buf_append_str(b, "Content-Encoding: gzip\r\n");
    if (vary) r |= cshw_buf_append_str(b, "Vary: Accept-Encoding\r\n");
    if (res->chunked) r |= cshw_buf_append_str(b, "Transfer-Encoding: chunked\r\n");
    if (res->chunked && res->ntrailers) {
        /* RFC 9110 §6.6.2: the names of the trailers known by now */
        r |= cshw_buf_append_str(b, "Trailer: ");
        for (size_t i = 0; i < res->ntrailers; i++) {
            if (i) r |= cshw_buf_append(b, ", ", 2);
            r |= cshw_buf_append_str(b, res->trailers[i].name);
        }
        r |= cshw_buf_append(b, "\r\n", 2);
    }
    if (content_length >= 0) {
        r |= cshw_buf_append(b, "Content-Length: ", 16);
        r |= append_decimal(b, (uint64_t)content_length);
        r |= cshw_buf_append(b, "\r\n", 2);
    }
    if (wants_close(res))
        r |= cshw_buf_append_str(b, "Connection: close\r\n");
    else if (ctx->req.msg.version_minor == 0) /* RFC 9112 §9.3: 1.0 keeps only when told */
        r |= cshw_buf_append_str(b, "Connection: keep-alive\r\n");
    r |= cshw_buf_append(b, "\r\n", 2);
    if (r) return -ENOMEM;
    res->head_bytes += b->len; /* written next, before any body byte */
    return 0;
}

/* RFC 9110 §15.2.2: the 101 names the protocol in Upgrade, and §7.8 has
 * the sender of Upgrade list "upgrade" in Connection (the fields end the
 * connection's HTTP/1.1: no framing, no body). An Upgrade field of the
 * handler's is replaced by the one switched to. */
int cshw__response_switch(cshw_response *res, const char *protocol)
{
    cshw_context *ctx = res->ctx;
    int r = check_open(res);
    if (r < 0) return r;
    field_remove(res, "upgrade");
    res->status = 101;
    cshw_buf *b = &ctx->wire;
    r = head_start(res);
    r |= cshw_buf_append_str(b, "Connection: Upgrade\r\nUpgrade: ");
    r |= cshw_buf_append_str(b, protocol);
    r |= cshw_buf_append(b, "\r\n\r\n", 4);
    if (r) return -ENOMEM;
    res->head_bytes += b->len;
    res->headers_sent = res->finished = res->switched = res->no_body = 1;
    res->answered = 1;
    return cshw__transport_write(ctx, b->data, b->len);
}

/* ---- the body on the wire ---- */

/* Body bytes after the head, as a chunk (RFC 9112 §7.1) or as they are. */
static int send_chunk(cshw_response *res, const char *data, size_t len)
{
    if (len == 0) return 0;
    cshw_context *ctx = res->ctx;
    if (!res->chunked) return cshw__transport_write(ctx, data, len);
    char size[24];
    int n = snprintf(size, sizeof size, "%zx\r\n", len);
    if (len <= ctx->options.response_buffer) {
        cshw_buf *b = &ctx->wire;
        cshw_buf_clear(b);
        if (cshw_buf_append(b, size, (size_t)n) == 0 && cshw_buf_append(b, data, len) == 0 &&
            cshw_buf_append(b, "\r\n", 2) == 0)
            return cshw__transport_write(ctx, b->data, b->len);
    }
    int r = cshw__transport_write(ctx, size, (size_t)n);
    if (r == 0) r = cshw__transport_write(ctx, data, len);
    if (r == 0) r = cshw__transport_write(ctx, "\r\n", 2);
    return r;
}

static int chunk_sink(void *arg, const char *data, size_t len)
{
    return send_chunk(arg, data, len);
}

static int wire_silent(const cshw_response *res)
{
    return res->is_head || res->no_body || res->status == 205;
}

/* Application bytes once the head is out: compressed or not, buffered up
 * to a buffer's worth. flush: 0, 1 (push), 2 (finish). */
static int stream(cshw_response *res, const char *data, size_t len, int flush)
{
    if (wire_silent(res)) return 0;
    if (res->gzip_on) {
        int r = cshw__gzip_write(res->ctx, data, len, flush, chunk_sink, res);
        if (r < 0) res->close = res->abort = 1; /* the encoding is broken: cut it */
        return r;
    }
    if (res->len + len <= res->cap) {
        if (len) memcpy(res->buf + res->len, data, len);
        res->len += len;
        if (!flush && res->len < res->cap) return 0;
        int r = send_chunk(res, res->buf, res->len);
        res->len = 0;
        return r;
    }
    int r = send_chunk(res, res->buf, res->len);
    res->len = 0;
    if (r == 0) r = send_chunk(res, data, len);
    return r;
}

/* The head of a response whose length is unknown: chunked for HTTP/1.1,
 * until close for HTTP/1.0; then what was buffered. */
static int start_stream(cshw_response *res)
{
    cshw_context *ctx = res->ctx;
    res->no_body = (unsigned char)status_has_no_body(res->status);
    int considered = gzip_considered(res);
    res->gzip_on = (unsigned char)(considered && cshw__accepts_gzip(&ctx->req));
    if (!res->no_body && res->status != 205 && !res->has_length) {
        if (ctx->req.msg.version_minor >= 1) {
            res->chunked = 1;
        } else {
            res->until_close = 1;
            res->close = 1;
        }
    }
    /* the client was told to wait for 100 and never will be: RFC 9110
     * §10.1.1 lets it send the body anyway, which nobody will read */
    if (ctx->req.expect_pending) res->close = 1;
    if (res->gzip_on) weaken_etag(res);
    int64_t length = res->status == 205                 ? 0
                     : res->has_length && !res->no_body ? (int64_t)res->length
                                                        : -1;
    int r = build_head(res, length, considered && needs_vary(res));
    if (r < 0) return r;
    res->headers_sent = 1;
    r = cshw__transport_write(ctx, ctx->wire.data, ctx->wire.len);
    if (r < 0) return r;
    if (wire_silent(res)) {
        res->len = 0;
        return 0;
    }
    if (res->gzip_on) {
        r = cshw__gzip_start(ctx);
        if (r < 0) {
            res->close = res->abort = 1;
            return r;
        }
        size_t n = res->len;
        res->len = 0;
        return stream(res, res->buf, n, 0);
    }
    /* what was buffered stays there and goes out as the first chunk */
    return 0;
}

int cshw_response_write(cshw_response *res, const void *data, size_t len)
{
    if (!res->ctx->active) return CSHW_E_NOT_ACTIVE;
    if (res->error) return res->error;
    if (res->switched) return CSHW_E_SWITCHED;
    if (res->file_sent || res->finished) return CSHW_E_BODY_AFTER_FILE;
    if (len && !data) return -EINVAL;
    /* never past the declared length: those bytes would be the start of
     * another response to the client (nothing of them is sent) */
    if (res->has_length && len > res->length - res->body_bytes) return CSHW_E_BODY_LENGTH;
    res->answered = 1;
    res->body_bytes += len;
    if (!res->headers_sent) {
        if (len <= res->cap - res->len) {
            if (len) memcpy(res->buf + res->len, data, len);
            res->len += len;
            return 0;
        }
        int r = start_stream(res);
        if (r < 0) return r;
    }
    return stream(res, data, len, 0);
}

int cshw_response_puts(cshw_response *res, const char *s)
{
    return cshw_response_write(res, s, strlen(s));
}

int cshw_response_vprintf(cshw_response *res, const char *fmt, va_list ap)
{
    if (!res->ctx->active) return CSHW_E_NOT_ACTIVE;
    va_list ap2;
    va_copy(ap2, ap);
    /* straight into the buffer when it fits, as it nearly always does */
    size_t room = (res->headers_sent && res->gzip_on) || res->has_length ? 0 : res->cap - res->len;
    if (!res->error && !res->file_sent && !res->finished && room > 0) {
        int n = vsnprintf(res->buf + res->len, room, fmt, ap2);
        va_end(ap2);
        if (n < 0) return -EINVAL;
        if ((size_t)n < room) {
            /* the bytes are in place: account for them as a write would */
            if (!res->headers_sent || !wire_silent(res)) res->len += (size_t)n;
            res->answered = 1;
            res->body_bytes += (size_t)n;
            return 0;
        }
    } else {
        va_end(ap2);
    }
    char *s = cshw_arena_vprintf(res->ctx->arena, fmt, ap);
    if (!s) return -ENOMEM;
    return cshw_response_write(res, s, strlen(s));
}

int cshw_response_printf(cshw_response *res, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int r = cshw_response_vprintf(res, fmt, ap);
    va_end(ap);
    return r;
}

int cshw_response_flush(cshw_response *res)
{
    cshw_context *ctx = res->ctx;
    if (!ctx->active) return CSHW_E_NOT_ACTIVE;
    if (res->error) return res->error;
    if (res->file_sent || res->finished) return 0;
    res->answered = 1;
    int r = res->headers_sent ? 0 : start_stream(res);
    if (r == 0) r = stream(res, NULL, 0, 1);
    if (r == 0 && ctx->transport.ops->flush) {
        r = ctx->transport.ops->flush(ctx->transport.io);
        if (r < 0) res->error = r;
    }
    return r;
}

static int buf_sink(void *arg, const char *data, size_t len)
{
    return cshw_buf_append(arg, data, len);
}

/* A response that ended inside its buffer: one write, Content-Length. */
static int send_buffered(cshw_response *res)
{
    cshw_context *ctx = res->ctx;
    res->no_body = (unsigned char)status_has_no_body(res->status);
    const char *body = res->buf;
    size_t len = res->no_body || res->status == 205 ? 0 : res->len;
    int considered = gzip_considered(res);
    if (considered && len >= ctx->options.gzip_min_bytes && cshw__accepts_gzip(&ctx->req)) {
        cshw_buf z;
        cshw_buf_init(&z, ctx->arena);
        int r = cshw__gzip_start(ctx);
        if (r == 0) r = cshw__gzip_write(ctx, body, len, 2, buf_sink, &z);
        /* identity when compression does not pay (or fails: the body is
         * still good as it is) */
        if (r == 0 && z.len < len) {
            res->gzip_on = 1;
            body = z.data;
            len = z.len;
            weaken_etag(res);
        }
    }
    /* a HEAD handler that wrote nothing does not know the length: say
     * nothing rather than 0 (RFC 9110 §9.3.2 lets HEAD omit it) */
    int64_t length = res->no_body || (res->is_head && res->body_bytes == 0) ? -1 : (int64_t)len;
    if (res->has_length && !res->no_body) length = res->status == 205 ? 0 : (int64_t)res->length;
    if (short_of_length(res)) res->close = 1; /* said in the head: Connection: close */
    int r = build_head(res, length, considered && needs_vary(res));
    if (r < 0) return r;
    res->headers_sent = 1;
    cshw_buf *b = &ctx->wire;
    if (res->is_head || len == 0) return cshw__transport_write(ctx, b->data, b->len);
    if (cshw_buf_append(b, body, len) == 0) return cshw__transport_write(ctx, b->data, b->len);
    r = cshw__transport_write(ctx, b->data, b->len);
    return r < 0 ? r : cshw__transport_write(ctx, body, len);
}

/* RFC 9112 §7.1: the last chunk, then the trailer section (§7.1.2),
 * which an empty line ends. */
static int send_last_chunk(cshw_response *res)
{
    cshw_context *ctx = res->ctx;
    if (!res->ntrailers) return cshw__transport_write(ctx, "0\r\n\r\n", 5);
    cshw_buf *b = &ctx->wire;
    cshw_buf_clear(b);
    int r = cshw_buf_append(b, "0\r\n", 3);
    for (size_t i = 0; i < res->ntrailers; i++) {
        r |= cshw_buf_append_str(b, res->trailers[i].name);
        r |= cshw_buf_append(b, ": ", 2);
        r |= cshw_buf_append_str(b, res->trailers[i].value);
        r |= cshw_buf_append(b, "\r\n", 2);
    }
    r |= cshw_buf_append(b, "\r\n", 2);
    if (r) return -ENOMEM;
    return cshw__transport_write(ctx, b->data, b->len);
}

int cshw__response_end(cshw_response *res)
{
    cshw_context *ctx = res->ctx;
    int r = 0;
    if (res->finished || res->abort) {
        r = res->error;
    } else if (!res->headers_sent && !wants_trailers(res)) {
        r = send_buffered(res);
    } else {
        if (!res->headers_sent) {
            /* the whole body is known: compressed on the rule of a buffered
             * one, which leaves a small body as it is */
            if (res->len < ctx->options.gzip_min_bytes) res->gzip_off = 1;
            r = start_stream(res);
        }
        if (r == 0) r = stream(res, NULL, 0, 2);
        if (r == 0 && res->chunked && !wire_silent(res)) r = send_last_chunk(res);
    }
    if (short_of_length(res)) res->close = res->abort = 1;
    res->finished = 1;
    if (r == 0 && ctx->transport.ops->flush) {
        r = ctx->transport.ops->flush(ctx->transport.io);
        if (r < 0) res->error = r;
    }
    if (r < 0) res->close = 1;
    return r < 0 ? r : res->error;
}

/* ---- redirects, error pages, files ---- */

/* Replaces whatever was buffered with a small HTML page. */
static int replace_body(cshw_response *res, int status, const cshw_buf *page)
{
    res->has_length = 0; /* the page has its own */
    res->len = 0;
    res->body_bytes = 0;
    drop_representation(res);
    res->status = status;
    int r = field_add(res, "Content-Type", "text/html; charset=utf-8");
    if (r == 0) r = cshw_response_write(res, page->data, page->len);
    return r;
}

static int send_error(cshw_response *res, int status, const char *detail)
{
    if (!res->ctx->active) return CSHW_E_NOT_ACTIVE;
    if (res->headers_sent || res->file_sent) {
        /* too late for a status: cut the response short so that the client
         * cannot take it for complete (RFC 9112 §8) */
        res->abort = res->close = 1;
        return CSHW_E_HEADERS_SENT;
    }
    if (status < 400 || status > 599) return CSHW_E_INVALID_STATUS;
    cshw_buf page;
    cshw_buf_init(&page, res->ctx->arena);
    int r = cshw__error_page(&page, status, detail);
    return r < 0 ? r : replace_body(res, status, &page);
}

int cshw_response_send_error(cshw_response *res, int status)
{
    return send_error(res, status, NULL);
}

void cshw__response_auto_error(cshw_response *res, int code)
{
    int status = code == -ETIMEDOUT ? 408 : cshw_error_status(code);
    if (status < 400 || status > 599) status = 500;
    send_error(res, status, cshw_error_message(code));
}

int cshw_response_redirect(cshw_response *res, int status, const char *location)
{
    int r = check_open(res);
    if (r < 0) return r;
    if (status != 301 && status != 302 && status != 303 && status != 307 && status != 308)
        return CSHW_E_INVALID_REDIRECT;
    if (!location || !*location || !valid_value(location)) return CSHW_E_INVALID_HEADER;
    cshw_buf page;
    cshw_buf_init(&page, res->ctx->arena);
    char title[64];
    snprintf(title, sizeof title, "%d %s", status, cshw_response_status_reason(status));
    r = cshw_buf_append_str(&page, "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>");
    r |= cshw_buf_append_str(&page, title);
    r |= cshw_buf_append_str(&page, "</title></head>\n<body><h1>");
    r |= cshw_buf_append_str(&page, title);
    r |= cshw_buf_append_str(&page, "</h1>\n<p><a href=\"");
    r |= cshw_html_encode_buf(&page, location, strlen(location));
    r |= cshw_buf_append_str(&page, "\">");
    r |= cshw_html_encode_buf(&page, location, strlen(location));
    r |= cshw_buf_append_str(&page, "</a></p>\n</body></html>\n");
    if (r) return -ENOMEM;
    field_remove(res, "location");
    r = field_add(res, "Location", location);
    return r < 0 ? r : replace_body(res, status, &page);
}

/* Without the transport's send_file: read and write through the buffer. */
static int copy_file(cshw_response *res, int fd, off_t offset, uint64_t len)
{
    while (len > 0) {
        size_t n = len < res->cap ? (size_t)len : res->cap;
        ssize_t got = pread(fd, res->buf, n, offset);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) return CSHW_E_FILE_READ; /* shorter than announced */
        int r = cshw__transport_write(res->ctx, res->buf, (size_t)got);
        if (r < 0) return r;
        offset += got;
        len -= (uint64_t)got;
    }
    return 0;
}

uint64_t cshw_response_queued(const cshw_response *res)
{
    const cshw_context *ctx = res->ctx;
    return (uint64_t)res->len + (ctx->active ? cshw__transport_queued(&ctx->transport) : 0);
}

/* len bytes of the file, as body bytes of a response already streaming:
 * read and passed through stream() (compressed, buffered as any write). */
static int stream_file(cshw_response *res, int fd, off_t offset, uint64_t len)
{
    char piece[16384];
    while (len > 0) {
        size_t n = len < sizeof piece ? (size_t)len : sizeof piece;
        ssize_t got = pread(fd, piece, n, offset);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) return CSHW_E_FILE_READ;
        int r = stream(res, piece, (size_t)got, 0);
        if (r < 0) return r;
        offset += got;
        len -= (uint64_t)got;
    }
    return 0;
}

int cshw_response_write_file(cshw_response *res, int fd, off_t offset, uint64_t len)
{
    cshw_context *ctx = res->ctx;
    if (!ctx->active) return CSHW_E_NOT_ACTIVE;
    if (res->error) return res->error;
    if (res->file_sent || res->finished) return CSHW_E_BODY_AFTER_FILE;
    if (fd < 0 || offset < 0 || len > (uint64_t)INT64_MAX - (uint64_t)offset) return -EINVAL;
    if (res->has_length && len > res->length - res->body_bytes) return CSHW_E_BODY_LENGTH;
    if (len == 0) return 0;
    res->answered = 1;
    int r = 0;
    if (!res->headers_sent) {
        res->gzip_off = 1; /* the file's bytes go as they are */
        r = start_stream(res);
    }
    res->body_bytes += len;
    if (r == 0 && wire_silent(res)) return 0;
    if (r == 0 && res->gzip_on) {
        r = stream_file(res, fd, offset, len);
    } else if (r == 0) {
        /* what was buffered goes first, then the range, framed as a
         * chunk when the body is chunked (RFC 9112 §7.1) */
        r = send_chunk(res, res->buf, res->len);
        res->len = 0;
        char size[24];
        int n = snprintf(size, sizeof size, "%llx\r\n", (unsigned long long)len);
        if (r == 0 && res->chunked) r = cshw__transport_write(ctx, size, (size_t)n);
        if (r == 0)
            r = ctx->transport.ops->send_file
                    ? ctx->transport.ops->send_file(ctx->transport.io, fd, offset, (size_t)len)
                    : copy_file(res, fd, offset, len);
        if (r == 0 && res->chunked) r = cshw__transport_write(ctx, "\r\n", 2);
    }
    if (r < 0) {
        /* the framing promised cannot be kept: the connection is cut */
        res->abort = res->close = 1;
        if (!res->error) res->error = r;
    }
    return r;
}

/* A file this small goes out in one write with its head: one segment, and
 * a read instead of a sendfile, rather than a head segment and then the
 * body (the same two system calls, half the packets). */
#define SMALL_FILE (16u * 1024u)

/* Appends len bytes of fd from offset to b: 0, or -1 with b as it was (a
 * file shorter than announced, a read error, no memory). */
static int append_file(cshw_buf *b, int fd, off_t offset, size_t len)
{
    size_t start = b->len;
    if (cshw_buf_reserve(b, len)) return -1;
    size_t got = 0;
    while (got < len) {
        ssize_t n = pread(fd, b->data + start + got, len - got, offset + (off_t)got);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return -1;
        got += (size_t)n;
    }
    b->len = start + len;
    return 0;
}

int cshw_response_send_file(cshw_response *res, int fd, off_t offset, uint64_t len)
{
    cshw_context *ctx = res->ctx;
    int r = check_open(res);
    if (r < 0) return r;
    if (res->error) return res->error;
    if (fd < 0 || offset < 0 || len > INT64_MAX) return -EINVAL;
    res->answered = 1;
    res->file_sent = 1;
    res->has_length = 0; /* the file's length is the one sent */
    res->len = 0;
    res->body_bytes = len;
    res->no_body = (unsigned char)status_has_no_body(res->status);
    if (ctx->req.expect_pending) res->close = 1;
    r = build_head(res, res->no_body ? -1 : (int64_t)len, 0);
    if (r < 0) return r;
    res->headers_sent = 1;
    int body = !wire_silent(res) && len > 0;
    if (body && len <= SMALL_FILE && append_file(&ctx->wire, fd, offset, (size_t)len) == 0) {
        r = cshw__transport_write(ctx, ctx->wire.data, ctx->wire.len);
        res->finished = 1;
        return r;
    }
    r = cshw__transport_write(ctx, ctx->wire.data, ctx->wire.len);
    if (r == 0 && body) {
        if (ctx->transport.ops->send_file) {
            r = ctx->transport.ops->send_file(ctx->transport.io, fd, offset, (size_t)len);
        } else {
            r = copy_file(res, fd, offset, len);
        }
        /* the Content-Length promised cannot be kept: close */
        if (r < 0) res->abort = res->close = 1;
        if (r < 0 && !res->error) res->error = r;
    }
    res->finished = 1;
    return r;
}
