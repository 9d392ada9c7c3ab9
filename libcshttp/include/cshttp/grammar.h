/* The common rules of HTTP field values (RFC 9110 §5.6): tokens, lists,
 * parameters, quoted strings, weights (q-values), entity-tags and HTTP
 * dates. One home for each rule: the parser, the toolkit (content
 * negotiation, conditionals, ranges, cookies, routing) and any program that
 * links only libcshttp use these.
 *
 * Every function is pure: no allocation, no I/O, no global state, safe from
 * any thread. Inputs are a pointer and a length (never NUL-terminated);
 * spans returned are offsets from that pointer. A malformed input is
 * CSH_E_INVALID_GRAMMAR (400), never a crash: these functions read no byte
 * outside [s, s + n). */
#ifndef CSHTTP_GRAMMAR_H
#define CSHTTP_GRAMMAR_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "export.h"
#include "span.h"

#ifdef __cplusplus
extern "C" {
#endif

/* tchar = "!" / "#" / "$" / "%" / "&" / "'" / "*" / "+" / "-" / "." / "^" /
 *         "_" / "`" / "|" / "~" / DIGIT / ALPHA          (RFC 9110 §5.6.2)
 * as a bit per byte value: bytes 0-63 in CSH_TCHAR_LO, 64-127 in
 * CSH_TCHAR_HI; no byte >= 0x80 is a tchar. */
#define CSH_TCHAR_LO 0x03ff6cfa00000000ull
#define CSH_TCHAR_HI 0x57ffffffc7fffffeull

/* 1 when `c` is a tchar. */
static inline int csh_is_tchar(unsigned char c)
{
    return c < 64 ? (int)((CSH_TCHAR_LO >> c) & 1u)
                  : c < 128 ? (int)((CSH_TCHAR_HI >> (c - 64)) & 1u) : 0;
}

/* 1 when `c` is OWS: SP or HTAB (RFC 9110 §5.6.3). */
static inline int csh_is_ows(unsigned char c)
{
    return c == ' ' || c == '\t';
}

/* The number of tchars at the start of s[0 .. n): a token's length, 0 when
 * s does not start with one. */
CSH_EXPORT size_t csh_token_len(const char *s, size_t n);

/* 1 when s[0 .. n) is exactly a token (n > 0). */
CSH_EXPORT int csh_is_token(const char *s, size_t n);

/* The length of the quoted-string at the start of s (RFC 9110 §5.6.4):
 *   DQUOTE *( qdtext / quoted-pair ) DQUOTE
 * with qdtext = HTAB / SP / %x21 / %x23-5B / %x5D-7E / obs-text and
 * quoted-pair = "\" ( HTAB / SP / VCHAR / obs-text ). 0 when s does not
 * start with a complete, valid quoted-string. */
CSH_EXPORT size_t csh_quoted_len(const char *s, size_t n);

/* Copies the content of the quoted-string s[0 .. n) (one that
 * csh_quoted_len accepted, n its length) to `out` without the quotes and
 * with each quoted-pair replaced by its octet; returns the bytes written,
 * at most n - 2. `out` may be `s` itself. */
CSH_EXPORT size_t csh_quoted_unescape(const char *s, size_t n, char *out);

/* A #list (RFC 9110 §5.6.1): elements separated by commas with optional
 * whitespace, where empty elements ("a, , b", ",a", "a,") are accepted and
 * skipped as a recipient must. A comma inside a quoted-string does not end
 * an element. Use:
 *   csh_list l;
 *   csh_list_init(&l, value, len);
 *   csh_span e;
 *   while (csh_list_next(&l, &e)) use(value + e.off, e.len);
 * Each element comes without surrounding whitespace, never empty. */
typedef struct csh_list {
    const char *s;
    size_t n;
    size_t pos; /* private: where the next element is looked for */
} csh_list;

CSH_EXPORT void csh_list_init(csh_list *l, const char *s, size_t n);

/* 1 and *elem (offsets from the list's first byte) for the next element;
 * 0 when there is none left. */
CSH_EXPORT int csh_list_next(csh_list *l, csh_span *elem);

/* One parameter (RFC 9110 §5.6.6): name "=" ( token / quoted-string ). */
typedef struct csh_param {
    csh_span name;  /* a token; compare with csh_mem_ieq (names are case-insensitive) */
    csh_span value; /* the token, or the whole quoted-string with its quotes */
    int quoted;     /* 1 when value is a quoted-string (see csh_quoted_unescape) */
} csh_param;

/* parameters = *( OWS ";" OWS [ parameter ] ), read from s[*pos] on: 1 and
 * *out for the next parameter (*pos moves past it), 0 at the end of s (only
 * whitespace and empty ";" left), CSH_E_INVALID_GRAMMAR when the bytes at
 * *pos are not a parameter (spans are offsets from s). */
CSH_EXPORT int csh_param_next(const char *s, size_t n, size_t *pos, csh_param *out);

/* weight = OWS ";" OWS "q=" qvalue, where
 *   qvalue = ( "0" [ "." 0*3DIGIT ] ) / ( "1" [ "." 0*3("0") ] )
 * (RFC 9110 §12.4.2): the value of s[0 .. n) in thousandths (0..1000), or
 * CSH_E_INVALID_GRAMMAR. */
CSH_EXPORT int csh_qvalue_parse(const char *s, size_t n);

/* A list element of the Accept-* fields: an item followed by parameters,
 * one of them perhaps the weight "q" (RFC 9110 §12.4.2, §12.5):
 *   item *( OWS ";" OWS name "=" ( token / quoted-string ) )
 * where the item is tchars and "/" (a coding, a language range, a media
 * range). Returns the weight in thousandths (1000 when none is given) with
 * *item set, or CSH_E_INVALID_GRAMMAR for an element that does not parse
 * (a recipient ignores such an element). Names are case-insensitive: "Q=0"
 * is a weight. */
CSH_EXPORT int csh_weighted_parse(const char *s, size_t n, csh_span *item);

/* The length of the entity-tag at the start of s (RFC 9110 §8.8.3):
 *   [ "W/" ] DQUOTE *etagc DQUOTE, etagc = %x21 / %x23-7E / obs-text
 * with *weak set to 1 for a weak one; 0 when s does not start with one. */
CSH_EXPORT size_t csh_etag_len(const char *s, size_t n, int *weak);

/* An IMF-fixdate, "Sun, 06 Nov 1994 08:49:37 GMT", and its NUL. */
#define CSH_HTTP_DATE_SIZE 30

/* Writes the IMF-fixdate of `t` (seconds since 1970-01-01 UTC) and a NUL;
 * t is clamped to the years 0000..9999. */
CSH_EXPORT void csh_http_date_format(int64_t t, char out[CSH_HTTP_DATE_SIZE]);

/* Parses s[0 .. n) as an HTTP-date in any of its three forms (RFC 9110
 * §5.6.7): IMF-fixdate, the obsolete rfc850-date ("Sunday, 06-Nov-94
 * 08:49:37 GMT") and asctime-date ("Sun Nov  6 08:49:37 1994"). `now`
 * (seconds since the epoch) places a two-digit rfc850 year: one that would
 * lie more than 50 years after now is taken from the previous century.
 * Returns 0 with *t, or CSH_E_INVALID_GRAMMAR. The day name is not checked
 * against the date (a recipient may ignore it); a leap second (60) is read
 * as 59. */
CSH_EXPORT int csh_http_date_parse(const char *s, size_t n, int64_t now, int64_t *t);

#ifdef __cplusplus
}
#endif

#endif
