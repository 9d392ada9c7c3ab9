/* multipart.c: the boundary parameter (RFC 2046 §5.1.1, RFC 9110 §5.6.6)
 * and the streaming multipart/form-data parser (RFC 2046 §5.1, RFC 7578).
 *
 * Every body is parsed whole, split in two at every position, byte by byte
 * and in pseudo-random pieces; each call gets a fresh heap copy of exactly
 * its bytes (AddressSanitizer catches a read past them), and every way must
 * give the same transcript: parts, their data, their ends, the result and
 * the offset of an error. */
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
#include "cshttp/web/multipart.h"

/* ---- the boundary parameter ---- */

static void boundary_is(const char *ct, const char *want)
{
    const char *b = NULL;
    size_t n = 0;
    int r = cshw_multipart_boundary(ct, strlen(ct), &b, &n);
    if (r != 0) fail_msg("\"%s\": %s", ct, cshw_error_name(r));
    if (n != strlen(want) || memcmp(b, want, n) != 0)
        fail_msg("\"%s\": boundary \"%.*s\", want \"%s\"", ct, (int)n, b, want);
    assert_true(b >= ct && b + n <= ct + strlen(ct)); /* points into the value */
}

static void boundary_fails(const char *ct, int want)
{
    const char *b = "untouched";
    size_t n = 99;
    int r = cshw_multipart_boundary(ct, strlen(ct), &b, &n);
    if (r != want) fail_msg("\"%s\": %s, want %s", ct, cshw_error_name(r), cshw_error_name(want));
    assert_string_equal(b, "untouched");
    assert_int_equal(n, 99);
}

static void test_boundary(void **state)
{
    (void)state;
    boundary_is("multipart/form-data; boundary=----WebKitFormBoundary7MA4YWxkTrZu0gW",
                "----WebKitFormBoundary7MA4YWxkTrZu0gW");
    boundary_is("multipart/form-data;boundary=AaB03x", "AaB03x"); /* RFC 7578 §4.1 */
    boundary_is("Multipart/Form-Data; BOUNDARY=x", "x");
    boundary_is("multipart/mixed; boundary=\"gc0p4Jq0M:2Yt08jU534c0p\"", "gc0p4Jq0M:2Yt08jU534c0p");
    boundary_is("multipart/form-data; boundary=\"a b\"", "a b"); /* space inside: quoted */
    boundary_is("multipart/form-data; charset=utf-8; boundary=x; other=\"y;z\"", "x");
    boundary_is("  multipart/form-data ; boundary=x ;", "x");
    boundary_is("multipart/form-data; boundary='()+_,-./:=?", "'()+_,-./:=?"); /* every bchar */
    boundary_is("multipart/form-data; boundary="
                "0123456789012345678901234567890123456789012345678901234567890123456789",
                "0123456789012345678901234567890123456789012345678901234567890123456789");

    boundary_fails("", CSHW_E_MULTIPART_NOT_MULTIPART);
    boundary_fails("text/plain; boundary=x", CSHW_E_MULTIPART_NOT_MULTIPART);
    boundary_fails("multipart; boundary=x", CSHW_E_MULTIPART_NOT_MULTIPART);
    boundary_fails("multipart/; boundary=x", CSHW_E_MULTIPART_NOT_MULTIPART);
    boundary_fails("multipartx/form-data; boundary=x", CSHW_E_MULTIPART_NOT_MULTIPART);
    boundary_fails("multipart/form-data", CSHW_E_MULTIPART_NO_BOUNDARY);
    boundary_fails("multipart/form-data; charset=utf-8", CSHW_E_MULTIPART_NO_BOUNDARY);
    boundary_fails("multipart/form-data; xboundary=x", CSHW_E_MULTIPART_NO_BOUNDARY);
    boundary_fails("multipart/form-data; boundary=", CSHW_E_MULTIPART_INVALID_CONTENT_TYPE);
    boundary_fails("multipart/form-data; boundary", CSHW_E_MULTIPART_INVALID_CONTENT_TYPE);
    boundary_fails("multipart/form-data boundary=x", CSHW_E_MULTIPART_INVALID_CONTENT_TYPE);
    boundary_fails("multipart/form-data; boundary =x", CSHW_E_MULTIPART_INVALID_CONTENT_TYPE);
    boundary_fails("multipart/form-data; boundary=\"x", CSHW_E_MULTIPART_INVALID_CONTENT_TYPE);
    boundary_fails("multipart/form-data; boundary=x y", CSHW_E_MULTIPART_INVALID_CONTENT_TYPE);
    boundary_fails("multipart/form-data; boundary=a; boundary=b",
                   CSHW_E_MULTIPART_INVALID_CONTENT_TYPE);
    boundary_fails("multipart/form-data; boundary=a; boundary=a",
                   CSHW_E_MULTIPART_INVALID_CONTENT_TYPE);
    boundary_fails("multipart/form-data; charset=a/b; boundary=x",
                   CSHW_E_MULTIPART_INVALID_CONTENT_TYPE);
    boundary_fails("multipart/form-data; boundary=\"\"", CSHW_E_MULTIPART_INVALID_BOUNDARY);
    boundary_fails("multipart/form-data; boundary=\"a \"", CSHW_E_MULTIPART_INVALID_BOUNDARY);
    boundary_fails("multipart/form-data; boundary=\"a\\b\"", CSHW_E_MULTIPART_INVALID_BOUNDARY);
    boundary_fails("multipart/form-data; boundary=a\"b", CSHW_E_MULTIPART_INVALID_BOUNDARY);
    boundary_fails("multipart/form-data; boundary=a@b", CSHW_E_MULTIPART_INVALID_BOUNDARY);
    boundary_fails("multipart/form-data; boundary=\"a\x01\"",
                   CSHW_E_MULTIPART_INVALID_CONTENT_TYPE);
    boundary_fails("multipart/form-data; boundary="
                   "01234567890123456789012345678901234567890123456789012345678901234567890",
                   CSHW_E_MULTIPART_INVALID_BOUNDARY); /* 71 */
    assert_int_equal(cshw_error_status(CSHW_E_MULTIPART_NOT_MULTIPART), 415);
    assert_int_equal(cshw_error_status(CSHW_E_MULTIPART_INVALID_BOUNDARY), 400);
}

