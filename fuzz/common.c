/* Shared machinery of the libcshttp fuzz targets: see common.h. */
#include "common.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void fz_fail(const char *file, int line, const char *cond, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "\n==== fuzz check failed at %s:%d: %s\n==== ", file, line, cond);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n");
    fflush(stderr);
    abort();
}

/* ---- buffers ---------------------------------------------------------- */

void fz_buf_free(fz_buf *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

void fz_buf_clear(fz_buf *b)
{
    b->len = 0;
}

static void fz_buf_reserve(fz_buf *b, size_t extra)
{
    if (b->cap - b->len >= extra) return;
    size_t cap = b->cap ? b->cap : 256;
    while (cap - b->len < extra) cap *= 2;
    char *d = realloc(b->data, cap);
    FZ_CHECK(d != NULL, "out of memory (%zu bytes)", cap);
    b->data = d;
    b->cap = cap;
}

void fz_buf_put(fz_buf *b, const void *data, size_t len)
{
    if (len == 0) return;
    fz_buf_reserve(b, len);
    memcpy(b->data + b->len, data, len);
    b->len += len;
}

void fz_buf_printf(fz_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    FZ_CHECK(n >= 0, "vsnprintf failed");
    fz_buf_reserve(b, (size_t)n + 1);
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

void fz_buf_escaped(fz_buf *b, const void *data, size_t len)
{
    const unsigned char *s = data;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = s[i];
        if (c == '\\') {
            fz_buf_put(b, "\\\\", 2);
        } else if (c >= 0x20 && c < 0x7f) {
            fz_buf_put(b, &c, 1);
        } else if (c == '\r') {
            fz_buf_put(b, "\\r", 2);
        } else if (c == '\n') {
            fz_buf_put(b, "\\n", 2);
        } else if (c == '\t') {
            fz_buf_put(b, "\\t", 2);
        } else {
            fz_buf_printf(b, "\\x%02x", c);
        }
    }
}

void fz_print_escaped(const char *label, const void *data, size_t len)
{
    fz_buf b = {0};
    fz_buf_escaped(&b, data, len);
    fprintf(stderr, "%s (%zu bytes): \"%.*s\"\n", label, len, (int)b.len, b.data ? b.data : "");
    fz_buf_free(&b);
}

/* ---- split points ------------------------------------------------------ */

void fz_rng_seed(fz_rng *r, uint32_t seed)
{
    r->s = seed * 2654435761u + 0x9e3779b9u;
    if (r->s == 0) r->s = 1;
}

uint32_t fz_rng_next(fz_rng *r)
{
    uint32_t x = r->s;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    r->s = x;
    return x;
}

size_t fz_piece(fz_rng *r, int mode)
{
    switch (mode) {
    case FZ_SPLIT_BYTES:
        return 1;
    case FZ_SPLIT_SMALL:
        return 1 + fz_rng_next(r) % 16;
    case FZ_SPLIT_LARGE:
        return 1 + fz_rng_next(r) % 512;
    default:
        return SIZE_MAX;
    }
}

/* ---- checks ------------------------------------------------------------ */

int fz_request_status_ok(int status)
{
    return status == 400 || status == 413 || status == 414 || status == 431 || status == 501 ||
           status == 505;
}

static int fz_status_ok(csh_parser_type type, int status)
{
    /* Errors that only a response can produce carry 502 (error.h). */
    return fz_request_status_ok(status) || (type == CSH_RESPONSE && status == 502);
}

/* Every result a parser function may return is CSH_OK, CSH_INCOMPLETE,
 * CSH_DATA or a named error with a known status. */
static void fz_check_code(int r, csh_parser_type type, const char *what)
{
    if (r >= 0) {
        FZ_CHECK(r == CSH_OK || r == CSH_INCOMPLETE || r == CSH_DATA, "%s returned %d", what, r);
        return;
    }
    FZ_CHECK(strcmp(csh_error_name(r), "CSH_E_UNKNOWN") != 0, "%s returned unknown error %d", what,
             r);
    FZ_CHECK(r != CSH_E_INVALID_ARGUMENT, "%s returned CSH_E_INVALID_ARGUMENT on valid use", what);
    int st = csh_error_status(r);
    FZ_CHECK(fz_status_ok(type, st), "%s returned %s with status %d", what, csh_error_name(r), st);
}

static int fz_tchar(unsigned char c)
{
    if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) return 1;
    return c != 0 && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

static int fz_all_tchar(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!fz_tchar((unsigned char)s[i])) return 0;
    return 1;
}

