// cshw_router: method + path pattern to handler.
//
//   cshw_router *r = cshw_router_new();
//   cshw_router_add(r, "GET", "/users/{id}", show_user);
//   cshw_router_add(r, "POST", "/users", create_user);
//   cshw_router_add(r, "GET", "/files/*", files);       // the rest: param "*"
//   cshw_router_set_static(r, &static_options);         // fallback
//   ... the server's handler calls cshw_router_dispatch(r, ctx)
//
// Patterns. A pattern is "/" followed by segments separated by '/':
//   - a literal ("users"): matches that segment exactly (case-sensitive);
//   - a parameter "{name}": matches one non-empty segment, made available
//     through cshw_context_param(ctx, "name"); names are letters, digits,
//     '_' and '-', unique within the pattern;
//   - a wildcard "*", only as the whole last segment: matches the rest of
//     the path after the slash before it, empty or with more slashes, made
//     available as the parameter "*" ("/files/*" matches "/files/" with ""
//     and "/files/a/b.txt" with "a/b.txt", not "/files").
// Patterns match the decoded path (cshw_request_path): write "/a b", not
// "/a%20b"; '%' is refused, and so are controls, spaces, '?', '#', '\',
// '{' or '}' outside a parameter, '*' elsewhere than the last segment, and
// empty ("//"), "." and ".." segments (a decoded path never holds them: it
// has its slashes merged and its dot-segments resolved).
// Parameter values are the decoded segments ("/users/J%C3%B6rg" gives
// "Jörg"); they live in the request's arena.
//
// Trailing slash: "/users" and "/users/" are different patterns and match
// different paths (the last segment of "/users/" is empty); register both
// (or redirect from one) when both should answer. "/" is the root.
//
// Precedence, the same whatever the order routes were added in: the path
// is matched segment by segment from the left, trying at each segment a
// literal, then a parameter, then a wildcard, and going back to the next
// choice when what follows does not match. The first route so found whose
// method matches wins: "/users/me" before "/users/{id}" before "/users/*";
// "/a/{x}/c" before "/a/*" for "/a/b/c", but "/a/*" for "/a/b/d". Within one
// pattern a route for the request's method wins over a route for "*" (any
// method), and a HEAD request is served by a HEAD route, else by the GET
// route (the response layer sends no body), else by a "*" route. A route
// whose path matches but whose method does not is passed over, so
// "POST /users/me" reaches "POST /users/{id}" even when "GET /users/me"
// exists.
//
// When no route serves the request:
//   - a method other than GET, HEAD, POST, PUT, DELETE, CONNECT, OPTIONS,
//     TRACE and PATCH that no route names (on any pattern): 501, as RFC
//     9110 §9.1 says for a method not implemented; a route for such a
//     method ("PURGE") or for "*" still takes it where its path matches.
//   - some routes match the path (for other methods): OPTIONS is answered
//     204 with Allow; any other method 405 with Allow. Allow lists, sorted
//     by name and separated by ", ", the methods of those routes, HEAD
//     where GET is, and OPTIONS (which the router answers itself).
//     "OPTIONS *" (the server as a whole) is answered 204 with every method
//     the router knows.
//   - no route matches the path: the static fallback if set, else 404.
//     The fallback is cshw_static_serve for every method: it serves GET and
//     HEAD and answers other methods (OPTIONS too) on an existing file with
//     405 and "Allow: GET, HEAD"; when it finds no file the router answers
//     404, and for its other errors the status of the error (403, ...).
//   - the path could not be decoded (cshw_request_path is NULL): 400, the
//     page naming cshw_request_path_error.
// A route for "OPTIONS" (or "*") takes OPTIONS requests for its pattern
// like any other method.
//
// Ownership: the router copies methods, patterns and static options
// (strings included). Threads: build it from one thread before serving;
// dispatch then only reads it and is safe from any number of threads at
// once. Dispatch allocates only from the request's arena.
#ifndef CSHTTP_WEB_ROUTER_H
#define CSHTTP_WEB_ROUTER_H

#include "context.h"
#include "export.h"
#include "static.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cshw_router cshw_router;

/* An empty router, or NULL when out of memory. */
CSHW_EXPORT cshw_router *cshw_router_new(void);

/* Frees the router and its copies. NULL does nothing. No request may be
 * dispatching through it. */
CSHW_EXPORT void cshw_router_free(cshw_router *r);

/* Adds a route. method: a token such as "GET" (case-sensitive, as RFC 9110
 * §9.1 says) or "*" for any method; at most 64 different methods per
 * router. Returns 0, or a negative cshw error: CSHW_E_ROUTE_* for a
 * malformed method or pattern (the code's message names the problem,
 * cshw_router_error gives the pattern and the position), and
 * CSHW_E_ROUTE_DUPLICATE for a route with the same method and the same
 * pattern shape as one already added ("/users/{id}" and "/users/{uid}" have
 * the same shape), -EINVAL for a NULL argument, -ENOMEM. A failed add
 * leaves the routes as they were. */
CSHW_EXPORT int cshw_router_add(cshw_router *r, const char *method, const char *pattern,
                                cshw_handler handler);

/* A route whose handler reads the request body as it arrives (huge
 * uploads, a proxy), as cshw_router_add otherwise (0.4.1): the body is
 * not read and stored before it runs (cshw_router_body_of). */
CSHW_EXPORT int cshw_router_add_streaming(cshw_router *r, const char *method, const char *pattern,
                                          cshw_handler handler);

/* What the route of a request does with its body, known from its head
 * before any body byte is read (0.4.1): CSHW_ROUTE_BODY_WHOLE, a route of
 * cshw_router_add, whose handler gets the body read whole;
 * CSHW_ROUTE_BODY_STREAM, one of cshw_router_add_streaming; and
 * CSHW_ROUTE_BODY_NONE when no route takes it: the static files, 404,
 * 405, 501, a path that does not decode (400), "OPTIONS *", whose answer
 * reads none of it. An exchange with a router and no handler asks this
 * (exchange.h, streams): a body no route takes is never stored, and the
 * final status comes at once, without 100 Continue (as nginx discards a
 * body no location reads). head and msg: a parsed request head. */
typedef enum cshw_route_body {
    CSHW_ROUTE_BODY_NONE = 0,
    CSHW_ROUTE_BODY_WHOLE = 1,
    CSHW_ROUTE_BODY_STREAM = 2
} cshw_route_body;
CSHW_EXPORT cshw_route_body cshw_router_body_of(const cshw_router *r, const char *head,
                                                const csh_message *msg);

/* Why the last cshw_router_add or cshw_router_set_static failed, naming the
 * route and the byte at fault ("GET /a/{}: empty parameter name at byte
 * 3"), or NULL when it succeeded. Valid until the next call on r. */
CSHW_EXPORT const char *cshw_router_error(const cshw_router *r);

/* Serve unmatched paths from static files (copied with its strings, read
 * by its size; NULL: none). Returns 0, -EINVAL when o->root is NULL or
 * o->size is below CSHW_STATIC_OPTIONS_SIZE_0_3 (static.h), or -ENOMEM. */
CSHW_EXPORT int cshw_router_set_static(cshw_router *r, const cshw_static_options *o);

/* Finds the route for the context's request, sets the route parameters
 * (cshw_context_set_params) and runs its handler, or answers 400, 404,
 * 405, 501 or OPTIONS (or the static fallback) as described above. Call it from
 * the handler given to the engine (or cshw_memory_serve). */
CSHW_EXPORT void cshw_router_dispatch(cshw_router *r, cshw_context *ctx);

#ifdef __cplusplus
}
#endif

#endif