/* ---- the body parser, through a transcript ---- */

typedef struct transcript {
    char *text;
    size_t len, cap;
} transcript;

static void put(transcript *t, const void *data, size_t len)
{
    if (t->len + len + 1 > t->cap) {
        t->cap = (t->len + len + 1) * 2;
        t->text = realloc(t->text, t->cap);
        assert_non_null(t->text);
    }
    memcpy(t->text + t->len, data, len);
    t->len += len;
    t->text[t->len] = '\0';
}

/* Appends data bytes readably: NUL as \0, bytes from 0x80 as \xHH. */
static void put_data(transcript *t, const char *data, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)data[i];
        char esc[8];
        if (c == 0)
            put(t, "\\0", 2);
        else if (c >= 0x80)
            put(t, esc, (size_t)snprintf(esc, sizeof esc, "\\x%02x", c));
        else
            put(t, &data[i], 1);
    }
}

static void putf(transcript *t, const char *fmt, ...)
{
    char buf[4096];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    put(t, buf, (size_t)n);
}

enum { WHOLE = 0, BYTES = 1, RANDOM = 2, SPLIT = 3 };

/* Parses body[0 .. len) with the boundary "XyZ" (or `boundary`), delivering
 * it whole (mode WHOLE), one byte at a time (BYTES), in pieces of 1..17
 * bytes from `seed` (RANDOM) or in two pieces split at `at` (SPLIT). */
