/* Result codes (error.h) and the version (version.h, cshttp.h). */
#define _POSIX_C_SOURCE 200809L

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include <cshttp/cshttp.h>

static const struct {
    const char *name;
    int value;
    int status;
    const char *message;
} table[] = {
#define T_(name, value, status, message) {#name, value, status, message},
    CSH_ERROR_MAP(T_)
#undef T_
};

enum { NCODES = sizeof table / sizeof table[0] };

/* error.h: every error is negative and has its own value. */
static void test_values_unique_and_negative(void **state)
{
    (void)state;
    assert_true(NCODES >= 43);
    for (size_t i = 0; i < NCODES; i++) {
        assert_true(table[i].value < 0);
        for (size_t j = i + 1; j < NCODES; j++)
            if (table[i].value == table[j].value)
                fail_msg("%s and %s share the value %d", table[i].name, table[j].name,
                         table[i].value);
    }
    assert_int_equal(CSH_OK, 0);
    assert_int_equal(CSH_INCOMPLETE, 1);
    assert_int_equal(CSH_DATA, 2);
}

/* error.h: the name is "CSH_E_" + NAME, stable. */
static void test_names(void **state)
{
    (void)state;
    for (size_t i = 0; i < NCODES; i++) {
        char want[96];
        snprintf(want, sizeof want, "CSH_E_%s", table[i].name);
        const char *got = csh_error_name(table[i].value);
        assert_non_null(got);
        assert_string_equal(got, want);
    }
    assert_string_equal(csh_error_name(CSH_OK), "CSH_OK");
    assert_string_equal(csh_error_name(CSH_INCOMPLETE), "CSH_INCOMPLETE");
    assert_string_equal(csh_error_name(CSH_DATA), "CSH_DATA");
}

/* error.h: the message is a non-empty line, the one in the table. */
static void test_messages(void **state)
{
    (void)state;
    for (size_t i = 0; i < NCODES; i++) {
        const char *m = csh_error_message(table[i].value);
        assert_non_null(m);
        assert_true(strlen(m) > 0);
        assert_null(strchr(m, '\n'));
        assert_string_equal(m, table[i].message);
    }
    const int ok[] = {CSH_OK, CSH_INCOMPLETE, CSH_DATA};
    for (size_t i = 0; i < 3; i++) {
        assert_non_null(csh_error_message(ok[i]));
        assert_true(strlen(csh_error_message(ok[i])) > 0);
    }
}

/* error.h: the status a server answers, one of the listed ones; 0 for
 * codes that are not errors. */
static void test_statuses(void **state)
{
    (void)state;
    static const int allowed[] = {400, 413, 414, 431, 501, 505, 502, 500};
    for (size_t i = 0; i < NCODES; i++) {
        int st = csh_error_status(table[i].value);
        assert_int_equal(st, table[i].status);
        size_t k;
        for (k = 0; k < sizeof allowed / sizeof allowed[0]; k++)
            if (st == allowed[k]) break;
        if (k == sizeof allowed / sizeof allowed[0])
            fail_msg("CSH_E_%s has status %d", table[i].name, st);
    }
    assert_int_equal(csh_error_status(CSH_OK), 0);
    assert_int_equal(csh_error_status(CSH_INCOMPLETE), 0);
    assert_int_equal(csh_error_status(CSH_DATA), 0);
    /* the statuses the rules call for */
    assert_int_equal(csh_error_status(CSH_E_URI_TOO_LONG), 414);
    assert_int_equal(csh_error_status(CSH_E_HEAD_TOO_LARGE), 431);
    assert_int_equal(csh_error_status(CSH_E_FIELD_LINE_TOO_LONG), 431);
    assert_int_equal(csh_error_status(CSH_E_CONTENT_LENGTH_TOO_LARGE), 413);
    assert_int_equal(csh_error_status(CSH_E_UNKNOWN_TE), 501);
    assert_int_equal(csh_error_status(CSH_E_UNSUPPORTED_VERSION), 505);
    assert_int_equal(csh_error_status(CSH_E_INVALID_STATUS), 502);
}

/* error.h: a value that is no code: "CSH_E_UNKNOWN", status 0. */
static void test_unknown_code(void **state)
{
    (void)state;
    const int unknown[] = {3, 42, -44, -1000, 1 << 30, -(1 << 30)};
    for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++) {
        int known = 0;
        for (size_t k = 0; k < NCODES; k++) known |= table[k].value == unknown[i];
        if (known) continue; /* the table grew: not unknown any more */
        assert_string_equal(csh_error_name(unknown[i]), "CSH_E_UNKNOWN");
        assert_non_null(csh_error_message(unknown[i]));
        assert_int_equal(csh_error_status(unknown[i]), 0);
    }
}

/* version.h and cshttp.h agree. */
static void test_version(void **state)
{
    (void)state;
    assert_int_equal(csh_version(), CSH_VERSION_HEX);
    assert_int_equal(CSH_VERSION_HEX,
                     (CSH_VERSION_MAJOR << 16) | (CSH_VERSION_MINOR << 8) | CSH_VERSION_PATCH);
    char want[32];
    snprintf(want, sizeof want, "%d.%d.%d", CSH_VERSION_MAJOR, CSH_VERSION_MINOR,
             CSH_VERSION_PATCH);
    assert_string_equal(csh_version_string(), want);
    assert_string_equal(csh_version_string(), CSH_VERSION_STRING);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_values_unique_and_negative),
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_messages),
        cmocka_unit_test(test_statuses),
        cmocka_unit_test(test_unknown_code),
        cmocka_unit_test(test_version),
    };
    return cmocka_run_group_tests_name("error", tests, NULL, NULL);
}
