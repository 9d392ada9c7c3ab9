/* cshw_exchange (src/exchange.c) over the memory transport: what it
 * reports for every kind of answer, the body stored in memory or in a
 * temporary file, the limits, the request checks, streaming routes,
 * that the same bytes give the same answers whole and byte by byte, and a
 * handler that answers later. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cshttp/web/exchange.h"
#include "tw.h"

/* ---- what the reports said ---- */

#define MAX_REPORTS 16

typedef struct report_log {
    int n;
    size_t size[MAX_REPORTS];
    int status[MAX_REPORTS];
    int error[MAX_REPORTS];
    int parsed[MAX_REPORTS];
    int keep[MAX_REPORTS];
    uint64_t in[MAX_REPORTS], out[MAX_REPORTS], body[MAX_REPORTS];
    char line[MAX_REPORTS][64];
} report_log;

static report_log reports;

static void on_report(void *arg, const cshw_exchange_outcome *o)
{
    (void)arg;
    if (reports.n >= MAX_REPORTS) return;
    int i = reports.n++;
    reports.size[i] = o->size;
    reports.status[i] = o->status;
    reports.error[i] = o->error;
    reports.parsed[i] = o->msg != NULL;
    reports.keep[i] = o->keep_alive;
    reports.in[i] = o->bytes_in;
    reports.out[i] = o->bytes_out;
    reports.body[i] = o->body_bytes_out;
    size_t l = o->line_len < 63 ? o->line_len : 63;
    memcpy(reports.line[i], o->line, l);
    reports.line[i][l] = '\0';
}

/* ---- handlers ---- */

static char body_seen[1 << 20];
static size_t body_seen_len;
static int handler_calls;

/* cshw_request_body_whole, as a POST's handler saw it: 1 stored in
 * memory, 2 in a file, -1 not the bytes sent; its length */
static int whole_where;
static uint64_t whole_len;

static void check_whole(cshw_request *req)
{
    const char *data;
    int fd;
    uint64_t len;
    whole_where = -1;
    if (cshw_request_body_whole(req, &data, &fd, &len) != 1) return;
    whole_len = len;
    for (uint64_t i = 0; i < len; i++) {
        char c;
        if (fd >= 0 ? pread(fd, &c, 1, (off_t)i) != 1 : (c = data[i], 0)) return;
        if (c != (char)('a' + i % 26)) return;
    }
    whole_where = fd >= 0 ? 2 : 1;
}

/* Echoes the body's length and a checksum, after reading all of it. */
static void read_all(cshw_context *ctx)
{
    handler_calls++;
    cshw_request *req = cshw_context_request(ctx);
    /* the body of the last POST: the GET after it must not hide it */
    int post = strcmp(cshw_request_method(req), "POST") == 0;
    if (post) body_seen_len = 0;
    if (post) check_whole(req);
    size_t got = 0;
    ssize_t n;
    char buf[1000];
    while ((n = cshw_request_read(req, buf, sizeof buf)) > 0) {
        if (post && got + (size_t)n <= sizeof body_seen) memcpy(body_seen + got, buf, (size_t)n);
        got += (size_t)n;
    }
    if (post) body_seen_len = got;
    cshw_response *res = cshw_context_response(ctx);
    if (n < 0) {
        /* a handler that tries to call a failed body a success */
        cshw_response_set_status(res, 200);
        cshw_response_puts(res, "fine");
        return;
    }
    cshw_response_printf(res, "%zu", got);
}

static void hello(cshw_context *ctx)
{
    handler_calls++;
    cshw_response_puts(cshw_context_response(ctx), "hello");
}

/* Ready requests that stream their body (cshw_exchange_streams), in serve. */
static int streamed_runs;

/* Serves `in` through an exchange, `piece` bytes at a time (0: whole),
 * as cshw_memory_serve does, with the reports collected. */
static void serve(tw_run *run, const char *in, size_t len, size_t piece, const cshw_options *o,
                  cshw_handler h, int (*streams)(void *, const char *, const csh_message *))
{
    memset(&reports, 0, sizeof reports);
    handler_calls = 0;
    cshw_options defaults;
    cshw_options_init(&defaults);
    cshw_exchange_config cfg;
    cshw_exchange_config_init(&cfg);
    cfg.web = o ? o : &defaults;
    cfg.handler = h;
    cfg.report = on_report;
    cfg.streams = streams;
    cshw_memory *m = cshw_memory_new(in, len, piece);
    cshw_exchange *x = cshw_exchange_new(&cfg);
    cshw_context *ctx = cshw_context_new(cfg.web);
    assert_non_null(m);
    assert_non_null(x);
    assert_non_null(ctx);
    const cshw_transport *t = cshw_memory_transport(m);
    int runs = 0;
    streamed_runs = 0;
    for (int guard = 0; guard < 10000000; guard++) {
        int r = cshw_exchange_input(x, t);
        if (r == CSHW_EXCHANGE_WANT_INPUT) continue;
        if (r != CSHW_EXCHANGE_READY) break;
        runs++;
        streamed_runs += cshw_exchange_streams(x);
        if (cshw_exchange_run(x, ctx, t) != CSHW_EXCHANGE_NEXT) break;
    }
    (void)len;
    tw_collect(run, m, in); /* the output, parsed as responses */
    run->served = runs;
    cshw_context_free(ctx);
    cshw_exchange_free(x);
    cshw_memory_free(m);
}

static void serve_str(tw_run *run, const char *in, size_t piece)
{
    serve(run, in, strlen(in), piece, NULL, hello, NULL);
}

/* ---- every kind of answer is reported, with its real status ---- */

