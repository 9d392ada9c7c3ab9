/* The chunked decoder's contract (chunked.h, RFC 9112 §7.1): data spans
 * point into the call's buffer, consumed never exceeds len, unconsumed bytes
 * come back first in the next call, nothing past the body is consumed, the
 * results are sticky, trailers are filled on CSH_OK, limits hold. */
#define _POSIX_C_SOURCE 200809L

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <cshttp/cshttp.h>

#include "talloc.h"

typedef struct decoded {
    int result;      /* last result: CSH_OK, CSH_INCOMPLETE (input ran out) or an error */
    size_t consumed; /* input bytes consumed in all */
    size_t error_at; /* errors: input offset of buf + consumed */
    char *data;      /* the data bytes */
    size_t ndata;
    size_t calls;
    char names[8][64]; /* trailers copied out of the last buffer, on CSH_OK */
    char values[8][64];
} decoded;

static void copy_span(char *dst, size_t cap, const char *base, size_t len, csh_span s)
{
    assert_true(s.off <= len && s.len <= len - s.off);
    assert_true(s.len < cap);
    memcpy(dst, base + s.off, s.len);
    dst[s.len] = '\0';
}

/* Feeds `in` to `c`, `step` new bytes per arrival (0: all at once). At each
 * arrival the unconsumed bytes and the new ones are copied into a fresh
 * allocation that ends exactly at the last byte received, so reads past len
 * are caught by ASan and stale pointers into an old buffer go wrong. Checks
 * the contract on every call. */
static void decode(csh_chunked *c, const char *in, size_t n, size_t step, decoded *d)
{
    memset(d, 0, sizeof *d);
    d->data = tmalloc(n + 1);
    size_t pos = 0, base = 0, avail = step ? (step < n ? step : n) : n;
    char *buf = tmalloc(avail ? avail : 1);
    assert_non_null(buf);
    memcpy(buf, in, avail);
    for (;;) {
        const char *p = buf + (pos - base);
        size_t len = avail - pos;
        size_t used = (size_t)-1;
        csh_span data = {(size_t)-1, (size_t)-1};
        int r = csh_chunked_decode(c, p, len, &used, &data);
        d->calls++;
        assert_true(used <= len);
        if (r == CSH_DATA) {
            assert_true(data.len > 0);
            assert_true(data.off <= used && data.len <= used - data.off);
            memcpy(d->data + d->ndata, p + data.off, data.len);
            d->ndata += data.len;
            assert_int_equal(c->body_bytes, d->ndata);
            pos += used;
            continue;
        }
        if (r == CSH_OK) {
            for (size_t i = 0; i < c->num_trailers && i < 8; i++) {
                copy_span(d->names[i], 64, p, len, c->trailers[i].name);
                copy_span(d->values[i], 64, p, len, c->trailers[i].value);
            }
            pos += used;
            d->result = r;
            break;
        }
        if (r < 0) {
            d->result = r;
            d->error_at = pos + used;
            break;
        }
        assert_int_equal(r, CSH_INCOMPLETE);
        pos += used;
        if (avail == n) {
            d->result = CSH_INCOMPLETE;
            break;
        }
        avail = step && n - avail > step ? avail + step : n;
        char *nb = tmalloc(avail - pos ? avail - pos : 1);
        assert_non_null(nb);
        memcpy(nb, in + pos, avail - pos);
        tfree(buf);
        buf = nb;
        base = pos;
    }
    tfree(buf);
    d->consumed = pos;
}

/* Fails with the names of the codes when `got` is not `want`. */
#define assert_result(got, want)                                                                   \
    do {                                                                                           \
        int got_ = (got), want_ = (want);                                                          \
        if (got_ != want_)                                                                         \
            fail_msg("%s: expected %s, got %s", #got, csh_error_name(want_),                       \
                     csh_error_name(got_));                                                        \
    } while (0)

static void decoded_free(decoded *d)
{
    tfree(d->data);
    d->data = NULL;
}

