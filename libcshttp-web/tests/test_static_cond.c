/* What the static-file handler reads in request headers: HTTP-dates
 * (RFC 9110 §5.6.7), entity-tag lists (§8.8.3.2), Range (§14.1.1) and
 * Accept-Encoding weights (§12.5.3). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "static_priv.h"

/* ---- HTTP-date ---- */

static void check_format(time_t t, const char *want)
{
    char buf[CSHW__DATE_SIZE];
    cshw__date_format(t, buf);
    assert_string_equal(buf, want);
}

static void test_date_format(void **state)
{
    (void)state;
    check_format(0, "Thu, 01 Jan 1970 00:00:00 GMT");
    check_format(784111777, "Sun, 06 Nov 1994 08:49:37 GMT"); /* the RFC's example */
    check_format(951825600, "Tue, 29 Feb 2000 12:00:00 GMT");
    check_format(1709251199, "Thu, 29 Feb 2024 23:59:59 GMT");
    check_format(-1, "Wed, 31 Dec 1969 23:59:59 GMT");
    check_format((time_t)-11670912000LL, "Wed, 01 Mar 1600 00:00:00 GMT");
    /* outside 4-digit years: clamped, never longer than 29 bytes */
    check_format((time_t)INT64_MAX / 2, "Fri, 31 Dec 9999 23:59:59 GMT");
    check_format((time_t)(-INT64_MAX / 2), "Sat, 01 Jan 0000 00:00:00 GMT");
}

static void test_date_parse_three_forms(void **state)
{
    (void)state;
    time_t t = 0;
    assert_int_equal(cshw__date_parse("Sun, 06 Nov 1994 08:49:37 GMT", &t), 0);
    assert_int_equal((long long)t, 784111777);
    t = 0;
    assert_int_equal(cshw__date_parse("Sunday, 06-Nov-94 08:49:37 GMT", &t), 0);
    assert_int_equal((long long)t, 784111777);
    t = 0;
    assert_int_equal(cshw__date_parse("Sun Nov  6 08:49:37 1994", &t), 0);
    assert_int_equal((long long)t, 784111777);
    assert_int_equal(cshw__date_parse("Tue, 29 Feb 2000 12:00:00 GMT", &t), 0);
    assert_int_equal((long long)t, 951825600);
    /* round trip over a range of times */
    for (long long s = -5000000000LL; s < 5000000000LL; s += 86400 * 37 + 3671) {
        char buf[CSHW__DATE_SIZE];
        cshw__date_format((time_t)s, buf);
        assert_int_equal(cshw__date_parse(buf, &t), 0);
        assert_int_equal((long long)t, s);
    }
}

static void test_date_parse_rfc850_century(void **state)
{
    (void)state;
    /* §5.6.7: a two-digit year more than 50 years ahead is in the past */
    time_t now = time(NULL), t;
    struct tm tm;
    gmtime_r(&now, &tm);
    int year = tm.tm_year + 1900;
    char buf[64];
    int ahead = (year + 49) % 100, past = (year + 51) % 100;
    snprintf(buf, sizeof buf, "Monday, 01-Jan-%02d 00:00:00 GMT", ahead);
    assert_int_equal(cshw__date_parse(buf, &t), 0);
    gmtime_r(&t, &tm);
    assert_int_equal(tm.tm_year + 1900, year + 49);
    snprintf(buf, sizeof buf, "Monday, 01-Jan-%02d 00:00:00 GMT", past);
    assert_int_equal(cshw__date_parse(buf, &t), 0);
    gmtime_r(&t, &tm);
    assert_int_equal(tm.tm_year + 1900, year + 51 - 100);
}

