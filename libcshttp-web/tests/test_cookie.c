/* cookie.c: the Cookie request header (RFC 6265 §4.2.1, §5.4) and Set-Cookie
 * field values (RFC 6265 §4.1, RFC 6265bis §4.1.3 prefixes and §5.4.7
 * SameSite, RFC 9110 §5.6.7 dates). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "cshttp/web/arena.h"
#include "cshttp/web/cookie.h"
#include "cshttp/web/error.h"

static int setup(void **state)
{
    *state = cshw_arena_new(0);
    return *state ? 0 : -1;
}

static int teardown(void **state)
{
    cshw_arena_free(*state);
    return 0;
}

/* Parses `in`; `want` is "name=value\n" per cookie expected. */
static void parses(cshw_arena *a, const char *in, size_t len, const char *want)
{
    cshw_pairs p = {(const cshw_pair *)1, 99};
    assert_int_equal(cshw_cookie_parse(a, in, len, NULL, &p), 0);
    char got[2048] = "";
    size_t n = 0;
    for (size_t i = 0; i < p.count; i++) {
        assert_int_equal(p.items[i].name[p.items[i].name_len], '\0');
        assert_int_equal(p.items[i].value[p.items[i].value_len], '\0');
        n += (size_t)snprintf(got + n, sizeof got - n, "%.*s=%.*s\n", (int)p.items[i].name_len,
                              p.items[i].name, (int)p.items[i].value_len, p.items[i].value);
    }
    if (strcmp(got, want) != 0) fail_msg("\"%s\": got\n%s\nwant\n%s", in, got, want);
    if (p.count == 0) assert_null(p.items);
}

#define PARSES(a, lit, want) parses((a), (lit), sizeof(lit) - 1, (want))

/* RFC 6265 §4.2.1: cookie-string = cookie-pair *( ";" SP cookie-pair ), as
 * user agents send it (§5.4), and what else they really send. */
static void test_parse(void **state)
{
    cshw_arena *a = *state;
    PARSES(a, "", "");
    PARSES(a, "SID=31d4d96e407aad42", "SID=31d4d96e407aad42\n"); /* §4.2.2 example */
    PARSES(a, "SID=31d4d96e407aad42; lang=en-US", "SID=31d4d96e407aad42\nlang=en-US\n");
    PARSES(a, "a=1;b=2", "a=1\nb=2\n");
    PARSES(a, "  a = 1 ;\tb=2\t;  ", "a=1\nb=2\n");
    PARSES(a, ";;; ;", "");
    /* a piece without '=' or with an empty name is skipped */
    PARSES(a, "a=1; junk; b=2", "a=1\nb=2\n");
    PARSES(a, "=v; b=2", "b=2\n");
    PARSES(a, " =v", "");
    /* the first '=' splits */
    PARSES(a, "a=x=y==", "a=x=y==\n");
    PARSES(a, "a=; b=", "a=\nb=\n");
    /* §4.1.1: DQUOTEs around a value are not part of it */
    PARSES(a, "a=\"quoted\"; b=\"\"; c=\"", "a=quoted\nb=\nc=\"\n");
    PARSES(a, "a=\"x\"y\"", "a=x\"y\n");
    /* names are case-sensitive; repeated names kept, in order (§5.4 step 2) */
    PARSES(a, "A=1; a=2; a=3", "A=1\na=2\na=3\n");
    /* inner whitespace, non-ASCII and other bytes user agents send are kept */
    PARSES(a, "msg=hello world; u=\xc3\xa9; c=a,b", "msg=hello world\nu=\xc3\xa9\nc=a,b\n");
    /* nothing is percent-decoded */
    PARSES(a, "v=%41%3B", "v=%41%3B\n");
    /* a control character discards its cookie only */
    PARSES(a, "a=1\x01; b=2; c\x7f=3; d=4", "b=2\nd=4\n");
    PARSES(a, "a=1\0x; b=2", "b=2\n");
    PARSES(a, "a=1\r\n; b=2", "b=2\n");
    PARSES(a, "a=x\ty", "a=x\ty\n");
}

