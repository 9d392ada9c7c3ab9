/* cshttpd's reverse proxy (proxy.h). */
#include "proxy.h"
#include "proxy_buffer.h"
#include "proxy_path.h"
#include "proxy_ws.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <cshttp/span.h>
#include <cshttp/web/arena.h>
#include <cshttp/web/context.h>
#include <cshttp/web/options.h>
#include <cshttp/web/request.h>
#include <cshttp/web/response.h>

#include "log.h"

/* ---- routes ---- */

static int is_visible(unsigned char c)
{
    return c > 0x20 && c < 0x7f;
}

static int parse_origin(const char *spec, const char *url, char *out, size_t outlen, char *err,
                        size_t errlen);

int proxy_parse(const char *spec, proxy_route *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    const char *eq = strchr(spec, '=');
    if (!eq) {
        snprintf(err, errlen, "proxy '%.200s': not PREFIX=URL (e.g. /api=http://127.0.0.1:9000)",
                 spec);
        return -1;
    }
    size_t plen = (size_t)(eq - spec);
    if (plen == 0 || spec[0] != '/') {
        snprintf(err, errlen, "proxy '%.200s': the prefix '%.*s' must start with '/'", spec,
                 (int)(plen > 200 ? 200 : plen), spec);
        return -1;
    }
    if (plen >= sizeof out->prefix) {
        snprintf(err, errlen, "proxy '%.100s...': the prefix is too long", spec);
        return -1;
    }
    for (size_t i = 0; i < plen; i++) {
        unsigned char c = (unsigned char)spec[i];
        if (!is_visible(c) || c == '?' || c == '#' || c == '%') {
            snprintf(err, errlen,
                     "proxy '%.200s': the prefix '%.*s' may hold only visible characters of a "
                     "path, without '?', '#' or '%%'",
                     spec, (int)(plen > 200 ? 200 : plen), spec);
            return -1;
        }
    }
    memcpy(out->prefix, spec, plen);
    out->prefix_len = plen;

    /* the origins, comma-separated */
    const char *u = eq + 1;
    for (;;) {
        size_t ul = strcspn(u, ",");
        if (out->norigins == PROXY_ORIGINS_MAX) {
            snprintf(err, errlen, "proxy '%.200s': more than %d origins", spec, PROXY_ORIGINS_MAX);
            return -1;
        }
        char one[1024];
        if (ul >= sizeof one) {
            snprintf(err, errlen, "proxy '%.200s': an origin's URL is too long", spec);
            return -1;
        }
        memcpy(one, u, ul);
        one[ul] = '\0';
        proxy_origin *o = &out->origins[out->norigins];
        if (parse_origin(spec, one, o->url, sizeof o->url, err, errlen) < 0) return -1;
        for (unsigned i = 0; i < out->norigins; i++)
            if (strcmp(out->origins[i].url, o->url) == 0) {
                snprintf(err, errlen, "proxy '%.200s': the origin %s is given twice", spec, o->url);
                return -1;
            }
        out->norigins++;
        if (!u[ul]) break;
        u += ul + 1;
    }
    return 0;
}

/* One origin URL of spec's: scheme://host[:port][/], checked, written
 * "scheme://host:port" lower case into out. 0, or -1 with err. */
static int parse_origin(const char *spec, const char *url, char *out, size_t outlen, char *err,
                        size_t errlen)
{
    const char *host;
    int https;
    if (!strncasecmp(url, "http://", 7)) {
        host = url + 7;
        https = 0;
    } else if (!strncasecmp(url, "https://", 8)) {
        host = url + 8;
        https = 1;
    } else {
        snprintf(err, errlen, "proxy '%.200s': the URL '%.200s' is not http:// or https://", spec,
                 url);
        return -1;
    }
    size_t hlen = strcspn(host, "/?#");
    const char *rest = host + hlen;
    if (*rest && strcmp(rest, "/") != 0) {
        snprintf(err, errlen,
                 "proxy '%.200s': the URL '%.200s' has a path, query or fragment: an origin "
                 "is scheme://host[:port] (the target is passed on as sent)",
                 spec, url);
        return -1;
    }
    const char *bad = NULL;
    size_t namelen = hlen;
    const char *port = NULL;
    if (memchr(host, '@', hlen)) {
        bad = "user info is not allowed";
    } else if (hlen && host[0] == '[') {
        const char *close = memchr(host, ']', hlen);
        if (!close || close == host + 1)
            bad = "an IPv6 address needs its closing ']'";
        else {
            for (const char *q = host + 1; q < close; q++)
                if (!strchr("0123456789abcdefABCDEF:.", *q)) bad = "not an IPv6 address";
            namelen = (size_t)(close + 1 - host);
            if (close + 1 < host + hlen) {
                if (close[1] != ':')
                    bad = "unexpected text after the IPv6 address";
                else
                    port = close + 2;
            }
        }
    } else {
        const char *colon = memchr(host, ':', hlen);
        if (colon) {
            namelen = (size_t)(colon - host);
            port = colon + 1;
        }
        if (namelen == 0) bad = "no host";
        for (size_t i = 0; i < namelen && !bad; i++) {
            char c = host[i];
            if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '-' || c == '.' || c == '_'))
                bad = "the host may hold only letters, digits, '-', '.' and '_'";
        }
    }
    long portnum = https ? 443 : 80;
    if (!bad && port) {
        size_t pl = (size_t)(host + hlen - port);
        char *end;
        char pb[8];
        if (pl == 0 || pl >= sizeof pb) {
            bad = "the port must be 1-65535";
        } else {
            memcpy(pb, port, pl);
            pb[pl] = '\0';
            portnum = strtol(pb, &end, 10);
            if (*end || pb[0] < '0' || pb[0] > '9' || portnum < 1 || portnum > 65535)
                bad = "the port must be 1-65535";
        }
    }
    if (bad) {
        snprintf(err, errlen, "proxy '%.200s': the URL '%.200s': %s", spec, url, bad);
        return -1;
    }
    if (namelen + 20 >= outlen) {
        snprintf(err, errlen, "proxy '%.200s': the host is too long", spec);
        return -1;
    }
    snprintf(out, outlen, "%s://%.*s:%ld", https ? "https" : "http", (int)namelen, host, portnum);
    for (char *c = out; *c; c++)
        if (*c >= 'A' && *c <= 'Z') *c = (char)(*c - 'A' + 'a');
    return 0;
}

int proxy_add(proxy *p, const char *spec, char *err, size_t errlen)
{
    proxy_route r;
    if (proxy_parse(spec, &r, err, errlen) < 0) return -1;
    for (size_t i = 0; i < p->n; i++) {
        if (p->routes[i].prefix_len == r.prefix_len &&
            memcmp(p->routes[i].prefix, r.prefix, r.prefix_len) == 0) {
            snprintf(err, errlen, "proxy '%.200s': the prefix %s is given twice", spec, r.prefix);
            return -1;
        }
    }
    if (p->n == PROXY_ROUTES_MAX) {
        snprintf(err, errlen, "proxy: more than %d prefixes", PROXY_ROUTES_MAX);
        return -1;
    }
    p->routes[p->n++] = r;
    return 0;
}

