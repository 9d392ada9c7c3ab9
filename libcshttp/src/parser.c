/* The message head parser: start line, field lines, framing (RFC 9112).
 *
 * Resumable without rescanning: every part of a line is scanned once and the
 * place where the bytes ran out is kept in p->ls_ (offsets, so the caller's
 * buffer may move). Limits are applied by never looking past a window: the
 * bytes received, the head limit, and the current line's limit. */
#include "cshttp/parser.h"

#include <string.h>

#include "fields.h"
#include "limits.h"
#include "scan.h"

enum { ST_START_LINE = 0, ST_FIELDS, ST_DONE };

/* Start-line sub-states (ls_.sub) */
enum { R_METHOD = 0, R_EMPTY_CR, R_TARGET, R_VERSION, R_EOL, R_CR, R_LINE_CR };
enum { S_VERSION = 0, S_STATUS, S_REASON, S_CR };

/* Internal result of parse_request_line: an empty line before the request
 * line was skipped; the next line starts at ls_.line. */
enum { LINE_SKIPPED = 100 };

/* Internal result of the fields fast path: the bytes ran out inside a value
 * and the resumable parser's state (ls_) was set where the scan stopped. */
enum { FAST_STOPPED_IN_VALUE = 101 };

/* p->seen_: framing fields met so far */
enum {
    SEEN_CL = 1u << 0,
    SEEN_TE = 1u << 1,
    SEEN_HOST = 1u << 2,
    SEEN_CONN_CLOSE = 1u << 3,
    SEEN_CONN_KEEP_ALIVE = 1u << 4,
    SEEN_CONN_UPGRADE = 1u << 5,
    SEEN_TE_CHUNKED_LAST = 1u << 6,
    SEEN_TE_CHUNKED = 1u << 7,
    SEEN_UPGRADE = 1u << 8,
};

void csh_parser_init(csh_parser *p, csh_parser_type type, csh_header *fields, size_t fields_cap,
                     const csh_limits *limits, unsigned flags)
{
    /* every field is set here or by csh_parser_reset below: no memset of
     * the whole struct, which reset would half clear again */
    p->te_off_ = 0;
    int bad = csh__limits_keep(&p->limits_, limits) < 0;
    p->fields_ = fields;
    p->fields_cap_ = fields ? fields_cap : 0;
    if (p->fields_cap_ > p->limits_.max_fields) p->fields_cap_ = p->limits_.max_fields;
    p->flags_ = (flags & ~CSH__FLAG_BAD_LIMITS) | (bad ? CSH__FLAG_BAD_LIMITS : 0u);
    p->type_ = (unsigned char)type;
    p->simd_ = (unsigned char)((flags & CSH_PARSE_NO_SIMD) ? 0 : csh__simd_available());
    csh_parser_reset(p);
}

void csh_parser_reset(csh_parser *p)
{
    memset(&p->msg, 0, sizeof p->msg);
    memset(&p->ls_, 0, sizeof p->ls_);
    p->msg.headers = p->fields_;
    p->len_ = 0;
    p->error_offset_ = 0;
    p->seen_ = 0;
    /* limits of a bad size (limits.h): every call fails, after a reset too */
    p->result_ = (p->flags_ & CSH__FLAG_BAD_LIMITS) ? CSH_E_INVALID_ARGUMENT : CSH_INCOMPLETE;
    p->state_ = ST_START_LINE;
    p->request_method_ = CSH_METHOD_OTHER;
}

void csh_parser_set_request_method(csh_parser *p, csh_method method)
{
    p->request_method_ = (unsigned char)method;
}

size_t csh_parser_error_offset(const csh_parser *p)
{
    return p->error_offset_;
}

static const char *const method_names[] = {"",        "GET",     "HEAD",  "POST",
                                           "PUT",     "DELETE",  "CONNECT", "OPTIONS",
                                           "TRACE",   "PATCH"};

const char *csh_method_name(csh_method m)
{
    if ((unsigned)m >= sizeof method_names / sizeof method_names[0]) return "";
    return method_names[m];
}

