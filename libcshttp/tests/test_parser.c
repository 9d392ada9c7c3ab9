/* The message parser's API (parser.h): init, reset and the pipelining loop,
 * sticky results, resumption on a growing or moved buffer, the request
 * method of a response parser, method names, limits defaults, the portable
 * scanner (CSH_PARSE_NO_SIMD) against the default on the whole case corpus.
 *
 * Usage: test_parser [CASES_DIR] */
#define _POSIX_C_SOURCE 200809L

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include <cshttp/cshttp.h>

#include "tc_cases.h"

#ifndef CSH_CASES_DIR
#define CSH_CASES_DIR "cases"
#endif

static const char *cases_dir = CSH_CASES_DIR;

#define S(lit) lit, (sizeof(lit) - 1)

static int span_is(const char *base, csh_span s, const char *str)
{
    return csh_span_eq(base, s, str);
}

/* ---- limits ---------------------------------------------------------------------- */

/* parser.h: the documented defaults. */
static void test_limits_defaults(void **state)
{
    (void)state;
    csh_limits l;
    memset(&l, 0xab, sizeof l);
    csh_limits_init(&l);
    assert_int_equal(l.max_start_line, 8192);
    assert_int_equal(l.max_field_line, 8192);
    assert_int_equal(l.max_head, 32768);
    assert_int_equal(l.max_fields, 100);
    assert_int_equal(l.max_chunk_ext, 1024);
    assert_int_equal(l.max_trailer, 8192);
    assert_int_equal(l.max_method, 32);
    assert_int_equal(l.size, sizeof l);
}

/* parser.h: a size below the first version's (a struct filled without
 * csh_limits_init) is an error of every call, after a reset too, for the
 * parser, the chunked decoder and the body reader alike. */
static void test_limits_bad_size(void **state)
{
    (void)state;
    static const char req[] = "GET / HTTP/1.1\r\nHost: a\r\n\r\n";
    csh_header f[8];
    csh_parser p;
    csh_limits l;
    csh_limits_init(&l);
    l.size = 0;
    csh_parser_init(&p, CSH_REQUEST, f, 8, &l, 0);
    assert_int_equal(csh_parser_execute(&p, S(req)), CSH_E_INVALID_ARGUMENT);
    csh_parser_reset(&p);
    assert_int_equal(csh_parser_execute(&p, S(req)), CSH_E_INVALID_ARGUMENT);
    l.size = CSH_LIMITS_SIZE_0_2 - 1;
    csh_parser_init(&p, CSH_REQUEST, f, 8, &l, 0);
    assert_int_equal(csh_parser_execute(&p, S(req)), CSH_E_INVALID_ARGUMENT);
    /* the same parser given good limits again works */
    l.size = sizeof l;
    csh_parser_init(&p, CSH_REQUEST, f, 8, &l, 0);
    assert_int_equal(csh_parser_execute(&p, S(req)), CSH_OK);

    static const char body[] = "1\r\na\r\n0\r\n\r\n";
    csh_chunked c;
    size_t used;
    csh_span data;
    l.size = 0;
    csh_chunked_init(&c, &l, 0, NULL, 0);
    assert_int_equal(csh_chunked_decode(&c, S(body), &used, &data), CSH_E_INVALID_ARGUMENT);
    csh_chunked_reset(&c);
    assert_int_equal(csh_chunked_decode(&c, S(body), &used, &data), CSH_E_INVALID_ARGUMENT);
    l.size = sizeof l;
    csh_chunked_init(&c, &l, 0, NULL, 0);
    assert_int_equal(csh_chunked_decode(&c, S(body), &used, &data), CSH_DATA);
}

/* parser.h: the library reads only the fields within limits->size. A caller
 * built against the first headers with `size` hands a struct of
 * CSH_LIMITS_SIZE_0_2 bytes: here in an allocation of exactly that size, so
 * that a read past it is an ASan report; its limits are obeyed. */
static void test_limits_read_within_size(void **state)
{
    (void)state;
    static const char req[] = "GET / HTTP/1.1\r\nHost: a\r\nA: 1\r\nB: 2\r\n\r\n";
    csh_limits *old = malloc(CSH_LIMITS_SIZE_0_2);
    assert_non_null(old);
    /* what csh_limits_init does in such a caller: it writes no more */
    csh_limits_init_sized(old, CSH_LIMITS_SIZE_0_2);
    assert_int_equal(old->size, CSH_LIMITS_SIZE_0_2);
    assert_int_equal(old->max_head, 32768);
    old->max_fields = 2;
    csh_header f[8];
    csh_parser p;
    csh_parser_init(&p, CSH_REQUEST, f, 8, old, 0);
    assert_int_equal(csh_parser_execute(&p, S(req)), CSH_E_TOO_MANY_FIELDS);
    csh_chunked c; /* the decoder reads the struct at init, the same way */
    csh_chunked_init(&c, old, 0, NULL, 0);
    free(old);

    /* a caller built against newer headers: the fields past this library's
     * are ignored, the ones it knows obeyed */
    size_t big[sizeof(csh_limits) / sizeof(size_t) + 4];
    memset(big, 0xff, sizeof big);
    csh_limits_init_sized((csh_limits *)(void *)big, sizeof big);
    /* what this library does not know is zeroed, not left as it was */
    for (size_t i = sizeof(csh_limits) / sizeof(size_t); i < sizeof big / sizeof big[0]; i++)
        assert_int_equal(big[i], 0);
    ((csh_limits *)(void *)big)->max_fields = 2;
    big[sizeof big / sizeof big[0] - 1] = 12345; /* a newer field this library ignores */
    csh_parser_init(&p, CSH_REQUEST, f, 8, (const csh_limits *)(const void *)big, 0);
    assert_int_equal(csh_parser_execute(&p, S(req)), CSH_E_TOO_MANY_FIELDS);
}

