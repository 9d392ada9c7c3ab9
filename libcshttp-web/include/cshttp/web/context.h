/* cshw_context: one request and its response, the C shape of System.Web's
 * HttpContext.
 *
 * A handler receives the context:
 *
 *   static void hello(cshw_context *ctx)
 *   {
 *       cshw_request *req = cshw_context_request(ctx);
 *       cshw_response *res = cshw_context_response(ctx);
 *       const char *name = cshw_request_query_get(req, "name");
 *       cshw_response_set_content_type(res, "text/plain", "utf-8");
 *       cshw_response_printf(res, "hello, %s\n", name ? name : "world");
 *   }
 *
 * and can reach it from anywhere below with cshw_context_current().
 *
 * Whoever owns the connection (the engine, or cshw_memory_serve in tests)
 * drives the life of a context: cshw_context_new once per connection or
 * worker, then for each request cshw_context_begin, cshw_context_run (or
 * the handler between set_current calls) and cshw_context_end.
 *
 * Ownership: the context owns its request, response and arena; everything
 * they return lives until cshw_context_end. Threads: a context is used by one
 * thread at a time; the current context is per thread. */
#ifndef CSHTTP_WEB_CONTEXT_H
#define CSHTTP_WEB_CONTEXT_H

#include <cshttp/parser.h>

#include "arena.h"
#include "export.h"
#include "options.h"
#include "pairs.h"
#include "transport.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cshw_context cshw_context;
typedef struct cshw_request cshw_request;
typedef struct cshw_response cshw_response;

/* A request handler. It may block; it never frees request data. */
typedef void (*cshw_handler)(cshw_context *ctx);

/* A context with copies of `options` (NULL: defaults). NULL when out of
 * memory or when the options do not pass cshw_options_check. */
CSHW_EXPORT cshw_context *cshw_context_new(const cshw_options *options);

/* Frees the context (ending a request still in progress). NULL does nothing. */
CSHW_EXPORT void cshw_context_free(cshw_context *ctx);

/* Starts a request whose head was parsed by libcshttp: `head` holds the head
 * bytes (msg's spans refer to it) and must stay unchanged until
 * cshw_context_end; `msg` and its header array are copied; the body, if
 * any, is read through `transport` (copied; peek/consume: its first bytes
 * are the ones right after the head). A request still in progress is ended
 * first. Returns 0, -EINVAL (a NULL argument, a transport without peek,
 * consume or write, or of a size below transport.h's first) or -ENOMEM. */
CSHW_EXPORT int cshw_context_begin(cshw_context *ctx, const char *head, const csh_message *msg,
                                   const cshw_transport *transport);

/* Makes ctx the thread's current context, runs handler(ctx), restores the
 * previous current context (normally none: cleared, however the handler
 * returned) and ends the request as cshw_context_end does, whose result it
 * returns. The toolkit answers for the handler, without calling it, a
 * request it cannot serve: an Expect other than 100-continue (417, RFC 9110
 * §10.1.1) and a transfer coding other than chunked (501, RFC 9112 §6.1).
 * CSHW_E_NOT_ACTIVE without a request begun. */
CSHW_EXPORT int cshw_context_run(cshw_context *ctx, cshw_handler handler);

/* Ends the request: answers the errors found in the request that the
 * handler left unanswered (a path that cannot be decoded: 400; a form or
 * body error: its status), completes the response (headers if none were
 * sent, Content-Length or the last chunk), reads and discards what the
 * handler left of the body (up to options.max_drain_bytes; not at all when
 * Expect: 100-continue was never answered), runs the arena's cleanups
 * (temporary uploads are removed) and resets it. Returns 1 when the
 * connection may carry another request, 0 when it must be closed (the
 * request's keep-alive flag, Connection: close from either side, a
 * close-delimited response, a body left unread or in error), or a negative
 * error when the response could not be completed (a write failed: its
 * -errno; a file for send_file was short: CSHW_E_FILE_READ): close.
 * CSHW_E_NOT_ACTIVE when no request is in progress. */
CSHW_EXPORT int cshw_context_end(cshw_context *ctx);

/* The thread's current context, or NULL outside a handler (thread-local). */
CSHW_EXPORT cshw_context *cshw_context_current(void);

/* Sets or clears (NULL) the thread's current context; cshw_context_run does
 * this for you. */
CSHW_EXPORT void cshw_context_set_current(cshw_context *ctx);

CSHW_EXPORT cshw_request *cshw_context_request(cshw_context *ctx);
CSHW_EXPORT cshw_response *cshw_context_response(cshw_context *ctx);

/* The request's arena: memory the application takes from it is freed when
 * the request ends. */
CSHW_EXPORT cshw_arena *cshw_context_arena(cshw_context *ctx);

/* A pointer the application keeps with the request (NULL at begin). */
CSHW_EXPORT void *cshw_context_user_data(const cshw_context *ctx);
CSHW_EXPORT void cshw_context_set_user_data(cshw_context *ctx, void *data);

/* The application's pointer for every request of this context (libuv's
 * `data` convention): set once by whoever owns the context (the engine sets
 * it from cshs_server_set_app_data), kept across requests, NULL by default.
 * The toolkit never reads or frees it. */
CSHW_EXPORT void *cshw_context_app_data(const cshw_context *ctx);
CSHW_EXPORT void cshw_context_set_app_data(cshw_context *ctx, void *data);

/* Route parameters ("{id}" in "/users/{id}"), set by the router. The
 * pairs are not copied: items and strings must live until the request ends
 * (allocate them in the request's arena). Cleared at begin and end. */
CSHW_EXPORT const char *cshw_context_param(const cshw_context *ctx, const char *name);
CSHW_EXPORT const cshw_pairs *cshw_context_params(const cshw_context *ctx);
CSHW_EXPORT void cshw_context_set_params(cshw_context *ctx, const cshw_pairs *params);

/* The options the context was made with. */
CSHW_EXPORT const cshw_options *cshw_context_options(const cshw_context *ctx);

#ifdef __cplusplus
}
#endif

#endif
