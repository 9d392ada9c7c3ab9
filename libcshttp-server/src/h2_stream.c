/* One HTTP/2 stream served as an HTTP/1.1 request (h2_impl.h has the
 * picture): its fields, checked against RFC 9113 §8.2 and §8.3, become
 * an HTTP/1.1 head written into a pipe in memory, read by a connection of
 * the same loop that has no socket; its DATA become the body, with the
 * client's content-length or chunked; the answer that comes back is
 * parsed with libcshttp, its head submitted as HEADERS and its body
 * handed to libnghttp2's data source as DATA frames.
 *
 * The request is framed once, here: a field value can hold no CR, LF or
 * NUL and a name only lowercase token characters, so no field can add a
 * line; Transfer-Encoding never comes from the client (libnghttp2 refuses
 * it, and so does this file); a content-length is passed on only as
 * libnghttp2 checked it against the DATA received. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cshttp/error.h>

#include "h2_impl.h"

/* Buffers start small (most answers are), and grow as a body needs:
 * the bytes taken from the pipe (the head may take up to max_head more),
 * and the decoded body waiting for DATA frames. */
#define BUF_START 1024u
#define RAW_MIN 16384u
#define BODY_CAP 16384u

/* Ended streams a loop keeps for the next streams of its sessions, with
 * their buffers up to SPARE_BUF each: about as many as a few busy
 * connections keep in flight, never more however many connections sit
 * idle, and fewer as the sweep finds them unused. */
#define SPARE_STREAMS 256
#define SPARE_BUF 1024u

/* A buffer past `keep` bytes freed, so that what is kept stays small. */
static void drop_big(char **buf, size_t *cap, size_t keep)
{
    if (*cap <= keep) return;
    free(*buf);
    *buf = NULL;
    *cap = 0;
}

static void free_stream(h2_stream *st);

h2_stream *cshs__h2_stream_new(cshs_h2 *h, int32_t id, unsigned slot)
{
    cshs_loop *l = h->c->loop;
    h2_stream *st = l->h2_spare;
    if (st) {
        /* a stream kept: its buffers stay, the rest starts anew */
        l->h2_spare = st->next_ready;
        l->h2_nspare--;
        l->h2_spare_taken = 1;
        h2_stream keep = *st;
        memset(st, 0, sizeof *st);
        st->pseudo = keep.pseudo;
        st->pseudo_cap = keep.pseudo_cap;
        st->fields = keep.fields;
        st->fields_cap = keep.fields_cap;
        st->cookie = keep.cookie;
        st->cookie_cap = keep.cookie_cap;
        st->out = keep.out;
        st->out_cap = keep.out_cap;
        st->raw = keep.raw;
        st->raw_cap = keep.raw_cap;
        st->body = keep.body;
        st->body_cap = keep.body_cap;
    } else if (!(st = calloc(1, sizeof *st))) {
        return NULL;
    }
    for (int i = 0; i < 5; i++) st->at[i] = -1;
    st->h = h;
    st->id = id;
    st->slot = slot;
    st->length = -1;
    csh_body_init(&st->rb, NULL, h->c->srv->o.limits, 0, st->trailer_spans, H2_TRAILERS);
    return st;
}

void cshs__h2_stream_free(h2_stream *st)
{
    cshs__h2_stream_close_pair(st);
    free(st->trailer_bytes); /* rare: not kept with a spare */
    st->trailer_bytes = NULL;
    cshs_loop *l = st->h->c->loop;
    if (l->h2_nspare < SPARE_STREAMS) {
        drop_big(&st->pseudo, &st->pseudo_cap, SPARE_BUF);
        drop_big(&st->fields, &st->fields_cap, SPARE_BUF);
        drop_big(&st->cookie, &st->cookie_cap, SPARE_BUF);
        drop_big(&st->out, &st->out_cap, SPARE_BUF);
        drop_big(&st->raw, &st->raw_cap, SPARE_BUF);
        drop_big(&st->body, &st->body_cap, SPARE_BUF);
        st->next_ready = l->h2_spare;
        l->h2_spare = st;
        l->h2_nspare++;
        return;
    }
    free_stream(st);
}

void cshs__h2_drop_spares(cshs_loop *l)
{
    while (l->h2_spare) {
        h2_stream *st = l->h2_spare;
        l->h2_spare = st->next_ready;
        free_stream(st);
    }
    l->h2_nspare = 0;
}