/* Decodes `in` whole, in 1-byte and in 7-byte arrivals; all must agree. */
static void decode_all_ways(const csh_limits *l, unsigned flags, const char *in, size_t n,
                            decoded *whole)
{
    csh_header tr[8];
    csh_chunked c;
    csh_chunked_init(&c, l, flags, tr, 8);
    decode(&c, in, n, 0, whole);
    const size_t steps[] = {1, 2, 7};
    for (size_t s = 0; s < sizeof steps / sizeof steps[0]; s++) {
        decoded d;
        csh_header tr2[8];
        csh_chunked c2;
        csh_chunked_init(&c2, l, flags, tr2, 8);
        decode(&c2, in, n, steps[s], &d);
        assert_int_equal(d.result, whole->result);
        assert_int_equal(d.ndata, whole->ndata);
        if (d.ndata) assert_memory_equal(d.data, whole->data, d.ndata);
        if (whole->result == CSH_OK) {
            assert_int_equal(d.consumed, whole->consumed);
            assert_int_equal(c2.chunks, c.chunks);
            assert_int_equal(c2.num_trailers, c.num_trailers);
            for (size_t i = 0; i < c.num_trailers && i < 8; i++) {
                assert_string_equal(d.names[i], whole->names[i]);
                assert_string_equal(d.values[i], whole->values[i]);
            }
        }
        if (whole->result < 0) assert_int_equal(d.error_at, whole->error_at);
        decoded_free(&d);
    }
}

/* RFC 9112 §7.1: two chunks, the last chunk, and a pipelined message after
 * the body that must stay unconsumed. */
static void test_decode_stops_at_body_end(void **state)
{
    (void)state;
    static const char in[] = "5\r\nhello\r\n6\r\n world\r\n0\r\n\r\nGET / HTTP/1.1\r\n";
    const size_t body = sizeof "5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n" - 1;
    decoded d;
    decode_all_ways(NULL, 0, S(in), &d);
    assert_result(d.result, CSH_OK);
    assert_int_equal(d.consumed, body);
    assert_int_equal(d.ndata, 11);
    assert_memory_equal(d.data, "hello world", 11);
    decoded_free(&d);

    csh_chunked c;
    csh_chunked_init(&c, NULL, 0, NULL, 0);
    decode(&c, S(in), 0, &d);
    assert_int_equal(c.chunks, 3);
    assert_int_equal(c.body_bytes, 11);
    assert_int_equal(c.num_trailers, 0);
    decoded_free(&d);
}

/* chunked.h: a chunk-size line may end anywhere between calls; the bytes not
 * consumed come back first in the next call. */
static void test_size_line_split_anywhere(void **state)
{
    (void)state;
    static const char *const lines[] = {"5\r\nhello\r\n0\r\n\r\n", "5;ext=1\r\nhello\r\n0\r\n\r\n",
                                        "00005;a=\"b c\"\r\nhello\r\n000\r\n\r\n"};
    for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++) {
        size_t n = strlen(lines[i]);
        size_t eol = (size_t)(strchr(lines[i], '\n') - lines[i]);
        for (size_t cut = 1; cut <= eol; cut++) {
            csh_chunked c;
            csh_chunked_init(&c, NULL, 0, NULL, 0);
            size_t used = 99;
            csh_span data;
            /* a fresh, exact copy: reading past `cut` is caught by ASan */
            char *first = tmalloc(cut);
            assert_non_null(first);
            memcpy(first, lines[i], cut);
            assert_int_equal(csh_chunked_decode(&c, first, cut, &used, &data), CSH_INCOMPLETE);
            assert_true(used <= cut);
            memset(first, '?', cut);
            tfree(first);
            decoded d;
            decode(&c, lines[i] + used, n - used, 0, &d);
            assert_result(d.result, CSH_OK);
            assert_int_equal(d.ndata, 5);
            assert_memory_equal(d.data, "hello", 5);
            assert_int_equal(used + d.consumed, n);
            assert_int_equal(c.chunks, 2);
            decoded_free(&d);
        }
    }
}