static void test_reports(void **state)
{
    (void)state;
    tw_run run;
    /* two pipelined requests: two reports, the bytes of each */
    static const char two[] =
        "GET /a HTTP/1.1\r\nHost: h\r\n\r\nGET /b HTTP/1.1\r\nHost: h\r\n\r\n";
    serve_str(&run, two, 0);
    assert_int_equal(reports.n, 2);
    assert_int_equal(reports.status[0], 200);
    assert_int_equal(reports.status[1], 200);
    assert_int_equal(reports.in[0], 28);
    assert_int_equal(reports.out[0] + reports.out[1], run.out_len);
    /* of those, the body's: "hello", after each head */
    assert_int_equal(reports.body[0], 5);
    assert_int_equal(reports.body[1], 5);
    assert_string_equal(reports.line[1], "GET /b HTTP/1.1");
    assert_int_equal(reports.keep[0], 1);
    tw_free(&run);

    /* a head that does not parse: reported, its request line kept */
    serve_str(&run, "GET /x HTTP/1.1\r\nHost: h\r\nBad Name: v\r\n\r\n", 0);
    assert_int_equal(reports.n, 1);
    assert_int_equal(reports.status[0], 400);
    assert_int_equal(reports.parsed[0], 0);
    assert_string_equal(reports.line[0], "GET /x HTTP/1.1");
    assert_int_equal(run.r[0].status, 400);
    assert_non_null(tw_field(&run.r[0], "date")); /* RFC 9110 §6.6.1 */
    assert_string_equal(tw_field(&run.r[0], "connection"), "close");
    assert_int_equal(handler_calls, 0);
    /* the error page is its body */
    assert_int_equal(reports.body[0],
                     run.out_len - (size_t)(strstr(run.out, "\r\n\r\n") + 4 - run.out));
    tw_free(&run);

    /* 100 Continue is a head too: the body's bytes are the answer's body */
    serve_str(&run,
              "POST /c HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n"
              "Expect: 100-continue\r\n\r\nabc",
              0);
    assert_int_equal(reports.n, 1);
    assert_int_equal(reports.status[0], 200);
    assert_int_equal(reports.body[0], 5);
    assert_true(reports.out[0] > 5 + 25);
    tw_free(&run);
}

static void form_reader(cshw_context *ctx)
{
    handler_calls++;
    /* like most handlers, it leaves a form error to the toolkit's answer */
    cshw_request *req = cshw_context_request(ctx);
    cshw_request_form(req);
    if (cshw_request_form_error(req)) return;
    cshw_response_puts(cshw_context_response(ctx), "form read");
}

static void test_toolkit_error_reported(void **state)
{
    (void)state;
    cshw_options o;
    cshw_options_init(&o);
    o.max_form_parts = 2;
    static const char form[] =
        "POST /f HTTP/1.1\r\nHost: h\r\nContent-Type: application/x-www-form-urlencoded\r\n"
        "Content-Length: 11\r\n\r\na=1&b=2&c=3";
    tw_run run;
    serve(&run, form, sizeof form - 1, 0, &o, form_reader, NULL);
    assert_int_equal(handler_calls, 1);
    assert_int_equal(run.r[0].status, 413);
    assert_int_equal(reports.n, 1);
    assert_int_equal(reports.status[0], 413);
    tw_free(&run);
}

/* ---- the body, read before the handler ---- */

static char *make_post(size_t body_len, int chunked, size_t *out_len)
{
    size_t cap = body_len * 2 + 4096;
    char *p = malloc(cap);
    assert_non_null(p);
    size_t n;
    if (chunked) {
        n = (size_t)sprintf(p, "POST /u HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n");
        size_t done = 0, k = 0;
        while (done < body_len) {
            size_t c = 1 + (k++ * 7919) % 5000;
            if (c > body_len - done) c = body_len - done;
            n += (size_t)sprintf(p + n, "%zx\r\n", c);
            for (size_t i = 0; i < c; i++) p[n++] = (char)('a' + (done + i) % 26);
            p[n++] = '\r';
            p[n++] = '\n';
            done += c;
        }
        n += (size_t)sprintf(p + n, "0\r\n\r\n");
    } else {
        n = (size_t)sprintf(p, "POST /u HTTP/1.1\r\nHost: h\r\nContent-Length: %zu\r\n\r\n",
                            body_len);
        for (size_t i = 0; i < body_len; i++) p[n++] = (char)('a' + i % 26);
    }
    n += (size_t)sprintf(p + n, "GET /after HTTP/1.1\r\nHost: h\r\n\r\n");
    *out_len = n;
    return p;
}

static void check_body(size_t len)
{
    assert_int_equal(body_seen_len, len);
    for (size_t i = 0; i < len; i++)
        if (body_seen[i] != (char)('a' + i % 26)) fail_msg("byte %zu of %zu differs", i, len);
}

/* In memory up to body_buffer, in a temporary file beyond: the handler
 * reads the same bytes, and the pipelined request after the body is
 * served; Content-Length and chunked, whole and in pieces. */
static void test_body_memory_and_file(void **state)
{
    (void)state;
    cshw_options o;
    cshw_options_init(&o);
    o.body_buffer = 4096;
    static const size_t sizes[] = {0, 1, 4095, 4096, 4097, 200000};
    static const size_t pieces[] = {0, 1, 7, 4096};
    for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++) {
        for (int chunked = 0; chunked <= 1; chunked++) {
            for (size_t pi = 0; pi < sizeof pieces / sizeof *pieces; pi++) {
                if (pieces[pi] == 1 && sizes[si] > 5000) continue; /* slow, and 7 covers it */
                size_t n;
                char *in = make_post(sizes[si], chunked, &n);
                tw_run run;
                serve(&run, in, n, pieces[pi], &o, read_all, NULL);
                check_body(sizes[si]);
                /* the stored body, whole, where the exchange put it */
                assert_int_equal(whole_where, sizes[si] > 4096 ? 2 : 1);
                assert_int_equal(whole_len, sizes[si]);
                assert_int_equal(run.served, 2);
                assert_int_equal(run.n, 2);
                char want[32];
                snprintf(want, sizeof want, "%zu", sizes[si]);
                assert_string_equal(run.r[0].body, want);
                assert_int_equal(reports.status[0], 200);
                assert_int_equal(reports.in[0], n - 32); /* all but the pipelined GET */
                tw_free(&run);
                free(in);
            }
        }
    }
}

/* RFC 9110 §15.5.14: past max_request_body, 413: before any body byte
 * when Content-Length says so, as soon as a chunked body crosses it. */
