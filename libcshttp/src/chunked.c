/* The chunked decoder (RFC 9112 §7.1).
 *
 * Chunk-size lines are read a byte at a time through a small state machine
 * (they are short, and it keeps its place, so nothing is kept unconsumed),
 * except the usual line, whole in the buffer (digits and CRLF), which is read
 * in one go; chunk data is handed back as spans; the trailer section is kept
 * unconsumed until it is complete so that its fields can be returned as spans
 * of the last call's buffer. */
#include "cshttp/chunked.h"

#include <string.h>

#include "fields.h"
#include "limits.h"
#include "scan.h"

enum {
    C_SIZE = 0,    /* chunk-size digits */
    C_SIZE_WS,     /* BWS after the size, before ';' */
    X_NAME_BWS,    /* after ';': BWS then chunk-ext-name */
    X_NAME,        /* in chunk-ext-name */
    X_AFTER_NAME,  /* BWS after the name: '=' or ';' */
    X_VAL_BWS,     /* after '=': BWS then the value */
    X_VAL_TOKEN,   /* in a token value */
    X_AFTER_VAL,   /* BWS after a value: ';' */
    X_QUOTED,      /* in a quoted-string value */
    X_QUOTED_ESC,  /* after a backslash in it */
    X_AFTER_QUOTE, /* right after the closing quote */
    C_SIZE_CR,     /* CR of the size line seen: LF must follow */
    C_DATA,        /* chunk data */
    C_DATA_CR,     /* the CRLF after chunk data */
    C_DATA_LF,
    C_TRAILERS,    /* the trailer section, up to its empty line */
    C_DONE,
};

void csh_chunked_init(csh_chunked *c, const csh_limits *limits, unsigned flags,
                      csh_header *trailers, size_t trailers_cap)
{
    memset(c, 0, sizeof *c);
    int bad = csh__limits_keep(&c->limits_, limits) < 0;
    c->flags_ = (flags & ~CSH__FLAG_BAD_LIMITS) | (bad ? CSH__FLAG_BAD_LIMITS : 0u);
    c->trailers = trailers;
    c->trailer_cap_ = trailers ? trailers_cap : 0;
    c->simd_ = (flags & CSH_PARSE_NO_SIMD) ? 0 : csh__simd_available();
    c->state_ = C_SIZE;
    c->result_ = bad ? CSH_E_INVALID_ARGUMENT : CSH_INCOMPLETE;
}

void csh_chunked_reset(csh_chunked *c)
{
    /* limits, flags, SIMD choice and trailer array are kept: only the
     * decoding state is cleared (what csh_chunked_init's memset would) */
    c->body_bytes = 0;
    c->chunks = 0;
    c->num_trailers = 0;
    c->remaining_ = 0;
    c->size_ = 0;
    c->ext_len_ = 0;
    c->fields_seen_ = 0;
    c->digits_ = 0;
    c->state_ = C_SIZE;
    /* limits of a bad size (limits.h): every call fails, after a reset too */
    c->result_ = (c->flags_ & CSH__FLAG_BAD_LIMITS) ? CSH_E_INVALID_ARGUMENT : CSH_INCOMPLETE;
}

static inline int hex_value(unsigned char ch)
{
    if (ch >= '0' && ch <= '9') return ch - '0';
    ch |= 0x20;
    if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
    return -1;
}

/* The value of a hex digit, 16 for any other byte (a row per high nibble). */
/* clang-format off */
static const unsigned char hex_digit[256] = {
    16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16,
    16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16,
    16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16,
     0,  1,  2,  3,  4,  5,  6,  7,  8,  9, 16, 16, 16, 16, 16, 16,
    16, 10, 11, 12, 13, 14, 15, 16, 16, 16, 16, 16, 16, 16, 16, 16,
    16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16,
    16, 10, 11, 12, 13, 14, 15, 16, 16, 16, 16, 16, 16, 16, 16, 16,
    16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16,
    16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16,
    16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16,
    16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16,
    16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16,
    16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16,
    16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16,
    16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16,
    16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16,
};
/* clang-format on */

static inline int is_ws(unsigned char ch)
{
    return ch == ' ' || ch == '\t';
}