/* parser.h: limits == NULL means the defaults; the struct is copied. */
static void test_limits_null_and_copied(void **state)
{
    (void)state;
    csh_header f[8];
    csh_parser p;
    size_t n = 5 + 8188 + 11 + 2;
    char *buf = malloc(n);
    assert_non_null(buf);
    memcpy(buf, "GET /", 5);
    memset(buf + 5, 'a', 8188);
    memcpy(buf + 5 + 8188, " HTTP/1.1\r\n\r\n", 13);
    /* an 8202-byte request line: over the default 8192 */
    csh_parser_init(&p, CSH_REQUEST, f, 8, NULL, 0);
    assert_int_equal(csh_parser_execute(&p, buf, 5 + 8188 + 9), CSH_E_URI_TOO_LONG);

    csh_limits l;
    csh_limits_init(&l);
    l.max_start_line = 20000;
    csh_parser_init(&p, CSH_REQUEST, f, 8, &l, 0);
    l.max_start_line = 10; /* copied at init: no effect */
    assert_int_equal(csh_parser_execute(&p, buf, 5 + 8188 + 9), CSH_INCOMPLETE);
    free(buf);
}

/* ---- init, reset, pipelining -------------------------------------------------------- */

/* parser.h "Use": parse, read the body, reset, parse the next message. */
static void test_pipelining_loop(void **state)
{
    (void)state;
    static const char wire[] = "GET /one HTTP/1.1\r\nHost: a\r\nX-A: 1\r\n\r\n"
                               "POST /two HTTP/1.1\r\nHost: b\r\nContent-Length: 5\r\n\r\nhello"
                               "DELETE /three HTTP/1.0\r\n\r\n";
    const size_t n = sizeof wire - 1;
    const char *targets[] = {"/one", "/two", "/three"};
    const csh_method methods[] = {CSH_METHOD_GET, CSH_METHOD_POST, CSH_METHOD_DELETE};
    const size_t nheaders[] = {2, 2, 0};
    csh_header f[16];
    csh_parser p;
    csh_parser_init(&p, CSH_REQUEST, f, 16, NULL, 0);
    size_t start = 0;
    for (int i = 0; i < 3; i++) {
        if (i) csh_parser_reset(&p);
        const char *m = wire + start;
        assert_int_equal(csh_parser_execute(&p, m, n - start), CSH_OK);
        assert_int_equal(p.msg.method, methods[i]);
        assert_true(span_is(m, p.msg.target, targets[i]));
        assert_int_equal(p.msg.num_headers, nheaders[i]);
        assert_ptr_equal(p.msg.headers, f);
        start += p.msg.head_length + p.msg.content_length;
    }
    assert_int_equal(start, n);
    /* the third message is HTTP/1.0 without keep-alive; the second has a body */
    assert_int_equal(p.msg.version_minor, 0);
    assert_false(p.msg.flags & CSH_MSG_KEEP_ALIVE);
    assert_false(p.msg.flags & CSH_MSG_HAS_HOST);
}

/* csh_parser_reset keeps the configuration: type, limits, fields, flags. */
static void test_reset_keeps_configuration(void **state)
{
    (void)state;
    csh_header f[2];
    csh_limits l;
    csh_limits_init(&l);
    l.max_start_line = 18;
    csh_parser p;
    csh_parser_init(&p, CSH_REQUEST, f, 2, &l, CSH_PARSE_LENIENT_BARE_LF);
    assert_int_equal(csh_parser_execute(&p, S("GET /aaaa HTTP/1.1\nHost: a\n\n")), CSH_OK);
    csh_parser_reset(&p);
    /* lenient bare LF still on */
    assert_int_equal(csh_parser_execute(&p, S("GET /bbbb HTTP/1.1\nHost: a\n\n")), CSH_OK);
    csh_parser_reset(&p);
    /* max_start_line still 18 */
    assert_int_equal(csh_parser_execute(&p, S("GET /ccccc HTTP/1.1\nHost: a\n\n")),
                     CSH_E_URI_TOO_LONG);
    csh_parser_reset(&p);
    /* field capacity still 2 */
    assert_int_equal(csh_parser_execute(&p, S("GET / HTTP/1.1\r\nHost: a\r\nA: 1\r\nB: 2\r\n\r\n")),
                     CSH_E_TOO_MANY_FIELDS);
    csh_parser_reset(&p);
    /* and the previous error is gone */
    assert_int_equal(csh_parser_execute(&p, S("GET / HTTP/1.1\r\nHost: a\r\n\r\n")), CSH_OK);
    assert_int_equal(p.msg.num_headers, 1);
}

/* A reset after an error starts a clean message, fields and flags included. */
static void test_reset_clears_message(void **state)
{
    (void)state;
    csh_header f[8];
    csh_parser p;
    csh_parser_init(&p, CSH_REQUEST, f, 8, NULL, 0);
    assert_int_equal(csh_parser_execute(&p, S("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 9\r\n"
                                              "Expect: 100-continue\r\nConnection: close\r\n\r\n")),
                     CSH_OK);
    assert_int_equal(p.msg.body, CSH_BODY_LENGTH);
    csh_parser_reset(&p);
    assert_int_equal(csh_parser_execute(&p, S("GET /x HTTP/1.1\r\nHost: b\r\n\r\n")), CSH_OK);
    assert_int_equal(p.msg.body, CSH_BODY_NONE);
    assert_int_equal(p.msg.content_length, 0);
    assert_int_equal(p.msg.num_headers, 1);
    assert_int_equal(p.msg.flags, CSH_MSG_KEEP_ALIVE | CSH_MSG_HAS_HOST);
}

/* ---- results ------------------------------------------------------------------------- */

