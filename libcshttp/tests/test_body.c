/* The body reader's contract (body.h): one reader for the four framings;
 * data spans point into the call's buffer, consumed never exceeds len, no
 * byte past the body is consumed, finish() tells a clean end from a
 * truncation, trailers of a chunked body are filled on CSH_OK. */
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

typedef struct fixture {
    csh_header fields[16];
    csh_parser p;
    const char *wire;
    size_t len;
} fixture;

/* Parses the head of `wire` (a request or a response to `method`). */
static void parse_head(fixture *f, csh_parser_type type, csh_method method, const char *wire,
                       size_t len)
{
    csh_parser_init(&f->p, type, f->fields, 16, NULL, 0);
    if (type == CSH_RESPONSE) csh_parser_set_request_method(&f->p, method);
    assert_int_equal(csh_parser_execute(&f->p, wire, len), CSH_OK);
    f->wire = wire;
    f->len = len;
}

/* 1: read_body calls csh_body_next (the inline steps) instead of
 * csh_body_read; main runs every test both ways. */
static int g_next;

typedef struct result {
    int r;
    size_t consumed;
    char data[4096];
    size_t ndata;
} result;

/* Reads the body after the head, `step` bytes arriving at a time, each call
 * on a fresh allocation of exactly the unconsumed and new bytes. Stops at
 * CSH_OK, an error, or the end of the input (then calls csh_body_finish when
 * `finish` is set). */
static void read_body(csh_body *b, const char *in, size_t n, size_t step, int finish, result *res)
{
    memset(res, 0, sizeof *res);
    size_t pos = 0, avail = step && step < n ? step : n;
    for (;;) {
        size_t len = avail - pos;
        char *buf = tmalloc(len ? len : 1);
        assert_non_null(buf);
        memcpy(buf, in + pos, len);
        size_t used = (size_t)-1;
        csh_span data = {(size_t)-1, (size_t)-1};
        int r = g_next ? csh_body_next(b, buf, len, &used, &data)
                       : csh_body_read(b, buf, len, &used, &data);
        assert_true(used <= len);
        if (r == CSH_DATA) {
            assert_true(data.len > 0);
            assert_true(data.off <= used && data.len <= used - data.off);
            assert_true(res->ndata + data.len <= sizeof res->data);
            memcpy(res->data + res->ndata, buf + data.off, data.len);
            res->ndata += data.len;
            assert_int_equal(b->received, res->ndata);
            pos += used;
            tfree(buf);
            continue;
        }
        tfree(buf);
        pos += used;
        if (r != CSH_INCOMPLETE) {
            res->r = r;
            break;
        }
        if (avail == n) {
            res->r = finish ? csh_body_finish(b) : CSH_INCOMPLETE;
            break;
        }
        avail = step && n - avail > step ? avail + step : n;
    }
    res->consumed = pos;
}

/* RFC 9112 §6.3: no body: CSH_OK at once, nothing consumed. */
static void test_body_none(void **state)
{
    (void)state;
    fixture f;
    parse_head(&f, CSH_REQUEST, CSH_METHOD_OTHER, S("GET / HTTP/1.1\r\nHost: a\r\n\r\n"));
    csh_body b;
    csh_body_init(&b, &f.p.msg, NULL, 0, NULL, 0);
    assert_int_equal(b.kind, CSH_BODY_NONE);
    result res;
    read_body(&b, S("GET /next HTTP/1.1\r\n"), 0, 0, &res);
    assert_int_equal(res.r, CSH_OK);
    assert_int_equal(res.consumed, 0);
    assert_int_equal(res.ndata, 0);
    assert_int_equal(csh_body_finish(&b), CSH_OK);
}