/* qdtext / quoted-pair octets (RFC 9110 §5.6.4) */
static inline int qdtext(unsigned char ch)
{
    return ch == '\t' || ch == ' ' || ch == 0x21 || (ch >= 0x23 && ch <= 0x5b) ||
           (ch >= 0x5d && ch <= 0x7e) || ch >= 0x80;
}

static inline int quoted_pair_ok(unsigned char ch)
{
    return ch == '\t' || (ch >= 0x20 && ch != 0x7f);
}

/* The trailer section, from its first byte at base (offsets in c->ls_ and in
 * stored trailers are relative to it). Sets *used to the bytes of base used. */
static int decode_trailers(csh_chunked *c, const char *base, size_t len, size_t *used)
{
    csh_line_state_ *ls = &c->ls_;
    size_t section_end = len < c->limits_.max_trailer ? len : c->limits_.max_trailer;
    for (;;) {
        size_t line_end = ls->line + c->limits_.max_field_line + 2;
        size_t win = section_end < line_end ? section_end : line_end;
        csh_header h;
        int eos = 0, r;
        size_t at = 0;

        if (line_end < ls->line) win = section_end; /* limit near SIZE_MAX */
        /* trailers are rare and short: the portable scanner does */
        r = csh__field_line_parse_portable(ls, base, win, c->flags_, 0, c->limits_.max_field_line,
                                           &h, &eos, &at);
        if (r == CSH_OK && eos) {
            *used = ls->pos;
            return CSH_OK;
        }
        if (r == CSH_OK) {
            if (c->fields_seen_ >= c->limits_.max_fields) {
                *used = ls->line;
                return CSH_E_TOO_MANY_FIELDS;
            }
            c->fields_seen_++;
            if (c->num_trailers < c->trailer_cap_) c->trailers[c->num_trailers++] = h;
            ls->line = ls->pos;
            continue;
        }
        if (r == CSH_INCOMPLETE) {
            /* as in the head: a line that has read more than its limit (a
             * final CR aside) is too long, whether or not more bytes come */
            size_t text = ls->pos - ls->line;
            if (text > c->limits_.max_field_line + (csh__field_sub_after_cr(ls->sub) ? 1u : 0u)) {
                *used = ls->line + c->limits_.max_field_line;
                return CSH_E_FIELD_LINE_TOO_LONG;
            }
            if (win == len) {
                *used = 0; /* the section stays unconsumed until complete */
                return CSH_INCOMPLETE;
            }
            *used = win;
            return CSH_E_TRAILER_TOO_LARGE;
        }
        *used = at;
        return r;
    }
}

#define FAIL(code)                                                                                 \
    do {                                                                                           \
        r = (code);                                                                                \
        goto fail;                                                                                 \
    } while (0)

