/* The field-value grammar (grammar.h) against the ABNF of RFC 9110: each
 * test names the rule and its section; expectations are written from the
 * RFC text, not from the code. */
#define _POSIX_C_SOURCE 200809L

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <cshttp/cshttp.h>

/* The input in a heap block of exactly its length, so that ASan sees a read
 * past the end. */
static char *exact(const char *s, size_t *n)
{
    *n = strlen(s);
    char *p = malloc(*n ? *n : 1);
    assert_non_null(p);
    memcpy(p, s, *n);
    return p;
}

/* RFC 9110 §5.6.2: tchar, listed by hand */
static void test_tchar(void **state)
{
    (void)state;
    const char *tchars = "!#$%&'*+-.^_`|~0123456789"
                         "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    for (int c = 0; c < 256; c++) {
        int want = c != 0 && strchr(tchars, c) != NULL;
        if (csh_is_tchar((unsigned char)c) != want) fail_msg("byte 0x%02x: tchar %d", c, !want);
    }
    size_t n;
    char *s = exact("GET /", &n);
    assert_int_equal(csh_token_len(s, n), 3);
    free(s);
    assert_true(csh_is_token("x-gzip", 6));
    assert_false(csh_is_token("", 0));
    assert_false(csh_is_token("a b", 3));
    assert_false(csh_is_token("a\"", 2));
    assert_false(csh_is_token("(a)", 3));
    assert_false(csh_is_token("\xc3\xa9", 2)); /* obs-text is not a tchar */
}

