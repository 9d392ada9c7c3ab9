/* Private: reading a caller's cshs_options by its size. */
#ifndef CSHTTP_SERVER_SRC_OPTIONS_IMPL_H
#define CSHTTP_SERVER_SRC_OPTIONS_IMPL_H

#include <cshttp/server/options.h>

/* Fills `dst` with the defaults, then with the fields of `src` that fit in
 * src->size (nothing more when `src` is NULL), and gives it copies of
 * src->limits and src->web of its own, the defaults for a NULL one (freed
 * by cshs_options_release(dst)): dst->limits and dst->web are never NULL.
 * 0, -EINVAL when a size is below its first version's
 * (the struct's _SIZE_0_2), or -ENOMEM; on failure `dst` owns nothing. */
int cshs__options_copy(cshs_options *dst, const cshs_options *src);

#endif