/* parser.h: once CSH_OK is returned, later calls return it again. */
static void test_sticky_ok(void **state)
{
    (void)state;
    static const char wire[] = "GET /a HTTP/1.1\r\nHost: h\r\n\r\nGARBAGE\r\n\x01\r\n";
    csh_header f[8];
    csh_parser p;
    csh_parser_init(&p, CSH_REQUEST, f, 8, NULL, 0);
    size_t head = 28;
    assert_int_equal(csh_parser_execute(&p, wire, head), CSH_OK);
    assert_int_equal(p.msg.head_length, head);
    assert_int_equal(csh_parser_execute(&p, wire, head), CSH_OK);
    assert_int_equal(csh_parser_execute(&p, wire, sizeof wire - 1), CSH_OK);
    assert_int_equal(p.msg.head_length, head);
    assert_int_equal(p.msg.num_headers, 1);
    assert_true(span_is(wire, p.msg.target, "/a"));
}

/* parser.h: once an error is returned, later calls return it again. */
static void test_sticky_error(void **state)
{
    (void)state;
    static const char wire[] = "GET / HTTP/1.1\r\nHost: a\r\nX\0: b\r\n\r\nMORE";
    const size_t n = sizeof wire - 1;
    csh_header f[8];
    csh_parser p;
    csh_parser_init(&p, CSH_REQUEST, f, 8, NULL, 0);
    int r = csh_parser_execute(&p, wire, n - 4);
    assert_int_equal(r, CSH_E_INVALID_FIELD_NAME);
    size_t off = csh_parser_error_offset(&p);
    assert_in_range(off, 25, 31);
    assert_int_equal(csh_parser_execute(&p, wire, n - 4), r);
    assert_int_equal(csh_parser_execute(&p, wire, n), r);
    assert_int_equal(csh_parser_error_offset(&p), off);
}

/* parser.h: a len smaller than an earlier call's is CSH_E_INVALID_ARGUMENT. */
static void test_len_shrinks(void **state)
{
    (void)state;
    static const char wire[] = "GET / HTTP/1.1\r\nHost: a\r\n\r\n";
    csh_header f[8];
    csh_parser p;
    csh_parser_init(&p, CSH_REQUEST, f, 8, NULL, 0);
    assert_int_equal(csh_parser_execute(&p, wire, 20), CSH_INCOMPLETE);
    assert_int_equal(csh_parser_execute(&p, wire, 19), CSH_E_INVALID_ARGUMENT);
    assert_int_equal(csh_error_status(CSH_E_INVALID_ARGUMENT), 500);
}

/* parser.h: calls that bring no new byte say CSH_INCOMPLETE and change
 * nothing; the next bytes complete the head as if they had not been made. */
static void test_calls_without_new_bytes(void **state)
{
    (void)state;
    static const char wire[] = "GET /x HTTP/1.1\r\nHost: a\r\nX-Long: abcdef\r\n\r\n";
    for (size_t cut = 1; cut < sizeof wire - 1; cut++) {
        csh_header f[8];
        csh_parser p;
        csh_parser_init(&p, CSH_REQUEST, f, 8, NULL, 0);
        assert_int_equal(csh_parser_execute(&p, wire, cut), CSH_INCOMPLETE);
        for (int k = 0; k < 3; k++)
            assert_int_equal(csh_parser_execute(&p, wire, cut), CSH_INCOMPLETE);
        assert_int_equal(csh_parser_execute(&p, wire, sizeof wire - 1), CSH_OK);
        assert_int_equal(p.msg.num_headers, 2);
        assert_true(csh_span_eq(wire, p.msg.target, "/x"));
        assert_true(csh_span_eq(wire, f[1].value, "abcdef"));
        assert_int_equal(p.msg.head_length, sizeof wire - 1);
    }
}

/* Zero bytes: nothing to parse yet, not an error. */
static void test_empty_input(void **state)
{
    (void)state;
    csh_header f[8];
    csh_parser p;
    csh_parser_init(&p, CSH_REQUEST, f, 8, NULL, 0);
    assert_int_equal(csh_parser_execute(&p, "", 0), CSH_INCOMPLETE);
    assert_int_equal(csh_parser_execute(&p, S("GET / HTTP/1.1\r\nHost: a\r\n\r\n")), CSH_OK);
}

/* parser.h: the offset of the byte where an error was detected. */
static void test_error_offset(void **state)
{
    (void)state;
    csh_header f[8];
    csh_parser p;
    size_t off;
    /* the field line "X-A : b" occupies offsets 25..31 */
    csh_parser_init(&p, CSH_REQUEST, f, 8, NULL, 0);
    assert_int_equal(csh_parser_execute(&p, S("GET / HTTP/1.1\r\nHost: a\r\nX-A : b\r\n\r\n")),
                     CSH_E_WS_BEFORE_COLON);
    off = csh_parser_error_offset(&p);
    assert_in_range(off, 25, 31);
    /* the bare CR is at offset 6 */
    csh_parser_init(&p, CSH_REQUEST, f, 8, NULL, 0);
    assert_int_equal(csh_parser_execute(&p, S("GET /a\rb HTTP/1.1\r\nHost: a\r\n\r\n")),
                     CSH_E_BARE_CR);
    off = csh_parser_error_offset(&p);
    assert_in_range(off, 6, 7);
    /* the bad version starts at 6 */
    csh_parser_init(&p, CSH_REQUEST, f, 8, NULL, 0);
    assert_int_equal(csh_parser_execute(&p, S("GET / HTTP/1.1x\r\n\r\n")), CSH_E_INVALID_VERSION);
    off = csh_parser_error_offset(&p);
    assert_in_range(off, 6, 15);
}

/* ---- buffers: growing, moving ------------------------------------------------------------ */

