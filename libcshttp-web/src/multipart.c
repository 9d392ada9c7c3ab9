/* multipart/form-data: the boundary parameter (RFC 2046 §5.1.1, RFC 9110
 * §8.3.1) and the streaming body parser (RFC 2046 §5.1, RFC 7578). */
#include "cshttp/web/multipart.h"

#include <errno.h>
#include <string.h>

#include "cshttp/web/error.h"
#include "cshttp/web/url.h"
#include "cshttp_internal/sized.h"
#include "util.h"

/* RFC 2046 §5.1.1 bcharsnospace */
static int bchar_nospace(unsigned char c)
{
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return 1;
    return c != 0 && strchr("'()+_,-./:=?", c) != NULL;
}

static int valid_boundary(const char *b, size_t len)
{
    if (len < 1 || len > 70 || b[len - 1] == ' ') return 0;
    for (size_t i = 0; i < len; i++)
        if (b[i] != ' ' && !bchar_nospace((unsigned char)b[i])) return 0;
    return 1;
}

static size_t skip_ows(const char *s, size_t len, size_t i)
{
    while (i < len && cshw__is_ws((unsigned char)s[i])) i++;
    return i;
}

static size_t skip_token(const char *s, size_t len, size_t i)
{
    while (i < len && cshw__tchar((unsigned char)s[i])) i++;
    return i;
}

/* qdtext and the octets a quoted-pair may escape (RFC 9110 §5.6.4) */
static int qdtext(unsigned char c)
{
    return c == '\t' || c == ' ' || c == 0x21 || (c >= 0x23 && c <= 0x5b) ||
           (c >= 0x5d && c <= 0x7e) || c >= 0x80;
}

static int quotable(unsigned char c)
{
    return c == '\t' || (c >= 0x20 && c != 0x7f);
}

int cshw_multipart_boundary(const char *ct, size_t len, const char **boundary, size_t *boundary_len)
{
    size_t i = skip_ows(ct, len, 0);
    size_t t = i;
    i = skip_token(ct, len, i);
    if (!cshw__ieq(ct + t, i - t, "multipart")) return CSHW_E_MULTIPART_NOT_MULTIPART;
    if (i >= len || ct[i] != '/') return CSHW_E_MULTIPART_NOT_MULTIPART;
    size_t st = ++i;
    i = skip_token(ct, len, i);
    if (i == st) return CSHW_E_MULTIPART_NOT_MULTIPART;

    const char *found = NULL;
    size_t found_len = 0;
    for (;;) {
        i = skip_ows(ct, len, i);
        if (i == len) break;
        if (ct[i] != ';') return CSHW_E_MULTIPART_INVALID_CONTENT_TYPE;
        i = skip_ows(ct, len, i + 1);
        if (i == len || ct[i] == ';') continue; /* an empty parameter */
        size_t ns = i;
        i = skip_token(ct, len, i);
        size_t ne = i;
        if (ne == ns || i == len || ct[i] != '=') return CSHW_E_MULTIPART_INVALID_CONTENT_TYPE;
        int is_boundary = cshw__ieq(ct + ns, ne - ns, "boundary");
        i++;
        size_t vs, ve;
        if (i < len && ct[i] == '"') {
            vs = ++i;
            int escaped = 0;
            while (i < len && ct[i] != '"') {
                unsigned char c = (unsigned char)ct[i];
                if (c == '\\') {
                    if (i + 1 >= len || !quotable((unsigned char)ct[i + 1]))
                        return CSHW_E_MULTIPART_INVALID_CONTENT_TYPE;
                    escaped = 1;
                    i += 2;
                } else if (qdtext(c)) {
                    i++;
                } else {
                    return CSHW_E_MULTIPART_INVALID_CONTENT_TYPE;
                }
            }
            if (i >= len) return CSHW_E_MULTIPART_INVALID_CONTENT_TYPE;
            ve = i++;
            if (is_boundary && escaped) return CSHW_E_MULTIPART_INVALID_BOUNDARY;
        } else {
            vs = i;
            while (i < len && ct[i] != ';' && !cshw__is_ws((unsigned char)ct[i])) i++;
            ve = i;
            if (ve == vs) return CSHW_E_MULTIPART_INVALID_CONTENT_TYPE;
            if (!is_boundary && skip_token(ct, ve, vs) != ve)
                return CSHW_E_MULTIPART_INVALID_CONTENT_TYPE;
        }
        if (is_boundary) {
            if (found) return CSHW_E_MULTIPART_INVALID_CONTENT_TYPE;
            found = ct + vs;
            found_len = ve - vs;
        }
    }
    if (!found) return CSHW_E_MULTIPART_NO_BOUNDARY;
    if (!valid_boundary(found, found_len)) return CSHW_E_MULTIPART_INVALID_BOUNDARY;
    *boundary = found;
    *boundary_len = found_len;
    return 0;
}