void cshs__h2_trim_spares(cshs_loop *l)
{
    if (l->h2_spare_taken) {
        l->h2_spare_taken = 0;
        return;
    }
    for (unsigned n = (l->h2_nspare + 1) / 2; n; n--) {
        h2_stream *st = l->h2_spare;
        l->h2_spare = st->next_ready;
        l->h2_nspare--;
        free_stream(st);
    }
}

static void free_stream(h2_stream *st)
{
    free(st->pseudo);
    free(st->fields);
    free(st->cookie);
    free(st->out);
    free(st->raw);
    free(st->body);
    free(st);
}

/* ---- the request ---- */

static int grow(char **buf, size_t *cap, size_t need)
{
    if (need <= *cap) return 0;
    size_t n = *cap ? *cap : 256;
    while (n < need) n *= 2;
    char *b = realloc(*buf, n);
    if (!b) return -ENOMEM;
    *buf = b;
    *cap = n;
    return 0;
}

static int append(char **buf, size_t *len, size_t *cap, const void *p, size_t n)
{
    if (n == 0) return 0; /* an empty value: the buffer may not exist yet */
    if (grow(buf, cap, *len + n) < 0) return -ENOMEM;
    memcpy(*buf + *len, p, n);
    *len += n;
    return 0;
}

static int out_add(h2_stream *st, const void *p, size_t n)
{
    return append(&st->out, &st->out_len, &st->out_cap, p, n);
}

/* RFC 9110 §5.6.2 token characters, lowercase only (RFC 9113 §8.2.1). */
static int name_ok(const uint8_t *p, size_t n)
{
    static const char extra[] = "!#$%&'*+-.^_`|~";
    if (n == 0) return 0;
    for (size_t i = 0; i < n; i++) {
        uint8_t ch = p[i];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || (ch && strchr(extra, ch))))
            return 0;
    }
    return 1;
}

/* RFC 9113 §8.2.1: no NUL, CR or LF anywhere, no whitespace at either end. */
static int value_ok(const uint8_t *p, size_t n)
{
    if (n && (p[0] == ' ' || p[0] == '\t' || p[n - 1] == ' ' || p[n - 1] == '\t')) return 0;
    for (size_t i = 0; i < n; i++)
        if (p[i] == 0 || p[i] == '\r' || p[i] == '\n') return 0;
    return 1;
}

/* A request-target or method for the request line: visible ASCII only,
 * so that it stays one token of the line. */
static int visible(const char *p)
{
    if (!*p) return 0;
    for (; *p; p++)
        if ((unsigned char)*p <= 0x20 || (unsigned char)*p >= 0x7f) return 0;
    return 1;
}

static int is(const uint8_t *name, size_t n, const char *lit)
{
    return n == strlen(lit) && memcmp(name, lit, n) == 0;
}

static int set_pseudo(h2_stream *st, int which, const uint8_t *v, size_t n)
{
    if (st->at[which] >= 0) return -1; /* each once (§8.3) */
    if (append(&st->pseudo, &st->pseudo_len, &st->pseudo_cap, v, n) < 0 ||
        append(&st->pseudo, &st->pseudo_len, &st->pseudo_cap, "", 1) < 0)
        return -1;
    st->at[which] = (int32_t)(st->pseudo_len - n - 1);
    return 0;
}