static void parse(const char *body, size_t len, const char *boundary,
                  const cshw_multipart_limits *limits, int mode, size_t at, transcript *t)
{
    cshw_arena *a = cshw_arena_new(0);
    cshw_multipart m;
    assert_int_equal(cshw_multipart_init(&m, a, boundary, strlen(boundary), limits), 0);
    char *pending = malloc(len + 1);
    size_t plen = 0, delivered = 0, absolute = 0;
    uint32_t seed = (uint32_t)at * 2654435761u + 1;
    transcript data = {0};
    int r = CSHW_MULTIPART_INCOMPLETE;
    for (;;) {
        /* more bytes arrive */
        size_t piece = len - delivered;
        if (mode == BYTES) piece = piece ? 1 : 0;
        if (mode == RANDOM) {
            seed = seed * 1103515245u + 12345u;
            size_t want = 1 + (seed >> 16) % 17;
            if (want < piece) piece = want;
        }
        if (mode == SPLIT && delivered < at) piece = at - delivered;
        memcpy(pending + plen, body + delivered, piece);
        plen += piece;
        delivered += piece;
        for (;;) {
            char *copy = malloc(plen ? plen : 1);
            memcpy(copy, pending, plen);
            size_t used = (size_t)-1;
            csh_span d = {(size_t)-1, (size_t)-1};
            r = cshw_multipart_feed(&m, copy, plen, &used, &d);
            assert_true(used <= plen);
            if (r == CSHW_MULTIPART_DATA) {
                assert_true(d.len > 0);
                assert_true(d.off + d.len <= used);
                put(&data, copy + d.off, d.len);
            } else if (r == CSHW_MULTIPART_PART) {
                const cshw_multipart_part *p = &m.part;
                assert_non_null(p->name);
                assert_int_equal(p->name[p->name_len], '\0');
                assert_int_equal(p->content_type[p->content_type_len], '\0');
                assert_int_equal(p->index + 1, m.parts);
                putf(t, "PART[%s|%s|%s|%zu]\n", p->name, p->filename ? p->filename : "(none)",
                     p->content_type, p->headers.count);
                data.len = 0;
            } else if (r == CSHW_MULTIPART_PART_END) {
                putf(t, "DATA[");
                put_data(t, data.text ? data.text : "", data.len);
                putf(t, "]\n");
                assert_int_equal(m.data_bytes, data.len);
                data.len = 0;
            } else if (r == CSHW_MULTIPART_DONE) {
                assert_int_equal(used, plen); /* the epilogue is consumed */
            } else if (r < 0) {
                putf(t, "%s at %zu\n", cshw_error_name(r), absolute + used);
            }
            free(copy);
            memmove(pending, pending + used, plen - used);
            plen -= used;
            absolute += used;
            if (r != CSHW_MULTIPART_PART && r != CSHW_MULTIPART_DATA &&
                r != CSHW_MULTIPART_PART_END)
                break;
        }
        if (r != CSHW_MULTIPART_INCOMPLETE) break;
        if (delivered == len) {
            r = cshw_multipart_finish(&m);
            if (r < 0) putf(t, "%s at end\n", cshw_error_name(r));
            break;
        }
    }
    if (r == CSHW_MULTIPART_DONE) {
        putf(t, "DONE\n");
        /* sticky, and later bytes are epilogue */
        size_t used = 0;
        csh_span d;
        assert_int_equal(cshw_multipart_feed(&m, "more", 4, &used, &d), CSHW_MULTIPART_DONE);
        assert_int_equal(used, 4);
        assert_int_equal(cshw_multipart_finish(&m), CSHW_MULTIPART_DONE);
    } else if (r < 0) {
        size_t used = 7;
        csh_span d;
        assert_int_equal(cshw_multipart_feed(&m, "more", 4, &used, &d), r); /* sticky */
        assert_int_equal(used, 0);
        assert_int_equal(cshw_multipart_finish(&m), r);
    }
    free(data.text);
    free(pending);
    cshw_arena_free(a);
}

/* Parses every way and checks that all agree with `want`. */
static void check_body(const char *body, size_t len, const char *boundary,
                       const cshw_multipart_limits *limits, const char *want)
{
    transcript whole = {0};
    parse(body, len, boundary, limits, WHOLE, 0, &whole);
    if (strcmp(whole.text, want) != 0) fail_msg("whole body:\n%s\nwant:\n%s", whole.text, want);
    for (size_t at = 0; at <= len; at++) {
        transcript t = {0};
        parse(body, len, boundary, limits, SPLIT, at, &t);
        if (strcmp(t.text, want) != 0) fail_msg("split at %zu:\n%s\nwant:\n%s", at, t.text, want);
        free(t.text);
        t = (transcript){0};
        parse(body, len, boundary, limits, RANDOM, at, &t);
        if (strcmp(t.text, want) != 0)
            fail_msg("random pieces (seed %zu):\n%s\nwant:\n%s", at, t.text, want);
        free(t.text);
    }
    transcript t = {0};
    parse(body, len, boundary, limits, BYTES, 0, &t);
    if (strcmp(t.text, want) != 0) fail_msg("byte by byte:\n%s\nwant:\n%s", t.text, want);
    free(t.text);
    free(whole.text);
}

#define BODY(lit, want) check_body((lit), sizeof(lit) - 1, "XyZ", NULL, (want))
#define CD "Content-Disposition: form-data; name="

/* RFC 7578 §4 shape, as browsers send it. */
static void test_form_body(void **state)
{
    (void)state;
    BODY("--XyZ\r\n" CD "\"field1\"\r\n\r\nvalue1\r\n"
         "--XyZ\r\n" CD "\"file\"; filename=\"a.txt\"\r\nContent-Type: text/csv\r\n\r\n"
         "x,y\r\n1,2\r\n"
         "\r\n--XyZ--\r\n",
         "PART[field1|(none)|text/plain|1]\nDATA[value1]\n"
         "PART[file|a.txt|text/csv|2]\nDATA[x,y\r\n1,2\r\n]\nDONE\n");
    /* RFC 7578 §4.1's boundary and the close delimiter's epilogue */
    check_body("--AaB03x\r\n" CD "\"submit-name\"\r\n\r\nLarry\r\n--AaB03x--\r\nepilogue\r\n--x",
               81, "AaB03x", NULL, "PART[submit-name|(none)|text/plain|1]\nDATA[Larry]\nDONE\n");
}

/* RFC 2046 §5.1.1: preamble, dash-boundary at the start, transport padding,
 * epilogue, an empty part, zero parts. */
