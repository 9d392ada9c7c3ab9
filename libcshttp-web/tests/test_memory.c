/* cshw_memory: the in-memory transport and cshw_memory_serve, the engine
 * every other test drives the toolkit with: heads parsed from pieces of
 * any size, body bytes copied with the head handed over first, pipelining
 * (RFC 9112 §9.3.2), parse errors answered with their status and
 * Connection: close. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "tw.h"

static void hello(cshw_context *ctx)
{
    cshw_request *req = cshw_context_request(ctx);
    cshw_response *res = cshw_context_response(ctx);
    cshw_response_set_content_type(res, "text/plain", "utf-8");
    cshw_response_printf(res, "%s %s", cshw_request_method(req), cshw_request_target(req));
}

static void test_get_whole_and_byte_by_byte(void **state)
{
    (void)state;
    static const char in[] = "GET /hello?x=1 HTTP/1.1\r\nHost: h\r\n\r\n";
    for (size_t piece = 0; piece <= 3; piece++) {
        tw_run run;
        tw_serve(&run, in, sizeof in - 1, piece, NULL, hello);
        assert_int_equal(run.served, 1);
        assert_int_equal(run.n, 1);
        assert_int_equal(run.r[0].status, 200);
        assert_string_equal(run.r[0].body, "GET /hello?x=1");
        assert_string_equal(tw_field(&run.r[0], "content-length"), "14");
        assert_string_equal(tw_field(&run.r[0], "content-type"), "text/plain; charset=utf-8");
        assert_null(tw_field(&run.r[0], "server"));
        assert_non_null(tw_field(&run.r[0], "date"));
        tw_free(&run);
    }
}

static void echo(cshw_context *ctx)
{
    cshw_request *req = cshw_context_request(ctx);
    cshw_response *res = cshw_context_response(ctx);
    cshw_response_printf(res, "%s %s [", cshw_request_method(req), cshw_request_target(req));
    char buf[7];
    ssize_t n;
    while ((n = cshw_request_read(req, buf, sizeof buf)) > 0)
        cshw_response_write(res, buf, (size_t)n);
    cshw_response_puts(res, "]");
}

/* RFC 9112 §9.3.2: pipelined requests, bodies of every framing, answered
 * in order, the same whatever the size of the pieces the input comes in
 * (the head buffer hands its leftover bytes to the body reader first). */
static void test_pipelining_every_piece_size(void **state)
{
    (void)state;
    static const char in[] = "GET /1 HTTP/1.1\r\nHost: h\r\n\r\n"
                             "POST /2 HTTP/1.1\r\nHost: h\r\nContent-Length: 11\r\n\r\nhello world"
                             "POST /3 HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
                             "3\r\nabc\r\n10;x=y\r\n0123456789abcdef\r\n0\r\nTrailer: t\r\n\r\n"
                             "\r\n" /* RFC 9112 §2.2: an empty line before a request is ignored */
                             "HEAD /4 HTTP/1.1\r\nHost: h\r\n\r\n"
                             "DELETE /5 HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n"
                             "GET /6 HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n"
                             "GET /never HTTP/1.1\r\nHost: h\r\n\r\n";
    static const char *const bodies[] = {
        "GET /1 []", "POST /2 [hello world]", "POST /3 [abc0123456789abcdef]",
        "",          "DELETE /5 []",          "GET /6 []",
    };
    for (size_t piece = 0; piece <= sizeof in; piece += piece < 20 ? 1 : 37) {
        tw_run run;
        tw_serve(&run, in, sizeof in - 1, piece, NULL, echo);
        assert_int_equal(run.served, 6);
        assert_int_equal(run.n, 6);
        assert_int_equal(run.error, 0);
        for (int i = 0; i < 6; i++) {
            assert_int_equal(run.r[i].status, 200);
            assert_string_equal(run.r[i].body, bodies[i]);
        }
        assert_string_equal(tw_field(&run.r[3], "content-length"), "10"); /* "HEAD /4 []" */
        assert_string_equal(tw_field(&run.r[5], "connection"), "close");
        tw_free(&run);
    }
}

static void test_many_requests_in_order(void **state)
{
    (void)state;
    static char in[64 * 300];
    size_t n = 0;
    for (int i = 0; i < 300; i++)
        n += (size_t)snprintf(in + n, sizeof in - n, "GET /%d HTTP/1.1\r\nHost: h\r\n\r\n", i);
    cshw_memory *m = cshw_memory_new(in, n, 5);
    assert_int_equal(cshw_memory_serve(m, NULL, echo), 300);
    size_t len;
    const char *out = cshw_memory_output(m, &len);
    const char *p = out;
    for (int i = 0; i < 300; i++) {
        char want[32];
        snprintf(want, sizeof want, "GET /%d []", i);
        p = strstr(p, want);
        assert_non_null(p);
        p += strlen(want);
    }
    cshw_memory_free(m);
}

/* A head that does not parse gets csh_error_status's answer and the
 * connection ends (RFC 9112 §2.2: the framing cannot be trusted). */
