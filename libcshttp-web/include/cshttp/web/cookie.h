/* Cookies: the Cookie request header in, Set-Cookie field values out
 * (RFC 6265).
 *
 * Threads: pure functions; any thread, one arena per thread at a time. */
#ifndef CSHTTP_WEB_COOKIE_H
#define CSHTTP_WEB_COOKIE_H

#include <stddef.h>
#include <time.h>

#include "arena.h"
#include "export.h"
#include "pairs.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Limits of cshw_cookie_parse. Fill with cshw_cookie_limits_init, then
 * change fields. 0 in a field means "no limit".
 *
 * The struct can grow without breaking callers: `size` is sizeof the struct
 * as the caller was compiled, set by cshw_cookie_limits_init, and the toolkit reads only
 * the fields within it (a limit added after the caller was built takes
 * its default). So always fill it with cshw_cookie_limits_init, never with an
 * initializer or memset alone: a size below CSHW_COOKIE_LIMITS_SIZE_0_3 is -EINVAL from
 * cshw_cookie_parse. A new field goes at the end, with its default in
 * cshw_cookie_limits_init; nothing is removed, reordered or retyped (README.md,
 * Versioning). */
typedef struct cshw_cookie_limits {
    size_t size;             /* sizeof as the caller knew it: leave _init's */
    size_t max_cookies;      /* cookies kept; default 180 (a browser's per-domain cap) */
    size_t max_bytes;        /* the header's bytes; default 16384 */
    size_t max_cookie_bytes; /* one cookie's name and value; default 4096, as browsers */
} cshw_cookie_limits;

/* The size of cshw_cookie_limits in libcshttp-web 0.3, the first version
 * with `size`: the smallest size the toolkit accepts. */
#define CSHW_COOKIE_LIMITS_SIZE_0_3                                                                \
    (offsetof(cshw_cookie_limits, max_cookie_bytes) + sizeof(size_t))

/* Fills the first `size` bytes of `limits` with the defaults (zeros past
 * the fields this library knows) and sets limits->size = size. Called
 * through cshw_cookie_limits_init, which passes the caller's sizeof. */
CSHW_EXPORT void cshw_cookie_limits_init_sized(cshw_cookie_limits *limits, size_t size);

/* Fills `limits` with the defaults above and sets limits->size. */
static inline void cshw_cookie_limits_init(cshw_cookie_limits *limits)
{
    cshw_cookie_limits_init_sized(limits, sizeof *limits);
}

/* Parses a Cookie header field value, "name=value; name2=value2" (RFC 6265
 * §4.2.1, §5.4), into `out`, in the order sent; repeated names are all kept
 * (a user agent sends the cookie with the longer path first, §5.4). Lenient
 * about what user agents really send, never failing on syntax:
 *   - pairs are separated by ';'; spaces and tabs around a pair, its name
 *     and its value are trimmed;
 *   - the first '=' separates name from value; a piece without '=' or with
 *     an empty name is skipped, as is one with a control character (other
 *     than HTAB) in its name or value;
 *   - a value in double quotes ("\"abc\"") loses the quotes (§4.1.1);
 *   - names are case-sensitive; nothing is percent-decoded (RFC 6265 defines
 *     no encoding: use cshw_url_decode when the application encoded them).
 * When a request has several Cookie lines, join them with "; " first.
 * `limits` NULL means the defaults. The pairs and their NUL-terminated
 * strings belong to the arena; on error `out` is empty.
 * Returns 0, CSHW_E_COOKIE_TOO_LARGE (the header, or one cookie's name and
 * value, past the limit), CSHW_E_COOKIE_TOO_MANY (431 both), -EINVAL
 * (limits->size below CSHW_COOKIE_LIMITS_SIZE_0_3) or -ENOMEM. */
CSHW_EXPORT int cshw_cookie_parse(cshw_arena *a, const char *data, size_t len,
                                  const cshw_cookie_limits *limits, cshw_pairs *out);

/* The SameSite attribute (RFC 6265bis §5.4.7). */
typedef enum cshw_same_site {
    CSHW_SAME_SITE_UNSET = 0, /* no attribute: the browser's default (Lax, nowadays) */
    CSHW_SAME_SITE_NONE,      /* sent cross-site too; requires secure */
    CSHW_SAME_SITE_LAX,
    CSHW_SAME_SITE_STRICT,
} cshw_same_site;

