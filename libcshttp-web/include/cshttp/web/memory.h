/* The in-memory transport and a small driver around it: the whole toolkit
 * can be exercised without a socket.
 *
 *   cshw_memory *m = cshw_memory_new(raw_requests, len, 7);  // 7-byte reads
 *   cshw_memory_serve(m, NULL, handler);                     // every request
 *   size_t n; const char *out = cshw_memory_output(m, &n);   // raw responses
 *   cshw_memory_free(m);
 *
 * Ownership: the memory transport copies the input and owns the output.
 * Threads: one thread at a time. */
#ifndef CSHTTP_WEB_MEMORY_H
#define CSHTTP_WEB_MEMORY_H

#include <stddef.h>

#include "context.h"
#include "export.h"
#include "transport.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cshw_memory cshw_memory;

/* A transport whose input is a copy of input[0 .. len), handed out at most
 * `piece` bytes per peek (0: all at once), as a slow network would. */
CSHW_EXPORT cshw_memory *cshw_memory_new(const char *input, size_t len, size_t piece);
CSHW_EXPORT void cshw_memory_free(cshw_memory *m);

/* The transport to give cshw_context_begin. */
CSHW_EXPORT const cshw_transport *cshw_memory_transport(cshw_memory *m);

/* Everything written so far. */
CSHW_EXPORT const char *cshw_memory_output(const cshw_memory *m, size_t *len);

/* Make writes fail with -EPIPE once `after` bytes have been written (a
 * client that went away); (size_t)-1 turns it off. Reads of the input past
 * its end return end of input. */
CSHW_EXPORT void cshw_memory_fail_writes_after(cshw_memory *m, size_t after);

/* Serves every request of the input with `handler`, as the engine would:
 * parse a head (libcshttp), begin, run, end, and the next one while the
 * connection may be kept. A head that fails to parse gets its status and
 * the connection ends. Returns the number of requests served, or a negative
 * cshw error. `options` may be NULL. */
CSHW_EXPORT int cshw_memory_serve(cshw_memory *m, const cshw_options *options,
                                  cshw_handler handler);

#ifdef __cplusplus
}
#endif

#endif