/* field-value, reason-phrase: HTAB, SP, VCHAR, obs-text; no CTL (RFC 5234:
 * %x00-1F and %x7F). */
static int fz_no_ctl(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if ((c < 0x20 && c != '\t') || c == 0x7f) return 0;
    }
    return 1;
}

static int fz_span_is(const char *base, csh_span s, const char *str)
{
    return csh_span_eq(base, s, str);
}

void fz_check_message(const csh_message *m, const char *head, size_t len, csh_parser_type type,
                      csh_method request_method)
{
    size_t hl = m->head_length;
    FZ_CHECK(hl >= 1 && hl <= len, "head_length %zu, %zu bytes given", hl, len);
    FZ_CHECK(m->version_major == 1, "version_major %d", m->version_major);
    FZ_CHECK(m->version_minor >= 0 && m->version_minor <= 9, "version_minor %d", m->version_minor);
    FZ_CHECK(m->num_headers <= FZ_MAX_FIELDS, "num_headers %zu", m->num_headers);
    FZ_CHECK(m->num_headers == 0 || m->headers != NULL, "headers NULL");

    size_t hosts = 0;
    for (size_t i = 0; i < m->num_headers; i++) {
        csh_span n = m->headers[i].name, v = m->headers[i].value;
        FZ_CHECK(fz_span_in(n, hl), "header %zu name span %zu+%zu outside head %zu", i, n.off,
                 n.len, hl);
        FZ_CHECK(fz_span_in(v, hl), "header %zu value span %zu+%zu outside head %zu", i, v.off,
                 v.len, hl);
        FZ_CHECK(n.len > 0, "header %zu: empty name accepted", i);
        FZ_CHECK(fz_all_tchar(head + n.off, n.len), "header %zu: name is not a token", i);
        FZ_CHECK(fz_no_ctl(head + v.off, v.len), "header %zu: value has a control character", i);
        if (v.len > 0) {
            char a = head[v.off], z = head[v.off + v.len - 1];
            FZ_CHECK(a != ' ' && a != '\t' && z != ' ' && z != '\t',
                     "header %zu: value keeps leading or trailing whitespace", i);
        }
        /* A value comes after its name, a field after the one before it. */
        FZ_CHECK(v.off >= n.off + n.len, "header %zu: value before name", i);
        if (i > 0) {
            csh_span pv = m->headers[i - 1].value;
            FZ_CHECK(n.off >= pv.off + pv.len, "header %zu overlaps header %zu", i, i - 1);
        }
        if (csh_span_ieq(head, n, "host")) {
            hosts++;
            if (m->flags & CSH_MSG_HAS_HOST)
                FZ_CHECK(m->host.off == v.off && m->host.len == v.len,
                         "msg.host is not the Host field's value");
        }
    }

    FZ_CHECK(m->body >= CSH_BODY_NONE && m->body <= CSH_BODY_UNTIL_CLOSE, "body kind %d",
             (int)m->body);
    if (m->body == CSH_BODY_LENGTH) {
        FZ_CHECK(m->content_length > 0, "CSH_BODY_LENGTH with content_length 0");
        FZ_CHECK(m->flags & CSH_MSG_HAS_CONTENT_LENGTH, "CSH_BODY_LENGTH without Content-Length");
    } else {
        FZ_CHECK(m->content_length == 0, "body kind %d with content_length %llu", (int)m->body,
                 (unsigned long long)m->content_length);
    }
    if (m->body == CSH_BODY_CHUNKED)
        FZ_CHECK(m->flags & CSH_MSG_HAS_TRANSFER_ENCODING,
                 "chunked body without Transfer-Encoding");
    if (m->flags & CSH_MSG_CONNECTION_CLOSE)
        FZ_CHECK(!(m->flags & CSH_MSG_KEEP_ALIVE), "Connection: close and KEEP_ALIVE");
    if (m->flags & CSH_MSG_HAS_HOST) {
        FZ_CHECK(fz_span_in(m->host, hl), "host span %zu+%zu outside head", m->host.off,
                 m->host.len);
        FZ_CHECK(hosts == 1, "HAS_HOST with %zu Host fields", hosts);
    } else if (type == CSH_REQUEST) {
        /* Host is a request field: a response's is an ordinary field. */
        FZ_CHECK(hosts == 0, "%zu Host fields but no CSH_MSG_HAS_HOST", hosts);
    }
    if (m->upgrade.len > 0)
        FZ_CHECK(fz_span_in(m->upgrade, hl), "upgrade span %zu+%zu outside head", m->upgrade.off,
                 m->upgrade.len);
    if (m->flags & CSH_MSG_UPGRADE) FZ_CHECK(m->version_minor >= 1, "CSH_MSG_UPGRADE in HTTP/1.0");

    if (type == CSH_REQUEST) {
        csh_span ms = m->method_span, t = m->target;
        FZ_CHECK(fz_span_in(ms, hl) && ms.len > 0, "method span %zu+%zu", ms.off, ms.len);
        FZ_CHECK(fz_all_tchar(head + ms.off, ms.len), "method is not a token");
        FZ_CHECK(fz_span_in(t, hl) && t.len > 0, "target span %zu+%zu", t.off, t.len);
        for (size_t i = 0; i < t.len; i++) {
            unsigned char c = (unsigned char)head[t.off + i];
            FZ_CHECK(c > 0x20 && c < 0x7f, "target byte 0x%02x is not VCHAR", c);
        }
        FZ_CHECK(m->method >= CSH_METHOD_OTHER && m->method <= CSH_METHOD_PATCH, "method %d",
                 (int)m->method);
        for (int k = CSH_METHOD_GET; k <= CSH_METHOD_PATCH; k++) {
            int same = fz_span_is(head, ms, csh_method_name((csh_method)k));
            FZ_CHECK(same == (m->method == (csh_method)k), "method enum %d vs method token", k);
        }
        if (m->method == CSH_METHOD_OTHER)
            FZ_CHECK(strcmp(csh_method_name(CSH_METHOD_OTHER), "") == 0, "name of OTHER");
        switch (m->target_form) {
        case CSH_TARGET_ORIGIN:
            FZ_CHECK(head[t.off] == '/', "origin-form target not starting with /");
            break;
        case CSH_TARGET_ABSOLUTE:
            break;
        case CSH_TARGET_AUTHORITY:
            break;
        case CSH_TARGET_ASTERISK:
            FZ_CHECK(fz_span_is(head, t, "*"), "asterisk-form target is not *");
            FZ_CHECK(m->method == CSH_METHOD_OPTIONS, "asterisk-form with a method not OPTIONS");
            break;
        default:
            FZ_CHECK(0, "target_form %d", (int)m->target_form);
        }
        FZ_CHECK((m->method == CSH_METHOD_CONNECT) == (m->target_form == CSH_TARGET_AUTHORITY),
                 "CONNECT without authority-form, or authority-form without CONNECT");
        FZ_CHECK(m->body != CSH_BODY_UNTIL_CLOSE, "request body until close");
        FZ_CHECK(!(m->flags & (CSH_MSG_INTERIM | CSH_MSG_TUNNEL)), "response flags on a request");
        if (m->flags & CSH_MSG_HAS_TRANSFER_ENCODING)
            FZ_CHECK(m->body == CSH_BODY_CHUNKED, "request with Transfer-Encoding not chunked");
        FZ_CHECK(!((m->flags & CSH_MSG_HAS_TRANSFER_ENCODING) &&
                   (m->flags & CSH_MSG_HAS_CONTENT_LENGTH)),
                 "request with Content-Length and Transfer-Encoding accepted");
        if (m->version_minor == 0)
            FZ_CHECK(!(m->flags & CSH_MSG_HAS_TRANSFER_ENCODING), "Transfer-Encoding in HTTP/1.0");
        else
            FZ_CHECK(m->flags & CSH_MSG_HAS_HOST, "HTTP/1.1 request without Host accepted");
    } else {
        int st = m->status;
        FZ_CHECK(st >= 100 && st <= 599, "status %d", st);
        FZ_CHECK(fz_span_in(m->reason, hl), "reason span %zu+%zu", m->reason.off, m->reason.len);
        FZ_CHECK(fz_no_ctl(head + m->reason.off, m->reason.len), "reason has a control character");
        /* RFC 9112 §6.3 */
        if (request_method == CSH_METHOD_HEAD || (st >= 100 && st < 200) || st == 204 || st == 304)
            FZ_CHECK(m->body == CSH_BODY_NONE, "status %d to method %d with body kind %d", st,
                     (int)request_method, (int)m->body);
        int tunnel = st == 101 || (request_method == CSH_METHOD_CONNECT && st >= 200 && st < 300);
        FZ_CHECK(tunnel == !!(m->flags & CSH_MSG_TUNNEL), "status %d to method %d: TUNNEL flag %d",
                 st, (int)request_method, !!(m->flags & CSH_MSG_TUNNEL));
        int interim = st >= 100 && st < 200 && st != 101;
        FZ_CHECK(interim == !!(m->flags & CSH_MSG_INTERIM), "status %d: INTERIM flag %d", st,
                 !!(m->flags & CSH_MSG_INTERIM));
    }
}