CSH__SIZED_NO_TAIL_PADDING(cshw_multipart_limits, max_headers);

static const cshw_multipart_limits defaults = {
    .size = sizeof(cshw_multipart_limits),
    .max_parts = 1000,
    .max_header_bytes = 16384,
    .max_headers = 16,
};

void cshw_multipart_limits_init_sized(cshw_multipart_limits *limits, size_t size)
{
    csh__sized_init(limits, size, &defaults, sizeof defaults);
}

enum {
    S_START,       /* the body's first bytes: "--boundary" or a preamble */
    S_PREAMBLE,    /* discarding up to the first CRLF "--boundary" */
    S_AFTER_DELIM, /* right after "--boundary": "--", padding or CRLF */
    S_CLOSE_DASH,  /* "--boundary-": the second '-' */
    S_PADDING,     /* transport padding before the CRLF */
    S_DELIM_LF,    /* the LF ending the delimiter line */
    S_HEADERS,     /* a part's header lines */
    S_DATA,        /* a part's data, up to CRLF "--boundary" */
    S_DONE,
};

int cshw_multipart_init(cshw_multipart *m, cshw_arena *a, const char *boundary, size_t len,
                        const cshw_multipart_limits *limits)
{
    memset(m, 0, sizeof *m);
    m->arena_ = a;
    m->state_ = S_START;
    m->result_ = CSHW_MULTIPART_INCOMPLETE;
    cshw_multipart_limits l = defaults; /* the caller's, read by its size */
    if (limits && csh__sized_copy(&l, sizeof l, limits, CSHW_MULTIPART_LIMITS_SIZE_0_3) < 0) {
        m->result_ = -EINVAL;
        return m->result_;
    }
    m->max_parts_ = l.max_parts;
    m->max_header_bytes_ = l.max_header_bytes;
    m->max_headers_ = l.max_headers;
    if (!boundary || !valid_boundary(boundary, len)) {
        m->result_ = CSHW_E_MULTIPART_INVALID_BOUNDARY;
        return m->result_;
    }
    memcpy(m->delim_, "\r\n--", 4);
    memcpy(m->delim_ + 4, boundary, len);
    m->delim_len_ = 4 + len;
    return 0;
}

static int over(size_t n, size_t limit)
{
    return limit != 0 && n > limit;
}

/* Looks for the delimiter d (dl bytes) in buf[0 .. len). Returns 1 and sets
 * *at when it is there whole; returns 0 and sets *at to the first byte that
 * could begin it (the start of a prefix of d that ends the buffer, or len):
 * every byte before *at is certainly not part of a delimiter. */
static int find_delim(const char *buf, size_t len, const char *d, size_t dl, size_t *at)
{
    size_t p = 0;
    while (p < len) {
        const char *cr = memchr(buf + p, '\r', len - p);
        if (!cr) break;
        size_t q = (size_t)(cr - buf), rem = len - q;
        if (rem >= dl) {
            if (memcmp(cr, d, dl) == 0) {
                *at = q;
                return 1;
            }
        } else if (memcmp(cr, d, rem) == 0) {
            *at = q;
            return 0;
        }
        p = q + 1;
    }
    *at = len;
    return 0;
}

static int set_error(cshw_multipart *m, int code)
{
    m->result_ = code;
    return code;
}