static void test_body_limit(void **state)
{
    (void)state;
    cshw_options o;
    cshw_options_init(&o);
    o.max_request_body = 1000;
    tw_run run;
    /* 4294967301 bytes announced, none sent: answered at once */
    static const char big[] = "POST /u HTTP/1.1\r\nHost: h\r\nContent-Length: 4294967301\r\n\r\n";
    serve(&run, big, sizeof big - 1, 0, &o, read_all, NULL);
    assert_int_equal(handler_calls, 0);
    assert_int_equal(run.r[0].status, 413);
    assert_string_equal(tw_field(&run.r[0], "connection"), "close");
    assert_int_equal(reports.status[0], 413);
    assert_int_equal(reports.error[0], CSHW_E_BODY_LIMIT);
    tw_free(&run);
    /* the default limit, 16 MiB, answers the same */
    serve(&run, big, sizeof big - 1, 0, NULL, read_all, NULL);
    assert_int_equal(run.r[0].status, 413);
    tw_free(&run);
    /* exactly the limit is fine; one byte more is not */
    size_t n;
    char *in = make_post(1000, 1, &n);
    serve(&run, in, n, 0, &o, read_all, NULL);
    assert_int_equal(run.r[0].status, 200);
    tw_free(&run);
    free(in);
    in = make_post(1001, 1, &n);
    for (size_t piece = 0; piece <= 1; piece++) {
        serve(&run, in, n, piece, &o, read_all, NULL);
        assert_int_equal(handler_calls, 0);
        assert_int_equal(run.n, 1);
        assert_int_equal(run.r[0].status, 413);
        tw_free(&run);
    }
    free(in);
    /* 0: no limit */
    o.max_request_body = 0;
    in = make_post(5000, 0, &n);
    serve(&run, in, n, 0, &o, read_all, NULL);
    assert_int_equal(run.r[0].status, 200);
    tw_free(&run);
    free(in);
}

/* ---- the request checks (RFC 9110, 9112) ---- */

static void test_request_checks(void **state)
{
    (void)state;
    static const struct {
        const char *in;
        int status;
    } cases[] = {
        {"GET / HTTP/1.1\r\nHost: a:b1\r\n\r\n", 400},               /* RFC 9110 §7.2 */
        {"GET / HTTP/1.1\r\nHost: [::1\r\n\r\n", 400},               /* RFC 3986 §3.2.2 */
        {"GET http:///x HTTP/1.1\r\nHost: h\r\n\r\n", 400},          /* RFC 9112 §3.2.2 */
        {"GET http://user@host/x HTTP/1.1\r\nHost: h\r\n\r\n", 400}, /* RFC 9110 §4.2.4 */
        {"GET /a#frag HTTP/1.1\r\nHost: h\r\n\r\n", 400},            /* RFC 9112 §3.2 */
        {"GET /a%zz HTTP/1.1\r\nHost: h\r\n\r\n", 400},              /* RFC 3986 §2.1 */
        {"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n",
         501}, /* RFC 9112 §6.1 */
        {"POST / HTTP/1.1\r\nHost: h\r\nExpect: 200-ok\r\nContent-Length: 1\r\n\r\nx",
         417}, /* RFC 9110 §10.1.1 */
        /* RFC 9110 §9.3.2: the exchange's own answer to HEAD has no content
         * (found by fuzz_exchange: the page followed the head) */
        {"HEAD / HTTP/1.1\r\nHost: h\r\nExpect: 100-conb\x80\r\n\r\n"
         "GET / HTTP/1.1\r\nHost: h\r\n\r\n",
         417},
        /* accepted */
        {"GET / HTTP/1.1\r\nHost: [::1]:8080\r\n\r\n", 200},
        {"GET http://h:80/x HTTP/1.1\r\nHost: h\r\n\r\n", 200},
        {"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: , chunked\r\n\r\n0\r\n\r\n",
         200}, /* RFC 9110 §5.6.1: empty list elements */
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        for (size_t piece = 0; piece <= 1; piece++) {
            tw_run run;
            serve_str(&run, cases[i].in, piece);
            if (run.n != 1 || run.r[0].status != cases[i].status || run.error)
                fail_msg("case %zu piece %zu: %zu responses, status %d", i, piece, run.n,
                         run.n ? run.r[0].status : 0);
            assert_int_equal(handler_calls, cases[i].status == 200);
            assert_int_equal(reports.status[0], cases[i].status);
            tw_free(&run);
        }
    }
}

/* ---- streaming routes ---- */

static int stream_all(void *arg, const char *head, const csh_message *msg)
{
    (void)arg;
    (void)head;
    (void)msg;
    return 1;
}

/* The handler reads the body itself; a body that fails while it reads is
 * never answered 2xx, even when the handler says 200. */
static void test_streaming(void **state)
{
    (void)state;
    size_t n;
    char *in = make_post(30000, 1, &n);
    for (size_t piece = 0; piece <= 7; piece += 7) {
        tw_run run;
        serve(&run, in, n, piece, NULL, read_all, stream_all);
        check_body(30000);
        assert_int_equal(run.served, 2);
        assert_string_equal(run.r[0].body, "30000");
        /* the POST streams; the GET after it has no body to stream */
        assert_int_equal(streamed_runs, 1);
        tw_free(&run);
        /* without the predicate the same body is read before the handler */
        serve(&run, in, n, piece, NULL, read_all, NULL);
        assert_string_equal(run.r[0].body, "30000");
        assert_int_equal(streamed_runs, 0);
        tw_free(&run);
    }
    free(in);
    static const char bad[] = "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
                              "5\r\nhello\r\nzz\r\n";
    for (size_t piece = 0; piece <= 1; piece++) {
        tw_run run;
        serve(&run, bad, sizeof bad - 1, piece, NULL, read_all, stream_all);
        assert_int_equal(handler_calls, 1);
        assert_int_equal(run.r[0].status, 400);
        assert_int_equal(reports.status[0], 400);
        assert_int_equal(reports.error[0], CSHW_E_BAD_BODY);
        assert_string_equal(tw_field(&run.r[0], "connection"), "close");
        tw_free(&run);
    }
}

/* RFC 9110 §15.5.14: a streamed body is held to max_request_body as a
 * stored one is: a chunked body that crosses it is 413, the handler's
 * read fails at the crossing (it never gets a byte past the limit), and
 * the connection closes; one at the limit is read whole. */