void cshs__h2_stream_field(h2_stream *st, const uint8_t *name, size_t nlen, const uint8_t *value,
                           size_t vlen, int trailer)
{
    const cshs_options *o = &st->h->c->srv->o;
    if (st->bad || st->too_big) return;
    /* RFC 9113 §6.5.2: a field's size is its name and value and 32 */
    st->field_bytes += nlen + vlen + 32;
    if (st->field_bytes > o->limits->max_head) {
        st->too_big = 1;
        return;
    }
    if (!value_ok(value, vlen)) {
        st->bad = 1;
        return;
    }
    if (nlen && name[0] == ':') {
        if (trailer) { /* §8.1: no pseudo-header field in trailers */
            st->bad = 1;
            return;
        }
        int r = 0;
        if (is(name, nlen, ":method"))
            r = set_pseudo(st, P_METHOD, value, vlen);
        else if (is(name, nlen, ":path"))
            r = set_pseudo(st, P_PATH, value, vlen);
        else if (is(name, nlen, ":authority"))
            r = set_pseudo(st, P_AUTHORITY, value, vlen);
        else if (is(name, nlen, ":protocol")) /* RFC 8441 §4 */
            r = set_pseudo(st, P_PROTOCOL, value, vlen);
        else if (!is(name, nlen, ":scheme")) /* :scheme is the connection's */
            r = -1;                          /* an unknown one */
        if (r < 0) st->bad = 1;
        return;
    }
    if (!name_ok(name, nlen)) {
        st->bad = 1;
        return;
    }
    /* §8.2.2: connection-specific fields are malformed (libnghttp2 says so
     * first; this is the framing's own guard), TE but "trailers" */
    if (is(name, nlen, "connection") || is(name, nlen, "keep-alive") ||
        is(name, nlen, "proxy-connection") || is(name, nlen, "transfer-encoding") ||
        is(name, nlen, "upgrade") ||
        (is(name, nlen, "te") &&
         !(vlen == 8 && strncasecmp((const char *)value, "trailers", 8) == 0))) {
        st->bad = 1;
        return;
    }
    if (trailer) {
        /* trailers reach the handler only with a chunked body, after its
         * last chunk; framing fields never */
        if (!st->chunked || is(name, nlen, "content-length") || is(name, nlen, "host")) return;
        if (!st->trailers && out_add(st, "0\r\n", 3) < 0) {
            st->bad = 1;
            return;
        }
        st->trailers = 1;
        if (out_add(st, name, nlen) < 0 || out_add(st, ": ", 2) < 0 ||
            out_add(st, value, vlen) < 0 || out_add(st, "\r\n", 2) < 0)
            st->bad = 1;
        return;
    }
    if (is(name, nlen, "host")) {
        if (set_pseudo(st, P_HOST, value, vlen) < 0) st->bad = 1;
        return;
    }
    /* RFC 8441 §5: an extended CONNECT has no key (the head written for it
     * brings its own); its pseudo-header fields came first (§8.3) */
    if (st->at[P_PROTOCOL] >= 0 && is(name, nlen, "sec-websocket-key")) return;
    if (is(name, nlen, "content-length")) {
        /* digits, as libnghttp2 checked them (and the DATA against them) */
        int64_t n = 0;
        for (size_t i = 0; i < vlen && n >= 0; i++)
            n = value[i] >= '0' && value[i] <= '9' && n <= (INT64_MAX - 9) / 10
                    ? n * 10 + (value[i] - '0')
                    : -1;
        if (n < 0 || vlen == 0 || (st->length >= 0 && st->length != n)) {
            st->bad = 1;
            return;
        }
        st->length = n;
    }
    int r = 0;
    if (is(name, nlen, "cookie")) { /* §8.2.3: pieces joined with "; " */
        if (st->cookie_len) r = append(&st->cookie, &st->cookie_len, &st->cookie_cap, "; ", 2);
        if (r == 0) r = append(&st->cookie, &st->cookie_len, &st->cookie_cap, value, vlen);
    } else {
        r = append(&st->fields, &st->fields_len, &st->fields_cap, name, nlen);
        if (r == 0) r = append(&st->fields, &st->fields_len, &st->fields_cap, ": ", 2);
        if (r == 0) r = append(&st->fields, &st->fields_len, &st->fields_cap, value, vlen);
        if (r == 0) r = append(&st->fields, &st->fields_len, &st->fields_cap, "\r\n", 2);
    }
    if (r < 0) st->bad = 1;
}

/* The fields an HTTP/1.1 client's Upgrade request has (RFC 9110 §7.8):
 * for a WebSocket (RFC 6455 §4.1), a key too. The accept value the
 * answer will bring is not sent on: over HTTP/2 there is none (RFC 8441
 * §5), so the key can be fixed, RFC 6455's own example. */
static int upgrade_fields(h2_stream *st, const char *protocol)
{
    int r = out_add(st, "Connection: Upgrade\r\nUpgrade: ", 30);
    if (r == 0) r = out_add(st, protocol, strlen(protocol));
    if (r == 0) r = out_add(st, "\r\n", 2);
    if (r == 0 && strcasecmp(protocol, "websocket") == 0)
        r = out_add(st, "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n", 45);
    return r;
}

