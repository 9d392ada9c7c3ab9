/* Trailer fields both ways (RFC 9110 §6.5): a response's trailers go in
 * the trailer section of a chunked body (RFC 9112 §7.1.2), named in the
 * head's Trailer field when known by then (RFC 9110 §6.6.2); the fields
 * that may not be trailers (§6.5.1) are refused; a request's trailer
 * section reaches the handler, kept apart from its header fields, whether
 * the exchange stored the body or the handler read it. Every response is
 * read back with libcshttp's parser (tw.h), trailers included. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "tw.h"

#define REQ(method, path, version, extra) method " " path " " version "\r\nHost: h\r\n" extra "\r\n"

/* What the handler does, set by each test. */
static struct {
    size_t body_len;       /* bytes of body written before the trailers */
    size_t late_len;       /* bytes written after them */
    const char *names[24]; /* trailers to add, up to a NULL name */
    const char *values[24];
    int set_length; /* declare the body's length first */
    int no_content; /* answer 204 */
    int send_file;  /* the body is a file, then a trailer */
    int gzip_type;  /* a type gzip compresses */
    int results[24];
    int nresults;
} plan;

static char pattern[1 << 18];

static void reset_plan(void)
{
    memset(&plan, 0, sizeof plan);
}

static void note(int r)
{
    if (plan.nresults < 24) plan.results[plan.nresults++] = r;
}

static void write_pattern(cshw_response *res, size_t from, size_t len)
{
    for (size_t done = 0; done < len;) {
        size_t n = len - done < 1000 ? len - done : 1000;
        note(cshw_response_write(res, pattern + from + done, n));
        done += n;
    }
}

static void trailer_handler(cshw_context *ctx)
{
    cshw_response *res = cshw_context_response(ctx);
    if (plan.gzip_type) cshw_response_set_content_type(res, "text/plain", NULL);
    if (plan.no_content) note(cshw_response_set_status(res, 204));
    if (plan.set_length == 1) note(cshw_response_set_content_length(res, plan.body_len));
    if (plan.send_file) {
        char path[] = "/tmp/cshw-trailers-XXXXXX";
        int fd = mkstemp(path);
        assert_true(fd >= 0);
        unlink(path);
        assert_int_equal(write(fd, pattern, plan.body_len), (ssize_t)plan.body_len);
        note(cshw_response_send_file(res, fd, 0, plan.body_len));
        close(fd);
    } else {
        write_pattern(res, 0, plan.body_len);
    }
    for (size_t i = 0; plan.names[i]; i++)
        note(cshw_response_add_trailer(res, plan.names[i], plan.values[i]));
    write_pattern(res, plan.body_len, plan.late_len);
    if (plan.set_length == 2) note(cshw_response_set_content_length(res, plan.body_len));
}

static int setup(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof pattern; i++)
        pattern[i] = "0123456789abcdefghijklmnopqrstuvwxyz\n"[i % 37];
    return 0;
}

static const char *trailer(const tw_response *t, const char *name)
{
    for (size_t i = 0; i < t->ntrailers; i++)
        if (strcasecmp(t->tnames[i], name) == 0) return t->tvalues[i];
    return NULL;
}

static void assert_no_results_below_zero(void)
{
    for (int i = 0; i < plan.nresults; i++) assert_int_equal(plan.results[i], 0);
}

/* ---- responses ---- */

/* A body that ends in the buffer would go with Content-Length; with
 * trailers it is chunked, its head names them, and the framing holds for
 * the pipelined request after it. */
static void test_buffered_body_goes_chunked(void **state)
{
    (void)state;
    reset_plan();
    plan.body_len = 100;
    plan.names[0] = "grpc-status";
    plan.values[0] = "0";
    plan.names[1] = "X-Checksum";
    plan.values[1] = "sha-256 abc";
    for (size_t piece = 0; piece <= 1; piece++) {
        tw_run run;
        plan.nresults = 0;
        tw_serve_str(&run, REQ("GET", "/", "HTTP/1.1", "") REQ("GET", "/2", "HTTP/1.1", ""), piece,
                     trailer_handler);
        assert_int_equal(run.error, 0);
        assert_int_equal(run.n, 2);
        for (size_t i = 0; i < 2; i++) {
            const tw_response *t = &run.r[i];
            assert_int_equal(t->status, 200);
            assert_int_equal(t->framing, CSH_BODY_CHUNKED);
            assert_null(tw_field(t, "content-length"));
            assert_string_equal(tw_field(t, "trailer"), "grpc-status, X-Checksum");
            assert_int_equal(t->body_len, 100);
            assert_memory_equal(t->body, pattern, 100);
            assert_int_equal(t->ntrailers, 2);
            assert_string_equal(trailer(t, "grpc-status"), "0");
            assert_string_equal(trailer(t, "x-checksum"), "sha-256 abc");
        }
        assert_no_results_below_zero();
        tw_free(&run);
    }
}

