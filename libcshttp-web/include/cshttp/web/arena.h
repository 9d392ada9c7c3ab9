/* cshw_arena: request-lifetime memory.
 *
 * An arena hands out memory from blocks it allocates as it grows and frees
 * everything at once: application code allocates without freeing, and
 * nothing outlives the request. Cleanups registered on the arena (closing a
 * file, removing a temporary upload) run, last registered first, when it is
 * reset or freed.
 *
 * Ownership: the arena owns every block and every pointer it returned; they
 * are valid until cshw_arena_reset or cshw_arena_free. Out of memory is a NULL
 * return, never an abort.
 * Threads: an arena is used by one thread at a time (the request's). */
#ifndef CSHTTP_WEB_ARENA_H
#define CSHTTP_WEB_ARENA_H

#include <stdarg.h>
#include <stddef.h>

#include "export.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cshw_arena cshw_arena;

/* A new arena whose blocks are `block_size` bytes (0: 4096); larger requests
 * get a block of their own. NULL when out of memory. */
CSHW_EXPORT cshw_arena *cshw_arena_new(size_t block_size);

/* Runs the cleanups, frees every block and the arena. NULL does nothing. */
CSHW_EXPORT void cshw_arena_free(cshw_arena *a);

/* Runs the cleanups and makes every byte available again, keeping the first
 * block (the next request reuses it without calling malloc). */
CSHW_EXPORT void cshw_arena_reset(cshw_arena *a);

/* `size` bytes aligned for any type (max_align_t); NULL when out of memory or
 * size is 0. */
CSHW_EXPORT void *cshw_arena_alloc(cshw_arena *a, size_t size);

/* `size` zeroed bytes. */
CSHW_EXPORT void *cshw_arena_calloc(cshw_arena *a, size_t size);

/* A NUL-terminated copy of data[0 .. len) (data may hold NULs). */
CSHW_EXPORT char *cshw_arena_strndup(cshw_arena *a, const char *data, size_t len);

/* A NUL-terminated copy of a C string. */
CSHW_EXPORT char *cshw_arena_strdup(cshw_arena *a, const char *s);

/* printf into the arena. */
CSHW_EXPORT char *cshw_arena_printf(cshw_arena *a, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
CSHW_EXPORT char *cshw_arena_vprintf(cshw_arena *a, const char *fmt, va_list ap);

/* Registers fn(data) to run at reset or free, after the cleanups registered
 * later. Returns 0, or -ENOMEM (fn is then called at once, so that nothing
 * leaks). */
CSHW_EXPORT int cshw_arena_on_cleanup(cshw_arena *a, void (*fn)(void *data), void *data);

/* Bytes handed out since the last reset (for limits and statistics). */
CSHW_EXPORT size_t cshw_arena_used(const cshw_arena *a);

#ifdef __cplusplus
}
#endif

#endif