static void test_streaming_body_limit(void **state)
{
    (void)state;
    cshw_options o;
    cshw_options_init(&o);
    o.max_request_body = 20000;
    for (size_t piece = 0; piece <= 7; piece += 7) {
        size_t n;
        char *in = make_post(20001, 1, &n);
        tw_run run;
        serve(&run, in, n, piece, &o, read_all, stream_all);
        assert_int_equal(handler_calls, 1);
        assert_int_equal(run.r[0].status, 413);
        assert_int_equal(reports.status[0], 413);
        assert_int_equal(reports.error[0], CSHW_E_BODY_LIMIT);
        assert_string_equal(tw_field(&run.r[0], "connection"), "close");
        assert_true(body_seen_len <= 20000);
        tw_free(&run);
        free(in);
        in = make_post(20000, 1, &n);
        serve(&run, in, n, piece, &o, read_all, stream_all);
        assert_string_equal(run.r[0].body, "20000");
        tw_free(&run);
        free(in);
    }
}

/* ---- the same bytes, whole or in any pieces, give the same answers ---- */

static void test_pieces_same_output(void **state)
{
    (void)state;
    static const char in[] =
        "GET /a HTTP/1.1\r\nHost: h\r\n\r\n"
        "POST /u HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nhello"
        "POST /u HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n"
        "HEAD /a HTTP/1.1\r\nHost: h\r\n\r\n"
        "GET /bad HTTP/1.1\r\nHost: h\r\nX : y\r\n\r\n";
    tw_run whole;
    serve(&whole, in, sizeof in - 1, 0, NULL, read_all, NULL);
    assert_int_equal(whole.n, 5);
    assert_int_equal(whole.r[4].status, 400);
    for (size_t piece = 1; piece < 40; piece++) {
        tw_run run;
        serve(&run, in, sizeof in - 1, piece, NULL, read_all, NULL);
        assert_int_equal(run.n, whole.n);
        for (size_t i = 0; i < run.n; i++) {
            assert_int_equal(run.r[i].status, whole.r[i].status);
            assert_int_equal(run.r[i].body_len, whole.r[i].body_len);
            assert_memory_equal(run.r[i].body, whole.r[i].body, run.r[i].body_len);
        }
        tw_free(&run);
    }
    tw_free(&whole);
}

/* The exchange keeps one body reader for the connection and resets it for
 * each body: bodies of either framing, in any order, each read as if the
 * reader were new, whole and in pieces. */
static void test_bodies_one_reader(void **state)
{
    (void)state;
    static const char in[] = "POST /u HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
                             "3\r\nabc\r\n2;x=y\r\nde\r\n0\r\nT: v\r\n\r\n"
                             "POST /u HTTP/1.1\r\nHost: h\r\nContent-Length: 7\r\n\r\nfghijkl"
                             "GET /a HTTP/1.1\r\nHost: h\r\n\r\n"
                             "POST /u HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
                             "1\r\nm\r\n0\r\n\r\n"
                             "POST /u HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\nno"
                             "POST /u HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
                             "4\r\npqrs\r\n0\r\n\r\n";
    static const char *const want[] = {"5", "7", "0", "1", "2", "4"};
    for (size_t piece = 0; piece < 24; piece++) {
        tw_run run;
        serve(&run, in, sizeof in - 1, piece, NULL, read_all, NULL);
        assert_int_equal(run.n, 6);
        for (size_t i = 0; i < 6; i++) {
            assert_int_equal(run.r[i].status, 200);
            assert_int_equal(run.r[i].body_len, strlen(want[i]));
            assert_memory_equal(run.r[i].body, want[i], run.r[i].body_len);
        }
        /* the last body read is the last POST's */
        assert_int_equal(body_seen_len, 4);
        assert_memory_equal(body_seen, "pqrs", 4);
        tw_free(&run);
    }
}

/* ---- deadlines and refusals ---- */

/* exchange.h: the config's options and limits are read by their sizes: a
 * bad one builds nothing; limits of the first version's size, alone in
 * their allocation (ASan sees a read past them), are obeyed. */
static void test_config_sizes(void **state)
{
    (void)state;
    cshw_exchange_config cfg;
    cshw_exchange_config_init(&cfg);
    cfg.handler = hello;
    cshw_options web;
    cshw_options_init(&web);
    web.size = 0;
    cfg.web = &web;
    assert_null(cshw_exchange_new(&cfg));
    cshw_memory *m = cshw_memory_new("", 0, 0);
    assert_int_equal(cshw_exchange_refuse(&cfg, cshw_memory_transport(m), 503, NULL),
                     CSHW_E_INVALID_OPTION);
    cshw_memory_free(m);
    cfg.web = NULL;
    csh_limits full;
    csh_limits_init(&full);
    full.size = 0;
    cfg.limits = &full;
    assert_null(cshw_exchange_new(&cfg));

    csh_limits_init(&full);
    full.max_fields = 1;
    full.size = CSH_LIMITS_SIZE_0_2;
    csh_limits *old = malloc(CSH_LIMITS_SIZE_0_2);
    assert_non_null(old);
    memcpy(old, &full, CSH_LIMITS_SIZE_0_2);
    cfg.limits = old;
    static const char req[] = "GET / HTTP/1.1\r\nHost: h\r\nA: 1\r\n\r\n";
    m = cshw_memory_new(req, sizeof req - 1, 0);
    cshw_exchange *x = cshw_exchange_new(&cfg);
    assert_non_null(x);
    assert_int_equal(cshw_exchange_input(x, cshw_memory_transport(m)), CSHW_EXCHANGE_CLOSE);
    size_t n;
    const char *out = cshw_memory_output(m, &n);
    assert_memory_equal(out, "HTTP/1.1 431 ", 13); /* two fields, one allowed */
    cshw_exchange_free(x);
    cshw_memory_free(m);
    free(old);
}

/* The config itself is read by its size: one of the first version's size,
 * alone in its allocation (ASan sees a read past it), runs its handler
 * and reports, each outcome with the size of the struct the toolkit
 * filled; a newer caller's larger one has what this library does not know
 * zeroed by the init and ignored; a size below the first version's (a
 * struct memset or initialized without the init) builds nothing. */
