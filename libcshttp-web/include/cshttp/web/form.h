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
 * 0 in a field means "no limit". */
typedef struct cshw_form_limits {
    size_t max_pairs;     /* fields (non-empty pieces); default 1000 */
    size_t max_bytes;     /* input bytes, encoded; default 2 MiB (2097152) */
    size_t max_name_len;  /* a name's bytes after decoding; default 1024 */
    size_t max_value_len; /* a value's bytes after decoding; default 1 MiB (1048576) */
} cshw_form_limits;

/* Fills `limits` with the defaults above. */
CSHW_EXPORT void cshw_form_limits_init(cshw_form_limits *limits);

/* Parses data[0 .. len) (a query string without its '?', or a form body)
 * into `out`. `limits` NULL means the defaults. The pairs and their
 * NUL-terminated strings are allocated in the arena and belong to it; on
 * error `out` is empty. An empty input gives no pairs.
 * Returns 0, or CSHW_E_FORM_TOO_LARGE (len > max_bytes),
 * CSHW_E_FORM_TOO_MANY_PAIRS, CSHW_E_FORM_NAME_TOO_LONG,
 * CSHW_E_FORM_VALUE_TOO_LONG (all 413; for a query string a server may
 * prefer 414 or 400), or -ENOMEM. */
CSHW_EXPORT int cshw_form_parse(cshw_arena *a, const char *data, size_t len,
                                const cshw_form_limits *limits, cshw_pairs *out);

#ifdef __cplusplus
}
#endif

#endif
