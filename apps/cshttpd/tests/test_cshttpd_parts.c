/* cshttpd's parts without a server: the access log's escaping and lines,
 * the status page's ACL, the latency percentiles, the bounded path
 * table, and the proxy's routes (PREFIX=URL and which target goes where). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <pthread.h>

#include <cmocka.h>

#include "app.h"
#include "log.h"
#include "proxy.h"
#include "proxy_path.h"
#include "stats.h"

static void test_escape_nginx(void **state)
{
    (void)state;
    char out[64];
    log_escape(out, sizeof out, "x\" 200 5 \"-\" \"curl");
    assert_string_equal(out, "x\\x22 200 5 \\x22-\\x22 \\x22curl");
    log_escape(out, sizeof out, "a\\b\t\r\n\x7f\xc3\xa9~ ");
    assert_string_equal(out, "a\\x5Cb\\x09\\x0D\\x0A\\x7F\\xC3\\xA9~ ");
    log_escape(out, sizeof out, "");
    assert_string_equal(out, "-");
    log_escape(out, sizeof out, NULL);
    assert_string_equal(out, "-");
    /* cut short: never half an escape */
    char small[6]; /* "ab" and a NUL fit, "ab\\x22" does not */
    size_t n = log_escape(small, sizeof small, "ab\"cd");
    assert_int_equal(n, 2);
    assert_string_equal(small, "ab");
}

static void test_escape_json(void **state)
{
    (void)state;
    char out[64];
    log_escape_json(out, sizeof out, "q\"b\\s\x01\xff");
    assert_string_equal(out, "q\\\"b\\\\s\\u0001\\u00ff");
    log_escape_json(out, sizeof out, NULL);
    assert_string_equal(out, "");
}