static void test_config_own_size(void **state)
{
    (void)state;
    static const char req[] = "GET / HTTP/1.1\r\nHost: h\r\n\r\n";
    memset(&reports, 0, sizeof reports);
    handler_calls = 0;
    /* written and read by offset: this build's struct is larger */
    unsigned char *old = malloc(CSHW_EXCHANGE_CONFIG_SIZE_0_3);
    assert_non_null(old);
    cshw_exchange_config_init_sized((cshw_exchange_config *)(void *)old,
                                    CSHW_EXCHANGE_CONFIG_SIZE_0_3);
    size_t size;
    memcpy(&size, old + offsetof(cshw_exchange_config, size), sizeof size);
    assert_int_equal(size, CSHW_EXCHANGE_CONFIG_SIZE_0_3);
    cshw_handler h;
    memcpy(&h, old + offsetof(cshw_exchange_config, handler), sizeof h);
    assert_null(h);
    h = hello;
    memcpy(old + offsetof(cshw_exchange_config, handler), &h, sizeof h);
    void (*rep)(void *, const cshw_exchange_outcome *) = on_report;
    memcpy(old + offsetof(cshw_exchange_config, report), &rep, sizeof rep);
    cshw_memory *m = cshw_memory_new(req, sizeof req - 1, 0);
    cshw_exchange *x = cshw_exchange_new((cshw_exchange_config *)(void *)old);
    free(old); /* copied by cshw_exchange_new */
    assert_non_null(x);
    cshw_context *ctx = cshw_context_new(NULL);
    assert_non_null(ctx);
    const cshw_transport *t = cshw_memory_transport(m);
    assert_int_equal(cshw_exchange_input(x, t), CSHW_EXCHANGE_READY);
    assert_int_equal(cshw_exchange_run(x, ctx, t), CSHW_EXCHANGE_NEXT);
    assert_int_equal(handler_calls, 1);
    assert_int_equal(reports.n, 1);
    assert_int_equal(reports.status[0], 200);
    assert_int_equal(reports.size[0], sizeof(cshw_exchange_outcome));
    cshw_exchange_free(x);
    cshw_memory_free(m);

    size_t big[sizeof(cshw_exchange_config) / sizeof(size_t) + 4];
    memset(big, 0xff, sizeof big);
    cshw_exchange_config *newer = (cshw_exchange_config *)(void *)big;
    cshw_exchange_config_init_sized(newer, sizeof big);
    assert_int_equal(newer->size, sizeof big);
    for (size_t i = sizeof(cshw_exchange_config) / sizeof(size_t); i < sizeof big / sizeof big[0];
         i++)
        assert_int_equal(big[i], 0);
    big[sizeof big / sizeof big[0] - 1] = 1; /* a newer field this library ignores */
    newer->handler = hello;
    newer->report = on_report;
    m = cshw_memory_new(req, sizeof req - 1, 0);
    t = cshw_memory_transport(m);
    x = cshw_exchange_new(newer);
    assert_non_null(x);
    assert_int_equal(cshw_exchange_input(x, t), CSHW_EXCHANGE_READY);
    assert_int_equal(cshw_exchange_run(x, ctx, t), CSHW_EXCHANGE_NEXT);
    assert_int_equal(handler_calls, 2);
    assert_int_equal(reports.n, 2);
    assert_int_equal(cshw_exchange_refuse(newer, t, 503, NULL), 0);
    assert_int_equal(reports.n, 3);
    assert_int_equal(reports.status[2], 503);
    assert_int_equal(reports.size[2], sizeof(cshw_exchange_outcome));
    cshw_exchange_free(x);

    cshw_exchange_config bad;
    cshw_exchange_config_init(&bad);
    assert_int_equal(bad.size, sizeof bad);
    bad.handler = hello;
    bad.report = on_report;
    bad.size = CSHW_EXCHANGE_CONFIG_SIZE_0_3 - 1;
    assert_null(cshw_exchange_new(&bad));
    assert_int_equal(cshw_exchange_refuse(&bad, t, 503, NULL), CSHW_E_INVALID_OPTION);
    memset(&bad, 0, sizeof bad);
    bad.handler = hello;
    assert_null(cshw_exchange_new(&bad));
    assert_int_equal(reports.n, 3);
    cshw_context_free(ctx);
    cshw_memory_free(m);
}

/* transport.h: the transport and its ops are read by their sizes. Both of
 * the first version's size, each alone in its allocation (ASan sees a
 * read past them), serve a request; a newer maker's larger ones, with
 * bytes this library does not know, too; a size below the first
 * version's, of either, is -EINVAL from every function that takes one. */
static void test_transport_sizes(void **state)
{
    (void)state;
    static const char req[] = "GET / HTTP/1.1\r\nHost: h\r\n\r\n";
    handler_calls = 0;
    cshw_exchange_config cfg;
    cshw_exchange_config_init(&cfg);
    cfg.handler = hello;
    cshw_context *ctx = cshw_context_new(NULL);
    assert_non_null(ctx);

    cshw_memory *m = cshw_memory_new(req, sizeof req - 1, 0);
    const cshw_transport *mt = cshw_memory_transport(m);
    /* the ops of the first version's size, alone in their allocation:
     * written by offset, this build's struct being larger */
    unsigned char *ops_bytes = malloc(CSHW_TRANSPORT_OPS_SIZE_0_3);
    cshw_transport_ops *ops = (cshw_transport_ops *)(void *)ops_bytes;
    cshw_transport *t = malloc(CSHW_TRANSPORT_SIZE_0_3);
    assert_non_null(ops);
    assert_non_null(t);
    memcpy(ops_bytes, mt->ops, CSHW_TRANSPORT_OPS_SIZE_0_3);
    size_t old_size = CSHW_TRANSPORT_OPS_SIZE_0_3;
    memcpy(ops_bytes + offsetof(cshw_transport_ops, size), &old_size, sizeof old_size);
    memcpy(t, mt, CSHW_TRANSPORT_SIZE_0_3);
    t->size = CSHW_TRANSPORT_SIZE_0_3;
    t->ops = ops;
    cshw_exchange *x = cshw_exchange_new(&cfg);
    assert_non_null(x);
    assert_int_equal(cshw_exchange_input(x, t), CSHW_EXCHANGE_READY);
    assert_int_equal(cshw_exchange_run(x, ctx, t), CSHW_EXCHANGE_NEXT);
    assert_int_equal(handler_calls, 1);
    size_t n;
    const char *out = cshw_memory_output(m, &n);
    assert_memory_equal(out, "HTTP/1.1 200 ", 13);
    cshw_exchange_free(x);
    cshw_memory_free(m);
    free(t);
    free(ops);

    struct {
        cshw_transport_ops ops;
        uint64_t newer[4];
    } big_ops;
    struct {
        cshw_transport t;
        uint64_t newer[4];
    } big_t;
    m = cshw_memory_new(req, sizeof req - 1, 0);
    mt = cshw_memory_transport(m);
    memset(&big_ops, 0xff, sizeof big_ops);
    memset(&big_t, 0xff, sizeof big_t);
    big_ops.ops = *mt->ops;
    big_ops.ops.size = sizeof big_ops;
    big_t.t = *mt;
    big_t.t.size = sizeof big_t;
    big_t.t.ops = &big_ops.ops;
    x = cshw_exchange_new(&cfg);
    assert_non_null(x);
    assert_int_equal(cshw_exchange_input(x, &big_t.t), CSHW_EXCHANGE_READY);
    assert_int_equal(cshw_exchange_run(x, ctx, &big_t.t), CSHW_EXCHANGE_NEXT);
    assert_int_equal(handler_calls, 2);

    cshw_transport bad = *mt;
    bad.size = CSHW_TRANSPORT_SIZE_0_3 - 1;
    assert_int_equal(cshw_exchange_input(x, &bad), -EINVAL);
    assert_int_equal(cshw_exchange_run(x, ctx, &bad), -EINVAL);
    assert_int_equal(cshw_exchange_expire(x, &bad), -EINVAL);
    assert_int_equal(cshw_exchange_refuse(&cfg, &bad, 503, NULL), -EINVAL);
    cshw_transport_ops bad_ops = *mt->ops;
    bad_ops.size = 0;
    bad = *mt;
    bad.ops = &bad_ops;
    assert_int_equal(cshw_exchange_input(x, &bad), -EINVAL);
    assert_int_equal(cshw_exchange_refuse(&cfg, &bad, 503, NULL), -EINVAL);
    cshw_exchange_free(x);
    cshw_context_free(ctx);
    cshw_memory_free(m);
}