int cshs__h2_stream_head(h2_stream *st)
{
    const char *method = h2_pseudo(st, P_METHOD), *path = h2_pseudo(st, P_PATH);
    const char *authority = h2_pseudo(st, P_AUTHORITY), *host = h2_pseudo(st, P_HOST);
    const char *protocol = h2_pseudo(st, P_PROTOCOL);
    if (st->bad || !method || !visible(method)) return -EPROTO;
    int connect = strcmp(method, "CONNECT") == 0;
    if (protocol) {
        /* RFC 8441 §4: an extended CONNECT names its resource with :path
         * (libnghttp2 checked :scheme and :path are there, and that this
         * server's SETTINGS allowed it); served as the HTTP/1.1 Upgrade it
         * stands for (RFC 9110 §7.8), its bytes unframed both ways */
        if (!connect || !path || !name_ok((const uint8_t *)protocol, strlen(protocol)))
            return -EPROTO;
        method = "GET";
        connect = 0;
        st->tunnel = 1;
    }
    /* §8.3.1: a path (not empty), but for CONNECT (§8.5); §8.3.1 and RFC
     * 9110 §7.2: a host that :authority names, not another */
    const char *target = connect ? authority : path;
    if (!target || !visible(target) || (connect && path)) return -EPROTO;
    if (authority && host && strcmp(authority, host) != 0) return -EPROTO;
    if (authority) host = authority;
    if (host && !value_ok((const uint8_t *)host, strlen(host))) return -EPROTO;
    st->head_only = strcmp(method, "HEAD") == 0;
    st->chunked = !st->in_ended && st->length < 0 && !st->tunnel;
    int r = out_add(st, method, strlen(method));
    if (r == 0) r = out_add(st, " ", 1);
    if (r == 0) r = out_add(st, target, strlen(target));
    if (r == 0) r = out_add(st, " HTTP/1.1\r\n", 11);
    if (r == 0 && host) {
        r = out_add(st, "Host: ", 6);
        if (r == 0) r = out_add(st, host, strlen(host));
        if (r == 0) r = out_add(st, "\r\n", 2);
    }
    if (r == 0 && st->fields_len) r = out_add(st, st->fields, st->fields_len);
    if (r == 0 && st->cookie_len) {
        r = out_add(st, "Cookie: ", 8);
        if (r == 0) r = out_add(st, st->cookie, st->cookie_len);
        if (r == 0) r = out_add(st, "\r\n", 2);
    }
    if (r == 0 && st->chunked) r = out_add(st, "Transfer-Encoding: chunked\r\n", 28);
    if (r == 0 && st->tunnel) r = upgrade_fields(st, protocol);
    if (r == 0) r = out_add(st, "\r\n", 2);
    /* written: small buffers stay for the stream's successor */
    st->fields_len = st->cookie_len = 0;
    drop_big(&st->fields, &st->fields_cap, SPARE_BUF);
    drop_big(&st->cookie, &st->cookie_cap, SPARE_BUF);
    return r;
}

int cshs__h2_stream_data(h2_stream *st, const uint8_t *data, size_t len)
{
    st->unacked += len;
    st->received += len;
    if (st->opened && !st->pipe) { /* answered already: dropped, the window given back */
        nghttp2_session_consume(st->h->ses, st->id, len);
        st->unacked -= len;
        return 0;
    }
    if (len == 0) return 0;
    if (st->chunked) {
        char size[24];
        int n = snprintf(size, sizeof size, "%zx\r\n", len);
        if (out_add(st, size, (size_t)n) < 0 || out_add(st, data, len) < 0 ||
            out_add(st, "\r\n", 2) < 0)
            return -ENOMEM;
        return 0;
    }
    return out_add(st, data, len);
}

/* The last chunk comes before the trailers (which cshs__h2_stream_field
 * wrote after it); the trailer section ends with an empty line. */
int cshs__h2_stream_end(h2_stream *st)
{
    st->in_ended = 1;
    if (!st->chunked) return 0;
    if (!st->trailers && out_add(st, "0\r\n", 3) < 0) return -ENOMEM;
    st->trailers = 1;
    return out_add(st, "\r\n", 2);
}

/* ---- the answer ---- */

/* RFC 9113 §8.2.2: an HTTP/1.1 answer's connection-specific fields are
 * not sent on. */
static int hop_by_hop(const char *p, size_t n)
{
    static const char *const names[] = {"connection",        "keep-alive", "proxy-connection",
                                        "transfer-encoding", "upgrade",    "te"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strlen(names[i]) == n && strncasecmp(names[i], p, n) == 0) return 1;
    return 0;
}

