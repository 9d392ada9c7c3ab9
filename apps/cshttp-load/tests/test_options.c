/* cshttp-load's options: URLs, headers, numbers, conflicts. Each bad input
 * must be refused with a message naming what is wrong. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "options.h"

static char err[512];

/* Parses a NULL-terminated argument list (without the program name). */
static int parse(load_options *o, ...)
{
    char *argv[32] = {"cshttp-load"};
    int argc = 1;
    va_list ap;
    va_start(ap, o);
    for (char *a; (a = va_arg(ap, char *)) != NULL;) argv[argc++] = a;
    va_end(ap);
    err[0] = 0;
    return load_options_parse(o, argc, argv, err, sizeof err);
}

static void test_defaults(void **state)
{
    (void)state;
    load_options o;
    assert_int_equal(parse(&o, "http://example.test/", NULL), LOAD_OPTIONS_OK);
    assert_int_equal(o.num_levels, 1);
    assert_int_equal(o.levels[0], 32);
    assert_true(o.duration_s == 10);
    assert_true(o.keepalive);
    assert_int_equal(o.pipeline, 1);
    assert_int_equal(o.threads, 1);
    assert_string_equal(o.method, "GET");
    assert_string_equal(o.port, "80");
    assert_string_equal(o.label, "http://example.test/");
    load_options_free(&o);
}

/* RFC 9110 §4.2: the authority as written is the Host value; the default
 * port depends on the scheme; an empty path is "/" (RFC 9112 §3.2.1). */
static void test_urls(void **state)
{
    (void)state;
    load_options o;
    assert_int_equal(parse(&o, "https://example.test", NULL), LOAD_OPTIONS_OK);
    assert_true(o.https);
    assert_string_equal(o.port, "443");
    assert_string_equal(o.path, "/");
    assert_string_equal(o.authority, "example.test");
    load_options_free(&o);

    assert_int_equal(parse(&o, "http://[::1]:8080/a/b?x=1#frag", NULL), LOAD_OPTIONS_OK);
    assert_string_equal(o.host, "::1");
    assert_string_equal(o.port, "8080");
    assert_string_equal(o.path, "/a/b?x=1"); /* the fragment is never sent */
    assert_string_equal(o.authority, "[::1]:8080");
    load_options_free(&o);

    assert_int_equal(parse(&o, "http://h:1?q", NULL), LOAD_OPTIONS_OK);
    assert_string_equal(o.path, "/?q");
    load_options_free(&o);

    const char *bad[] = {
        "ftp://h/",        "h:80/",        "http://",       "http:///x",        "http://h:0/",
        "http://h:65536/", "http://h:8x/", "http://h:/",    "http://[::1/",     "http://[::1]x/",
        "http://u@h/",     "http://h/a b", "http://h/\x7f", "http://h/\xc3\xa9"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(parse(&o, (char *)bad[i], NULL), LOAD_OPTIONS_BAD);
        assert_non_null(strstr(err, "URL"));
        load_options_free(&o);
    }
}

static void test_headers_and_body(void **state)
{
    (void)state;
    load_options o;
    assert_int_equal(
        parse(&o, "-H", "Host: other", "-H", "X-A:  1  ", "-b", "xyz", "http://h/", NULL),
        LOAD_OPTIONS_OK);
    assert_true(o.has_host);
    assert_string_equal(o.headers, "Host: other\r\nX-A: 1\r\n");
    assert_string_equal(o.method, "POST"); /* a body without -m */
    assert_int_equal(o.body_len, 3);
    load_options_free(&o);

    /* field injection, framing by hand, bad names */
    const char *bad[] = {"X: a\r\nEvil: 1", "NoColon",           ": v",
                         "Bad Name: v",     "Content-Length: 5", "transfer-encoding: chunked"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(parse(&o, "-H", (char *)bad[i], "http://h/", NULL), LOAD_OPTIONS_BAD);
        assert_non_null(strstr(err, "--header"));
        load_options_free(&o);
    }
    assert_int_equal(parse(&o, "-H", "Host: a", "-H", "host: b", "http://h/", NULL),
                     LOAD_OPTIONS_BAD);
    load_options_free(&o);
    assert_int_equal(parse(&o, "-m", "GE T", "http://h/", NULL), LOAD_OPTIONS_BAD);
    assert_non_null(strstr(err, "-m"));
    load_options_free(&o);
    assert_int_equal(parse(&o, "--body-file", "/nonexistent/file", "http://h/", NULL),
                     LOAD_OPTIONS_BAD);
    assert_non_null(strstr(err, "/nonexistent/file"));
    load_options_free(&o);
}

