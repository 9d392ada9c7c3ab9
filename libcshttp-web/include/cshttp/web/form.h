/* application/x-www-form-urlencoded parsing: query strings and form bodies.
 *
 * The WHATWG URL standard's application/x-www-form-urlencoded parser (§5.1):
 * the input is split on '&'; empty pieces are skipped ("a=1&&b=2"); in each
 * piece the first '=' separates the name from the value, and a piece without
 * '=' is a name with an empty value ("flag" gives flag=""); in both, '+'
 * becomes a space and percent-escapes are decoded (a malformed escape stays
 * as it is, as in cshw_url_decode). A name may be empty ("=x"). Repeated
 * names are all kept, in order. Names and values are bytes: neither UTF-8
 * nor any other charset is validated or converted (the standard's UTF-8
 * decode without BOM is left to the application), and a value may contain
 * NUL bytes ("%00"), so use value_len.
 *
 * Threads: pure functions; any thread, one arena per thread at a time. */
#ifndef CSHTTP_WEB_FORM_H
#define CSHTTP_WEB_FORM_H

#include <stddef.h>

#include "arena.h"
#include "export.h"
#include "pairs.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Limits of one parse. Fill with cshw_form_limits_init, then change fields.
 * 0 in a field means "no limit".
 *
 * The struct can grow without breaking callers: `size` is sizeof the struct
 * as the caller was compiled, set by cshw_form_limits_init, and the toolkit reads only
 * the fields within it (a limit added after the caller was built takes
 * its default). So always fill it with cshw_form_limits_init, never with an
 * initializer or memset alone: a size below CSHW_FORM_LIMITS_SIZE_0_3 is -EINVAL from
 * cshw_form_parse. A new field goes at the end, with its default in
 * cshw_form_limits_init; nothing is removed, reordered or retyped (README.md,
 * Versioning). */
typedef struct cshw_form_limits {
    size_t size;          /* sizeof as the caller knew it: leave _init's */
    size_t max_pairs;     /* fields (non-empty pieces); default 1000 */
    size_t max_bytes;     /* input bytes, encoded; default 2 MiB (2097152) */
    size_t max_name_len;  /* a name's bytes after decoding; default 1024 */
    size_t max_value_len; /* a value's bytes after decoding; default 1 MiB (1048576) */
} cshw_form_limits;

/* The size of cshw_form_limits in libcshttp-web 0.3, the first version
 * with `size`: the smallest size the toolkit accepts. */
#define CSHW_FORM_LIMITS_SIZE_0_3 (offsetof(cshw_form_limits, max_value_len) + sizeof(size_t))

/* Fills the first `size` bytes of `limits` with the defaults (zeros past
 * the fields this library knows) and sets limits->size = size. Called
 * through cshw_form_limits_init, which passes the caller's sizeof. */
CSHW_EXPORT void cshw_form_limits_init_sized(cshw_form_limits *limits, size_t size);

/* Fills `limits` with the defaults above and sets limits->size. */
static inline void cshw_form_limits_init(cshw_form_limits *limits)
{
    cshw_form_limits_init_sized(limits, sizeof *limits);
}

/* Parses data[0 .. len) (a query string without its '?', or a form body)
 * into `out`. `limits` NULL means the defaults. The pairs and their
 * NUL-terminated strings are allocated in the arena and belong to it; on
 * error `out` is empty. An empty input gives no pairs.
 * Returns 0, or CSHW_E_FORM_TOO_LARGE (len > max_bytes),
 * CSHW_E_FORM_TOO_MANY_PAIRS, CSHW_E_FORM_NAME_TOO_LONG,
 * CSHW_E_FORM_VALUE_TOO_LONG (all 413; for a query string a server may
 * prefer 414 or 400), -EINVAL (limits->size below
 * CSHW_FORM_LIMITS_SIZE_0_3), or -ENOMEM. */
CSHW_EXPORT int cshw_form_parse(cshw_arena *a, const char *data, size_t len,
                                const cshw_form_limits *limits, cshw_pairs *out);

#ifdef __cplusplus
}
#endif

#endif