/* ---- origins: least requests in flight, passive health ---- */

proxy_origin *proxy_pick(proxy *p, const proxy_route *r, const proxy_origin *not, int64_t now_ms)
{
    proxy_route *route = &p->routes[r - p->routes];
    unsigned n = route->norigins;
    unsigned start = atomic_fetch_add_explicit(&route->turn, 1, memory_order_relaxed);
    proxy_origin *best = NULL;
    unsigned least = 0;
    /* first those not left out, then (none there) any */
    for (int any = 0; any < 2 && !best; any++)
        for (unsigned k = 0; k < n; k++) {
            proxy_origin *o = &route->origins[(start + k) % n];
            if (o == not && n > 1) continue;
            if (!any && atomic_load_explicit(&o->down_until_ms, memory_order_relaxed) > now_ms)
                continue;
            unsigned a = atomic_load_explicit(&o->active, memory_order_relaxed);
            if (!best || a < least) {
                best = o;
                least = a;
            }
        }
    atomic_fetch_add_explicit(&best->active, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&best->requests, 1, memory_order_relaxed);
    return best;
}

void proxy_origin_done(const proxy *p, proxy_origin *o, int failed, int64_t now_ms)
{
    atomic_fetch_sub_explicit(&o->active, 1, memory_order_relaxed);
    if (!failed) {
        atomic_store_explicit(&o->fails, 0, memory_order_relaxed);
        return;
    }
    atomic_fetch_add_explicit(&o->failures, 1, memory_order_relaxed);
    if (!p->max_fails) return;
    /* nginx's rule: max_fails within fail_timeout leave it out for
     * fail_timeout; a failure past the window starts a new count */
    int64_t first = atomic_load_explicit(&o->first_fail_ms, memory_order_relaxed);
    unsigned f;
    if (first == 0 || now_ms - first >= (int64_t)p->fail_timeout_ms) {
        atomic_store_explicit(&o->first_fail_ms, now_ms, memory_order_relaxed);
        atomic_store_explicit(&o->fails, 1, memory_order_relaxed);
        f = 1;
    } else {
        f = atomic_fetch_add_explicit(&o->fails, 1, memory_order_relaxed) + 1;
    }
    if (f >= p->max_fails) {
        atomic_store_explicit(&o->down_until_ms, now_ms + (int64_t)p->fail_timeout_ms,
                              memory_order_relaxed);
        atomic_store_explicit(&o->fails, 0, memory_order_relaxed);
        error_log_printf(LOG_WARN, "proxy: %s left out for %u ms (%u failure%s)", o->url,
                         p->fail_timeout_ms, f, f == 1 ? "" : "s");
    }
}

int proxy_origin_failed(int code)
{
    switch (code) {
    case CSHS_CLIENT_E_RESOLVE:
    case CSHS_CLIENT_E_CONNECT:
    case CSHS_CLIENT_E_CONNECT_TIMEOUT:
    case CSHS_CLIENT_E_TLS:
    case CSHS_CLIENT_E_CERTIFICATE:
    case CSHS_CLIENT_E_SEND_TIMEOUT:
    case CSHS_CLIENT_E_HEAD_TIMEOUT:
    case CSHS_CLIENT_E_READ_TIMEOUT:
    case CSHS_CLIENT_E_ORIGIN_CLOSED:
    case CSHS_CLIENT_E_MALFORMED:
        return 1;
    default:
        return 0;
    }
}

int proxy_never_sent(int code)
{
    return code == CSHS_CLIENT_E_RESOLVE || code == CSHS_CLIENT_E_CONNECT ||
           code == CSHS_CLIENT_E_CONNECT_TIMEOUT || code == CSHS_CLIENT_E_TLS ||
           code == CSHS_CLIENT_E_CERTIFICATE;
}

/* The route whose prefix matches the path (len bytes, no query), the
 * longest; NULL for none. */
static const proxy_route *match(const proxy *p, const char *path, size_t len)
{
    const proxy_route *best = NULL;
    for (size_t i = 0; i < p->n; i++) {
        const proxy_route *r = &p->routes[i];
        if (len < r->prefix_len || memcmp(path, r->prefix, r->prefix_len) != 0) continue;
        if (r->prefix[r->prefix_len - 1] != '/' && len > r->prefix_len && path[r->prefix_len] != '/')
            continue;
        if (!best || r->prefix_len > best->prefix_len) best = r;
    }
    return best;
}

int proxy_route_of(const proxy *p, const char *target, size_t len, char *fwd,
                   const proxy_route **route)
{
    *route = NULL;
    if (!p || p->n == 0 || len == 0 || target[0] != '/') return 0;
    const char *q = memchr(target, '?', len);
    size_t plen = q ? (size_t)(q - target) : len;

    /* The forwarded reading: '/' alone separates, "//" kept. */
    size_t n;
    int climbs = proxy_path_resolve(target, plen, 0, fwd, &n) < 0;
    const proxy_route *r = climbs ? NULL : match(p, fwd, n);
    const proxy_route *raw = match(p, target, plen);
    int refused = climbs || (raw && raw != r);

    /* The other readings an origin may make (a decoded "%2f" or a '\'
     * as a separator, "//" merged) must lead to the same route: a path
     * that leaves its prefix under any of them never reaches the origin. */
    char stack[2048];
    char *scratch = plen < sizeof stack ? stack : malloc(plen + 1);
    if (!scratch) return -ENOMEM;
    static const unsigned readings[] = {PROXY_PATH_SLASHES, PROXY_PATH_MERGE,
                                        PROXY_PATH_SLASHES | PROXY_PATH_MERGE};
    int involved = r || raw;
    for (size_t i = 0; i < sizeof readings / sizeof readings[0]; i++) {
        size_t m;
        if (proxy_path_resolve(target, plen, readings[i], scratch, &m) < 0) {
            refused = 1;
            continue;
        }
        const proxy_route *other = match(p, scratch, m);
        involved |= other != NULL;
        refused |= other != r;
    }
    if (scratch != stack) free(scratch);
    if (!involved) return 0; /* the router's and the static files' own rules apply */
    if (refused || proxy_path_has_nul(target, plen)) return -1;
    memcpy(fwd + n, target + plen, len - plen); /* the query, as sent */
    fwd[n + len - plen] = '\0';
    *route = r;
    return 1;
}

int proxy_streaming(void *arg, const char *head, const csh_message *msg)
{
    /* a request without a body has nothing to stream: it runs as any
     * handler does (one that blocks on its origin is the engine's to
     * move aside); a refused target is answered without its origin, its
     * body never read */
    if (msg->body == CSH_BODY_NONE) return 0;
    const proxy_route *r;
    char stack[2048];
    size_t len = msg->target.len;
    char *fwd = len < sizeof stack ? stack : malloc(len + 1);
    if (!fwd) return 0;
    int v = proxy_route_of(arg, csh_span_ptr(head, msg->target), len, fwd, &r);
    if (fwd != stack) free(fwd);
    if (v == 0) return -1;
    if (v < 0) return 1;
    /* a body streamed to the origin is relayed on the loop (proxy_upload) */
    return ((const proxy *)arg)->request_buffering ? 0 : CSHS_STREAM_ON_LOOP;
}