/* RFC 9112 §6.3 rule 1: the response to HEAD has no body. */
static void test_body_head_response(void **state)
{
    (void)state;
    fixture f;
    parse_head(&f, CSH_RESPONSE, CSH_METHOD_HEAD,
               S("HTTP/1.1 200 OK\r\nContent-Length: 99\r\n\r\n"));
    csh_body b;
    csh_body_init(&b, &f.p.msg, NULL, 0, NULL, 0);
    assert_int_equal(b.kind, CSH_BODY_NONE);
    result res;
    read_body(&b, S("HTTP/1.1 200 OK\r\n"), 0, 0, &res);
    assert_int_equal(res.r, CSH_OK);
    assert_int_equal(res.consumed, 0);
}

/* RFC 9112 §6.2: Content-Length: exactly N bytes, never one more, fed in
 * pieces of every size. */
static void test_body_length(void **state)
{
    (void)state;
    static const char rest[] = "0123456789GET /next HTTP/1.1\r\n";
    for (size_t step = 0; step <= 11; step++) {
        fixture f;
        parse_head(&f, CSH_REQUEST, CSH_METHOD_OTHER,
                   S("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 10\r\n\r\n"));
        csh_body b;
        csh_body_init(&b, &f.p.msg, NULL, 0, NULL, 0);
        assert_int_equal(b.kind, CSH_BODY_LENGTH);
        result res;
        read_body(&b, S(rest), step, 0, &res);
        assert_int_equal(res.r, CSH_OK);
        assert_int_equal(res.consumed, 10);
        assert_int_equal(res.ndata, 10);
        assert_memory_equal(res.data, "0123456789", 10);
        assert_int_equal(b.received, 10);
        assert_int_equal(csh_body_finish(&b), CSH_OK);
    }
}

/* body.h: csh_body_done says the end of a Content-Length body with the
 * CSH_DATA that carried its last byte, without one more call. */
static void test_body_length_done_without_extra_call(void **state)
{
    (void)state;
    fixture f;
    parse_head(&f, CSH_REQUEST, CSH_METHOD_OTHER,
               S("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\n"));
    csh_body b;
    csh_body_init(&b, &f.p.msg, NULL, 0, NULL, 0);
    size_t used;
    csh_span d;
    assert_false(csh_body_done(&b));
    assert_int_equal(csh_body_read(&b, "hel", 3, &used, &d), CSH_DATA);
    assert_false(csh_body_done(&b));
    assert_int_equal(csh_body_read(&b, "loGET", 5, &used, &d), CSH_DATA);
    assert_int_equal(used, 2);
    assert_true(csh_body_done(&b)); /* known now: the next message starts at "GET" */
    assert_int_equal(csh_body_read(&b, "GET", 3, &used, &d), CSH_OK);
    assert_int_equal(used, 0);
    /* no body at all: done from the start */
    parse_head(&f, CSH_REQUEST, CSH_METHOD_OTHER, S("GET / HTTP/1.1\r\nHost: a\r\n\r\n"));
    csh_body_init(&b, &f.p.msg, NULL, 0, NULL, 0);
    assert_true(csh_body_done(&b));
}

/* body.h: the input ends before Content-Length bytes: truncated. */
static void test_body_length_truncated(void **state)
{
    (void)state;
    fixture f;
    parse_head(&f, CSH_REQUEST, CSH_METHOD_OTHER,
               S("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 10\r\n\r\n"));
    csh_body b;
    csh_body_init(&b, &f.p.msg, NULL, 0, NULL, 0);
    result res;
    read_body(&b, S("01234"), 2, 1, &res);
    assert_int_equal(res.r, CSH_E_BODY_TRUNCATED);
    assert_int_equal(res.ndata, 5);
    assert_int_equal(csh_error_status(CSH_E_BODY_TRUNCATED), 400);
    /* and with no byte of the body at all */
    csh_body_init(&b, &f.p.msg, NULL, 0, NULL, 0);
    assert_int_equal(csh_body_finish(&b), CSH_E_BODY_TRUNCATED);
}

