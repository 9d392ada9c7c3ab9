/* url.c: percent-encoding (RFC 3986 §2.1, §2.3), percent-decoding (WHATWG
 * URL standard, "percent-decode") and request path normalisation (RFC 3986
 * §5.2.4 and the refusals url.h documents). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "cshttp/web/arena.h"
#include "cshttp/web/error.h"
#include "cshttp/web/url.h"

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

/* RFC 3986 §2.3: unreserved characters are kept; §2.1: everything else is
 * %XX with upper-case digits. */
static void test_encode_component(void **state)
{
    cshw_arena *a = *state;
    const char *out;
    size_t n;
    const char *keep = "ABCXYZabcxyz0189-._~";
    assert_int_equal(cshw_url_encode(a, keep, strlen(keep), &out, &n), 0);
    assert_string_equal(out, keep);
    assert_int_equal(n, strlen(keep));

    const char *in = "a b/c?d&e=f+g#h%i";
    assert_int_equal(cshw_url_encode(a, in, strlen(in), &out, &n), 0);
    assert_string_equal(out, "a%20b%2Fc%3Fd%26e%3Df%2Bg%23h%25i");
    assert_int_equal(n, strlen(out));

    /* bytes: UTF-8 "é", NUL, DEL, 0xFF */
    assert_int_equal(cshw_url_encode(a, "\xc3\xa9\0\x7f\xff", 5, &out, NULL), 0);
    assert_string_equal(out, "%C3%A9%00%7F%FF");

    assert_int_equal(cshw_url_encode(a, "", 0, &out, &n), 0);
    assert_string_equal(out, "");
    assert_int_equal(n, 0);
}

static void decode_is(cshw_arena *a, const char *in, unsigned flags, const char *want,
                      size_t want_len)
{
    const char *out = NULL;
    size_t n = 12345;
    assert_int_equal(cshw_url_decode(a, in, strlen(in), flags, &out, &n), 0);
    if (n != want_len || memcmp(out, want, n) != 0)
        fail_msg("decode \"%s\": got \"%.*s\" (%zu bytes), want \"%s\"", in, (int)n, out, n, want);
    assert_int_equal(out[n], '\0');
}

/* WHATWG URL standard, percent-decode: "%XX" with hex digits of either case
 * is a byte; any other '%' stays as it is. */
static void test_decode(void **state)
{
    cshw_arena *a = *state;
    decode_is(a, "abc", 0, "abc", 3);
    decode_is(a, "%41%62%2f%2F", 0, "Ab//", 4);
    decode_is(a, "%e2%82%AC", 0, "\xe2\x82\xac", 3);
    decode_is(a, "a+b", 0, "a+b", 3);
    decode_is(a, "a+b%2B", CSHW_URL_PLUS_SPACE, "a b+", 4);
    /* malformed escapes are kept literally */
    decode_is(a, "%", 0, "%", 1);
    decode_is(a, "a%", 0, "a%", 2);
    decode_is(a, "%4", 0, "%4", 2);
    decode_is(a, "%zz", 0, "%zz", 3);
    decode_is(a, "%4g%g4", 0, "%4g%g4", 6);
    decode_is(a, "%%41", 0, "%A", 2);
    decode_is(a, "100%", 0, "100%", 4);
    /* decoded once */
    decode_is(a, "%2541", 0, "%41", 3);
    /* NUL is a byte like any other: only the length shows it */
    decode_is(a, "a%00b", 0, "a\0b", 3);
    decode_is(a, "", 0, "", 0);
}

static void test_decode_in_place(void **state)
{
    (void)state;
    char s[] = "x%3D1+2%zz";
    size_t n = cshw_url_decode_to(s, s, strlen(s), CSHW_URL_PLUS_SPACE);
    assert_int_equal(n, 8);
    assert_memory_equal(s, "x=1 2%zz", 8);
}

/* Every byte survives encode then decode (RFC 3986 §2.4: encoding is
 * reversible), with and without the form flag (the encoder encodes '+'). */
static void test_round_trip_every_byte(void **state)
{
    cshw_arena *a = *state;
    char all[256];
    for (int i = 0; i < 256; i++) all[i] = (char)i;
    const char *enc, *dec;
    size_t elen, dlen;
    assert_int_equal(cshw_url_encode(a, all, 256, &enc, &elen), 0);
    for (size_t i = 0; i < elen; i++) {
        unsigned char c = (unsigned char)enc[i];
        assert_true(c > 0x20 && c < 0x7f);
    }
    for (unsigned flags = 0; flags <= CSHW_URL_PLUS_SPACE; flags++) {
        assert_int_equal(cshw_url_decode(a, enc, elen, flags, &dec, &dlen), 0);
        assert_int_equal(dlen, 256);
        assert_memory_equal(dec, all, 256);
    }
}