/* ASCII case-insensitive compare of n bytes against a lower-case literal. The
 * bytes compared are tchars, for which OR 0x20 lowers letters and maps no
 * other tchar onto a letter or '-'. */
static inline int lower_eq(const char *a, const char *lit, size_t n)
{
    const uint64_t lower = 0x2020202020202020ull;
    size_t i = 0;
    if (n >= 8) {
        /* eight at a time, the last eight overlapping: the names are 4 to
         * 17 bytes */
        uint64_t x, y;
        for (; i + 8 <= n; i += 8) {
            memcpy(&x, a + i, 8);
            memcpy(&y, lit + i, 8);
            if ((x | lower) != y) return 0;
        }
        if (i == n) return 1;
        memcpy(&x, a + n - 8, 8);
        memcpy(&y, lit + n - 8, 8);
        return (x | lower) == y;
    }
    if (n >= 4) {
        uint32_t x, y, x2, y2;
        memcpy(&x, a, 4);
        memcpy(&y, lit, 4);
        memcpy(&x2, a + n - 4, 4);
        memcpy(&y2, lit + n - 4, 4);
        return ((x | (uint32_t)lower) == y) & ((x2 | (uint32_t)lower) == y2);
    }
    for (; i < n; i++)
        if ((a[i] | 0x20) != lit[i]) return 0;
    return 1;
}

static csh_method method_of(const char *m, size_t n)
{
    /* RFC 9110 §9.1: methods are case-sensitive. */
    switch (n) {
    case 3:
        if (memcmp(m, "GET", 3) == 0) return CSH_METHOD_GET;
        if (memcmp(m, "PUT", 3) == 0) return CSH_METHOD_PUT;
        break;
    case 4:
        if (memcmp(m, "POST", 4) == 0) return CSH_METHOD_POST;
        if (memcmp(m, "HEAD", 4) == 0) return CSH_METHOD_HEAD;
        break;
    case 5:
        if (memcmp(m, "PATCH", 5) == 0) return CSH_METHOD_PATCH;
        if (memcmp(m, "TRACE", 5) == 0) return CSH_METHOD_TRACE;
        break;
    case 6:
        if (memcmp(m, "DELETE", 6) == 0) return CSH_METHOD_DELETE;
        break;
    case 7:
        if (memcmp(m, "OPTIONS", 7) == 0) return CSH_METHOD_OPTIONS;
        if (memcmp(m, "CONNECT", 7) == 0) return CSH_METHOD_CONNECT;
        break;
    default: break;
    }
    return CSH_METHOD_OTHER;
}

static inline int is_alpha(char c)
{
    return (unsigned char)((c | 0x20) - 'a') < 26;
}

static inline int is_digit(char c)
{
    return (unsigned char)(c - '0') < 10;
}

/* RFC 9112 §3.2: which form the target has, and whether the method allows it. */
static int classify_target(csh_message *m, const char *t, size_t n)
{
    if (m->method == CSH_METHOD_CONNECT) {
        /* authority-form = uri-host ":" port (§3.2.3); nothing else */
        size_t colon = n;
        while (colon > 0 && is_digit(t[colon - 1])) colon--;
        if (colon == n || colon < 2 || t[colon - 1] != ':' || t[0] == '/') return CSH_E_TARGET_FORM;
        for (size_t i = 0; i < colon - 1; i++)
            if (t[i] == '/' || t[i] == '?' || t[i] == '#' || t[i] == '@') return CSH_E_TARGET_FORM;
        m->target_form = CSH_TARGET_AUTHORITY;
        return CSH_OK;
    }
    if (t[0] == '/') {
        m->target_form = CSH_TARGET_ORIGIN;
        return CSH_OK;
    }
    if (n == 1 && t[0] == '*') {
        if (m->method != CSH_METHOD_OPTIONS) return CSH_E_TARGET_FORM; /* §3.2.4 */
        m->target_form = CSH_TARGET_ASTERISK;
        return CSH_OK;
    }
    /* absolute-form: scheme ":" hier-part (RFC 3986 §3.1) */
    if (!is_alpha(t[0])) return CSH_E_TARGET_FORM;
    for (size_t i = 1; i < n; i++) {
        char c = t[i];
        if (c == ':') {
            /* an HTTP server serves hierarchical URIs with an authority
             * (http://, https://); "host:80" or "urn:x" are not for it */
            if (n - i < 3 || t[i + 1] != '/' || t[i + 2] != '/') break;
            m->target_form = CSH_TARGET_ABSOLUTE;
            return CSH_OK;
        }
        if (!is_alpha(c) && !is_digit(c) && c != '+' && c != '-' && c != '.') break;
    }
    return CSH_E_TARGET_FORM;
}