/* An empty call on a length body needs more, consumes nothing. */
static void test_body_length_empty_call(void **state)
{
    (void)state;
    fixture f;
    parse_head(&f, CSH_REQUEST, CSH_METHOD_OTHER,
               S("PUT / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\n"));
    csh_body b;
    csh_body_init(&b, &f.p.msg, NULL, 0, NULL, 0);
    size_t used = 7;
    csh_span data;
    assert_int_equal(csh_body_read(&b, "", 0, &used, &data), CSH_INCOMPLETE);
    assert_int_equal(used, 0);
    assert_int_equal(b.received, 0);
}

/* RFC 9112 §7.1 through the body reader: de-chunked data, trailers filled
 * on CSH_OK, the next message untouched. */
static void test_body_chunked(void **state)
{
    (void)state;
    static const char rest[] =
        "4\r\nWiki\r\n5;x=y\r\npedia\r\n0\r\nX-T: ok\r\n\r\nGET / HTTP/1.1\r\n";
    const size_t body = sizeof "4\r\nWiki\r\n5;x=y\r\npedia\r\n0\r\nX-T: ok\r\n\r\n" - 1;
    for (size_t step = 0; step <= 9; step++) {
        fixture f;
        parse_head(&f, CSH_REQUEST, CSH_METHOD_OTHER,
                   S("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"));
        csh_header tr[2];
        memset(tr, 0, sizeof tr);
        csh_body b;
        csh_body_init(&b, &f.p.msg, NULL, 0, tr, 2);
        assert_int_equal(b.kind, CSH_BODY_CHUNKED);
        result res;
        read_body(&b, S(rest), step, 0, &res);
        assert_int_equal(res.r, CSH_OK);
        assert_int_equal(res.consumed, body);
        assert_int_equal(res.ndata, 9);
        assert_memory_equal(res.data, "Wikipedia", 9);
        assert_int_equal(b.chunked.chunks, 3);
        assert_int_equal(b.chunked.num_trailers, 1);
        assert_ptr_equal(b.chunked.trailers, tr);
        assert_int_equal(tr[0].name.len, 3);
        assert_int_equal(tr[0].value.len, 2);
        assert_int_equal(csh_body_finish(&b), CSH_OK);
    }
}

/* body.h: a chunked body cut short is truncated, wherever it is cut. */
static void test_body_chunked_truncated(void **state)
{
    (void)state;
    static const char full[] = "4\r\nWiki\r\n0\r\nX: y\r\n\r\n";
    for (size_t cut = 0; cut < sizeof full - 1; cut++) {
        fixture f;
        parse_head(&f, CSH_REQUEST, CSH_METHOD_OTHER,
                   S("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"));
        csh_body b;
        csh_body_init(&b, &f.p.msg, NULL, 0, NULL, 0);
        result res;
        read_body(&b, full, cut, 0, 1, &res);
        if (res.r != CSH_E_BODY_TRUNCATED)
            fail_msg("cut at %zu: expected CSH_E_BODY_TRUNCATED, got %s", cut,
                     csh_error_name(res.r));
    }
}

/* body.h: chunked errors come through the reader. */
static void test_body_chunked_error(void **state)
{
    (void)state;
    fixture f;
    parse_head(&f, CSH_REQUEST, CSH_METHOD_OTHER,
               S("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"));
    csh_body b;
    csh_body_init(&b, &f.p.msg, NULL, 0, NULL, 0);
    result res;
    read_body(&b, S("5 0\r\nhello\r\n0\r\n\r\n"), 0, 0, &res);
    assert_true(res.r == CSH_E_INVALID_CHUNK_SIZE || res.r == CSH_E_INVALID_CHUNK_EXT);
    /* the limits and flags given to csh_body_init reach the decoder */
    csh_limits l;
    csh_limits_init(&l);
    l.max_chunk_ext = 2;
    csh_body_init(&b, &f.p.msg, &l, 0, NULL, 0);
    read_body(&b, S("1;abc\r\nx\r\n0\r\n\r\n"), 0, 0, &res);
    assert_int_equal(res.r, CSH_E_CHUNK_EXT_TOO_LONG);
    csh_body_init(&b, &f.p.msg, NULL, CSH_PARSE_LENIENT_BARE_LF, NULL, 0);
    read_body(&b, S("1\nx\n0\n\n"), 0, 0, &res);
    assert_int_equal(res.r, CSH_OK);
    assert_int_equal(res.ndata, 1);
    csh_body_init(&b, &f.p.msg, NULL, 0, NULL, 0);
    read_body(&b, S("1\nx\n0\n\n"), 0, 0, &res);
    assert_int_equal(res.r, CSH_E_BARE_LF);
}