static int add_header(cshw_multipart *m, const char *line, size_t len)
{
    /* field-line = field-name ":" OWS field-value OWS (RFC 9112 §5) */
    size_t i = skip_token(line, len, 0);
    if (i == 0 || i == len || line[i] != ':') return CSHW_E_MULTIPART_INVALID_HEADER;
    size_t vs = skip_ows(line, len, i + 1), ve = len;
    while (ve > vs && cshw__is_ws((unsigned char)line[ve - 1])) ve--;
    for (size_t k = vs; k < ve; k++) {
        unsigned char c = (unsigned char)line[k];
        if ((c < 0x20 && c != '\t') || c == 0x7f) return CSHW_E_MULTIPART_INVALID_HEADER;
    }
    if (over(m->nhdr_ + 1, m->max_headers_)) return CSHW_E_MULTIPART_TOO_MANY_HEADERS;
    if (m->nhdr_ == m->hdr_cap_) {
        size_t cap = m->hdr_cap_ ? m->hdr_cap_ * 2 : 8;
        cshw_pair *h = cshw_arena_alloc(m->arena_, cap * sizeof *h);
        if (!h) return -ENOMEM;
        if (m->nhdr_) memcpy(h, m->hdr_, m->nhdr_ * sizeof *h);
        m->hdr_ = h;
        m->hdr_cap_ = cap;
    }
    char *name = cshw_arena_strndup(m->arena_, line, i);
    char *value = cshw_arena_strndup(m->arena_, line + vs, ve - vs);
    if (!name || !value) return -ENOMEM;
    for (size_t k = 0; k < i; k++) name[k] = (char)cshw__lower((unsigned char)name[k]);
    cshw_pair *h = &m->hdr_[m->nhdr_++];
    h->name = name;
    h->name_len = i;
    h->value = value;
    h->value_len = ve - vs;
    return 0;
}

/* The unescaped content of the quoted-string at s[i] == '"', into the arena;
 * \" and \\ are unescaped, other backslashes kept. Sets *end past the closing
 * quote. Returns 0, CSHW_E_MULTIPART_INVALID_DISPOSITION (unterminated) or
 * -ENOMEM. */
static int quoted_value(cshw_arena *a, const char *s, size_t len, size_t i, size_t *end,
                        const char **out, size_t *out_len)
{
    size_t k = i + 1, n = 0;
    while (k < len && s[k] != '"') {
        if (s[k] == '\\' && k + 1 < len && (s[k + 1] == '"' || s[k + 1] == '\\')) k++;
        k++;
        n++;
    }
    if (k >= len) return CSHW_E_MULTIPART_INVALID_DISPOSITION;
    char *v = cshw_arena_alloc(a, n + 1);
    if (!v) return -ENOMEM;
    size_t o = 0;
    for (size_t p = i + 1; p < k; p++) {
        if (s[p] == '\\' && p + 1 < k && (s[p + 1] == '"' || s[p + 1] == '\\')) p++;
        v[o++] = s[p];
    }
    v[o] = '\0';
    *end = k + 1;
    *out = v;
    *out_len = o;
    return 0;
}

/* filename*=charset'language'value-chars (RFC 8187 §3.2.1): the decoded value
 * when the charset is UTF-8; 0 without *out set when it is not usable. */
static int ext_value(cshw_arena *a, const char *v, size_t len, const char **out, size_t *out_len)
{
    const char *q1 = memchr(v, '\'', len);
    if (!q1) return 0;
    const char *q2 = memchr(q1 + 1, '\'', len - (size_t)(q1 + 1 - v));
    if (!q2 || !cshw__ieq(v, (size_t)(q1 - v), "utf-8")) return 0;
    const char *s = q2 + 1;
    size_t n = len - (size_t)(s - v);
    char *d = cshw_arena_alloc(a, n + 1);
    if (!d) return -ENOMEM;
    size_t dn = cshw_url_decode_to(d, s, n, 0);
    d[dn] = '\0';
    *out = d;
    *out_len = dn;
    return 0;
}

/* Content-Disposition: form-data; name="..."; filename="..." (RFC 7578 §4.2,
 * RFC 6266 §4.1) into m->part. */