/* The answer's trailers as a HEADERS frame that ends the stream, names
 * in lowercase (§8.2), connection-specific ones left out. */
static int submit_trailers(h2_stream *st)
{
    nghttp2_nv nva[H2_TRAILERS];
    size_t n = 0;
    for (size_t i = 0; i < st->ntrailers && i < H2_TRAILERS; i++) {
        const csh_header *f = &st->trailer_spans[i];
        char *name = st->trailer_bytes + f->name.off;
        if (hop_by_hop(name, f->name.len)) continue;
        for (size_t k = 0; k < f->name.len; k++)
            if (name[k] >= 'A' && name[k] <= 'Z') name[k] = (char)(name[k] - 'A' + 'a');
        nva[n++] = (nghttp2_nv){(uint8_t *)name, (uint8_t *)st->trailer_bytes + f->value.off,
                                f->name.len, f->value.len, NGHTTP2_NV_FLAG_NONE};
    }
    return nghttp2_submit_trailer(st->h->ses, st->id, nva, n) == 0 ? 0 : -EPROTO;
}

/* The body's last DATA: it ends the stream, or the trailers do. */
static int end_data(h2_stream *st, uint32_t *flags)
{
    *flags |= NGHTTP2_DATA_FLAG_EOF;
    if (!st->ntrailers) return 0;
    *flags |= NGHTTP2_DATA_FLAG_NO_END_STREAM;
    return submit_trailers(st);
}

static ssize_t body_source(nghttp2_session *ses, int32_t id, uint8_t *buf, size_t length,
                           uint32_t *flags, nghttp2_data_source *source, void *arg)
{
    (void)ses;
    (void)id;
    (void)arg;
    h2_stream *st = source->ptr;
    size_t have = st->body_len - st->body_pos;
    if (have == 0) {
        if (st->answer == A_DONE)
            return end_data(st, flags) == 0 ? 0 : NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
        st->deferred = 1;
        st->refill = 1;
        return NGHTTP2_ERR_DEFERRED;
    }
    size_t n = have < length ? have : length;
    memcpy(buf, st->body + st->body_pos, n);
    st->body_pos += n;
    st->data_ms = cshs__now_ms();
    if (st->body_pos == st->body_len) {
        st->body_pos = st->body_len = 0;
        st->refill = 1;
        if (st->answer == A_DONE && end_data(st, flags) < 0)
            return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    }
    return (ssize_t)n;
}

/* The answer's head as HEADERS: its status and fields, names in
 * lowercase (§8.2), connection-specific ones left out. Interim answers
 * (1xx) go as HEADERS without a body. */
static int submit_head(h2_stream *st, const csh_message *m, int code, int body)
{
    nghttp2_nv nva[H2_RESPONSE_FIELDS + 1];
    char status[4] = {(char)('0' + code / 100), (char)('0' + code / 10 % 10),
                      (char)('0' + code % 10), 0};
    size_t n = 0;
    nva[n++] = (nghttp2_nv){(uint8_t *)":status", (uint8_t *)status, 7, 3, NGHTTP2_NV_FLAG_NONE};
    char small[1024];
    char *lower = m->head_length < sizeof small ? small : malloc(m->head_length + 1);
    if (!lower) return -ENOMEM;
    memcpy(lower, st->raw, m->head_length);
    for (size_t i = 0; i < m->num_headers; i++) {
        const csh_header *f = &m->headers[i];
        char *name = lower + f->name.off;
        if (hop_by_hop(name, f->name.len)) continue;
        for (size_t k = 0; k < f->name.len; k++)
            if (name[k] >= 'A' && name[k] <= 'Z') name[k] = (char)(name[k] - 'A' + 'a');
        /* RFC 8441 §5: no accept value over HTTP/2 */
        if (st->tunnel && f->name.len == 20 && memcmp(name, "sec-websocket-accept", 20) == 0)
            continue;
        nva[n++] = (nghttp2_nv){(uint8_t *)name, (uint8_t *)lower + f->value.off, f->name.len,
                                f->value.len, NGHTTP2_NV_FLAG_NONE};
    }
    int r;
    if (m->flags & CSH_MSG_INTERIM) {
        r = nghttp2_submit_headers(st->h->ses, NGHTTP2_FLAG_NONE, st->id, NULL, nva, n, NULL);
    } else {
        nghttp2_data_provider prd = {.source = {.ptr = st}, .read_callback = body_source};
        r = nghttp2_submit_response(st->h->ses, st->id, nva, n, body ? &prd : NULL);
    }
    if (lower != small) free(lower); /* libnghttp2 copied the fields */
    return r == 0 ? 0 : -EPROTO;
}