/* RFC 9112 §6.3 rule 8: a response without framing runs until close; the
 * end of input ends it cleanly. */
static void test_body_until_close(void **state)
{
    (void)state;
    static const char rest[] = "all of this\r\n0\r\n\r\nHTTP/1.1 200 OK\r\n";
    for (size_t step = 0; step <= 5; step++) {
        fixture f;
        parse_head(&f, CSH_RESPONSE, CSH_METHOD_GET, S("HTTP/1.1 200 OK\r\nX: y\r\n\r\n"));
        csh_body b;
        csh_body_init(&b, &f.p.msg, NULL, 0, NULL, 0);
        assert_int_equal(b.kind, CSH_BODY_UNTIL_CLOSE);
        result res;
        read_body(&b, S(rest), step, 1, &res);
        assert_int_equal(res.r, CSH_OK);
        assert_int_equal(res.consumed, sizeof rest - 1);
        assert_int_equal(res.ndata, sizeof rest - 1);
        assert_memory_equal(res.data, rest, sizeof rest - 1);
        assert_int_equal(b.received, sizeof rest - 1);
    }
}

/* Until close: the reader never says the body ended on its own. */
static void test_body_until_close_never_ok(void **state)
{
    (void)state;
    fixture f;
    parse_head(&f, CSH_RESPONSE, CSH_METHOD_GET, S("HTTP/1.0 200 OK\r\n\r\n"));
    csh_body b;
    csh_body_init(&b, &f.p.msg, NULL, 0, NULL, 0);
    result res;
    read_body(&b, S("abc"), 0, 0, &res);
    assert_int_equal(res.r, CSH_INCOMPLETE);
    assert_int_equal(res.consumed, 3);
    size_t used = 9;
    csh_span data;
    assert_int_equal(csh_body_read(&b, "", 0, &used, &data), CSH_INCOMPLETE);
    assert_int_equal(used, 0);
    assert_int_equal(csh_body_finish(&b), CSH_OK);
}

/* The body reader takes the framing from the parsed message. */
static void test_body_kind_from_message(void **state)
{
    (void)state;
    csh_message m;
    memset(&m, 0, sizeof m);
    m.body = CSH_BODY_LENGTH;
    m.content_length = 2;
    csh_body b;
    csh_body_init(&b, &m, NULL, 0, NULL, 0);
    assert_int_equal(b.kind, CSH_BODY_LENGTH);
    result res;
    read_body(&b, S("abc"), 1, 0, &res);
    assert_int_equal(res.r, CSH_OK);
    assert_int_equal(res.consumed, 2);
    assert_memory_equal(res.data, "ab", 2);
}

/* body.h: one reader for a connection, csh_body_reset per body, gives what a
 * reader initialised per body gives: chunked (with trailers), Content-Length,
 * none, chunked again, at every step size; the limits and flags given to
 * csh_body_init hold for every body. */