/* The head went out before the trailers were known (the body outgrew the
 * buffer): no Trailer field, the trailers still end the body. An empty
 * body gets its trailer section too. */
static void test_streamed_body_and_empty_body(void **state)
{
    (void)state;
    static const size_t lens[] = {0, 1, 70000};
    for (size_t k = 0; k < 3; k++) {
        reset_plan();
        plan.body_len = lens[k];
        plan.late_len = lens[k] ? 10 : 0;
        plan.names[0] = "x-late";
        plan.values[0] = "yes";
        tw_run run;
        tw_serve_str(&run, REQ("POST", "/", "HTTP/1.1", "Content-Length: 0\r\n"), 7,
                     trailer_handler);
        assert_int_equal(run.error, 0);
        const tw_response *t = &run.r[0];
        assert_int_equal(t->framing, CSH_BODY_CHUNKED);
        if (lens[k] > 16384)
            assert_null(tw_field(t, "trailer"));
        else
            assert_string_equal(tw_field(t, "trailer"), "x-late");
        assert_int_equal(t->body_len, plan.body_len + plan.late_len);
        assert_memory_equal(t->body, pattern, t->body_len);
        assert_int_equal(t->ntrailers, 1);
        assert_string_equal(trailer(t, "x-late"), "yes");
        assert_no_results_below_zero();
        tw_free(&run);
    }
}

/* Gzip as without trailers: a body past gzip_min_bytes is compressed
 * (chunked, the trailers after the compressed body), a small one is not. */
static void test_gzip(void **state)
{
    (void)state;
    static const size_t lens[] = {20, 5000};
    for (size_t k = 0; k < 2; k++) {
        reset_plan();
        plan.body_len = lens[k];
        plan.gzip_type = 1;
        plan.names[0] = "x-t";
        plan.values[0] = "1";
        tw_run run;
        tw_serve_str(&run, REQ("GET", "/", "HTTP/1.1", "Accept-Encoding: gzip\r\n"), 0,
                     trailer_handler);
        assert_int_equal(run.error, 0);
        const tw_response *t = &run.r[0];
        assert_int_equal(t->framing, CSH_BODY_CHUNKED);
        assert_string_equal(trailer(t, "x-t"), "1");
        if (k == 0) {
            assert_null(tw_field(t, "content-encoding"));
            assert_int_equal(t->body_len, 20);
        } else {
            assert_string_equal(tw_field(t, "content-encoding"), "gzip");
            char *plain = malloc(lens[k]);
            uLongf n = (uLongf)lens[k];
            z_stream z = {0};
            assert_int_equal(inflateInit2(&z, 16 + MAX_WBITS), Z_OK);
            z.next_in = (Bytef *)t->body;
            z.avail_in = (uInt)t->body_len;
            z.next_out = (Bytef *)plain;
            z.avail_out = (uInt)n;
            assert_int_equal(inflate(&z, Z_FINISH), Z_STREAM_END);
            assert_int_equal(z.total_out, lens[k]);
            assert_memory_equal(plain, pattern, lens[k]);
            inflateEnd(&z);
            free(plain);
        }
        tw_free(&run);
    }
}

/* Where no trailer section can be sent the trailers are dropped, and the
 * framing is what it would be without them: HTTP/1.0 (Content-Length),
 * HEAD (the header section GET would get, RFC 9110 §9.3.2), 204, and a
 * file sent whole. */
static void test_dropped_where_none_can_go(void **state)
{
    (void)state;
    reset_plan();
    plan.body_len = 30;
    plan.names[0] = "x-t";
    plan.values[0] = "1";
    tw_run run;
    tw_serve_str(&run, REQ("GET", "/", "HTTP/1.0", ""), 0, trailer_handler);
    assert_int_equal(run.error, 0);
    assert_int_equal(run.r[0].framing, CSH_BODY_LENGTH);
    assert_string_equal(tw_field(&run.r[0], "content-length"), "30");
    assert_null(tw_field(&run.r[0], "trailer"));
    assert_no_results_below_zero();
    tw_free(&run);

    tw_serve_str(&run, REQ("HEAD", "/", "HTTP/1.1", "") REQ("GET", "/", "HTTP/1.1", ""), 0,
                 trailer_handler);
    assert_int_equal(run.error, 0);
    assert_int_equal(run.n, 2);
    assert_string_equal(tw_field(&run.r[0], "transfer-encoding"), "chunked");
    assert_string_equal(tw_field(&run.r[0], "trailer"), "x-t");
    assert_int_equal(run.r[0].body_len, 0);
    assert_int_equal(run.r[1].ntrailers, 1);
    tw_free(&run);

    reset_plan();
    plan.no_content = 1;
    plan.names[0] = "x-t";
    plan.values[0] = "1";
    tw_serve_str(&run, REQ("GET", "/", "HTTP/1.1", "") REQ("GET", "/", "HTTP/1.1", ""), 0,
                 trailer_handler);
    assert_int_equal(run.error, 0);
    assert_int_equal(run.n, 2);
    assert_int_equal(run.r[0].status, 204);
    assert_null(tw_field(&run.r[0], "transfer-encoding"));
    assert_no_results_below_zero();
    tw_free(&run);

    reset_plan();
    plan.send_file = 1;
    plan.body_len = 500;
    plan.names[0] = "x-t";
    plan.values[0] = "1";
    tw_serve_str(&run, REQ("GET", "/", "HTTP/1.1", ""), 0, trailer_handler);
    assert_int_equal(run.error, 0);
    assert_string_equal(tw_field(&run.r[0], "content-length"), "500");
    assert_int_equal(plan.results[0], 0);
    assert_int_equal(plan.results[1], CSHW_E_BODY_AFTER_FILE);
    tw_free(&run);
}