void proxy_tick(void *arg)
{
    cshs_client_tick(arg);
}

/* ---- hop-by-hop fields (RFC 9110 §7.6.1) ---- */

/* Whether the n bytes at `name` are one of the comma-separated tokens of
 * a Connection value. */
static int listed(const char *list, const char *name, size_t nl)
{
    const char *p = list;
    while (*p) {
        while (*p == ' ' || *p == '\t' || *p == ',') p++;
        size_t n = strcspn(p, ",");
        size_t t = n;
        while (t && (p[t - 1] == ' ' || p[t - 1] == '\t')) t--;
        if (t == nl && csh_mem_ieq(p, name, nl)) return 1;
        p += n;
    }
    return 0;
}

/* What the proxy does with a field, by its name. */
typedef enum {
    F_PASS,       /* passed on */
    F_HOP,        /* hop-by-hop (RFC 9110 §7.6.1), never passed on */
    F_LENGTH,     /* Content-Length: the client or the toolkit writes its own */
    F_EXPECT,     /* the client answers 100-continue itself */
    F_XFF,        /* X-Forwarded-For: extended */
    F_XF_REPLACED /* X-Forwarded-Proto and -Host: set anew */
} field_kind;

/* The kind of the field named by the n bytes at `name`, one comparison
 * by length: every header of every proxied request and response is
 * classified, both ways. */
static field_kind kind_of(const char *name, size_t n)
{
    switch (n) {
    case 2:
        if (csh_mem_ieq(name, "te", 2)) return F_HOP;
        break;
    case 6:
        if (csh_mem_ieq(name, "expect", 6)) return F_EXPECT;
        break;
    case 7:
        if (csh_mem_ieq(name, "upgrade", 7) || csh_mem_ieq(name, "trailer", 7)) return F_HOP;
        break;
    case 10:
        if (csh_mem_ieq(name, "connection", 10) || csh_mem_ieq(name, "keep-alive", 10))
            return F_HOP;
        break;
    case 14:
        if (csh_mem_ieq(name, "content-length", 14)) return F_LENGTH;
        break;
    case 15:
        if (csh_mem_ieq(name, "x-forwarded-for", 15)) return F_XFF;
        break;
    case 16:
        if (csh_mem_ieq(name, "x-forwarded-host", 16)) return F_XF_REPLACED;
        break;
    case 17:
        if (csh_mem_ieq(name, "transfer-encoding", 17)) return F_HOP;
        if (csh_mem_ieq(name, "x-forwarded-proto", 17)) return F_XF_REPLACED;
        break;
    default:
        break;
    }
    /* Proxy-Authorization, Proxy-Authenticate, Proxy-Connection: meant
     * for this hop */
    if (n >= 6 && csh_mem_ieq(name, "proxy-", 6)) return F_HOP;
    return F_PASS;
}

/* Whether a field the Connection values `conn` name (hop-by-hop too). */
static int named_by_connection(const char *name, size_t n, const char *const *conn, size_t nconn)
{
    for (size_t i = 0; i < nconn; i++)
        if (listed(conn[i], name, n)) return 1;
    return 0;
}

/* ---- redirects (nginx's proxy_redirect default) ---- */

/* The default port of a scheme of n bytes: 80, 443, or 0. */
static long default_port(const char *scheme, size_t n)
{
    if (n == 4 && strncasecmp(scheme, "http", 4) == 0) return 80;
    if (n == 5 && strncasecmp(scheme, "https", 5) == 0) return 443;
    return 0;
}

int proxy_redirect_url(const char *origin, const char *url, size_t len, const char *scheme,
                       const char *host, char *out, size_t cap)
{
    /* the route's origin: "scheme://host:port", lower case, port written */
    const char *sep = strstr(origin, "://");
    const char *colon = strrchr(origin, ':');
    if (!sep || !colon || colon < sep + 3) return 0;
    size_t sl = (size_t)(sep - origin);
    const char *oh = sep + 3;
    size_t ohl = (size_t)(colon - oh);
    long oport = strtol(colon + 1, NULL, 10);
    /* the URL's scheme and authority */
    if (len < sl + 3 || strncasecmp(url, origin, sl) != 0 || memcmp(url + sl, "://", 3) != 0)
        return 0;
    const char *a = url + sl + 3, *end = url + len;
    const char *rest = a;
    while (rest < end && *rest != '/' && *rest != '?' && *rest != '#') rest++;
    const char *hend = a;
    if (hend < rest && *hend == '[') {
        while (hend < rest && *hend != ']') hend++;
        if (hend < rest) hend++;
    } else {
        while (hend < rest && *hend != ':') hend++;
    }
    if ((size_t)(hend - a) != ohl || strncasecmp(a, oh, ohl) != 0) return 0;
    long port = default_port(origin, sl);
    if (hend < rest) { /* ":port" */
        if (*hend != ':' || hend + 1 == rest || rest - hend > 6) return 0;
        port = 0;
        for (const char *d = hend + 1; d < rest; d++) {
            if (*d < '0' || *d > '9') return 0;
            port = port * 10 + (*d - '0');
        }
    }
    if (port != oport) return 0;
    /* what follows the authority, as sent; without a host to name, the
     * path alone ("/" for none), which the client resolves against the
     * URL it asked for */
    int rl = (int)(end - rest);
    int n = host && *host ? snprintf(out, cap, "%s://%s%.*s", scheme, host, rl, rest)
            : rl          ? snprintf(out, cap, "%.*s", rl, rest)
                          : snprintf(out, cap, "/");
    return n < 0 || (size_t)n >= cap ? -1 : 1;
}

/* The value of a Location or Refresh field of the origin's, with a URL
 * that names the origin rewritten to the client's scheme and host
 * (proxy_redirect_url); NULL when it stays as sent (or on a failure). A
 * Refresh's URL follows "url=" ("5; url=http://origin/next"). */
static char *redirected(cshw_arena *a, const proxy_origin *o, cshw_request *req,
                        const char *name, const char *value)
{
    const char *url = value;
    if (strcasecmp(name, "refresh") == 0) {
        const char *u = value;
        while (*u && strncasecmp(u, "url=", 4) != 0) u++;
        if (!*u) return NULL;
        url = u + 4;
        if (*url == '"' || *url == '\'') url++;
    }
    size_t len = strlen(url);
    if (url != value && len && (url[len - 1] == '"' || url[len - 1] == '\'')) len--;
    const char *host = cshw_request_header(req, "Host");
    size_t cap = len + (host ? strlen(host) : 0) + 16;
    char *out = cshw_arena_alloc(a, cap);
    if (!out || proxy_redirect_url(o->url, url, len, cshw_request_scheme(req), host, out, cap) != 1)
        return NULL;
    if (url == value) return out;
    /* the text around the URL, as sent */
    return cshw_arena_printf(a, "%.*s%s%s", (int)(url - value), value, out, url + len);
}

/* ---- one request ---- */