/* chunked.h: unconsumed bytes come back first; the decoder resumes. */
static void test_resume_with_unconsumed_bytes(void **state)
{
    (void)state;
    csh_chunked c;
    csh_chunked_init(&c, NULL, 0, NULL, 0);
    size_t used;
    csh_span data;
    static const char first[] = "1a\r\nabcdefghij";
    assert_int_equal(csh_chunked_decode(&c, first, 1, &used, &data), CSH_INCOMPLETE);
    assert_true(used <= 1);
    /* "1a\r\n" is a chunk of 26 bytes */
    const char *more = first + used;
    size_t more_len = sizeof first - 1 - used;
    assert_int_equal(csh_chunked_decode(&c, more, more_len, &used, &data), CSH_DATA);
    assert_int_equal(data.len, 10);
    assert_memory_equal(more + data.off, "abcdefghij", 10);
    assert_int_equal(used, data.off + data.len);
    assert_int_equal(used, more_len);
    assert_int_equal(csh_chunked_decode(&c, "", 0, &used, &data), CSH_INCOMPLETE);
    assert_int_equal(used, 0);
    static const char rest[] = "klmnopqrstuvwxyz\r\n0\r\n\r\n";
    assert_int_equal(csh_chunked_decode(&c, S(rest), &used, &data), CSH_DATA);
    assert_int_equal(data.off, 0);
    assert_int_equal(data.len, 16);
    assert_int_equal(c.body_bytes, 26);
    size_t u2;
    assert_int_equal(csh_chunked_decode(&c, rest + used, sizeof rest - 1 - used, &u2, &data),
                     CSH_OK);
    assert_int_equal(used + u2, sizeof rest - 1);
}

/* chunked.h: after CSH_OK, later calls return CSH_OK and consume nothing. */
static void test_ok_is_sticky(void **state)
{
    (void)state;
    csh_chunked c;
    csh_chunked_init(&c, NULL, 0, NULL, 0);
    size_t used;
    csh_span data;
    assert_int_equal(csh_chunked_decode(&c, S("0\r\n\r\n1\r\nx\r\n"), &used, &data), CSH_OK);
    assert_int_equal(used, 5);
    assert_int_equal(csh_chunked_decode(&c, S("1\r\nx\r\n"), &used, &data), CSH_OK);
    assert_int_equal(used, 0);
    assert_int_equal(c.chunks, 1);
    assert_int_equal(c.body_bytes, 0);
}

/* chunked.h: csh_chunked_reset starts another body with the limits, flags
 * and trailer array of csh_chunked_init, after a finished body, an error,
 * or a body left in the middle of a chunk, a size line or the trailers. */
static void test_reset_keeps_setup(void **state)
{
    (void)state;
    static const char *const left[] = {"0\r\n\r\n", "1;abcdef\r\n", "5\r\nab", "1f", "0\r\nX: y"};
    csh_limits l;
    csh_limits_init(&l);
    l.max_chunk_ext = 4;
    csh_header tr[2];
    csh_chunked c;
    csh_chunked_init(&c, &l, CSH_PARSE_LENIENT_BARE_LF, tr, 2);
    for (size_t k = 0; k < sizeof left / sizeof left[0]; k++) {
        size_t used;
        csh_span data;
        (void)csh_chunked_decode(&c, left[k], strlen(left[k]), &used, &data);
        csh_chunked_reset(&c);
        assert_int_equal(c.chunks, 0);
        assert_int_equal(c.body_bytes, 0);
        assert_int_equal(c.num_trailers, 0);
        /* lenient bare LF kept; the trailer lands in tr */
        assert_int_equal(csh_chunked_decode(&c, S("3\nabc\n"), &used, &data), CSH_DATA);
        assert_int_equal(data.off, 2);
        assert_int_equal(data.len, 3);
        assert_int_equal(csh_chunked_decode(&c, S("\n0\nT: v\n\n"), &used, &data), CSH_OK);
        assert_int_equal(c.num_trailers, 1);
        assert_ptr_equal(c.trailers, tr);
        assert_int_equal(tr[0].name.len, 1);
        /* the extension limit kept: 5 bytes after the size is too long */
        csh_chunked_reset(&c);
        assert_int_equal(csh_chunked_decode(&c, S("1;abcd\r\n"), &used, &data),
                         CSH_E_CHUNK_EXT_TOO_LONG);
        csh_chunked_reset(&c);
    }
}

