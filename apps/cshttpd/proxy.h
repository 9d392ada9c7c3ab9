/* cshttpd's reverse proxy (--proxy PREFIX=URL): requests whose target
 * starts with PREFIX are sent, target and prefix as sent, to the origin
 * URL through the engine's pooled client (cshttp/server/client.h), their
 * bodies streamed both ways. Everything here is on the client's and the
 * toolkit's public APIs.
 *
 * Matching is on the request-target as sent (not the decoded path), so
 * what is proxied is exactly what is passed on. A prefix matches a target
 * equal to it, or followed by '/' or '?' ("/api" takes "/api", "/api/x"
 * and "/api?q", not "/apix"); a prefix ending in '/' matches every target
 * that starts with it ("/" takes everything). The longest matching prefix
 * wins.
 *
 * Threads: proxy_add and proxy_start before the server starts; the rest
 * from any worker at once (the client is thread-safe, the routes are read
 * only). */
#ifndef CSHTTPD_PROXY_H
#define CSHTTPD_PROXY_H

#include <stddef.h>

#include <cshttp/parser.h>
#include <cshttp/server.h>
#include <cshttp/server/client.h>

#define PROXY_ROUTES_MAX 32

typedef struct proxy_route {
    char prefix[1024];
    size_t prefix_len;
    char origin[600]; /* "http://host:port" as the client takes it: no path */
} proxy_route;

typedef struct proxy {
    proxy_route routes[PROXY_ROUTES_MAX];
    size_t n;
    cshs_client *client;
    unsigned timeout_ms; /* head and body-read deadline upstream: past it, 504 */
} proxy;

/* Checks "PREFIX=URL" and splits it: prefix (starts with '/', visible
 * characters of a path, no '?', '#' or '%'), origin ("http://" or
 * "https://", a host (a name, IPv4, or IPv6 in brackets), an optional port
 * 1-65535, no user info, no path but an optional "/"). 0, or -1 with a
 * message naming the bad part in err. */
int proxy_parse(const char *spec, proxy_route *out, char *err, size_t errlen);

/* Adds a route (proxy_parse) ; -1 with err when bad, a repeated prefix or
 * too many routes. */
int proxy_add(proxy *p, const char *spec, char *err, size_t errlen);

/* The route for a request-target (not NUL-terminated), or NULL. */
const proxy_route *proxy_match(const proxy *p, const char *target, size_t len);

/* The streaming predicate for cshs_server_set_streaming (arg: the proxy):
 * 1 for a request with a body that goes to an origin, so that its body is
 * read as it arrives and sent on in pieces (and Expect: 100-continue is
 * answered only once the origin has the request's head). */
int proxy_streaming(void *arg, const char *head, const csh_message *msg);

/* Serves a request that matched `r`: the origin's answer, or 502 / 504
 * when it failed before its response started. */
void proxy_serve(proxy *p, const proxy_route *r, cshw_context *ctx);

/* cshs_server_add_tick's function for the client (arg: the client). */
void proxy_tick(void *arg);

#endif