static int parse_disposition(cshw_multipart *m, const char *s, size_t len)
{
    size_t i = skip_token(s, len, 0);
    if (!cshw__ieq(s, i, "form-data")) return CSHW_E_MULTIPART_INVALID_DISPOSITION;
    int seen_name = 0, seen_file = 0, seen_ext = 0;
    const char *ext = NULL;
    size_t ext_len = 0;
    for (;;) {
        i = skip_ows(s, len, i);
        if (i == len) break;
        if (s[i] != ';') return CSHW_E_MULTIPART_INVALID_DISPOSITION;
        i = skip_ows(s, len, i + 1);
        if (i == len || s[i] == ';') continue;
        size_t ns = i;
        i = skip_token(s, len, i);
        size_t ne = i;
        i = skip_ows(s, len, i);
        if (ne == ns || i == len || s[i] != '=') return CSHW_E_MULTIPART_INVALID_DISPOSITION;
        i = skip_ows(s, len, i + 1);
        const char *v;
        size_t vlen;
        if (i < len && s[i] == '"') {
            int r = quoted_value(m->arena_, s, len, i, &i, &v, &vlen);
            if (r) return r;
        } else {
            size_t vs = i;
            while (i < len && s[i] != ';') i++;
            size_t ve = i;
            while (ve > vs && cshw__is_ws((unsigned char)s[ve - 1])) ve--;
            char *c = cshw_arena_strndup(m->arena_, s + vs, ve - vs);
            if (!c) return -ENOMEM;
            v = c;
            vlen = ve - vs;
        }
        if (cshw__ieq(s + ns, ne - ns, "name")) {
            if (seen_name++) return CSHW_E_MULTIPART_INVALID_DISPOSITION;
            m->part.name = v;
            m->part.name_len = vlen;
        } else if (cshw__ieq(s + ns, ne - ns, "filename")) {
            if (seen_file++) return CSHW_E_MULTIPART_INVALID_DISPOSITION;
            m->part.filename = v;
            m->part.filename_len = vlen;
        } else if (cshw__ieq(s + ns, ne - ns, "filename*")) {
            if (seen_ext++) return CSHW_E_MULTIPART_INVALID_DISPOSITION;
            ext = v;
            ext_len = vlen;
        }
    }
    if (!seen_name) return CSHW_E_MULTIPART_INVALID_DISPOSITION;
    if (ext) {
        const char *f = NULL;
        size_t flen = 0;
        int r = ext_value(m->arena_, ext, ext_len, &f, &flen);
        if (r) return r;
        if (f) {
            m->part.filename = f;
            m->part.filename_len = flen;
        }
    }
    return 0;
}

/* The header section is complete: describe the part. */
static int finish_headers(cshw_multipart *m)
{
    const cshw_pair *disposition = NULL, *type = NULL;
    for (size_t k = 0; k < m->nhdr_; k++) {
        const cshw_pair *h = &m->hdr_[k];
        if (strcmp(h->name, "content-disposition") == 0) {
            if (disposition) return CSHW_E_MULTIPART_INVALID_HEADER;
            disposition = h;
        } else if (strcmp(h->name, "content-type") == 0) {
            if (type) return CSHW_E_MULTIPART_INVALID_HEADER;
            type = h;
        }
    }
    if (!disposition) return CSHW_E_MULTIPART_INVALID_DISPOSITION;
    int r = parse_disposition(m, disposition->value, disposition->value_len);
    if (r) return r;
    if (type) {
        m->part.content_type = type->value;
        m->part.content_type_len = type->value_len;
    }
    m->part.headers.items = m->hdr_;
    m->part.headers.count = m->nhdr_;
    return 0;
}

static void begin_part(cshw_multipart *m)
{
    memset(&m->part, 0, sizeof m->part);
    m->part.content_type = "text/plain";
    m->part.content_type_len = 10;
    m->part.index = m->parts - 1;
    m->hdr_ = NULL;
    m->nhdr_ = m->hdr_cap_ = 0;
    m->header_bytes_ = 0;
    m->scan_ = 0;
    m->data_bytes = 0;
}

