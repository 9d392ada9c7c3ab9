/* form.c: the WHATWG URL standard's application/x-www-form-urlencoded parser
 * (§5.1) and the limits of form.h. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cshttp/web/arena.h"
#include "cshttp/web/error.h"
#include "cshttp/web/form.h"

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

/* Parses `in` and compares with "name=value" strings given as
 * (name, name_len, value, value_len) quadruples. */
static void parses(cshw_arena *a, const char *in, size_t n, ...)
{
    cshw_pairs p = {(const cshw_pair *)1, 99};
    assert_int_equal(cshw_form_parse(a, in, strlen(in), NULL, &p), 0);
    assert_int_equal(p.count, n);
    va_list ap;
    va_start(ap, n);
    for (size_t i = 0; i < n; i++) {
        const char *name = va_arg(ap, const char *);
        size_t nlen = va_arg(ap, size_t);
        const char *value = va_arg(ap, const char *);
        size_t vlen = va_arg(ap, size_t);
        if (p.items[i].name_len != nlen || memcmp(p.items[i].name, name, nlen) != 0 ||
            p.items[i].value_len != vlen || memcmp(p.items[i].value, value, vlen) != 0)
            fail_msg("\"%s\" pair %zu: got \"%.*s\"=\"%.*s\"", in, i, (int)p.items[i].name_len,
                     p.items[i].name, (int)p.items[i].value_len, p.items[i].value);
        assert_int_equal(p.items[i].name[nlen], '\0');
        assert_int_equal(p.items[i].value[vlen], '\0');
    }
    va_end(ap);
}

#define S(s) (s), (sizeof(s) - 1)

/* WHATWG URL §5.1 steps: split on '&', skip empty sequences, split on the
 * first '=', replace '+' by space, percent-decode. */
static void test_whatwg_parser(void **state)
{
    cshw_arena *a = *state;
    parses(a, "", 0);
    parses(a, "&", 0);
    parses(a, "&&&", 0);
    parses(a, "a=1", 1, S("a"), S("1"));
    parses(a, "a=1&b=2", 2, S("a"), S("1"), S("b"), S("2"));
    parses(a, "&a=1&&b=2&", 2, S("a"), S("1"), S("b"), S("2"));
    /* no '=': a name with an empty value */
    parses(a, "flag", 1, S("flag"), S(""));
    parses(a, "flag&x=", 2, S("flag"), S(""), S("x"), S(""));
    /* the first '=' splits; later ones are in the value */
    parses(a, "a=b=c", 1, S("a"), S("b=c"));
    parses(a, "==", 1, S(""), S("="));
    /* an empty name is kept */
    parses(a, "=v", 1, S(""), S("v"));
    parses(a, "=", 1, S(""), S(""));
    /* '+' is a space in names and values; %2B is '+' */
    parses(a, "first+name=J+%2B+K", 1, S("first name"), S("J + K"));
    /* percent-decoding, either case; malformed escapes stay */
    parses(a, "%61%3d=%C3%A9%e2%82%ac", 1, S("a="), S("\xc3\xa9\xe2\x82\xac"));
    parses(a, "q=100%&r=%zz%4", 2, S("q"), S("100%"), S("r"), S("%zz%4"));
    /* an encoded '&' or '=' does not split */
    parses(a, "a%26b=c%3Dd", 1, S("a&b"), S("c=d"));
    /* NUL is a byte of the value */
    parses(a, "n=a%00b", 1, S("n"), S("a\0b"));
    /* repeated names kept, in order */
    parses(a, "x=1&y=2&x=3&x", 4, S("x"), S("1"), S("y"), S("2"), S("x"), S("3"), S("x"), S(""));
    /* ';' is not a separator (HTML 4's recommendation, dropped by WHATWG) */
    parses(a, "a=1;b=2", 1, S("a"), S("1;b=2"));
    /* bytes are not validated as UTF-8 */
    parses(a, "\xff=%ff", 1, S("\xff"), S("\xff"));
}

static void test_lookup_through_pairs(void **state)
{
    cshw_arena *a = *state;
    cshw_pairs p;
    const char *in = "color=red&size=L&color=blue";
    assert_int_equal(cshw_form_parse(a, in, strlen(in), NULL, &p), 0);
    assert_string_equal(cshw_pairs_get(&p, "color"), "red");
    assert_string_equal(cshw_pairs_get(&p, "size"), "L");
    assert_null(cshw_pairs_get(&p, "Color")); /* names are case-sensitive */
    const char *all[4];
    assert_int_equal(cshw_pairs_get_all(&p, "color", all, 4), 2);
    assert_string_equal(all[1], "blue");
}

static void test_defaults(void **state)
{
    (void)state;
    cshw_form_limits l;
    memset(&l, 0xff, sizeof l);
    cshw_form_limits_init(&l);
    assert_int_equal(l.max_pairs, 1000);
    assert_int_equal(l.max_bytes, 2097152);
    assert_int_equal(l.max_name_len, 1024);
    assert_int_equal(l.max_value_len, 1048576);
}

static void fails(cshw_arena *a, const char *in, size_t len, const cshw_form_limits *l, int want)
{
    cshw_pairs p = {(const cshw_pair *)1, 99};
    int r = cshw_form_parse(a, in, len, l, &p);
    if (r != want) fail_msg("got %s, want %s", cshw_error_name(r), cshw_error_name(want));
    assert_int_equal(p.count, 0);
    assert_null(p.items);
}

/* Each limit at its edge: at the limit passes, one past fails with the code
 * a server turns into 413. */
