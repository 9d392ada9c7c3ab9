/* json.c: the streaming writer: RFC 8259 output (§7 strings, §6 numbers,
 * §8.1 UTF-8), nesting checks, sticky errors, both sinks. */
#include <errno.h>
#include <float.h>
#include <locale.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cshttp/web/buf.h"
#include "cshttp/web/error.h"
#include "cshttp/web/json.h"

typedef struct fixture {
    cshw_buf out;
    cshw_json j;
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    if (!f) return -1;
    cshw_buf_init(&f->out, NULL);
    cshw_json_init_buf(&f->j, &f->out);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    cshw_buf_free(&f->out);
    free(f);
    return 0;
}

static const char *text(fixture *f)
{
    return f->out.data ? f->out.data : "";
}

static void test_document(void **state)
{
    fixture *f = *state;
    cshw_json *j = &f->j;
    assert_int_equal(cshw_json_finish(j), CSHW_E_JSON_INCOMPLETE); /* nothing yet */
    assert_int_equal(cshw_json_object_begin(j), 0);
    assert_int_equal(cshw_json_key(j, "id"), 0);
    assert_int_equal(cshw_json_int(j, 42), 0);
    assert_int_equal(cshw_json_key(j, "tags"), 0);
    assert_int_equal(cshw_json_array_begin(j), 0);
    assert_int_equal(cshw_json_string(j, "a"), 0);
    assert_int_equal(cshw_json_string(j, NULL), 0);
    assert_int_equal(cshw_json_array_begin(j), 0);
    assert_int_equal(cshw_json_array_end(j), 0);
    assert_int_equal(cshw_json_object_begin(j), 0);
    assert_int_equal(cshw_json_object_end(j), 0);
    assert_int_equal(cshw_json_bool(j, 7), 0);
    assert_int_equal(cshw_json_bool(j, 0), 0);
    assert_int_equal(cshw_json_array_end(j), 0);
    assert_int_equal(cshw_json_finish(j), CSHW_E_JSON_INCOMPLETE); /* object still open */
    assert_int_equal(cshw_json_key_n(j, "n\0x", 3), 0);
    assert_int_equal(cshw_json_null(j), 0);
    assert_int_equal(cshw_json_key(j, NULL), 0);
    assert_int_equal(cshw_json_uint(j, UINT64_MAX), 0);
    assert_int_equal(cshw_json_object_end(j), 0);
    assert_int_equal(cshw_json_finish(j), 0);
    assert_int_equal(cshw_json_error(j), 0);
    assert_string_equal(text(f), "{\"id\":42,\"tags\":[\"a\",null,[],{},true,false],"
                                 "\"n\\u0000x\":null,\"\":18446744073709551615}");
}

/* RFC 8259 §2: a JSON text is any value, scalars included. */
static void test_top_level_scalar(void **state)
{
    fixture *f = *state;
    assert_int_equal(cshw_json_string(&f->j, "only"), 0);
    assert_int_equal(cshw_json_finish(&f->j), 0);
    assert_string_equal(text(f), "\"only\"");
    assert_int_equal(cshw_json_int(&f->j, 1), CSHW_E_JSON_COMPLETE);
    assert_string_equal(text(f), "\"only\"");
}

static const char *number(double v)
{
    static char buf[64];
    cshw_buf b;
    cshw_json j;
    cshw_buf_init(&b, NULL);
    cshw_json_init_buf(&j, &b);
    assert_int_equal(cshw_json_double(&j, v), 0);
    assert_int_equal(cshw_json_finish(&j), 0);
    snprintf(buf, sizeof buf, "%s", b.data);
    cshw_buf_free(&b);
    return buf;
}

/* RFC 8259 §6: numbers; the shortest form that reads back the same; NaN
 * and infinities (not representable) are null, as json.h says. */