static void test_framing(void **state)
{
    (void)state;
    BODY("preamble\r\n--XyZ\r\n" CD "a\r\n\r\n1\r\n--XyZ--",
         "PART[a|(none)|text/plain|1]\nDATA[1]\nDONE\n");
    BODY("\r\n--XyZ\r\n" CD "a\r\n\r\n1\r\n--XyZ--",
         "PART[a|(none)|text/plain|1]\nDATA[1]\nDONE\n");
    BODY("--XyZ \t \r\n" CD "a\r\n\r\n1\r\n--XyZ\t\r\n" CD "b\r\n\r\n\r\n--XyZ--  \r\n",
         "PART[a|(none)|text/plain|1]\nDATA[1]\nPART[b|(none)|text/plain|1]\nDATA[]\nDONE\n");
    BODY("--XyZ--", "DONE\n");
    BODY("--XyZ--\r\n", "DONE\n");
    BODY("junk\r\n--XyZ--anything at all", "DONE\n");
    /* preamble that looks like a boundary but is not */
    BODY("-XyZ --XyZ\n--XyZ \r\n--XyZ\r\n" CD "a\r\n\r\n\r\n--XyZ--",
         "PART[a|(none)|text/plain|1]\nDATA[]\nDONE\n");
}

/* Data is everything up to CRLF "--boundary": near-misses are data. */
static void test_data_near_misses(void **state)
{
    (void)state;
    BODY("--XyZ\r\n" CD "a\r\n\r\n"
         "\r\n--XY\r\n-XyZ\r\n\r--XyZ\n--XyZ--XyZ\r\n--\r\n-\r\r\n"
         "\r\n--XyZ--",
         "PART[a|(none)|text/plain|1]\n"
         "DATA[\r\n--XY\r\n-XyZ\r\n\r--XyZ\n--XyZ--XyZ\r\n--\r\n-\r\r\n]\nDONE\n");
    /* the CRLF before the delimiter belongs to it; one more stays data */
    BODY("--XyZ\r\n" CD "a\r\n\r\n\r\n\r\n--XyZ--",
         "PART[a|(none)|text/plain|1]\nDATA[\r\n]\nDONE\n");
    /* the part's data may hold any byte */
    check_body("--XyZ\r\n" CD "a\r\n\r\n\0\xff\r\0\n\r\n--XyZ--", 63, "XyZ", NULL,
               "PART[a|(none)|text/plain|1]\nDATA[\\0\\xff\r\\0\n]\nDONE\n");
}

/* A body that ends before its close delimiter is an error at finish, where
 * ever it stops (RFC 2046 §5.1.1: the close delimiter is required). */
static void test_truncated(void **state)
{
    (void)state;
    static const char full[] = "pre\r\n--XyZ\r\n" CD "a\r\n\r\ndata\r\n--XyZ--";
    const char *want_at[] = {"", "PART[a|(none)|text/plain|1]\n",
                             "PART[a|(none)|text/plain|1]\nDATA[data]\n"};
    for (size_t len = 0; len < sizeof full - 1; len++) {
        const char *p = strstr(full, "\r\n\r\n");
        size_t headers_end = (size_t)(p - full) + 4;
        size_t data_end = headers_end + 4 + 7; /* "data" CRLF--XyZ */
        const char *before = len < headers_end ? want_at[0]
                             : len < data_end  ? want_at[1]
                                               : want_at[2];
        char want[256];
        snprintf(want, sizeof want, "%sCSHW_E_MULTIPART_TRUNCATED at end\n", before);
        check_body(full, len, "XyZ", NULL, want);
    }
    assert_int_equal(cshw_error_status(CSHW_E_MULTIPART_TRUNCATED), 400);
}

/* RFC 2046 §5.1.1: after "--boundary" only "--", transport padding and
 * CRLF; RFC 7578 on RFC 9112 §5 for header lines: CRLF, no bare CR or LF,
 * no obs-fold, no whitespace before the colon. */