void fz_limits_tiny(csh_limits *l)
{
    l->max_start_line = 48;
    l->max_field_line = 40;
    l->max_head = 256;
    l->max_fields = 6;
    l->max_chunk_ext = 12;
    l->max_trailer = 64;
    l->max_method = 7;
}

int fz_verbose(void)
{
    static int verbose = -1;
    if (verbose < 0) verbose = getenv("FUZZ_VERBOSE") != NULL;
    return verbose;
}

/* An LF in input[from .. to) whose previous byte is not a CR of the same
 * stretch. */
static int fz_bare_lf_in(const char *in, size_t from, size_t to)
{
    for (size_t i = from; i < to; i++)
        if (in[i] == '\n' && (i == from || in[i - 1] != '\r')) return 1;
    return 0;
}

/* ---- the connection player ---------------------------------------------- */

/* The bytes one call may look at: in split mode a fresh heap copy of exactly
 * `len` bytes (so ASan sees reads past len and stale pointers), else the
 * input itself. */
typedef struct fz_window {
    char *copy;
} fz_window;

static const char *fz_window_get(fz_window *w, int split, const char *src, size_t len)
{
    free(w->copy);
    w->copy = NULL;
    if (!split) return src;
    w->copy = malloc(len ? len : 1);
    FZ_CHECK(w->copy != NULL, "out of memory");
    if (len) memcpy(w->copy, src, len);
    return w->copy;
}

