/* cshttpd's reverse proxy (--proxy PREFIX=URL[,URL...]): requests whose
 * path starts with PREFIX are sent, prefix included, to one of the origin
 * URLs through the engine's pooled client (cshttp/server/client.h), their
 * bodies streamed both ways. Everything here is on the client's and the
 * toolkit's public APIs.
 *
 * Several origins per prefix, as an nginx upstream with least_conn: a
 * request goes to the origin with the fewest requests in flight, turn by
 * turn among equals. An origin that failed max_fails times (a connect,
 * TLS, send or head that failed or timed out; not an HTTP status) within
 * fail_timeout_ms is left out for fail_timeout_ms, then tried again; when
 * every origin is left out, all are tried. A request whose origin failed
 * before any byte of its answer is sent once more to another origin when
 * nothing of it reached the first (a name, connect or TLS handshake that
 * failed: any method, its body not yet read) or, without a body, when
 * its method is idempotent (RFC 9110 §9.2.2), as nginx's
 * proxy_next_upstream does.
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

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include <cshttp/parser.h>
#include <cshttp/server.h>
#include <cshttp/server/client.h>

#define PROXY_ROUTES_MAX 32
#define PROXY_ORIGINS_MAX 16 /* origins of one prefix */

/* One origin of a route: its URL, read only once the server runs, and
 * its balancing and health, changed by any worker at once. */
typedef struct proxy_origin {
    char url[600];                  /* "http://host:port" as the client takes it: no path */
    _Atomic unsigned active;        /* requests in flight to it */
    _Atomic unsigned fails;         /* failures counted since first_fail_ms */
    _Atomic int64_t first_fail_ms;  /* the first of them (CLOCK_MONOTONIC ms) */
    _Atomic int64_t down_until_ms;  /* left out until then (0: never was) */
    _Atomic uint64_t requests;      /* sent to it (each try) */
    _Atomic uint64_t failures;      /* tries that failed (as max_fails counts them) */
    _Atomic uint64_t retried;       /* of those, sent again to another origin */
} proxy_origin;

typedef struct proxy_route {
    char prefix[1024];
    size_t prefix_len;
    proxy_origin origins[PROXY_ORIGINS_MAX];
    unsigned norigins;
    _Atomic unsigned turn; /* where the next look for the least busy starts */
} proxy_route;

typedef struct proxy {
    proxy_route routes[PROXY_ROUTES_MAX];
    size_t n;
    cshs_client *client;
    unsigned timeout_ms;      /* head and body-read deadline upstream: past it, 504 */
    int underscores;          /* pass on request fields whose names hold '_' (default: dropped) */
    unsigned max_fails;       /* failures that leave an origin out (1; 0: never) */
    unsigned fail_timeout_ms; /* counted within, and left out for, this long (10000) */
    struct proxy_spool *spool; /* the answers' buffering (proxy_buffer.h), NULL: none */
    /* requests' bodies read whole before they go to their origin (nginx's
     * proxy_request_buffering; default 1) */
    int request_buffering;
} proxy;

/* Checks "PREFIX=URL[,URL...]" and splits it: prefix (starts with '/',
 * visible characters of a path, no '?', '#' or '%'), each origin
 * ("http://" or "https://", a host (a name, IPv4, or IPv6 in brackets),
 * an optional port 1-65535, no user info, no path but an optional "/"),
 * PROXY_ORIGINS_MAX at most, none twice. 0, or -1 with a message naming
 * the bad part in err. */
int proxy_parse(const char *spec, proxy_route *out, char *err, size_t errlen);

/* Adds a route (proxy_parse) ; -1 with err when bad, a repeated prefix or
 * too many routes. */
int proxy_add(proxy *p, const char *spec, char *err, size_t errlen);

/* The origin of route r (one of p's) a request goes to now: the one with
 * the fewest requests in flight among those not left out (all of them
 * when every one is), the turn deciding among equals; `not` (or NULL) is
 * passed over while another is there (a retry's). Counted in flight and
 * as a request until proxy_origin_done. Any thread. */
proxy_origin *proxy_pick(proxy *p, const proxy_route *r, const proxy_origin *not, int64_t now_ms);

/* A request to o has ended: `failed` 1 when the origin failed it (it
 * counts towards max_fails), 0 when it answered (its count starts
 * again). Any thread. */
void proxy_origin_done(const proxy *p, proxy_origin *o, int failed, int64_t now_ms);

/* Whether a client error is the origin's failure (max_fails counts it,
 * and a retry may follow): a name that did not resolve, a connect, TLS
 * handshake, send or head that failed or timed out, an answer cut or
 * malformed. Not the pool's own wait (acquire_timeout_ms), nor a
 * failure on this side (-errno). */
int proxy_origin_failed(int code);

/* Whether such a failure means nothing of the request reached the origin
 * (a name, connect or TLS handshake that failed). */
int proxy_never_sent(int code);

/* The route of a request-target (len bytes, not NUL-terminated) and, in
 * `fwd` (room for len + 1 bytes), the target its origin receives. 1 with
 * *route; 0 when no prefix takes it (*route NULL, fwd undefined); -1 when
 * it is refused (answer 400); -ENOMEM. */
int proxy_route_of(const proxy *p, const char *target, size_t len, char *fwd,
                   const proxy_route **route);

/* The proxy's part of the streaming predicate (arg: the proxy), for a
 * request with a body: 0 when it goes to an origin and its body is read
 * whole first by the engine, on the loop (request_buffering, as nginx's
 * proxy_request_buffering: the request then waits for its origin holding
 * no thread, its body sent from memory or its temporary file); 1 when its
 * body is read as it arrives and sent on in pieces (request_buffering
 * off; Expect: 100-continue is then answered only once the origin has
 * the head), or its target is refused (400: its body is never read); -1
 * when it does not go to an origin. */
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
 * (its fwd; it must live as long as the request, in its arena) to the
 * origin proxy_pick gives: the origin's answer, or 502 / 504 when it
 * failed before its response started (and no other origin answered a
 * retry). */
void proxy_serve(proxy *p, const proxy_route *r, cshw_context *ctx, const char *target);

/* cshs_server_add_tick's function for the client (arg: the client). */
void proxy_tick(void *arg);

#endif