typedef struct path_case {
    const char *in;
    const char *want; /* NULL: an error */
    int err;
} path_case;

static void check_paths(cshw_arena *a, const path_case *cases, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const char *out = "untouched";
        size_t len = 777;
        int r = cshw_path_decode(a, cases[i].in, strlen(cases[i].in), &out, &len);
        if (cases[i].want) {
            if (r != 0)
                fail_msg("\"%s\": %s, want \"%s\"", cases[i].in, cshw_error_name(r), cases[i].want);
            if (strcmp(out, cases[i].want) != 0 || len != strlen(out))
                fail_msg("\"%s\": got \"%s\" (%zu), want \"%s\"", cases[i].in, out, len,
                         cases[i].want);
        } else {
            if (r != cases[i].err)
                fail_msg("\"%s\": got %s (\"%s\"), want %s", cases[i].in, cshw_error_name(r),
                         r == 0 ? out : "", cshw_error_name(cases[i].err));
            assert_string_equal(out, "untouched");
            assert_int_equal(len, 777);
        }
    }
}

/* RFC 3986 §5.2.4 remove_dot_segments, §5.4.2's examples where they apply
 * to a path alone, merged slashes, kept trailing slashes. */
static void test_path_normalise(void **state)
{
    static const path_case cases[] = {
        {"/", "/", 0},
        {"/index.html", "/index.html", 0},
        {"/a/b/c", "/a/b/c", 0},
        {"/a/b/c/", "/a/b/c/", 0},
        {"/a/./b", "/a/b", 0},
        {"/./a", "/a", 0},
        {"/.", "/", 0},
        {"/./", "/", 0},
        {"/a/.", "/a/", 0},
        {"/a/b/..", "/a/", 0},
        {"/a/b/../", "/a/", 0},
        {"/a/b/../c", "/a/c", 0},
        {"/a/b/c/./../../g", "/a/g", 0}, /* RFC 3986 §5.2.4 example */
        {"/a/..", "/", 0},
        {"/a/../", "/", 0},
        {"/a/../b/../c", "/c", 0},
        {"//", "/", 0},
        {"//a//b///c", "/a/b/c", 0},
        {"/a//../b", "/b", 0}, /* slashes merged first, as a file system reads them */
        {"//evil.example/x", "/evil.example/x", 0}, /* never a protocol-relative result */
        {"/%7Euser/%41", "/~user/A", 0},
        {"/a%20b+c", "/a b+c", 0},         /* '+' is not a space in a path */
        {"/%zz/%4/%", "/%zz/%4/%", 0},     /* malformed escapes stay */
        {"/%2541", "/%41", 0},             /* decoded once */
        {"/%252e%252e/x", "/%2e%2e/x", 0}, /* a double-encoded ".." is a name */
        {"/...", "/...", 0},
        {"/.../..", "/", 0},
        {"/..a/a..", "/..a/a..", 0},
        {"/. /.. ", "/. /.. ", 0},
        {"/.hidden", "/.hidden", 0},
        {"/a/.%2e", "/", 0},
        {"/\xc3\xa9t\xc3\xa9", "/\xc3\xa9t\xc3\xa9", 0},
        {"/%ff%fe/%C0%AE%C0%AE/x", "/\xff\xfe/\xc0\xae\xc0\xae/x", 0}, /* bytes, not dots */
        {"/a;b=c/d", "/a;b=c/d", 0},
        {"/..;/x", "/..;/x", 0}, /* a name here, no path parameters */
    };
    check_paths(*state, cases, sizeof cases / sizeof cases[0]);
}

/* Climbing above the root is refused, however the ".." is spelled
 * (RFC 3986 §2.3: %2E is '.'; §5.2.4 would clamp, we refuse). */