static void fail(const proxy_origin *o, cshw_request *req, cshw_response *res, int code,
                 const char *when)
{
    int status = cshs_client_error_status(code);
    if (status < 500) status = 502;
    error_log_printf(LOG_WARN, "proxy %s %s -> %s: %s %s (%s, %d)", cshw_request_method(req),
                     cshw_request_target(req), o->url, when, cshs_client_error_message(code),
                     cshs_client_error_name(code), status);
    /* before the head went out: the error page; after: the response is cut
     * short (no last chunk, the connection closed), never taken for whole */
    cshw_response_send_error(res, status);
}

/* The request's fields for the origin: all but the hop-by-hop ones and
 * those the client writes itself (Content-Length, Expect), with
 * X-Forwarded-For extended and X-Forwarded-Proto and -Host set. */
static size_t request_fields(const proxy *p, cshw_context *ctx, cshs_client_header **out)
{
    cshw_request *req = cshw_context_request(ctx);
    cshw_arena *a = cshw_context_arena(ctx);
    size_t n = cshw_request_header_count(req);
    const char *conn[16];
    size_t nconn = cshw_request_header_all(req, "Connection", conn, 16);
    if (nconn > 16) nconn = 16;
    cshs_client_header *h = cshw_arena_alloc(a, sizeof *h * (n + 3));
    if (!h) return (size_t)-1;
    size_t k = 0;
    const char *xff = NULL;
    for (size_t i = 0; i < n; i++) {
        const char *value;
        const char *name = cshw_request_header_at(req, i, &value);
        if (!name) break;
        size_t nl = strlen(name);
        field_kind kind = kind_of(name, nl);
        if (kind == F_XFF) {
            /* several lines become one list, in order */
            xff = xff ? cshw_arena_printf(a, "%s, %s", xff, value) : value;
            continue;
        }
        if (kind != F_PASS || named_by_connection(name, nl, conn, nconn)) continue;
        /* a name with '_' may be read as its '-' twin by an origin that
         * maps both to one variable (CGI's HTTP_X_FORWARDED_FOR): nginx's
         * underscores_in_headers off */
        if (!p->underscores && memchr(name, '_', nl)) continue;
        h[k++] = (cshs_client_header){name, nl, value, strlen(value)};
    }
    const char *peer = cshw_request_remote_addr(req);
    if (!peer) peer = "unknown";
    xff = xff ? cshw_arena_printf(a, "%s, %s", xff, peer) : peer;
    if (!xff) return (size_t)-1;
    h[k++] = (cshs_client_header){"X-Forwarded-For", 15, xff, strlen(xff)};
    const char *proto = cshw_request_scheme(req);
    h[k++] = (cshs_client_header){"X-Forwarded-Proto", 17, proto, strlen(proto)};
    const char *host = cshw_request_header(req, "Host");
    if (host) h[k++] = (cshs_client_header){"X-Forwarded-Host", 16, host, strlen(host)};
    *out = h;
    return k;
}

/* The origin's fields onto our response: all but the hop-by-hop ones and
 * Content-Length (declared to the toolkit instead, see origin_length);
 * a Location or Refresh that names the origin now names the client's
 * scheme and host (redirected). */
static void response_fields(cshw_context *ctx, const proxy_origin *o, cshs_call *call)
{
    cshw_response *res = cshw_context_response(ctx);
    cshw_arena *a = cshw_context_arena(ctx);
    const csh_message *m = cshs_call_message(call);
    size_t hl;
    const char *head = cshs_call_head(call, &hl);
    const char *conn[16];
    size_t nconn = 0;
    for (size_t i = 0; i < m->num_headers && nconn < 16; i++)
        if (csh_span_ieq(head, m->headers[i].name, "connection"))
            conn[nconn++] = cshw_arena_strndup(a, csh_span_ptr(head, m->headers[i].value),
                                               m->headers[i].value.len);
    for (size_t i = 0; i < nconn; i++)
        if (!conn[i]) return;
    for (size_t i = 0; i < m->num_headers; i++) {
        const csh_header *f = &m->headers[i];
        const char *fn = csh_span_ptr(head, f->name);
        field_kind kind = kind_of(fn, f->name.len);
        if (kind == F_HOP || kind == F_LENGTH || named_by_connection(fn, f->name.len, conn, nconn))
            continue;
        char *name = cshw_arena_strndup(a, fn, f->name.len);
        char *value = cshw_arena_strndup(a, csh_span_ptr(head, f->value), f->value.len);
        if (!name || !value) return;
        if (strcasecmp(name, "location") == 0 || strcasecmp(name, "refresh") == 0) {
            char *v = redirected(a, o, cshw_context_request(ctx), name, value);
            if (v) value = v;
        }
        /* a field the toolkit will not send (a reserved or invalid one) is
         * left out rather than failing the response */
        cshw_response_append_header(res, name, value);
    }
}

/* The origin's Content-Length, to pass on as it was sent (RFC 9110 §8.6):
 * 1 and *len, or 0 when it sent none, or its status has no content (1xx,
 * 204: never one; 304: the toolkit sends none, which §8.6 allows). HEAD's
 * is the length GET would have, passed on too (§9.3.2). The parser has
 * refused a malformed or repeated one, so the value is digits. */
static int origin_length(cshs_call *call, uint64_t *len)
{
    const csh_message *m = cshs_call_message(call);
    int st = cshs_call_status(call);
    if (!(m->flags & CSH_MSG_HAS_CONTENT_LENGTH) || st < 200 || st == 204 || st == 304) return 0;
    if (m->body == CSH_BODY_LENGTH) {
        *len = m->content_length;
        return 1;
    }
    const char *v;
    size_t n;
    if (!cshs_call_header(call, "content-length", &v, &n)) return 0;
    uint64_t x = 0;
    for (size_t i = 0; i < n; i++) {
        if (v[i] < '0' || v[i] > '9' || x > (UINT64_MAX - 9) / 10) return 0;
        x = x * 10 + (uint64_t)(v[i] - '0');
    }
    *len = x;
    return 1;
}

/* Whether the origin's body goes out whole (none, or a Content-Length
 * that fits the toolkit's response buffer), else it is streamed. */
static int goes_whole(const csh_message *m, const cshw_options *wo)
{
    return m->body == CSH_BODY_NONE ||
           (m->body == CSH_BODY_LENGTH && wo && m->content_length <= wo->response_buffer);
}

/* CLOCK_MONOTONIC milliseconds: the origins' health is timed on it. */
static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* An answer that outgrew its buffering: its connection leaves the pool's
 * count (cshs_call_detach), when fewer than max_held have. 1 when it
 * did (the caller gives the place back when the call ends). */
static int hold_connection(proxy_spool *sp, cshs_call *call)
{
    unsigned held = atomic_load(&sp->held);
    do {
        if (held >= sp->max_held) return 0;
    } while (!atomic_compare_exchange_weak(&sp->held, &held, held + 1));
    if (cshs_call_detach(call) == 0) return 1;
    atomic_fetch_sub(&sp->held, 1);
    return 0;
}

