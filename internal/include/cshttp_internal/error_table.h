/* Private to the libraries, never installed: the one lookup of a result
 * code in a library's error table (README.md, Result codes).
 *
 * Each library builds its table from its X-macro map (error.h, client.h),
 * whose codes run downwards and lie below -4095, so no -errno value is
 * ever one of them. libcshttp's table is dense; the toolkit's has a block
 * per part. The lookup takes a dense table's row at once and otherwise
 * searches by halves: a table either way, never a scan.
 *
 * Each library's build includes this header (internal/include); nothing of
 * it is linked across libraries: every function is static inline. */
#ifndef CSHTTP_INTERNAL_ERROR_TABLE_H
#define CSHTTP_INTERNAL_ERROR_TABLE_H

#include <stddef.h>

typedef struct csh__error_row {
    int code;
    int status;          /* the HTTP status for a request failed with it */
    const char *name;    /* "CSH_E_BARE_CR": static */
    const char *message; /* one line: static */
} csh__error_row;

/* The row of `code` in rows[0..n), whose codes strictly decrease; NULL
 * when it has none. Pure; any thread. */
static inline const csh__error_row *csh__error_find(const csh__error_row *rows, size_t n, int code)
{
    if (n == 0 || code > rows[0].code || code < rows[n - 1].code) return NULL;
    size_t at = (size_t)((long)rows[0].code - (long)code); /* a dense table's row */
    if (at < n && rows[at].code == code) return &rows[at];
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (rows[mid].code == code) return &rows[mid];
        if (rows[mid].code > code)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

/* -4095 .. -1: a negated errno value (the kernel's range; glibc's errno
 * values are far smaller). */
static inline int csh__is_errno(int code)
{
    return code < 0 && code >= -4095;
}

/* The errno name ("ENOMEM") and message of a negated errno value; NULL
 * for any other code. The C library's constant text, not strerror's
 * buffer: any thread. Needs _GNU_SOURCE (glibc 2.32). */
#ifdef _GNU_SOURCE
#include <string.h>

static inline const char *csh__errno_name(int code)
{
    return csh__is_errno(code) ? strerrorname_np(-code) : NULL;
}

static inline const char *csh__errno_message(int code)
{
    return csh__is_errno(code) ? strerrordesc_np(-code) : NULL;
}
#endif

#endif