/* The head in raw: parsed, submitted, its bytes dropped. 1 when it was
 * the final one, 0 when more bytes are needed, < 0 on an error. The
 * parser and its fields live here, not in the stream: a head that is not
 * all there yet is parsed again from its start next time (its bytes stay
 * in raw), which costs a stream nothing while it waits. */
static int take_head(h2_stream *st)
{
    const cshs_options *o = &st->h->c->srv->o;
    csh_header fields[H2_RESPONSE_FIELDS];
    csh_parser p;
    for (;;) {
        csh_parser_init(&p, CSH_RESPONSE, fields, H2_RESPONSE_FIELDS, o->limits, 0);
        /* RFC 9112 §6.3: the answer to HEAD has no body */
        csh_parser_set_request_method(&p, st->head_only ? CSH_METHOD_HEAD : CSH_METHOD_GET);
        int r = csh_parser_execute(&p, st->raw, st->raw_len);
        if (r == CSH_INCOMPLETE) return 0;
        if (r != CSH_OK) return -EPROTO;
        const csh_message *m = &p.msg;
        int switched = m->status == 101 || (m->flags & CSH_MSG_TUNNEL);
        /* 101 has no place in HTTP/2 (§8.6), but as the answer to an
         * extended CONNECT: 200, and the stream carries the protocol
         * (RFC 8441 §5). A 2xx without the switch would tell the client
         * the same: the resource does not speak it, 501 (RFC 9110
         * §15.6.2), and the answer's body goes nowhere. */
        if (switched && (!st->tunnel || m->status != 101)) return -EPROTO;
        int code = !st->tunnel || switched || m->status < 200 || m->status >= 300 ? m->status : 501;
        int body = switched || (m->body != CSH_BODY_NONE && code == m->status);
        if (code != m->status) { /* none of the 2xx's fields describe a 501 */
            static const nghttp2_nv nv[] = {
                {(uint8_t *)":status", (uint8_t *)"501", 7, 3, NGHTTP2_NV_FLAG_NONE}};
            if (nghttp2_submit_response(st->h->ses, st->id, nv, 1, NULL) != 0) return -EPROTO;
        } else if (submit_head(st, m, switched ? 200 : code, body) < 0) {
            return -EPROTO;
        }
        size_t used = m->head_length;
        int final = !(m->flags & CSH_MSG_INTERIM);
        if (final && !switched) csh_body_reset(&st->rb, m);
        memmove(st->raw, st->raw + used, st->raw_len - used);
        st->raw_len -= used;
        if (switched) {
            /* its handler has returned: the protocol runs on the loop, and
             * the stream counts against h2_max_handlers no more */
            st->raw_answer = 1;
            if (st->counted) {
                st->counted = 0;
                st->h->handlers--;
            }
        }
        if (final) {
            st->answer = body ? A_BODY : A_DONE;
            return 1;
        }
    }
}

/* A chunked answer ended in `section` (its last chunk and trailer
 * section, `len` bytes, about to be dropped from raw): the trailer
 * fields' bytes are kept for the HEADERS that will follow the DATA. */
static int keep_trailers(h2_stream *st, const char *section, size_t len)
{
    if (st->rb.kind != CSH_BODY_CHUNKED || !st->rb.chunked.num_trailers) return 0;
    char *b = malloc(len ? len : 1);
    if (!b) return -ENOMEM;
    memcpy(b, section, len);
    free(st->trailer_bytes);
    st->trailer_bytes = b;
    st->ntrailers = st->rb.chunked.num_trailers;
    return 0;
}