/* The origin's body passed on to the client: on a thread that may wait
 * (a request with a body, proxied by its handler's thread), or as events
 * on the connection's loop (a deferred request): read without waiting,
 * written without waiting for the client, and each side waited for on
 * the loop when it has nothing (the origin) or takes nothing (the
 * client), holding no thread. */
#define RELAY_BUF 16384
#define RELAY_TURNS 64           /* pieces in a row before the loop's others go first */
#define RELAY_HIGH (256u * 1024) /* queued for the client: wait for its drain */
/* queued for the client in memory before the rest goes to the temporary
 * file, as nginx's proxy_buffers (8 of 8 KiB) hold an answer first: a
 * client only a little behind costs no file */
#define RELAY_SPOOL_AT (64u * 1024)

typedef struct relay {
    const proxy *p;
    proxy_origin *o;
    cshs_call *call;
    cshw_request *req;
    cshw_response *res;
    const cshw_options *wo;
    int whole;  /* the body fits the response buffer: it goes out in one piece */
    int failed; /* the origin failed (for its health) */
    /* a body passed on in pieces is buffered (proxy_buffer.h): read at
     * the origin's pace, sent from a temporary file at the client's */
    proxy_spool *sp;
    spool_writer sw;
    char buf[RELAY_BUF];
} relay;

/* What relay_run stopped for, when not at the end. */
enum { RELAY_WAIT_ORIGIN = 1, RELAY_WAIT_CLIENT, RELAY_TURN, RELAY_NO_WATCH };

/* One piece of the body onto ours: 0 to go on, 1 when the response ended
 * (the client left). */
static int relay_piece(relay *rl, ssize_t n)
{
    cshw_response *res = rl->res;
    spool_writer *sw = &rl->sw;
    /* a client that keeps up takes each piece as it comes (little queued
     * for it): only one that falls behind gets the rest through the file */
    if (rl->sp && !sw->full && cshw_response_queued(res) >= RELAY_SPOOL_AT) {
        const char *tmp = rl->wo ? rl->wo->temp_dir : NULL;
        int k = spool_write(rl->sp, sw, tmp, res, rl->buf, (size_t)n);
        if (k == 1) return 0;
        if (k == -EPIPE) return 1; /* the response failed: the client left */
        if (k < 0)
            error_log_printf(LOG_WARN,
                             "proxy %s %s: buffering in %s: %s; the rest at the client's pace",
                             cshw_request_method(rl->req), cshw_request_target(rl->req),
                             tmp ? tmp : "/tmp", strerror(-k));
        /* past its bounds: the rest at the client's pace, the origin
         * connection out of its pool's count while max_held allow */
        sw->detached = hold_connection(rl->sp, rl->call);
    }
    if (cshw_response_write(res, rl->buf, (size_t)n) < 0) return 1; /* the client left */
    if (!rl->whole && cshw_response_flush(res) < 0) return 1;
    return 0;
}

/* The origin's trailer fields onto ours (RFC 9110 §6.5), as gRPC behind
 * the proxy needs them: those that may be trailers, but the hop-by-hop
 * ones; the toolkit refuses the rest (RFC 9110 §6.5.1) and a response
 * whose length was declared, which the origin's chunked body never is. */
static void relay_trailers(relay *rl)
{
    for (size_t i = 0; i < cshs_call_trailer_count(rl->call); i++) {
        const char *value;
        const char *name = cshs_call_trailer_at(rl->call, i, &value);
        if (kind_of(name, strlen(name)) == F_HOP) continue;
        cshw_response_add_trailer(rl->res, name, value);
    }
}

/* Passes the body on until its end (1) or, when it may not wait
 * (`wait` 0), until one side has to be waited for (0, *why says which). */
static int relay_run(relay *rl, int wait, int *why)
{
    for (int turn = 0;; turn++) {
        if (!wait) {
            if (turn == RELAY_TURNS) {
                *why = RELAY_TURN;
                return 0;
            }
            /* the client takes no more for now (and nothing goes to the
             * file): the origin waits too */
            if ((!rl->sp || rl->sw.full) && cshw_response_queued(rl->res) >= RELAY_HIGH) {
                *why = RELAY_WAIT_CLIENT;
                return 0;
            }
        }
        ssize_t n = wait ? cshs_call_read(rl->call, rl->buf, sizeof rl->buf)
                         : cshs_call_read_nowait(rl->call, rl->buf, sizeof rl->buf);
        if (n == -EAGAIN && !wait) {
            *why = RELAY_WAIT_ORIGIN;
            return 0;
        }
        if (n == CSHS_CLIENT_E_CANCELED) {
            /* the client left while the origin was waited for: what was
             * sent of the answer is cut short */
            cshw_response_send_error(rl->res, 502);
            return 1;
        }
        if (n < 0) {
            rl->failed = proxy_origin_failed((int)n);
            fail(rl->o, rl->req, rl->res, (int)n, "reading the response:");
            return 1;
        }
        if (n == 0) {
            relay_trailers(rl);
            return 1;
        }
        if (relay_piece(rl, n)) return 1;
    }
}

/* The end of the relay: the call freed, the origin's health told. */
static void relay_end(relay *rl)
{
    cshs_call_free(rl->call);
    if (rl->sp) {
        spool_end(rl->sp, &rl->sw);
        if (rl->sw.detached) atomic_fetch_sub(&rl->sp->held, 1);
    }
    proxy_origin_done(rl->p, rl->o, rl->failed, mono_ms());
}

/* The origin's answer onto ours, once cshs_call_end returned `e` for it
 * (0: the head is here; < 0: the error): its status and fields, and the
 * relay of its body set up in rl (1). 0 when the answer is complete
 * already (an error page, the client left): the call freed, the origin
 * told. `early`: the origin answered before the client's whole body was
 * sent. */
static int answer_head(cshw_context *ctx, const proxy *p, proxy_origin *o, cshs_call *call,
                       int early, int e, relay *rl)
{
    cshw_request *req = cshw_context_request(ctx);
    cshw_response *res = cshw_context_response(ctx);
    if (e == CSHS_CLIENT_E_CANCELED) {
        /* the client left: nginx's 499, for the log; nobody reads it */
        proxy_origin_done(p, o, 0, mono_ms());
        error_log_printf(LOG_INFO,
                         "proxy %s %s -> %s: the client left, the request to the origin "
                         "was given up",
                         cshw_request_method(req), cshw_request_target(req), o->url);
        cshw_response_set_status(res, 499);
        cshw_response_close_connection(res);
        cshs_call_free(call);
        return 0;
    }
    if (e < 0) {
        proxy_origin_done(p, o, proxy_origin_failed(e), mono_ms());
        fail(o, req, res, e, call ? "sending the request:" : "connecting:");
        cshs_call_free(call);
        return 0;
    }

    if (cshs_call_status(call) == 101) {
        /* a WebSocket's switch (the client takes a 101 only when asked) */
        response_fields(ctx, o, call);
        int r = proxy_ws_start(ctx, p, o, call);
        if (r < 0) {
            proxy_origin_done(p, o, 0, mono_ms());
            error_log_printf(LOG_WARN, "proxy %s %s -> %s: cannot switch to the tunnel (%s)",
                             cshw_request_method(req), cshw_request_target(req), o->url,
                             strerror(-r));
            cshw_response_send_error(res, 502);
            cshs_call_free(call);
        }
        return 0;
    }
    cshw_response_set_status(res, cshs_call_status(call));
    cshw_response_disable_gzip(res);
    response_fields(ctx, o, call);
    /* the client's body was not read to its end: the connection cannot
     * carry another request (the engine reads what still comes, lingering,
     * before it closes) */
    if (early) cshw_response_close_connection(res);
    const csh_message *m = cshs_call_message(call);
    /* Content-Length as the origin sent it, the toolkit holding the body
     * to it (a body cut short by the origin closes the client's
     * connection); a body that fits the response buffer goes out whole,
     * any other is streamed, each piece sent as it comes (chunked when the
     * origin gave no length) */
    uint64_t length;
    if (origin_length(call, &length)) cshw_response_set_content_length(res, length);
    rl->p = p;
    rl->o = o;
    rl->call = call;
    rl->req = req;
    rl->res = res;
    rl->wo = cshw_context_options(ctx);
    rl->whole = goes_whole(m, rl->wo);
    rl->failed = 0;
    rl->sp = !rl->whole && p->spool && p->spool->on ? p->spool : NULL;
    spool_writer_init(&rl->sw);
    return 1;
}