static void test_numbers(void **state)
{
    fixture *f = *state;
    cshw_json *j = &f->j;
    assert_int_equal(cshw_json_array_begin(j), 0);
    assert_int_equal(cshw_json_int(j, 0), 0);
    assert_int_equal(cshw_json_int(j, -1), 0);
    assert_int_equal(cshw_json_int(j, INT64_MIN), 0);
    assert_int_equal(cshw_json_int(j, INT64_MAX), 0);
    assert_int_equal(cshw_json_uint(j, 0), 0);
    assert_int_equal(cshw_json_array_end(j), 0);
    assert_string_equal(text(f), "[0,-1,-9223372036854775808,9223372036854775807,0]");

    assert_string_equal(number(0.1), "0.1");
    assert_string_equal(number(1.5), "1.5");
    assert_string_equal(number(-2.25), "-2.25");
    assert_string_equal(number(100), "100");
    assert_string_equal(number(0), "0");
    assert_string_equal(number(-0.0), "-0");
    assert_string_equal(number(1e300), "1e+300");
    assert_string_equal(number(1e-7), "1e-07");
    assert_string_equal(number(1.0 / 3), "0.3333333333333333");
    assert_string_equal(number(0.1 + 0.2), "0.30000000000000004");
    assert_string_equal(number(5e-324), "4.94065645841247e-324"); /* 15 digits read back */
    assert_string_equal(number(DBL_MAX), "1.7976931348623157e+308");
    assert_string_equal(number(NAN), "null");
    assert_string_equal(number(INFINITY), "null");
    assert_string_equal(number(-INFINITY), "null");
    /* every double written reads back to itself */
    uint64_t x = 0x9e3779b97f4a7c15u;
    for (int i = 0; i < 20000; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        double v;
        memcpy(&v, &x, sizeof v);
        const char *s = number(v);
        if (!isfinite(v)) {
            assert_string_equal(s, "null");
            continue;
        }
        char *end;
        double back = strtod(s, &end);
        assert_int_equal(*end, '\0');
        if (memcmp(&back, &v, sizeof v) != 0) fail_msg("%.17g written as %s", v, s);
    }
}

/* A locale whose decimal point is a comma: an installed one, or one built
 * here with localedef (only LC_NUMERIC, in a temporary LOCPATH). Returns
 * the temporary folder to remove, or "" / NULL. */
static const char *comma_locale(char *dir, size_t cap)
{
    static const char *installed[] = {"de_DE.UTF-8", "de_DE.utf8", "fr_FR.UTF-8", "de_DE"};
    for (size_t i = 0; i < sizeof installed / sizeof installed[0]; i++)
        if (setlocale(LC_NUMERIC, installed[i])) return "";
    snprintf(dir, cap, "/tmp/cshw-locale-XXXXXX");
    if (!mkdtemp(dir)) return NULL;
    char cmd[512];
    snprintf(cmd, sizeof cmd,
             "printf 'LC_NUMERIC\\ndecimal_point \",\"\\nthousands_sep \".\"\\n"
             "grouping 3;3\\nEND LC_NUMERIC\\n' > %s/def && "
             "localedef -c -i %s/def %s/xx_XX >/dev/null 2>&1",
             dir, dir, dir);
    int rc = system(cmd);
    (void)rc;
    setenv("LOCPATH", dir, 1);
    return setlocale(LC_NUMERIC, "xx_XX") ? dir : NULL;
}

/* Independent of LC_NUMERIC: with a decimal comma, still '.'. */
static void test_numbers_locale(void **state)
{
    (void)state;
    char dir[64] = "";
    const char *made = comma_locale(dir, sizeof dir);
    char check[16];
    snprintf(check, sizeof check, "%.1f", 1.5);
    const char *s1 = made ? strcpy((char[64]){0}, number(1.5)) : NULL;
    const char *s2 = made ? strcpy((char[64]){0}, number(-1234.0625e-10)) : NULL;
    setlocale(LC_NUMERIC, "C");
    if (dir[0]) {
        char cmd[128];
        snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
        int rc = system(cmd);
        (void)rc;
    }
    if (!made) skip();                 /* no such locale, and localedef could not make one */
    assert_string_equal(check, "1,5"); /* the locale really has a decimal comma */
    assert_string_equal(s1, "1.5");
    assert_string_equal(s2, "-1.2340625e-07");
}

static const char *string_of(const char *s, size_t len)
{
    static char buf[512];
    cshw_buf b;
    cshw_json j;
    cshw_buf_init(&b, NULL);
    cshw_json_init_buf(&j, &b);
    assert_int_equal(cshw_json_string_n(&j, s, len), 0);
    snprintf(buf, sizeof buf, "%s", b.data);
    cshw_buf_free(&b);
    return buf;
}

#define STR(lit) string_of((lit), sizeof(lit) - 1)
#define FFFD "\xef\xbf\xbd"

/* RFC 8259 §7: quotation mark, reverse solidus and the controls must be
 * escaped; the short forms where they exist. */
