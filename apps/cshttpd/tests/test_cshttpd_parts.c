/* cshttpd's parts without a server: the access log's escaping and lines,
 * the status page's ACL, the latency percentiles, the bounded path
 * table, and the proxy's routes (PREFIX=URL and which target goes where). */
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
    assert_non_null(strstr(line, "\"duration_ms\":3.042}\n"));
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
    assert_string_equal(r.origin, "http://127.0.0.1:9000");
    assert_int_equal(proxy_parse("/=HTTPS://Origin.Example/", &r, err, sizeof err), 0);
    assert_string_equal(r.origin, "https://origin.example:443");
    assert_int_equal(proxy_parse("/v6/=http://[::1]", &r, err, sizeof err), 0);
    assert_string_equal(r.origin, "http://[::1]:80");
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
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = '\0';
        assert_int_equal(proxy_parse(bad[i].spec, &r, err, sizeof err), -1);
        if (!strstr(err, bad[i].words) || !strstr(err, bad[i].spec))
            fail_msg("%s: %s", bad[i].spec, err);
    }
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
#define M(t) proxy_match(&p, t, strlen(t))
    assert_string_equal(M("/api")->origin, "http://a:1");
    assert_string_equal(M("/api/x")->origin, "http://a:1");
    assert_string_equal(M("/api?q=1")->origin, "http://a:1");
    assert_null(M("/apix"));
    assert_null(M("/ap"));
    assert_string_equal(M("/api/v2")->origin, "http://b:2"); /* the longest */
    assert_string_equal(M("/api/v2/x")->origin, "http://b:2");
    assert_string_equal(M("/api/v20")->origin, "http://a:1"); /* not under /api/v2 */
    assert_string_equal(M("/files/a.txt")->origin, "http://c:3");
    assert_string_equal(M("/files/")->origin, "http://c:3");
    assert_null(M("/files")); /* a prefix ending in '/' */
    assert_null(M("*"));
    assert_null(M("http://a/api"));
    assert_int_equal(proxy_add(&p, "/=http://e:5", err, sizeof err), 0);
    assert_string_equal(M("/anything")->origin, "http://e:5");
    assert_string_equal(M("/apix")->origin, "http://e:5");
#undef M
    p.n = 0;
    for (int i = 0; i < PROXY_ROUTES_MAX; i++) {
        char spec[64];
        snprintf(spec, sizeof spec, "/p%d=http://a", i);
        assert_int_equal(proxy_add(&p, spec, err, sizeof err), 0);
    }
    assert_int_equal(proxy_add(&p, "/more=http://a", err, sizeof err), -1);
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
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
