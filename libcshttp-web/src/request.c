/* The request: the request line and header fields of a parsed head, the
 * decoded path, and the query string and cookies, parsed on first use. */
#include <errno.h>
#include <string.h>
#include <strings.h>

#include "context_impl.h"
#include "cshttp/web/cookie.h"
#include "cshttp/web/error.h"
#include "cshttp/web/form.h"
#include "cshttp/web/url.h"

static const cshw_pairs no_pairs = {NULL, 0};

int cshw__request_begin(cshw_request *req, const char *head, const csh_message *msg)
{
    cshw_context *ctx = req->ctx;
    cshw_arena *a = ctx->arena;
    memset(req, 0, sizeof *req);
    req->ctx = ctx;
    req->head = head;
    req->msg = *msg;
    /* the field array is the caller's: keep a copy for the request's life */
    if (msg->num_headers) {
        csh_header *h = cshw_arena_alloc(a, msg->num_headers * sizeof *h);
        if (!h) return -ENOMEM;
        memcpy(h, msg->headers, msg->num_headers * sizeof *h);
        req->msg.headers = h;
    } else {
        req->msg.headers = NULL;
    }
    req->method = msg->method != CSH_METHOD_OTHER
                      ? csh_method_name(msg->method)
                      : cshw_arena_strndup(a, head + msg->method_span.off, msg->method_span.len);
    char *t = cshw_arena_strndup(a, head + msg->target.off, msg->target.len);
    if (!req->method || !t) return -ENOMEM;
    req->target = t;
    /* RFC 9112 §3.2: the query is what follows the first '?' (none in the
     * authority and asterisk forms) */
    char *q = msg->target_form == CSH_TARGET_AUTHORITY ? NULL : strchr(t, '?');
    req->path_raw_len = q ? (size_t)(q - t) : msg->target.len;
    req->query_string = q ? q + 1 : "";

    csh_body_init(&req->body, &req->msg, NULL, 0, req->trailer_spans, CSHW__TRAILERS);
    req->body_done = msg->body == CSH_BODY_NONE;
    req->expect_pending = !req->body_done && (msg->flags & CSH_MSG_EXPECT_CONTINUE);
    return 0;
}

const char *cshw_request_method(const cshw_request *req)
{
    return req->method;
}

csh_method cshw_request_method_id(const cshw_request *req)
{
    return req->msg.method;
}

const char *cshw_request_target(const cshw_request *req)
{
    return req->target;
}

/* The path part of the target: origin-form as it is; absolute-form
 * ("http://host/p?q", RFC 9112 §3.2.2) from the first '/' after the
 * authority, or "/" when there is none. */
int cshw__target_path(const char *t, size_t n, csh_target_form form, const char **p, size_t *len)
{
    if (form == CSH_TARGET_ABSOLUTE) {
        const char *s = memchr(t, ':', n);
        if (!s || (size_t)(t + n - s) < 3 || s[1] != '/' || s[2] != '/')
            return CSHW_E_PATH_NOT_ABSOLUTE;
        const char *auth = s + 3, *end = t + n;
        const char *slash = memchr(auth, '/', (size_t)(end - auth));
        if (!slash) {
            *p = "/";
            *len = 1;
            return 0;
        }
        *p = slash;
        *len = (size_t)(end - slash);
        return 0;
    }
    if (form != CSH_TARGET_ORIGIN) return CSHW_E_PATH_NOT_ABSOLUTE;
    *p = t;
    *len = n;
    return 0;
}

static int path_part(const cshw_request *req, const char **p, size_t *len)
{
    return cshw__target_path(req->target, req->path_raw_len, req->msg.target_form, p, len);
}

const char *cshw_request_path(cshw_request *req)
{
    if (!req->path_done) {
        req->path_done = 1;
        const char *raw;
        size_t n;
        int r = path_part(req, &raw, &n);
        if (r == 0) r = cshw_path_decode(req->ctx->arena, raw, n, &req->path, NULL);
        if (r < 0) {
            req->path = NULL;
            req->path_error = r;
        }
    }
    return req->path;
}

int cshw_request_path_error(cshw_request *req)
{
    cshw_request_path(req);
    return req->path_error;
}

const char *cshw_request_query_string(const cshw_request *req)
{
    return req->query_string;
}

int cshw_request_version_minor(const cshw_request *req)
{
    return req->msg.version_minor;
}

const char *cshw_request_scheme(const cshw_request *req)
{
    return req->ctx->transport.is_secure ? "https" : "http";
}

const char *cshw_request_remote_addr(const cshw_request *req)
{
    return req->ctx->transport.remote_addr;
}

const csh_message *cshw_request_message(const cshw_request *req)
{
    return &req->msg;
}

int64_t cshw_request_content_length(const cshw_request *req)
{
    switch (req->msg.body) {
    case CSH_BODY_LENGTH:
        return (int64_t)req->msg.content_length;
    case CSH_BODY_NONE:
        return 0;
    default:
        return -1;
    }
}

/* ---- header fields ---- */

/* NUL-terminated copies are made per field on first use, so a request
 * pays only for the fields it looks at. */
