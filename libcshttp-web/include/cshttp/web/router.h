/* cshw_router: method + path pattern to handler.
 *
 *   cshw_router *r = cshw_router_new();
 *   cshw_router_add(r, "GET", "/users/{id}", show_user);
 *   cshw_router_add(r, "POST", "/users", create_user);
 *   cshw_router_add(r, "GET", "/files/*", files);       // the rest: param "*"
 *   cshw_router_set_static(r, &static_options);         // fallback
 *   ... the server's handler calls cshw_router_dispatch(r, ctx)
 *
 * Patterns are segments: literals, "{name}" parameters (one segment, made
 * available through cshw_context_param) and a final "*" wildcard. When
 * several routes match, literals win over parameters, parameters over
 * wildcards, segment by segment from the left. HEAD is served by GET routes.
 * No route for the path: the static fallback if set, else 404. Routes for
 * the path but not the method: 405 with Allow.
 *
 * Ownership: the router copies patterns. Threads: build it before serving;
 * dispatch is then safe from any number of threads. */
#ifndef CSHTTP_WEB_ROUTER_H
#define CSHTTP_WEB_ROUTER_H

#include "context.h"
#include "export.h"
#include "static.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cshw_router cshw_router;

CSHW_EXPORT cshw_router *cshw_router_new(void);
CSHW_EXPORT void cshw_router_free(cshw_router *r);

/* Adds a route. method: a token such as "GET" or "*" for any. Returns 0, or
 * a negative cshw error for a malformed pattern (the message names it) or a
 * duplicate route. */
CSHW_EXPORT int cshw_router_add(cshw_router *r, const char *method, const char *pattern,
                                cshw_handler handler);

/* Serve unmatched paths from static files (copied; NULL: none). */
CSHW_EXPORT int cshw_router_set_static(cshw_router *r, const cshw_static_options *o);

/* Finds the route for the context's request, sets the route parameters and
 * runs its handler, or answers 404/405 (or the static fallback). */
CSHW_EXPORT void cshw_router_dispatch(cshw_router *r, cshw_context *ctx);

#ifdef __cplusplus
}
#endif

#endif
