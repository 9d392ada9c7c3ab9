/* Private: the caller's structs that carry their own size (README.md,
 * Versioning). Each starts with `size_t size`, sizeof the struct as the
 * caller was compiled: an older caller's is smaller, a newer caller's
 * larger, and the toolkit reads and writes only what both know. */
#ifndef CSHTTP_WEB_SRC_SIZED_H
#define CSHTTP_WEB_SRC_SIZED_H

#include <stddef.h>
#include <string.h>

#include "cshttp/web/transport.h"

/* A struct read or filled by its size must end without padding: its
 * sizeof is then the end of its last field, and a field appended later
 * starts at or after the sizeof an older caller passes. Tail padding
 * would let a new field (an int after an int) land in bytes an older
 * caller's size covers, and be read from that caller's padding. Each such
 * struct gets this check next to its defaults; whoever appends a field
 * names it here, and reorders or widens the new fields until it holds. */
#define CSHW__SIZED_NO_TAIL_PADDING(type, last)                                                    \
    _Static_assert(sizeof(type) == offsetof(type, last) + sizeof(((type *)0)->last),               \
                   #type ": `" #last "` must be its last field, with no padding after it")

/* An _init_sized: the caller's struct `dst` is `size` bytes; it gets the
 * first of this build's defaults `def` (def_size bytes) that fit, zeros
 * past what this build knows, and `size` in its size field. */
static inline void cshw__sized_init(void *dst, size_t size, const void *def, size_t def_size)
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
static inline int cshw__sized_copy(void *dst, size_t dst_size, const void *src, size_t min)
{
    size_t n;
    memcpy(&n, src, sizeof n);
    if (n < min) return -1;
    memcpy(dst, src, n < dst_size ? n : dst_size);
    memcpy(dst, &dst_size, sizeof dst_size);
    return 0;
}

/* transport.h: a transport and its ops of at least the first release's
 * sizes (then every op and field of 0.3 is there to read directly; one
 * added later must be read only when within t->size or t->ops->size). */
static inline int cshw__transport_ok(const cshw_transport *t)
{
    return t && t->size >= CSHW_TRANSPORT_SIZE_0_3 && t->ops &&
           t->ops->size >= CSHW_TRANSPORT_OPS_SIZE_0_3;
}

/* A copy of a transport the caller made, read by its size (the fields it
 * did not know: 0). */
static inline void cshw__transport_copy(cshw_transport *dst, const cshw_transport *src)
{
    memset(dst, 0, sizeof *dst);
    dst->size = sizeof *dst;
    (void)cshw__sized_copy(dst, sizeof *dst, src, CSHW_TRANSPORT_SIZE_0_3);
}

#endif