static void test_parse_limits(void **state)
{
    cshw_arena *a = *state;
    cshw_cookie_limits l;
    cshw_pairs p;
    memset(&l, 0xee, sizeof l);
    cshw_cookie_limits_init(&l);
    assert_int_equal(l.max_cookies, 180);
    assert_int_equal(l.max_bytes, 16384);
    assert_int_equal(l.max_cookie_bytes, 4096);

    l.max_cookies = 2;
    assert_int_equal(cshw_cookie_parse(a, "a=1; x; b=2", 11, &l, &p), 0);
    assert_int_equal(p.count, 2);
    p.count = 9;
    assert_int_equal(cshw_cookie_parse(a, "a=1; b=2; c=3", 13, &l, &p), CSHW_E_COOKIE_TOO_MANY);
    assert_int_equal(p.count, 0);

    cshw_cookie_limits_init(&l);
    l.max_bytes = 8;
    assert_int_equal(cshw_cookie_parse(a, "a=1; b=2", 8, &l, &p), 0);
    assert_int_equal(cshw_cookie_parse(a, "a=1; b=22", 9, &l, &p), CSHW_E_COOKIE_TOO_LARGE);

    cshw_cookie_limits_init(&l);
    l.max_cookie_bytes = 4; /* name and value, without '=', quotes kept out */
    assert_int_equal(cshw_cookie_parse(a, "ab=cd; x=\"yz\"", 13, &l, &p), 0);
    assert_int_equal(p.count, 2);
    assert_int_equal(cshw_cookie_parse(a, "ab=cd; x=yzw ", 13, &l, &p), 0);
    assert_int_equal(cshw_cookie_parse(a, "ab=cde", 6, &l, &p), CSHW_E_COOKIE_TOO_LARGE);

    /* 0: no limit */
    cshw_cookie_limits_init(&l);
    l.max_cookies = l.max_bytes = l.max_cookie_bytes = 0;
    static char many[64000];
    size_t n = 0;
    for (int i = 0; i < 4000; i++) n += (size_t)sprintf(many + n, "c%d=%d; ", i, i);
    assert_int_equal(cshw_cookie_parse(a, many, n, &l, &p), 0);
    assert_int_equal(p.count, 4000);
    assert_string_equal(p.items[3999].name, "c3999");
    /* with the defaults, the same header is too large */
    assert_int_equal(cshw_cookie_parse(a, many, n, NULL, &p), CSHW_E_COOKIE_TOO_LARGE);
    assert_int_equal(cshw_error_status(CSHW_E_COOKIE_TOO_LARGE), 431);
    assert_int_equal(cshw_error_status(CSHW_E_COOKIE_TOO_MANY), 431);
}

static void formats(cshw_arena *a, const cshw_cookie *c, const char *want)
{
    const char *out = NULL;
    int r = cshw_cookie_format(a, c, &out);
    if (r != 0) fail_msg("%s, want \"%s\"", cshw_error_name(r), want);
    assert_string_equal(out, want);
}

static void refuses(cshw_arena *a, const cshw_cookie *c, int want)
{
    const char *out = "untouched";
    int r = cshw_cookie_format(a, c, &out);
    if (r != want)
        fail_msg("got %s (%s), want %s", cshw_error_name(r), r ? "" : out, cshw_error_name(want));
    assert_string_equal(out, "untouched");
    assert_int_equal(cshw_error_status(r), 500);
}