/* chunked.h: after an error, later calls return it again. */
static void test_error_is_sticky(void **state)
{
    (void)state;
    csh_chunked c;
    csh_chunked_init(&c, NULL, 0, NULL, 0);
    size_t used;
    csh_span data;
    int r = csh_chunked_decode(&c, S("5zz\r\nhello\r\n0\r\n\r\n"), &used, &data);
    assert_int_equal(r, CSH_E_INVALID_CHUNK_SIZE);
    /* found within the size line: "5zz" */
    assert_in_range(used, 0, 2);
    assert_int_equal(csh_chunked_decode(&c, S("0\r\n\r\n"), &used, &data), r);
}

/* An empty call is harmless. */
static void test_zero_length_call(void **state)
{
    (void)state;
    csh_chunked c;
    csh_chunked_init(&c, NULL, 0, NULL, 0);
    size_t used = 5;
    csh_span data;
    assert_int_equal(csh_chunked_decode(&c, "", 0, &used, &data), CSH_INCOMPLETE);
    assert_int_equal(used, 0);
}

/* libcshttp/SMUGGLING.md (picohttpparser): a million 1-byte chunks decode, counted
 * exactly, whole and in 4 KiB arrivals. */
static void test_million_one_byte_chunks(void **state)
{
    (void)state;
    const size_t k = 1000000;
    size_t n = k * 6 + 5;
    char *in = tmalloc(n + 4);
    assert_non_null(in);
    for (size_t i = 0; i < k; i++) memcpy(in + i * 6, "1\r\nx\r\n", 6);
    memcpy(in + k * 6, "0\r\n\r\nNEXT", 9);
    const size_t steps[] = {0, 4096};
    for (size_t s = 0; s < 2; s++) {
        csh_chunked c;
        csh_chunked_init(&c, NULL, 0, NULL, 0);
        decoded d;
        decode(&c, in, n + 4, steps[s], &d);
        assert_result(d.result, CSH_OK);
        assert_int_equal(d.consumed, n);
        assert_int_equal(d.ndata, k);
        assert_int_equal(c.body_bytes, k);
        assert_int_equal(c.chunks, k + 1);
        for (size_t i = 0; i < k; i++)
            if (d.data[i] != 'x') fail_msg("byte %zu is 0x%02x", i, (unsigned char)d.data[i]);
        decoded_free(&d);
    }
    tfree(in);
}

/* libcshttp/SMUGGLING.md (uhttpd): 300 chunks, no 8-bit wrap. */
static void test_300_chunks(void **state)
{
    (void)state;
    char in[300 * 7 + 8];
    size_t n = 0;
    for (int i = 0; i < 300; i++)
        n += (size_t)sprintf(in + n, "2\r\n%c%c\r\n", 'a' + i % 26, 'A' + i % 26);
    n += (size_t)sprintf(in + n, "0\r\n\r\n");
    decoded d;
    decode_all_ways(NULL, 0, in, n, &d);
    assert_result(d.result, CSH_OK);
    assert_int_equal(d.ndata, 600);
    assert_int_equal(d.data[598], 'a' + 299 % 26);
    assert_int_equal(d.data[599], 'A' + 299 % 26);
    decoded_free(&d);
    csh_chunked c;
    csh_chunked_init(&c, NULL, 0, NULL, 0);
    decode(&c, in, n, 0, &d);
    assert_int_equal(c.chunks, 301);
    decoded_free(&d);
}