/* Decodes what raw holds of the body into body, as far as it has room. */
static int take_body(h2_stream *st)
{
    /* room for what raw holds, up to BODY_CAP */
    if (st->body_cap < BODY_CAP && st->body_cap - st->body_len < st->raw_len) {
        size_t cap = st->body_cap ? st->body_cap : BUF_START;
        while (cap < st->body_len + st->raw_len && cap < BODY_CAP) cap *= 2;
        char *b = realloc(st->body, cap);
        if (!b) return -ENOMEM;
        st->body = b;
        st->body_cap = cap;
    }
    if (st->body_pos && st->body_pos == st->body_len) st->body_pos = st->body_len = 0;
    /* bytes that come while none waited start the wait for the client's
     * window (send_timeout_ms) */
    if (st->body_len == 0) st->data_ms = cshs__now_ms();
    if (st->raw_answer) { /* a switched protocol's bytes, as they come */
        size_t n = st->body_cap - st->body_len;
        if (n > st->raw_len) n = st->raw_len;
        if (n) memcpy(st->body + st->body_len, st->raw, n);
        st->body_len += n;
        memmove(st->raw, st->raw + n, st->raw_len - n);
        st->raw_len -= n;
        if (st->eof && st->raw_len == 0) st->answer = A_DONE;
        return 0;
    }
    size_t used_all = 0;
    while (st->answer == A_BODY) {
        size_t room = st->body_cap - st->body_len;
        if (room == 0) break;
        size_t avail = st->raw_len - used_all;
        size_t give = avail < room ? avail : room;
        size_t used = 0;
        csh_span d = {0, 0};
        int r = csh_body_next(&st->rb, st->raw + used_all, give, &used, &d);
        used_all += used;
        if (r == CSH_DATA) {
            memcpy(st->body + st->body_len, st->raw + used_all - used + d.off, d.len);
            st->body_len += d.len;
            if (csh_body_done(&st->rb)) st->answer = A_DONE;
            continue;
        }
        if (r == CSH_OK) {
            if (keep_trailers(st, st->raw + used_all - used, used) < 0) return -ENOMEM;
            st->answer = A_DONE;
            break;
        }
        if (r == CSH_INCOMPLETE) {
            if (st->eof && used_all == st->raw_len) {
                if (csh_body_finish(&st->rb) != CSH_OK) return -EPROTO;
                st->answer = A_DONE;
            }
            break;
        }
        return -EPROTO;
    }
    memmove(st->raw, st->raw + used_all, st->raw_len - used_all);
    st->raw_len -= used_all;
    return 0;
}

int cshs__h2_stream_read(h2_stream *st)
{
    const cshs_options *o = &st->h->c->srv->o;
    size_t head_cap = o->limits->max_head + RAW_MIN;
    while (st->answer != A_DONE) {
        /* room to read: the head may take up to max_head, the body's
         * reads wait until what was read is decoded */
        size_t cap = st->answer == A_HEAD ? head_cap : RAW_MIN;
        if (st->raw_len == st->raw_cap && st->raw_cap < cap) {
            size_t n = st->raw_cap ? st->raw_cap * 2 : BUF_START;
            if (n > cap) n = cap;
            char *b = realloc(st->raw, n);
            if (!b) return -ENOMEM;
            st->raw = b;
            st->raw_cap = n;
        }
        int got = 0;
        if (st->raw_len < st->raw_cap && !st->eof) {
            size_t n =
                cshs__h2_pipe_take(st, st->raw + st->raw_len, st->raw_cap - st->raw_len, &st->eof);
            st->raw_len += n;
            got = n > 0 || st->eof;
        }
        if (st->answer == A_HEAD) {
            int r = take_head(st);
            if (r < 0) return r;
            if (r == 0) {
                /* a head cut short, or past max_head */
                if (st->eof || st->raw_len == head_cap) return -EPROTO;
                if (!got) break;
                continue;
            }
        }
        size_t body_before = st->body_len, raw_before = st->raw_len;
        if (take_body(st) < 0) return -EPROTO;
        int moved = st->body_len != body_before || st->raw_len != raw_before;
        if ((moved || st->answer == A_DONE) && st->deferred) {
            st->deferred = 0;
            nghttp2_session_resume_data(st->h->ses, st->id);
        }
        if (st->answer == A_DONE || (st->body_cap && st->body_len == st->body_cap)) break;
        if (!got && !moved) {
            /* the answer ended inside its body */
            if (st->eof) return -EPROTO;
            break;
        }
    }
    /* a tunnel whose side ended still takes the client's bytes (RFC 8441
     * §5: END_STREAM is a half-close) until its connection closes */
    if (st->answer == A_DONE && !(st->raw_answer && cshs__h2_pipe_attached(st)))
        cshs__h2_stream_close_pair(st);
    return 0;
}
