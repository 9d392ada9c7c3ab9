/* cshw_buf: a growable byte buffer, for output built piece by piece (HTML,
 * JSON, headers).
 *
 * The buffer takes its memory either from an arena (request-lifetime output:
 * nothing to free; growing leaves the old copies in the arena until it is
 * reset, at most as many bytes again as the final size) or from malloc
 * (arena NULL: output that outlives a request; cshw_buf_free releases it).
 *
 * The bytes are data[0 .. len), followed by a NUL once anything was appended,
 * so data can be used as a C string when the content has no NUL of its own.
 * data is NULL before the first append. Appending may move data: pointers
 * into it are valid until the next append, clear or free.
 *
 * Ownership: the struct is the caller's; the bytes belong to the arena or,
 * malloc-backed, to the buffer until cshw_buf_free.
 * Threads: one thread at a time per buffer. */
#ifndef CSHTTP_WEB_BUF_H
#define CSHTTP_WEB_BUF_H

#include <stddef.h>

#include "arena.h"
#include "export.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cshw_buf {
    char *data; /* the bytes; NULL until the first append */
    size_t len; /* bytes in use, not counting the NUL after them */
    size_t cap; /* bytes allocated, the NUL's included */
    cshw_arena *arena_;
} cshw_buf;

/* An empty buffer whose memory comes from `arena`, or from malloc when arena
 * is NULL. Allocates nothing. */
CSHW_EXPORT void cshw_buf_init(cshw_buf *b, cshw_arena *arena);

/* Makes room for `more` bytes after len (and the NUL), growing by doubling.
 * Returns 0, or -ENOMEM (the buffer is unchanged). */
CSHW_EXPORT int cshw_buf_reserve(cshw_buf *b, size_t more);

/* Appends data[0 .. len) (len 0 does nothing). Returns 0 or -ENOMEM
 * (nothing appended). */
CSHW_EXPORT int cshw_buf_append(cshw_buf *b, const void *data, size_t len);

/* Appends a C string. Returns 0 or -ENOMEM. */
CSHW_EXPORT int cshw_buf_append_str(cshw_buf *b, const char *s);

/* Appends one byte. Returns 0 or -ENOMEM. */
CSHW_EXPORT int cshw_buf_append_byte(cshw_buf *b, char c);

/* Empties the buffer, keeping its memory. */
CSHW_EXPORT void cshw_buf_clear(cshw_buf *b);

/* Releases malloc-backed memory (arena-backed memory stays with the arena)
 * and leaves the buffer empty and usable, as after cshw_buf_init. */
CSHW_EXPORT void cshw_buf_free(cshw_buf *b);

#ifdef __cplusplus
}
#endif

#endif
