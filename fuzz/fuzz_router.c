/* fuzz_router: route patterns and matching (cshw_router).
 *
 * Input: lines. Each line but the last is a route, "METHOD PATTERN" (up to
 * 8); the last is the request, "METHOD PATH" (the path keeps only bytes
 * that a request-target allows, without '%' and '.', and with its slashes
 * merged, so that the decoded path is the path as sent). Checks:
 *   - cshw_router_add returns 0 or a negative error, and on an error
 *     cshw_router_error names the pattern;
 *   - dispatching the request gives one well-framed response, with a
 *     status among 200 (a route ran), 204, 400, 404, 405 and 501; the same
 *     bytes when served twice;
 *   - a route that ran accepts the request's method (the same token, "*",
 *     or GET for HEAD) and its literal segments equal the path's segments
 *     at the same places, up to a wildcard; with no wildcard it has as
 *     many segments as the path;
 *   - 405 carries Allow; 501 only for a method outside the nine of RFC 9110.
 * Self-contained: links only libcshttp-web (and libcshttp). */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cshttp/web/router.h>

#include "../libcshttp-web/tests/tw.h"
#include "web_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { MAX_ROUTES = 8 };
static char methods[MAX_ROUTES][64], patterns[MAX_ROUTES][256];
static size_t nroutes;
static cshw_router *router;

#define H(i)                                                                                       \
    static void h##i(cshw_context *ctx)                                                            \
    {                                                                                              \
        cshw_response_printf(cshw_context_response(ctx), "route=%d", i);                          \
    }
H(0) H(1) H(2) H(3) H(4) H(5) H(6) H(7)
static const cshw_handler handlers[MAX_ROUTES] = {h0, h1, h2, h3, h4, h5, h6, h7};

static void dispatch(cshw_context *ctx)
{
    cshw_router_dispatch(router, ctx);
}

/* the i-th '/'-separated segment of s (s starts with '/'), or NULL */
static const char *segment(const char *s, size_t i, size_t *len)
{
    if (*s != '/') return NULL;
    s++;
    for (; i > 0; i--) {
        s = strchr(s, '/');
        if (!s) return NULL;
        s++;
    }
    const char *e = strchr(s, '/');
    *len = e ? (size_t)(e - s) : strlen(s);
    return s;
}

static size_t count_segments(const char *s)
{
    size_t n = 0;
    for (; *s; s++) n += *s == '/';
    return n;
}

