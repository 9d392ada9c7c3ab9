/* Private: reading a caller's cshw_options by its size. */
#ifndef CSHTTP_WEB_SRC_OPTIONS_IMPL_H
#define CSHTTP_WEB_SRC_OPTIONS_IMPL_H

#include "cshttp/web/options.h"

/* Fills `dst` with the defaults, then with the fields of `src` that fit in
 * src->size (nothing more when `src` is NULL); dst->size is this build's.
 * 0, or CSHW_E_INVALID_OPTION when src->size is below
 * CSHW_OPTIONS_SIZE_0_2 (`dst` then holds the defaults). */
int cshw__options_copy(cshw_options *dst, const cshw_options *src);

#endif