/* A cookie to set. Fill with cshw_cookie_init, then set the fields wanted.
 * The strings are the caller's; cshw_cookie_format copies what it uses.
 *
 * The struct can grow without breaking callers (a new attribute): `size`
 * is sizeof(cshw_cookie) as the caller was compiled, set by
 * cshw_cookie_init, and the toolkit reads only the fields within it (an
 * attribute added after the caller was built is not written). So always
 * fill it with cshw_cookie_init, never with an initializer or memset
 * alone: a size below CSHW_COOKIE_SIZE_0_3 is -EINVAL from
 * cshw_cookie_format and cshw_response_set_cookie. A new field goes at the
 * end, zero meaning "not set"; nothing is removed, reordered or retyped
 * (README.md, Versioning). */
typedef struct cshw_cookie {
    size_t size;              /* sizeof as the caller knew it: leave _init's */
    const char *name;         /* a token (RFC 9110 §5.6.2), required */
    const char *value;        /* cookie-octets, optionally in DQUOTEs; NULL = "" */
    const char *path;         /* NULL: no Path attribute */
    const char *domain;       /* NULL: no Domain attribute (host-only cookie) */
    time_t expires;           /* 0: no Expires attribute */
    long long max_age;        /* seconds, written when max_age_set */
    int max_age_set;          /* 1: write Max-Age (0 or less: "Max-Age=0", delete now) */
    int secure;               /* 1: Secure */
    int http_only;            /* 1: HttpOnly */
    cshw_same_site same_site; /* CSHW_SAME_SITE_UNSET: no attribute */
} cshw_cookie;

/* The size of cshw_cookie in libcshttp-web 0.3, the first version with
 * `size`: the smallest size the toolkit accepts. */
#define CSHW_COOKIE_SIZE_0_3 (offsetof(cshw_cookie, same_site) + sizeof(cshw_same_site))

/* Zeroes the first `size` bytes of `c`, sets c->size = size and its name
 * and value. Called through cshw_cookie_init, which passes the caller's
 * sizeof: a library newer than the caller never writes past its struct. */
CSHW_EXPORT void cshw_cookie_init_sized(cshw_cookie *c, size_t size, const char *name,
                                        const char *value);

/* Zeroes `c`, sets c->size and its name and value (either may be NULL, to
 * be set later). */
static inline void cshw_cookie_init(cshw_cookie *c, const char *name, const char *value)
{
    cshw_cookie_init_sized(c, sizeof *c, name, value);
}

/* Formats a Set-Cookie field value (RFC 6265 §4.1), without the field name:
 *   name=value; Path=/; Domain=example.com;
 *   Expires=Sun, 06 Nov 1994 08:49:37 GMT; Max-Age=3600; Secure; HttpOnly;
 *   SameSite=Lax
 * (attributes in this order, each only when set). Validates everything, and
 * writes nothing that a browser would reject or that could split the field:
 *   - name: a non-empty token (CSHW_E_COOKIE_INVALID_NAME);
 *   - value: cookie-octets, %x21 / %x23-2B / %x2D-3A / %x3C-5B / %x5D-7E
 *     (no control, whitespace, DQUOTE, comma, semicolon, backslash or
 *     non-ASCII byte), optionally all inside one pair of DQUOTEs
 *     (CSHW_E_COOKIE_INVALID_VALUE); encode other data (cshw_url_encode);
 *   - name and value together at most 4096 bytes, path and domain at most
 *     1024 each, the limits past which browsers ignore a cookie or an
 *     attribute (CSHW_E_COOKIE_TOO_LONG);
 *   - path: printable ASCII without ';' (av-octet, §4.1.1)
 *     (CSHW_E_COOKIE_INVALID_PATH);
 *   - domain: non-empty, letters, digits, '-' and '.' only (§4.1.2.3: a
 *     host name; IDNs in their A-label form) (CSHW_E_COOKIE_INVALID_DOMAIN);
 *   - expires: written as an IMF-fixdate (RFC 9110 §5.6.7) in GMT; its year
 *     must be 1601..9999 (CSHW_E_COOKIE_INVALID_EXPIRES);
 *   - SameSite=None requires secure, as browsers refuse it otherwise
 *     (CSHW_E_COOKIE_SAMESITE_NONE_INSECURE);
 *   - a name starting with "__Secure-" (any case) requires secure, one
 *     starting with "__Host-" requires secure, path "/" and no domain, as
 *     browsers refuse them otherwise (RFC 6265bis §4.1.3)
 *     (CSHW_E_COOKIE_PREFIX);
 *   - same_site outside the enum: CSHW_E_COOKIE_INVALID_SAME_SITE.
 * *out receives the NUL-terminated value in the arena, left unchanged on
 * error. Returns 0, one of the errors above (all 500: the application's
 * mistake), -EINVAL (c->size below CSHW_COOKIE_SIZE_0_3) or -ENOMEM. */
CSHW_EXPORT int cshw_cookie_format(cshw_arena *a, const cshw_cookie *c, const char **out);

#ifdef __cplusplus
}
#endif

#endif
