/* cshw_router through the in-memory transport: precedence whatever the
 * insertion order, backtracking, parameters (decoded) and the wildcard,
 * 404, 405 with Allow, 501 for unknown methods, HEAD through GET, OPTIONS,
 * static fallback, pattern validation, duplicates, many routes, dispatch
 * from several threads. */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include <cshttp/parser.h>

#include "cshttp/web/context.h"
#include "cshttp/web/error.h"
#include "cshttp/web/memory.h"
#include "cshttp/web/response.h"
#include "cshttp/web/router.h"
#include "cshttp/web/static.h"

/* ---- a client on the memory transport ---- */

static cshw_router *R; /* the router the application handler dispatches to */

static void app(cshw_context *ctx)
{
    cshw_router_dispatch(R, ctx);
}

typedef struct reply {
    int status;
    char head[4096]; /* status line and fields, NUL-terminated */
    char body[8192];
    size_t body_len;
    char value[512]; /* the last header() result */
} reply;

/* Serves raw bytes (one request) and splits the response. */
static void serve_raw(const char *raw, reply *out)
{
    memset(out, 0, sizeof *out);
    cshw_memory *m = cshw_memory_new(raw, strlen(raw), 0);
    assert_non_null(m);
    int served = cshw_memory_serve(m, NULL, app);
    size_t n;
    const char *o = cshw_memory_output(m, &n);
    char *copy = malloc(n + 1);
    assert_non_null(copy);
    memcpy(copy, o, n);
    copy[n] = '\0';
    cshw_memory_free(m);
    assert_int_equal(served, 1);
    const char *end = strstr(copy, "\r\n\r\n");
    assert_non_null(end);
    size_t hl = (size_t)(end - copy);
    assert_true(hl < sizeof out->head);
    memcpy(out->head, copy, hl);
    out->body_len = n - hl - 4;
    assert_true(out->body_len < sizeof out->body);
    memcpy(out->body, end + 4, out->body_len);
    assert_int_equal(strncmp(copy, "HTTP/1.1 ", 9), 0);
    out->status = atoi(copy + 9);
    free(copy);
}

static void request(const char *method, const char *target, reply *out)
{
    char raw[4096];
    snprintf(raw, sizeof raw, "%s %s HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n", method,
             target);
    serve_raw(raw, out);
}

/* The value of response field `name`, or NULL. */
static const char *header(reply *r, const char *name)
{
    size_t len = strlen(name);
    for (const char *p = strstr(r->head, "\r\n"); p; p = strstr(p + 2, "\r\n")) {
        if (strncasecmp(p + 2, name, len) == 0 && p[2 + len] == ':') {
            const char *v = p + 3 + len;
            while (*v == ' ') v++;
            const char *e = strstr(v, "\r\n");
            size_t vl = e ? (size_t)(e - v) : strlen(v);
            assert_true(vl < sizeof r->value);
            memcpy(r->value, v, vl);
            r->value[vl] = '\0';
            return r->value;
        }
    }
    return NULL;
}

/* The body as a string (handlers here write text). */
static const char *body(reply *r)
{
    r->body[r->body_len] = '\0';
    return r->body;
}

/* ---- handlers: each writes its tag, then "name=value" per parameter ---- */

static _Thread_local const char *last_tag;
static _Thread_local int calls;

static void emit(cshw_context *ctx, const char *tag)
{
    cshw_response *res = cshw_context_response(ctx);
    last_tag = tag;
    calls++;
    cshw_response_set_content_type(res, "text/plain", NULL);
    cshw_response_puts(res, tag);
    const cshw_pairs *ps = cshw_context_params(ctx);
    for (size_t i = 0; ps && i < ps->count; i++)
        cshw_response_printf(res, " %s=%s", ps->items[i].name, ps->items[i].value);
}

