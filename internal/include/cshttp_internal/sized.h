/* Private to the libraries, never installed: the structs that carry their
 * own size (README.md, Versioning). Each starts with `size_t size`: for a
 * struct the caller fills, its sizeof as the caller was compiled (an older
 * caller's is smaller, a newer caller's larger); for one the library fills,
 * the bytes filled. The library reads and writes only what both know.
 *
 * Each library's build includes this header (internal/include); nothing of
 * it is linked across libraries: every function is static inline. */
#ifndef CSHTTP_INTERNAL_SIZED_H
#define CSHTTP_INTERNAL_SIZED_H

#include <stddef.h>
#include <string.h>

/* A struct read or filled by its size must end without padding: its
 * sizeof is then the end of its last field, and a field appended later
 * starts at or after the sizeof an older caller passes. Tail padding
 * would let a new field (an int after an int) land in bytes an older
 * caller's size covers, and be read from that caller's padding. Each such
 * struct gets this check next to its defaults; whoever appends a field
 * names it here, and reorders or widens the new fields until it holds. */
#define CSH__SIZED_NO_TAIL_PADDING(type, last)                                                     \
    _Static_assert(sizeof(type) == offsetof(type, last) + sizeof(((type *)0)->last),               \
                   #type ": `" #last "` must be its last field, with no padding after it")

/* An _init_sized: the caller's struct `dst` is `size` bytes; it gets the
 * first of this build's defaults `def` (def_size bytes) that fit, zeros
 * past what this build knows, and `size` in its size field. */
static inline void csh__sized_init(void *dst, size_t size, const void *def, size_t def_size)
{
    memcpy(dst, def, size < def_size ? size : def_size);
    if (size > def_size) memset((char *)dst + def_size, 0, size - def_size);
    if (size >= sizeof size) memcpy(dst, &size, sizeof size);
}

/* Reads the caller's struct `src` by its size into `dst` (this build's,
 * dst_size bytes, already holding the defaults): the fields within the
 * caller's size, the defaults for the rest; dst's size field becomes
 * dst_size. -1 (dst untouched) when the caller's size is below `min`, the
 * size of the first release that had the field. */
static inline int csh__sized_copy(void *dst, size_t dst_size, const void *src, size_t min)
{
    size_t n;
    memcpy(&n, src, sizeof n);
    if (n < min) return -1;
    memcpy(dst, src, n < dst_size ? n : dst_size);
    memcpy(dst, &dst_size, sizeof dst_size);
    return 0;
}

/* Hands a struct the library filled (`src`, this build's, src_size bytes)
 * to the caller's of `size` bytes: what fits, zeros past what this build
 * knows, and in its size field the bytes filled, min(size, src_size). */
static inline void csh__sized_out(void *dst, size_t size, const void *src, size_t src_size)
{
    size_t n = size < src_size ? size : src_size;
    memcpy(dst, src, n);
    if (size > src_size) memset((char *)dst + src_size, 0, size - src_size);
    memcpy(dst, &n, sizeof n);
}

#endif