/* parser.h: spans are offsets; the buffer may move between calls. */
static void test_spans_survive_buffer_move(void **state)
{
    (void)state;
    static const char wire[] = "PUT /path/to?q=1 HTTP/1.1\r\nHost: example.com\r\n"
                               "Upgrade: websocket\r\nConnection: upgrade\r\nX-Z:  zz \r\n\r\n";
    const size_t n = sizeof wire - 1;
    csh_header f[8];
    csh_parser p;
    csh_parser_init(&p, CSH_REQUEST, f, 8, NULL, 0);
    for (size_t cut = 1; cut < n; cut += 7) {
        csh_parser_init(&p, CSH_REQUEST, f, 8, NULL, 0);
        char *a = malloc(cut);
        assert_non_null(a);
        memcpy(a, wire, cut);
        assert_int_equal(csh_parser_execute(&p, a, cut), CSH_INCOMPLETE);
        /* the caller reallocates: a new block, the old one scribbled and freed */
        char *b = malloc(n);
        assert_non_null(b);
        memcpy(b, wire, n);
        memset(a, 'Z', cut);
        free(a);
        assert_int_equal(csh_parser_execute(&p, b, n), CSH_OK);
        assert_true(span_is(b, p.msg.method_span, "PUT"));
        assert_true(span_is(b, p.msg.target, "/path/to?q=1"));
        assert_true(span_is(b, p.msg.host, "example.com"));
        assert_true(span_is(b, p.msg.upgrade, "websocket"));
        assert_int_equal(p.msg.num_headers, 4);
        assert_true(span_is(b, f[3].name, "X-Z"));
        assert_true(span_is(b, f[3].value, "zz"));
        assert_true(p.msg.flags & CSH_MSG_UPGRADE);
        /* the spans also hold in a third copy: they are offsets */
        char *c = malloc(n);
        assert_non_null(c);
        memcpy(c, b, n);
        free(b);
        assert_true(span_is(c, f[1].name, "Upgrade"));
        assert_true(span_is(c, p.msg.target, "/path/to?q=1"));
        free(c);
    }
}

/* Builds a head of about `size` bytes: request line, Host, fields of ~60 bytes. */
static char *build_head(size_t size, size_t *len, size_t *nfields)
{
    char *buf = malloc(size + 256);
    assert_non_null(buf);
    size_t o = (size_t)sprintf(buf, "POST /upload?id=42 HTTP/1.1\r\nHost: bench.example\r\n");
    size_t k = 1;
    while (o + 64 < size) {
        o += (size_t)sprintf(buf + o,
                             "X-Field-%03zu: value %03zu with some \t text \xc3\xa9 ok\r\n", k, k);
        k++;
    }
    o += (size_t)sprintf(buf + o, "Content-Length: 3\r\n\r\n");
    *len = o;
    *nfields = k + 1;
    return buf;
}

static void assert_same_message(const char *base, const csh_parser *a, const csh_header *fa,
                                const csh_parser *b, const csh_header *fb)
{
    assert_int_equal(a->msg.head_length, b->msg.head_length);
    assert_int_equal(a->msg.num_headers, b->msg.num_headers);
    assert_int_equal(a->msg.flags, b->msg.flags);
    assert_int_equal(a->msg.body, b->msg.body);
    assert_int_equal(a->msg.content_length, b->msg.content_length);
    assert_memory_equal(&a->msg.target, &b->msg.target, sizeof a->msg.target);
    assert_memory_equal(&a->msg.host, &b->msg.host, sizeof a->msg.host);
    for (size_t i = 0; i < a->msg.num_headers; i++) {
        assert_int_equal(fa[i].name.off, fb[i].name.off);
        assert_int_equal(fa[i].name.len, fb[i].name.len);
        assert_int_equal(fa[i].value.off, fb[i].value.off);
        assert_int_equal(fa[i].value.len, fb[i].value.len);
    }
    (void)base;
}

/* A 4 KiB head fed one byte at a time (fresh copy each call) gives the same
 * result as the whole head, with and without SIMD. */
static void test_4k_head_byte_by_byte(void **state)
{
    (void)state;
    size_t n, nf;
    char *wire = build_head(4096, &n, &nf);
    assert_in_range(n, 4000, 4200);
    static csh_header fw[128], fb[128];
    const unsigned flag_sets[] = {0, CSH_PARSE_NO_SIMD};
    csh_parser whole, bytewise;
    csh_parser_init(&whole, CSH_REQUEST, fw, 128, NULL, 0);
    assert_int_equal(csh_parser_execute(&whole, wire, n), CSH_OK);
    assert_int_equal(whole.msg.num_headers, nf);
    assert_int_equal(whole.msg.head_length, n);
    assert_int_equal(whole.msg.content_length, 3);
    for (size_t s = 0; s < 2; s++) {
        csh_parser_init(&bytewise, CSH_REQUEST, fb, 128, NULL, flag_sets[s]);
        int r = CSH_INCOMPLETE;
        for (size_t len = 1; len <= n; len++) {
            char *copy = malloc(len);
            assert_non_null(copy);
            memcpy(copy, wire, len);
            r = csh_parser_execute(&bytewise, copy, len);
            free(copy);
            if (len < n) assert_int_equal(r, CSH_INCOMPLETE);
        }
        assert_int_equal(r, CSH_OK);
        assert_same_message(wire, &whole, fw, &bytewise, fb);
        char last[32];
        snprintf(last, sizeof last, "X-Field-%03zu", nf - 2);
        assert_true(span_is(wire, fb[nf - 2].name, last));
        assert_true(span_is(wire, fb[0].value, "bench.example"));
        assert_true(span_is(wire, fb[nf - 1].value, "3"));
    }
    free(wire);
}

/* Default max_head (32768): exactly the limit passes, one byte more fails, at
 * an offset within the limit, fed whole and byte by byte. */