static void test_limits(void **state)
{
    cshw_arena *a = *state;
    cshw_form_limits l;
    cshw_pairs p;
    cshw_form_limits_init(&l);
    l.max_bytes = 7;
    assert_int_equal(cshw_form_parse(a, "a=1&b=2", 7, &l, &p), 0);
    fails(a, "a=1&b=22", 8, &l, CSHW_E_FORM_TOO_LARGE);

    cshw_form_limits_init(&l);
    l.max_pairs = 2;
    assert_int_equal(cshw_form_parse(a, "a&&b&", 5, &l, &p), 0); /* empty pieces do not count */
    assert_int_equal(p.count, 2);
    fails(a, "a&b&c", 5, &l, CSHW_E_FORM_TOO_MANY_PAIRS);

    cshw_form_limits_init(&l);
    l.max_name_len = 3;
    assert_int_equal(cshw_form_parse(a, "%61bc=1", 7, &l, &p), 0); /* decoded length counts */
    fails(a, "x=1&abcd=1", 10, &l, CSHW_E_FORM_NAME_TOO_LONG);

    cshw_form_limits_init(&l);
    l.max_value_len = 3;
    assert_int_equal(cshw_form_parse(a, "v=%41%42%43", 11, &l, &p), 0);
    assert_string_equal(p.items[0].value, "ABC");
    fails(a, "v=ABCD", 6, &l, CSHW_E_FORM_VALUE_TOO_LONG);

    /* 0 means no limit */
    cshw_form_limits_init(&l);
    l.max_pairs = l.max_bytes = l.max_name_len = l.max_value_len = 0;
    char big[5000];
    memset(big, 'a', sizeof big);
    big[1] = '=';
    assert_int_equal(cshw_form_parse(a, big, sizeof big, &l, &p), 0);
    assert_int_equal(p.items[0].value_len, sizeof big - 2);

    /* the default pair limit: 1000 pairs pass, 1001 fail */
    static char many[1001 * 4];
    size_t n = 0;
    for (int i = 0; i < 1001; i++) n += (size_t)sprintf(many + n, "%sa=", i ? "&" : "");
    assert_int_equal(cshw_form_parse(a, many, n - 3, NULL, &p), 0);
    assert_int_equal(p.count, 1000);
    fails(a, many, n, NULL, CSHW_E_FORM_TOO_MANY_PAIRS);

    assert_int_equal(cshw_error_status(CSHW_E_FORM_TOO_LARGE), 413);
    assert_int_equal(cshw_error_status(CSHW_E_FORM_TOO_MANY_PAIRS), 413);
    assert_int_equal(cshw_error_status(CSHW_E_FORM_NAME_TOO_LONG), 413);
    assert_int_equal(cshw_error_status(CSHW_E_FORM_VALUE_TOO_LONG), 413);
}

/* form.h: the limits are read by their size. A struct of the first
 * version's size, alone in its allocation (ASan sees a read past it), is
 * obeyed; a newer caller's larger one has what this library does not know
 * zeroed by the init and ignored by the parse; a size below the first
 * version's (a struct memset or initialized without the init) is
 * -EINVAL. */
static void test_limits_sizes(void **state)
{
    cshw_arena *a = *state;
    cshw_pairs p;
    cshw_form_limits *old = malloc(CSHW_FORM_LIMITS_SIZE_0_3);
    assert_non_null(old);
    cshw_form_limits_init_sized(old, CSHW_FORM_LIMITS_SIZE_0_3);
    assert_int_equal(old->size, CSHW_FORM_LIMITS_SIZE_0_3);
    assert_int_equal(old->max_value_len, 1048576);
    old->max_pairs = 1;
    assert_int_equal(cshw_form_parse(a, "a=1&b=2", 7, old, &p), CSHW_E_FORM_TOO_MANY_PAIRS);
    free(old);

    size_t big[sizeof(cshw_form_limits) / sizeof(size_t) + 4];
    memset(big, 0xff, sizeof big);
    cshw_form_limits *newer = (cshw_form_limits *)(void *)big;
    cshw_form_limits_init_sized(newer, sizeof big);
    assert_int_equal(newer->size, sizeof big);
    for (size_t i = sizeof(cshw_form_limits) / sizeof(size_t); i < sizeof big / sizeof big[0]; i++)
        assert_int_equal(big[i], 0);
    big[sizeof big / sizeof big[0] - 1] = 1; /* a newer limit this library ignores */
    newer->max_pairs = 1;
    assert_int_equal(cshw_form_parse(a, "a=1", 3, newer, &p), 0);
    assert_int_equal(cshw_form_parse(a, "a=1&b=2", 7, newer, &p), CSHW_E_FORM_TOO_MANY_PAIRS);

    cshw_form_limits l;
    cshw_form_limits_init(&l);
    assert_int_equal(l.size, sizeof l);
    l.size = CSHW_FORM_LIMITS_SIZE_0_3 - 1;
    p.count = 5;
    assert_int_equal(cshw_form_parse(a, "a=1", 3, &l, &p), -EINVAL);
    assert_int_equal(p.count, 0);
    memset(&l, 0, sizeof l);
    assert_int_equal(cshw_form_parse(a, "a=1", 3, &l, &p), -EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_whatwg_parser, setup, teardown),
        cmocka_unit_test_setup_teardown(test_lookup_through_pairs, setup, teardown),
        cmocka_unit_test(test_defaults),
        cmocka_unit_test_setup_teardown(test_limits, setup, teardown),
        cmocka_unit_test_setup_teardown(test_limits_sizes, setup, teardown),
    };
    return cmocka_run_group_tests_name("form", tests, NULL, NULL);
}
