/* csh_limits: the defaults, and a caller's struct read by its size. */
#include "limits.h"

#include <stdint.h>
#include <string.h>

void csh_limits_init_sized(csh_limits *limits, size_t size)
{
    csh_limits l;
    l.size = size;
    l.max_start_line = 8192;
    l.max_field_line = 8192;
    l.max_head = 32768;
    l.max_fields = 100;
    l.max_chunk_ext = 1024;
    l.max_trailer = 8192;
    l.max_method = 32;
    /* the caller's struct is `size` bytes: older (smaller) or newer */
    memcpy(limits, &l, size < sizeof l ? size : sizeof l);
    if (size > sizeof l) memset((char *)limits + sizeof l, 0, size - sizeof l);
}

int csh__limits_keep(csh_limits_kept_ *kept, const csh_limits *limits)
{
    csh_limits l;
    csh_limits_init(&l);
    int r = 0;
    if (limits) {
        if (limits->size < CSH_LIMITS_SIZE_0_2)
            r = -1;
        else /* the fields the caller knew; later ones keep their defaults */
            memcpy(&l, limits, limits->size < sizeof l ? limits->size : sizeof l);
    }
    memset(kept, 0, sizeof *kept);
    kept->max_start_line = l.max_start_line;
    kept->max_field_line = l.max_field_line;
    kept->max_head = l.max_head;
    kept->max_fields = l.max_fields;
    kept->max_chunk_ext = l.max_chunk_ext;
    kept->max_trailer = l.max_trailer;
    kept->max_method = l.max_method;
    /* window arithmetic (line + limit + 2) must not overflow */
    if (kept->max_head > SIZE_MAX / 4) kept->max_head = SIZE_MAX / 4;
    if (kept->max_start_line > SIZE_MAX / 4) kept->max_start_line = SIZE_MAX / 4;
    if (kept->max_field_line > SIZE_MAX / 4) kept->max_field_line = SIZE_MAX / 4;
    return r;
}