static char *build_head_exact(size_t total, size_t *len)
{
    char *buf = malloc(total + 1);
    assert_non_null(buf);
    size_t o = (size_t)sprintf(buf, "GET / HTTP/1.1\r\nHost: a\r\n");
    while (total - o - 2 > 4000 + 12) {
        o += (size_t)sprintf(buf + o, "X-Fill: ");
        memset(buf + o, 'v', 4000);
        o += 4000;
        buf[o++] = '\r';
        buf[o++] = '\n';
    }
    /* the last field fills what is left before the final CRLF */
    size_t last = total - o - 2; /* bytes for "X-Last: ...\r\n" */
    assert_true(last >= 11);
    o += (size_t)sprintf(buf + o, "X-Last: ");
    memset(buf + o, 'w', last - 10);
    o += last - 10;
    buf[o++] = '\r';
    buf[o++] = '\n';
    buf[o++] = '\r';
    buf[o++] = '\n';
    assert_int_equal(o, total);
    *len = o;
    return buf;
}

static void test_default_max_head(void **state)
{
    (void)state;
    static csh_header f[128];
    csh_parser p;
    size_t n;
    char *ok = build_head_exact(32768, &n);
    csh_parser_init(&p, CSH_REQUEST, f, 128, NULL, 0);
    assert_int_equal(csh_parser_execute(&p, ok, n), CSH_OK);
    assert_int_equal(p.msg.head_length, 32768);
    csh_parser_init(&p, CSH_REQUEST, f, 128, NULL, 0);
    int r = CSH_INCOMPLETE;
    for (size_t len = 1; len <= n && r == CSH_INCOMPLETE; len++)
        r = csh_parser_execute(&p, ok, len);
    assert_int_equal(r, CSH_OK);
    free(ok);

    char *big = build_head_exact(32769, &n);
    csh_parser_init(&p, CSH_REQUEST, f, 128, NULL, 0);
    assert_int_equal(csh_parser_execute(&p, big, n), CSH_E_HEAD_TOO_LARGE);
    assert_true(csh_parser_error_offset(&p) <= 32768);
    /* limit + 1 bytes suffice to see the error */
    csh_parser_init(&p, CSH_REQUEST, f, 128, NULL, 0);
    assert_int_equal(csh_parser_execute(&p, big, 32769), CSH_E_HEAD_TOO_LARGE);
    csh_parser_init(&p, CSH_REQUEST, f, 128, NULL, 0);
    r = CSH_INCOMPLETE;
    size_t len;
    for (len = 1; len <= n && r == CSH_INCOMPLETE; len++) r = csh_parser_execute(&p, big, len);
    assert_int_equal(r, CSH_E_HEAD_TOO_LARGE);
    assert_true(len - 1 <= 32769);
    assert_true(csh_parser_error_offset(&p) <= 32768);
    free(big);
}

/* DESIGN.md, parser.h: feeding a head in n pieces costs O(length), not
 * O(n * length). A 1 MiB line fed 16 bytes at a time, every call rescanning
 * from the start, would be quadratic and run far past the 20 s CPU bound
 * below; resumed, it stays well within it. */
static void feed_long_line(csh_parser_type type, const char *prefix, int expect)
{
    const size_t n = (size_t)1 << 20;
    char *buf = malloc(n + 64);
    assert_non_null(buf);
    size_t o = strlen(prefix);
    memcpy(buf, prefix, o);
    memset(buf + o, 'a', n - o);
    memcpy(buf + n, " HTTP/1.1\r\nHost: a\r\n\r\n", 22);
    csh_limits l;
    csh_limits_init(&l);
    l.max_start_line = l.max_field_line = l.max_head = 4u << 20;
    csh_header f[8];
    csh_parser p;
    csh_parser_init(&p, type, f, 8, &l, 0);
    clock_t t0 = clock();
    int r = CSH_INCOMPLETE;
    size_t len;
    for (len = 16; len < n && r == CSH_INCOMPLETE; len += 16) {
        r = csh_parser_execute(&p, buf, len);
        if ((len & 0xffff) == 0 && (double)(clock() - t0) / CLOCKS_PER_SEC > 20.0)
            fail_msg("feeding 1 MiB 16 bytes at a time: over 20 s CPU at %zu bytes: each call "
                     "rescans",
                     len);
    }
    assert_int_equal(r, CSH_INCOMPLETE);
    r = csh_parser_execute(&p, buf, n + 22);
    assert_int_equal(r, expect);
    free(buf);
}

static void test_resume_is_linear_start_line(void **state)
{
    (void)state;
    feed_long_line(CSH_REQUEST, "GET /", CSH_OK);
}

static void test_resume_is_linear_field_line(void **state)
{
    (void)state;
    /* a request line, then one very long field value */
    const size_t n = (size_t)1 << 20;
    char *buf = malloc(n + 16);
    assert_non_null(buf);
    size_t o = (size_t)sprintf(buf, "GET / HTTP/1.1\r\nHost: a\r\nX-Big: ");
    memset(buf + o, 'b', n - o);
    memcpy(buf + n, "\r\n\r\n", 4);
    csh_limits l;
    csh_limits_init(&l);
    l.max_field_line = l.max_head = 4u << 20;
    csh_header f[8];
    csh_parser p;
    csh_parser_init(&p, CSH_REQUEST, f, 8, &l, 0);
    clock_t t0 = clock();
    int r = CSH_INCOMPLETE;
    for (size_t len = 16; len < n && r == CSH_INCOMPLETE; len += 16) {
        r = csh_parser_execute(&p, buf, len);
        if ((len & 0xffff) == 0 && (double)(clock() - t0) / CLOCKS_PER_SEC > 20.0)
            fail_msg("feeding 1 MiB 16 bytes at a time: over 20 s CPU at %zu bytes", len);
    }
    assert_int_equal(r, CSH_INCOMPLETE);
    assert_int_equal(csh_parser_execute(&p, buf, n + 4), CSH_OK);
    assert_int_equal(f[1].value.len, n - o);
    free(buf);
}