/* Checks "HTTP/" DIGIT "." DIGIT as far as the bytes go, one at a time, so
 * garbage is refused as soon as it arrives. i is the index in the version. */
static inline int version_byte_ok(size_t i, char c)
{
    static const char prefix[] = "HTTP/";
    if (i < 5) return c == prefix[i];
    if (i == 6) return c == '.';
    return is_digit(c);
}

/* Records an error of the start line at `at`, decided on reading `pos`. A
 * fault decided by a byte past the line's limit comes second to the limit,
 * as in fields_impl.h: the line was too long before it, and a parser fed in
 * pieces stops there (pos may be the byte after the CR or LF that decided). */
static int start_line_error(csh_parser *p, const char *buf, const char *line, const char *at,
                            const char *pos, int err)
{
    const char *seen = pos > line && (pos[-1] == '\r' || pos[-1] == '\n') ? pos - 1 : pos;
    if (seen < at) seen = at;
    if ((size_t)(seen - line) > p->limits_.max_start_line) {
        at = line + p->limits_.max_start_line;
        err = CSH_E_URI_TOO_LONG;
    }
    p->error_offset_ = (size_t)(at - buf);
    return err;
}

#define FAIL(code, ptr)                                                                            \
    do {                                                                                           \
        err = (code);                                                                              \
        at = (ptr);                                                                                \
        goto fail;                                                                                 \
    } while (0)

static inline int is_ows(char c)
{
    return c == ' ' || c == '\t';
}

/* RFC 9110 §7.2 / RFC 3986 §3.2.2: uri-host [ ":" port ] — unreserved,
 * pct-encoded, sub-delims, ":" and the brackets of an IP literal. No userinfo
 * ('@'), no whitespace, no controls, nothing above 0x7E. */
#define H1 1
static const unsigned char host_byte[256] = {
    ['-'] = H1, ['.'] = H1, ['_'] = H1, ['~'] = H1, ['%'] = H1, ['!'] = H1, ['$'] = H1, ['&'] = H1,
    ['\''] = H1, ['('] = H1, [')'] = H1, ['*'] = H1, ['+'] = H1, [','] = H1, [';'] = H1, ['='] = H1,
    [':'] = H1, ['['] = H1, [']'] = H1, ['0'] = H1, ['1'] = H1, ['2'] = H1, ['3'] = H1, ['4'] = H1,
    ['5'] = H1, ['6'] = H1, ['7'] = H1, ['8'] = H1, ['9'] = H1, ['A'] = H1, ['B'] = H1, ['C'] = H1,
    ['D'] = H1, ['E'] = H1, ['F'] = H1, ['G'] = H1, ['H'] = H1, ['I'] = H1, ['J'] = H1, ['K'] = H1,
    ['L'] = H1, ['M'] = H1, ['N'] = H1, ['O'] = H1, ['P'] = H1, ['Q'] = H1, ['R'] = H1, ['S'] = H1,
    ['T'] = H1, ['U'] = H1, ['V'] = H1, ['W'] = H1, ['X'] = H1, ['Y'] = H1, ['Z'] = H1, ['a'] = H1,
    ['b'] = H1, ['c'] = H1, ['d'] = H1, ['e'] = H1, ['f'] = H1, ['g'] = H1, ['h'] = H1, ['i'] = H1,
    ['j'] = H1, ['k'] = H1, ['l'] = H1, ['m'] = H1, ['n'] = H1, ['o'] = H1, ['p'] = H1, ['q'] = H1,
    ['r'] = H1, ['s'] = H1, ['t'] = H1, ['u'] = H1, ['v'] = H1, ['w'] = H1, ['x'] = H1, ['y'] = H1,
    ['z'] = H1,
};

