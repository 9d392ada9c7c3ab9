/* multipart/form-data (RFC 7578 on RFC 2046 §5.1): the boundary of a
 * Content-Type, and a streaming, push-style body parser.
 *
 * The parser is fed body bytes in pieces of any size and returns one event
 * per call:
 *
 *   cshw_multipart m;
 *   cshw_multipart_init(&m, arena, boundary, boundary_len, NULL);
 *   for each piece received (appended after the bytes not yet consumed):
 *     loop: r = cshw_multipart_feed(&m, buf, len, &used, &data);
 *       buf += used, len -= used, then:
 *       CSHW_MULTIPART_PART:       a part begins; m.part describes it; again
 *       CSHW_MULTIPART_DATA:       data is a span of the buffer just passed
 *                                  (before advancing): part bytes; again
 *       CSHW_MULTIPART_PART_END:   the part's data is complete (the bytes
 *                                  after its delimiter are checked next, so
 *                                  an error can still follow); again
 *       CSHW_MULTIPART_INCOMPLETE: keep buf[0 .. len) and feed it again,
 *                                  first, followed by the next piece
 *       CSHW_MULTIPART_DONE:       the close delimiter was seen; stop
 *       < 0:                       an error, found at the old buf + used
 *   at the end of the body: cshw_multipart_finish(&m) (an error unless the
 *   close delimiter was seen)
 *
 * The contract for held-back bytes is Tier 1's chunked decoder's
 * (chunked.h): bytes not consumed (buf[used .. len)) must be passed again,
 * first, in the next call; the parser remembers how far it has examined
 * them. Only bytes that might start a delimiter ("\r\n--boundary", at most
 * boundary length + 3 of them) or an unfinished part header line (bounded by
 * max_header_bytes) are ever held back: everything else is consumed, data
 * as DATA spans (zero-copy, never empty), the preamble discarded.
 *
 * Syntax accepted (RFC 2046 §5.1.1):
 *   - the preamble before the first delimiter is skipped, whatever it holds
 *     (the first delimiter may also be the body's first bytes, "--boundary");
 *   - a delimiter is CRLF "--" boundary; the CRLF before it belongs to it,
 *     not to the part's data; after it, optional transport padding (spaces
 *     and tabs) then CRLF, or "--" (the close delimiter). Anything else right
 *     after "--boundary" is CSHW_E_MULTIPART_INVALID_DELIMITER: the boundary
 *     must not appear inside a part, and guessing would let two parsers see
 *     different parts;
 *   - CRLF is required everywhere: no bare LF line ends (a LF alone inside
 *     data is data, of course);
 *   - everything after the close delimiter (the epilogue) is ignored;
 *   - a body that is only the close delimiter has no parts and is accepted
 *     (browsers send that for an empty form).
 * Each part's header section: field lines like HTTP's (RFC 9112 §5: a token,
 * ':' with no whitespace before it, a value without control characters
 * other than HTAB, obs-text allowed, no obs-fold), then an empty line. It
 * must have exactly one Content-Disposition of type "form-data" with a
 * "name" parameter (RFC 7578 §4.2) and at most one Content-Type; otherwise
 * CSHW_E_MULTIPART_INVALID_DISPOSITION or _INVALID_HEADER. Parameters
 * (RFC 9110 §5.6.6, leniently: whitespace around '=' allowed, an unquoted
 * value runs to the next ';'): a quoted-string has its DQUOTEs removed and
 * \" and \\ unescaped; a backslash before any other character is kept (old
 * browsers sent Windows paths unescaped); a repeated name, filename or
 * filename* parameter is an error. Browsers send '"', CR and LF in names
 * and filenames as %22, %0D and %0A (HTML's form encoding): those are
 * delivered as sent, not decoded. "filename*" (RFC 5987/8187, which RFC 7578
 * §4.2 tells senders not to use) is decoded when its charset is UTF-8 and
 * then replaces "filename"; in another charset, or malformed, it is
 * ignored. Content-Transfer-Encoding is not applied (RFC 7578 §4.7
 * deprecates it); it is among the headers.
 *
 * Ownership: the struct is the caller's; part descriptions (m->part) are
 * allocated in the arena given to init and live as long as it does. DATA
 * spans refer to the buffer of that call.
 * Threads: one thread at a time per parser. */