/* ---- responses ---------------------------------------------------------------------------- */

/* RFC 9112 §6.3 rule 1: the response to HEAD has no body, whatever its
 * Content-Length; set with csh_parser_set_request_method. */
static void test_set_request_method_head(void **state)
{
    (void)state;
    static const char wire[] = "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n";
    csh_header f[8];
    csh_parser p;
    csh_parser_init(&p, CSH_RESPONSE, f, 8, NULL, 0);
    assert_int_equal(csh_parser_execute(&p, S(wire)), CSH_OK);
    assert_int_equal(p.msg.body, CSH_BODY_LENGTH);
    assert_int_equal(p.msg.content_length, 10);

    csh_parser_init(&p, CSH_RESPONSE, f, 8, NULL, 0);
    csh_parser_set_request_method(&p, CSH_METHOD_HEAD);
    assert_int_equal(csh_parser_execute(&p, S(wire)), CSH_OK);
    assert_int_equal(p.msg.body, CSH_BODY_NONE);
    assert_int_equal(p.msg.content_length, 0);
    assert_true(p.msg.flags & CSH_MSG_HAS_CONTENT_LENGTH);

    /* after a reset, set again for the next response */
    csh_parser_reset(&p);
    csh_parser_set_request_method(&p, CSH_METHOD_HEAD);
    assert_int_equal(csh_parser_execute(&p, S(wire)), CSH_OK);
    assert_int_equal(p.msg.body, CSH_BODY_NONE);
    csh_parser_reset(&p);
    csh_parser_set_request_method(&p, CSH_METHOD_GET);
    assert_int_equal(csh_parser_execute(&p, S(wire)), CSH_OK);
    assert_int_equal(p.msg.body, CSH_BODY_LENGTH);
}

/* RFC 9112 §6.3 rule 2: a 2xx to CONNECT is a tunnel; other statuses are not. */
static void test_set_request_method_connect(void **state)
{
    (void)state;
    csh_header f[8];
    csh_parser p;
    csh_parser_init(&p, CSH_RESPONSE, f, 8, NULL, 0);
    csh_parser_set_request_method(&p, CSH_METHOD_CONNECT);
    assert_int_equal(csh_parser_execute(&p, S("HTTP/1.1 200 OK\r\n\r\nXYZ")), CSH_OK);
    assert_true(p.msg.flags & CSH_MSG_TUNNEL);
    assert_int_equal(p.msg.body, CSH_BODY_NONE);
    assert_int_equal(p.msg.head_length, 19);

    csh_parser_init(&p, CSH_RESPONSE, f, 8, NULL, 0);
    csh_parser_set_request_method(&p, CSH_METHOD_GET);
    assert_int_equal(csh_parser_execute(&p, S("HTTP/1.1 200 OK\r\n\r\nXYZ")), CSH_OK);
    assert_false(p.msg.flags & CSH_MSG_TUNNEL);
    assert_int_equal(p.msg.body, CSH_BODY_UNTIL_CLOSE);

    csh_parser_init(&p, CSH_RESPONSE, f, 8, NULL, 0);
    csh_parser_set_request_method(&p, CSH_METHOD_CONNECT);
    assert_int_equal(
        csh_parser_execute(&p, S("HTTP/1.1 403 Forbidden\r\nContent-Length: 2\r\n\r\nno")), CSH_OK);
    assert_false(p.msg.flags & CSH_MSG_TUNNEL);
    assert_int_equal(p.msg.body, CSH_BODY_LENGTH);
}

/* A response parser fills status and reason, not the request fields. */
static void test_response_fields(void **state)
{
    (void)state;
    static const char wire[] = "HTTP/1.0 418 I'm a teapot\r\nContent-Length: 0\r\n\r\n";
    csh_header f[8];
    csh_parser p;
    csh_parser_init(&p, CSH_RESPONSE, f, 8, NULL, 0);
    assert_int_equal(csh_parser_execute(&p, S(wire)), CSH_OK);
    assert_int_equal(p.msg.status, 418);
    assert_true(span_is(wire, p.msg.reason, "I'm a teapot"));
    assert_int_equal(p.msg.version_major, 1);
    assert_int_equal(p.msg.version_minor, 0);
    assert_int_equal(p.msg.body, CSH_BODY_NONE);
    assert_false(p.msg.flags & CSH_MSG_KEEP_ALIVE);
}

/* A request is not parsed as a response and vice versa. */
static void test_type_matters(void **state)
{
    (void)state;
    csh_header f[8];
    csh_parser p;
    csh_parser_init(&p, CSH_RESPONSE, f, 8, NULL, 0);
    int r = csh_parser_execute(&p, S("GET / HTTP/1.1\r\nHost: a\r\n\r\n"));
    assert_true(r < 0);
    csh_parser_init(&p, CSH_REQUEST, f, 8, NULL, 0);
    r = csh_parser_execute(&p, S("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"));
    assert_true(r < 0);
}

/* ---- names and spans ------------------------------------------------------------------------ */

static void test_method_name(void **state)
{
    (void)state;
    static const struct {
        csh_method m;
        const char *name;
    } t[] = {
        {CSH_METHOD_GET, "GET"},         {CSH_METHOD_HEAD, "HEAD"},
        {CSH_METHOD_POST, "POST"},       {CSH_METHOD_PUT, "PUT"},
        {CSH_METHOD_DELETE, "DELETE"},   {CSH_METHOD_CONNECT, "CONNECT"},
        {CSH_METHOD_OPTIONS, "OPTIONS"}, {CSH_METHOD_TRACE, "TRACE"},
        {CSH_METHOD_PATCH, "PATCH"},     {CSH_METHOD_OTHER, ""},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        const char *got = csh_method_name(t[i].m);
        assert_non_null(got);
        assert_string_equal(got, t[i].name);
    }
}