static void test_string_escapes(void **state)
{
    (void)state;
    assert_string_equal(STR(""), "\"\"");
    assert_string_equal(STR("plain / text"), "\"plain / text\"");
    assert_string_equal(STR("q\"b\\"), "\"q\\\"b\\\\\"");
    assert_string_equal(STR("\b\f\n\r\t"), "\"\\b\\f\\n\\r\\t\"");
    assert_string_equal(STR("\0\x01\x1f\x7f"), "\"\\u0000\\u0001\\u001f\x7f\"");
    assert_string_equal(STR("<\x0b>"), "\"<\\u000b>\"");
    /* U+2028, U+2029 escaped; other UTF-8 as it is */
    assert_string_equal(STR("a\xe2\x80\xa8"
                            "b\xe2\x80\xa9"
                            "c"),
                        "\"a\\u2028b\\u2029c\"");
    assert_string_equal(STR("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\xf4\x8f\xbf\xbf"),
                        "\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\xf4\x8f\xbf\xbf\"");
    assert_string_equal(STR("\xe2\x80\xaa"), "\"\xe2\x80\xaa\""); /* U+202A: not escaped */
}

/* Invalid UTF-8: one U+FFFD per maximal subpart (Unicode §3.9, Table 3-8;
 * the WHATWG decoder), so the output is always UTF-8 (RFC 8259 §8.1). */
static void test_string_invalid_utf8(void **state)
{
    (void)state;
    /* Unicode Table 3-8's example */
    assert_string_equal(STR("\x61\xf1\x80\x80\xe1\x80\xc2\x62\x80\x63\x80\xbf\x64"),
                        "\"a" FFFD FFFD FFFD "b" FFFD "c" FFFD FFFD "d\"");
    assert_string_equal(STR("\x80"), "\"" FFFD "\"");
    assert_string_equal(STR("\xff\xfe"), "\"" FFFD FFFD "\"");
    assert_string_equal(STR("\xc0\xaf"), "\"" FFFD FFFD "\""); /* overlong '/' */
    assert_string_equal(STR("\xc1\xbf"), "\"" FFFD FFFD "\"");
    assert_string_equal(STR("\xe0\x80\xaf"), "\"" FFFD FFFD FFFD "\""); /* overlong */
    assert_string_equal(STR("\xed\xa0\x80"), "\"" FFFD FFFD FFFD "\""); /* surrogate */
    assert_string_equal(STR("\xf0\x80\x80\x80"), "\"" FFFD FFFD FFFD FFFD "\"");
    assert_string_equal(STR("\xf4\x90\x80\x80"), "\"" FFFD FFFD FFFD FFFD "\""); /* > 10FFFF */
    assert_string_equal(STR("\xf5\x80"), "\"" FFFD FFFD "\"");
    assert_string_equal(STR("\xe2\x82"), "\"" FFFD "\""); /* truncated at the end */
    assert_string_equal(STR("\xf0\x9f\x98"), "\"" FFFD "\"");
    assert_string_equal(STR("\xe2\x82x\""), "\"" FFFD "x\\\"\"");
    assert_string_equal(STR("\xc3\n"), "\"" FFFD "\\n\"");
    assert_string_equal(STR("\xed\x9f\xbf"), "\"\xed\x9f\xbf\""); /* U+D7FF is fine */
}

/* Misuse is an error, sticky, and writes nothing more. */
static void misuse(void (*steps)(cshw_json *), int want, const char *want_text)
{
    cshw_buf b;
    cshw_json j;
    cshw_buf_init(&b, NULL);
    cshw_json_init_buf(&j, &b);
    steps(&j);
    if (cshw_json_error(&j) != want)
        fail_msg("got %s, want %s", cshw_error_name(cshw_json_error(&j)), cshw_error_name(want));
    assert_string_equal(b.data ? b.data : "", want_text);
    /* sticky: everything after returns it and writes nothing */
    assert_int_equal(cshw_json_null(&j), want);
    assert_int_equal(cshw_json_object_end(&j), want);
    assert_int_equal(cshw_json_key(&j, "k"), want);
    assert_int_equal(cshw_json_array_begin(&j), want);
    assert_int_equal(cshw_json_finish(&j), want);
    assert_string_equal(b.data ? b.data : "", want_text);
    assert_int_equal(cshw_error_status(want), 500);
    cshw_buf_free(&b);
}