/* The whole answer on this thread, waiting for each side in turn. */
static void answer_ended(cshw_context *ctx, const proxy *p, proxy_origin *o, cshs_call *call,
                         int early, int e)
{
    relay rl;
    int why;
    if (!answer_head(ctx, p, o, call, early, e, &rl)) return;
    relay_run(&rl, 1, &why);
    relay_end(&rl);
}

/* The same, cshs_call_end called here (after a failed write it returns
 * that error). */
static void answer(cshw_context *ctx, const proxy *p, proxy_origin *o, cshs_call *call, int early)
{
    answer_ended(ctx, p, o, call, early, cshs_call_end(call));
}

/* A request without a body whose handler deferred: what its continuation
 * needs (in the request's arena). */
typedef struct waiting {
    proxy *p;
    const proxy_route *r;
    proxy_origin *o; /* the origin it was sent to */
    int retried;     /* sent once more, to another origin */
    cshs_client_request rq;
    cshs_call *call;
    cshs_deferred *d;
    const cshw_options *wo; /* the toolkit's (the server's, for its life) */
    relay *rl;              /* the answer's body on its way (in the request's arena) */
    int early;              /* the origin answered before the client's whole body was sent */
} waiting;

static void origin_ready(void *arg);

/* The client left while its request waited for the origin (on the loop's
 * thread): the request to the origin is given up (its connection closed
 * when the request was out), and origin_ready ends ours. */
static void client_left(void *arg)
{
    waiting *wt = arg;
    if (wt->call) cshs_call_cancel(wt->call);
}

/* Whether a request may be sent again: a method that means the same done
 * twice (RFC 9110 §9.2.2), as nginx's proxy_next_upstream retries. */
static int idempotent(const char *method)
{
    static const char *const safe[] = {"GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE"};
    for (size_t i = 0; i < sizeof safe / sizeof safe[0]; i++)
        if (strcmp(method, safe[i]) == 0) return 1;
    return 0;
}

/* Sends wt's request to wt->o and waits for the answer on the loop: 0
 * waiting (origin_ready runs), or cshs_client_send_async's error (no call
 * made). 1 (nothing to wait for) runs origin_ready at once. */
static int send_waiting(waiting *wt)
{
    wt->rq.origin = wt->o->url;
    wt->call = NULL;
    int e = cshs_client_send_async(wt->p->client, &wt->rq, cshs_deferred_reactor(wt->d),
                                   origin_ready, wt, &wt->call);
    if (e == 1) origin_ready(wt);
    return e < 0 ? e : 0;
}

static void relay_on_loop(cshw_context *ctx, void *arg);

/* The origin sent more of the body, ended, failed, or its read deadline
 * passed: on the loop's thread. */
static void relay_ready(void *arg)
{
    waiting *wt = arg;
    cshs_deferred_resume(wt->d, relay_on_loop, wt);
}

/* The loop could not watch the origin's socket: the rest waits on a
 * thread of its own. */
static void relay_rest(cshw_context *ctx, void *arg)
{
    (void)ctx;
    waiting *wt = arg;
    int why;
    relay_run(wt->rl, 1, &why);
    relay_end(wt->rl);
}

/* The answer's body as events on the loop: as much as both sides take
 * now, then the continuation defers again until the origin sends more
 * (cshs_call_wait_body; a client that leaves meanwhile gives the call
 * up), the client takes more (cshs_deferred_on_drain), or, after
 * RELAY_TURNS pieces, the loop's other connections had their turn. */
static void relay_on_loop(cshw_context *ctx, void *arg)
{
    waiting *wt = arg;
    relay *rl = wt->rl;
    int why;
    if (relay_run(rl, 0, &why)) {
        relay_end(rl);
        return;
    }
    cshs_deferred *d = cshs_defer(ctx);
    if (!d) {
        /* out of memory for the wait: the answer is cut short rather
         * than waited for on the loop's thread */
        cshw_response_send_error(rl->res, 502);
        relay_end(rl);
        return;
    }
    wt->d = d;
    if (why == RELAY_WAIT_CLIENT) {
        cshs_deferred_on_drain(d, relay_on_loop, wt);
        return;
    }
    if (why == RELAY_TURN) {
        cshs_deferred_resume(d, relay_on_loop, wt);
        return;
    }
    cshs_deferred_on_abort(d, client_left, wt);
    int w = cshs_call_wait_body(rl->call, cshs_deferred_reactor(d), relay_ready, wt);
    if (w == 1)
        cshs_deferred_resume(d, relay_on_loop, wt);
    else if (w < 0)
        cshs_deferred_run(d, relay_rest, wt);
}

static void answer_later(cshw_context *ctx, void *arg)
{
    waiting *wt = arg;
    int e = cshs_call_end(wt->call);
    /* An origin that failed before any byte of its answer: the request goes
     * once to another origin, waiting on the loop again (a continuation
     * may defer anew), when it is idempotent or never reached the origin
     * (nginx's proxy_next_upstream) */
    if (e < 0 && !wt->retried && wt->r->norigins > 1 && proxy_origin_failed(e) &&
        (idempotent(wt->rq.method) || proxy_never_sent(e))) {
        cshs_deferred *d = cshs_defer(ctx);
        if (d) {
            int64_t now = mono_ms();
            proxy_origin *failed = wt->o;
            proxy_origin_done(wt->p, failed, 1, now);
            atomic_fetch_add_explicit(&failed->retried, 1, memory_order_relaxed);
            error_log_printf(LOG_WARN, "proxy %s %s -> %s: %s (%s); sent to another origin",
                             wt->rq.method, wt->rq.target, failed->url,
                             cshs_client_error_message(e), cshs_client_error_name(e));
            cshs_call_free(wt->call);
            wt->retried = 1;
            wt->d = d;
            cshs_deferred_on_abort(d, client_left, wt);
            wt->o = proxy_pick(wt->p, wt->r, failed, now);
            int r = send_waiting(wt);
            if (r < 0) {
                proxy_origin_done(wt->p, wt->o, 0, mono_ms());
                fail(wt->o, cshw_context_request(ctx), cshw_context_response(ctx), r,
                     "connecting:");
                cshs_deferred_resume(d, NULL, NULL);
            }
            return;
        }
    }
    wt->rl = cshw_arena_alloc(cshw_context_arena(ctx), sizeof *wt->rl);
    if (!wt->rl) {
        e = -ENOMEM;
        proxy_origin_done(wt->p, wt->o, 0, mono_ms());
        fail(wt->o, cshw_context_request(ctx), cshw_context_response(ctx), e, "answering:");
        cshs_call_free(wt->call);
        return;
    }
    if (answer_head(ctx, wt->p, wt->o, wt->call, wt->early, e, wt->rl)) relay_on_loop(ctx, wt);
}