static void test_expire_and_refuse(void **state)
{
    (void)state;
    memset(&reports, 0, sizeof reports);
    cshw_exchange_config cfg;
    cshw_exchange_config_init(&cfg);
    cfg.handler = hello;
    cfg.report = on_report;
    /* a head in progress when its deadline passes: 408 (RFC 9110 §15.5.9) */
    static const char part[] = "GET / HTTP/1.1\r\nHo";
    cshw_memory *m = cshw_memory_new(part, sizeof part - 1, 0);
    cshw_exchange *x = cshw_exchange_new(&cfg);
    const cshw_transport *t = cshw_memory_transport(m);
    assert_int_equal(cshw_exchange_input(x, t), CSHW_EXCHANGE_WANT_INPUT);
    assert_int_equal(cshw_exchange_phase_of(x), CSHW_PHASE_HEAD);
    assert_int_equal(cshw_exchange_expire(x, t), CSHW_EXCHANGE_CLOSE);
    size_t n;
    const char *out = cshw_memory_output(m, &n);
    assert_memory_equal(out, "HTTP/1.1 408 ", 13);
    assert_int_equal(reports.n, 1);
    assert_int_equal(reports.status[0], 408);
    cshw_exchange_free(x);
    cshw_memory_free(m);

    /* between requests: nothing is sent, nothing reported */
    memset(&reports, 0, sizeof reports);
    m = cshw_memory_new("", 0, 0);
    x = cshw_exchange_new(&cfg);
    t = cshw_memory_transport(m);
    assert_int_equal(cshw_exchange_phase_of(x), CSHW_PHASE_IDLE);
    assert_int_equal(cshw_exchange_expire(x, t), CSHW_EXCHANGE_CLOSE);
    cshw_memory_output(m, &n);
    assert_int_equal(n, 0);
    assert_int_equal(reports.n, 0);
    cshw_exchange_free(x);

    /* a connection refused (503 beyond max_connections) is reported too */
    assert_int_equal(cshw_exchange_refuse(&cfg, t, 503, "too many"), 0);
    out = cshw_memory_output(m, &n);
    assert_memory_equal(out, "HTTP/1.1 503 ", 13);
    assert_non_null(strstr(out, "\r\nDate: "));
    assert_non_null(strstr(out, "too many"));
    assert_int_equal(reports.n, 1);
    assert_int_equal(reports.status[0], 503);
    assert_int_equal(reports.out[0], n);
    assert_int_equal(reports.body[0], n - (size_t)(strstr(out, "\r\n\r\n") + 4 - out));
    cshw_memory_free(m);

    /* no handler and no router: refused */
    cfg.handler = NULL;
    assert_null(cshw_exchange_new(&cfg));
    cshw_exchange_free(NULL);
}

/* A ready request whose handler cannot run (no thread free and the
 * queue full, say) is answered 503 without it: RFC 9110 §15.6.4 (0.4.1). */
static void test_decline(void **state)
{
    (void)state;
    memset(&reports, 0, sizeof reports);
    handler_calls = 0;
    cshw_exchange_config cfg;
    cshw_exchange_config_init(&cfg);
    cfg.handler = hello;
    cfg.report = on_report;
    static const char req[] = "HEAD /slow?x=1 HTTP/1.1\r\nHost: a\r\n\r\n"
                              "GET /next HTTP/1.1\r\nHost: a\r\n\r\n";
    cshw_memory *m = cshw_memory_new(req, sizeof req - 1, 0);
    cshw_exchange *x = cshw_exchange_new(&cfg);
    const cshw_transport *t = cshw_memory_transport(m);
    /* nothing ready yet: no request, nothing to decline */
    assert_null(cshw_exchange_request(x, NULL));
    assert_int_equal(cshw_exchange_decline(x, t, CSHW_E_OVERLOADED), CSHW_E_NOT_ACTIVE);
    assert_int_equal(cshw_exchange_input(x, t), CSHW_EXCHANGE_READY);
    const char *head = NULL;
    const csh_message *msg = cshw_exchange_request(x, &head);
    assert_non_null(msg);
    assert_int_equal(msg->method, CSH_METHOD_HEAD);
    assert_memory_equal(head + msg->target.off, "/slow?x=1", msg->target.len);
    /* errors without an error status are not answers */
    assert_int_equal(cshw_exchange_decline(x, t, 0), -EINVAL);
    assert_int_equal(cshw_exchange_decline(NULL, t, CSHW_E_OVERLOADED), -EINVAL);
    assert_int_equal(cshw_exchange_decline(x, t, CSHW_E_OVERLOADED), CSHW_EXCHANGE_CLOSE);
    assert_int_equal(handler_calls, 0);
    size_t n;
    const char *out = cshw_memory_output(m, &n);
    assert_memory_equal(out, "HTTP/1.1 503 ", 13);
    assert_non_null(strstr(out, "\r\nConnection: close\r\n"));
    /* HEAD: the head only (RFC 9110 §9.3.2) */
    assert_memory_equal(out + n - 4, "\r\n\r\n", 4);
    assert_int_equal(reports.n, 1);
    assert_int_equal(reports.status[0], 503);
    assert_int_equal(reports.error[0], CSHW_E_OVERLOADED);
    assert_int_equal(cshw_error_status(CSHW_E_OVERLOADED), 503);
    /* the connection ends: the pipelined request is not read */
    assert_int_equal(cshw_exchange_phase_of(x), CSHW_PHASE_CLOSED);
    assert_null(cshw_exchange_request(x, NULL));
    assert_int_equal(cshw_exchange_decline(x, t, CSHW_E_OVERLOADED), CSHW_E_NOT_ACTIVE);
    cshw_exchange_free(x);
    cshw_memory_free(m);
}