#ifndef CSHTTP_WEB_MULTIPART_H
#define CSHTTP_WEB_MULTIPART_H

#include <stddef.h>
#include <stdint.h>

#include <cshttp/span.h>

#include "arena.h"
#include "export.h"
#include "pairs.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Finds the boundary parameter of a Content-Type field value such as
 * "multipart/form-data; boundary=----WebKitFormBoundary7MA4YWxkTrZu0gW".
 * The media type must be multipart/<any subtype> (ASCII case-insensitive),
 * its parameters well-formed (RFC 9110 §5.6.6: ';'-separated name=value,
 * the value a token or a quoted-string) and "boundary" present exactly once.
 * The boundary (RFC 2046 §5.1.1) is 1 to 70 bchars (letters, digits and
 * '()+_,-./:=? and space), not ending with a space; quoted or not (unquoted,
 * every bchar but space is accepted, although '(' ')' ',' '/' ':' '=' '?'
 * would need quotes); a quoted boundary with a backslash in it is refused.
 * *boundary points into content_type (no quotes), *boundary_len is its
 * length. Returns 0, CSHW_E_MULTIPART_NOT_MULTIPART (415),
 * CSHW_E_MULTIPART_INVALID_CONTENT_TYPE, CSHW_E_MULTIPART_NO_BOUNDARY or
 * CSHW_E_MULTIPART_INVALID_BOUNDARY (400). Pure; any thread. */
CSHW_EXPORT int cshw_multipart_boundary(const char *content_type, size_t len, const char **boundary,
                                        size_t *boundary_len);

/* Limits of one body. Fill with cshw_multipart_limits_init, then change
 * fields. 0 in a field means "no limit". Sizes of the parts' data are the
 * caller's to limit, from the DATA events.
 *
 * The struct can grow without breaking callers: `size` is sizeof the struct
 * as the caller was compiled, set by cshw_multipart_limits_init, and the toolkit reads only
 * the fields within it (a limit added after the caller was built takes
 * its default). So always fill it with cshw_multipart_limits_init, never with an
 * initializer or memset alone: a size below CSHW_MULTIPART_LIMITS_SIZE_0_3 is -EINVAL from
 * cshw_multipart_init. A new field goes at the end, with its default in
 * cshw_multipart_limits_init; nothing is removed, reordered or retyped (README.md,
 * Versioning).
 * cshw_multipart keeps its copy in room of its own with space to spare, so
 * a new limit does not change the size of cshw_multipart. */
typedef struct cshw_multipart_limits {
    size_t size;             /* sizeof as the caller knew it: leave _init's */
    size_t max_parts;        /* parts; default 1000 */
    size_t max_header_bytes; /* one part's header section, CRLFs included; default 16384 */
    size_t max_headers;      /* one part's header fields; default 16 */
} cshw_multipart_limits;

/* The size of cshw_multipart_limits in libcshttp-web 0.3, the first
 * version with `size`: the smallest size the toolkit accepts. */
#define CSHW_MULTIPART_LIMITS_SIZE_0_3                                                             \
    (offsetof(cshw_multipart_limits, max_headers) + sizeof(size_t))

/* Fills the first `size` bytes of `limits` with the defaults (zeros past
 * the fields this library knows) and sets limits->size = size. Called
 * through cshw_multipart_limits_init, which passes the caller's sizeof. */
CSHW_EXPORT void cshw_multipart_limits_init_sized(cshw_multipart_limits *limits, size_t size);

