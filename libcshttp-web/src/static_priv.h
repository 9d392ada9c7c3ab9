/* Private to the static-file handler (static.c, static_cond.c, map_path.c,
 * mime.c) and its tests. Nothing here is exported. */
#ifndef CSHW_STATIC_PRIV_H
#define CSHW_STATIC_PRIV_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <time.h>

#include "cshttp/web/arena.h"
#include "cshttp/web/static.h"

/* ---- static.c ---- */

/* The caller's options read by their size into `dst` (static.h: the
 * fields within o->size, the defaults for the others). 0, or -EINVAL when
 * src->size is below CSHW_STATIC_OPTIONS_SIZE_0_3. */
int cshw__static_options_copy(cshw_static_options *dst, const cshw_static_options *src);

/* ---- map_path.c ---- */

/* Checks a decoded virtual path and gives its segments joined by '/',
 * without a leading or trailing slash ("" for the root), in the arena.
 * Empty and "." segments are dropped; "..", a backslash and control bytes
 * are refused (CSHW_E_MAP_PATH_INVALID). *trailing_slash (may be NULL) says
 * whether the path ended with '/' after a segment. */
int cshw__static_clean_path(cshw_arena *a, const char *vpath, const char **rel,
                            int *trailing_slash);

/* Opens rel (from cshw__static_clean_path) under the root folder, given as
 * an open descriptor and as the path it was opened from, for reading,
 * without blocking on a FIFO and without following a symlink out of the
 * root unless follow_symlinks. *fd is the caller's to close; *st is its
 * fstat. Returns 0, CSHW_E_NOT_FOUND, CSHW_E_STATIC_FORBIDDEN,
 * CSHW_E_MAP_PATH_OUTSIDE, CSHW_E_STATIC_NO_ROOT or -errno. */
int cshw__static_open(int rootfd, const char *root, const char *rel, int follow_symlinks, int *fd,
                      struct stat *st);

/* Tests: 1 makes cshw__static_open skip openat2(2) and use the portable
 * check (realpath before the open, realpath and inode after it). */
extern int cshw__static_no_openat2;

/* Tests: called by the portable check between its realpath and its open,
 * where a race would swap a folder for a link (NULL: nothing). */
extern void (*cshw__static_open_race)(void);

/* ---- mime.c ---- */

/* Row i of the MIME table: its extension (type in *type), NULL past the end. */
const char *cshw__mime_row(size_t i, const char **type);

/* ---- static_cond.c: HTTP-dates, validators, Range, Accept-Encoding ---- */

/* IMF-fixdate (RFC 9110 §5.6.7), "Sun, 06 Nov 1994 08:49:37 GMT": 29 bytes
 * and a NUL. */
#define CSHW__DATE_SIZE 30
void cshw__date_format(time_t t, char buf[CSHW__DATE_SIZE]);

/* Parses an HTTP-date in any of the three forms of RFC 9110 §5.6.7
 * (IMF-fixdate, rfc850-date, asctime-date). 0 and *t, or -1 when invalid. */
int cshw__date_parse(const char *s, time_t *t);

/* Whether the entity-tag list `list` (an If-Match or If-None-Match value,
 * or "*") holds an entity-tag matching `etag` (a quoted strong tag, or NULL
 * when the representation has none: only "*" matches then), by strong or
 * weak comparison (RFC 9110 §8.8.3.2). A malformed list matches nothing
 * after the fault. */
int cshw__etag_match(const char *list, const char *etag, int weak);

typedef struct cshw__range {
    uint64_t first; /* offsets of the first and last byte, inclusive */
    uint64_t last;
} cshw__range;

/* Parses a Range value (RFC 9110 §14.1.1, §14.2) for a representation of
 * `size` bytes into at most `max` satisfiable ranges, coalescing those that
 * overlap or touch. Returns the number of ranges (1..max), 0 when none is
 * satisfiable (416), or -1 when the header is to be ignored (200): another
 * unit, a syntax error, a range-spec whose last-pos is below its first-pos,
 * more than `max` range-specs, or size 0. */
int cshw__range_parse(const char *value, uint64_t size, cshw__range *out, size_t max);

/* The weight (0..1000) the Accept-Encoding values give `coding` (an explicit
 * entry, else "*"), 0 when neither is listed. RFC 9110 §12.5.3, §12.4.2.
 * "x-gzip" counts as "gzip" (RFC 9110 §8.4.1.3). */
int cshw__accept_q(const char *const *values, size_t n, const char *coding);

/* The one Accept-Encoding decision of the toolkit (live gzip in gzip.c and
 * precompressed siblings in static.c): 1 when `coding` should be sent
 * rather than identity. A coding's weight is the highest of its entries,
 * else that of "*"; it must be above 0; identity is acceptable unless
 * refused, and when the client weighs it (or "*" standing for it) the
 * coding must weigh at least as much. No field (n == 0): 0. */
int cshw__accept_prefers(const char *const *values, size_t n, const char *coding);

/* 1 when the content type is worth compressing (gzip.c): text, scripts,
 * JSON, XML, SVG and the like. */
int cshw__compressible(const char *content_type);

#endif