/* A large chunk streams out in pieces as it arrives, without waiting for all. */
static void test_large_chunk_streams(void **state)
{
    (void)state;
    const size_t size = 1 << 20;
    char *in = tmalloc(size + 32);
    assert_non_null(in);
    size_t o = (size_t)sprintf(in, "100000\r\n");
    for (size_t i = 0; i < size; i++) in[o + i] = (char)('a' + i % 23);
    o += size;
    o += (size_t)sprintf(in + o, "\r\n0\r\n\r\n");
    csh_chunked c;
    csh_chunked_init(&c, NULL, 0, NULL, 0);
    decoded d;
    decode(&c, in, o, 1000, &d);
    assert_result(d.result, CSH_OK);
    assert_int_equal(d.ndata, size);
    assert_memory_equal(d.data, in + 8, size);
    /* one DATA per arrival at least: the data was not held back */
    assert_true(d.calls >= size / 1000);
    decoded_free(&d);
    tfree(in);
}

/* RFC 9112 §7.1.2, chunked.h: trailers are validated and, on CSH_OK,
 * described as spans of the last call's buffer, whatever the arrivals. */
static void test_trailers_filled(void **state)
{
    (void)state;
    static const char in[] = "3\r\nabc\r\n0\r\nX-Sum: 42\r\nX-Note:  two words \t\r\n\r\nNEXT";
    decoded d;
    decode_all_ways(NULL, 0, S(in), &d);
    assert_result(d.result, CSH_OK);
    assert_int_equal(d.consumed, sizeof in - 1 - 4);
    assert_string_equal(d.names[0], "X-Sum");
    assert_string_equal(d.values[0], "42");
    assert_string_equal(d.names[1], "X-Note");
    assert_string_equal(d.values[1], "two words");
    decoded_free(&d);
    csh_header tr[4];
    csh_chunked c;
    csh_chunked_init(&c, NULL, 0, tr, 4);
    decode(&c, S(in), 0, &d);
    assert_int_equal(c.num_trailers, 2);
    assert_ptr_equal(c.trailers, tr);
    decoded_free(&d);
}

/* chunked.h: an unfinished trailer section is kept unconsumed, so the whole
 * section is in the last buffer. */
static void test_unfinished_trailers_unconsumed(void **state)
{
    (void)state;
    csh_header tr[4];
    csh_chunked c;
    csh_chunked_init(&c, NULL, 0, tr, 4);
    static const char part[] = "0\r\nA: 1\r\nB: 2\r\n";
    size_t used;
    csh_span data;
    assert_int_equal(csh_chunked_decode(&c, S(part), &used, &data), CSH_INCOMPLETE);
    assert_true(used <= 3);
    char *next = tmalloc(sizeof part - 1 - used + 2);
    assert_non_null(next);
    size_t len = sizeof part - 1 - used;
    memcpy(next, part + used, len);
    memcpy(next + len, "\r\n", 2);
    len += 2;
    size_t u2;
    assert_int_equal(csh_chunked_decode(&c, next, len, &u2, &data), CSH_OK);
    assert_int_equal(u2, len);
    assert_int_equal(c.num_trailers, 2);
    assert_true(csh_span_eq(next, tr[0].name, "A"));
    assert_true(csh_span_eq(next, tr[1].value, "2"));
    tfree(next);
}

/* chunked.h: trailers past the capacity are validated, not stored; a NULL
 * array stores none. */
static void test_trailers_capacity(void **state)
{
    (void)state;
    static const char in[] = "0\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n";
    csh_header tr[1];
    csh_chunked c;
    decoded d;
    csh_chunked_init(&c, NULL, 0, tr, 1);
    decode(&c, S(in), 0, &d);
    assert_result(d.result, CSH_OK);
    assert_int_equal(c.num_trailers, 1);
    assert_string_equal(d.names[0], "A");
    decoded_free(&d);

    csh_chunked_init(&c, NULL, 0, NULL, 0);
    decode(&c, S(in), 0, &d);
    assert_result(d.result, CSH_OK);
    assert_int_equal(c.num_trailers, 0);
    decoded_free(&d);

    /* a bad trailer past the capacity is still an error */
    csh_chunked_init(&c, NULL, 0, tr, 1);
    decode(&c, S("0\r\nA: 1\r\nB\0: 2\r\n\r\n"), 0, &d);
    assert_result(d.result, CSH_E_INVALID_FIELD_NAME);
    decoded_free(&d);
}