static void test_path_traversal(void **state)
{
    static const path_case cases[] = {
        {"/..", NULL, CSHW_E_PATH_TRAVERSAL},
        {"/../", NULL, CSHW_E_PATH_TRAVERSAL},
        {"/../x", NULL, CSHW_E_PATH_TRAVERSAL},
        {"/../../etc/passwd", NULL, CSHW_E_PATH_TRAVERSAL},
        {"/a/../../x", NULL, CSHW_E_PATH_TRAVERSAL},
        {"/a/b/../../../x", NULL, CSHW_E_PATH_TRAVERSAL},
        {"/a/./../..", NULL, CSHW_E_PATH_TRAVERSAL},
        {"/./..", NULL, CSHW_E_PATH_TRAVERSAL},
        {"//..", NULL, CSHW_E_PATH_TRAVERSAL},
        {"/a//..//..", NULL, CSHW_E_PATH_TRAVERSAL},
        {"/%2e%2e", NULL, CSHW_E_PATH_TRAVERSAL},
        {"/%2e%2e/x", NULL, CSHW_E_PATH_TRAVERSAL},
        {"/%2E%2E/x", NULL, CSHW_E_PATH_TRAVERSAL},
        {"/%2E%2e/x", NULL, CSHW_E_PATH_TRAVERSAL},
        {"/%2e./x", NULL, CSHW_E_PATH_TRAVERSAL},
        {"/.%2E/x", NULL, CSHW_E_PATH_TRAVERSAL},
        {"/a/%2e%2e/%2e%2e/x", NULL, CSHW_E_PATH_TRAVERSAL},
        {"/a/%2e/%2e%2e/..", NULL, CSHW_E_PATH_TRAVERSAL},
        {"/static/../../../../etc/passwd", NULL, CSHW_E_PATH_TRAVERSAL},
        {"/a/b/c/../../../..", NULL, CSHW_E_PATH_TRAVERSAL},
    };
    check_paths(*state, cases, sizeof cases / sizeof cases[0]);
}

/* Encoded separators, backslashes, controls, relative paths. */
static void test_path_refusals(void **state)
{
    static const path_case cases[] = {
        {"", NULL, CSHW_E_PATH_NOT_ABSOLUTE},
        {"a/b", NULL, CSHW_E_PATH_NOT_ABSOLUTE},
        {"*", NULL, CSHW_E_PATH_NOT_ABSOLUTE},
        {"http://h/x", NULL, CSHW_E_PATH_NOT_ABSOLUTE},
        {"%2Fa", NULL, CSHW_E_PATH_NOT_ABSOLUTE},
        {"../a", NULL, CSHW_E_PATH_NOT_ABSOLUTE},
        {"/a%2Fb", NULL, CSHW_E_PATH_SEPARATOR},
        {"/a%2fb", NULL, CSHW_E_PATH_SEPARATOR},
        {"/..%2F..%2Fetc", NULL, CSHW_E_PATH_SEPARATOR},
        {"/%2e%2e%2f", NULL, CSHW_E_PATH_SEPARATOR},
        {"/a%5Cb", NULL, CSHW_E_PATH_SEPARATOR},
        {"/a%5cb", NULL, CSHW_E_PATH_SEPARATOR},
        {"/a\\b", NULL, CSHW_E_PATH_SEPARATOR},
        {"/..\\..\\x", NULL, CSHW_E_PATH_SEPARATOR},
        {"/%2e%2e%5c", NULL, CSHW_E_PATH_SEPARATOR},
        {"/a%00", NULL, CSHW_E_PATH_CONTROL},
        {"/a%00.html", NULL, CSHW_E_PATH_CONTROL},
        {"/%0d%0aSet-Cookie:x", NULL, CSHW_E_PATH_CONTROL},
        {"/a%0A", NULL, CSHW_E_PATH_CONTROL},
        {"/a%1f", NULL, CSHW_E_PATH_CONTROL},
        {"/a%7F", NULL, CSHW_E_PATH_CONTROL},
        {"/a\tb", NULL, CSHW_E_PATH_CONTROL},
        {"/a\x7f", NULL, CSHW_E_PATH_CONTROL},
        {"/a\x01", NULL, CSHW_E_PATH_CONTROL},
        {"/.%00./x", NULL, CSHW_E_PATH_CONTROL},
        /* the first fault from the left */
        {"/../%00", NULL, CSHW_E_PATH_TRAVERSAL},
        {"/%00/..", NULL, CSHW_E_PATH_CONTROL},
        {"/%2f/%00", NULL, CSHW_E_PATH_SEPARATOR},
    };
    check_paths(*state, cases, sizeof cases / sizeof cases[0]);
    /* a raw NUL inside the given length */
    const char *out;
    assert_int_equal(cshw_path_decode(*state, "/a\0b", 4, &out, NULL), CSHW_E_PATH_CONTROL);
    /* the length is what counts, not a NUL terminator */
    assert_int_equal(cshw_path_decode(*state, "/a/../../b", 5, &out, NULL), 0);
    assert_string_equal(out, "/");
}

/* A second implementation, written differently (a stack of decoded
 * segments), to compare against on every path built from a small alphabet. */
typedef struct ref_result {
    int err;
    char out[256];
} ref_result;