/* RFC 6265 §4.1.1 set-cookie-string, attributes in cookie.h's order. */
static void test_format(void **state)
{
    cshw_arena *a = *state;
    cshw_cookie c;
    cshw_cookie_init(&c, "SID", "31d4d96e407aad42");
    formats(a, &c, "SID=31d4d96e407aad42");
    c.path = "/";
    c.domain = "example.com";
    c.secure = 1;
    c.http_only = 1;
    formats(a, &c, "SID=31d4d96e407aad42; Path=/; Domain=example.com; Secure; HttpOnly");

    cshw_cookie_init(&c, "lang", "en-US");
    c.expires = 784111777; /* RFC 9110 §5.6.7's example date */
    formats(a, &c, "lang=en-US; Expires=Sun, 06 Nov 1994 08:49:37 GMT");
    c.expires = 1; /* 0 is "none", 1 is a date */
    formats(a, &c, "lang=en-US; Expires=Thu, 01 Jan 1970 00:00:01 GMT");
    c.expires = 0;
    c.max_age_set = 1;
    c.max_age = 3600;
    formats(a, &c, "lang=en-US; Max-Age=3600");
    c.max_age = 0; /* meaningful: delete now */
    formats(a, &c, "lang=en-US; Max-Age=0");
    c.max_age = -5;
    formats(a, &c, "lang=en-US; Max-Age=0");

    cshw_cookie_init(&c, "x", NULL); /* NULL value: empty */
    formats(a, &c, "x=");
    c.value = "\"quoted\"";
    formats(a, &c, "x=\"quoted\"");
    c.same_site = CSHW_SAME_SITE_LAX;
    formats(a, &c, "x=\"quoted\"; SameSite=Lax");
    c.same_site = CSHW_SAME_SITE_STRICT;
    formats(a, &c, "x=\"quoted\"; SameSite=Strict");
    c.same_site = CSHW_SAME_SITE_NONE;
    c.secure = 1;
    formats(a, &c, "x=\"quoted\"; Secure; SameSite=None");

    /* every attribute at once, in order */
    cshw_cookie_init(&c, "__Host-id", "!#$%&'()*+-./09:<=>?@AZ[]^_`az{|}~");
    c.path = "/";
    c.expires = 253402300799; /* 9999-12-31T23:59:59Z, the last 4-digit year */
    c.max_age_set = 1;
    c.max_age = 1;
    c.secure = c.http_only = 1;
    c.same_site = CSHW_SAME_SITE_STRICT;
    formats(a, &c,
            "__Host-id=!#$%&'()*+-./09:<=>?@AZ[]^_`az{|}~; Path=/; "
            "Expires=Fri, 31 Dec 9999 23:59:59 GMT; Max-Age=1; Secure; HttpOnly; "
            "SameSite=Strict");
}

/* What could split the field or that a browser would reject is refused
 * (RFC 6265 §4.1.1 grammar), never written. */
static void test_format_refusals(void **state)
{
    cshw_arena *a = *state;
    cshw_cookie c;
    static const char *bad_names[] = {"",    "a b",      "a;b",  "a=b",    "a,b", "(x)", "a\"",
                                      "a/b", "\xc3\xa9", "a\tb", "a\r\nb", "@",   "a:b"};
    for (size_t i = 0; i < sizeof bad_names / sizeof bad_names[0]; i++) {
        cshw_cookie_init(&c, bad_names[i], "v");
        refuses(a, &c, CSHW_E_COOKIE_INVALID_NAME);
    }
    cshw_cookie_init(&c, NULL, "v");
    refuses(a, &c, CSHW_E_COOKIE_INVALID_NAME);
    assert_int_equal(cshw_cookie_format(a, NULL, &(const char *){NULL}),
                     CSHW_E_COOKIE_INVALID_NAME);

    static const char *bad_values[] = {"a b",     "a;b",    "a,b",  "a\"b",
                                       "a\\b",    "\x7f",   "\x01", "\xc3\xa9",
                                       "\"abc",   "abc\"",  "\"",   "a\r\nSet-Cookie: x=y",
                                       "\"a b\"", "\"a;b\""};
    for (size_t i = 0; i < sizeof bad_values / sizeof bad_values[0]; i++) {
        cshw_cookie_init(&c, "n", bad_values[i]);
        refuses(a, &c, CSHW_E_COOKIE_INVALID_VALUE);
    }

    static const char *bad_paths[] = {"/a;b", "/a\r\nX: y", "/\x7f", "/\xc3\xa9", "/\t"};
    for (size_t i = 0; i < sizeof bad_paths / sizeof bad_paths[0]; i++) {
        cshw_cookie_init(&c, "n", "v");
        c.path = bad_paths[i];
        refuses(a, &c, CSHW_E_COOKIE_INVALID_PATH);
    }
    cshw_cookie_init(&c, "n", "v");
    c.path = "/a b,c\"d"; /* av-octet allows these */
    formats(a, &c, "n=v; Path=/a b,c\"d");

    static const char *bad_domains[] = {"",        "ex ample.com", "a;b", "\xc3\xa9.com",
                                        "a_b.com", "a.com\r\n"};
    for (size_t i = 0; i < sizeof bad_domains / sizeof bad_domains[0]; i++) {
        cshw_cookie_init(&c, "n", "v");
        c.domain = bad_domains[i];
        refuses(a, &c, CSHW_E_COOKIE_INVALID_DOMAIN);
    }
    c.domain = ".Example-1.COM";
    formats(a, &c, "n=v; Domain=.Example-1.COM");

    /* RFC 6265 §5.1.1: years before 1601 are not dates; past 9999 no IMF-fixdate */
    cshw_cookie_init(&c, "n", "v");
    c.expires = 253402300800; /* 10000-01-01 */
    refuses(a, &c, CSHW_E_COOKIE_INVALID_EXPIRES);
    c.expires = -11676096001; /* 1600-12-31T23:59:59Z */
    refuses(a, &c, CSHW_E_COOKIE_INVALID_EXPIRES);
    c.expires = -11644473600; /* 1601-01-01 */
    formats(a, &c, "n=v; Expires=Mon, 01 Jan 1601 00:00:00 GMT");

    /* SameSite=None without Secure: browsers reject the cookie */
    cshw_cookie_init(&c, "n", "v");
    c.same_site = CSHW_SAME_SITE_NONE;
    refuses(a, &c, CSHW_E_COOKIE_SAMESITE_NONE_INSECURE);
    c.same_site = (cshw_same_site)7;
    c.secure = 1;
    refuses(a, &c, CSHW_E_COOKIE_INVALID_SAME_SITE);

    /* RFC 6265bis §4.1.3 prefixes (matched in any case) */
    cshw_cookie_init(&c, "__Secure-id", "v");
    refuses(a, &c, CSHW_E_COOKIE_PREFIX);
    c.name = "__SECURE-id";
    refuses(a, &c, CSHW_E_COOKIE_PREFIX);
    c.secure = 1;
    formats(a, &c, "__SECURE-id=v; Secure");
    cshw_cookie_init(&c, "__host-id", "v");
    c.secure = 1;
    refuses(a, &c, CSHW_E_COOKIE_PREFIX); /* no Path=/ */
    c.path = "/app";
    refuses(a, &c, CSHW_E_COOKIE_PREFIX);
    c.path = "/";
    c.domain = "example.com";
    refuses(a, &c, CSHW_E_COOKIE_PREFIX);
    c.domain = NULL;
    c.secure = 0;
    refuses(a, &c, CSHW_E_COOKIE_PREFIX);
    c.secure = 1;
    formats(a, &c, "__host-id=v; Path=/; Secure");
}