static int on_content_length(csh_parser *p, const char *v, size_t n, const char **at)
{
    uint64_t x = 0;
    if (p->seen_ & SEEN_TE) return CSH_E_CL_AND_TE;                /* RFC 9112 §6.3 (3) */
    if (p->seen_ & SEEN_CL) return CSH_E_DUPLICATE_CONTENT_LENGTH; /* even if equal */
    if (n == 0) return CSH_E_INVALID_CONTENT_LENGTH;
    for (size_t i = 0; i < n; i++) {
        unsigned d = (unsigned char)v[i] - (unsigned)'0';
        if (d > 9) {
            *at = v + i;
            return CSH_E_INVALID_CONTENT_LENGTH; /* RFC 9110 §8.6: 1*DIGIT */
        }
        if (x > (UINT64_C(0x7fffffffffffffff) - d) / 10) {
            *at = v + i;
            return CSH_E_CONTENT_LENGTH_TOO_LARGE;
        }
        x = x * 10 + d;
    }
    p->seen_ |= SEEN_CL;
    p->msg.content_length = x;
    p->msg.flags |= CSH_MSG_HAS_CONTENT_LENGTH;
    return CSH_OK;
}

/* Transfer-Encoding = #transfer-coding (RFC 9112 §6.1). One field line only,
 * no parameters, at least one coding. Empty list elements (",chunked",
 * "gzip, , chunked") are skipped as RFC 9110 §5.6.1 requires of a recipient:
 * they are normalised here, once, so they cannot hide a coding from the
 * checks below (libcshttp/SMUGGLING.md, "TE list with empty elements"). */
static int on_transfer_encoding(csh_parser *p, const char *buf, const char *v, size_t n,
                                const char **at)
{
    const char *s = v, *end = v + n;
    int other = 0, chunked_last = 0, codings = 0;

    if (p->seen_ & SEEN_CL) return CSH_E_CL_AND_TE;
    if (p->seen_ & SEEN_TE) return CSH_E_DUPLICATE_TE;
    if (p->msg.version_minor == 0) return CSH_E_TE_IN_HTTP10; /* RFC 9112 §6.1 */
    for (;;) {
        while (s < end && (is_ows(*s) || *s == ',')) s++;
        if (s == end) break;
        const char *e = csh__scan_token(s, end);
        size_t len = (size_t)(e - s);
        *at = s;
        if (len == 0) return CSH_E_INVALID_TE;
        codings++;
        if (len == 7 && lower_eq(s, "chunked", 7)) {
            if (p->seen_ & SEEN_TE_CHUNKED) return CSH_E_CHUNKED_TWICE; /* §6.1 */
            p->seen_ |= SEEN_TE_CHUNKED;
            chunked_last = 1;
        } else if ((len == 4 && lower_eq(s, "gzip", 4)) || (len == 6 && lower_eq(s, "x-gzip", 6)) ||
                   (len == 7 && lower_eq(s, "deflate", 7)) ||
                   (len == 8 && lower_eq(s, "compress", 8)) ||
                   (len == 10 && lower_eq(s, "x-compress", 10))) {
            other = 1;
            chunked_last = 0;
        } else {
            return CSH_E_UNKNOWN_TE; /* RFC 9112 §6.1: 501 */
        }
        while (e < end && is_ows(*e)) e++;
        if (e == end) break;
        *at = e;
        if (*e != ',') return CSH_E_INVALID_TE; /* "chunked;x=y", "gzip chunked" */
        s = e + 1;
    }
    if (codings == 0) {
        *at = v;
        return CSH_E_INVALID_TE; /* "", ",", " , ": RFC 9112 §6.1 needs one coding */
    }
    /* a request whose final coding is not chunked is refused once the head
     * is whole (finish_head), so that a second Transfer-Encoding line is
     * reported as what it is */
    p->te_off_ = (size_t)(v - buf);
    p->seen_ |= SEEN_TE | (chunked_last ? SEEN_TE_CHUNKED_LAST : 0);
    p->msg.flags |= CSH_MSG_HAS_TRANSFER_ENCODING | (other ? CSH_MSG_TE_OTHER_CODINGS : 0);
    return CSH_OK;
}

