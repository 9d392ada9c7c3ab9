/* Lookups in an ordered pair list. */
#include "cshttp/web/pairs.h"

#include <string.h>

static int name_is(const cshw_pair *p, const char *name, size_t len)
{
    return p->name_len == len && memcmp(p->name, name, len) == 0;
}

const cshw_pair *cshw_pairs_find(const cshw_pairs *pairs, const char *name)
{
    size_t len = strlen(name);
    for (size_t i = 0; pairs && i < pairs->count; i++)
        if (name_is(&pairs->items[i], name, len)) return &pairs->items[i];
    return NULL;
}

const char *cshw_pairs_get(const cshw_pairs *pairs, const char *name)
{
    const cshw_pair *p = cshw_pairs_find(pairs, name);
    return p ? p->value : NULL;
}

size_t cshw_pairs_get_all(const cshw_pairs *pairs, const char *name, const char **values,
                          size_t max)
{
    size_t len = strlen(name), n = 0;
    for (size_t i = 0; pairs && i < pairs->count; i++) {
        if (!name_is(&pairs->items[i], name, len)) continue;
        if (n < max) values[n] = pairs->items[i].value;
        n++;
    }
    return n;
}