/* ---- a handler that answers later (cshw_exchange_defer, 0.3.1) ---- */

/* ---- switching protocols (RFC 9110 §7.8, §15.2.2) ---- */

static cshw_exchange *switching_x; /* the exchange running switcher() */
static const char *switch_to;     /* the protocol switcher() asks for */
static int switch_result, write_after_switch;

static void switcher(cshw_context *ctx)
{
    cshw_response *res = cshw_context_response(ctx);
    cshw_response_set_header(res, "X-Side", "kept");
    cshw_response_set_header(res, "Upgrade", "replaced");
    switch_result = cshw_exchange_switch(switching_x, switch_to);
    if (switch_result == 0)
        write_after_switch = cshw_response_write(res, "x", 1);
    else
        cshw_response_send_error(res, cshw_error_status(switch_result));
}

/* One request through a new exchange: what run returned, the output. */
static int run_switch(const char *req, const char *protocol, cshw_memory **out_m,
                      cshw_exchange **out_x)
{
    memset(&reports, 0, sizeof reports);
    cshw_exchange_config cfg;
    cshw_exchange_config_init(&cfg);
    cfg.handler = switcher;
    cfg.report = on_report;
    cshw_memory *m = cshw_memory_new(req, strlen(req), 0);
    cshw_exchange *x = cshw_exchange_new(&cfg);
    const cshw_transport *t = cshw_memory_transport(m);
    cshw_context *ctx = cshw_context_new(NULL);
    switching_x = x;
    switch_to = protocol;
    switch_result = write_after_switch = 1;
    assert_int_equal(cshw_exchange_input(x, t), CSHW_EXCHANGE_READY);
    int r = cshw_exchange_run(x, ctx, t);
    cshw_context_free(ctx);
    *out_m = m;
    *out_x = x;
    return r;
}

static void test_switch(void **state)
{
    (void)state;
    cshw_memory *m;
    cshw_exchange *x;
    /* asked for (a version of) the protocol: 101, and the bytes that
     * followed the request are the new protocol's */
    int r = run_switch("GET /chat HTTP/1.1\r\nHost: a\r\nConnection: keep-alive, Upgrade\r\n"
                       "Upgrade: other, Echo/1\r\n\r\nhello, new protocol",
                       "echo", &m, &x);
    assert_int_equal(switch_result, 0);
    assert_int_equal(r, CSHW_EXCHANGE_SWITCHED);
    assert_int_equal(write_after_switch, CSHW_E_SWITCHED);
    size_t n;
    const char *out = cshw_memory_output(m, &n);
    char head[1024];
    assert_true(n < sizeof head);
    memcpy(head, out, n);
    head[n] = 0;
    assert_memory_equal(head, "HTTP/1.1 101 Switching Protocols\r\n", 34);
    assert_non_null(strstr(head, "\r\nX-Side: kept\r\n"));
    assert_non_null(strstr(head, "\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n"));
    /* a 101 has no body and no framing: the head is all */
    assert_null(strstr(head, "replaced"));
    assert_null(strstr(head, "Content-Length"));
    assert_null(strstr(head, "Transfer-Encoding"));
    assert_memory_equal(head + n - 4, "\r\n\r\n", 4);
    const char *left;
    size_t nl = cshw_exchange_leftover(x, &left);
    assert_int_equal(nl, 19);
    assert_memory_equal(left, "hello, new protocol", 19);
    assert_int_equal(reports.n, 1);
    assert_int_equal(reports.status[0], 101);
    assert_int_equal(cshw_exchange_phase_of(x), CSHW_PHASE_CLOSED);
    cshw_exchange_reset(x);
    assert_int_equal(cshw_exchange_leftover(x, &left), 0);
    cshw_exchange_free(x);
    cshw_memory_free(m);

    /* not asked for: 426, and the connection goes on as HTTP */
    static const char *not_asked[] = {
        "GET / HTTP/1.1\r\nHost: a\r\nUpgrade: echo\r\n\r\n",                      /* no Connection */
        "GET / HTTP/1.1\r\nHost: a\r\nConnection: upgrade\r\nUpgrade: other\r\n\r\n", /* another */
        "GET / HTTP/1.1\r\nHost: a\r\nConnection: upgrade\r\nUpgrade: echoes\r\n\r\n",
        "GET / HTTP/1.0\r\nHost: a\r\nConnection: upgrade\r\nUpgrade: echo\r\n\r\n", /* 1.0 */
        "GET / HTTP/1.1\r\nHost: a\r\n\r\n"};
    for (size_t i = 0; i < sizeof not_asked / sizeof *not_asked; i++) {
        r = run_switch(not_asked[i], "echo", &m, &x);
        assert_int_equal(switch_result, CSHW_E_UPGRADE_NOT_ASKED);
        assert_int_equal(reports.status[0], 426);
        assert_int_equal(cshw_exchange_leftover(x, &left), 0);
        assert_true(r == CSHW_EXCHANGE_NEXT || r == CSHW_EXCHANGE_CLOSE);
        cshw_exchange_free(x);
        cshw_memory_free(m);
    }
    /* a version asked for must be the client's */
    r = run_switch("GET / HTTP/1.1\r\nHost: a\r\nConnection: upgrade\r\nUpgrade: echo/1\r\n\r\n",
                   "echo/2", &m, &x);
    assert_int_equal(switch_result, CSHW_E_UPGRADE_NOT_ASKED);
    cshw_exchange_free(x);
    cshw_memory_free(m);
    /* a protocol that is not token["/"token] */
    r = run_switch("GET / HTTP/1.1\r\nHost: a\r\nConnection: upgrade\r\nUpgrade: echo\r\n\r\n",
                   "ec ho", &m, &x);
    assert_int_equal(switch_result, -EINVAL);
    cshw_exchange_free(x);
    cshw_memory_free(m);
    assert_int_equal(cshw_exchange_switch(NULL, "echo"), -EINVAL);
    /* outside a handler */
    cshw_exchange_config cfg;
    cshw_exchange_config_init(&cfg);
    cfg.handler = hello;
    x = cshw_exchange_new(&cfg);
    assert_int_equal(cshw_exchange_switch(x, "echo"), CSHW_E_NOT_ACTIVE);
    cshw_exchange_free(x);
}