/* Browsers ignore a cookie whose name and value pass 4096 bytes and an
 * attribute value past 1024 (RFC 6265bis §5.6 steps 4 and 6). */
static void test_format_sizes(void **state)
{
    cshw_arena *a = *state;
    static char value[5000], path[1100];
    memset(value, 'v', sizeof value - 1);
    path[0] = '/';
    memset(path + 1, 'p', sizeof path - 2);
    cshw_cookie c;
    cshw_cookie_init(&c, "n", value + sizeof value - 1 - 4095);
    const char *out;
    assert_int_equal(cshw_cookie_format(a, &c, &out), 0);
    assert_int_equal(strlen(out), 4097);
    c.value = value + sizeof value - 1 - 4096;
    refuses(a, &c, CSHW_E_COOKIE_TOO_LONG);
    c.value = "v";
    c.path = path + sizeof path - 1 - 1024;
    c.path = path + sizeof path - 1 - 1024;
    ((char *)c.path)[0] = '/';
    assert_int_equal(cshw_cookie_format(a, &c, &out), 0);
    c.path = path + sizeof path - 1 - 1025;
    ((char *)c.path)[0] = '/';
    refuses(a, &c, CSHW_E_COOKIE_TOO_LONG);
    c.path = NULL;
    static char domain[1100];
    memset(domain, 'd', sizeof domain - 1);
    c.domain = domain + sizeof domain - 1 - 1025;
    refuses(a, &c, CSHW_E_COOKIE_TOO_LONG);
    c.domain = domain + sizeof domain - 1 - 1024;
    assert_int_equal(cshw_cookie_format(a, &c, &out), 0);
}

/* cookie.h: the limits are read by their size, as form.h's are (see
 * test_form.c): the first version's size alone in its allocation, a newer
 * caller's larger struct, and a size below the first version's. */