/* RFC 9110 §6.5.1: framing, routing, authentication, response control
 * and content fields are never trailers; the field rules of a header
 * apply (no CR, LF or NUL smuggled into the trailer section). */
static void test_refused_fields(void **state)
{
    (void)state;
    static const char *const refused[] = {"Content-Length",
                                          "transfer-encoding",
                                          "Host",
                                          "Content-Type",
                                          "content-encoding",
                                          "Content-Range",
                                          "Cache-Control",
                                          "Set-Cookie",
                                          "Authorization",
                                          "Location",
                                          "Vary",
                                          "Date",
                                          "Trailer",
                                          "TE",
                                          "Connection",
                                          "Expires",
                                          "Retry-After",
                                          "WWW-Authenticate",
                                          "Age",
                                          "Upgrade"};
    reset_plan();
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        plan.names[i] = refused[i];
        plan.values[i] = "1";
    }
    tw_run run;
    tw_serve_str(&run, REQ("GET", "/", "HTTP/1.1", ""), 0, trailer_handler);
    assert_int_equal(run.error, 0);
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++)
        assert_int_equal(plan.results[i], CSHW_E_TRAILER_FIELD);
    /* nothing added: the answer is the plain one */
    assert_string_equal(tw_field(&run.r[0], "content-length"), "0");
    tw_free(&run);

    reset_plan();
    plan.names[0] = "x-a";
    plan.values[0] = "1\r\nContent-Length: 5";
    plan.names[1] = "x b";
    plan.values[1] = "1";
    plan.names[2] = "";
    plan.values[2] = "1";
    plan.names[3] = "x-c";
    plan.values[3] = "tab\tok";
    tw_serve_str(&run, REQ("GET", "/", "HTTP/1.1", ""), 0, trailer_handler);
    assert_int_equal(run.error, 0);
    assert_int_equal(plan.results[0], CSHW_E_INVALID_HEADER);
    assert_int_equal(plan.results[1], CSHW_E_INVALID_HEADER);
    assert_int_equal(plan.results[2], CSHW_E_INVALID_HEADER);
    assert_int_equal(plan.results[3], 0);
    assert_int_equal(run.r[0].ntrailers, 1);
    assert_string_equal(trailer(&run.r[0], "x-c"), "tab\tok");
    tw_free(&run);
}

/* A declared length leaves no chunked body to end: either order fails,
 * and the response keeps its length. */
static void test_declared_length(void **state)
{
    (void)state;
    for (int order = 1; order <= 2; order++) {
        reset_plan();
        plan.body_len = 10;
        plan.set_length = order; /* 1: before the trailer, 2: after it */
        plan.names[0] = "x-t";
        plan.values[0] = "1";
        tw_run run;
        tw_serve_str(&run, REQ("GET", "/", "HTTP/1.1", ""), 0, trailer_handler);
        assert_int_equal(run.error, 0);
        if (order == 1) {
            assert_int_equal(plan.results[0], 0); /* the length */
            assert_int_equal(plan.results[2], CSHW_E_TRAILER_LENGTH);
            assert_string_equal(tw_field(&run.r[0], "content-length"), "10");
        } else {
            assert_int_equal(plan.results[1], 0); /* the trailer */
            assert_int_equal(plan.results[2], CSHW_E_TRAILER_LENGTH);
            assert_int_equal(run.r[0].framing, CSH_BODY_CHUNKED);
            assert_int_equal(run.r[0].ntrailers, 1);
        }
        assert_int_equal(run.r[0].body_len, 10);
        tw_free(&run);
    }
}

/* ---- requests ---- */

static char seen[2048];