/* Fills `limits` with the defaults above and sets limits->size. */
static inline void cshw_multipart_limits_init(cshw_multipart_limits *limits)
{
    cshw_multipart_limits_init_sized(limits, sizeof *limits);
}

/* Results of cshw_multipart_feed (errors are negative). */
enum {
    CSHW_MULTIPART_DONE = 0,       /* close delimiter seen; later calls consume and ignore */
    CSHW_MULTIPART_INCOMPLETE = 1, /* feed the bytes not consumed again with more */
    CSHW_MULTIPART_PART = 2,       /* a part's headers were parsed: see m->part */
    CSHW_MULTIPART_DATA = 3,       /* *data is a span of the part's bytes */
    CSHW_MULTIPART_PART_END = 4,   /* the part's data ended */
};

/* The part being read. Strings are NUL-terminated, in the parser's arena
 * (content_type may be the static "text/plain"), and stay valid after the
 * next part begins. */
typedef struct cshw_multipart_part {
    const char *name; /* the field name, never NULL (may be "") */
    size_t name_len;
    const char *filename;     /* NULL when there is no filename parameter; may be "" */
    size_t filename_len;      /* untrusted: may hold '/', '\\', ".."; never a path as is */
    const char *content_type; /* the Content-Type value, "text/plain" when absent (§4.4) */
    size_t content_type_len;
    cshw_pairs headers; /* every header field, names lower-cased, values trimmed */
    size_t index;       /* 0 for the first part */
} cshw_multipart_part;

typedef struct cshw_multipart {
    cshw_multipart_part part; /* valid from a PART event on */
    uint64_t data_bytes;      /* data bytes of the current part so far */
    size_t parts;             /* parts begun */

    cshw_arena *arena_;
    /* the limits, read by their size: room for more than 0.3 has */
    size_t max_parts_, max_header_bytes_, max_headers_, spare_[5];
    char delim_[4 + 70]; /* CRLF "--" boundary */
    size_t delim_len_;
    size_t scan_;         /* bytes of an unfinished header line already examined */
    size_t header_bytes_; /* of the current part */
    cshw_pair *hdr_;
    size_t nhdr_, hdr_cap_;
    int state_;
    int result_; /* sticky error or DONE; CSHW_MULTIPART_INCOMPLETE otherwise */
} cshw_multipart;

/* Prepares `m` to parse one body whose boundary is boundary[0 .. len) (as
 * given by cshw_multipart_boundary; copied). `limits` NULL means the
 * defaults. Returns 0, CSHW_E_MULTIPART_INVALID_BOUNDARY, or -EINVAL
 * (limits->size below CSHW_MULTIPART_LIMITS_SIZE_0_3) (then every feed
 * returns it). */
CSHW_EXPORT int cshw_multipart_init(cshw_multipart *m, cshw_arena *a, const char *boundary,
                                    size_t len, const cshw_multipart_limits *limits);

/* Parses from buf[0 .. len) up to the next event (see above). *consumed
 * receives the bytes used (never more than len); on CSHW_MULTIPART_DATA,
 * *data a non-empty span of buf inside buf[0 .. *consumed). Errors are
 * sticky (later calls return them and consume nothing):
 * CSHW_E_MULTIPART_INVALID_DELIMITER, _INVALID_HEADER,
 * _INVALID_DISPOSITION, _TRUNCATED (400), _HEADER_TOO_LARGE,
 * _TOO_MANY_HEADERS, _TOO_MANY_PARTS (413), -ENOMEM. */
CSHW_EXPORT int cshw_multipart_feed(cshw_multipart *m, const char *buf, size_t len,
                                    size_t *consumed, csh_span *data);

/* The body has ended (no more bytes will come): CSHW_MULTIPART_DONE (0) if
 * the close delimiter was seen, otherwise the sticky error or
 * CSHW_E_MULTIPART_TRUNCATED (which then becomes sticky). */
CSHW_EXPORT int cshw_multipart_finish(cshw_multipart *m);

#ifdef __cplusplus
}
#endif

#endif
