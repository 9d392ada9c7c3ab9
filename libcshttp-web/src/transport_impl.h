/* Private: a transport the caller made (transport.h), read by its size. */
#ifndef CSHTTP_WEB_SRC_TRANSPORT_IMPL_H
#define CSHTTP_WEB_SRC_TRANSPORT_IMPL_H

#include <string.h>

#include "cshttp/web/transport.h"
#include "cshttp_internal/sized.h"

/* transport.h: a transport and its ops of at least the first release's
 * sizes (then every op and field of 0.3 is there to read directly; one
 * added later must be read only when within t->size or t->ops->size). */
static inline int cshw__transport_ok(const cshw_transport *t)
{
    return t && t->size >= CSHW_TRANSPORT_SIZE_0_3 && t->ops &&
           t->ops->size >= CSHW_TRANSPORT_OPS_SIZE_0_3;
}

/* The transport's queued op (0.4.1), or 0 for one without it (NULL, or
 * ops of an older size). */
static inline uint64_t cshw__transport_queued(const cshw_transport *t)
{
    const cshw_transport_ops *o = t->ops;
    if (o->size < offsetof(cshw_transport_ops, queued) + sizeof o->queued || !o->queued) return 0;
    return o->queued(t->io);
}

/* A copy of a transport the caller made, read by its size (the fields it
 * did not know: 0). */
static inline void cshw__transport_copy(cshw_transport *dst, const cshw_transport *src)
{
    memset(dst, 0, sizeof *dst);
    dst->size = sizeof *dst;
    (void)csh__sized_copy(dst, sizeof *dst, src, CSHW_TRANSPORT_SIZE_0_3);
}

#endif