static void test_malformed(void **state)
{
    (void)state;
    BODY("--XyZX\r\n", "CSHW_E_MULTIPART_INVALID_DELIMITER at 5\n");
    BODY("--XyZ-x", "CSHW_E_MULTIPART_INVALID_DELIMITER at 6\n");
    BODY("--XyZ\n" CD "a\r\n\r\n", "CSHW_E_MULTIPART_INVALID_DELIMITER at 5\n");
    BODY("--XyZ\r\r\n", "CSHW_E_MULTIPART_INVALID_DELIMITER at 6\n");
    BODY("--XyZ  x\r\n", "CSHW_E_MULTIPART_INVALID_DELIMITER at 7\n");
    BODY("--XyZ \t-\r\n", "CSHW_E_MULTIPART_INVALID_DELIMITER at 7\n");
    /* the boundary inside a part followed by something else */
    BODY("--XyZ\r\n" CD "a\r\n\r\nab\r\n--XyZabc\r\n--XyZ--",
         "PART[a|(none)|text/plain|1]\nDATA[ab]\nCSHW_E_MULTIPART_INVALID_DELIMITER at 58\n");
    /* in the preamble too */
    BODY("x\r\n--XyZ!", "CSHW_E_MULTIPART_INVALID_DELIMITER at 8\n");
    /* header lines */
    BODY("--XyZ\r\n" CD "a\n\r\n", "CSHW_E_MULTIPART_INVALID_HEADER at 7\n");
    BODY("--XyZ\r\n" CD "a\r\n\n", "CSHW_E_MULTIPART_INVALID_HEADER at 47\n");
    BODY("--XyZ\r\n" CD "a\rb\r\n\r\n", "CSHW_E_MULTIPART_INVALID_HEADER at 7\n");
    BODY("--XyZ\r\nContent-Disposition : form-data; name=a\r\n\r\n",
         "CSHW_E_MULTIPART_INVALID_HEADER at 7\n");
    BODY("--XyZ\r\nno colon\r\n\r\n", "CSHW_E_MULTIPART_INVALID_HEADER at 7\n");
    BODY("--XyZ\r\n: empty name\r\n\r\n", "CSHW_E_MULTIPART_INVALID_HEADER at 7\n");
    BODY("--XyZ\r\n" CD "a\r\n folded\r\n\r\n", "CSHW_E_MULTIPART_INVALID_HEADER at 47\n");
    BODY("--XyZ\r\n" CD "a\r\nX: a\x01z\r\n\r\n", "CSHW_E_MULTIPART_INVALID_HEADER at 47\n");
    BODY("--XyZ\r\n" CD "a\r\nX: a\0z\r\n\r\n", "CSHW_E_MULTIPART_INVALID_HEADER at 47\n");
    BODY("--XyZ\r\n" CD "a\r\n" CD "b\r\n\r\n", "CSHW_E_MULTIPART_INVALID_HEADER at 87\n");
    BODY("--XyZ\r\n" CD "a\r\nContent-Type: a/b\r\ncontent-type: c/d\r\n\r\n",
         "CSHW_E_MULTIPART_INVALID_HEADER at 85\n");
    assert_int_equal(cshw_error_status(CSHW_E_MULTIPART_INVALID_HEADER), 400);
    assert_int_equal(cshw_error_status(CSHW_E_MULTIPART_INVALID_DELIMITER), 400);
}

/* RFC 7578 §4.2: Content-Disposition form-data with a name, quoted-string
 * or token parameters, filename optional; §4.4 default Content-Type. */