static void test_access_line(void **state)
{
    (void)state;
    cshs_request_log e = {.remote_addr = "10.1.2.3",
                          .method = "GET",
                          .target = "/a b\"",
                          .version_minor = 1,
                          .status = 200,
                          .bytes_out = 42,
                          .bytes_in = 77,
                          .referer = NULL,
                          .user_agent = "ua\n",
                          .time_unix_ms = 0};
    char line[512];
    size_t n = access_log_format(line, sizeof line, LOG_COMBINED, &e, 3);
    assert_true(n > 0 && line[n - 1] == '\n');
    assert_non_null(strstr(line, "10.1.2.3 - - ["));
    assert_non_null(strstr(line, "] \"GET /a b\\x22 HTTP/1.1\" 200 42 \"-\" \"ua\\x0A\"\n"));
    assert_ptr_equal(strchr(line, '\n'), line + n - 1);
    n = access_log_format(line, sizeof line, LOG_JSON, &e, 3042);
    assert_non_null(strstr(line, "\"target\":\"/a b\\\"\""));
    assert_non_null(strstr(line, "\"user_agent\":\"ua\\u000a\""));
    assert_non_null(strstr(line, "\"duration_ms\":3.042,\"bytes_in\":77}\n"));
    /* a line longer than the buffer stays one line */
    char big[3000];
    memset(big, 'a', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    e.target = big;
    char shortbuf[200];
    n = access_log_format(shortbuf, sizeof shortbuf, LOG_COMBINED, &e, 0);
    assert_int_equal(n, sizeof shortbuf - 1);
    assert_int_equal(shortbuf[n - 1], '\n');
    assert_int_equal(memchr(shortbuf, '\n', n - 1), NULL);
}

static void test_acl(void **state)
{
    (void)state;
    acl a;
    char err[128];
    acl_loopback(&a);
    assert_true(acl_allows(&a, "127.0.0.1"));
    assert_true(acl_allows(&a, "127.9.9.9"));
    assert_true(acl_allows(&a, "::1"));
    assert_true(acl_allows(&a, "::ffff:127.0.0.1"));
    assert_true(acl_allows(&a, "unix"));
    assert_false(acl_allows(&a, "10.0.0.1"));
    assert_false(acl_allows(&a, "::2"));
    assert_false(acl_allows(&a, "garbage"));
    assert_false(acl_allows(&a, NULL));
    assert_int_equal(acl_parse(&a, "192.168.16.0/20, 2001:db8::/33,10.0.0.7", err, sizeof err), 0);
    assert_true(acl_allows(&a, "192.168.31.255"));
    assert_false(acl_allows(&a, "192.168.32.0"));
    assert_true(acl_allows(&a, "::ffff:192.168.20.1"));
    assert_true(acl_allows(&a, "2001:db8:7fff::1"));
    assert_false(acl_allows(&a, "2001:db8:8000::1"));
    assert_true(acl_allows(&a, "10.0.0.7"));
    assert_false(acl_allows(&a, "10.0.0.8"));
    assert_false(acl_allows(&a, "127.0.0.1"));
    assert_false(acl_allows(&a, "unix"));
    assert_int_equal(acl_parse(&a, "0.0.0.0/0", err, sizeof err), 0);
    assert_true(acl_allows(&a, "8.8.8.8"));
    assert_false(acl_allows(&a, "::1"));
    const char *bad[] = {"",      ",", "1.2.3.4/33", "1.2.3.4/",  "::/129",
                         "1.2.3", "x", "1.2.3.4/-1", "1.2.3.4/8x"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(acl_parse(&a, bad[i], err, sizeof err), -1);
    assert_non_null(strstr(err, "1.2.3.4/8x"));
}

static void test_percentile(void **state)
{
    (void)state;
    /* the bucket bounds: 50, 100, 200, 300, 500, 700, 1000 ... us; the
     * last of 31 buckets is above 60 s */
    uint64_t c[31] = {0};
    assert_true(stats_percentile(c, 31, 0.5) == 0);
    c[0] = 98; /* 98 requests up to 50 us, 2 in the 1 ms bucket */
    c[6] = 2;
    assert_true(stats_percentile(c, 31, 0.50) == 0.05);
    assert_true(stats_percentile(c, 31, 0.98) == 0.05);
    assert_true(stats_percentile(c, 31, 0.99) == 1);
    c[0] = 50;
    c[6] = 50;
    assert_true(stats_percentile(c, 31, 0.50) == 0.05);
    assert_true(stats_percentile(c, 31, 0.51) == 1);
    memset(c, 0, sizeof c);
    c[30] = 1; /* above the last bound */
    assert_true(stats_percentile(c, 31, 0.99) > 60000);
}

static void test_paths_bounded(void **state)
{
    (void)state;
    stats *st = stats_new(NULL);
    assert_non_null(st);
    char target[200];
    cshs_request_log e = {.target = target};
    for (int i = 0; i < STATS_PATHS + 10; i++) {
        snprintf(target, sizeof target, "/p%d?q=%d", i, i);
        stats_record(st, &e, 1);
    }
    for (int i = 0; i < 5; i++) {
        snprintf(target, sizeof target, "/p3?again=%d", i);
        stats_record(st, &e, 1);
    }
    memset(target, 'x', sizeof target - 1);
    target[0] = '/';
    target[sizeof target - 1] = '\0';
    stats_route r[STATS_PATHS + 1];
    size_t n = stats_routes(st, r, STATS_PATHS + 1);
    assert_int_equal(n, STATS_PATHS + 1);
    assert_string_equal(r[0].path, "(other)");
    assert_int_equal(r[0].requests, 10);
    assert_string_equal(r[1].path, "/p3");
    assert_int_equal(r[1].requests, 6);
    n = stats_routes(st, r, 2);
    assert_int_equal(n, 2);
    stats_free(st);
    /* a long path is cut to the slot */
    st = stats_new(NULL);
    stats_record(st, &e, 1);
    n = stats_routes(st, r, 1);
    assert_int_equal(n, 1);
    assert_int_equal(strlen(r[0].path), STATS_PATH_MAX - 1);
    stats_sample s[STATS_SAMPLES];
    assert_int_equal(stats_series(st, s, STATS_SAMPLES), 0);
    stats_free(st);
}

/* Paths that name nothing (404, 410) are one row, "(not found)": 1,000
 * of them take no slot, and a path asked for 100 times after them still
 * has its own row (they used to fill the table for good). */
static void test_paths_not_found_folded(void **state)
{
    (void)state;
    stats *st = stats_new(NULL);
    assert_non_null(st);
    char target[64];
    cshs_request_log e = {.target = target, .status = 404};
    for (int i = 0; i < 1000; i++) {
        snprintf(target, sizeof target, "/nothing-%d", i);
        e.status = i % 10 ? 404 : 410;
        stats_record(st, &e, 1);
    }
    e.status = 200;
    for (int i = 0; i < 100; i++) {
        snprintf(target, sizeof target, "/index.html?i=%d", i);
        stats_record(st, &e, 1);
    }
    stats_route r[STATS_PATHS + 2];
    size_t n = stats_routes(st, r, STATS_PATHS + 2);
    assert_int_equal(n, 2);
    assert_string_equal(r[0].path, "(not found)");
    assert_int_equal(r[0].requests, 1000);
    assert_string_equal(r[1].path, "/index.html");
    assert_int_equal(r[1].requests, 100);
    stats_free(st);
}

/* Threads record at once, as the loops and jobs of a server do, and
 * take no lock: every request is counted once, under its own path, and a
 * path two threads added at the same moment is still reported once. */
#define RECORDERS 4
#define RECORDS 20000
static void *recorder(void *arg)
{
    stats *st = arg;
    char target[32];
    cshs_request_log e = {.target = target};
    for (int i = 0; i < RECORDS; i++) {
        snprintf(target, sizeof target, "/c%d?i=%d", i % 8, i);
        stats_record(st, &e, 1);
    }
    return NULL;
}

static void test_paths_concurrent(void **state)
{
    (void)state;
    for (int round = 0; round < 20; round++) {
        stats *st = stats_new(NULL);
        assert_non_null(st);
        pthread_t th[RECORDERS];
        for (int i = 0; i < RECORDERS; i++)
            assert_int_equal(pthread_create(&th[i], NULL, recorder, st), 0);
        for (int i = 0; i < RECORDERS; i++) pthread_join(th[i], NULL);
        stats_route r[STATS_PATHS + 1];
        size_t n = stats_routes(st, r, STATS_PATHS + 1);
        assert_int_equal(n, 8);
        for (size_t i = 0; i < n; i++) {
            assert_int_equal(strncmp(r[i].path, "/c", 2), 0);
            assert_int_equal(r[i].requests, RECORDERS * RECORDS / 8);
            for (size_t j = 0; j < i; j++) assert_string_not_equal(r[i].path, r[j].path);
        }
        stats_free(st);
    }
}

static void test_proxy_parse(void **state)
{
    (void)state;
    proxy_route r;
    char err[600];
    assert_int_equal(proxy_parse("/api=http://127.0.0.1:9000", &r, err, sizeof err), 0);
    assert_string_equal(r.prefix, "/api");
    assert_string_equal(r.origins[0].url, "http://127.0.0.1:9000");
    assert_int_equal(proxy_parse("/=HTTPS://Origin.Example/", &r, err, sizeof err), 0);
    assert_string_equal(r.origins[0].url, "https://origin.example:443");
    assert_int_equal(proxy_parse("/v6/=http://[::1]", &r, err, sizeof err), 0);
    assert_string_equal(r.origins[0].url, "http://[::1]:80");
    assert_int_equal(proxy_parse("/o/=http://a:1,https://b,http://[::1]:3", &r, err, sizeof err), 0);
    assert_int_equal(r.norigins, 3);
    assert_string_equal(r.origins[1].url, "https://b:443");
    assert_string_equal(r.origins[2].url, "http://[::1]:3");
    char many[1024] = "/m=http://h0";
    for (int i = 1; i <= PROXY_ORIGINS_MAX; i++)
        snprintf(many + strlen(many), sizeof many - strlen(many), ",http://h%d", i);
    assert_int_equal(proxy_parse(many, &r, err, sizeof err), -1);
    assert_non_null(strstr(err, "more than 16 origins"));
    static const struct {
        const char *spec, *words;
    } bad[] = {
        {"/api", "not PREFIX=URL"},
        {"api=http://a", "must start with '/'"},
        {"=http://a", "must start with '/'"},
        {"/a b=http://a", "visible characters"},
        {"/a%2F=http://a", "visible characters"},
        {"/api=ftp://a", "not http:// or https://"},
        {"/api=http://a/x", "has a path"},
        {"/api=http://a?x", "has a path"},
        {"/api=http://", "no host"},
        {"/api=http://u:p@a", "user info"},
        {"/api=http://a:0", "1-65535"},
        {"/api=http://a:65536", "1-65535"},
        {"/api=http://a:8x", "1-65535"},
        {"/api=http://a:", "1-65535"},
        {"/api=http://[::1", "closing ']'"},
        {"/api=http://[zz]", "not an IPv6"},
        {"/api=http://a b", "letters, digits"},
        {"/api=http://a,", "not http:// or https://"},
        {"/api=http://a,,http://b", "not http:// or https://"},
        {"/api=http://a,ftp://b", "not http:// or https://"},
        {"/api=http://a:80,http://A", "given twice"},
        {"/api=http://a,http://b:0", "1-65535"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = '\0';
        assert_int_equal(proxy_parse(bad[i].spec, &r, err, sizeof err), -1);
        if (!strstr(err, bad[i].words) || !strstr(err, bad[i].spec))
            fail_msg("%s: %s", bad[i].spec, err);
    }
}

/* The route of a target, NULL when none takes it or it is refused. */
static const proxy_route *route_of(const proxy *p, const char *t)
{
    char fwd[256];
    const proxy_route *r;
    assert_true(strlen(t) < sizeof fwd);
    return proxy_route_of(p, t, strlen(t), fwd, &r) == 1 ? r : NULL;
}

static void test_proxy_match(void **state)
{
    (void)state;
    static proxy p;
    char err[600];
    memset(&p, 0, sizeof p);
    assert_int_equal(proxy_add(&p, "/api=http://a:1", err, sizeof err), 0);
    assert_int_equal(proxy_add(&p, "/api/v2=http://b:2", err, sizeof err), 0);
    assert_int_equal(proxy_add(&p, "/files/=http://c:3", err, sizeof err), 0);
    assert_int_equal(proxy_add(&p, "/api=http://d:4", err, sizeof err), -1);
    assert_non_null(strstr(err, "twice"));
#define M(t) route_of(&p, t)
    assert_string_equal(M("/api")->origins[0].url, "http://a:1");
    assert_string_equal(M("/api/x")->origins[0].url, "http://a:1");
    assert_string_equal(M("/api?q=1")->origins[0].url, "http://a:1");
    assert_null(M("/apix"));
    assert_null(M("/ap"));
    assert_string_equal(M("/api/v2")->origins[0].url, "http://b:2"); /* the longest */
    assert_string_equal(M("/api/v2/x")->origins[0].url, "http://b:2");
    assert_string_equal(M("/api/v20")->origins[0].url, "http://a:1"); /* not under /api/v2 */
    assert_string_equal(M("/files/a.txt")->origins[0].url, "http://c:3");
    assert_string_equal(M("/files/")->origins[0].url, "http://c:3");
    assert_null(M("/files")); /* a prefix ending in '/' */
    assert_null(M("*"));
    assert_null(M("http://a/api"));
    assert_int_equal(proxy_add(&p, "/=http://e:5", err, sizeof err), 0);
    assert_string_equal(M("/anything")->origins[0].url, "http://e:5");
    assert_string_equal(M("/apix")->origins[0].url, "http://e:5");
#undef M
    p.n = 0;
    for (int i = 0; i < PROXY_ROUTES_MAX; i++) {
        char spec[64];
        snprintf(spec, sizeof spec, "/p%d=http://a", i);
        assert_int_equal(proxy_add(&p, spec, err, sizeof err), 0);
    }
    assert_int_equal(proxy_add(&p, "/more=http://a", err, sizeof err), -1);
}

/* Least requests in flight, turn by turn among equals; an origin that
 * failed max_fails times within fail_timeout is left out for it, then
 * tried again; all left out: all tried; a retry passes over its origin. */
static void test_proxy_pick(void **state)
{
    (void)state;
    static proxy p;
    char err[600];
    memset(&p, 0, sizeof p);
    p.max_fails = 2;
    p.fail_timeout_ms = 1000;
    assert_int_equal(proxy_add(&p, "/o/=http://a:1,http://b:2,http://c:3", err, sizeof err), 0);
    const proxy_route *r = &p.routes[0];
    int64_t now = 100000;
    /* one at a time: each in turn */
    int seen[3] = {0, 0, 0};
    for (int i = 0; i < 30; i++) {
        proxy_origin *o = proxy_pick(&p, r, NULL, now);
        seen[o - r->origins]++;
        proxy_origin_done(&p, o, 0, now);
    }
    assert_int_equal(seen[0], 10);
    assert_int_equal(seen[1], 10);
    assert_int_equal(seen[2], 10);
    /* held ones: the least busy */
    proxy_origin *a = proxy_pick(&p, r, NULL, now);
    proxy_origin *b = proxy_pick(&p, r, NULL, now);
    proxy_origin *c = proxy_pick(&p, r, NULL, now);
    assert_true(a != b && b != c && a != c);
    proxy_origin *d = proxy_pick(&p, r, NULL, now);
    proxy_origin_done(&p, b, 0, now);
    proxy_origin_done(&p, c, 0, now);
    proxy_origin_done(&p, d, 0, now);
    /* a has one in flight, the others none: never a */
    for (int i = 0; i < 6; i++) {
        proxy_origin *o = proxy_pick(&p, r, NULL, now);
        assert_true(o != a);
        proxy_origin_done(&p, o, 0, now);
    }
    proxy_origin_done(&p, a, 0, now);
    /* two failures of b within the window: left out for 1 s */
    proxy_origin *bo = &p.routes[0].origins[1];
    atomic_fetch_add(&bo->active, 2);
    proxy_origin_done(&p, bo, 1, now);
    for (int i = 0; i < 3; i++) {
        proxy_origin *o = proxy_pick(&p, r, NULL, now);
        proxy_origin_done(&p, o, 0, now);
    }
    proxy_origin_done(&p, bo, 1, now + 10);
    assert_int_equal(bo->failures, 2);
    for (int i = 0; i < 9; i++) {
        proxy_origin *o = proxy_pick(&p, r, NULL, now + 500);
        assert_true(o != bo);
        proxy_origin_done(&p, o, 0, now + 500);
    }
    int back = 0; /* after fail_timeout: tried again */
    for (int i = 0; i < 3; i++) {
        proxy_origin *o = proxy_pick(&p, r, NULL, now + 1011);
        back += o == bo;
        proxy_origin_done(&p, o, 0, now + 1011);
    }
    assert_int_equal(back, 1);
    /* failures further apart than the window: never two in one */
    proxy_origin *co = &p.routes[0].origins[2];
    atomic_fetch_add(&co->active, 2);
    proxy_origin_done(&p, co, 1, now + 2000);
    proxy_origin_done(&p, co, 1, now + 3500);
    assert_true(co->down_until_ms <= now + 3500);
    /* every one left out: all are tried still */
    p.max_fails = 1;
    for (int i = 0; i < 3; i++) {
        proxy_origin *o = &p.routes[0].origins[i];
        atomic_fetch_add(&o->active, 1);
        proxy_origin_done(&p, o, 1, now + 5000);
    }
    proxy_origin *any = proxy_pick(&p, r, NULL, now + 5001);
    assert_non_null(any);
    proxy_origin_done(&p, any, 0, now + 5001);
    /* a retry passes over its origin, while another is there */
    for (int i = 0; i < 6; i++) {
        proxy_origin *o = proxy_pick(&p, r, &p.routes[0].origins[0], now + 9000);
        assert_true(o != &p.routes[0].origins[0]);
        proxy_origin_done(&p, o, 0, now + 9000);
    }
    /* max_fails 0: never left out */
    p.max_fails = 0;
    proxy_origin *zo = &p.routes[0].origins[0];
    int64_t until = zo->down_until_ms;
    atomic_fetch_add(&zo->active, 1);
    proxy_origin_done(&p, zo, 1, now + 20000);
    assert_true(zo->down_until_ms == until);
    /* what counts as the origin's failure */
    assert_true(proxy_origin_failed(CSHS_CLIENT_E_CONNECT));
    assert_true(proxy_origin_failed(CSHS_CLIENT_E_HEAD_TIMEOUT));
    assert_false(proxy_origin_failed(CSHS_CLIENT_E_ACQUIRE_TIMEOUT));
    assert_false(proxy_origin_failed(-ENOMEM));
    /* and which of those left the request unsent */
    assert_true(proxy_never_sent(CSHS_CLIENT_E_CONNECT));
    assert_true(proxy_never_sent(CSHS_CLIENT_E_TLS));
    assert_false(proxy_never_sent(CSHS_CLIENT_E_HEAD_TIMEOUT));
    assert_false(proxy_never_sent(CSHS_CLIENT_E_ORIGIN_CLOSED));
}

/* RFC 3986 §5.2.4, with ".." above the root refused (-1), under each
 * reading of the separators (proxy_path.h). */
static void test_proxy_path_resolve(void **state)
{
    (void)state;
    static const struct {
        const char *in;
        unsigned flags;
        const char *want; /* NULL: refused */
    } cases[] = {
        {"/", 0, "/"},
        {"/a/b", 0, "/a/b"},
        {"/a/./b", 0, "/a/b"},
        {"/a/%2e/b", 0, "/a/b"},
        {"/a/x/../b", 0, "/a/b"},
        {"/a/x/%2E%2e/b", 0, "/a/b"},
        {"/a/x/.%2e/b", 0, "/a/b"},
        {"/a/b/..", 0, "/a/"},
        {"/a/b/.", 0, "/a/b/"},
        {"/a/", 0, "/a/"},
        {"/..", 0, NULL},
        {"/a/../..", 0, NULL},
        {"/%2e%2e/x", 0, NULL},
        {"/a//../b", 0, "/a/b"},             /* the empty segment is the one dropped */
        {"/a//../b", PROXY_PATH_MERGE, "/b"}, /* merged first */
        {"/a//x", 0, "/a//x"},
        {"/a//x", PROXY_PATH_MERGE, "/a/x"},
        {"/a/..%2fb", 0, "/a/..%2fb"}, /* one segment */
        {"/a/..%2fb", PROXY_PATH_SLASHES, "/b"},
        {"/a/..%2Fb", PROXY_PATH_SLASHES, "/b"},
        {"/a/..%5cb", PROXY_PATH_SLASHES, "/b"},
        {"/a/..\\b", PROXY_PATH_SLASHES, "/b"},
        {"/a%2fb", PROXY_PATH_SLASHES, "/a/b"},
        {"/..%2fb", PROXY_PATH_SLASHES, NULL},
        {"/a/...", 0, "/a/..."}, /* a name, not a dot segment */
        {"/a/.. ", 0, "/a/.. "},
        {"/a/%2e%2e%2e", 0, "/a/%2e%2e%2e"},
        {"/a/%252e%252e/b", 0, "/a/%252e%252e/b"}, /* decoded once: "%2e", a name */
        {"/a/%2", 0, "/a/%2"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char out[64];
        size_t n = 99;
        int r = proxy_path_resolve(cases[i].in, strlen(cases[i].in), cases[i].flags, out, &n);
        if (!cases[i].want) {
            if (r != -1) fail_msg("%s (%u): '%s', not refused", cases[i].in, cases[i].flags, out);
            continue;
        }
        if (r != 0 || strcmp(out, cases[i].want) != 0 || n != strlen(out))
            fail_msg("%s (%u): %d '%s', not '%s'", cases[i].in, cases[i].flags, r,
                     r == 0 ? out : "", cases[i].want);
    }
    assert_true(proxy_path_has_nul("/a%00", 5));
    assert_false(proxy_path_has_nul("/a%0", 4));
    assert_false(proxy_path_has_nul("/a%2500", 7)); /* "%25" then "00" */
}

/* The targets an attacker tries: none reaches the origin outside its
 * prefix; what stays inside goes with its dot segments resolved and its
 * %XX as sent; what no prefix takes is the router's. */
static void test_proxy_paths(void **state)
{
    (void)state;
    static proxy p;
    char err[600];
    memset(&p, 0, sizeof p);
    assert_int_equal(proxy_add(&p, "/o/=http://a:1", err, sizeof err), 0);
    assert_int_equal(proxy_add(&p, "/api=http://b:2", err, sizeof err), 0);
    static const char *refused[] = {
        "/o/../admin",  "/o/%2e%2e/admin", "/o/%2E%2E/admin",  "/o/..%2fadmin",
        "/o/.%2e/admin", "/o/./../admin",  "/o/x/../../admin", "/o//../../admin",
        "/o/%00",       "/o/a%00b",        "/o/..%5cadmin",    "/o/..\\admin",
        "/o/..",        "/api/../apix",    "/api/..",          "/o/../../x",
        "/o/x/..%2f..%2f..%2fadmin",
    };
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        char fwd[128];
        const proxy_route *r = (const proxy_route *)1;
        int v = proxy_route_of(&p, refused[i], strlen(refused[i]), fwd, &r);
        if (v != -1) fail_msg("%s: %d, not refused", refused[i], v);
        assert_null(r);
    }
    static const struct {
        const char *target, *origin, *fwd;
    } sent[] = {
        {"/o/a%2fb", "http://a:1", "/o/a%2fb"},
        {"/o/a%2Fb?x=/../y", "http://a:1", "/o/a%2Fb?x=/../y"},
        {"/o/x/../y", "http://a:1", "/o/y"},
        {"/o/./y", "http://a:1", "/o/y"},
        {"/o/%2e/y", "http://a:1", "/o/y"},
        {"/o/x/..", "http://a:1", "/o/"},
        {"/o//y", "http://a:1", "/o//y"},
        {"/o/%41%20b", "http://a:1", "/o/%41%20b"},
        {"/x/../o/y", "http://a:1", "/o/y"}, /* into a prefix: resolved */
        {"/api?q=1", "http://b:2", "/api?q=1"},
        {"/api/v/../w", "http://b:2", "/api/w"},
    };
    for (size_t i = 0; i < sizeof sent / sizeof sent[0]; i++) {
        char fwd[128];
        const proxy_route *r = NULL;
        int v = proxy_route_of(&p, sent[i].target, strlen(sent[i].target), fwd, &r);
        if (v != 1 || strcmp(r->origins[0].url, sent[i].origin) != 0 || strcmp(fwd, sent[i].fwd) != 0)
            fail_msg("%s: %d %s '%s', not %s '%s'", sent[i].target, v, v == 1 ? r->origins[0].url : "-",
                     v == 1 ? fwd : "", sent[i].origin, sent[i].fwd);
    }
    /* no reading puts these under a prefix: the router refuses those
     * that climb above the root or hold %2f or %00 (cshw_path_decode) */
    static const char *routers[] = {"/",          "/index.html",          "/x/../y",
                                    "/../x",      "/%2e%2e/x",            "/apix",
                                    "/a%2fb",     "/a/%00",               "/api%2f..%2f..%2fo/x",
                                    "/x/..%2f..%2fo/y"};
    for (size_t i = 0; i < sizeof routers / sizeof routers[0]; i++) {
        char fwd[128];
        const proxy_route *r;
        int v = proxy_route_of(&p, routers[i], strlen(routers[i]), fwd, &r);
        if (v != 0) fail_msg("%s: %d, not the router's", routers[i], v);
    }
}

/* Location and Refresh URLs that name the origin (nginx's proxy_redirect
 * default), rewritten to the client's scheme and host; the others kept. */
static void test_proxy_redirect_url(void **state)
{
    (void)state;
    static const struct {
        const char *origin, *url, *host, *want; /* want NULL: not the origin's */
    } cases[] = {
        {"http://app:9000", "http://app:9000/o/next", "example.org", "https://example.org/o/next"},
        {"http://app:9000", "HTTP://APP:9000/x?y#z", "example.org", "https://example.org/x?y#z"},
        {"http://app:9000", "http://app:9000", "example.org:8443", "https://example.org:8443"},
        {"http://app:80", "http://app/x", "h", "https://h/x"},       /* the default port */
        {"http://app:80", "http://app:80/x", "h", "https://h/x"},
        {"https://app:443", "https://app/x", "h", "https://h/x"},
        {"http://[::1]:9000", "http://[::1]:9000/x", "h", "https://h/x"},
        {"http://app:9000", "http://app:9000/x", NULL, "/x"},        /* no Host: the path */
        {"http://app:9000", "http://app:9000", "", "/"},
        {"http://app:9000", "http://app:9001/x", "h", NULL},         /* another port */
        {"http://app:9000", "http://app/x", "h", NULL},              /* 80, not 9000 */
        {"http://app:9000", "https://app:9000/x", "h", NULL},        /* another scheme */
        {"http://app:9000", "http://app2:9000/x", "h", NULL},        /* another host */
        {"http://app:9000", "http://app:9000@evil/x", "h", NULL},    /* userinfo trick */
        {"http://app:9000", "http://app.evil:9000/x", "h", NULL},
        {"http://app:9000", "/relative", "h", NULL},
        {"http://app:9000", "http://app:9000x/", "h", NULL},
        {"http://app:80", "http://app:/x", "h", NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char out[128] = "untouched";
        int r = proxy_redirect_url(cases[i].origin, cases[i].url, strlen(cases[i].url), "https",
                                   cases[i].host, out, sizeof out);
        if (!cases[i].want) {
            if (r != 0 || strcmp(out, "untouched") != 0)
                fail_msg("%s on %s: %d '%s', not kept", cases[i].url, cases[i].origin, r, out);
        } else if (r != 1 || strcmp(out, cases[i].want) != 0) {
            fail_msg("%s on %s: %d '%s', not '%s'", cases[i].url, cases[i].origin, r, out,
                     cases[i].want);
        }
    }
    char small[8];
    assert_int_equal(proxy_redirect_url("http://app:9000", "http://app:9000/long/path", 25,
                                        "https", "example.org", small, sizeof small),
                     -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_escape_nginx),
        cmocka_unit_test(test_escape_json),
        cmocka_unit_test(test_access_line),
        cmocka_unit_test(test_acl),
        cmocka_unit_test(test_percentile),
        cmocka_unit_test(test_paths_bounded),
        cmocka_unit_test(test_paths_not_found_folded),
        cmocka_unit_test(test_paths_concurrent),
        cmocka_unit_test(test_proxy_parse),
        cmocka_unit_test(test_proxy_match),
        cmocka_unit_test(test_proxy_path_resolve),
        cmocka_unit_test(test_proxy_paths),
        cmocka_unit_test(test_proxy_redirect_url),
        cmocka_unit_test(test_proxy_pick),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