static void test_date_parse_invalid(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "",
        "yesterday",
        "Sun, 06 Nov 1994 08:49:37 UTC",
        "Sun, 06 Nov 1994 08:49:37 gmt",
        "Sun, 6 Nov 1994 08:49:37 GMT",
        "Sun,  06 Nov 1994 08:49:37 GMT",
        "Sun, 06 Nov 94 08:49:37 GMT",
        "Sun, 06 nov 1994 08:49:37 GMT",
        "Sun, 06 Nox 1994 08:49:37 GMT",
        "Sun, 30 Feb 2000 08:49:37 GMT",
        "Sun, 29 Feb 1900 08:49:37 GMT",
        "Sun, 31 Apr 2000 08:49:37 GMT",
        "Sun, 00 Nov 1994 08:49:37 GMT",
        "Sun, 06 Nov 1994 24:00:00 GMT",
        "Sun, 06 Nov 1994 08:60:00 GMT",
        "Sun, 06 Nov 1994 08:49:61 GMT",
        "Sun, 06 Nov 1994 08:49:37 GMT ",
        "Xyz, 06 Nov 1994 08:49:37 GMT",
        "Sun, 06 Nov 1994 8:49:37 GMT",
        "Sun, 06 Nov 1994 08-49-37 GMT",
        "Sun, 06 Nov 199x 08:49:37 GMT",
        "Sun, 06 Nov +994 08:49:37 GMT",
        "Sunday, 06-Nov-1994 08:49:37 GMT",
        "Sun, 06-Nov-94 08:49:37 GMT",
        "Sunny, 06-Nov-94 08:49:37 GMT",
        "Sunday, 06-Nov-94 08:49:37 UTC",
        "Sun Nov 6 08:49:37 1994",
        "Sun Nov  6 08:49:37 94",
        "Sun Nov 06 08:49:37 1994 ",
        "Sun Nox  6 08:49:37 1994",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        time_t t = 12345;
        if (cshw__date_parse(bad[i], &t) != -1) fail_msg("accepted: \"%s\"", bad[i]);
        assert_int_equal((long long)t, 12345);
    }
    /* a leap second reads as :59; asctime with a two-digit day */
    time_t t;
    assert_int_equal(cshw__date_parse("Sun, 06 Nov 1994 08:49:60 GMT", &t), 0);
    assert_int_equal((long long)t, 784111799);
    assert_int_equal(cshw__date_parse("Sun Nov 16 08:49:37 1994", &t), 0);
    assert_int_equal((long long)t, 784111777 + 10 * 86400);
}

/* ---- entity-tags (§8.8.3.2, §13.1.1, §13.1.2) ---- */

static void test_etag_match(void **state)
{
    (void)state;
    const char *e = "\"3e8-abc\"";
    assert_true(cshw__etag_match("\"3e8-abc\"", e, 0));
    assert_true(cshw__etag_match("\"3e8-abc\"", e, 1));
    /* a weak tag never matches by strong comparison, does by weak */
    assert_false(cshw__etag_match("W/\"3e8-abc\"", e, 0));
    assert_true(cshw__etag_match("W/\"3e8-abc\"", e, 1));
    assert_true(cshw__etag_match("\"x\", \"3e8-abc\"", e, 0));
    assert_true(cshw__etag_match("\"x\",W/\"y\" ,\t\"3e8-abc\" ", e, 1));
    assert_true(cshw__etag_match(" , ,\"3e8-abc\",", e, 0)); /* empty list elements */
    assert_false(cshw__etag_match("\"3e8-abd\"", e, 1));
    assert_false(cshw__etag_match("\"3e8-ab\"", e, 1));
    assert_false(cshw__etag_match("\"3e8-abc", e, 1));
    assert_false(cshw__etag_match("3e8-abc", e, 1));
    assert_false(cshw__etag_match("w/\"3e8-abc\"", e, 1)); /* "W/" is case-sensitive */
    assert_false(cshw__etag_match("", e, 1));
    /* a malformed element stops the list */
    assert_false(cshw__etag_match("junk, \"3e8-abc\"", e, 1));
    assert_false(cshw__etag_match("\"a\" \"3e8-abc\"", e, 1));
    assert_false(cshw__etag_match("\"a b\", \"3e8-abc\"", e, 1));
    /* "*": any current representation, even one without a tag */
    assert_true(cshw__etag_match("*", e, 0));
    assert_true(cshw__etag_match(" * ", NULL, 1));
    assert_false(cshw__etag_match("*, \"x\"", e, 1));
    assert_false(cshw__etag_match("\"3e8-abc\"", NULL, 1));
}

/* ---- Range (§14.1.1, §14.2) ---- */

static int ranges(const char *v, uint64_t size, cshw__range *r)
{
    return cshw__range_parse(v, size, r, 16);
}

static void test_range_forms(void **state)
{
    (void)state;
    cshw__range r[16];
    assert_int_equal(ranges("bytes=0-499", 1000, r), 1);
    assert_true(r[0].first == 0 && r[0].last == 499);
    assert_int_equal(ranges("bytes=500-999", 1000, r), 1);
    assert_true(r[0].first == 500 && r[0].last == 999);
    assert_int_equal(ranges("bytes=-500", 1000, r), 1); /* suffix */
    assert_true(r[0].first == 500 && r[0].last == 999);
    assert_int_equal(ranges("bytes=9500-", 10000, r), 1); /* open */
    assert_true(r[0].first == 9500 && r[0].last == 9999);
    assert_int_equal(ranges("bytes=0-0", 1000, r), 1);
    assert_true(r[0].first == 0 && r[0].last == 0);
    assert_int_equal(ranges("bytes=-1", 1000, r), 1);
    assert_true(r[0].first == 999 && r[0].last == 999);
    /* clamped: a last-pos past the end, a suffix longer than the file */
    assert_int_equal(ranges("bytes=900-5000", 1000, r), 1);
    assert_true(r[0].first == 900 && r[0].last == 999);
    assert_int_equal(ranges("bytes=-5000", 1000, r), 1);
    assert_true(r[0].first == 0 && r[0].last == 999);
    /* the unit is case-insensitive; OWS around commas */
    assert_int_equal(ranges("BYTES=1-2", 10, r), 1);
    assert_int_equal(ranges("Bytes=1-2 ,\t4-5", 10, r), 2);
    assert_true(r[1].first == 4 && r[1].last == 5);
    /* saturating numbers */
    assert_int_equal(ranges("bytes=0-99999999999999999999999999", 10, r), 1);
    assert_true(r[0].last == 9);
    assert_int_equal(ranges("bytes=-99999999999999999999999999", 10, r), 1);
    assert_true(r[0].first == 0);
    assert_int_equal(ranges("bytes=99999999999999999999999999-", 10, r), 0);
}