#define HANDLER(tag)                                                                               \
    static void h_##tag(cshw_context *ctx)                                                         \
    {                                                                                              \
        emit(ctx, #tag);                                                                           \
    }
HANDLER(me)
HANDLER(id)
HANDLER(rest)
HANDLER(list)
HANDLER(post)
HANDLER(get)
HANDLER(put)
HANDLER(del)
HANDLER(head)
HANDLER(any)
HANDLER(options)
HANDLER(slash)
HANDLER(root)
HANDLER(a)
HANDLER(b)
HANDLER(c)

static int setup(void **state)
{
    (void)state;
    R = cshw_router_new();
    last_tag = NULL;
    calls = 0;
    return R ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    cshw_router_free(R);
    R = NULL;
    return 0;
}

static void add_ok(const char *method, const char *pattern, cshw_handler h)
{
    int rc = cshw_router_add(R, method, pattern, h);
    if (rc != 0)
        fail_msg("%s %s: %s (%s)", method, pattern, cshw_error_name(rc),
                 cshw_router_error(R) ? cshw_router_error(R) : "");
    assert_null(cshw_router_error(R));
}

static void expect(const char *method, const char *target, int status, const char *text)
{
    reply r;
    request(method, target, &r);
    if (r.status != status || (text && strcmp(body(&r), text) != 0))
        fail_msg("%s %s: got %d \"%s\", want %d \"%s\"", method, target, r.status, body(&r), status,
                 text ? text : "(any)");
}

/* ---- precedence ---- */

static void test_precedence_in_every_insertion_order(void **state)
{
    static const char *patterns[3] = {"/users/me", "/users/{id}", "/users/*"};
    static const cshw_handler handlers[3] = {h_me, h_id, h_rest};
    static const int orders[6][3] = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2},
                                     {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
    for (int o = 0; o < 6; o++) {
        if (o) {
            teardown(state);
            setup(state);
        }
        for (int i = 0; i < 3; i++) add_ok("GET", patterns[orders[o][i]], handlers[orders[o][i]]);
        expect("GET", "/users/me", 200, "me");
        expect("GET", "/users/42", 200, "id id=42");
        expect("GET", "/users/mine", 200, "id id=mine");
        expect("GET", "/users/m", 200, "id id=m");
        expect("GET", "/users/me/photos", 200, "rest *=me/photos");
        expect("GET", "/users/42/a/b", 200, "rest *=42/a/b");
        /* a parameter never matches an empty segment: the wildcard does */
        expect("GET", "/users/", 200, "rest *=");
        expect("GET", "/users", 404, NULL);
        expect("GET", "/user", 404, NULL);
        expect("GET", "/users2/me", 404, NULL);
    }
}

static void test_backtracking_tries_the_next_choice(void **state)
{
    (void)state;
    add_ok("GET", "/users/me/settings", h_me);
    add_ok("GET", "/users/{id}/posts", h_id);
    add_ok("GET", "/a/{x}/c", h_a);
    add_ok("GET", "/a/*", h_rest);
    add_ok("GET", "/a/b/{y}/e", h_b);
    /* the literal "me" leads nowhere for "posts": the parameter takes it */
    expect("GET", "/users/me/posts", 200, "id id=me");
    expect("GET", "/users/me/settings", 200, "me");
    expect("GET", "/users/me/other", 404, NULL);
    expect("GET", "/a/b/c", 200, "a x=b");
    expect("GET", "/a/b/d", 200, "rest *=b/d");
    expect("GET", "/a/b/d/e", 200, "b y=d");
    expect("GET", "/a/b/d/f", 200, "rest *=b/d/f");
    expect("GET", "/a/z/c", 200, "a x=z");
}

static void test_specific_method_before_any_and_passed_over_methods(void **state)
{
    (void)state;
    add_ok("*", "/users/me", h_any);
    add_ok("GET", "/users/{id}", h_get);
    add_ok("POST", "/users/{id}", h_post);
    add_ok("DELETE", "/users/me", h_del);
    add_ok("PUT", "/things/me", h_put);
    add_ok("POST", "/things/{id}", h_post);
    /* the literal wins over the parameter even when only "*" is there */
    expect("GET", "/users/me", 200, "any");
    expect("PATCH", "/users/me", 200, "any");
    expect("DELETE", "/users/me", 200, "del");
    expect("GET", "/users/7", 200, "get id=7");
    /* a path match for another method is passed over */
    expect("POST", "/things/me", 200, "post id=me");
    expect("PUT", "/things/me", 200, "put");
}

static void test_root_trailing_slash_and_root_wildcard(void **state)
{
    (void)state;
    add_ok("GET", "/", h_root);
    add_ok("GET", "/users", h_list);
    add_ok("GET", "/users/", h_slash);
    expect("GET", "/", 200, "root");
    expect("GET", "/users", 200, "list");
    expect("GET", "/users/", 200, "slash");
    expect("GET", "/users//", 200, "slash"); /* the decoded path merges slashes */
    expect("GET", "//users", 200, "list");
    expect("GET", "/x", 404, NULL);
    add_ok("GET", "/*", h_rest);
    expect("GET", "/", 200, "root");
    expect("GET", "/x", 200, "rest *=x");
    expect("GET", "/users/a", 200, "rest *=users/a");
    expect("GET", "/users", 200, "list");
    /* the query string is not part of the path */
    expect("GET", "/users/?page=2", 200, "slash");
}

/* ---- parameters ---- */

static void test_parameters_are_decoded_segments(void **state)
{
    (void)state;
    add_ok("GET", "/users/{id}", h_id);
    add_ok("GET", "/orgs/{org}/repos/{repo-name}/issues/{n_1}", h_a);
    add_ok("GET", "/files/{dir}/*", h_rest);
    add_ok("GET", "/caf\xc3\xa9/{x}", h_c);
    expect("GET", "/users/J%C3%B6rg", 200, "id id=J\xc3\xb6rg");
    expect("GET", "/users/a%20b", 200, "id id=a b");
    expect("GET", "/users/a+b", 200, "id id=a+b");
    expect("GET", "/orgs/acme/repos/web/issues/12", 200, "a org=acme repo-name=web n_1=12");
    expect("GET", "/files/d%C3%A9/a%20b/c.txt", 200, "rest dir=d\xc3\xa9 *=a b/c.txt");
    expect("GET", "/files/d/", 200, "rest dir=d *=");
    expect("GET", "/files/d", 404, NULL);
    /* a literal is compared with the decoded path */
    expect("GET", "/caf%C3%A9/1", 200, "c x=1");
    /* dot segments are resolved before matching */
    expect("GET", "/users/x/../42", 200, "id id=42");
}

static void check_params(cshw_context *ctx)
{
    assert_string_equal(cshw_context_param(ctx, "org"), "a b");
    assert_string_equal(cshw_context_param(ctx, "*"), "x/y");
    assert_null(cshw_context_param(ctx, "id"));
    const cshw_pair *p = cshw_pairs_find(cshw_context_params(ctx), "org");
    assert_non_null(p);
    assert_int_equal(p->value_len, 3);
    assert_int_equal(p->name_len, 3);
    emit(ctx, "checked");
}
static void no_params(cshw_context *ctx)
{
    const cshw_pairs *ps = cshw_context_params(ctx);
    assert_true(ps == NULL || ps->count == 0);
    emit(ctx, "none");
}
static void test_more_parameters_than_the_stack_holds(void **state)
{
    (void)state;
    char pattern[512] = "", target[512] = "", want[1024] = "a";
    for (int i = 0; i < 40; i++) {
        snprintf(pattern + strlen(pattern), sizeof pattern - strlen(pattern), "/{p%d}", i);
        snprintf(target + strlen(target), sizeof target - strlen(target), "/v%d", i);
        snprintf(want + strlen(want), sizeof want - strlen(want), " p%d=v%d", i, i);
    }
    add_ok("GET", pattern, h_a);
    add_ok("GET", "/{one}", h_b);
    expect("GET", target, 200, want);
    expect("GET", "/x", 200, "b one=x");
}

static void test_parameter_values_through_context_param(void **state)
{
    (void)state;
    add_ok("GET", "/o/{org}/*", check_params);
    add_ok("GET", "/plain", no_params);
    expect("GET", "/o/a%20b/x/y", 200, "checked org=a b *=x/y");
    expect("GET", "/plain", 200, "none");
}

/* ---- 400, 404, 405, HEAD, OPTIONS ---- */

static void test_not_found(void **state)
{
    (void)state;
    expect("GET", "/", 404, NULL); /* no routes at all */
    add_ok("GET", "/a/b", h_a);
    reply r;
    request("GET", "/a/c", &r);
    assert_int_equal(r.status, 404);
    assert_null(header(&r, "Allow"));
    assert_int_equal(calls, 0);
    expect("GET", "/a", 404, NULL);
    expect("GET", "/a/b/c", 404, NULL);
    expect("GET", "/A/B", 404, NULL); /* case-sensitive */
    expect("POST", "/nothing", 404, NULL);
}

static void test_undecodable_path_is_400(void **state)
{
    (void)state;
    add_ok("*", "/*", h_rest);
    expect("GET", "/a%2Fb", 400, NULL);
    expect("GET", "/a/%00", 400, NULL);
    expect("GET", "/../etc/passwd", 400, NULL);
    assert_int_equal(calls, 0);
    /* the page names the reason */
    reply r;
    request("GET", "/a/../../b", &r);
    assert_int_equal(r.status, 400);
    assert_non_null(strstr(body(&r), "climbs above the root"));
    request("GET", "/a%2Fb", &r);
    assert_non_null(strstr(body(&r), "encoded"));
    expect("GET", "/a/b", 200, "rest *=a/b");
}

static void test_405_carries_the_exact_allow(void **state)
{
    (void)state;
    add_ok("GET", "/r", h_get);
    add_ok("PUT", "/r", h_put);
    add_ok("DELETE", "/r", h_del);
    add_ok("POST", "/other", h_post);
    reply r;
    request("POST", "/r", &r);
    assert_int_equal(r.status, 405);
    assert_string_equal(header(&r, "Allow"), "DELETE, GET, HEAD, OPTIONS, PUT");
    assert_int_equal(calls, 0);
    /* an unknown method, and one in the wrong case (methods are
     * case-sensitive): not implemented, not "not allowed" (RFC 9110 §9.1) */
    request("BREW", "/r", &r);
    assert_int_equal(r.status, 501);
    request("get", "/r", &r);
    assert_int_equal(r.status, 501);
    /* no GET: no HEAD */
    request("GET", "/other", &r);
    assert_int_equal(r.status, 405);
    assert_string_equal(header(&r, "Allow"), "OPTIONS, POST");
}

static void test_allow_is_the_union_of_every_matching_pattern(void **state)
{
    (void)state;
    add_ok("GET", "/x/{id}", h_get);
    add_ok("PATCH", "/x/*", h_any);
    add_ok("HEAD", "/x/me", h_head);
    add_ok("PUT", "/x/{id}/y", h_put); /* does not match /x/1 */
    add_ok("POST", "/y/{id}", h_post);
    reply r;
    request("POST", "/x/1", &r);
    assert_int_equal(r.status, 405);
    assert_string_equal(header(&r, "Allow"), "GET, HEAD, OPTIONS, PATCH");
    request("DELETE", "/x/me", &r);
    assert_int_equal(r.status, 405);
    assert_string_equal(header(&r, "Allow"), "GET, HEAD, OPTIONS, PATCH");
    request("DELETE", "/x/1/2", &r);
    assert_string_equal(header(&r, "Allow"), "OPTIONS, PATCH");
    expect("PATCH", "/x/1", 200, "any *=1");
}

static void test_head_is_served_by_get(void **state)
{
    (void)state;
    add_ok("GET", "/page", h_get);
    add_ok("GET", "/both", h_get);
    add_ok("HEAD", "/both", h_head);
    add_ok("*", "/star", h_any);
    add_ok("POST", "/post", h_post);
    add_ok("*", "/get-and-any", h_any);
    add_ok("GET", "/get-and-any", h_get);
    reply r;
    request("HEAD", "/get-and-any", &r);
    assert_string_equal(last_tag, "get");
    calls = 0;
    request("HEAD", "/page", &r);
    assert_int_equal(r.status, 200);
    assert_string_equal(last_tag, "get");
    assert_int_equal(r.body_len, 0); /* the response layer drops the body */
    assert_string_equal(header(&r, "Content-Length"), "3");
    request("HEAD", "/both", &r);
    assert_int_equal(r.status, 200);
    assert_string_equal(last_tag, "head");
    request("HEAD", "/star", &r);
    assert_string_equal(last_tag, "any");
    request("HEAD", "/post", &r);
    assert_int_equal(r.status, 405);
    assert_int_equal(r.body_len, 0);
    assert_string_equal(header(&r, "Allow"), "OPTIONS, POST");
    assert_int_equal(calls, 3);
}

static void test_options_is_answered_with_allow(void **state)
{
    (void)state;
    add_ok("GET", "/r", h_get);
    add_ok("POST", "/r", h_post);
    add_ok("OPTIONS", "/custom", h_options);
    add_ok("GET", "/custom", h_get);
    add_ok("*", "/star", h_any);
    add_ok("PROPFIND", "/dav/*", h_any);
    reply r;
    request("OPTIONS", "/r", &r);
    assert_int_equal(r.status, 204);
    assert_string_equal(header(&r, "Allow"), "GET, HEAD, OPTIONS, POST");
    assert_int_equal(r.body_len, 0);
    assert_int_equal(calls, 0);
    expect("OPTIONS", "/custom", 200, "options");
    expect("OPTIONS", "/star", 200, "any");
    expect("OPTIONS", "/nothing", 404, NULL);
    /* the server as a whole */
    request("OPTIONS", "*", &r);
    assert_int_equal(r.status, 204);
    assert_string_equal(header(&r, "Allow"), "GET, HEAD, OPTIONS, POST, PROPFIND");
}

/* ---- validation ---- */

static void test_invalid_patterns_are_refused_with_a_reason(void **state)
{
    (void)state;
    static const struct {
        const char *method, *pattern;
        int code;
        const char *why; /* in cshw_router_error */
    } cases[] = {
        {"GET", "", CSHW_E_ROUTE_PATTERN_START, "at byte 0"},
        {"GET", "users", CSHW_E_ROUTE_PATTERN_START, "start with '/'"},
        {"GET", "*", CSHW_E_ROUTE_PATTERN_START, "start with '/'"},
        {"GET", "/a/{}", CSHW_E_ROUTE_PARAM_EMPTY, "empty parameter name at byte 3"},
        {"GET", "/{}/a", CSHW_E_ROUTE_PARAM_EMPTY, "at byte 1"},
        {"GET", "/a/{id}/b/{id}", CSHW_E_ROUTE_PARAM_DUPLICATE, "used twice at byte 10"},
        {"GET", "/a/{id", CSHW_E_ROUTE_PARAM_INVALID, "whole segment"},
        {"GET", "/a/id}", CSHW_E_ROUTE_PARAM_INVALID, "at byte 5"},
        {"GET", "/a/{id}.json", CSHW_E_ROUTE_PARAM_INVALID, "whole segment"},
        {"GET", "/a/x{id}", CSHW_E_ROUTE_PARAM_INVALID, "at byte 4"},
        {"GET", "/a/{i d}", CSHW_E_ROUTE_PARAM_INVALID, "at byte 5"},
        {"GET", "/a/{*}", CSHW_E_ROUTE_PARAM_INVALID, "name"},
        {"GET", "/a/{{id}}", CSHW_E_ROUTE_PARAM_INVALID, "name"},
        {"GET", "/*/a", CSHW_E_ROUTE_WILDCARD_NOT_LAST, "at byte 1"},
        {"GET", "/a/*/", CSHW_E_ROUTE_WILDCARD_NOT_LAST, "before the last"},
        {"GET", "/a*", CSHW_E_ROUTE_WILDCARD_NOT_LAST, "inside a segment at byte 2"},
        {"GET", "/a/**", CSHW_E_ROUTE_WILDCARD_NOT_LAST, "inside"},
        {"GET", "/a b", CSHW_E_ROUTE_PATTERN_CHAR, "at byte 2"},
        {"GET", "/a%20b", CSHW_E_ROUTE_PATTERN_CHAR, "decoded path"},
        {"GET", "/a?x=1", CSHW_E_ROUTE_PATTERN_CHAR, "at byte 2"},
        {"GET", "/a#f", CSHW_E_ROUTE_PATTERN_CHAR, "not allowed"},
        {"GET", "/a\tb", CSHW_E_ROUTE_PATTERN_CHAR, "GET /a?b: character"},
        {"GET", "/a\x7f", CSHW_E_ROUTE_PATTERN_CHAR, "at byte 2"},
        {"GET", "/a\\b", CSHW_E_ROUTE_PATTERN_CHAR, "at byte 2"},
        {"GET", "//", CSHW_E_ROUTE_PATTERN_SEGMENT, "empty segment at byte 1"},
        {"GET", "/a//b", CSHW_E_ROUTE_PATTERN_SEGMENT, "empty segment at byte 3"},
        {"GET", "/a/./b", CSHW_E_ROUTE_PATTERN_SEGMENT, "dot segment"},
        {"GET", "/a/..", CSHW_E_ROUTE_PATTERN_SEGMENT, "dot segment at byte 3"},
        {"", "/a", CSHW_E_ROUTE_METHOD_INVALID, "not a token"},
        {"GE T", "/a", CSHW_E_ROUTE_METHOD_INVALID, "not a token"},
        {"GET\r\n", "/a", CSHW_E_ROUTE_METHOD_INVALID, "not a token"},
        {"**", "/a", CSHW_E_ROUTE_METHOD_INVALID, NULL}, /* "**" is a token: accepted */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int rc = cshw_router_add(R, cases[i].method, cases[i].pattern, h_a);
        if (!cases[i].why) {
            assert_int_equal(rc, 0);
            continue;
        }
        if (rc != cases[i].code)
            fail_msg("\"%s %s\": %s, want %s", cases[i].method, cases[i].pattern,
                     cshw_error_name(rc), cshw_error_name(cases[i].code));
        const char *why = cshw_router_error(R);
        assert_non_null(why);
        if (!strstr(why, cases[i].why))
            fail_msg("\"%s %s\": \"%s\" lacks \"%s\"", cases[i].method, cases[i].pattern, why,
                     cases[i].why);
        assert_int_equal(cshw_error_status(rc), 500);
        assert_non_null(strstr(cshw_error_message(rc), "route"));
    }
    /* the failures added nothing */
    expect("GET", "/a/x", 404, NULL);
    expect("GET", "/a/1/b/2", 404, NULL);
    assert_int_equal(cshw_router_add(R, "GET", "/ok", h_b), 0);
    assert_null(cshw_router_error(R));
    expect("GET", "/ok", 200, "b");
    assert_int_equal(cshw_router_add(R, NULL, "/a", h_a), -EINVAL);
    assert_int_equal(cshw_router_add(R, "GET", NULL, h_a), -EINVAL);
    assert_int_equal(cshw_router_add(R, "GET", "/a", NULL), -EINVAL);
    assert_int_equal(cshw_router_add(NULL, "GET", "/a", h_a), -EINVAL);
    assert_non_null(cshw_router_error(R));
    cshw_router_free(NULL);
}

static void test_duplicates_by_method_and_shape(void **state)
{
    (void)state;
    add_ok("GET", "/users/{id}", h_id);
    assert_int_equal(cshw_router_add(R, "GET", "/users/{id}", h_a), CSHW_E_ROUTE_DUPLICATE);
    assert_non_null(strstr(cshw_router_error(R), "GET /users/{id}"));
    assert_int_equal(cshw_router_add(R, "GET", "/users/{uid}", h_a), CSHW_E_ROUTE_DUPLICATE);
    add_ok("POST", "/users/{uid}", h_post);
    add_ok("*", "/users/{x}", h_any);
    assert_int_equal(cshw_router_add(R, "*", "/users/{y}", h_a), CSHW_E_ROUTE_DUPLICATE);
    add_ok("GET", "/users/*", h_rest);
    assert_int_equal(cshw_router_add(R, "GET", "/users/*", h_a), CSHW_E_ROUTE_DUPLICATE);
    add_ok("GET", "/users/me", h_me);
    add_ok("GET", "/users", h_list);
    add_ok("GET", "/users/", h_slash);
    assert_int_equal(cshw_router_add(R, "GET", "/users/", h_a), CSHW_E_ROUTE_DUPLICATE);
    add_ok("get", "/users", h_a); /* another method: case-sensitive */
    add_ok("GET", "/users/{id}/x", h_b);
    /* the first route stays */
    expect("GET", "/users/1", 200, "id id=1");
    expect("POST", "/users/1", 200, "post uid=1");
    expect("PUT", "/users/1", 200, "any x=1");
    expect("get", "/users", 200, "a");
}

/* ---- many routes ---- */

static void test_many_routes(void **state)
{
    (void)state;
    enum { N = 1500 };
    char pattern[64];
    /* inserted in a scrambled order: the sorted children do not care */
    for (unsigned k = 0; k < N; k++) {
        unsigned i = (k * 7919u) % N;
        snprintf(pattern, sizeof pattern, "/n%u/items/{p%u}", i, i);
        add_ok("GET", pattern, h_a);
        snprintf(pattern, sizeof pattern, "/n%u", i);
        add_ok(i % 2 ? "POST" : "GET", pattern, h_b);
    }
    char target[64], want[64];
    for (unsigned i = 0; i < N; i += 37) {
        snprintf(target, sizeof target, "/n%u/items/v%u", i, i);
        snprintf(want, sizeof want, "a p%u=v%u", i, i);
        expect("GET", target, 200, want);
        snprintf(target, sizeof target, "/n%u", i);
        expect(i % 2 ? "POST" : "GET", target, 200, "b");
    }
    expect("GET", "/n1500/items/1", 404, NULL);
    expect("GET", "/n/items/1", 404, NULL);
    reply r;
    request("GET", "/n7", &r);
    assert_int_equal(r.status, 405);
    assert_string_equal(header(&r, "Allow"), "OPTIONS, POST");
}

static void test_many_distinct_methods(void **state)
{
    (void)state;
    char method[16];
    for (int i = 0; i < 64; i++) {
        snprintf(method, sizeof method, "M%02d", i);
        add_ok(method, "/m", h_a);
    }
    assert_int_equal(cshw_router_add(R, "M64", "/m", h_a), CSHW_E_ROUTE_TOO_MANY_METHODS);
    add_ok("M63", "/other", h_b); /* a known method is still fine */
    expect("M00", "/m", 200, "a");
    expect("M63", "/m", 200, "a");
    /* M64 could not be added: no route names it (RFC 9110 §9.1) */
    expect("M64", "/m", 501, NULL);
    reply r;
    request("GET", "/m", &r);
    assert_int_equal(r.status, 405);
    const char *allow = header(&r, "Allow");
    assert_non_null(allow);
    assert_int_equal(strncmp(allow, "M00, M01, ", 10), 0);
    assert_non_null(strstr(allow, "M62, M63, OPTIONS"));
}

/* ---- methods not implemented ---- */

/* RFC 9110 §9.1: "An origin server that receives a request method that is
 * unrecognized or not implemented SHOULD respond with the 501 (Not
 * Implemented) status code." */
static void test_unknown_method_is_501(void **state)
{
    (void)state;
    add_ok("GET", "/x", h_get);
    add_ok("PURGE", "/cache/{key}", h_del);
    expect("BREW", "/x", 501, NULL);
    expect("BREW", "/nowhere", 501, NULL);
    expect("get", "/x", 501, NULL); /* methods are case-sensitive */
    /* a route for a method of its own still receives it */
    expect("PURGE", "/cache/a", 200, "del key=a");
    /* ... and the method is implemented: elsewhere 404 and 405 */
    expect("PURGE", "/nowhere", 404, NULL);
    reply r;
    request("PURGE", "/x", &r);
    assert_int_equal(r.status, 405);
    assert_string_equal(header(&r, "Allow"), "GET, HEAD, OPTIONS");
    /* the methods the router knows keep 404 and 405 */
    expect("DELETE", "/x", 405, NULL);
    expect("PATCH", "/nowhere", 404, NULL);
    expect("TRACE", "/nowhere", 404, NULL);
    /* a route for any method takes any method, where its path matches */
    add_ok("*", "/any", h_any);
    expect("BREW", "/any", 200, "any");
    expect("BREW", "/x", 501, NULL);
}

/* ---- static fallback ---- */

static char root[64];

static void write_file(const char *rel, const char *text)
{
    char path[128];
    snprintf(path, sizeof path, "%s/%s", root, rel);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* cshw_router_body_of of a raw request head (0.4.1). */
static cshw_route_body body_of(const char *raw)
{
    csh_header fields[16];
    csh_parser p;
    csh_parser_init(&p, CSH_REQUEST, fields, 16, NULL, 0);
    assert_int_equal(csh_parser_execute(&p, raw, strlen(raw)), CSH_OK);
    return cshw_router_body_of(R, raw, &p.msg);
}

#define BODY_REQ(m, t) m " " t " HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\n"

/* What a route does with a body, known from the head alone: a route of
 * cshw_router_add reads it whole, one of cshw_router_add_streaming as it
 * comes; no route (a static file, 404, 405, 501, a path that does not
 * decode, OPTIONS *) reads none of it. The path is matched as dispatch
 * matches it: decoded, dot segments resolved, after an absolute form's
 * authority, before the query. */
static void test_body_of_a_route(void **state)
{
    (void)state;
    add_ok("POST", "/form", h_post);
    add_ok("GET", "/api/{name}", h_id);
    assert_int_equal(cshw_router_add_streaming(R, "PUT", "/up/*", h_post), 0);
    assert_int_equal(cshw_router_add_streaming(R, "BREW", "/pot", h_post), 0);
    assert_int_equal(body_of(BODY_REQ("POST", "/form")), CSHW_ROUTE_BODY_WHOLE);
    assert_int_equal(body_of(BODY_REQ("POST", "/x/../form?q=1")), CSHW_ROUTE_BODY_WHOLE);
    assert_int_equal(body_of(BODY_REQ("POST", "/%66orm")), CSHW_ROUTE_BODY_WHOLE);
    assert_int_equal(body_of(BODY_REQ("POST", "http://t/form")), CSHW_ROUTE_BODY_WHOLE);
    assert_int_equal(body_of(BODY_REQ("PUT", "/up/a/b")), CSHW_ROUTE_BODY_STREAM);
    assert_int_equal(body_of(BODY_REQ("BREW", "/pot")), CSHW_ROUTE_BODY_STREAM);
    assert_int_equal(body_of(BODY_REQ("POST", "/api/x")), CSHW_ROUTE_BODY_NONE); /* 405 */
    assert_int_equal(body_of(BODY_REQ("POST", "/index.html")), CSHW_ROUTE_BODY_NONE);
    assert_int_equal(body_of(BODY_REQ("PUT", "/form")), CSHW_ROUTE_BODY_NONE);
    assert_int_equal(body_of(BODY_REQ("POST", "/a/%00")), CSHW_ROUTE_BODY_NONE); /* 400 */
    assert_int_equal(body_of(BODY_REQ("POST", "/../form")), CSHW_ROUTE_BODY_NONE);
    assert_int_equal(body_of(BODY_REQ("OPTIONS", "*")), CSHW_ROUTE_BODY_NONE);
    assert_int_equal(body_of(BODY_REQ("FROB", "/form")), CSHW_ROUTE_BODY_NONE); /* 501 */
    assert_int_equal(cshw_router_body_of(NULL, "", NULL), CSHW_ROUTE_BODY_NONE);
}

static void test_static_fallback(void **state)
{
    (void)state;
    snprintf(root, sizeof root, "/tmp/test_router.XXXXXX");
    assert_non_null(mkdtemp(root));
    write_file("hello.txt", "hello, file\n");
    write_file("form", "a file the POST route hides\n");
    char sub[128];
    snprintf(sub, sizeof sub, "%s/api", root);
    assert_int_equal(mkdir(sub, 0700), 0);
    write_file("api/data.txt", "shadowed\n");

    add_ok("GET", "/api/{name}", h_id);
    add_ok("POST", "/form", h_post);
    cshw_static_options o;
    cshw_static_options_init(&o);
    char *copy = strdup(root);
    o.root = copy;
    o.size = CSHW_STATIC_OPTIONS_SIZE_0_3 - 1; /* not the init's: refused, by name */
    assert_int_equal(cshw_router_set_static(R, &o), -EINVAL);
    assert_non_null(strstr(cshw_router_error(R), "cshw_static_options_init"));
    o.size = sizeof o;
    assert_int_equal(cshw_router_set_static(R, &o), 0);
    memset(copy, 'x', strlen(copy)); /* the router keeps its own copy */
    free(copy);

    reply r;
    request("GET", "/hello.txt", &r);
    assert_int_equal(r.status, 200);
    assert_string_equal(body(&r), "hello, file\n");
    request("HEAD", "/hello.txt", &r);
    assert_int_equal(r.status, 200);
    assert_int_equal(r.body_len, 0);
    expect("GET", "/missing.txt", 404, NULL);
    /* routes come first, even a route for another method */
    expect("GET", "/api/data.txt", 200, "id name=data.txt");
    request("GET", "/form", &r);
    assert_int_equal(r.status, 405);
    assert_string_equal(header(&r, "Allow"), "OPTIONS, POST");
    /* other methods on a file: the static files' own answer */
    request("POST", "/hello.txt", &r);
    assert_int_equal(r.status, 405);
    assert_string_equal(header(&r, "Allow"), "GET, HEAD");
    request("OPTIONS", "/hello.txt", &r);
    assert_int_equal(r.status, 405);
    assert_string_equal(header(&r, "Allow"), "GET, HEAD");
    expect("DELETE", "/missing.txt", 404, NULL);
    /* the fallback serves GET and HEAD: a method no route names is 501 */
    expect("BREW", "/hello.txt", 501, NULL);

    o.root = NULL;
    assert_int_equal(cshw_router_set_static(R, &o), -EINVAL);
    assert_int_equal(cshw_router_set_static(R, NULL), 0);
    expect("GET", "/hello.txt", 404, NULL);

    char path[128];
    snprintf(path, sizeof path, "%s/api/data.txt", root);
    unlink(path);
    rmdir(sub);
    snprintf(path, sizeof path, "%s/hello.txt", root);
    unlink(path);
    snprintf(path, sizeof path, "%s/form", root);
    unlink(path);
    rmdir(root);
}

/* ---- several threads ---- */

static void *dispatch_many(void *arg)
{
    unsigned seed = (unsigned)(uintptr_t)arg;
    char target[64], want[64];
    for (int k = 0; k < 200; k++) {
        unsigned i = (seed * 31u + (unsigned)k * 17u) % 100u;
        snprintf(target, sizeof target, "/t%u/%u", i, k);
        snprintf(want, sizeof want, "a v%u=%d", i, k);
        reply r;
        request("GET", target, &r);
        if (r.status != 200 || strcmp(body(&r), want) != 0) return (void *)1;
    }
    return NULL;
}

static void test_dispatch_from_several_threads(void **state)
{
    (void)state;
    char pattern[64];
    for (unsigned i = 0; i < 100; i++) {
        snprintf(pattern, sizeof pattern, "/t%u/{v%u}", i, i);
        add_ok("GET", pattern, h_a);
    }
    pthread_t t[4];
    for (uintptr_t i = 0; i < 4; i++)
        assert_int_equal(pthread_create(&t[i], NULL, dispatch_many, (void *)(i + 1)), 0);
    for (int i = 0; i < 4; i++) {
        void *res;
        assert_int_equal(pthread_join(t[i], &res), 0);
        assert_null(res);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_precedence_in_every_insertion_order, setup, teardown),
        cmocka_unit_test_setup_teardown(test_backtracking_tries_the_next_choice, setup, teardown),
        cmocka_unit_test_setup_teardown(test_specific_method_before_any_and_passed_over_methods,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_root_trailing_slash_and_root_wildcard, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_parameters_are_decoded_segments, setup, teardown),
        cmocka_unit_test_setup_teardown(test_parameter_values_through_context_param, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_more_parameters_than_the_stack_holds, setup, teardown),
        cmocka_unit_test_setup_teardown(test_not_found, setup, teardown),
        cmocka_unit_test_setup_teardown(test_undecodable_path_is_400, setup, teardown),
        cmocka_unit_test_setup_teardown(test_405_carries_the_exact_allow, setup, teardown),
        cmocka_unit_test_setup_teardown(test_allow_is_the_union_of_every_matching_pattern, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_head_is_served_by_get, setup, teardown),
        cmocka_unit_test_setup_teardown(test_options_is_answered_with_allow, setup, teardown),
        cmocka_unit_test_setup_teardown(test_invalid_patterns_are_refused_with_a_reason, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_duplicates_by_method_and_shape, setup, teardown),
        cmocka_unit_test_setup_teardown(test_many_routes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_many_distinct_methods, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unknown_method_is_501, setup, teardown),
        cmocka_unit_test_setup_teardown(test_static_fallback, setup, teardown),
        cmocka_unit_test_setup_teardown(test_body_of_a_route, setup, teardown),
        cmocka_unit_test_setup_teardown(test_dispatch_from_several_threads, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