static void test_limits_sizes(void **state)
{
    cshw_arena *a = *state;
    cshw_pairs p;
    cshw_cookie_limits *old = malloc(CSHW_COOKIE_LIMITS_SIZE_0_3);
    assert_non_null(old);
    cshw_cookie_limits_init_sized(old, CSHW_COOKIE_LIMITS_SIZE_0_3);
    assert_int_equal(old->size, CSHW_COOKIE_LIMITS_SIZE_0_3);
    assert_int_equal(old->max_cookie_bytes, 4096);
    old->max_cookies = 1;
    assert_int_equal(cshw_cookie_parse(a, "a=1; b=2", 8, old, &p), CSHW_E_COOKIE_TOO_MANY);
    free(old);

    size_t big[sizeof(cshw_cookie_limits) / sizeof(size_t) + 4];
    memset(big, 0xff, sizeof big);
    cshw_cookie_limits *newer = (cshw_cookie_limits *)(void *)big;
    cshw_cookie_limits_init_sized(newer, sizeof big);
    assert_int_equal(newer->size, sizeof big);
    for (size_t i = sizeof(cshw_cookie_limits) / sizeof(size_t); i < sizeof big / sizeof big[0];
         i++)
        assert_int_equal(big[i], 0);
    big[sizeof big / sizeof big[0] - 1] = 1; /* a newer limit this library ignores */
    newer->max_cookies = 1;
    assert_int_equal(cshw_cookie_parse(a, "a=1", 3, newer, &p), 0);
    assert_int_equal(cshw_cookie_parse(a, "a=1; b=2", 8, newer, &p), CSHW_E_COOKIE_TOO_MANY);

    cshw_cookie_limits l;
    cshw_cookie_limits_init(&l);
    l.size = CSHW_COOKIE_LIMITS_SIZE_0_3 - 1;
    assert_int_equal(cshw_cookie_parse(a, "a=1", 3, &l, &p), -EINVAL);
    memset(&l, 0, sizeof l);
    assert_int_equal(cshw_cookie_parse(a, "a=1", 3, &l, &p), -EINVAL);
}

/* cshw_cookie is read by its size too: the first version's size alone in
 * its allocation is formatted; a newer caller's larger struct has what
 * this library does not know zeroed by the init, and ignored; a size
 * below the first version's is -EINVAL, from cshw_response_set_cookie
 * too (test_response.c). */
static void test_cookie_sizes(void **state)
{
    cshw_arena *a = *state;
    const char *out;
    cshw_cookie *old = malloc(CSHW_COOKIE_SIZE_0_3);
    assert_non_null(old);
    cshw_cookie_init_sized(old, CSHW_COOKIE_SIZE_0_3, "id", "42");
    assert_int_equal(old->size, CSHW_COOKIE_SIZE_0_3);
    old->same_site = CSHW_SAME_SITE_LAX;
    assert_int_equal(cshw_cookie_format(a, old, &out), 0);
    assert_string_equal(out, "id=42; SameSite=Lax");
    free(old);

    size_t big[sizeof(cshw_cookie) / sizeof(size_t) + 4];
    memset(big, 0xff, sizeof big);
    cshw_cookie *newer = (cshw_cookie *)(void *)big;
    cshw_cookie_init_sized(newer, sizeof big, "id", "42");
    assert_int_equal(newer->size, sizeof big);
    for (size_t i = sizeof(cshw_cookie) / sizeof(size_t); i < sizeof big / sizeof big[0]; i++)
        assert_int_equal(big[i], 0);
    big[sizeof big / sizeof big[0] - 1] = 1; /* a newer attribute this library ignores */
    newer->http_only = 1;
    assert_int_equal(cshw_cookie_format(a, newer, &out), 0);
    assert_string_equal(out, "id=42; HttpOnly");

    cshw_cookie c;
    cshw_cookie_init(&c, "id", "42");
    assert_int_equal(c.size, sizeof c);
    c.size = CSHW_COOKIE_SIZE_0_3 - 1;
    out = "unchanged";
    assert_int_equal(cshw_cookie_format(a, &c, &out), -EINVAL);
    assert_string_equal(out, "unchanged");
    memset(&c, 0, sizeof c);
    c.name = "id";
    assert_int_equal(cshw_cookie_format(a, &c, &out), -EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_parse, setup, teardown),
        cmocka_unit_test_setup_teardown(test_parse_limits, setup, teardown),
        cmocka_unit_test_setup_teardown(test_limits_sizes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cookie_sizes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_format, setup, teardown),
        cmocka_unit_test_setup_teardown(test_format_refusals, setup, teardown),
        cmocka_unit_test_setup_teardown(test_format_sizes, setup, teardown),
    };
    return cmocka_run_group_tests_name("cookie", tests, NULL, NULL);
}