/* chunked.h: more trailer fields than max_fields is CSH_E_TOO_MANY_FIELDS. */
static void test_trailers_max_fields(void **state)
{
    (void)state;
    csh_limits l;
    csh_limits_init(&l);
    l.max_fields = 2;
    decoded d;
    decode_all_ways(&l, 0, S("0\r\nA: 1\r\nB: 2\r\n\r\n"), &d);
    assert_result(d.result, CSH_OK);
    decoded_free(&d);
    decode_all_ways(&l, 0, S("0\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n"), &d);
    assert_result(d.result, CSH_E_TOO_MANY_FIELDS);
    decoded_free(&d);
}

/* chunked.h: max_field_line applies to a trailer field line. */
static void test_trailer_field_line_limit(void **state)
{
    (void)state;
    csh_limits l;
    csh_limits_init(&l);
    l.max_field_line = 8;
    decoded d;
    decode_all_ways(&l, 0, S("0\r\nX-T: 123\r\n\r\n"), &d);
    assert_result(d.result, CSH_OK);
    decoded_free(&d);
    decode_all_ways(&l, 0, S("0\r\nX-T: 1234\r\n\r\n"), &d);
    assert_result(d.result, CSH_E_FIELD_LINE_TOO_LONG);
    decoded_free(&d);
    /* limit + 1 bytes of the line suffice */
    decode_all_ways(&l, 0, S("0\r\nX-T: 1234"), &d);
    assert_result(d.result, CSH_E_FIELD_LINE_TOO_LONG);
    decoded_free(&d);
}

/* csh_limits.max_trailer: the trailer section (431). */
static void test_trailer_section_limit(void **state)
{
    (void)state;
    csh_limits l;
    csh_limits_init(&l);
    l.max_trailer = 16;
    decoded d;
    /* "A: 1\r\n" + CRLF: 8 bytes */
    decode_all_ways(&l, 0, S("0\r\nA: 1\r\n\r\n"), &d);
    assert_result(d.result, CSH_OK);
    decoded_free(&d);
    /* 3 lines, 18 bytes and the CRLF */
    decode_all_ways(&l, 0, S("0\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n"), &d);
    assert_result(d.result, CSH_E_TRAILER_TOO_LARGE);
    assert_true(d.error_at <= 3 + 16);
    decoded_free(&d);
    /* without the end of the section: the limit holds before it */
    decode_all_ways(&l, 0, S("0\r\nA: 1\r\nB: 2\r\nC: 3\r\nD: 4"), &d);
    assert_result(d.result, CSH_E_TRAILER_TOO_LARGE);
    decoded_free(&d);
}

/* csh_limits.max_chunk_ext (default 1024): the bytes after the size digits. */
static void test_chunk_ext_default_limit(void **state)
{
    (void)state;
    char in[1200];
    for (size_t ext = 1023; ext <= 1025; ext++) {
        size_t o = 0;
        in[o++] = '1';
        in[o++] = ';';
        memset(in + o, 'e', ext - 1);
        o += ext - 1;
        size_t no_end = o;
        o += (size_t)sprintf(in + o, "\r\nx\r\n0\r\n\r\n");
        decoded d;
        decode_all_ways(NULL, 0, in, o, &d);
        if (ext <= 1024) {
            assert_result(d.result, CSH_OK);
            assert_int_equal(d.ndata, 1);
        } else {
            assert_result(d.result, CSH_E_CHUNK_EXT_TOO_LONG);
            assert_true(d.error_at <= 1 + 1024);
        }
        decoded_free(&d);
        /* the error needs no line end: limit + 1 bytes suffice */
        decode_all_ways(NULL, 0, in, no_end, &d);
        assert_int_equal(d.result, ext <= 1024 ? CSH_INCOMPLETE : CSH_E_CHUNK_EXT_TOO_LONG);
        decoded_free(&d);
    }
}