/* Connection = #connection-option (RFC 9110 §7.6.1); empty elements are
 * allowed by the list rule (§5.6.1). */
static int on_connection(csh_parser *p, const char *v, size_t n, const char **at)
{
    const char *s = v, *end = v + n;
    /* the usual values, a single option, without the list walk */
    if (n == 10 && lower_eq(v, "keep-alive", 10)) {
        p->seen_ |= SEEN_CONN_KEEP_ALIVE;
        return CSH_OK;
    }
    if (n == 5 && lower_eq(v, "close", 5)) {
        p->seen_ |= SEEN_CONN_CLOSE;
        return CSH_OK;
    }
    for (;;) {
        while (s < end && (is_ows(*s) || *s == ',')) s++;
        if (s == end) return CSH_OK;
        const char *e = csh__scan_token(s, end);
        size_t len = (size_t)(e - s);
        *at = e;
        if (len == 0) return CSH_E_INVALID_CONNECTION;
        if (len == 5 && lower_eq(s, "close", 5))
            p->seen_ |= SEEN_CONN_CLOSE;
        else if (len == 10 && lower_eq(s, "keep-alive", 10))
            p->seen_ |= SEEN_CONN_KEEP_ALIVE;
        else if (len == 7 && lower_eq(s, "upgrade", 7))
            p->seen_ |= SEEN_CONN_UPGRADE;
        while (e < end && is_ows(*e)) e++;
        if (e < end && *e != ',') {
            *at = e;
            return CSH_E_INVALID_CONNECTION;
        }
        s = e;
    }
}

static int on_host(csh_parser *p, const char *buf, const csh_header *h, const char **at)
{
    const char *v = buf + h->value.off;
    if (p->seen_ & SEEN_HOST) return CSH_E_DUPLICATE_HOST; /* RFC 9112 §3.2 */
    size_t k = 0;
    /* four bytes a test; the loop below finds the culprit */
    for (; k + 4 <= h->value.len; k += 4)
        if (!(host_byte[(unsigned char)v[k]] & host_byte[(unsigned char)v[k + 1]] &
              host_byte[(unsigned char)v[k + 2]] & host_byte[(unsigned char)v[k + 3]]))
            break;
    for (size_t i = k; i < h->value.len; i++) {
        if (!host_byte[(unsigned char)v[i]]) {
            *at = v + i;
            return CSH_E_INVALID_HOST;
        }
    }
    p->seen_ |= SEEN_HOST;
    p->msg.host = h->value;
    p->msg.flags |= CSH_MSG_HAS_HOST;
    return CSH_OK;
}

/* Interprets the fields that decide framing and connection handling, once,
 * so that nobody has to scan the headers again for them. */
