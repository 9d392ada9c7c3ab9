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
    assert_true(NCODES >= 44);
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

/* The status each error must carry, written down here from the RFCs rather
 * than read from error.h's table, so that a wrong status in the table fails.
 * Response-only errors carry 502 (RFC 9110 §15.6.3: what a gateway answers
 * for an invalid response). */
static const struct {
    int code;
    int status;
    const char *why;
} expected_status[] = {
    {CSH_E_INVALID_METHOD, 400, "RFC 9110 §15.5.1: malformed request syntax"},
    {CSH_E_INVALID_REQUEST_LINE, 400, "RFC 9112 §3: invalid request-line, 400"},
    {CSH_E_INVALID_TARGET, 400, "RFC 9112 §3.2"},
    {CSH_E_TARGET_FORM, 400, "RFC 9112 §3.2"},
    {CSH_E_URI_TOO_LONG, 414, "RFC 9112 §3: a request-target longer than the server parses, 414"},
    {CSH_E_INVALID_VERSION, 400, "RFC 9112 §2.3"},
    {CSH_E_UNSUPPORTED_VERSION, 505, "RFC 9110 §15.6.6"},
    {CSH_E_INVALID_STATUS_LINE, 502, "response only"},
    {CSH_E_INVALID_STATUS, 502, "response only"},
    {CSH_E_HEAD_TOO_LARGE, 431, "RFC 6585 §5"},
    {CSH_E_FIELD_LINE_TOO_LONG, 431, "RFC 6585 §5"},
    {CSH_E_TOO_MANY_FIELDS, 431, "RFC 6585 §5"},
    {CSH_E_INVALID_FIELD_NAME, 400, "RFC 9110 §5.1"},
    {CSH_E_EMPTY_FIELD_NAME, 400, "RFC 9110 §5.1"},
    {CSH_E_WS_BEFORE_COLON, 400, "RFC 9112 §5.1: MUST reject with 400"},
    {CSH_E_MISSING_COLON, 400, "RFC 9112 §5"},
    {CSH_E_OBS_FOLD, 400, "RFC 9112 §5.2: reject with 400"},
    {CSH_E_WS_AFTER_START_LINE, 400, "RFC 9112 §2.2"},
    {CSH_E_INVALID_FIELD_VALUE, 400, "RFC 9110 §5.5"},
    {CSH_E_BARE_CR, 400, "RFC 9112 §2.2"},
    {CSH_E_BARE_LF, 400, "RFC 9112 §2.2"},
    {CSH_E_INVALID_CONTENT_LENGTH, 400, "RFC 9112 §6.3 (5): 400"},
    {CSH_E_CONTENT_LENGTH_TOO_LARGE, 413, "RFC 9110 §15.5.14: content too large"},
    {CSH_E_DUPLICATE_CONTENT_LENGTH, 400, "RFC 9112 §6.3 (5)"},
    {CSH_E_CL_AND_TE, 400, "RFC 9112 §6.3 (3)"},
    {CSH_E_DUPLICATE_TE, 400, "RFC 9112 §6.1"},
    {CSH_E_INVALID_TE, 400, "RFC 9112 §6.1"},
    {CSH_E_TE_NOT_CHUNKED, 400, "RFC 9112 §6.3 (4): MUST respond with 400"},
    {CSH_E_CHUNKED_TWICE, 400, "RFC 9112 §6.1"},
    {CSH_E_UNKNOWN_TE, 501, "RFC 9112 §6.1: an unknown transfer coding SHOULD get 501"},
    {CSH_E_TE_IN_HTTP10, 400, "RFC 9112 §6.1: faulty framing"},
    {CSH_E_MISSING_HOST, 400, "RFC 9112 §3.2: MUST respond with 400"},
    {CSH_E_DUPLICATE_HOST, 400, "RFC 9112 §3.2: MUST respond with 400"},
    {CSH_E_INVALID_HOST, 400, "RFC 9112 §3.2: MUST respond with 400"},
    {CSH_E_INVALID_CONNECTION, 400, "RFC 9110 §7.6.1"},
    {CSH_E_INVALID_CHUNK_SIZE, 400, "RFC 9112 §7.1"},
    {CSH_E_CHUNK_SIZE_TOO_LARGE, 413, "RFC 9110 §15.5.14"},
    {CSH_E_INVALID_CHUNK_EXT, 400, "RFC 9112 §7.1.1"},
    {CSH_E_CHUNK_EXT_TOO_LONG, 400, "RFC 9112 §7.1.1: an appropriate 4xx"},
    {CSH_E_MISSING_CHUNK_CRLF, 400, "RFC 9112 §7.1"},
    {CSH_E_TRAILER_TOO_LARGE, 431, "RFC 6585 §5"},
    {CSH_E_BODY_TRUNCATED, 400, "RFC 9112 §8: an incomplete request"},
    {CSH_E_INVALID_ARGUMENT, 500, "a caller's mistake, not the peer's"},
    {CSH_E_METHOD_TOO_LONG, 501, "RFC 9112 §3: a method longer than any implemented SHOULD get 501"},
    {CSH_E_INVALID_GRAMMAR, 400, "RFC 9110 §15.5.1: a malformed field value"},
};

/* error.h: the status a server answers for each error, as written above;
 * 0 for codes that are not errors. */
static void test_statuses(void **state)
{
    (void)state;
    enum { NEXP = sizeof expected_status / sizeof expected_status[0] };
    /* a new code needs its expected status written down here */
    assert_int_equal(NEXP, NCODES);
    for (size_t i = 0; i < NEXP; i++) {
        int st = csh_error_status(expected_status[i].code);
        if (st != expected_status[i].status)
            fail_msg("%s: status %d, expected %d (%s)", csh_error_name(expected_status[i].code), st,
                     expected_status[i].status, expected_status[i].why);
    }
    /* every code of the table is listed once */
    for (size_t i = 0; i < NCODES; i++) {
        size_t k, hits = 0;
        for (k = 0; k < NEXP; k++) hits += expected_status[k].code == table[i].value;
        if (hits != 1) fail_msg("CSH_E_%s is listed %zu times", table[i].name, hits);
    }
    assert_int_equal(csh_error_status(CSH_OK), 0);
    assert_int_equal(csh_error_status(CSH_INCOMPLETE), 0);
    assert_int_equal(csh_error_status(CSH_DATA), 0);
}

/* error.h: a value that is no code: "CSH_E_UNKNOWN", status 0. */
static void test_unknown_code(void **state)
{
    (void)state;
    const int unknown[] = {3, 42, -46, -1000, 1 << 30, -(1 << 30)};
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