static void test_disposition(void **state)
{
    (void)state;
#define ONE(headers, want) BODY("--XyZ\r\n" headers "\r\n\r\nv\r\n--XyZ--", want)
    ONE("Content-Disposition: form-data; name=\"a\"",
        "PART[a|(none)|text/plain|1]\nDATA[v]\nDONE\n");
    ONE("content-disposition:FORM-DATA;NAME=a", "PART[a|(none)|text/plain|1]\nDATA[v]\nDONE\n");
    ONE("Content-Disposition: form-data ; name = \"a b\" ; filename = f.txt ;",
        "PART[a b|f.txt|text/plain|1]\nDATA[v]\nDONE\n");
    ONE("Content-Disposition: form-data; name=\"q\\\"x\\\\y\"",
        "PART[q\"x\\y|(none)|text/plain|1]\nDATA[v]\nDONE\n");
    /* Windows paths as old browsers sent them: backslashes kept */
    ONE("Content-Disposition: form-data; name=f; filename=\"C:\\Users\\me\\a.txt\"",
        "PART[f|C:\\Users\\me\\a.txt|text/plain|1]\nDATA[v]\nDONE\n");
    /* an empty filename (no file chosen) is not an absent one */
    ONE("Content-Disposition: form-data; name=f; filename=\"\"\r\nContent-Type: "
        "application/octet-stream",
        "PART[f||application/octet-stream|2]\nDATA[v]\nDONE\n");
    ONE("Content-Disposition: form-data; name=\"\"", "PART[|(none)|text/plain|1]\nDATA[v]\nDONE\n");
    /* HTML's %22 escapes are delivered as sent */
    ONE("Content-Disposition: form-data; name=\"a%22b\"; filename=\"x%0Ay\"",
        "PART[a%22b|x%0Ay|text/plain|1]\nDATA[v]\nDONE\n");
    /* raw UTF-8 filenames, as browsers send them */
    ONE("Content-Disposition: form-data; name=f; filename=\"\xc3\xa9t\xc3\xa9.txt\"",
        "PART[f|\xc3\xa9t\xc3\xa9.txt|text/plain|1]\nDATA[v]\nDONE\n");
    /* RFC 8187 filename*, UTF-8 only, preferred to filename */
    ONE("Content-Disposition: form-data; name=f; filename=\"e.txt\"; filename*=UTF-8''%c3%a9.txt",
        "PART[f|\xc3\xa9.txt|text/plain|1]\nDATA[v]\nDONE\n");
    ONE("Content-Disposition: form-data; name=f; filename*=utf-8'en'a%20b",
        "PART[f|a b|text/plain|1]\nDATA[v]\nDONE\n");
    ONE("Content-Disposition: form-data; name=f; filename=\"e.txt\"; filename*=iso-8859-1''%e9.txt",
        "PART[f|e.txt|text/plain|1]\nDATA[v]\nDONE\n");
    ONE("Content-Disposition: form-data; name=f; filename*=garbage",
        "PART[f|(none)|text/plain|1]\nDATA[v]\nDONE\n");
    /* other headers are kept too */
    ONE("X-Custom: 1\r\nContent-Disposition: form-data; name=a\r\nContent-Type:  image/png ",
        "PART[a|(none)|image/png|3]\nDATA[v]\nDONE\n");

    ONE("Content-Type: text/plain", "CSHW_E_MULTIPART_INVALID_DISPOSITION at 33\n");
    ONE("Content-Disposition: attachment; name=a", "CSHW_E_MULTIPART_INVALID_DISPOSITION at 48\n");
    ONE("Content-Disposition: form-data", "CSHW_E_MULTIPART_INVALID_DISPOSITION at 39\n");
    ONE("Content-Disposition: form-data; filename=a",
        "CSHW_E_MULTIPART_INVALID_DISPOSITION at 51\n");
    ONE("Content-Disposition: form-data; name=a; name=b",
        "CSHW_E_MULTIPART_INVALID_DISPOSITION at 55\n");
    ONE("Content-Disposition: form-data; name=a; filename=x; filename=y",
        "CSHW_E_MULTIPART_INVALID_DISPOSITION at 71\n");
    ONE("Content-Disposition: form-data; name=\"a", "CSHW_E_MULTIPART_INVALID_DISPOSITION at 48\n");
    ONE("Content-Disposition: form-data; name=\"a\\\"",
        "CSHW_E_MULTIPART_INVALID_DISPOSITION at 50\n");
    ONE("Content-Disposition: form-data; name=\"a\" x",
        "CSHW_E_MULTIPART_INVALID_DISPOSITION at 51\n");
    ONE("Content-Disposition: form-datax; name=a", "CSHW_E_MULTIPART_INVALID_DISPOSITION at 48\n");
    ONE("Content-Disposition: form-data; =a; name=b",
        "CSHW_E_MULTIPART_INVALID_DISPOSITION at 51\n");
    ONE("", "CSHW_E_MULTIPART_INVALID_DISPOSITION at 7\n");
#undef ONE
    assert_int_equal(cshw_error_status(CSHW_E_MULTIPART_INVALID_DISPOSITION), 400);
}