static int interpret_field(csh_parser *p, const char *buf, const csh_header *h, const char **at)
{
    const char *name = buf + h->name.off;
    const char *v = buf + h->value.off;
    size_t n = h->value.len;
    int request = p->type_ == CSH_REQUEST;

    *at = name;
    switch (h->name.len) {
    case 4:
        if (request && lower_eq(name, "host", 4)) return on_host(p, buf, h, at);
        break;
    case 6:
        if (request && lower_eq(name, "expect", 6)) {
            /* RFC 9110 §10.1.1: 100-continue is the only expectation; an
             * HTTP/1.0 client cannot have sent it meaningfully. */
            if (n == 12 && lower_eq(v, "100-continue", 12)) {
                if (p->msg.version_minor >= 1) p->msg.flags |= CSH_MSG_EXPECT_CONTINUE;
            } else if (n > 0) {
                p->msg.flags |= CSH_MSG_EXPECT_OTHER;
            }
        }
        break;
    case 7:
        if (lower_eq(name, "upgrade", 7) && !(p->seen_ & SEEN_UPGRADE)) {
            p->seen_ |= SEEN_UPGRADE;
            p->msg.upgrade = h->value;
        }
        break;
    case 10:
        if (lower_eq(name, "connection", 10)) return on_connection(p, v, n, at);
        break;
    case 14:
        if (lower_eq(name, "content-length", 14)) return on_content_length(p, v, n, at);
        break;
    case 17:
        if (lower_eq(name, "transfer-encoding", 17)) return on_transfer_encoding(p, buf, v, n, at);
        break;
    default: break;
    }
    return CSH_OK;
}

/* 1 when a field name of this length may be one interpret_field acts on. */
static inline int csh__maybe_framing_field(size_t len)
{
    /* host 4, expect 6, upgrade 7, connection 10, content-length 14,
     * transfer-encoding 17 */
    return len < 32 && ((1u << len) & ((1u << 4) | (1u << 6) | (1u << 7) | (1u << 10) |
                                       (1u << 14) | (1u << 17))) != 0;
}

static void decide_connection(csh_parser *p)
{
    csh_message *m = &p->msg;
    if (p->seen_ & SEEN_CONN_CLOSE)
        m->flags |= CSH_MSG_CONNECTION_CLOSE;
    else if (m->version_minor >= 1 || (p->seen_ & SEEN_CONN_KEEP_ALIVE))
        m->flags |= CSH_MSG_KEEP_ALIVE; /* RFC 9112 §9.3 */
    /* RFC 9110 §7.8: Upgrade counts only with the "upgrade" connection option,
     * and never in HTTP/1.0. */
    if ((p->seen_ & SEEN_UPGRADE) && (p->seen_ & SEEN_CONN_UPGRADE) && m->version_minor >= 1)
        m->flags |= CSH_MSG_UPGRADE;
}

/* The head ended: interpret the framing fields, decide framing (RFC 9112 §6.3) and keep-alive. */
static int finish_head(csh_parser *p, const char *buf)
{
    csh_message *m = &p->msg;
    m->head_length = p->ls_.pos;

    /* The fields that decide framing are read once the head is whole: a
     * field's meaning can depend on the lines after it (an obs-fold, a second
     * Transfer-Encoding), and the scan itself stays a tight loop. */
    for (size_t i = 0; i < m->num_headers; i++) {
        const csh_header *h = &m->headers[i];
        if (csh__maybe_framing_field(h->name.len)) {
            const char *where;
            int r = interpret_field(p, buf, h, &where);
            if (r != CSH_OK) {
                p->error_offset_ = (size_t)(where - buf);
                return r;
            }
        }
    }
    decide_connection(p);

    if (p->type_ == CSH_REQUEST) {
        if (m->version_minor >= 1 && !(p->seen_ & SEEN_HOST)) {
            p->error_offset_ = p->ls_.line;
            return CSH_E_MISSING_HOST; /* RFC 9112 §3.2 */
        }
        if ((p->seen_ & SEEN_TE) && !(p->seen_ & SEEN_TE_CHUNKED_LAST)) {
            p->error_offset_ = p->te_off_;
            return CSH_E_TE_NOT_CHUNKED; /* RFC 9112 §6.3 (4) */
        }
        if (p->seen_ & SEEN_TE)
            m->body = CSH_BODY_CHUNKED;
        else if (m->content_length > 0)
            m->body = CSH_BODY_LENGTH;
        return CSH_OK;
    }

    /* responses, RFC 9112 §6.3 rules 1 and 2: any 2xx to CONNECT is a
     * tunnel, a 204 too */
    if (p->request_method_ == CSH_METHOD_CONNECT && m->status >= 200 && m->status < 300) {
        m->body = CSH_BODY_NONE;
        m->content_length = 0;
        m->flags = (m->flags & ~(unsigned)CSH_MSG_KEEP_ALIVE) | CSH_MSG_TUNNEL;
        return CSH_OK;
    }
    if (m->status < 200 || m->status == 204 || m->status == 304 ||
        p->request_method_ == CSH_METHOD_HEAD) {
        m->body = CSH_BODY_NONE;
        m->content_length = 0;
        if (m->status == 101)
            m->flags = (m->flags & ~(unsigned)CSH_MSG_KEEP_ALIVE) | CSH_MSG_TUNNEL;
        else if (m->status < 200)
            m->flags |= CSH_MSG_INTERIM;
        return CSH_OK;
    }
    if (p->seen_ & SEEN_TE) {
        m->body = (p->seen_ & SEEN_TE_CHUNKED_LAST) ? CSH_BODY_CHUNKED : CSH_BODY_UNTIL_CLOSE;
    } else if (p->seen_ & SEEN_CL) {
        m->body = m->content_length > 0 ? CSH_BODY_LENGTH : CSH_BODY_NONE;
    } else {
        m->body = CSH_BODY_UNTIL_CLOSE;
    }
    if (m->body == CSH_BODY_UNTIL_CLOSE) m->flags &= ~(unsigned)CSH_MSG_KEEP_ALIVE;
    return CSH_OK;
}

