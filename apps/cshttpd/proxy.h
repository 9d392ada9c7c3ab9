/* cshttpd's reverse proxy (--proxy PREFIX=URL): requests whose target
 * starts with PREFIX are sent, target and prefix as sent, to the origin
 * URL through the engine's pooled client (cshttp/server/client.h), their
 * bodies streamed both ways. Everything here is on the client's and the
 * toolkit's public APIs.
 *
 * What the origin receives: the request-target with its dot segments
 * resolved ("/o/x/../y" and "/o/%2e/y" become "/o/y"; proxy_path.h), every
 * %XX kept as sent ("%2f" too, which APIs use), the query as sent. A
 * prefix is matched on that path: it matches a path equal to it, or
 * followed by '/' ("/api" takes "/api", "/api/x" and "/api?q", not
 * "/apix"); a prefix ending in '/' matches every path that starts with it
 * ("/" takes everything). The longest matching prefix wins.
 *
 * Refused with 400, and never sent to an origin: a target that names a
 * proxied prefix as sent, or under another reading of its path (a "%2f",
 * "%5c" or '\' as a separator, "//" merged), but leaves it once its dot
 * segments are resolved ("/o/../admin", "/o/%2e%2e/admin",
 * "/o/..%2fadmin"), whose ".." climbs above the root, or that holds an
 * encoded NUL ("%00"). A target no reading puts under a prefix is the
 * router's and the static files' (cshw_path_decode: dot segments
 * resolved, "%2f" and "%00" refused, ".." above the root refused).
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
    int underscores;     /* pass on request fields whose names hold '_' (default: dropped) */
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

/* The route of a request-target (len bytes, not NUL-terminated) and, in
 * `fwd` (room for len + 1 bytes), the target its origin receives. 1 with
 * *route; 0 when no prefix takes it (*route NULL, fwd undefined); -1 when
 * it is refused (answer 400); -ENOMEM. */
int proxy_route_of(const proxy *p, const char *target, size_t len, char *fwd,
                   const proxy_route **route);

/* The streaming predicate for cshs_server_set_streaming (arg: the proxy):
 * 1 for a request with a body that goes to an origin, so that its body is
 * read as it arrives and sent on in pieces (and Expect: 100-continue is
 * answered only once the origin has the request's head). */
int proxy_streaming(void *arg, const char *head, const csh_message *msg);

/* A Location or Refresh URL of the origin `origin` ("scheme://host:port",
 * a route's), `len` bytes: when it names the origin itself (its scheme,
 * host and port, the port written or the scheme's default), that part
 * becomes `scheme`://`host` (the client's; "" or NULL host: the path
 * alone), written NUL-terminated into out (cap bytes), and 1 is
 * returned. 0: not the origin's, out untouched; -1: out too small. */
int proxy_redirect_url(const char *origin, const char *url, size_t len, const char *scheme,
                       const char *host, char *out, size_t cap);

/* Serves a request that matched `r` (proxy_route_of), sending `target`
 * (its fwd; it must live as long as the request, in its arena): the
 * origin's answer, or 502 / 504 when it failed before its response
 * started. */
void proxy_serve(proxy *p, const proxy_route *r, cshw_context *ctx, const char *target);

/* cshs_server_add_tick's function for the client (arg: the client). */
void proxy_tick(void *arg);

#endif