static void value_in_object(cshw_json *j)
{
    cshw_json_object_begin(j);
    cshw_json_int(j, 1);
}
static void value_after_member(cshw_json *j)
{
    cshw_json_object_begin(j);
    cshw_json_key(j, "a");
    cshw_json_int(j, 1);
    cshw_json_string(j, "b");
}
static void key_in_array(cshw_json *j)
{
    cshw_json_array_begin(j);
    cshw_json_key(j, "a");
}
static void key_at_top(cshw_json *j)
{
    cshw_json_key(j, "a");
}
static void key_after_key(cshw_json *j)
{
    cshw_json_object_begin(j);
    cshw_json_key(j, "a");
    cshw_json_key(j, "b");
}
static void end_after_key(cshw_json *j)
{
    cshw_json_object_begin(j);
    cshw_json_key(j, "a");
    cshw_json_object_end(j);
}
static void wrong_end(cshw_json *j)
{
    cshw_json_object_begin(j);
    cshw_json_key(j, "a");
    cshw_json_array_begin(j);
    cshw_json_object_end(j);
}
static void end_at_top(cshw_json *j)
{
    cshw_json_array_end(j);
}
static void end_after_complete(cshw_json *j)
{
    cshw_json_array_begin(j);
    cshw_json_array_end(j);
    cshw_json_array_end(j);
}
static void second_value(cshw_json *j)
{
    cshw_json_array_begin(j);
    cshw_json_array_end(j);
    cshw_json_array_begin(j);
}
static void key_after_complete(cshw_json *j)
{
    cshw_json_null(j);
    cshw_json_key(j, "a");
}
static void too_deep(cshw_json *j)
{
    for (int i = 0; i < CSHW_JSON_MAX_DEPTH; i++) assert_int_equal(cshw_json_array_begin(j), 0);
    cshw_json_object_begin(j);
}

static void test_misuse(void **state)
{
    (void)state;
    misuse(value_in_object, CSHW_E_JSON_KEY_EXPECTED, "{");
    misuse(value_after_member, CSHW_E_JSON_KEY_EXPECTED, "{\"a\":1");
    misuse(key_in_array, CSHW_E_JSON_VALUE_EXPECTED, "[");
    misuse(key_at_top, CSHW_E_JSON_VALUE_EXPECTED, "");
    misuse(key_after_key, CSHW_E_JSON_VALUE_EXPECTED, "{\"a\":");
    misuse(end_after_key, CSHW_E_JSON_VALUE_EXPECTED, "{\"a\":");
    misuse(wrong_end, CSHW_E_JSON_MISMATCHED_END, "{\"a\":[");
    misuse(end_at_top, CSHW_E_JSON_MISMATCHED_END, "");
    misuse(end_after_complete, CSHW_E_JSON_MISMATCHED_END, "[]");
    misuse(second_value, CSHW_E_JSON_COMPLETE, "[]");
    misuse(key_after_complete, CSHW_E_JSON_COMPLETE, "null");
    char deep[CSHW_JSON_MAX_DEPTH + 1];
    memset(deep, '[', CSHW_JSON_MAX_DEPTH);
    deep[CSHW_JSON_MAX_DEPTH] = '\0';
    misuse(too_deep, CSHW_E_JSON_TOO_DEEP, deep);
}

/* The deepest nesting allowed works. */
static void test_max_depth(void **state)
{
    fixture *f = *state;
    for (int i = 0; i < CSHW_JSON_MAX_DEPTH; i++) {
        assert_int_equal(cshw_json_object_begin(&f->j), 0);
        assert_int_equal(cshw_json_key(&f->j, "k"), 0);
    }
    assert_int_equal(cshw_json_int(&f->j, 1), 0);
    for (int i = 0; i < CSHW_JSON_MAX_DEPTH; i++) assert_int_equal(cshw_json_object_end(&f->j), 0);
    assert_int_equal(cshw_json_finish(&f->j), 0);
    assert_int_equal(f->out.len, (size_t)CSHW_JSON_MAX_DEPTH * 6 + 1);
}

typedef struct sink {
    char data[256];
    size_t len;
    int calls;
    int fail_at; /* the call that fails, 0: none */
} sink;

static int sink_write(void *user, const char *data, size_t len)
{
    sink *s = user;
    assert_true(len > 0);
    if (++s->calls == s->fail_at) return -EPIPE;
    assert_true(s->len + len < sizeof s->data);
    memcpy(s->data + s->len, data, len);
    s->len += len;
    s->data[s->len] = '\0';
    return 0;
}

