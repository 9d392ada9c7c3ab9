/* csh_limits: the defaults, and a caller's struct read by its size. */
#include "limits.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "cshttp_internal/sized.h"

/* A limit appended into tail padding would lie within an older caller's
 * sizeof, and be read from whatever that caller left there: the struct
 * must end with its last field (the rule of every sized struct). */
CSH__SIZED_NO_TAIL_PADDING(csh_limits, max_method);

static const csh_limits defaults = {
    .size = sizeof(csh_limits),
    .max_start_line = 8192,
    .max_field_line = 8192,
    .max_head = 32768,
    .max_fields = 100,
    .max_chunk_ext = 1024,
    .max_trailer = 8192,
    .max_method = 32,
};

void csh_limits_init_sized(csh_limits *limits, size_t size)
{
    /* the caller's struct is `size` bytes: older (smaller) or newer */
    csh__sized_init(limits, size, &defaults, sizeof defaults);
}

int csh__limits_keep(csh_limits_kept_ *kept, const csh_limits *limits)
{
    const csh_limits *l = &defaults;
    csh_limits older;
    int r = 0;
    if (limits && limits->size < CSH_LIMITS_SIZE_0_2) {
        r = -1;
    } else if (limits && limits->size < sizeof *limits) {
        /* the fields the caller knew; later ones keep their defaults */
        older = defaults;
        memcpy(&older, limits, limits->size);
        l = &older;
    } else if (limits) {
        l = limits; /* this version's fields, or a newer caller's: read ours */
    }
    memset(kept, 0, sizeof *kept);
    kept->max_start_line = l->max_start_line;
    kept->max_field_line = l->max_field_line;
    kept->max_head = l->max_head;
    kept->max_fields = l->max_fields;
    kept->max_chunk_ext = l->max_chunk_ext;
    kept->max_trailer = l->max_trailer;
    kept->max_method = l->max_method;
    /* window arithmetic (line + limit + 2) must not overflow */
    if (kept->max_head > SIZE_MAX / 4) kept->max_head = SIZE_MAX / 4;
    if (kept->max_start_line > SIZE_MAX / 4) kept->max_start_line = SIZE_MAX / 4;
    if (kept->max_field_line > SIZE_MAX / 4) kept->max_field_line = SIZE_MAX / 4;
    return r;
}