static cshw_exchange *deferring_x; /* the exchange running deferring() */
static cshw_context *deferred_ctx;

static void deferring(cshw_context *ctx)
{
    handler_calls++;
    deferred_ctx = ctx;
    cshw_response_set_status(cshw_context_response(ctx), 201); /* kept until resumed */
    assert_int_equal(cshw_exchange_defer(deferring_x), 0);
}

static void answer_later(cshw_context *ctx, void *arg)
{
    assert_ptr_equal(ctx, deferred_ctx);
    assert_ptr_equal(cshw_context_current(), ctx);
    cshw_response_printf(cshw_context_response(ctx), "later %s %s",
                         cshw_request_path(cshw_context_request(ctx)), (const char *)arg);
}

static void defer_again(cshw_context *ctx, void *arg)
{
    (void)ctx;
    (void)arg;
    assert_int_equal(cshw_exchange_defer(deferring_x), 0);
}

/* The handler returns deferred: nothing is written or reported and the
 * pipelined request behind it waits; resumed, the continuation answers in
 * the same context (its request, its status), the exchange ends and
 * reports it and goes on with the next request. A continuation may defer
 * again. Outside a handler neither call applies (RFC 9112 §9.3.2: the
 * answers stay in the order of the requests). */
static void test_defer_and_resume(void **state)
{
    (void)state;
    memset(&reports, 0, sizeof reports);
    handler_calls = 0;
    cshw_exchange_config cfg;
    cshw_exchange_config_init(&cfg);
    cfg.handler = deferring;
    cfg.report = on_report;
    static const char in[] = "GET /a HTTP/1.1\r\nHost: x\r\n\r\nGET /b HTTP/1.1\r\nHost: x\r\n\r\n";
    cshw_memory *m = cshw_memory_new(in, sizeof in - 1, 0);
    cshw_exchange *x = deferring_x = cshw_exchange_new(&cfg);
    cshw_context *ctx = cshw_context_new(NULL);
    const cshw_transport *t = cshw_memory_transport(m);
    assert_int_equal(cshw_exchange_defer(x), CSHW_E_NOT_ACTIVE);
    assert_int_equal(cshw_exchange_resume(x, t, answer_later, "x"), CSHW_E_NOT_ACTIVE);

    assert_int_equal(cshw_exchange_input(x, t), CSHW_EXCHANGE_READY);
    assert_int_equal(cshw_exchange_run(x, ctx, t), CSHW_EXCHANGE_DEFERRED);
    size_t n;
    cshw_memory_output(m, &n);
    assert_int_equal(n, 0);
    assert_int_equal(reports.n, 0);
    assert_int_equal(cshw_exchange_run(x, ctx, t), CSHW_E_NOT_ACTIVE); /* still its request */
    assert_int_equal(cshw_exchange_defer(x), CSHW_E_NOT_ACTIVE);       /* no handler running */
    assert_int_equal(cshw_exchange_resume(x, t, defer_again, NULL), CSHW_EXCHANGE_DEFERRED);
    assert_int_equal(reports.n, 0);
    assert_int_equal(cshw_exchange_resume(x, t, answer_later, "one"), CSHW_EXCHANGE_NEXT);
    assert_int_equal(reports.n, 1);
    assert_int_equal(reports.status[0], 201);
    assert_true(reports.keep[0]);

    /* the pipelined request, deferred and resumed the same way */
    assert_int_equal(cshw_exchange_input(x, t), CSHW_EXCHANGE_READY);
    assert_int_equal(cshw_exchange_run(x, ctx, t), CSHW_EXCHANGE_DEFERRED);
    assert_int_equal(cshw_exchange_resume(x, t, answer_later, "two"), CSHW_EXCHANGE_NEXT);
    assert_int_equal(handler_calls, 2);
    assert_int_equal(reports.n, 2);
    tw_run run;
    memset(&run, 0, sizeof run);
    tw_collect(&run, m, in);
    assert_int_equal(run.n, 2);
    assert_int_equal(run.r[0].status, 201);
    assert_string_equal(run.r[0].body, "later /a one");
    assert_string_equal(run.r[1].body, "later /b two");
    tw_free(&run);
    cshw_context_free(ctx);
    cshw_exchange_free(x);
    cshw_memory_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reports),
        cmocka_unit_test(test_toolkit_error_reported),
        cmocka_unit_test(test_body_memory_and_file),
        cmocka_unit_test(test_body_limit),
        cmocka_unit_test(test_request_checks),
        cmocka_unit_test(test_streaming),
        cmocka_unit_test(test_streaming_body_limit),
        cmocka_unit_test(test_pieces_same_output),
        cmocka_unit_test(test_bodies_one_reader),
        cmocka_unit_test(test_config_sizes),
        cmocka_unit_test(test_config_own_size),
        cmocka_unit_test(test_transport_sizes),
        cmocka_unit_test(test_expire_and_refuse),
        cmocka_unit_test(test_decline),
        cmocka_unit_test(test_defer_and_resume),
        cmocka_unit_test(test_switch),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