int cshw_multipart_feed(cshw_multipart *m, const char *buf, size_t len, size_t *consumed,
                        csh_span *data)
{
    *consumed = 0;
    if (m->result_ != CSHW_MULTIPART_INCOMPLETE) {
        if (m->result_ == CSHW_MULTIPART_DONE) *consumed = len; /* the epilogue */
        return m->result_;
    }
    const char *d = m->delim_;
    size_t dl = m->delim_len_, p = 0, at;
    int r;
    while (p < len) {
        unsigned char c = (unsigned char)buf[p];
        switch (m->state_) {
        case S_START: {
            /* the first delimiter may come without its CRLF (RFC 2046
             * dash-boundary) */
            size_t n = len < dl - 2 ? len : dl - 2;
            if (memcmp(buf, d + 2, n) != 0) {
                m->state_ = S_PREAMBLE;
                break;
            }
            if (n < dl - 2) return CSHW_MULTIPART_INCOMPLETE; /* maybe; keep it */
            p = dl - 2;
            m->state_ = S_AFTER_DELIM;
            break;
        }
        case S_PREAMBLE:
            if (find_delim(buf + p, len - p, d, dl, &at)) {
                p += at + dl;
                m->state_ = S_AFTER_DELIM;
                break;
            }
            *consumed = p + at;
            return CSHW_MULTIPART_INCOMPLETE;
        case S_AFTER_DELIM:
        case S_PADDING:
            p++;
            if (c == '\r') {
                m->state_ = S_DELIM_LF;
            } else if (cshw__is_ws(c)) {
                m->state_ = S_PADDING;
            } else if (c == '-' && m->state_ == S_AFTER_DELIM) {
                m->state_ = S_CLOSE_DASH;
            } else {
                *consumed = p - 1;
                return set_error(m, CSHW_E_MULTIPART_INVALID_DELIMITER);
            }
            break;
        case S_CLOSE_DASH:
            if (c != '-') {
                *consumed = p;
                return set_error(m, CSHW_E_MULTIPART_INVALID_DELIMITER);
            }
            m->state_ = S_DONE;
            m->result_ = CSHW_MULTIPART_DONE;
            *consumed = len; /* the close delimiter, then the epilogue */
            return CSHW_MULTIPART_DONE;
        case S_DELIM_LF:
            if (c != '\n') {
                *consumed = p;
                return set_error(m, CSHW_E_MULTIPART_INVALID_DELIMITER);
            }
            p++;
            if (over(++m->parts, m->max_parts_)) {
                *consumed = p;
                return set_error(m, CSHW_E_MULTIPART_TOO_MANY_PARTS);
            }
            begin_part(m);
            m->state_ = S_HEADERS;
            break;
        case S_HEADERS: {
            const char *line = buf + p;
            size_t avail = len - p, from = m->scan_ <= avail ? m->scan_ : 0;
            const char *lf = memchr(line + from, '\n', avail - from);
            if (!lf) {
                if (over(m->header_bytes_ + avail, m->max_header_bytes_)) {
                    *consumed = p;
                    return set_error(m, CSHW_E_MULTIPART_HEADER_TOO_LARGE);
                }
                m->scan_ = avail;
                *consumed = p;
                return CSHW_MULTIPART_INCOMPLETE;
            }
            size_t n = (size_t)(lf - line) + 1; /* the line and its LF */
            m->scan_ = 0;
            if (over(m->header_bytes_ + n, m->max_header_bytes_)) {
                *consumed = p;
                return set_error(m, CSHW_E_MULTIPART_HEADER_TOO_LARGE);
            }
            m->header_bytes_ += n;
            /* CRLF only: no bare LF, no CR inside the line, no obs-fold */
            if (n < 2 || line[n - 2] != '\r' || memchr(line, '\r', n - 2) ||
                (n > 2 && cshw__is_ws((unsigned char)line[0]))) {
                *consumed = p;
                return set_error(m, CSHW_E_MULTIPART_INVALID_HEADER);
            }
            r = n == 2 ? finish_headers(m) : add_header(m, line, n - 2);
            if (r) {
                *consumed = p;
                return set_error(m, r);
            }
            p += n;
            if (n == 2) {
                m->state_ = S_DATA;
                *consumed = p;
                return CSHW_MULTIPART_PART;
            }
            break;
        }
        case S_DATA: {
            int whole = find_delim(buf + p, len - p, d, dl, &at);
            if (at > 0) {
                data->off = p;
                data->len = at;
                m->data_bytes += at;
                *consumed = p + at;
                return CSHW_MULTIPART_DATA;
            }
            if (!whole) {
                *consumed = p;
                return CSHW_MULTIPART_INCOMPLETE;
            }
            p += dl;
            m->state_ = S_AFTER_DELIM;
            *consumed = p;
            return CSHW_MULTIPART_PART_END;
        }
        default: /* S_DONE is handled through result_ */
            *consumed = p;
            return m->result_;
        }
    }
    *consumed = p;
    return CSHW_MULTIPART_INCOMPLETE;
}

int cshw_multipart_finish(cshw_multipart *m)
{
    if (m->result_ == CSHW_MULTIPART_INCOMPLETE) m->result_ = CSHW_E_MULTIPART_TRUNCATED;
    return m->result_;
}