static void test_parse_errors(void **state)
{
    (void)state;
    static char long_field[10000];
    memcpy(long_field, "GET / HTTP/1.1\r\nHost: h\r\nX: ", 28);
    memset(long_field + 28, 'a', 9000);
    memcpy(long_field + 9028, "\r\n\r\n", 5);
    static const struct {
        const char *in;
        int status;
    } cases[] = {
        {"GET / HTTP/1.1\r\n\r\n", 400},                       /* no Host */
        {"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400}, /* two */
        {"GET / HTTP/2.0\r\nHost: h\r\n\r\n", 505},
        {"GET /\x01 HTTP/1.1\r\nHost: h\r\n\r\n", 400},
        {"GET / HTTP/1.1\r\nHost: h\r\nX : y\r\n\r\n", 400},
        {"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n",
         400}, /* RFC 9112 §6.1: smuggling */
        {"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: zip\r\n\r\n", 501},
        {"GET / HTTP/1.1\r\nHost: h\nX: y\r\n\r\n", 400}, /* bare LF */
        {long_field, 431},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        for (size_t piece = 0; piece <= 1; piece++) {
            char in[12000];
            snprintf(in, sizeof in,
                     "GET /first HTTP/1.1\r\nHost: h\r\n\r\n%sGET / HTTP/1.1\r\n\r\n", cases[i].in);
            tw_run run;
            tw_serve(&run, in, strlen(in), piece, NULL, echo);
            assert_int_equal(run.served, 1);
            assert_int_equal(run.n, 2);
            assert_int_equal(run.error, 0);
            assert_string_equal(run.r[0].body, "GET /first []");
            if (run.r[1].status != cases[i].status) fail_msg("case %zu: %d", i, run.r[1].status);
            assert_string_equal(tw_field(&run.r[1], "connection"), "close");
            assert_string_equal(tw_field(&run.r[1], "content-type"), "text/html; charset=utf-8");
            assert_non_null(tw_field(&run.r[1], "date"));
            char title[64];
            snprintf(title, sizeof title, "<h1>%d %s</h1>", cases[i].status,
                     cshw_response_status_reason(cases[i].status));
            assert_non_null(strstr(run.r[1].body, title));
            tw_free(&run);
        }
    }
}

/* The input ends: between requests (nothing to say) or inside a head (the
 * client went away: nothing to answer either). */
static void test_input_ends(void **state)
{
    (void)state;
    static const char *const ins[] = {"", "GET / HTTP/1.1\r\nHo", "\r\n"};
    for (size_t i = 0; i < 3; i++) {
        cshw_memory *m = cshw_memory_new(ins[i], strlen(ins[i]), 1);
        assert_int_equal(cshw_memory_serve(m, NULL, echo), 0);
        size_t n = 99;
        assert_string_equal(cshw_memory_output(m, &n), "");
        assert_int_equal(n, 0);
        cshw_memory_free(m);
    }
    /* a large head, grown piece by piece */
    static char big[6000];
    int n = snprintf(big, sizeof big, "GET /big HTTP/1.1\r\nHost: h\r\nX-Big: ");
    memset(big + n, 'b', 5000);
    memcpy(big + n + 5000, "\r\n\r\n", 5);
    tw_run run;
    tw_serve(&run, big, strlen(big), 1, NULL, echo);
    assert_int_equal(run.served, 1);
    assert_string_equal(run.r[0].body, "GET /big []");
    tw_free(&run);
}

static void test_transport(void **state)
{
    (void)state;
    cshw_memory *m = cshw_memory_new("abcdef", 6, 4);
    const cshw_transport *t = cshw_memory_transport(m);
    assert_string_equal(t->remote_addr, "192.0.2.1");
    assert_int_equal(t->remote_port, 49152);
    assert_int_equal(t->is_secure, 0);
    const char *d;
    size_t n;
    assert_int_equal(t->ops->peek(t->io, &d, &n), 0);
    assert_int_equal(n, 4);
    assert_memory_equal(d, "abcd", 4);
    t->ops->consume(t->io, 1);
    assert_int_equal(t->ops->peek(t->io, &d, &n), 0);
    assert_int_equal(n, 4);
    assert_memory_equal(d, "bcde", 4);
    t->ops->consume(t->io, 4);
    assert_int_equal(t->ops->peek(t->io, &d, &n), 0);
    assert_int_equal(n, 1);
    t->ops->consume(t->io, 1);
    assert_int_equal(t->ops->peek(t->io, &d, &n), 0);
    assert_int_equal(n, 0); /* the end */
    assert_int_equal(t->ops->write(t->io, "xyz", 3), 0);
    cshw_memory_fail_writes_after(m, 5);
    assert_int_equal(t->ops->write(t->io, "12345", 5), -EPIPE);
    assert_string_equal(cshw_memory_output(m, &n), "xyz12");
    cshw_memory_fail_writes_after(m, (size_t)-1);
    assert_int_equal(t->ops->write(t->io, "!", 1), 0);
    cshw_memory_output(m, &n);
    assert_int_equal(n, 6);
    cshw_memory_free(m);
    cshw_memory_free(NULL);

    m = cshw_memory_new(NULL, 0, 0);
    assert_int_equal(cshw_memory_serve(m, NULL, NULL), -EINVAL);
    assert_int_equal(cshw_memory_serve(NULL, NULL, echo), -EINVAL);
    cshw_memory_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_get_whole_and_byte_by_byte),
        cmocka_unit_test(test_pipelining_every_piece_size),
        cmocka_unit_test(test_many_requests_in_order),
        cmocka_unit_test(test_parse_errors),
        cmocka_unit_test(test_input_ends),
        cmocka_unit_test(test_transport),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