static void test_callback_sink(void **state)
{
    (void)state;
    sink s = {.fail_at = 0};
    cshw_json j;
    cshw_json_init_fn(&j, sink_write, &s);
    assert_int_equal(cshw_json_array_begin(&j), 0);
    assert_int_equal(cshw_json_string(&j, "a\"b"), 0);
    assert_int_equal(cshw_json_double(&j, 2.5), 0);
    assert_int_equal(cshw_json_array_end(&j), 0);
    assert_int_equal(cshw_json_finish(&j), 0);
    assert_string_equal(s.data, "[\"a\\\"b\",2.5]");

    /* the callback's error becomes the writer's, sticky */
    sink t = {.fail_at = 3};
    cshw_json_init_fn(&j, sink_write, &t);
    assert_int_equal(cshw_json_array_begin(&j), 0);
    assert_int_equal(cshw_json_int(&j, 1), 0);
    assert_int_equal(cshw_json_int(&j, 2), -EPIPE); /* its ',' is the third write */
    assert_int_equal(cshw_json_int(&j, 3), -EPIPE);
    assert_int_equal(cshw_json_finish(&j), -EPIPE);
    assert_int_equal(t.calls, 3);
    assert_string_equal(t.data, "[1");
}

/* A small RFC 8259 validator, to check random documents. */
typedef struct parser {
    const unsigned char *s;
    size_t i, n;
} parser;

static void ws(parser *p)
{
    while (p->i < p->n && strchr(" \t\r\n", p->s[p->i]) && p->s[p->i]) p->i++;
}

static int lit(parser *p, const char *l)
{
    size_t n = strlen(l);
    if (p->n - p->i < n || memcmp(p->s + p->i, l, n) != 0) return 0;
    p->i += n;
    return 1;
}

