/* Runs the wire cases of cases/ (see cases/README.md): each case whole, split
 * in two at every offset and byte by byte, all of which must agree and match
 * the case's expectations. Also checks the corpus itself: every row of
 * SMUGGLING.md has a case, and every error code is exercised.
 *
 * Usage: test_cases [CASES_DIR] */
#define _POSIX_C_SOURCE 200809L

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tc_cases.h"

#ifndef CSH_CASES_DIR
#define CSH_CASES_DIR "cases"
#endif

static tc_corpus corpus;

/* The rows of SMUGGLING.md: each names the `smuggling:` tag of its cases. */
static const char *const smuggling_rows[] = {
    "llhttp CVE-2020-8287",            /* two TE fields */
    "llhttp CVE-2021-22959",           /* space between name and colon */
    "llhttp CVE-2022-32213",           /* loose TE value check */
    "llhttp CVE-2022-32214",           /* bare LF as a line end */
    "llhttp CVE-2022-32215",           /* folded TE */
    "llhttp CVE-2023-30589",           /* lone CR as a field delimiter */
    "llhttp CVE-2024-27982",           /* space before the first field name */
    "Kestrel CVE-2025-55315",          /* lone LF in a chunk extension */
    "mongoose CVE-2023-34188",         /* negative Content-Length */
    "mongoose no colon",               /* Content-Length 10 */
    "mongoose HAProxy CVE-2023-25725", /* empty field name */
    "mongoose empty TE elements",      /* ,chunked */
    "mongoose no last-chunk",          /* \r\n\r\n in place of 0\r\n\r\n */
    "mongoose differing CL",           /* CL: 0 and CL: 38 */
    "mongoose HTTP/1.0 chunked",       /* HTTP/1.0 + TE */
    "h2o duplicate CL",                /* equal duplicate CL */
    "h2o bare CR in chunk size",       /* 1\r0\r\n */
    "proxies CL and TE",               /* both orders */
    "picohttpparser chunk junk",       /* 5 0, 5zz, 1-byte chunks, bare LF */
    "civetweb CL and TE",              /* CL+TE */
    "lwan TE not parsed",              /* TE must frame or be rejected */
    "nginx CVE-2013-2028",             /* chunk size near SIZE_MAX */
    "uhttpd 255 chunks",               /* 300 chunks */
    "pekko-http spaces in chunk size", /* 5 0 */
    "trafficserver chunk size junk",   /* 1these-bytes */
};

/* One wire case: whole, every split, byte by byte. */
static void test_wire_case(void **state)
{
    const tc_case *c = *state;
    int fails = tc_verify(c, 0, NULL, 1);
    if (fails)
        fail_msg("case %s (%s:%d): %d failure(s), see above", c->name, c->file, c->line, fails);
}

/* SMUGGLING.md: every row becomes at least one case. */
static void test_every_smuggling_row_has_a_case(void **state)
{
    (void)state;
    int missing = 0;
    for (size_t r = 0; r < sizeof smuggling_rows / sizeof smuggling_rows[0]; r++) {
        size_t n = 0;
        for (size_t i = 0; i < corpus.n; i++)
            if (corpus.cases[i].smuggling &&
                strcmp(corpus.cases[i].smuggling, smuggling_rows[r]) == 0)
                n++;
        if (n == 0) {
            print_error("no case for the SMUGGLING.md row \"%s\"\n", smuggling_rows[r]);
            missing++;
        }
    }
    assert_int_equal(missing, 0);
}

static void test_every_smuggling_tag_is_a_row(void **state)
{
    (void)state;
    int unknown = 0;
    for (size_t i = 0; i < corpus.n; i++) {
        const tc_case *c = &corpus.cases[i];
        if (c->smuggling == NULL) continue;
        size_t r;
        for (r = 0; r < sizeof smuggling_rows / sizeof smuggling_rows[0]; r++)
            if (strcmp(c->smuggling, smuggling_rows[r]) == 0) break;
        if (r == sizeof smuggling_rows / sizeof smuggling_rows[0]) {
            print_error("case %s: unknown SMUGGLING.md row \"%s\"\n", c->name, c->smuggling);
            unknown++;
        }
    }
    assert_int_equal(unknown, 0);
}

/* Every error a message can produce on the wire is the expected outcome of
 * at least one case (CSH_E_INVALID_ARGUMENT is an API misuse: test_parser). */
static void test_every_error_code_is_exercised(void **state)
{
    (void)state;
    static const int codes[] = {
#define TC_CODE_(name, value, status, message) value,
        CSH_ERROR_MAP(TC_CODE_)
#undef TC_CODE_
    };
    int missing = 0;
    for (size_t k = 0; k < sizeof codes / sizeof codes[0]; k++) {
        if (codes[k] == CSH_E_INVALID_ARGUMENT) continue;
        int found = 0;
        for (size_t i = 0; i < corpus.n && !found; i++)
            for (size_t a = 0; a < corpus.cases[i].nerrors; a++)
                if (corpus.cases[i].errors[a] == codes[k] && corpus.cases[i].nerrors == 1)
                    found = 1;
        if (!found) {
            print_error("no case expects %s alone\n", tc_error_name(codes[k]));
            missing++;
        }
    }
    assert_int_equal(missing, 0);
}

/* Every case names the rule it checks. */
static void test_every_case_names_its_rule(void **state)
{
    (void)state;
    assert_true(corpus.n >= 300);
    for (size_t i = 0; i < corpus.n; i++) {
        const char *rfc = corpus.cases[i].rfc;
        assert_non_null(rfc);
        if (strstr(rfc, "RFC ") == NULL && strstr(rfc, "csh_") == NULL)
            fail_msg("case %s: rfc: \"%s\" names no RFC section or csh_ limit",
                     corpus.cases[i].name, rfc);
    }
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : CSH_CASES_DIR;
    char err[1024];
    if (tc_corpus_load(&corpus, dir, err, sizeof err) != 0) {
        fprintf(stderr, "test_cases: %s\n", err);
        return 1;
    }
    size_t n = corpus.n + 4;
    struct CMUnitTest *tests = calloc(n, sizeof *tests);
    char **names = calloc(corpus.n, sizeof *names);
    if (tests == NULL || names == NULL) return 1;
    size_t k = 0;
    tests[k++] = (struct CMUnitTest){"every_smuggling_row_has_a_case",
                                     test_every_smuggling_row_has_a_case, NULL, NULL, NULL};
    tests[k++] = (struct CMUnitTest){"every_smuggling_tag_is_a_row",
                                     test_every_smuggling_tag_is_a_row, NULL, NULL, NULL};
    tests[k++] = (struct CMUnitTest){"every_error_code_is_exercised",
                                     test_every_error_code_is_exercised, NULL, NULL, NULL};
    tests[k++] = (struct CMUnitTest){"every_case_names_its_rule", test_every_case_names_its_rule,
                                     NULL, NULL, NULL};
    for (size_t i = 0; i < corpus.n; i++) {
        const tc_case *c = &corpus.cases[i];
        size_t len = strlen(c->file) + strlen(c->name) + 2;
        names[i] = malloc(len);
        if (names[i] == NULL) return 1;
        snprintf(names[i], len, "%s/%s", c->file, c->name);
        tests[k++] = (struct CMUnitTest){names[i], test_wire_case, NULL, NULL, (void *)c};
    }
    int rc = _cmocka_run_group_tests("wire_cases", tests, k, NULL, NULL);
    for (size_t i = 0; i < corpus.n; i++) free(names[i]);
    free(names);
    free(tests);
    tc_corpus_free(&corpus);
    return rc;
}
