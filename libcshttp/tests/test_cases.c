/* Runs the wire cases of cases/ (see cases/README.md): each case whole, split
 * in two at every offset and byte by byte, all of which must agree and match
 * the case's expectations. Also checks the corpus itself: every test that
 * libcshttp/SMUGGLING.md cites exists, every bug it lists has a case, and
 * every error code is exercised.
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

#ifndef CSH_SOURCE_DIR
#define CSH_SOURCE_DIR ".."
#endif

/* libcshttp/SMUGGLING.md, read once: the tags of its "Bugs others shipped"
 * table, and every name cited in a "proved by" column. */
enum { MD_MAX = 512 };
static struct {
    char *tags[MD_MAX];
    size_t ntags;
    char *cited[MD_MAX];
    size_t ncited;
    int loaded;
} md;

static char *dup_range(const char *s, size_t n)
{
    char *d = malloc(n + 1);
    if (d) {
        memcpy(d, s, n);
        d[n] = '\0';
    }
    return d;
}

/* Appends the backquoted names of `cell` to `out`. */
static void collect_names(const char *cell, const char *end, char **out, size_t *n)
{
    for (const char *p = cell; p < end; p++) {
        if (*p != '`') continue;
        const char *q = memchr(p + 1, '`', (size_t)(end - p - 1));
        if (q == NULL) break;
        if (*n < MD_MAX && q > p + 1) out[(*n)++] = dup_range(p + 1, (size_t)(q - p - 1));
        p = q;
    }
}

static int load_smuggling_md(void)
{
    const char *path = CSH_SOURCE_DIR "/SMUGGLING.md";
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        print_error("cannot open %s\n", path);
        return -1;
    }
    char line[4096];
    int section = 0; /* 1: attacks, 2: bugs others shipped */
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "## ", 3) == 0) {
            section = strncmp(line, "## Attacks", 10) == 0            ? 1
                      : strncmp(line, "## Bugs others shipped", 22) == 0 ? 2
                                                                        : 0;
            continue;
        }
        if (section == 0 || line[0] != '|' || strncmp(line, "|---", 4) == 0) continue;
        if (strncmp(line, "| attack |", 10) == 0 || strncmp(line, "| tag |", 7) == 0) continue;
        /* the last cell: "proved by" */
        char *end = line + strlen(line);
        while (end > line && (end[-1] == '\n' || end[-1] == ' ')) end--;
        if (end > line && end[-1] == '|') end--;
        char *last = end;
        while (last > line + 1 && last[-1] != '|') last--;
        collect_names(last, end, md.cited, &md.ncited);
        if (section == 2) {
            char *bar = strchr(line + 1, '|');
            if (bar) collect_names(line + 1, bar, md.tags, &md.ntags);
        }
    }
    fclose(f);
    md.loaded = 1;
    return 0;
}

static int is_case(const char *name)
{
    for (size_t i = 0; i < corpus.n; i++)
        if (strcmp(corpus.cases[i].name, name) == 0) return 1;
    return 0;
}

/* "test_chunked.c:test_x": a cmocka test function defined in that file. */
static int is_test_function(const char *cite)
{
    const char *colon = strchr(cite, ':');
    if (colon == NULL) return 0;
    char path[1024], want[256], line[1024];
    snprintf(path, sizeof path, "%s/tests/%.*s", CSH_SOURCE_DIR, (int)(colon - cite), cite);
    snprintf(want, sizeof want, "static void %s(void **state)", colon + 1);
    FILE *f = fopen(path, "r");
    if (f == NULL) return 0;
    int found = 0;
    while (!found && fgets(line, sizeof line, f)) found = strncmp(line, want, strlen(want)) == 0;
    fclose(f);
    return found;
}

/* libcshttp/SMUGGLING.md: every test it cites exists. */
static void test_smuggling_md_citations_exist(void **state)
{
    (void)state;
    assert_true(md.loaded);
    assert_true(md.ncited >= 100);
    int missing = 0;
    for (size_t i = 0; i < md.ncited; i++) {
        const char *c = md.cited[i];
        if (strstr(c, ".c:") ? is_test_function(c) : is_case(c)) continue;
        print_error("SMUGGLING.md cites \"%s\", which is no case or test function\n", c);
        missing++;
    }
    assert_int_equal(missing, 0);
}

/* libcshttp/SMUGGLING.md: every bug others shipped has at least one case. */
static void test_every_smuggling_row_has_a_case(void **state)
{
    (void)state;
    assert_true(md.loaded);
    assert_true(md.ntags >= 25);
    int missing = 0;
    for (size_t r = 0; r < md.ntags; r++) {
        size_t n = 0;
        for (size_t i = 0; i < corpus.n; i++)
            if (corpus.cases[i].smuggling && strcmp(corpus.cases[i].smuggling, md.tags[r]) == 0)
                n++;
        if (n == 0) {
            print_error("no case for the SMUGGLING.md row \"%s\"\n", md.tags[r]);
            missing++;
        }
    }
    assert_int_equal(missing, 0);
}

static void test_every_smuggling_tag_is_a_row(void **state)
{
    (void)state;
    assert_true(md.loaded);
    int unknown = 0;
    for (size_t i = 0; i < corpus.n; i++) {
        const tc_case *c = &corpus.cases[i];
        if (c->smuggling == NULL) continue;
        size_t r;
        for (r = 0; r < md.ntags; r++)
            if (strcmp(c->smuggling, md.tags[r]) == 0) break;
        if (r == md.ntags) {
            print_error("case %s: unknown SMUGGLING.md row \"%s\"\n", c->name, c->smuggling);
            unknown++;
        }
    }
    assert_int_equal(unknown, 0);
}

/* One wire case: whole, every split, byte by byte. */
static void test_wire_case(void **state)
{
    const tc_case *c = *state;
    int fails = tc_verify(c, 0, NULL, 1);
    if (fails)
        fail_msg("case %s (%s:%d): %d failure(s), see above", c->name, c->file, c->line, fails);
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
        /* API misuse (test_parser) and the field-value helpers (test_grammar) */
        if (codes[k] == CSH_E_INVALID_ARGUMENT || codes[k] == CSH_E_INVALID_GRAMMAR) continue;
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
    if (load_smuggling_md() != 0) return 1;
    size_t n = corpus.n + 5;
    struct CMUnitTest *tests = calloc(n, sizeof *tests);
    char **names = calloc(corpus.n, sizeof *names);
    if (tests == NULL || names == NULL) return 1;
    size_t k = 0;
    tests[k++] = (struct CMUnitTest){"smuggling_md_citations_exist",
                                     test_smuggling_md_citations_exist, NULL, NULL, NULL};
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
    for (size_t i = 0; i < md.ntags; i++) free(md.tags[i]);
    for (size_t i = 0; i < md.ncited; i++) free(md.cited[i]);
    return rc;
}