static void test_body_reset_reuses_reader(void **state)
{
    (void)state;
    static const char chunked_rest[] = "4\r\nWiki\r\n5;x=y\r\npedia\r\n0\r\nX-T: ok\r\n\r\n";
    for (size_t step = 0; step <= 9; step++) {
        csh_header tr[2];
        csh_body b;
        result res;
        fixture f;
        csh_limits l;
        csh_limits_init(&l);
        l.max_chunk_ext = 4;
        memset(tr, 0, sizeof tr);
        csh_body_init(&b, NULL, &l, 0, tr, 2);
        assert_int_equal(b.kind, CSH_BODY_NONE);
        assert_int_equal(csh_body_done(&b), 1);
        for (int round = 0; round < 2; round++) {
            parse_head(&f, CSH_REQUEST, CSH_METHOD_OTHER,
                       S("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"));
            csh_body_reset(&b, &f.p.msg);
            read_body(&b, S(chunked_rest), step, 0, &res);
            assert_int_equal(res.r, CSH_OK);
            assert_int_equal(res.consumed, sizeof chunked_rest - 1);
            assert_int_equal(res.ndata, 9);
            assert_memory_equal(res.data, "Wikipedia", 9);
            assert_int_equal(b.received, 9);
            assert_int_equal(b.chunked.body_bytes, 9);
            assert_int_equal(b.chunked.chunks, 3);
            assert_int_equal(b.chunked.num_trailers, 1);

            parse_head(&f, CSH_REQUEST, CSH_METHOD_OTHER,
                       S("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\n"));
            csh_body_reset(&b, &f.p.msg);
            assert_int_equal(b.kind, CSH_BODY_LENGTH);
            read_body(&b, S("helloGET"), step, 0, &res);
            assert_int_equal(res.consumed, 5);
            assert_int_equal(res.ndata, 5);
            assert_int_equal(b.received, 5);
            assert_int_equal(csh_body_done(&b), 1);

            parse_head(&f, CSH_REQUEST, CSH_METHOD_OTHER, S("GET / HTTP/1.1\r\nHost: a\r\n\r\n"));
            csh_body_reset(&b, &f.p.msg);
            read_body(&b, S("GET"), step, 0, &res);
            assert_int_equal(res.r, CSH_OK);
            assert_int_equal(res.consumed, 0);
        }
        /* the limit given once holds after the resets: 5 extension bytes */
        parse_head(&f, CSH_REQUEST, CSH_METHOD_OTHER,
                   S("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"));
        csh_body_reset(&b, &f.p.msg);
        read_body(&b, S("1;abcd\r\nx\r\n0\r\n\r\n"), step, 0, &res);
        assert_int_equal(res.r, CSH_E_CHUNK_EXT_TOO_LONG);
        /* an error stays, even for a call without bytes */
        size_t used = 1;
        csh_span d;
        assert_int_equal(csh_body_next(&b, "", 0, &used, &d), CSH_E_CHUNK_EXT_TOO_LONG);
        assert_int_equal(used, 0);
    }
}

static int set_next(void **state)
{
    (void)state;
    g_next = 1;
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_body_none, free_live),
        cmocka_unit_test_teardown(test_body_head_response, free_live),
        cmocka_unit_test_teardown(test_body_length, free_live),
        cmocka_unit_test_teardown(test_body_length_truncated, free_live),
        cmocka_unit_test(test_body_length_done_without_extra_call),
        cmocka_unit_test_teardown(test_body_length_empty_call, free_live),
        cmocka_unit_test_teardown(test_body_chunked, free_live),
        cmocka_unit_test_teardown(test_body_chunked_truncated, free_live),
        cmocka_unit_test_teardown(test_body_chunked_error, free_live),
        cmocka_unit_test_teardown(test_body_until_close, free_live),
        cmocka_unit_test_teardown(test_body_until_close_never_ok, free_live),
        cmocka_unit_test_teardown(test_body_kind_from_message, free_live),
        cmocka_unit_test_teardown(test_body_reset_reuses_reader, free_live),
    };
    int fails = cmocka_run_group_tests_name("body (csh_body_read)", tests, NULL, NULL);
    return fails + cmocka_run_group_tests_name("body (csh_body_next)", tests, set_next, NULL);
}