/* RFC 9110 §5.6.4: quoted-string, qdtext, quoted-pair */
static void test_quoted_string(void **state)
{
    (void)state;
    static const struct {
        const char *in;
        size_t len; /* 0: not a quoted-string */
        const char *content;
    } cases[] = {
        {"\"\"", 2, ""},
        {"\"abc\"", 5, "abc"},
        {"\"abc\" rest", 5, "abc"},
        {"\"a,b;c=d\"", 9, "a,b;c=d"},
        {"\"a\\\"b\"", 6, "a\"b"},      /* quoted-pair: \" */
        {"\"a\\\\b\"", 6, "a\\b"},      /* \\ */
        {"\"\\a\"", 4, "a"},            /* any VCHAR may be escaped */
        {"\"tab\there\"", 10, "tab\there"}, /* HTAB and SP are qdtext */
        {"\"\xe9t\xe9\"", 5, "\xe9t\xe9"},  /* obs-text */
        {"\"abc", 0, NULL},             /* unterminated */
        {"\"a\\\"", 0, NULL},           /* the escaped quote does not close */
        {"abc", 0, NULL},               /* no DQUOTE */
        {"\"a\x01\"", 0, NULL},         /* a control is not qdtext */
        {"\"a\x7f\"", 0, NULL},         /* nor DEL */
        {"\"a\\\x01\"", 0, NULL},       /* nor in a quoted-pair */
        {"\"", 0, NULL},
        {"", 0, NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t n;
        char *s = exact(cases[i].in, &n);
        size_t got = csh_quoted_len(s, n);
        if (got != cases[i].len) fail_msg("case %zu: length %zu, expected %zu", i, got, cases[i].len);
        if (got) {
            char out[64];
            size_t k = csh_quoted_unescape(s, got, out);
            assert_int_equal(k, strlen(cases[i].content));
            assert_memory_equal(out, cases[i].content, k);
            /* in place */
            k = csh_quoted_unescape(s, got, s);
            assert_memory_equal(s, cases[i].content, k);
        }
        free(s);
    }
}

/* Elements of a list, joined by '|' */
static void list_of(const char *in, char *out, size_t cap)
{
    size_t n;
    char *s = exact(in, &n);
    csh_list l;
    csh_span e;
    size_t o = 0;
    out[0] = '\0';
    csh_list_init(&l, s, n);
    while (csh_list_next(&l, &e)) {
        assert_true(e.len > 0 && e.off + e.len <= n);
        o += (size_t)snprintf(out + o, cap - o, "%s%.*s", o ? "|" : "", (int)e.len, s + e.off);
        assert_true(o < cap);
    }
    assert_false(csh_list_next(&l, &e)); /* stays at the end */
    free(s);
}

#define LIST(in, want)                                                                             \
    do {                                                                                           \
        char got_[256];                                                                            \
        list_of(in, got_, sizeof got_);                                                            \
        if (strcmp(got_, want) != 0) fail_msg("list \"%s\": got \"%s\", expected \"%s\"", in, got_, want); \
    } while (0)

/* RFC 9110 §5.6.1.2: "a recipient MUST accept and ignore empty elements";
 * the RFC's own examples: "foo,bar", "foo ,bar,", "foo , ,bar,charlie" are
 * valid #(element), "", "," and ",   ," have no element. */
static void test_list(void **state)
{
    (void)state;
    LIST("foo,bar", "foo|bar");
    LIST("foo ,bar,", "foo|bar");
    LIST("foo , ,bar,charlie", "foo|bar|charlie");
    LIST("", "");
    LIST(",", "");
    LIST(",   ,", "");
    LIST(" \t, chunked", "chunked");
    LIST("gzip;q=0.5 , br", "gzip;q=0.5|br");
    /* a comma in a quoted-string does not split (§5.6.4) */
    LIST("a;x=\"1,2\", b", "a;x=\"1,2\"|b");
    LIST("\"a\\\",b\", c", "\"a\\\",b\"|c");
    /* an unterminated quote runs to the end */
    LIST("a, \"b, c", "a|\"b, c");
    LIST("w/\"x\" , \"y\"", "w/\"x\"|\"y\"");
}

/* RFC 9110 §5.6.6: parameters = *( OWS ";" OWS [ parameter ] ),
 * parameter = name "=" value, value = token / quoted-string; no
 * whitespace around "=". */
static void test_params(void **state)
{
    (void)state;
    size_t n;
    char *s = exact(";a=1 ; B=\"x;y\";; ;c=tok ", &n);
    size_t pos = 0;
    csh_param p;
    assert_int_equal(csh_param_next(s, n, &pos, &p), 1);
    assert_true(csh_span_eq(s, p.name, "a") && csh_span_eq(s, p.value, "1") && !p.quoted);
    assert_int_equal(csh_param_next(s, n, &pos, &p), 1);
    assert_true(csh_span_ieq(s, p.name, "b") && csh_span_eq(s, p.value, "\"x;y\"") && p.quoted);
    assert_int_equal(csh_param_next(s, n, &pos, &p), 1);
    assert_true(csh_span_eq(s, p.name, "c") && csh_span_eq(s, p.value, "tok"));
    assert_int_equal(csh_param_next(s, n, &pos, &p), 0);
    assert_int_equal(csh_param_next(s, n, &pos, &p), 0);
    free(s);

    static const char *const bad[] = {
        "; a = 1", /* whitespace around "=" */
        ";a =1",   ";a= 1", ";a",      ";=1",      ";a=",  ";a=\"x", ";a=b c",
        "x",       ";a=(b)", ";a=1 x", ";\"a\"=1",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        s = exact(bad[i], &n);
        pos = 0;
        int r;
        while ((r = csh_param_next(s, n, &pos, &p)) == 1) {
        }
        if (r != CSH_E_INVALID_GRAMMAR) fail_msg("accepted: \"%s\"", bad[i]);
        free(s);
    }
    /* nothing, or only empty parameters */
    static const char *const empty[] = {"", "  ", ";", " ; ; "};
    for (size_t i = 0; i < sizeof empty / sizeof empty[0]; i++) {
        s = exact(empty[i], &n);
        pos = 0;
        assert_int_equal(csh_param_next(s, n, &pos, &p), 0);
        free(s);
    }
}

/* RFC 9110 §12.4.2: qvalue = ( "0" [ "." 0*3DIGIT ] ) / ( "1" [ "." 0*3("0") ] ) */
static void test_qvalue(void **state)
{
    (void)state;
    static const struct {
        const char *in;
        int want;
    } cases[] = {
        {"0", 0},        {"1", 1000},      {"0.", 0},       {"1.", 1000},  {"0.5", 500},
        {"0.05", 50},    {"0.005", 5},     {"0.999", 999},  {"1.0", 1000}, {"1.000", 1000},
        {"0.000", 0},    {"1.001", -1},    {"1.5", -1},     {"2", -1},     {"0.1234", -1},
        {".5", -1},      {"", -1},         {"0,5", -1},     {"-0", -1},    {"0.a", -1},
        {" 0.5", -1},    {"01", -1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t n;
        char *s = exact(cases[i].in, &n);
        int got = csh_qvalue_parse(s, n);
        int want = cases[i].want < 0 ? CSH_E_INVALID_GRAMMAR : cases[i].want;
        if (got != want) fail_msg("qvalue \"%s\": %d, expected %d", cases[i].in, got, want);
        free(s);
    }
}

/* RFC 9110 §12.4.2 weights on the elements of §12.5 (Accept-Encoding,
 * Accept-Language, Accept) */
static void test_weighted(void **state)
{
    (void)state;
    static const struct {
        const char *in;
        int q; /* -1: malformed */
        const char *item;
    } cases[] = {
        {"gzip", 1000, "gzip"},
        {"gzip;q=0.5", 500, "gzip"},
        {"gzip ; q=0.5", 500, "gzip"},
        {"gzip;Q=0", 0, "gzip"},                    /* parameter names are case-insensitive */
        {"gzip;level=9;q=0.2", 200, "gzip"},        /* other parameters are skipped */
        {"gzip;x=\"a;q=0\";q=0.3", 300, "gzip"},    /* a quoted ";q=0" is no weight */
        {"text/html;q=0.7", 700, "text/html"},      /* a media range */
        {"*", 1000, "*"},
        {"*;q=0", 0, "*"},
        {"en-US;q=0.8", 800, "en-US"},
        {"gzip;q=2", -1, NULL},
        {"gzip;q=\"0.5\"", -1, NULL},               /* qvalue is not a quoted-string */
        {"gzip;q=", -1, NULL},
        {"gzip;q", -1, NULL},
        {"gzip junk", -1, NULL},
        {";q=1", -1, NULL},
        {"\"gzip\"", -1, NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t n;
        char *s = exact(cases[i].in, &n);
        csh_span item = {0, 0};
        int got = csh_weighted_parse(s, n, &item);
        int want = cases[i].q < 0 ? CSH_E_INVALID_GRAMMAR : cases[i].q;
        if (got != want) fail_msg("element \"%s\": %d, expected %d", cases[i].in, got, want);
        if (got >= 0 && !csh_span_eq(s, item, cases[i].item))
            fail_msg("element \"%s\": item \"%.*s\"", cases[i].in, (int)item.len, s + item.off);
        free(s);
    }
}

/* RFC 9110 §8.8.3: entity-tag = [ weak ] opaque-tag, weak = %s"W/",
 * opaque-tag = DQUOTE *etagc DQUOTE, etagc = %x21 / %x23-7E / obs-text */
static void test_etag(void **state)
{
    (void)state;
    static const struct {
        const char *in;
        size_t len;
        int weak;
    } cases[] = {
        {"\"xyzzy\"", 7, 0},   {"W/\"xyzzy\"", 9, 1}, {"\"\"", 2, 0},     {"W/\"\"", 4, 1},
        {"\"a\" , \"b\"", 3, 0}, {"\"a\\b\"", 5, 0},  /* a backslash is etagc, not an escape */
        {"w/\"x\"", 0, 0},     /* %s"W/": case-sensitive */
        {"\"a b\"", 0, 0},     {"\"a", 0, 0},        {"xyzzy", 0, 0},  {"W/", 0, 0},
        {"W/xyzzy", 0, 0},     {"\"a\x7f\"", 0, 0},  {"\"\xe9\"", 3, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t n;
        char *s = exact(cases[i].in, &n);
        int weak = -1;
        size_t got = csh_etag_len(s, n, &weak);
        if (got != cases[i].len) fail_msg("etag \"%s\": %zu, expected %zu", cases[i].in, got, cases[i].len);
        if (got && weak != cases[i].weak) fail_msg("etag \"%s\": weak %d", cases[i].in, weak);
        free(s);
    }
}

/* RFC 9110 §5.6.7: the three forms of the RFC's example all mean
 * 1994-11-06T08:49:37Z = 784111777. */
static void test_http_date(void **state)
{
    (void)state;
    const int64_t now = 1767225600; /* 2026-01-01 */
    static const char *const same[] = {
        "Sun, 06 Nov 1994 08:49:37 GMT", /* IMF-fixdate */
        "Sunday, 06-Nov-94 08:49:37 GMT", /* obsolete RFC 850 format */
        "Sun Nov  6 08:49:37 1994",      /* ANSI C's asctime() format */
    };
    for (size_t i = 0; i < 3; i++) {
        size_t n;
        char *s = exact(same[i], &n);
        int64_t t = 0;
        assert_int_equal(csh_http_date_parse(s, n, now, &t), CSH_OK);
        if (t != 784111777) fail_msg("\"%s\": %lld", same[i], (long long)t);
        free(s);
    }
    char out[CSH_HTTP_DATE_SIZE];
    csh_http_date_format(784111777, out);
    assert_string_equal(out, "Sun, 06 Nov 1994 08:49:37 GMT");
    csh_http_date_format(0, out);
    assert_string_equal(out, "Thu, 01 Jan 1970 00:00:00 GMT");
    csh_http_date_format(-1, out);
    assert_string_equal(out, "Wed, 31 Dec 1969 23:59:59 GMT");
    csh_http_date_format(951825600, out);
    assert_string_equal(out, "Tue, 29 Feb 2000 12:00:00 GMT");
    csh_http_date_format(INT64_MAX, out); /* clamped to 4-digit years */
    assert_string_equal(out, "Fri, 31 Dec 9999 23:59:59 GMT");
    csh_http_date_format(INT64_MIN, out);
    assert_string_equal(out, "Sat, 01 Jan 0000 00:00:00 GMT");

    /* round trip */
    for (int64_t t = -5000000000LL; t < 5000000000LL; t += 86400 * 37 + 3671) {
        int64_t back;
        csh_http_date_format(t, out);
        assert_int_equal(csh_http_date_parse(out, strlen(out), now, &back), CSH_OK);
        assert_true(back == t);
    }

    /* §5.6.7: a two-digit year more than 50 years ahead is in the past
     * century: seen from 2026, "76" is 2076 (50 years), "77" is 1977 */
    int64_t t;
    assert_int_equal(csh_http_date_parse("Friday, 01-Jan-76 00:00:00 GMT", 30, now, &t), CSH_OK);
    csh_http_date_format(t, out);
    assert_string_equal(out, "Wed, 01 Jan 2076 00:00:00 GMT");
    assert_int_equal(csh_http_date_parse("Saturday, 01-Jan-77 00:00:00 GMT", 32, now, &t), CSH_OK);
    csh_http_date_format(t, out);
    assert_string_equal(out, "Sat, 01 Jan 1977 00:00:00 GMT");

    static const char *const bad[] = {
        "",
        "Sun, 06 Nov 1994 08:49:37 UTC",  /* GMT only */
        "Sun, 6 Nov 1994 08:49:37 GMT",   /* 2DIGIT day */
        "Sun, 06 nov 1994 08:49:37 GMT",  /* month names are case-sensitive */
        "Sun, 30 Feb 2000 08:49:37 GMT",  /* no such day */
        "Sun, 29 Feb 1900 08:49:37 GMT",  /* 1900 is not a leap year */
        "Sun, 06 Nov 1994 24:00:00 GMT",
        "Sun, 06 Nov 1994 08:49:37 GMT ", /* trailing space */
        "Sunday, 06-Nov-1994 08:49:37 GMT",
        "Sun Nov 6 08:49:37 1994",        /* asctime pads the day with a space */
        "Sun, 06 Nov +994 08:49:37 GMT",
        "Xyz, 06 Nov 1994 08:49:37 GMT",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        size_t n;
        char *s = exact(bad[i], &n);
        t = 42;
        if (csh_http_date_parse(s, n, now, &t) != CSH_E_INVALID_GRAMMAR)
            fail_msg("accepted: \"%s\"", bad[i]);
        assert_true(t == 42);
        free(s);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tchar),    cmocka_unit_test(test_quoted_string),
        cmocka_unit_test(test_list),     cmocka_unit_test(test_params),
        cmocka_unit_test(test_qvalue),   cmocka_unit_test(test_weighted),
        cmocka_unit_test(test_etag),     cmocka_unit_test(test_http_date),
    };
    return cmocka_run_group_tests_name("grammar", tests, NULL, NULL);
}