static void show_trailers(cshw_context *ctx, const char *when)
{
    cshw_request *req = cshw_context_request(ctx);
    size_t at = strlen(seen);
    at += (size_t)snprintf(seen + at, sizeof seen - at, "%s:%zu", when,
                           cshw_request_trailer_count(req));
    for (size_t i = 0; i < cshw_request_trailer_count(req) && at < sizeof seen; i++) {
        const char *value;
        const char *name = cshw_request_trailer_at(req, i, &value);
        at += (size_t)snprintf(seen + at, sizeof seen - at, " %s=%s", name, value);
    }
    if (at < sizeof seen) snprintf(seen + at, sizeof seen - at, ";");
}

/* Shows the trailers before and after reading the body, and what the
 * case-insensitive lookup finds; no trailer is a header field. */
static void read_handler(cshw_context *ctx)
{
    cshw_request *req = cshw_context_request(ctx);
    show_trailers(ctx, "before");
    char buf[4096];
    ssize_t n, total = 0;
    while ((n = cshw_request_read(req, buf, sizeof buf)) > 0) total += n;
    show_trailers(ctx, "after");
    const char *v = cshw_request_trailer(req, "x-SUM");
    size_t at = strlen(seen);
    snprintf(seen + at, sizeof seen - at, " read=%zd sum=%s hdr=%s", n < 0 ? n : total, v ? v : "-",
             cshw_request_header(req, "x-sum") ? "yes" : "no");
    cshw_response_puts(cshw_context_response(ctx), "ok");
}

#define CHUNKED_POST                                                                               \
    "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"                             \
    "5\r\nhello\r\n6\r\n world\r\n0\r\nX-Sum: 42\r\nx-other:  two words \r\n\r\n"

/* The exchange stores the body before the handler: the trailers are there
 * from the start; in any pieces, and the next request is still read. */
static void test_request_trailers_stored(void **state)
{
    (void)state;
    for (size_t piece = 0; piece <= 3; piece++) {
        seen[0] = 0;
        tw_run run;
        tw_serve_str(&run, CHUNKED_POST REQ("GET", "/", "HTTP/1.1", ""), piece, read_handler);
        assert_int_equal(run.error, 0);
        assert_int_equal(run.n, 2);
        assert_string_equal(seen, "before:2 X-Sum=42 x-other=two words;after:2 X-Sum=42 "
                                  "x-other=two words; read=11 sum=42 hdr=no"
                                  "before:0;after:0; read=0 sum=- hdr=no");
        tw_free(&run);
    }
}

/* The handler reads the body itself (the context on a transport, as a
 * streaming route): none before the end, both after, whether the trailer
 * section came whole or a byte at a time. */
static void test_request_trailers_streamed(void **state)
{
    (void)state;
    static const char in[] = CHUNKED_POST;
    static const char *const heads[] = {
        "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"};
    size_t head_len = strlen(heads[0]);
    for (size_t piece = 0; piece <= 1; piece++) {
        seen[0] = 0;
        cshw_memory *m = cshw_memory_new(in + head_len, sizeof in - 1 - head_len, piece);
        cshw_context *ctx = cshw_context_new(NULL);
        assert_int_equal(tw_run_one(ctx, cshw_memory_transport(m), heads[0], read_handler), 1);
        assert_string_equal(seen, "before:0;after:2 X-Sum=42 x-other=two words; read=11 sum=42 "
                                  "hdr=no");
        cshw_context_free(ctx);
        cshw_memory_free(m);
    }
}

/* More than 16 trailer fields: all are checked, the first 16 kept. */
static void test_request_trailers_first_16(void **state)
{
    (void)state;
    char in[4096];
    size_t at = (size_t)snprintf(in, sizeof in, "%s",
                                 "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
                                 "1\r\nx\r\n0\r\n");
    for (int i = 0; i < 20; i++)
        at += (size_t)snprintf(in + at, sizeof in - at, "t%d: %d\r\n", i, i);
    snprintf(in + at, sizeof in - at, "\r\n");
    seen[0] = 0;
    tw_run run;
    tw_serve_str(&run, in, 0, read_handler);
    assert_int_equal(run.error, 0);
    assert_int_equal(run.r[0].status, 200);
    assert_non_null(strstr(seen, "before:16 t0=0 t1=1"));
    assert_non_null(strstr(seen, " t15=15;"));
    assert_null(strstr(seen, "t16"));
    tw_free(&run);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_buffered_body_goes_chunked),
        cmocka_unit_test(test_streamed_body_and_empty_body),
        cmocka_unit_test(test_gzip),
        cmocka_unit_test(test_dropped_where_none_can_go),
        cmocka_unit_test(test_refused_fields),
        cmocka_unit_test(test_declared_length),
        cmocka_unit_test(test_request_trailers_stored),
        cmocka_unit_test(test_request_trailers_streamed),
        cmocka_unit_test(test_request_trailers_first_16),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