/* The origin's head is here, or the call failed: on the loop's thread, or
 * on the thread that failed it (the client's tick at the acquire deadline,
 * say). The continuation runs on the loop's thread, and so does the
 * answer's body, as events (relay_on_loop). */
static void origin_ready(void *arg)
{
    waiting *wt = arg;
    cshs_deferred_resume(wt->d, answer_later, wt);
}

/* A request without a body, its handler deferred (0 when it could not
 * be: the caller proxies it itself). The request waits for a connection
 * and then for the origin's answer holding no thread: sent from here
 * with an idle connection, else by whichever thread gives one back, or
 * on a connect the loop sees through (cshs_client_send_async). */
static int proxy_deferred(proxy *p, const proxy_route *r, proxy_origin *o, cshw_context *ctx,
                          const cshs_client_request *rq)
{
    waiting *wt = cshw_arena_alloc(cshw_context_arena(ctx), sizeof *wt);
    cshs_deferred *d = wt ? cshs_defer(ctx) : NULL;
    if (!d) return 0;
    wt->p = p;
    wt->r = r;
    wt->o = o;
    wt->retried = 0;
    wt->early = 0;
    wt->rq = *rq; /* its strings and fields live in the request (arena, head) */
    wt->d = d;
    wt->wo = cshw_context_options(ctx);
    cshs_deferred_on_abort(d, client_left, wt);
    /* 0: origin_ready resumes it; 1: nothing to wait for (or the loop
     * could not watch the socket): resumed at once, the continuation runs
     * when this handler returns */
    int e = send_waiting(wt);
    if (e < 0) {
        proxy_origin_done(p, o, 0, mono_ms());
        fail(o, cshw_context_request(ctx), cshw_context_response(ctx), e, "connecting:");
        cshs_deferred_resume(d, NULL, NULL); /* the error page is all */
    }
    return 1;
}

/* A request whose body goes to the origin as it comes, on the loop
 * (--proxy-request-buffering no): the body's pieces are read as the
 * client sends them (cshs_deferred_on_body) and written as the origin
 * takes them (cshs_call_write_async), one piece at a time, so that each
 * side's pace holds the other back and no thread waits for either. Then
 * the answer goes as any other (answer_later). In the request's arena. */
typedef struct upload {
    waiting wt;
    size_t len; /* bytes of buf not taken by the origin yet (buf is the call's meanwhile) */
    int read;   /* a byte of the body was read: it can go nowhere else */
    int moved;  /* sent to another origin once already */
    char buf[RELAY_BUF];
} upload;

static void upload_pump(cshw_context *ctx, void *arg);

/* The request's head went, or a piece of its body, or the call failed:
 * on the loop's thread, or on the thread that handed the call a
 * connection. */
static void upload_sent(void *arg)
{
    upload *up = arg;
    cshs_deferred_resume(up->wt.d, upload_pump, up);
}

/* The origin answered before the body's end (2: a 413, a 401), or the
 * call failed (< 0): that answer, or the error, goes to the client. */
static void upload_answer(cshs_deferred *d, upload *up, int w)
{
    up->wt.early = w == 2;
    cshs_deferred_resume(d, answer_later, &up->wt);
}

/* An origin that was never reached, before a byte of the body was read:
 * the request goes to another origin of its route, once, as any request
 * that never reached its origin does (nginx's proxy_next_upstream). 1
 * when it went; 0 when it may not. */
static int upload_elsewhere(cshw_context *ctx, cshs_deferred *d, upload *up, int e)
{
    waiting *wt = &up->wt;
    if (up->read || up->moved || wt->r->norigins < 2 || !proxy_never_sent(e)) return 0;
    int64_t now = mono_ms();
    proxy_origin *failed = wt->o;
    proxy_origin_done(wt->p, failed, 1, now);
    atomic_fetch_add_explicit(&failed->retried, 1, memory_order_relaxed);
    error_log_printf(LOG_WARN, "proxy %s %s -> %s: %s (%s); sent to another origin", wt->rq.method,
                     wt->rq.target, failed->url, cshs_client_error_message(e),
                     cshs_client_error_name(e));
    cshs_call_free(wt->call);
    wt->call = NULL;
    up->moved = 1;
    wt->o = proxy_pick(wt->p, wt->r, failed, now);
    wt->rq.origin = wt->o->url;
    int r = cshs_client_send_async(wt->p->client, &wt->rq, cshs_deferred_reactor(d), upload_sent,
                                   up, &wt->call);
    if (r < 0) {
        proxy_origin_done(wt->p, wt->o, 0, mono_ms());
        fail(wt->o, cshw_context_request(ctx), cshw_context_response(ctx), r, "connecting:");
        cshs_deferred_resume(d, NULL, NULL);
    } else if (r == 1) {
        upload_sent(up);
    }
    return 1;
}

/* The body read and sent: the origin's answer is awaited on the loop. */
static void upload_end(cshs_deferred *d, upload *up)
{
    waiting *wt = &up->wt;
    int e = cshs_call_end_async(wt->call, cshs_deferred_reactor(d), origin_ready, wt);
    if (e == 0) return; /* origin_ready resumes the request */
    cshs_deferred_resume(d, answer_later, wt);
}