/* RFC 9112 §2.2 (lenient bare LF) and libcshttp/SMUGGLING.md (Kestrel). */
static void test_bare_lf_flag(void **state)
{
    (void)state;
    decoded d;
    decode_all_ways(NULL, 0, S("1;a\nX\r\n0\r\n\r\n"), &d);
    assert_result(d.result, CSH_E_BARE_LF);
    assert_true(d.error_at <= 3);
    decoded_free(&d);
    decode_all_ways(NULL, CSH_PARSE_LENIENT_BARE_LF, S("1;a\nX\r\n0\r\n\r\n"), &d);
    assert_result(d.result, CSH_OK);
    assert_int_equal(d.ndata, 1);
    assert_int_equal(d.data[0], 'X');
    decoded_free(&d);
    decode_all_ways(NULL, CSH_PARSE_LENIENT_BARE_LF, S("3\nabc\n0\nT: v\n\n"), &d);
    assert_result(d.result, CSH_OK);
    assert_string_equal(d.names[0], "T");
    assert_string_equal(d.values[0], "v");
    decoded_free(&d);
    /* lenient is for LF only */
    decode_all_ways(NULL, CSH_PARSE_LENIENT_BARE_LF, S("1\r0\r\nX\r\n0\r\n\r\n"), &d);
    assert_result(d.result, CSH_E_BARE_CR);
    decoded_free(&d);
}

/* RFC 9112 §7.1: chunk-size errors, each at its place. */
static void test_chunk_size_errors(void **state)
{
    (void)state;
    static const struct {
        const char *in;
        int err;
    } t[] = {
        {"5zz\r\nhello\r\n0\r\n\r\n", CSH_E_INVALID_CHUNK_SIZE},
        {"1these-bytes\r\nX\r\n0\r\n\r\n", CSH_E_INVALID_CHUNK_SIZE},
        {"-1\r\nX\r\n0\r\n\r\n", CSH_E_INVALID_CHUNK_SIZE},
        {"0x1\r\nX\r\n0\r\n\r\n", CSH_E_INVALID_CHUNK_SIZE},
        {"\r\n\r\n", CSH_E_INVALID_CHUNK_SIZE},
        {"g\r\n", CSH_E_INVALID_CHUNK_SIZE},
        {"8000000000000000\r\n", CSH_E_CHUNK_SIZE_TOO_LARGE},
        {"ffffffffffffffff\r\n", CSH_E_CHUNK_SIZE_TOO_LARGE},
        {"5\r\nhelloXX\r\n", CSH_E_MISSING_CHUNK_CRLF},
        {"1\r0\r\n", CSH_E_BARE_CR},
        {"1;a\x01\r\nX\r\n0\r\n\r\n", CSH_E_INVALID_CHUNK_EXT},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        decoded d;
        decode_all_ways(NULL, 0, t[i].in, strlen(t[i].in), &d);
        if (d.result != t[i].err)
            fail_msg("\"%s\": expected %s, got %s", t[i].in, csh_error_name(t[i].err),
                     csh_error_name(d.result));
        decoded_free(&d);
    }
}

/* The largest 63-bit chunk size is accepted and its data streams. */
static void test_chunk_size_63_bits(void **state)
{
    (void)state;
    decoded d;
    csh_chunked c;
    csh_chunked_init(&c, NULL, 0, NULL, 0);
    decode(&c, S("7fffffffffffffff\r\nabcdef"), 0, &d);
    assert_result(d.result, CSH_INCOMPLETE);
    assert_int_equal(d.ndata, 6);
    assert_int_equal(c.body_bytes, 6);
    decoded_free(&d);
}

/* Size lines of every form the one-pass reading of a whole size line takes
 * (1 to 15 digits, either case, CRLF) and the forms it leaves to the byte at
 * a time reading (16 digits, an extension, BWS, bare LF when lenient), each
 * read whole and split at every step, with the data they frame; a 15-digit
 * size past the data that came is still data to come. */
