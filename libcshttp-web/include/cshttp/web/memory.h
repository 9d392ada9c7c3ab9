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
 * `piece` bytes per peek (0: all at once), as a slow network would. Its
 * remote address is "192.0.2.1" port 49152 (RFC 5737), not secure; its
 * send_file copies the file into the output. NULL when out of memory. */
CSHW_EXPORT cshw_memory *cshw_memory_new(const char *input, size_t len, size_t piece);
CSHW_EXPORT void cshw_memory_free(cshw_memory *m);

/* The transport to give cshw_context_begin. */
CSHW_EXPORT const cshw_transport *cshw_memory_transport(cshw_memory *m);

/* Everything written so far: *len bytes, followed by a NUL (not counted);
 * "" before anything was written. Valid until the next write or
 * cshw_memory_free. */
CSHW_EXPORT const char *cshw_memory_output(const cshw_memory *m, size_t *len);

/* Make writes fail with -EPIPE once `after` bytes have been written (a
 * client that went away; the write that crosses the mark keeps its bytes
 * before it); (size_t)-1 turns it off. Reads of the input past its end
 * return end of input. */
CSHW_EXPORT void cshw_memory_fail_writes_after(cshw_memory *m, size_t after);

/* Serves every request of the input with `handler` through the exchange
 * (exchange.h), exactly as the engine does on a socket: parse, validate,
 * read the body (answering 100-continue, 413, 400 for a bad body), run,
 * end, and the next pipelined request (RFC 9112 §9.3.2) while the
 * connection may be kept. A head that fails to parse, or a request the
 * exchange refuses, gets the error page with its status and Connection:
 * close, and the connection ends; so does input that ends inside a head
 * (nothing is answered) and a failed write. Returns the number of requests
 * run (the handler called: the exchange's own answers do not count), or
 * CSHW_E_INVALID_OPTION, -EINVAL, -ENOMEM before any. `options` may be
 * NULL. */
CSHW_EXPORT int cshw_memory_serve(cshw_memory *m, const cshw_options *options,
                                  cshw_handler handler);

#ifdef __cplusplus
}
#endif

#endif