int csh_chunked_decode(csh_chunked *c, const char *buf, size_t len, size_t *consumed,
                       csh_span *data)
{
    const unsigned char *p = (const unsigned char *)buf;
    size_t i = 0;
    int lenient = (c->flags_ & CSH_PARSE_LENIENT_BARE_LF) != 0;
    int r;

    *consumed = 0;
    if (c->result_ != CSH_INCOMPLETE) return c->result_;
    if (buf == NULL && len > 0) return CSH_E_INVALID_ARGUMENT;

    while (i < len) {
        unsigned char ch = p[i];
        switch (c->state_) {
        case C_SIZE: {
            if (c->digits_ == 0) {
                /* The usual size line, whole in this buffer: 1 to 15 hex
                 * digits (no overflow possible) and CRLF, read in one go.
                 * Anything else (an extension, a bare LF, a longer size,
                 * a line cut by the end of the buffer, a fault) is read
                 * again from its first byte below, one byte at a time. */
                size_t k = i;
                uint64_t v = 0;
                unsigned d;
                while (k < len && k - i < 16 && (d = hex_digit[p[k]]) < 16) {
                    v = (v << 4) | d;
                    k++;
                }
                if (k > i && k - i < 16 && len - k >= 2 && p[k] == '\r' && p[k + 1] == '\n') {
                    i = k + 2;
                    c->chunks++;
                    if (v == 0) {
                        c->state_ = C_TRAILERS;
                        memset(&c->ls_, 0, sizeof c->ls_);
                        if (i == len) goto out; /* the trailer section starts in the next call */
                        continue;
                    }
                    c->remaining_ = v;
                    c->state_ = C_DATA;
                    continue;
                }
            }
            int d = hex_value(ch);
            if (d >= 0) {
                /* RFC 9112 §7.1: chunk-size = 1*HEXDIG; at most 16 digits and
                 * 63 bits, so it can never wrap (nginx CVE-2013-2028). */
                if (c->digits_ == 16 || c->size_ > (UINT64_C(0x7fffffffffffffff) >> 4))
                    FAIL(CSH_E_CHUNK_SIZE_TOO_LARGE);
                c->size_ = (c->size_ << 4) | (uint64_t)d;
                c->digits_++;
                i++;
                continue;
            }
            if (c->digits_ == 0) FAIL(CSH_E_INVALID_CHUNK_SIZE); /* sign, 0x, SP, empty */
            if (ch == ';' || is_ws(ch)) {
                /* the extension's bytes count from the first after the size */
                if (c->limits_.max_chunk_ext == 0) FAIL(CSH_E_CHUNK_EXT_TOO_LONG);
                c->ext_len_ = 1;
            }
            if (ch == ';') {
                c->state_ = X_NAME_BWS;
            } else if (is_ws(ch)) {
                c->state_ = C_SIZE_WS;
            } else if (ch == '\r') {
                c->state_ = C_SIZE_CR;
            } else if (ch == '\n') {
                if (!lenient) FAIL(CSH_E_BARE_LF);
                goto size_line_done;
            } else {
                FAIL(CSH_E_INVALID_CHUNK_SIZE); /* "5zz", "1these-bytes" */
            }
            i++;
            continue;
        }
        case C_SIZE_WS:
            /* BWS may precede ';' only: "5 0" is not a size (pekko-http) */
            if (ch != ';' && !is_ws(ch)) FAIL(CSH_E_INVALID_CHUNK_SIZE);
            if (c->ext_len_ >= c->limits_.max_chunk_ext) FAIL(CSH_E_CHUNK_EXT_TOO_LONG);
            c->ext_len_++;
            if (is_ws(ch)) {
                i++;
                continue;
            }
            c->state_ = X_NAME_BWS;
            i++;
            continue;
        case C_SIZE_CR:
            if (ch != '\n') FAIL(CSH_E_BARE_CR); /* "1\r0\r\n" (h2o) */
            goto size_line_done;
        case C_DATA: {
            size_t n = len - i;
            if (c->remaining_ == 0) {
                /* csh_body_next took the chunk's last bytes inline, leaving
                 * the state to move on here */
                c->state_ = C_DATA_CR;
                continue;
            }
            if ((uint64_t)n > c->remaining_) n = (size_t)c->remaining_;
            data->off = i;
            data->len = n;
            c->remaining_ -= n;
            c->body_bytes += n;
            if (c->remaining_ == 0) c->state_ = C_DATA_CR;
            *consumed = i + n;
            return CSH_DATA;
        }
        case C_DATA_CR:
            if (ch == '\r' && len - i >= 2 && p[i + 1] == '\n') {
                /* the usual CRLF, whole: on to the next size line */
                c->state_ = C_SIZE;
                i += 2;
                continue;
            }
            if (ch == '\r') {
                c->state_ = C_DATA_LF;
            } else if (ch == '\n') {
                if (!lenient) FAIL(CSH_E_BARE_LF);
                c->state_ = C_SIZE;
            } else {
                FAIL(CSH_E_MISSING_CHUNK_CRLF);
            }
            i++;
            continue;
        case C_DATA_LF:
            if (ch != '\n') FAIL(CSH_E_MISSING_CHUNK_CRLF);
            c->state_ = C_SIZE;
            i++;
            continue;
        case C_TRAILERS: {
            size_t used = 0;
            r = decode_trailers(c, buf + i, len - i, &used);
            if (r == CSH_INCOMPLETE) {
                *consumed = i;
                return CSH_INCOMPLETE;
            }
            if (r < 0) {
                i += used;
                goto fail;
            }
            for (size_t k = 0; k < c->num_trailers; k++) {
                c->trailers[k].name.off += i;
                c->trailers[k].value.off += i;
            }
            c->state_ = C_DONE;
            c->result_ = CSH_OK;
            *consumed = i + used;
            return CSH_OK;
        }
        default:
            break;
        }

        /* chunk extensions (RFC 9112 §7.1.1):
         *   *( BWS ";" BWS ext-name [ BWS "=" BWS ( token / quoted-string ) ] ) */
        if (ch == '\n' && c->state_ != X_QUOTED) {
            if (!lenient) FAIL(CSH_E_BARE_LF); /* Kestrel CVE-2025-55315 */
        }
        if (ch != '\r' && ch != '\n') {
            if (c->ext_len_ >= c->limits_.max_chunk_ext) FAIL(CSH_E_CHUNK_EXT_TOO_LONG);
            c->ext_len_++;
        }
        switch (c->state_) {
        case X_NAME_BWS:
            if (is_ws(ch)) break;
            if (!csh__is_tchar(ch)) FAIL(CSH_E_INVALID_CHUNK_EXT);
            c->state_ = X_NAME;
            break;
        case X_NAME:
        case X_VAL_TOKEN:
            if (csh__is_tchar(ch)) break;
            if (ch == '=' && c->state_ == X_NAME)
                c->state_ = X_VAL_BWS;
            else if (ch == ';')
                c->state_ = X_NAME_BWS;
            else if (is_ws(ch))
                c->state_ = c->state_ == X_NAME ? X_AFTER_NAME : X_AFTER_VAL;
            else if (ch == '\r')
                c->state_ = C_SIZE_CR;
            else if (ch == '\n')
                goto size_line_done;
            else
                FAIL(CSH_E_INVALID_CHUNK_EXT);
            break;
        case X_AFTER_NAME:
        case X_AFTER_VAL:
            if (is_ws(ch)) break;
            if (ch == ';')
                c->state_ = X_NAME_BWS;
            else if (ch == '=' && c->state_ == X_AFTER_NAME)
                c->state_ = X_VAL_BWS;
            else
                FAIL(CSH_E_INVALID_CHUNK_EXT);
            break;
        case X_VAL_BWS:
            if (is_ws(ch)) break;
            if (ch == '"')
                c->state_ = X_QUOTED;
            else if (csh__is_tchar(ch))
                c->state_ = X_VAL_TOKEN;
            else
                FAIL(CSH_E_INVALID_CHUNK_EXT);
            break;
        case X_QUOTED:
            if (ch == '"')
                c->state_ = X_AFTER_QUOTE;
            else if (ch == '\\')
                c->state_ = X_QUOTED_ESC;
            else if (ch == '\n' && !lenient)
                FAIL(CSH_E_BARE_LF);
            else if (!qdtext(ch))
                FAIL(CSH_E_INVALID_CHUNK_EXT);
            break;
        case X_QUOTED_ESC:
            if (!quoted_pair_ok(ch)) FAIL(CSH_E_INVALID_CHUNK_EXT);
            c->state_ = X_QUOTED;
            break;
        case X_AFTER_QUOTE:
            if (ch == ';')
                c->state_ = X_NAME_BWS;
            else if (is_ws(ch))
                c->state_ = X_AFTER_VAL;
            else if (ch == '\r')
                c->state_ = C_SIZE_CR;
            else if (ch == '\n')
                goto size_line_done;
            else
                FAIL(CSH_E_INVALID_CHUNK_EXT);
            break;
        default:
            FAIL(CSH_E_INVALID_ARGUMENT); /* not reached */
        }
        i++;
        continue;

    size_line_done:
        i++;
        c->chunks++;
        c->ext_len_ = 0;
        c->digits_ = 0;
        if (c->size_ == 0) {
            c->state_ = C_TRAILERS;
            memset(&c->ls_, 0, sizeof c->ls_);
            if (i == len) break; /* the trailer section starts in the next call */
        } else {
            c->remaining_ = c->size_;
            c->size_ = 0;
            c->state_ = C_DATA;
        }
    }
out:
    *consumed = i;
    return CSH_INCOMPLETE;

fail:
    c->result_ = r;
    *consumed = i;
    return r;
}