static void test_limits(void **state)
{
    (void)state;
    cshw_multipart_limits l;
    memset(&l, 0xcc, sizeof l);
    cshw_multipart_limits_init(&l);
    assert_int_equal(l.max_parts, 1000);
    assert_int_equal(l.max_header_bytes, 16384);
    assert_int_equal(l.max_headers, 16);

    static const char three[] = "--XyZ\r\n" CD "a\r\n\r\n1\r\n--XyZ\r\n" CD "b\r\n\r\n2\r\n"
                                "--XyZ\r\n" CD "c\r\n\r\n3\r\n--XyZ--";
    l.max_parts = 3;
    check_body(three, sizeof three - 1, "XyZ", &l,
               "PART[a|(none)|text/plain|1]\nDATA[1]\nPART[b|(none)|text/plain|1]\nDATA[2]\n"
               "PART[c|(none)|text/plain|1]\nDATA[3]\nDONE\n");
    l.max_parts = 2;
    check_body(three, sizeof three - 1, "XyZ", &l,
               "PART[a|(none)|text/plain|1]\nDATA[1]\nPART[b|(none)|text/plain|1]\nDATA[2]\n"
               "CSHW_E_MULTIPART_TOO_MANY_PARTS at 111\n");

    /* header bytes: the section's lines with their CRLFs, the empty line too */
    static const char hb[] = "--XyZ\r\n" CD "a\r\nX: 12345\r\n\r\nv\r\n--XyZ--";
    cshw_multipart_limits_init(&l);
    l.max_header_bytes = 40 + 10 + 2;
    check_body(hb, sizeof hb - 1, "XyZ", &l, "PART[a|(none)|text/plain|2]\nDATA[v]\nDONE\n");
    l.max_header_bytes = 40 + 10 + 1;
    check_body(hb, sizeof hb - 1, "XyZ", &l, "CSHW_E_MULTIPART_HEADER_TOO_LARGE at 57\n");
    l.max_header_bytes = 40 + 9;
    check_body(hb, sizeof hb - 1, "XyZ", &l, "CSHW_E_MULTIPART_HEADER_TOO_LARGE at 47\n");
    l.max_header_bytes = 10;
    check_body(hb, sizeof hb - 1, "XyZ", &l, "CSHW_E_MULTIPART_HEADER_TOO_LARGE at 7\n");
    /* a header line that never ends stops at the limit, not at the body's end */
    static char endless[20000];
    memcpy(endless, "--XyZ\r\nX: ", 10);
    memset(endless + 10, 'x', sizeof endless - 10);
    cshw_multipart_limits_init(&l);
    transcript t = {0};
    parse(endless, sizeof endless, "XyZ", &l, RANDOM, 3, &t);
    assert_string_equal(t.text, "CSHW_E_MULTIPART_HEADER_TOO_LARGE at 7\n");
    free(t.text);

    cshw_multipart_limits_init(&l);
    l.max_headers = 2;
    check_body(hb, sizeof hb - 1, "XyZ", &l, "PART[a|(none)|text/plain|2]\nDATA[v]\nDONE\n");
    l.max_headers = 1;
    check_body(hb, sizeof hb - 1, "XyZ", &l, "CSHW_E_MULTIPART_TOO_MANY_HEADERS at 47\n");

    /* 0: no limit */
    cshw_multipart_limits_init(&l);
    l.max_parts = l.max_header_bytes = l.max_headers = 0;
    check_body(three, sizeof three - 1, "XyZ", &l,
               "PART[a|(none)|text/plain|1]\nDATA[1]\nPART[b|(none)|text/plain|1]\nDATA[2]\n"
               "PART[c|(none)|text/plain|1]\nDATA[3]\nDONE\n");
    assert_int_equal(cshw_error_status(CSHW_E_MULTIPART_TOO_MANY_PARTS), 413);
    assert_int_equal(cshw_error_status(CSHW_E_MULTIPART_HEADER_TOO_LARGE), 413);
    assert_int_equal(cshw_error_status(CSHW_E_MULTIPART_TOO_MANY_HEADERS), 413);
}

/* The longest boundary (70) and one with spaces, and init's refusals. */
static void test_boundaries_in_bodies(void **state)
{
    (void)state;
    static const char b70[] =
        "0123456789012345678901234567890123456789012345678901234567890123456789";
    char body[512];
    int n =
        snprintf(body, sizeof body, "--%s\r\n" CD "a\r\n\r\n\r\n--%.69s\r\n--%s--", b70, b70, b70);
    check_body(body, (size_t)n, b70, NULL,
               "PART[a|(none)|text/plain|1]\nDATA[\r\n--"
               "012345678901234567890123456789012345678901234567890123456789012345678"
               "]\nDONE\n"); /* the delimiter but its last byte, then the delimiter */
    static const char sp[] = "--a b\r\n" CD "x\r\n\r\nv\r\n--a b--";
    check_body(sp, sizeof sp - 1, "a b", NULL, "PART[x|(none)|text/plain|1]\nDATA[v]\nDONE\n");

    cshw_arena *a = cshw_arena_new(0);
    cshw_multipart m;
    size_t used;
    csh_span d;
    assert_int_equal(cshw_multipart_init(&m, a, "", 0, NULL), CSHW_E_MULTIPART_INVALID_BOUNDARY);
    assert_int_equal(cshw_multipart_feed(&m, "--", 2, &used, &d),
                     CSHW_E_MULTIPART_INVALID_BOUNDARY);
    assert_int_equal(cshw_multipart_init(&m, a, "a\r\n", 3, NULL),
                     CSHW_E_MULTIPART_INVALID_BOUNDARY);
    assert_int_equal(cshw_multipart_init(&m, a, NULL, 0, NULL), CSHW_E_MULTIPART_INVALID_BOUNDARY);
    assert_int_equal(cshw_multipart_init(&m, a, b70, 71, NULL), CSHW_E_MULTIPART_INVALID_BOUNDARY);
    cshw_arena_free(a);
}

/* Large random data with many CRs and delimiter prefixes, in random pieces:
 * the data comes back exactly. */