static int utf8_len(const unsigned char *s, size_t n)
{
    if (s[0] < 0x80) return 1;
    int need = s[0] >= 0xf0 ? 3 : s[0] >= 0xe0 ? 2 : 1;
    if (s[0] < 0xc2 || s[0] > 0xf4 || n < (size_t)need + 1) return 0;
    uint32_t cp = s[0] & (0x3f >> need);
    for (int k = 1; k <= need; k++) {
        if ((s[k] & 0xc0) != 0x80) return 0;
        cp = cp << 6 | (s[k] & 0x3f);
    }
    static const uint32_t min[] = {0, 0x80, 0x800, 0x10000};
    if (cp < min[need] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
    return need + 1;
}

static int string(parser *p)
{
    if (!lit(p, "\"")) return 0;
    while (p->i < p->n) {
        unsigned char c = p->s[p->i];
        if (c == '"') {
            p->i++;
            return 1;
        }
        if (c < 0x20) return 0;
        if (c == '\\') {
            p->i++;
            if (p->i >= p->n) return 0;
            c = p->s[p->i++];
            if (c == 'u') {
                for (int k = 0; k < 4; k++, p->i++)
                    if (p->i >= p->n || !strchr("0123456789abcdefABCDEF", p->s[p->i]) ||
                        !p->s[p->i])
                        return 0;
            } else if (!strchr("\"\\/bfnrt", c) || !c) {
                return 0;
            }
            continue;
        }
        int l = utf8_len(p->s + p->i, p->n - p->i);
        if (!l) return 0;
        p->i += (size_t)l;
    }
    return 0;
}

static int digits(parser *p)
{
    size_t s = p->i;
    while (p->i < p->n && p->s[p->i] >= '0' && p->s[p->i] <= '9') p->i++;
    return p->i > s;
}

static int num(parser *p)
{
    lit(p, "-");
    if (lit(p, "0")) {
    } else if (!digits(p)) {
        return 0;
    }
    if (lit(p, ".") && !digits(p)) return 0;
    if (lit(p, "e") || lit(p, "E")) {
        if (!lit(p, "+")) lit(p, "-");
        if (!digits(p)) return 0;
    }
    return 1;
}

static int value(parser *p, int depth)
{
    ws(p);
    if (depth > 100 || p->i >= p->n) return 0;
    int ok = 1;
    if (lit(p, "{")) {
        ws(p);
        if (!lit(p, "}")) {
            do {
                ws(p);
                ok = string(p);
                ws(p);
                ok = ok && lit(p, ":") && value(p, depth + 1);
                ws(p);
            } while (ok && lit(p, ","));
            ok = ok && lit(p, "}");
        }
    } else if (lit(p, "[")) {
        ws(p);
        if (!lit(p, "]")) {
            do ok = value(p, depth + 1), ws(p);
            while (ok && lit(p, ","));
            ok = ok && lit(p, "]");
        }
    } else if (p->s[p->i] == '"') {
        ok = string(p);
    } else if (!lit(p, "true") && !lit(p, "false") && !lit(p, "null")) {
        ok = num(p);
    }
    ws(p);
    return ok;
}

static int valid_json(const char *s, size_t n)
{
    parser p = {(const unsigned char *)s, 0, n};
    return value(&p, 0) && p.i == n;
}

/* Random call sequences, misuse included: whenever finish says 0 the output
 * is one valid JSON text; after an error nothing more is written. */
static void test_random_documents(void **state)
{
    (void)state;
    uint64_t x = 88172645463325252u;
#define NEXT() (x ^= x << 13, x ^= x >> 7, x ^= x << 17, x)
    int complete = 0, errors = 0;
    for (int doc = 0; doc < 20000; doc++) {
        cshw_buf b;
        cshw_json j;
        cshw_buf_init(&b, NULL);
        cshw_json_init_buf(&j, &b);
        int steps = (int)(NEXT() % 40);
        int misuse_ok = NEXT() % 4 == 0;
        for (int s = 0; s < steps; s++) {
            int before = cshw_json_error(&j);
            size_t len_before = b.len;
            unsigned op = (unsigned)(NEXT() % 12);
            char str[16];
            size_t sl = (size_t)(NEXT() % sizeof str);
            for (size_t k = 0; k < sl; k++) str[k] = (char)NEXT();
            int in_object = j.depth_ > 0 && j.object_[j.depth_ - 1];
            if (!misuse_ok) {
                /* follow the grammar: keys only where they go */
                if (in_object && !j.after_key_ && op != 1 && op != 3) op = 2;
                if ((!in_object || j.after_key_) && op == 2) op = 5;
                if (j.depth_ == 0 && j.done_) break;
                if (op == 1 && !in_object) op = 6;
                if (op == 3 && (in_object || j.depth_ == 0)) op = 7;
                if (op == 1 && j.after_key_) op = 8;
            }
            switch (op) {
            case 0:
                cshw_json_object_begin(&j);
                break;
            case 1:
                cshw_json_object_end(&j);
                break;
            case 2:
                cshw_json_key_n(&j, str, sl);
                break;
            case 3:
                cshw_json_array_end(&j);
                break;
            case 4:
                cshw_json_array_begin(&j);
                break;
            case 5:
                cshw_json_string_n(&j, str, sl);
                break;
            case 6:
                cshw_json_int(&j, (int64_t)NEXT());
                break;
            case 7: {
                double d;
                uint64_t r = NEXT();
                memcpy(&d, &r, sizeof d);
                cshw_json_double(&j, d);
                break;
            }
            case 8:
                cshw_json_null(&j);
                break;
            case 9:
                cshw_json_bool(&j, (int)(NEXT() % 2));
                break;
            case 10:
                cshw_json_uint(&j, NEXT());
                break;
            default:
                cshw_json_array_begin(&j);
                break;
            }
            if (before) assert_int_equal(b.len, len_before);
        }
        /* close what is open, the right way */
        while (!cshw_json_error(&j) && j.depth_ > 0) {
            if (j.after_key_)
                cshw_json_null(&j);
            else if (j.object_[j.depth_ - 1])
                cshw_json_object_end(&j);
            else
                cshw_json_array_end(&j);
        }
        int r = cshw_json_finish(&j);
        if (r == 0) {
            complete++;
            if (!valid_json(b.data, b.len)) fail_msg("invalid JSON written: %s", b.data);
        } else if (r != CSHW_E_JSON_INCOMPLETE) {
            errors++;
        }
        cshw_buf_free(&b);
    }
    assert_true(complete > 5000);
    assert_true(errors > 1000);
#undef NEXT
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_document, setup, teardown),
        cmocka_unit_test_setup_teardown(test_top_level_scalar, setup, teardown),
        cmocka_unit_test_setup_teardown(test_numbers, setup, teardown),
        cmocka_unit_test(test_numbers_locale),
        cmocka_unit_test(test_string_escapes),
        cmocka_unit_test(test_string_invalid_utf8),
        cmocka_unit_test(test_misuse),
        cmocka_unit_test_setup_teardown(test_max_depth, setup, teardown),
        cmocka_unit_test(test_callback_sink),
        cmocka_unit_test(test_random_documents),
    };
    return cmocka_run_group_tests_name("json", tests, NULL, NULL);
}