static void fz_transcript_head(fz_buf *t, const csh_message *m, const char *head,
                               csh_parser_type type)
{
    if (type == CSH_REQUEST) {
        fz_buf_printf(t, "  method %d \"", (int)m->method);
        fz_buf_escaped(t, head + m->method_span.off, m->method_span.len);
        fz_buf_printf(t, "\" @%zu target \"", m->method_span.off);
        fz_buf_escaped(t, head + m->target.off, m->target.len);
        fz_buf_printf(t, "\" @%zu form %d\n", m->target.off, (int)m->target_form);
    } else {
        fz_buf_printf(t, "  status %d reason \"", m->status);
        fz_buf_escaped(t, head + m->reason.off, m->reason.len);
        fz_buf_printf(t, "\" @%zu\n", m->reason.off);
    }
    fz_buf_printf(t, "  version %d.%d head_length %zu body %d content_length %llu flags 0x%x\n",
                  m->version_major, m->version_minor, m->head_length, (int)m->body,
                  (unsigned long long)m->content_length, m->flags);
    fz_buf_printf(t, "  host %zu+%zu upgrade %zu+%zu fields %zu\n", m->host.off, m->host.len,
                  m->upgrade.off, m->upgrade.len, m->num_headers);
    for (size_t i = 0; i < m->num_headers; i++) {
        const csh_header *h = &m->headers[i];
        fz_buf_printf(t, "  field @%zu \"", h->name.off);
        fz_buf_escaped(t, head + h->name.off, h->name.len);
        fz_buf_printf(t, "\" @%zu \"", h->value.off);
        fz_buf_escaped(t, head + h->value.off, h->value.len);
        fz_buf_put(t, "\"\n", 2);
    }
}