static void test_large_data(void **state)
{
    (void)state;
    enum { N = 200000 };
    static char payload[N];
    uint32_t x = 12345;
    static const char *chunks[] = {"\r",      "\r\n",     "\r\n-", "\r\n--",
                                   "\r\n--X", "\r\n--Xy", "a",     "\n"};
    for (size_t i = 0; i < N;) {
        x = x * 1103515245u + 12345u;
        const char *c = (x >> 8) % 3 ? (const char *)&x : chunks[(x >> 12) % 8];
        size_t n = c == (const char *)&x ? 1 : strlen(c);
        for (size_t k = 0; k < n && i < N; k++) payload[i++] = c[k] == 'Z' ? 'z' : c[k];
    }
    static char body[N + 200];
    size_t len = 0;
    len += (size_t)sprintf(body, "--XyZ\r\n" CD "big; filename=b.bin\r\n\r\n");
    memcpy(body + len, payload, N);
    len += N;
    memcpy(body + len, "\r\n--XyZ--", 9);
    len += 9;
    for (int mode = WHOLE; mode <= RANDOM; mode++) {
        transcript t = {0}, want = {0};
        parse(body, len, "XyZ", NULL, mode, 77, &t);
        putf(&want, "PART[big|b.bin|text/plain|1]\nDATA[");
        put_data(&want, payload, N);
        putf(&want, "]\nDONE\n");
        assert_int_equal(t.len, want.len);
        assert_memory_equal(t.text, want.text, want.len);
        free(t.text);
        free(want.text);
    }
}

/* multipart.h: the limits are read by their size, as form.h's are (see
 * test_form.c): the first version's size alone in its allocation, a newer
 * caller's larger struct, and a size below the first version's, which
 * cshw_multipart_init and every feed then return. */
static void test_limits_sizes(void **state)
{
    (void)state;
    static const char three[] = "--XyZ\r\n" CD "a\r\n\r\n1\r\n--XyZ\r\n" CD "b\r\n\r\n2\r\n"
                                "--XyZ\r\n" CD "c\r\n\r\n3\r\n--XyZ--";
    cshw_multipart_limits *old = malloc(CSHW_MULTIPART_LIMITS_SIZE_0_3);
    assert_non_null(old);
    cshw_multipart_limits_init_sized(old, CSHW_MULTIPART_LIMITS_SIZE_0_3);
    assert_int_equal(old->size, CSHW_MULTIPART_LIMITS_SIZE_0_3);
    assert_int_equal(old->max_headers, 16);
    old->max_parts = 2;
    check_body(three, sizeof three - 1, "XyZ", old,
               "PART[a|(none)|text/plain|1]\nDATA[1]\nPART[b|(none)|text/plain|1]\nDATA[2]\n"
               "CSHW_E_MULTIPART_TOO_MANY_PARTS at 111\n");
    free(old);

    size_t big[sizeof(cshw_multipart_limits) / sizeof(size_t) + 4];
    memset(big, 0xff, sizeof big);
    cshw_multipart_limits *newer = (cshw_multipart_limits *)(void *)big;
    cshw_multipart_limits_init_sized(newer, sizeof big);
    assert_int_equal(newer->size, sizeof big);
    for (size_t i = sizeof(cshw_multipart_limits) / sizeof(size_t); i < sizeof big / sizeof big[0];
         i++)
        assert_int_equal(big[i], 0);
    big[sizeof big / sizeof big[0] - 1] = 1; /* a newer limit this library ignores */
    newer->max_parts = 2;
    check_body(three, sizeof three - 1, "XyZ", newer,
               "PART[a|(none)|text/plain|1]\nDATA[1]\nPART[b|(none)|text/plain|1]\nDATA[2]\n"
               "CSHW_E_MULTIPART_TOO_MANY_PARTS at 111\n");

    cshw_arena *a = cshw_arena_new(0);
    cshw_multipart m;
    cshw_multipart_limits l;
    cshw_multipart_limits_init(&l);
    l.size = CSHW_MULTIPART_LIMITS_SIZE_0_3 - 1;
    assert_int_equal(cshw_multipart_init(&m, a, "XyZ", 3, &l), -EINVAL);
    size_t used = 7;
    csh_span d;
    assert_int_equal(cshw_multipart_feed(&m, three, sizeof three - 1, &used, &d), -EINVAL);
    assert_int_equal(used, 0);
    assert_int_equal(cshw_multipart_finish(&m), -EINVAL);
    memset(&l, 0, sizeof l);
    assert_int_equal(cshw_multipart_init(&m, a, "XyZ", 3, &l), -EINVAL);
    cshw_arena_free(a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_boundary),
        cmocka_unit_test(test_form_body),
        cmocka_unit_test(test_framing),
        cmocka_unit_test(test_data_near_misses),
        cmocka_unit_test(test_truncated),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_disposition),
        cmocka_unit_test(test_limits),
        cmocka_unit_test(test_limits_sizes),
        cmocka_unit_test(test_boundaries_in_bodies),
        cmocka_unit_test(test_large_data),
    };
    return cmocka_run_group_tests_name("multipart", tests, NULL, NULL);
}