static void check_route(size_t i, const char *method, const char *path)
{
    const char *rm = methods[i];
    CHECK(strcmp(rm, method) == 0 || strcmp(rm, "*") == 0 ||
              (strcmp(method, "HEAD") == 0 && strcmp(rm, "GET") == 0),
          "route %s %s ran for %s", rm, patterns[i], method);
    const char *pat = patterns[i];
    int wildcard = 0;
    for (size_t k = 0;; k++) {
        size_t pl, sl;
        const char *ps = segment(pat, k, &pl);
        if (!ps) break;
        if (pl == 1 && ps[0] == '*') {
            wildcard = 1;
            break;
        }
        const char *ss = segment(path, k, &sl);
        CHECK(ss, "route %s has more segments than %s", pat, path);
        if (pl > 0 && ps[0] == '{') continue;
        CHECK(pl == sl && memcmp(ps, ss, pl) == 0, "route %s ran for %s (segment %zu)", pat, path,
              k);
    }
    if (!wildcard)
        CHECK(count_segments(pat) == count_segments(path), "route %s ran for %s", pat, path);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *lines[MAX_ROUTES + 1];
    size_t nlines = 0, start = 0;
    for (size_t i = 0; i <= size && nlines < MAX_ROUTES + 1; i++) {
        if (i < size && data[i] != '\n') continue;
        lines[nlines] = malloc(i - start + 1);
        memcpy(lines[nlines], data + start, i - start);
        lines[nlines][i - start] = '\0';
        nlines++;
        start = i + 1;
    }
    if (nlines < 2) goto out;

    router = cshw_router_new();
    CHECK(router, "cshw_router_new");
    nroutes = 0;
    for (size_t i = 0; i + 1 < nlines; i++) {
        char *sp = strchr(lines[i], ' ');
        if (!sp) continue;
        *sp = '\0';
        snprintf(methods[nroutes], sizeof methods[nroutes], "%s", lines[i]);
        snprintf(patterns[nroutes], sizeof patterns[nroutes], "%s", sp + 1);
        int r = cshw_router_add(router, methods[nroutes], patterns[nroutes], handlers[nroutes]);
        CHECK(r == 0 || r < 0, "cshw_router_add %d", r);
        if (r == 0) {
            CHECK(cshw_router_error(router) == NULL, "an error after a success");
            nroutes++;
        } else {
            CHECK(cshw_router_error(router) != NULL, "no message for error %d", r);
        }
    }

    /* the request: a method token and a path of request-target bytes */
    const char *req_line = lines[nlines - 1];
    char method[32], path[256];
    size_t m = 0, p = 0;
    const char *s = req_line;
    while (*s && *s != ' ' && m < 16) {
        unsigned char c = (unsigned char)*s++;
        if ((c >= 'A' && c <= 'Z') || c == '-' || c == '_') method[m++] = (char)c;
    }
    method[m] = '\0';
    if (m == 0) strcpy(method, "GET"), m = 3;
    while (*s == ' ') s++;
    path[p++] = '/';
    for (; *s && p < sizeof path - 1; s++) {
        unsigned char c = (unsigned char)*s;
        /* slashes merged and no dots: the decoded path is the path itself */
        if (c == '/' && path[p - 1] == '/') continue;
        if (c > 0x20 && c < 0x7f && c != '%' && c != '?' && c != '#' && c != '.')
            path[p++] = (char)c;
    }
    path[p] = '\0';

    char req[512];
    int len = snprintf(req, sizeof req, "%s %s HTTP/1.1\r\nHost: a\r\n%s\r\n", method, path,
                       strcmp(method, "POST") == 0 || strcmp(method, "PUT") == 0
                           ? "Content-Length: 0\r\n"
                           : "");
    tw_run run, again;
    tw_serve(&run, req, (size_t)len, 0, NULL, dispatch);
    tw_serve(&again, req, (size_t)len, 0, NULL, dispatch);
    CHECK(run.out_len == again.out_len, "two dispatches differ in length");
    /* the Date field may tick between the two: compare the status lines */
    CHECK(run.n == again.n && (run.n == 0 || run.r[0].status == again.r[0].status),
          "two dispatches differ");
    CHECK(run.error == 0 && run.n == 1, "output is not one response (%d, %zu)", run.error, run.n);
    const tw_response *t = &run.r[0];
    int st = t->status;
    CHECK(st == 200 || st == 204 || st == 400 || st == 404 || st == 405 || st == 501,
          "status %d", st);
    if (st == 200 && strcmp(method, "HEAD") != 0) {
        int i;
        CHECK(sscanf(t->body, "route=%d", &i) == 1 && i >= 0 && (size_t)i < nroutes, "body %s",
              t->body);
        check_route((size_t)i, method, path);
    }
    if (st == 405) CHECK(tw_field(t, "allow") != NULL, "405 without Allow");
    if (st == 501) {
        static const char *const known[] = {"GET",     "HEAD",    "POST",  "PUT",  "DELETE",
                                            "CONNECT", "OPTIONS", "TRACE", "PATCH"};
        for (size_t k = 0; k < sizeof known / sizeof known[0]; k++)
            CHECK(strcmp(method, known[k]) != 0, "501 for %s", method);
    }
    tw_free(&run);
    tw_free(&again);
    cshw_router_free(router);
    router = NULL;
out:
    for (size_t i = 0; i < nlines; i++) free(lines[i]);
    return 0;
}
