/* Private: reading a caller's csh_limits by its size. */
#ifndef CSHTTP_SRC_LIMITS_H
#define CSHTTP_SRC_LIMITS_H

#include "cshttp/parser.h"

/* A private flag kept in the parser's and the decoder's flags_: the limits
 * given to init had a bad size, so every call fails. */
#define CSH__FLAG_BAD_LIMITS (1u << 31)

/* Copies into `kept` the fields of `limits` that fit in limits->size, the
 * defaults for the others (all of them when `limits` is NULL), clamped so
 * that window arithmetic cannot overflow. Returns 0, or -1 when
 * limits->size is below CSH_LIMITS_SIZE_0_2 (`kept` then holds the
 * defaults). */
int csh__limits_keep(csh_limits_kept_ *kept, const csh_limits *limits);

#endif