static void test_range_unsatisfiable(void **state)
{
    (void)state;
    cshw__range r[16];
    assert_int_equal(ranges("bytes=1000-", 1000, r), 0);
    assert_int_equal(ranges("bytes=1000-2000", 1000, r), 0);
    assert_int_equal(ranges("bytes=-0", 1000, r), 0);
    assert_int_equal(ranges("bytes=1000-1000, -0, 5000-", 1000, r), 0);
    /* one satisfiable among others is enough */
    assert_int_equal(ranges("bytes=1000-1000, 5-6", 1000, r), 1);
    assert_true(r[0].first == 5 && r[0].last == 6);
}

static void test_range_ignored(void **state)
{
    (void)state;
    cshw__range r[16];
    static const char *const bad[] = {
        "",           "bytes",       "bytes=",        "bytes= ",     "bytes=,",       "bytes 0-5",
        "bytes =0-5", "items=0-5",   "bytes=abc",     "bytes=5",     "bytes=5-4",     "bytes=-",
        "bytes=--5",  "bytes=0-5;x", "bytes=0-5 6",   "bytes=0x10-", "bytes=1-2,x-3", "bytes=+1-2",
        "bytes=1 -2", "bytes=1- 2",  "bytes=0-5,5-4",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (ranges(bad[i], 1000, r) != -1) fail_msg("not ignored: \"%s\"", bad[i]);
    /* an empty representation: Range ignored */
    assert_int_equal(ranges("bytes=-5", 0, r), -1);
    assert_int_equal(ranges("bytes=0-", 0, r), -1);
}

static void test_range_limit(void **state)
{
    (void)state;
    cshw__range r[16];
    char v[512] = "bytes=";
    for (int i = 0; i < 16; i++)
        snprintf(v + strlen(v), sizeof v - strlen(v), "%s%d-%d", i ? "," : "", i * 10, i * 10 + 1);
    assert_int_equal(cshw__range_parse(v, 1000, r, 16), 16);
    strcat(v, ",900-901");
    assert_int_equal(cshw__range_parse(v, 1000, r, 16), -1);
    /* the limit counts range-specs, satisfiable or not */
    assert_int_equal(cshw__range_parse("bytes=5000-,6000-,1-2", 1000, r, 2), -1);
}

static void test_range_coalesce(void **state)
{
    (void)state;
    cshw__range r[16];
    /* disjoint: the order asked for is kept */
    assert_int_equal(ranges("bytes=50-59,0-9", 1000, r), 2);
    assert_true(r[0].first == 50 && r[1].first == 0);
    /* overlapping */
    assert_int_equal(ranges("bytes=0-10,5-20", 1000, r), 1);
    assert_true(r[0].first == 0 && r[0].last == 20);
    /* touching, out of order */
    assert_int_equal(ranges("bytes=20-29,0-9,10-19", 1000, r), 1);
    assert_true(r[0].first == 0 && r[0].last == 29);
    /* some merge, some not: ascending */
    assert_int_equal(ranges("bytes=500-,0-1,-600", 1000, r), 2);
    assert_true(r[0].first == 0 && r[0].last == 1);
    assert_true(r[1].first == 400 && r[1].last == 999);
    /* the same range twice */
    assert_int_equal(ranges("bytes=3-4,3-4", 1000, r), 1);
    assert_true(r[0].first == 3 && r[0].last == 4);
    /* a gap of one byte is not touching */
    assert_int_equal(ranges("bytes=0-1,3-4", 1000, r), 2);
}

/* ---- Accept-Encoding (§12.5.3, §12.4.2) ---- */

static int aq(const char *v)
{
    const char *vals[1] = {v};
    return cshw__accept_q(vals, 1, "gzip");
}

static void test_accept_encoding(void **state)
{
    (void)state;
    assert_int_equal(aq("gzip"), 1000);
    assert_int_equal(aq("GZip"), 1000);
    assert_int_equal(aq("deflate, gzip;q=0.5"), 500);
    assert_int_equal(aq("gzip ; q=0.001"), 1);
    assert_int_equal(aq("gzip;Q=1.000"), 1000);
    assert_int_equal(aq("gzip;q=0"), 0);
    assert_int_equal(aq("gzip;q=0.000"), 0);
    assert_int_equal(aq("x-gzip"), 1000);
    assert_int_equal(aq("br"), 0);
    assert_int_equal(aq(""), 0);
    assert_int_equal(aq("identity"), 0);
    assert_int_equal(aq("*"), 1000);
    assert_int_equal(aq("*;q=0.3"), 300);
    /* an explicit entry wins over "*" */
    assert_int_equal(aq("gzip;q=0, *"), 0);
    assert_int_equal(aq("*;q=0, gzip;q=0.2"), 200);
    assert_int_equal(aq("br;q=1.0, gzip;q=0.8, *;q=0.1"), 800);
    /* other parameters, quoted strings */
    assert_int_equal(aq("gzip;level=\"a,b\";q=0.7"), 700);
    /* malformed weights make the element not count */
    assert_int_equal(aq("gzip;q=2"), 0);
    assert_int_equal(aq("gzip;q=1.5"), 0);
    assert_int_equal(aq("gzip;q=0.1234"), 0);
    assert_int_equal(aq("gzip;q="), 0);
    assert_int_equal(aq("gzip;q"), 0);
    assert_int_equal(aq("gzip junk"), 0);
    assert_int_equal(aq("gzipx"), 0);
    /* several field lines */
    const char *vals[2] = {"br", "gzip;q=0.4"};
    assert_int_equal(cshw__accept_q(vals, 2, "gzip"), 400);
    assert_int_equal(cshw__accept_q(vals, 0, "gzip"), 0);
}

/* The one decision of the toolkit (live gzip and precompressed files):
 * RFC 9110 §12.5.3. Expectations from the RFC: a coding not listed and not
 * covered by "*" is not acceptable; q=0 means "not acceptable"; identity is
 * acceptable unless refused, and competes only when weighed. */
static int prefers(const char *v)
{
    const char *vals[1] = {v};
    return cshw__accept_prefers(vals, 1, "gzip");
}

static void test_accept_prefers(void **state)
{
    (void)state;
    static const struct {
        const char *v;
        int gzip;
    } cases[] = {
        {"gzip", 1},
        {"x-gzip", 1},                      /* §8.4.1.3 */
        {"*", 1},                           /* "*" matches any coding not listed */
        {"br, *;q=0.1", 1},                 /* gzip and identity both through "*" */
        {"identity;q=0.5, gzip;q=0.8", 1},  /* the client prefers gzip */
        {"gzip;q=0.5, identity;q=0.5", 1},  /* a tie goes to the coding */
        {", , gzip", 1},                    /* §5.6.1: empty elements */
        {"gzip;q=0.5", 1},                  /* identity not weighed: no competition */
        {"gzip;q=0, gzip", 1},              /* the highest of a coding's entries */
        {"gzip, gzip;q=0", 1},              /*   whatever their order */
        {"gzip;q=0", 0},
        {"*;q=0", 0},
        {"gzip;q=0, *", 0},                 /* an explicit entry beats "*" */
        {"gzip;q=0.5, identity", 0},        /* identity weighed higher */
        {"gzip;q=0.5, *", 0},               /* "*" stands for identity here */
        {"identity", 0},                    /* gzip not listed */
        {"br", 0},
        {"", 0},
        {"gzip;q=2", 0},                    /* a malformed element is ignored */
        {"gzip;q=\"1\"", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        if (prefers(cases[i].v) != cases[i].gzip)
            fail_msg("\"%s\": gzip %d, expected %d", cases[i].v, !cases[i].gzip, cases[i].gzip);
    /* several field lines are one list (§5.3) */
    const char *two[2] = {"gzip;q=0.5", "identity;q=0.9"};
    assert_int_equal(cshw__accept_prefers(two, 2, "gzip"), 0);
    /* no field at all: nothing is preferred */
    assert_int_equal(cshw__accept_prefers(two, 0, "gzip"), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_date_format),
        cmocka_unit_test(test_date_parse_three_forms),
        cmocka_unit_test(test_date_parse_rfc850_century),
        cmocka_unit_test(test_date_parse_invalid),
        cmocka_unit_test(test_etag_match),
        cmocka_unit_test(test_range_forms),
        cmocka_unit_test(test_range_unsatisfiable),
        cmocka_unit_test(test_range_ignored),
        cmocka_unit_test(test_range_limit),
        cmocka_unit_test(test_range_coalesce),
        cmocka_unit_test(test_accept_encoding),
        cmocka_unit_test(test_accept_prefers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