/* Each known method parses to its enum, and the name round-trips. */
static void test_method_round_trip(void **state)
{
    (void)state;
    for (int m = CSH_METHOD_GET; m <= CSH_METHOD_PATCH; m++) {
        char wire[128];
        const char *name = csh_method_name((csh_method)m);
        const char *target = m == CSH_METHOD_CONNECT ? "a:1" : m == CSH_METHOD_OPTIONS ? "*" : "/";
        int n = snprintf(wire, sizeof wire, "%s %s HTTP/1.1\r\nHost: a\r\n\r\n", name, target);
        csh_header f[4];
        csh_parser p;
        csh_parser_init(&p, CSH_REQUEST, f, 4, NULL, 0);
        assert_int_equal(csh_parser_execute(&p, wire, (size_t)n), CSH_OK);
        assert_int_equal(p.msg.method, m);
        assert_true(span_is(wire, p.msg.method_span, name));
    }
}

static void test_span_helpers(void **state)
{
    (void)state;
    static const char buf[] = "xxContent-LENGTHyy";
    csh_span s = {2, 14};
    assert_true(csh_span_ieq(buf, s, "content-length"));
    assert_true(csh_span_ieq(buf, s, "CONTENT-LENGTH"));
    assert_false(csh_span_ieq(buf, s, "content-lengt"));
    assert_false(csh_span_ieq(buf, s, "content-lengthy"));
    assert_false(csh_span_ieq(buf, s, "content_length"));
    assert_true(csh_span_eq(buf, s, "Content-LENGTH"));
    assert_false(csh_span_eq(buf, s, "content-length"));
    assert_true(csh_span_ptr(buf, s) == buf + 2);
    assert_true(csh_mem_ieq("AbC", "aBc", 3));
    assert_false(csh_mem_ieq("AbC", "aBd", 3));
    assert_true(csh_mem_ieq("x", "y", 0));
    /* only ASCII letters fold: '@' (0x40) and '`' (0x60) differ */
    assert_false(csh_mem_ieq("@", "`", 1));
    assert_false(csh_mem_ieq("[", "{", 1));
    assert_false(csh_mem_ieq("\xc3\x89", "\xc3\xa9", 2));
    csh_span empty = {0, 0};
    assert_true(csh_span_ieq(buf, empty, ""));
    assert_false(csh_span_ieq(buf, empty, "x"));
}

/* ---- scanner block boundaries ---- */

/* Parses `wire` whole with and without SIMD; both must give `expect` and, on
 * an error, the same offset within [lo, hi]. */
static void parse_both(csh_parser_type type, const char *wire, size_t n, int expect, size_t lo,
                       size_t hi, const char *what, size_t pos)
{
    size_t off[2] = {0, 0};
    for (int s = 0; s < 2; s++) {
        csh_header f[8];
        csh_parser p;
        csh_parser_init(&p, type, f, 8, NULL, s ? CSH_PARSE_NO_SIMD : 0);
        /* an exact copy: a vector load past the end is caught by ASan */
        char *copy = malloc(n);
        assert_non_null(copy);
        memcpy(copy, wire, n);
        int r = csh_parser_execute(&p, copy, n);
        free(copy);
        if (r != expect)
            fail_msg("%s at %zu%s: expected %s, got %s", what, pos, s ? " (no simd)" : "",
                     csh_error_name(expect), csh_error_name(r));
        if (r < 0) {
            off[s] = csh_parser_error_offset(&p);
            if (off[s] < lo || off[s] > hi)
                fail_msg("%s at %zu%s: %s at offset %zu, not in [%zu, %zu]", what, pos,
                         s ? " (no simd)" : "", csh_error_name(r), off[s], lo, hi);
        }
    }
    if (off[0] != off[1])
        fail_msg("%s at %zu: error offset %zu with SIMD, %zu without", what, pos, off[0], off[1]);
}

/* RFC 9112 §3.2, RFC 9110 §5.1, §5.5: a forbidden byte is found at every
 * position of a long target, field name, value or reason phrase (so at every
 * offset within a vector block), by the SIMD and the portable scanners
 * alike; allowed bytes are accepted at every position. */