static void test_size_line_forms(void **state)
{
    (void)state;
    static const struct {
        const char *in;
        unsigned flags;
        const char *data;
    } t[] = {
        {"a\r\n0123456789\r\n0\r\n\r\n", 0, "0123456789"},
        {"A\r\n0123456789\r\n0\r\n\r\n", 0, "0123456789"},
        {"00000000000000a\r\n0123456789\r\n0\r\n\r\n", 0, "0123456789"},
        {"000000000000000a\r\n0123456789\r\n0\r\n\r\n", 0, "0123456789"},
        {"1\r\nx\r\n2\r\nyz\r\n000\r\n\r\n", 0, "xyz"},
        {"3;a=b\r\nxyz\r\n0;c\r\n\r\n", 0, "xyz"},
        {"3 ;a\r\nxyz\r\n0\r\n\r\n", 0, "xyz"},
        {"3\nxyz\n0\n\n", CSH_PARSE_LENIENT_BARE_LF, "xyz"},
        {"3\r\nxyz\n3\r\nabc\r\n0\r\n\r\n", CSH_PARSE_LENIENT_BARE_LF, "xyzabc"},
        {"1\r\nx\r\n0\r\nT: v\r\n\r\n", 0, "x"},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        decoded d;
        decode_all_ways(NULL, t[i].flags, t[i].in, strlen(t[i].in), &d);
        if (d.result != CSH_OK)
            fail_msg("\"%s\": expected CSH_OK, got %s", t[i].in, csh_error_name(d.result));
        assert_int_equal(d.consumed, strlen(t[i].in));
        assert_int_equal(d.ndata, strlen(t[i].data));
        assert_memory_equal(d.data, t[i].data, d.ndata);
        decoded_free(&d);
    }
    decoded d;
    csh_chunked c;
    csh_chunked_init(&c, NULL, 0, NULL, 0);
    decode(&c, S("fffffffffffffff\r\nabc"), 0, &d);
    assert_result(d.result, CSH_INCOMPLETE);
    assert_int_equal(d.ndata, 3);
    assert_true(c.remaining_ == UINT64_C(0xfffffffffffffff) - 3);
    decoded_free(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_decode_stops_at_body_end, free_live),
        cmocka_unit_test_teardown(test_size_line_split_anywhere, free_live),
        cmocka_unit_test_teardown(test_resume_with_unconsumed_bytes, free_live),
        cmocka_unit_test_teardown(test_ok_is_sticky, free_live),
        cmocka_unit_test_teardown(test_error_is_sticky, free_live),
        cmocka_unit_test_teardown(test_zero_length_call, free_live),
        cmocka_unit_test_teardown(test_million_one_byte_chunks, free_live),
        cmocka_unit_test_teardown(test_300_chunks, free_live),
        cmocka_unit_test_teardown(test_large_chunk_streams, free_live),
        cmocka_unit_test_teardown(test_trailers_filled, free_live),
        cmocka_unit_test_teardown(test_unfinished_trailers_unconsumed, free_live),
        cmocka_unit_test_teardown(test_trailers_capacity, free_live),
        cmocka_unit_test_teardown(test_trailers_max_fields, free_live),
        cmocka_unit_test_teardown(test_trailer_field_line_limit, free_live),
        cmocka_unit_test_teardown(test_trailer_section_limit, free_live),
        cmocka_unit_test_teardown(test_chunk_ext_default_limit, free_live),
        cmocka_unit_test_teardown(test_bare_lf_flag, free_live),
        cmocka_unit_test_teardown(test_chunk_size_errors, free_live),
        cmocka_unit_test_teardown(test_chunk_size_63_bits, free_live),
        cmocka_unit_test_teardown(test_size_line_forms, free_live),
        cmocka_unit_test_teardown(test_reset_keeps_setup, free_live),
    };
    return cmocka_run_group_tests_name("chunked", tests, NULL, NULL);
}