void fz_run(const fz_config *cfg, const uint8_t *data, size_t size, fz_result *res)
{
    const char *in = (const char *)data;
    const int split = cfg->split != FZ_SPLIT_WHOLE;
    fz_buf *t = cfg->transcript;
    csh_header fields[FZ_MAX_FIELDS];
    csh_header trailers[FZ_MAX_TRAILERS];
    csh_parser p;
    fz_rng rng;
    fz_window win = {0};
    fz_buf body = {0};
    size_t avail = split ? 0 : size; /* bytes "received" so far */
    size_t off = 0;                  /* first byte of the current message */
    size_t trailers_cap = cfg->trailers_cap > FZ_MAX_TRAILERS ? FZ_MAX_TRAILERS : cfg->trailers_cap;

    memset(res, 0, sizeof *res);
    res->last = CSH_OK;
    fz_rng_seed(&rng, cfg->seed);
    memset(fields, 0xa5, sizeof fields);
    memset(trailers, 0xa5, sizeof trailers);
    csh_parser_init(&p, cfg->type, fields, FZ_MAX_FIELDS, cfg->limits, cfg->flags);
    /* The body API is chosen call by call, apart from the piece sizes:
     * csh_body_next and csh_body_read must be interchangeable at any point
     * of a body, and a reader prepared once and reset for each message must
     * read as one prepared for it (the transcripts of split and whole runs,
     * and of the runs with other seeds, are compared). */
    fz_rng api;
    fz_rng_seed(&api, cfg->seed ^ 0x9e3779b9u);
    csh_body b;
    csh_body_init(&b, NULL, cfg->limits, cfg->flags, trailers, trailers_cap);
    FZ_CHECK(csh_body_done(&b), "a reader prepared without a message is not done");

    for (size_t index = 0;; index++) {
        if (off == size) {
            /* The input ended between two messages: a clean close. */
            if (t) fz_buf_printf(t, "eof at %zu\n", off);
            res->last = CSH_OK;
            break;
        }
        if (index > 0) csh_parser_reset(&p);
        if (cfg->type == CSH_RESPONSE) csh_parser_set_request_method(&p, cfg->request_method);
        if (t) fz_buf_printf(t, "message %zu at %zu\n", index, off);

        /* The head: a growing buffer that starts at the message's first byte. */
        int r = CSH_INCOMPLETE;
        size_t hlen = 0;
        for (int first = 1;; first = 0) {
            if (!first || avail == off) {
                if (avail == size) break; /* the input ended inside the head */
                size_t piece = fz_piece(&rng, cfg->split);
                avail += piece < size - avail ? piece : size - avail;
            }
            FZ_CHECK(avail - off >= hlen, "head buffer shrank");
            hlen = avail - off;
            const char *buf = fz_window_get(&win, split, in + off, hlen);
            r = csh_parser_execute(&p, buf, hlen);
            fz_check_code(r, cfg->type, "csh_parser_execute");
            FZ_CHECK(r != CSH_DATA, "csh_parser_execute returned CSH_DATA");
            if (r != CSH_INCOMPLETE) break;
        }
        if (r == CSH_OK) {
            fz_check_message(&p.msg, in + off, hlen, cfg->type, cfg->request_method);
            /* Sticky: a later call on the same bytes says CSH_OK again. */
            const char *buf = fz_window_get(&win, split, in + off, hlen);
            FZ_CHECK(csh_parser_execute(&p, buf, hlen) == CSH_OK, "CSH_OK not sticky");
        } else if (r < 0) {
            size_t eo = csh_parser_error_offset(&p);
            FZ_CHECK(eo <= hlen, "error offset %zu past the %zu bytes given", eo, hlen);
            const char *buf = fz_window_get(&win, split, in + off, hlen);
            FZ_CHECK(csh_parser_execute(&p, buf, hlen) == r, "error %s not sticky",
                     csh_error_name(r));
            FZ_CHECK(csh_parser_error_offset(&p) == eo, "error offset changed on a later call");
        }
        if (r != CSH_OK) {
            if (t) {
                fz_buf_printf(t, "head %s", csh_error_name(r));
                if (r < 0) fz_buf_printf(t, " at %zu", csh_parser_error_offset(&p));
                fz_buf_put(t, "\n", 1);
            }
            res->last = r;
            break;
        }
        res->messages++;
        if (t) {
            fz_buf_printf(t, "head CSH_OK\n");
            fz_transcript_head(t, &p.msg, in + off, cfg->type);
        }

        fz_message fm;
        memset(&fm, 0, sizeof fm);
        fm.index = index;
        fm.start = off;
        fm.head_result = CSH_OK;
        fm.msg = p.msg;
        fm.body = &body;
        fm.input = in;
        fz_buf_clear(&body);

        if (p.msg.flags & CSH_MSG_TUNNEL) {
            /* The bytes after the head belong to another protocol. */
            fm.complete = 1;
            fm.end = off + p.msg.head_length;
            fm.body_result = CSH_OK;
            res->complete++;
            res->end = fm.end;
            res->last = CSH_OK;
            if (t) fz_buf_printf(t, "tunnel at %zu\n", fm.end);
            if (cfg->on_message) cfg->on_message(cfg->ctx, &fm);
            break;
        }

        /* The body: unconsumed bytes are passed again, first, with what
         * arrived after them. */
        if (fz_rng_next(&api) & 1)
            csh_body_reset(&b, &p.msg);
        else
            csh_body_init(&b, &p.msg, cfg->limits, cfg->flags, trailers, trailers_cap);
        FZ_CHECK(b.kind == p.msg.body, "csh_body kind %d, message says %d", (int)b.kind,
                 (int)p.msg.body);
        size_t pos = off + p.msg.head_length;
        size_t blen = 0;
        const char *buf = NULL;
        int br;
        int deliver = 0;
        int all_used = 0; /* the last call was a CSH_DATA that used every byte */
        for (;;) {
            if (deliver) {
                size_t piece = fz_piece(&rng, cfg->split);
                avail += piece < size - avail ? piece : size - avail;
            }
            blen = avail - pos;
            buf = fz_window_get(&win, split, in + pos, blen);
            size_t used = (size_t)-1;
            csh_span d = {(size_t)-1, (size_t)-1};
            int was_done = csh_body_done(&b);
            int next = fz_rng_next(&api) & 1;
            br = next ? csh_body_next(&b, buf, blen, &used, &d)
                      : csh_body_read(&b, buf, blen, &used, &d);
            const char *fn = next ? "csh_body_next" : "csh_body_read";
            fz_check_code(br, cfg->type, fn);
            FZ_CHECK(used <= blen, "%s consumed %zu of %zu bytes", fn, used, blen);
            /* body.h: once done, CSH_OK and nothing consumed; after a
             * CSH_DATA that used every byte, a call without new bytes can
             * only say CSH_INCOMPLETE (or CSH_OK when done) */
            if (was_done)
                FZ_CHECK(br == CSH_OK && used == 0, "%s after the end returned %s, used %zu", fn,
                         csh_error_name(br), used);
            if (all_used && blen == 0 && !was_done)
                FZ_CHECK(br == CSH_INCOMPLETE, "%s without new bytes after all were used: %s", fn,
                         csh_error_name(br));
            FZ_CHECK(!csh_body_done(&b) || br == CSH_OK || br == CSH_DATA,
                     "%s returned %s with the body done", fn, csh_error_name(br));
            all_used = br == CSH_DATA && used == blen;
            if (br == CSH_DATA) {
                FZ_CHECK(d.len > 0, "CSH_DATA with an empty span");
                FZ_CHECK(fz_span_in(d, used), "data span %zu+%zu outside the %zu bytes consumed",
                         d.off, d.len, used);
                fz_buf_put(&body, buf + d.off, d.len);
                FZ_CHECK(b.received == body.len, "received %llu, data spans gave %zu",
                         (unsigned long long)b.received, body.len);
                if (p.msg.body == CSH_BODY_CHUNKED) {
                    if (fz_bare_lf_in(in, pos, pos + d.off)) fm.framing_bare_lf = 1;
                    if (fz_bare_lf_in(in, pos + d.off + d.len, pos + used)) fm.framing_bare_lf = 1;
                }
                pos += used;
                deliver = 0;
                continue;
            }
            if (p.msg.body == CSH_BODY_CHUNKED && fz_bare_lf_in(in, pos, pos + used))
                fm.framing_bare_lf = 1;
            if (br == CSH_INCOMPLETE) {
                pos += used;
                if (avail < size) {
                    deliver = 1;
                    continue;
                }
                /* The input (the connection) ended. */
                br = csh_body_finish(&b);
                fz_check_code(br, cfg->type, "csh_body_finish");
                FZ_CHECK(br == (p.msg.body == CSH_BODY_UNTIL_CLOSE ? CSH_OK : CSH_E_BODY_TRUNCATED),
                         "csh_body_finish on body kind %d returned %s", (int)p.msg.body,
                         csh_error_name(br));
                /* Where a decoder stops consuming at the end of the input
                 * (an unfinished line kept or eaten) is not part of the
                 * contract: the transcript leaves the offset out. */
                if (t) fz_buf_printf(t, "body finish %s\n", csh_error_name(br));
                break;
            }
            if (br < 0) {
                if (t) fz_buf_printf(t, "body %s at %zu\n", csh_error_name(br), pos + used);
                pos += used;
                break;
            }
            /* CSH_OK: the body ended after `used` bytes. */
            pos += used;
            if (t) fz_buf_printf(t, "body CSH_OK at %zu\n", pos);
            break;
        }

        if (br == CSH_OK) {
            if (p.msg.body == CSH_BODY_LENGTH)
                FZ_CHECK(b.received == p.msg.content_length, "length body ended after %llu of %llu",
                         (unsigned long long)b.received, (unsigned long long)p.msg.content_length);
            if (p.msg.body == CSH_BODY_NONE)
                FZ_CHECK(b.received == 0 && pos == off + p.msg.head_length, "body for NONE");
            if (p.msg.body == CSH_BODY_CHUNKED && b.kind == CSH_BODY_CHUNKED) {
                FZ_CHECK(b.chunked.body_bytes == b.received,
                         "chunked body_bytes %llu, received %llu",
                         (unsigned long long)b.chunked.body_bytes, (unsigned long long)b.received);
                FZ_CHECK(b.chunked.chunks >= 1, "chunked body ended without a last chunk");
                FZ_CHECK(b.chunked.num_trailers <= trailers_cap,
                         "%zu trailers stored, capacity %zu", b.chunked.num_trailers, trailers_cap);
                if (t)
                    fz_buf_printf(t, "  chunks %llu trailers %zu\n",
                                  (unsigned long long)b.chunked.chunks, b.chunked.num_trailers);
                /* Trailer spans refer to the buffer of the last call. */
                for (size_t i = 0; i < b.chunked.num_trailers; i++) {
                    csh_header *h = &b.chunked.trailers[i];
                    FZ_CHECK(fz_span_in(h->name, blen) && fz_span_in(h->value, blen),
                             "trailer %zu outside the last buffer (%zu bytes)", i, blen);
                    FZ_CHECK(h->name.len > 0 && fz_all_tchar(buf + h->name.off, h->name.len),
                             "trailer %zu name is not a token", i);
                    FZ_CHECK(fz_no_ctl(buf + h->value.off, h->value.len),
                             "trailer %zu value has a control character", i);
                    if (t) {
                        fz_buf_put(t, "  trailer \"", 11);
                        fz_buf_escaped(t, buf + h->name.off, h->name.len);
                        fz_buf_put(t, "\" \"", 3);
                        fz_buf_escaped(t, buf + h->value.off, h->value.len);
                        fz_buf_put(t, "\"\n", 2);
                    }
                }
            }
        }
        if (t) {
            fz_buf_printf(t, "  received %llu data \"", (unsigned long long)b.received);
            fz_buf_escaped(t, body.data, body.len);
            fz_buf_put(t, "\"\n", 2);
        }

        fm.body_result = br;
        fm.complete = br == CSH_OK;
        fm.end = pos;
        if (fm.complete) {
            res->complete++;
            res->end = pos;
        }
        int stop = cfg->on_message ? cfg->on_message(cfg->ctx, &fm) : 0;
        if (br != CSH_OK) {
            res->last = br;
            break;
        }
        if (stop || p.msg.body == CSH_BODY_UNTIL_CLOSE) {
            /* A body until close ends the connection. */
            res->last = CSH_OK;
            break;
        }
        FZ_CHECK(pos > off, "a message of zero bytes");
        off = pos;
    }

    fz_window_get(&win, 0, NULL, 0);
    fz_buf_free(&body);
}