static void test_scanner_every_position(void **state)
{
    (void)state;
    enum { LEN = 100 };
    char wire[512];
    static const struct {
        char bad;
        int err;
    } target_bad[] = {{'\0', CSH_E_INVALID_TARGET},   {'\x01', CSH_E_INVALID_TARGET},
                      {'\x1f', CSH_E_INVALID_TARGET}, {'\x7f', CSH_E_INVALID_TARGET},
                      {'\x80', CSH_E_INVALID_TARGET}, {'\xff', CSH_E_INVALID_TARGET},
                      {'\t', CSH_E_INVALID_TARGET},   {'\r', CSH_E_BARE_CR}};
    static const struct {
        char bad;
        int err;
    } value_bad[] = {{'\0', CSH_E_INVALID_FIELD_VALUE},
                     {'\x01', CSH_E_INVALID_FIELD_VALUE},
                     {'\x0b', CSH_E_INVALID_FIELD_VALUE},
                     {'\x1f', CSH_E_INVALID_FIELD_VALUE},
                     {'\x7f', CSH_E_INVALID_FIELD_VALUE},
                     {'\r', CSH_E_BARE_CR},
                     {'\n', CSH_E_BARE_LF}};
    static const char name_bad[] = {'\0', '\x01', '\x7f', '\x80', '@', '(', ')', '"', '/',
                                    '[',  ']',    '{',    '}',    '=', ',', ';', '\\'};
    static const char value_ok[] = {'\t', ' ', '\x80', '\xff', '~', '"', ':'};

    for (size_t pos = 0; pos < LEN; pos++) {
        /* the target: "GET /" + LEN bytes, one of them bad */
        for (size_t k = 0; k < sizeof target_bad / sizeof target_bad[0]; k++) {
            size_t o = (size_t)sprintf(wire, "GET /");
            memset(wire + o, 'a', LEN);
            wire[o + pos] = target_bad[k].bad;
            o += LEN;
            o += (size_t)sprintf(wire + o, " HTTP/1.1\r\nHost: a\r\n\r\n");
            parse_both(CSH_REQUEST, wire, o, target_bad[k].err, 5, 5 + pos + 1, "bad target byte",
                       pos);
        }
        /* a field value: "X: " + LEN bytes, the line starting at 25 */
        for (size_t k = 0; k < sizeof value_bad / sizeof value_bad[0]; k++) {
            size_t o = (size_t)sprintf(wire, "GET / HTTP/1.1\r\nHost: a\r\nX: ");
            memset(wire + o, 'v', LEN);
            wire[o + pos] = value_bad[k].bad;
            o += LEN;
            o += (size_t)sprintf(wire + o, "\r\n\r\n");
            parse_both(CSH_REQUEST, wire, o, value_bad[k].err, 25, 25 + 3 + pos + 1,
                       "bad value byte", pos);
        }
        for (size_t k = 0; k < sizeof value_ok; k++) {
            size_t o = (size_t)sprintf(wire, "GET / HTTP/1.1\r\nHost: a\r\nX: ");
            memset(wire + o, 'v', LEN);
            wire[o + pos] = value_ok[k];
            o += LEN;
            o += (size_t)sprintf(wire + o, "\r\n\r\n");
            parse_both(CSH_REQUEST, wire, o, CSH_OK, 0, 0, "allowed value byte", pos);
        }
        /* a field name: LEN token bytes, one of them bad, then ": v" */
        for (size_t k = 0; k < sizeof name_bad; k++) {
            size_t o = (size_t)sprintf(wire, "GET / HTTP/1.1\r\nHost: a\r\n");
            size_t line = o;
            memset(wire + o, 'N', LEN);
            wire[o + pos] = name_bad[k];
            o += LEN;
            o += (size_t)sprintf(wire + o, ": v\r\n\r\n");
            parse_both(CSH_REQUEST, wire, o, CSH_E_INVALID_FIELD_NAME, line, line + pos + 1,
                       "bad name byte", pos);
        }
        /* a reason phrase: "HTTP/1.1 200 " + LEN bytes */
        {
            size_t o = (size_t)sprintf(wire, "HTTP/1.1 200 ");
            memset(wire + o, 'r', LEN);
            wire[o + pos] = '\x01';
            o += LEN;
            o += (size_t)sprintf(wire + o, "\r\nContent-Length: 0\r\n\r\n");
            parse_both(CSH_RESPONSE, wire, o, CSH_E_INVALID_STATUS_LINE, 0, 13 + pos + 1,
                       "bad reason byte", pos);
        }
    }
}

/* ---- the case corpus with CSH_PARSE_NO_SIMD
 * ------------------------------------------------------ */

/* The portable scanner gives exactly the default scanner's outcome on every
 * wire case, whole, at every split point and byte by byte (whether that
 * outcome is the expected one is test_cases' business). */
static void test_no_simd_matches_default_on_corpus(void **state)
{
    (void)state;
    tc_corpus corpus;
    char err[1024];
    if (tc_corpus_load(&corpus, cases_dir, err, sizeof err) != 0) fail_msg("%s", err);
    assert_true(corpus.n > 0);
    int fails = 0;
    for (size_t i = 0; i < corpus.n; i++) {
        tc_outcome ref;
        tc_run(&corpus.cases[i], 0, (tc_feed){TC_FEED_WHOLE, 0}, &ref);
        fails += tc_verify(&corpus.cases[i], CSH_PARSE_NO_SIMD, &ref, 0) != 0;
        tc_outcome_free(&ref);
    }
    tc_corpus_free(&corpus);
    if (fails) fail_msg("%d case(s) differ with CSH_PARSE_NO_SIMD, see above", fails);
}

int main(int argc, char **argv)
{
    if (argc > 1) cases_dir = argv[1];
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_limits_defaults),
        cmocka_unit_test(test_limits_null_and_copied),
        cmocka_unit_test(test_limits_bad_size),
        cmocka_unit_test(test_limits_read_within_size),
        cmocka_unit_test(test_pipelining_loop),
        cmocka_unit_test(test_reset_keeps_configuration),
        cmocka_unit_test(test_reset_clears_message),
        cmocka_unit_test(test_sticky_ok),
        cmocka_unit_test(test_sticky_error),
        cmocka_unit_test(test_len_shrinks),
        cmocka_unit_test(test_empty_input),
        cmocka_unit_test(test_calls_without_new_bytes),
        cmocka_unit_test(test_error_offset),
        cmocka_unit_test(test_spans_survive_buffer_move),
        cmocka_unit_test(test_4k_head_byte_by_byte),
        cmocka_unit_test(test_default_max_head),
        cmocka_unit_test(test_resume_is_linear_start_line),
        cmocka_unit_test(test_resume_is_linear_field_line),
        cmocka_unit_test(test_set_request_method_head),
        cmocka_unit_test(test_set_request_method_connect),
        cmocka_unit_test(test_response_fields),
        cmocka_unit_test(test_type_matters),
        cmocka_unit_test(test_method_name),
        cmocka_unit_test(test_method_round_trip),
        cmocka_unit_test(test_span_helpers),
        cmocka_unit_test(test_scanner_every_position),
        cmocka_unit_test(test_no_simd_matches_default_on_corpus),
    };
    return cmocka_run_group_tests_name("parser", tests, NULL, NULL);
}