static int hexval(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static void reference(const char *in, ref_result *r)
{
    char stack[64][64];
    int depth = 0;
    r->err = 0;
    r->out[0] = '\0';
    if (in[0] != '/') {
        r->err = CSHW_E_PATH_NOT_ABSOLUTE;
        return;
    }
    const char *s = in + 1;
    int trailing = 1;
    for (;;) {
        const char *slash = strchr(s, '/');
        size_t n = slash ? (size_t)(slash - s) : strlen(s);
        char seg[64];
        size_t k = 0;
        for (size_t i = 0; i < n; i++) {
            int c = (unsigned char)s[i];
            if (c == '%' && i + 2 < n && hexval(s[i + 1]) >= 0 && hexval(s[i + 2]) >= 0) {
                c = hexval(s[i + 1]) * 16 + hexval(s[i + 2]);
                i += 2;
                if (c == '/' || c == '\\') {
                    r->err = CSHW_E_PATH_SEPARATOR;
                    return;
                }
            } else if (c == '\\') {
                r->err = CSHW_E_PATH_SEPARATOR;
                return;
            }
            if (c < 0x20 || c == 0x7f) {
                r->err = CSHW_E_PATH_CONTROL;
                return;
            }
            seg[k++] = (char)c;
        }
        seg[k] = '\0';
        if (strcmp(seg, "..") == 0) {
            if (depth == 0) {
                r->err = CSHW_E_PATH_TRAVERSAL;
                return;
            }
            depth--;
            trailing = 1;
        } else if (k == 0 || strcmp(seg, ".") == 0) {
            trailing = 1;
        } else {
            strcpy(stack[depth++], seg);
            trailing = 0;
        }
        if (!slash) break;
        s = slash + 1;
    }
    char *o = r->out;
    *o++ = '/';
    for (int i = 0; i < depth; i++) {
        size_t n = strlen(stack[i]);
        memcpy(o, stack[i], n);
        o += n;
        if (i + 1 < depth || trailing) *o++ = '/';
    }
    *o = '\0';
}

/* Every path of up to 6 pieces from an alphabet of separators, dots in
 * every spelling, names, malformed escapes, refused bytes: the same result
 * as the reference, and the invariants url.h promises. */
static void test_path_against_reference(void **state)
{
    static const char *alpha[] = {"/", ".", "a", "%2e", "%2E", "%", "%4", "%2f", "\\", "%00"};
    enum { NA = sizeof alpha / sizeof alpha[0], MAXP = 6 };
    cshw_arena *a = *state;
    size_t total = 0, ok = 0;
    for (int len = 0; len <= MAXP; len++) {
        int idx[MAXP] = {0};
        for (;;) {
            char in[64] = "/";
            for (int i = 0; i < len; i++) strcat(in, alpha[idx[i]]);
            ref_result want;
            reference(in, &want);
            const char *out = NULL;
            size_t n = 0;
            int r = cshw_path_decode(a, in, strlen(in), &out, &n);
            if (r != want.err)
                fail_msg("\"%s\": %s, reference %s", in, cshw_error_name(r),
                         cshw_error_name(want.err));
            if (r == 0) {
                ok++;
                if (strcmp(out, want.out) != 0)
                    fail_msg("\"%s\": \"%s\", reference \"%s\"", in, out, want.out);
                assert_int_equal(n, strlen(out));
                assert_true(n <= strlen(in));
                assert_int_equal(out[0], '/');
                assert_null(strstr(out, "//"));
                assert_null(strstr(out, "/./"));
                assert_null(strstr(out, "/../"));
                assert_null(strchr(out, '\\'));
                size_t ol = strlen(out);
                assert_false(ol >= 2 && strcmp(out + ol - 2, "/.") == 0);
                assert_false(ol >= 3 && strcmp(out + ol - 3, "/..") == 0);
            }
            total++;
            int i = len - 1;
            while (i >= 0 && ++idx[i] == NA) idx[i--] = 0;
            if (i < 0) break;
        }
        cshw_arena_reset(a);
    }
    assert_true(total > 1000000);
    assert_true(ok > 10000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_encode_component, setup, teardown),
        cmocka_unit_test_setup_teardown(test_decode, setup, teardown),
        cmocka_unit_test(test_decode_in_place),
        cmocka_unit_test_setup_teardown(test_round_trip_every_byte, setup, teardown),
        cmocka_unit_test_setup_teardown(test_path_normalise, setup, teardown),
        cmocka_unit_test_setup_teardown(test_path_traversal, setup, teardown),
        cmocka_unit_test_setup_teardown(test_path_refusals, setup, teardown),
        cmocka_unit_test_setup_teardown(test_path_against_reference, setup, teardown),
    };
    return cmocka_run_group_tests_name("url", tests, NULL, NULL);
}