#define CSH_V(name) csh__##name##_portable
#define CSH_V_ATTR
#define CSH_V_SCAN_NAME(p, e) csh__scan_token(p, e)
#define CSH_V_SCAN_VALUE(p, e) csh__scan_value_portable(p, e)
#define CSH_V_SCAN_VCHAR(p, e) csh__scan_vchar_portable(p, e)
#define CSH_V_SCAN_FIELD(l, e, c, v) csh__scan_field_portable(l, e, c, v)
#include "head_impl.h"
#undef CSH_V
#undef CSH_V_ATTR
#undef CSH_V_SCAN_NAME
#undef CSH_V_SCAN_VALUE
#undef CSH_V_SCAN_VCHAR
#undef CSH_V_SCAN_FIELD

#ifdef CSH_HAVE_AVX2
#define CSH_V(name) csh__##name##_avx2
#define CSH_V_ATTR CSH_AVX2
/* `buf` (the message's first byte, in scope wherever they are used) is the
 * lowest byte the scanners may read */
#define CSH_V_SCAN_NAME(p, e) csh__scan_token_avx2_from(buf, p, e)
#define CSH_V_SCAN_VALUE(p, e) csh__scan_value_avx2_from(buf, p, e)
#define CSH_V_SCAN_VCHAR(p, e) csh__scan_vchar_avx2_from(buf, p, e)
#define CSH_V_SCAN_FIELD(l, e, c, v) csh__scan_field_avx2_from(buf, l, e, c, v)
#include "head_impl.h"
#undef CSH_V
#undef CSH_V_ATTR
#undef CSH_V_SCAN_NAME
#undef CSH_V_SCAN_VALUE
#undef CSH_V_SCAN_VCHAR
#undef CSH_V_SCAN_FIELD
#endif

int csh_parser_execute(csh_parser *p, const char *buf, size_t len)
{
    if (p->result_ != CSH_INCOMPLETE) return p->result_;
    if (len < p->len_ || (buf == NULL && len > 0)) return CSH_E_INVALID_ARGUMENT;
    /* no new bytes: the answer cannot have changed (cheap empty calls) */
    if (len == p->len_ && len > 0) return CSH_INCOMPLETE;
    p->len_ = len;
#ifdef CSH_HAVE_AVX2
    if (p->simd_) return csh__run_avx2(p, buf, len);
#endif
    return csh__run_portable(p, buf, len);
}
