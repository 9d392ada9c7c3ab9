/* Result codes across the three libraries (README.md, Result codes): every
 * error of every public table lies below -4095, where no -errno value
 * reaches, no two libraries share a value, and each library's lookup names
 * each of its codes; the toolkit's lookup also names libcshttp's errors and
 * -errno values, the three kinds cshw_exchange_outcome.error carries. */
#define _GNU_SOURCE /* strerrorname_np */

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include <cshttp/cshttp.h>
#include <cshttp/server/client.h>
#include <cshttp/web/error.h>

typedef struct code_row {
    const char *table; /* the map it comes from */
    const char *name;  /* the constant's name */
    int value;
    int status;
} code_row;

static const code_row rows[] = {
#define PARSER_(name, value, status, message) {"CSH_ERROR_MAP", "CSH_E_" #name, value, status},
    CSH_ERROR_MAP(PARSER_)
#undef PARSER_
#define WEB_(name, value, status, message) {"CSHW_ERROR_MAP", "CSHW_E_" #name, value, status},
    CSHW_ERROR_MAP(WEB_)
#undef WEB_
#define CLIENT_(name, value, status, message)                                                      \
    {"CSHS_CLIENT_ERROR_MAP", "CSHS_CLIENT_E_" #name, value, status},
    CSHS_CLIENT_ERROR_MAP(CLIENT_)
#undef CLIENT_
};

enum { NROWS = sizeof rows / sizeof rows[0] };

static const char *name_in_its_library(const code_row *r)
{
    if (strcmp(r->table, "CSH_ERROR_MAP") == 0) return csh_error_name(r->value);
    if (strcmp(r->table, "CSHW_ERROR_MAP") == 0) return cshw_error_name(r->value);
    return cshs_client_error_name(r->value);
}

/* No error of any table in -4095 .. -1 (nor 0 or above). */
static void test_no_code_in_errno_range(void **state)
{
    (void)state;
    assert_true(NROWS > 100);
    for (size_t i = 0; i < NROWS; i++)
        if (rows[i].value >= -4095)
            fail_msg("%s (%s) is %d, in the -errno range -4095 .. -1 or not negative",
                     rows[i].name, rows[i].table, rows[i].value);
}

/* No two errors share a value, within a library or across two. */
static void test_no_two_codes_alike(void **state)
{
    (void)state;
    for (size_t i = 0; i < NROWS; i++)
        for (size_t j = i + 1; j < NROWS; j++)
            if (rows[i].value == rows[j].value)
                fail_msg("%s and %s share the value %d", rows[i].name, rows[j].name,
                         rows[i].value);
}

/* Each table runs downwards, as the one lookup reads it. */
static void test_each_table_runs_down(void **state)
{
    (void)state;
    for (size_t i = 1; i < NROWS; i++)
        if (strcmp(rows[i].table, rows[i - 1].table) == 0 && rows[i].value >= rows[i - 1].value)
            fail_msg("%s (%d) follows %s (%d): %s must run downwards", rows[i].name,
                     rows[i].value, rows[i - 1].name, rows[i - 1].value, rows[i].table);
}

/* libcshttp's errors fill CSH_E_FIRST downwards without a gap, within its
 * range. */
static void test_parser_range(void **state)
{
    (void)state;
    int want = CSH_E_FIRST;
    for (size_t i = 0; i < NROWS; i++) {
        if (strcmp(rows[i].table, "CSH_ERROR_MAP") != 0) continue;
        assert_int_equal(rows[i].value, want);
        assert_true(rows[i].value >= CSH_E_LAST_OF_RANGE);
        want--;
    }
    assert_true(want < CSH_E_FIRST);
}

/* Every library names each of its codes, and gives its status. */
static void test_each_library_names_its_codes(void **state)
{
    (void)state;
    for (size_t i = 0; i < NROWS; i++)
        assert_string_equal(name_in_its_library(&rows[i]), rows[i].name);
    assert_string_equal(csh_error_name(-12), "CSH_E_UNKNOWN"); /* -ENOMEM is none of libcshttp's */
    assert_int_equal(csh_error_status(-ENOSPC), 0);
    assert_string_equal(cshs_client_error_name(-ENOMEM), "ENOMEM");
}

/* cshw_exchange_outcome.error holds a toolkit error, a libcshttp error or a
 * -errno value: cshw_error_* tells each apart. -12 and -28 were once both
 * ENOMEM/ENOSPC and parser errors. */
static void test_toolkit_names_all_three_kinds(void **state)
{
    (void)state;
    assert_string_equal(cshw_error_name(CSH_E_TOO_MANY_FIELDS), "CSH_E_TOO_MANY_FIELDS");
    assert_int_equal(cshw_error_status(CSH_E_TOO_MANY_FIELDS), 431);
    assert_string_equal(cshw_error_message(CSH_E_TE_NOT_CHUNKED),
                        csh_error_message(CSH_E_TE_NOT_CHUNKED));
    assert_int_equal(cshw_error_status(CSH_E_URI_TOO_LONG), 414);
    assert_string_equal(cshw_error_name(-ENOMEM), "ENOMEM");
    assert_string_equal(cshw_error_name(-ENOSPC), "ENOSPC");
    assert_string_equal(cshw_error_name(-EHOSTUNREACH), "EHOSTUNREACH");
    assert_int_equal(cshw_error_status(-ENOSPC), 500);
    assert_string_equal(cshw_error_message(-ENOENT), strerrordesc_np(ENOENT));
    assert_string_equal(cshw_error_name(CSHW_E_NOT_FOUND), "CSHW_E_NOT_FOUND");
    assert_string_equal(cshw_error_name(-6998), "CSHW_E_UNKNOWN"); /* libcshttp's, unused */
    assert_int_equal(cshw_error_status(-6998), 500);
    assert_string_equal(cshw_error_name(-4096), "CSHW_E_UNKNOWN");
    assert_string_equal(cshw_error_name(-10036), "CSHW_E_UNKNOWN"); /* a block's gap */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_no_code_in_errno_range),
        cmocka_unit_test(test_no_two_codes_alike),
        cmocka_unit_test(test_each_table_runs_down),
        cmocka_unit_test(test_parser_range),
        cmocka_unit_test(test_each_library_names_its_codes),
        cmocka_unit_test(test_toolkit_names_all_three_kinds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