static void upload_pump(cshw_context *ctx, void *arg)
{
    upload *up = arg;
    waiting *wt = &up->wt;
    cshw_request *req = cshw_context_request(ctx);
    cshs_deferred *d = cshs_defer(ctx);
    if (!d) {
        /* out of memory for the wait: the request is given up rather
         * than waited for on the loop's thread */
        proxy_origin_done(wt->p, wt->o, 0, mono_ms());
        cshs_call_free(wt->call);
        cshw_response_send_error(cshw_context_response(ctx), 502);
        cshw_response_close_connection(cshw_context_response(ctx));
        return;
    }
    wt->d = d;
    cshs_deferred_on_abort(d, client_left, wt);
    for (int turn = 0;; turn++) {
        if (up->len == 0) {
            /* a call that failed or was answered asks for no more of the
             * body (a refused origin: no 100 Continue, nothing read) */
            int w = cshs_call_write_async(wt->call, NULL, 0, upload_sent, up);
            if (w < 0 && upload_elsewhere(ctx, d, up, w)) return;
            if (w != 0) {
                upload_answer(d, up, w);
                return;
            }
            if (turn == RELAY_TURNS) { /* the loop's other connections first */
                cshs_deferred_resume(d, upload_pump, up);
                return;
            }
            ssize_t n = cshw_request_read(req, up->buf, sizeof up->buf);
            if (n == -EAGAIN) {
                cshs_deferred_on_body(d, upload_pump, up);
                return;
            }
            if (n == 0) {
                upload_end(d, up);
                return;
            }
            if (n < 0) {
                /* the client's body failed: the toolkit answers it (400,
                 * 408, 413, or nothing to a client that left) and closes;
                 * the origin's connection is dropped with the unfinished
                 * request */
                proxy_origin_done(wt->p, wt->o, 0, mono_ms());
                cshs_call_free(wt->call);
                cshs_deferred_resume(d, NULL, NULL);
                return;
            }
            up->len = (size_t)n;
            up->read = 1;
        }
        int w = cshs_call_write_async(wt->call, up->buf, up->len, upload_sent, up);
        if (w == 1) return; /* upload_sent resumes the request */
        up->len = 0;
        if (w != 0) {
            upload_answer(d, up, w);
            return;
        }
    }
}

/* Starts an upload (0 when the handler could not defer: the caller
 * proxies it itself). The body is read once the request's head reached
 * the origin, so that a client that sent Expect: 100-continue is told to
 * go on only then. A body is never sent twice: an origin that could not
 * be reached passes the request on to another (upload_elsewhere), one
 * that failed after the first byte of the body was read does not. */
static int proxy_upload(proxy *p, const proxy_route *r, proxy_origin *o, cshw_context *ctx,
                        const cshs_client_request *rq)
{
    upload *up = cshw_arena_alloc(cshw_context_arena(ctx), sizeof *up);
    cshs_deferred *d = up ? cshs_defer(ctx) : NULL;
    if (!d) return 0;
    waiting *wt = &up->wt;
    memset(wt, 0, sizeof *wt);
    wt->p = p;
    wt->r = r;
    wt->o = o;
    wt->retried = 1; /* answer_later's retry: never, after the body went */
    wt->rq = *rq;    /* its strings and fields live in the request (arena, head) */
    wt->d = d;
    wt->wo = cshw_context_options(ctx);
    up->len = 0;
    up->read = up->moved = 0;
    cshs_deferred_on_abort(d, client_left, wt);
    int e = cshs_client_send_async(p->client, &wt->rq, cshs_deferred_reactor(d), upload_sent, up,
                                   &wt->call);
    if (e < 0) {
        proxy_origin_done(p, o, 0, mono_ms());
        fail(o, cshw_context_request(ctx), cshw_context_response(ctx), e, "connecting:");
        cshs_deferred_resume(d, NULL, NULL);
    } else if (e == 1) {
        upload_sent(up);
    }
    return 1;
}

void proxy_serve(proxy *p, const proxy_route *r, cshw_context *ctx, const char *target)
{
    cshw_request *req = cshw_context_request(ctx);
    cshw_response *res = cshw_context_response(ctx);
    cshs_client_header *fields;
    size_t nfields = request_fields(p, ctx, &fields);
    if (nfields == (size_t)-1) {
        cshw_response_send_error(res, 500);
        return;
    }
    proxy_origin *o = proxy_pick(p, r, NULL, mono_ms());
    cshs_client_request rq;
    cshs_client_request_init(&rq);
    rq.origin = o->url;
    rq.method = cshw_request_method(req);
    rq.target = target;
    rq.headers = fields;
    rq.num_headers = nfields;
    if (proxy_ws_asked(req)) rq.upgrade = "websocket";
    int64_t cl = cshw_request_content_length(req);
    const char *stored;
    int stored_fd;
    uint64_t stored_len;
    if (cl != 0 && cshw_request_body_whole(req, &stored, &stored_fd, &stored_len) == 1) {
        /* read whole by the engine (request_buffering): sent from where
         * it is, with its length (a chunked one decoded), nothing to wait
         * for but the origin */
        if (stored_fd >= 0) {
            rq.body_mode = CSHS_CLIENT_BODY_FILE;
            rq.body_fd = stored_fd;
            rq.body_offset = 0;
        }
        rq.body = stored;
        rq.body_len = (size_t)stored_len;
    } else if (cl < 0) {
        rq.body_mode = CSHS_CLIENT_BODY_CHUNKED;
    } else if (cl > 0) {
        rq.body_mode = CSHS_CLIENT_BODY_LENGTH;
        rq.content_length = (uint64_t)cl;
    }
    if (p->timeout_ms) rq.head_timeout_ms = rq.read_timeout_ms = p->timeout_ms;

    /* Nothing more to send: the origin's answer is waited for on the
     * connection's loop when the engine lets this handler defer (it runs
     * on its loop's thread); else here. */
    int whole = rq.body_mode == CSHS_CLIENT_BODY_WHOLE || rq.body_mode == CSHS_CLIENT_BODY_FILE;
    if (whole && proxy_deferred(p, r, o, ctx, &rq)) return;
    if (!whole && proxy_upload(p, r, o, ctx, &rq)) return;
    cshs_call *call = NULL;
    int e = cshs_client_begin(p->client, &rq, &call);
    if (e < 0 && r->norigins > 1 && proxy_never_sent(e)) {
        /* nothing reached the origin, and no byte of the body was read:
         * another origin gets the request, whatever its method */
        int64_t now = mono_ms();
        proxy_origin_done(p, o, 1, now);
        atomic_fetch_add_explicit(&o->retried, 1, memory_order_relaxed);
        error_log_printf(LOG_WARN, "proxy %s %s -> %s: %s (%s); sent to another origin", rq.method,
                         rq.target, o->url, cshs_client_error_message(e), cshs_client_error_name(e));
        proxy_origin *failed = o;
        o = proxy_pick(p, r, failed, now);
        rq.origin = o->url;
        e = cshs_client_begin(p->client, &rq, &call);
    }
    if (e < 0) {
        answer_ended(ctx, p, o, NULL, 0, e);
        return;
    }
    if (whole) {
        answer(ctx, p, o, call, 0);
        return;
    }
    char buf[16384];
    int early = 0; /* the origin answered before the whole body was sent */
    /* the first read answers Expect: 100-continue: the client sends its
     * body once the origin was reached and its head sent */
    for (;;) {
        ssize_t n = cshw_request_read(req, buf, sizeof buf);
        if (n < 0) {
            /* the client's body failed: the toolkit answers it (400,
             * 408, 413) and closes; the origin's connection is dropped
             * with the unfinished request */
            cshs_call_free(call);
            proxy_origin_done(p, o, 0, mono_ms());
            return;
        }
        if (n == 0) break;
        e = cshs_call_write(call, buf, (size_t)n);
        if (e < 0) break;
        if (e == 1) { /* a 413, a 401...: the rest of the body is not sent */
            early = 1;
            break;
        }
    }
    answer(ctx, p, o, call, early);
}