static int materialize(cshw_request *req, size_t i)
{
    cshw_arena *a = req->ctx->arena;
    if (!req->values) {
        size_t n = req->msg.num_headers;
        req->names = cshw_arena_calloc(a, n * sizeof *req->names);
        req->values = cshw_arena_calloc(a, n * sizeof *req->values);
        if (!req->names || !req->values) {
            req->names = req->values = NULL;
            return -ENOMEM;
        }
    }
    if (!req->values[i]) {
        const csh_header *h = &req->msg.headers[i];
        req->names[i] = cshw_arena_strndup(a, req->head + h->name.off, h->name.len);
        req->values[i] = cshw_arena_strndup(a, req->head + h->value.off, h->value.len);
        if (!req->names[i] || !req->values[i]) {
            req->values[i] = NULL;
            return -ENOMEM;
        }
    }
    return 0;
}

static int name_is(const cshw_request *req, size_t i, const char *name)
{
    return csh_span_ieq(req->head, req->msg.headers[i].name, name);
}

const char *cshw_request_header(cshw_request *req, const char *name)
{
    for (size_t i = 0; i < req->msg.num_headers; i++)
        if (name_is(req, i, name)) return materialize(req, i) < 0 ? NULL : req->values[i];
    return NULL;
}

size_t cshw_request_header_all(cshw_request *req, const char *name, const char **values, size_t max)
{
    size_t n = 0;
    for (size_t i = 0; i < req->msg.num_headers; i++) {
        if (!name_is(req, i, name)) continue;
        if (n < max) values[n] = materialize(req, i) < 0 ? NULL : req->values[i];
        n++;
    }
    return n;
}

size_t cshw_request_header_count(const cshw_request *req)
{
    return req->msg.num_headers;
}

const char *cshw_request_header_at(cshw_request *req, size_t i, const char **value)
{
    if (i >= req->msg.num_headers || materialize(req, i) < 0) {
        if (value) *value = NULL;
        return NULL;
    }
    if (value) *value = req->values[i];
    return req->names[i];
}

/* ---- trailers ---- */

int cshw__request_keep_trailers(cshw_request *req, const char *base, const csh_header *f, size_t n)
{
    cshw_arena *a = req->ctx->arena;
    if (n > CSHW__TRAILERS) n = CSHW__TRAILERS;
    cshw_field *t = n ? cshw_arena_alloc(a, n * sizeof *t) : NULL;
    if (n && !t) return -ENOMEM;
    for (size_t i = 0; i < n; i++) {
        t[i].name = cshw_arena_strndup(a, base + f[i].name.off, f[i].name.len);
        t[i].value = cshw_arena_strndup(a, base + f[i].value.off, f[i].value.len);
        if (!t[i].name || !t[i].value) return -ENOMEM;
    }
    req->trailers = t;
    req->ntrailers = n;
    return 0;
}

size_t cshw_request_trailer_count(const cshw_request *req)
{
    return req->ntrailers;
}

const char *cshw_request_trailer_at(const cshw_request *req, size_t i, const char **value)
{
    if (i >= req->ntrailers) {
        if (value) *value = NULL;
        return NULL;
    }
    if (value) *value = req->trailers[i].value;
    return req->trailers[i].name;
}

const char *cshw_request_trailer(const cshw_request *req, const char *name)
{
    for (size_t i = 0; i < req->ntrailers; i++)
        if (strcasecmp(req->trailers[i].name, name) == 0) return req->trailers[i].value;
    return NULL;
}

/* ---- query string and cookies ---- */

const cshw_pairs *cshw_request_query(cshw_request *req)
{
    if (!req->query_done) {
        req->query_done = 1;
        int r = cshw_form_parse(req->ctx->arena, req->query_string, strlen(req->query_string), NULL,
                                &req->query);
        if (r < 0) {
            req->query = no_pairs;
            req->query_error = r;
        }
    }
    return &req->query;
}

const char *cshw_request_query_get(cshw_request *req, const char *name)
{
    return cshw_pairs_get(cshw_request_query(req), name);
}

int cshw_request_query_error(cshw_request *req)
{
    cshw_request_query(req);
    return req->query_error;
}

/* RFC 6265 §5.4 has a user agent send one Cookie field; RFC 9113 §8.2.3
 * lets HTTP/2 split it, and proxies pass the pieces on: several lines are
 * joined with "; " before parsing. */
const cshw_pairs *cshw_request_cookies(cshw_request *req)
{
    if (req->cookies_done) return &req->cookies;
    req->cookies_done = 1;
    req->cookies = no_pairs;
    cshw_buf b;
    cshw_buf_init(&b, req->ctx->arena);
    const char *data = NULL;
    size_t len = 0, lines = 0;
    for (size_t i = 0; i < req->msg.num_headers; i++) {
        if (!name_is(req, i, "cookie")) continue;
        csh_span v = req->msg.headers[i].value;
        if (lines++ == 0) {
            data = req->head + v.off;
            len = v.len;
            continue;
        }
        if (lines == 2 && cshw_buf_append(&b, data, len) < 0) goto nomem;
        if (cshw_buf_append(&b, "; ", 2) < 0 || cshw_buf_append(&b, req->head + v.off, v.len) < 0)
            goto nomem;
    }
    if (lines == 0) return &req->cookies;
    if (lines > 1) {
        data = b.data;
        len = b.len;
    }
    int r = cshw_cookie_parse(req->ctx->arena, data, len, NULL, &req->cookies);
    if (r < 0) {
        req->cookies = no_pairs;
        req->cookies_error = r;
    }
    return &req->cookies;
nomem:
    req->cookies_error = -ENOMEM;
    return &req->cookies;
}

const char *cshw_request_cookie(cshw_request *req, const char *name)
{
    return cshw_pairs_get(cshw_request_cookies(req), name);
}

int cshw_request_cookie_error(cshw_request *req)
{
    cshw_request_cookies(req);
    return req->cookies_error;
}