static void test_numbers(void **state)
{
    (void)state;
    load_options o;
    assert_int_equal(parse(&o, "-c8", "-d", "0.5", "--warmup=1", "-t", "2", "-p", "4", "--timeout",
                           "0.25", "http://h/", NULL),
                     LOAD_OPTIONS_OK);
    assert_int_equal(o.levels[0], 8);
    assert_true(o.duration_s == 0.5 && o.warmup_s == 1 && o.timeout_s == 0.25);
    assert_int_equal(o.threads, 2);
    assert_int_equal(o.pipeline, 4);
    load_options_free(&o);

    assert_int_equal(parse(&o, "--levels", "1,2,4,256", "http://h/", NULL), LOAD_OPTIONS_OK);
    assert_int_equal(o.num_levels, 4);
    assert_int_equal(o.levels[3], 256);
    load_options_free(&o);

    const char *bad[][2] = {{"-c", "-1"},      {"-c", "abc"},        {"-c", ""},
                            {"-d", "0"},       {"-d", "nan"},        {"-d", "1e9"},
                            {"-n", "0"},       {"-t", "0"},          {"-p", "0"},
                            {"-p", "5000"},    {"--levels", "1,,2"}, {"--levels", "0"},
                            {"--levels", ","}, {"--idle", "x"},      {"--source-addrs", "255"},
                            {"--timeout", "0"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(parse(&o, (char *)bad[i][0], (char *)bad[i][1], "http://h/", NULL),
                         LOAD_OPTIONS_BAD);
        assert_non_null(strstr(err, bad[i][0]));
        load_options_free(&o);
    }
}

static void test_conflicts(void **state)
{
    (void)state;
    load_options o;
    struct {
        const char *a, *b, *c;
        const char *says;
    } bad[] = {
        {"--no-keepalive", "-p", "2", "--pipeline"},
        {"--no-keepalive", "--idle", "5", "--idle"},
        {"-c", "0", "-v", "unknown option"},
        {"-c", "0", "--no-progress", "--connections 0"},
        {"--levels", "1,2", "-c4", "--levels"},
        {"--cacert", "/etc/hostname", "--no-progress", "--cacert"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(
            parse(&o, (char *)bad[i].a, (char *)bad[i].b, (char *)bad[i].c, "http://h/", NULL),
            LOAD_OPTIONS_BAD);
        assert_non_null(strstr(err, bad[i].says));
        load_options_free(&o);
    }
    assert_int_equal(parse(&o, NULL), LOAD_OPTIONS_BAD);
    assert_non_null(strstr(err, "no URL"));
    load_options_free(&o);
    assert_int_equal(parse(&o, "http://a/", "http://b/", NULL), LOAD_OPTIONS_BAD);
    load_options_free(&o);
    assert_int_equal(parse(&o, "-c", NULL), LOAD_OPTIONS_BAD);
    assert_non_null(strstr(err, "needs a value"));
    load_options_free(&o);
    /* -c 0 is fine when idle connections are held */
    assert_int_equal(parse(&o, "-c", "0", "--idle", "10", "http://h/", NULL), LOAD_OPTIONS_OK);
    load_options_free(&o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),         cmocka_unit_test(test_urls),
        cmocka_unit_test(test_headers_and_body), cmocka_unit_test(test_numbers),
        cmocka_unit_test(test_conflicts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
