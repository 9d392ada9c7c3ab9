/* csh_span: a slice of a caller's buffer, by offset and length.
 *
 * Spans are offsets, not pointers, so a caller may grow, move or realloc its
 * buffer between parser calls without invalidating what was parsed. A span is
 * never NUL-terminated. It refers to the buffer it was produced from: for the
 * message parser, the buffer whose first byte is the first byte of the message;
 * for the body and chunked decoders, the buffer passed to that very call. It is
 * valid as long as the caller keeps those bytes where they are relative to
 * that start. All helpers here are pure and thread-safe. */
#ifndef CSHTTP_SPAN_H
#define CSHTTP_SPAN_H

#include <stddef.h>
#include <string.h>

#include "export.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct csh_span {
    size_t off; /* offset of the first byte in the buffer the span refers to */
    size_t len; /* number of bytes */
} csh_span;

/* The first byte of span `s` in `base` (the buffer the span refers to). */
static inline const char *csh_span_ptr(const char *base, csh_span s)
{
    return base + s.off;
}

/* 1 if the span's bytes equal the NUL-terminated string `str`, exactly. */
static inline int csh_span_eq(const char *base, csh_span s, const char *str)
{
    size_t n = strlen(str);
    return n == s.len && memcmp(base + s.off, str, n) == 0;
}

/* 1 if the span's bytes equal `str` ignoring ASCII case (field names, tokens). */
CSH_EXPORT int csh_span_ieq(const char *base, csh_span s, const char *str);

/* Compares `len` bytes at `a` and `b` ignoring ASCII case; 1 if equal. */
CSH_EXPORT int csh_mem_ieq(const char *a, const char *b, size_t len);

#ifdef __cplusplus
}
#endif

#endif
