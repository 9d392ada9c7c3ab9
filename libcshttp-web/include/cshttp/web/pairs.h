/* cshw_pairs: an ordered list of name/value pairs: query strings, forms,
 * cookies, route parameters. Repeated names are kept, in the order received.
 *
 * Ownership: the items and every string belong to the arena they were
 * parsed into (the request's); they are valid until the request ends.
 * Strings are NUL-terminated; a value may also contain NUL bytes, so its
 * length is given too. Names are matched exactly (case-sensitive), as
 * forms, query strings and cookies require.
 * Threads: read-only after parsing; any thread may read. */
#ifndef CSHTTP_WEB_PAIRS_H
#define CSHTTP_WEB_PAIRS_H

#include <stddef.h>

#include "export.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cshw_pair {
    const char *name;
    const char *value;
    size_t name_len;
    size_t value_len;
} cshw_pair;

typedef struct cshw_pairs {
    const cshw_pair *items;
    size_t count;
} cshw_pairs;

/* The first value for `name`, or NULL when there is none. */
CSHW_EXPORT const char *cshw_pairs_get(const cshw_pairs *pairs, const char *name);

/* The first pair for `name`, or NULL (for the value's length). */
CSHW_EXPORT const cshw_pair *cshw_pairs_find(const cshw_pairs *pairs, const char *name);

/* Stores up to `max` values for `name` in `values`, in order; returns how
 * many there are in all (which may be more than max). */
CSHW_EXPORT size_t cshw_pairs_get_all(const cshw_pairs *pairs, const char *name,
                                      const char **values, size_t max);

#ifdef __cplusplus
}
#endif

#endif
