/* cshw_response: status and reason phrases (RFC 9110 §15), fields and
 * their validation (§5.5, §5.6.2: no header injection), framing (RFC 9112
 * §6: Content-Length, chunked, close-delimited), HEAD (RFC 9110 §9.3.2),
 * 204/205/304, gzip (§8.4.1.3, §12.5.3, Vary §12.5.5), redirects (§15.4),
 * error pages, Set-Cookie (RFC 6265 §4.1), Date (§6.6.1), send_file and
 * failed writes. Every response is read back with libcshttp's response
 * parser (tw.h), so a framing mistake fails the test. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "cshttp/web/cookie.h"
#include "tw.h"

#define GET(path, extra) "GET " path " HTTP/1.1\r\nHost: h\r\n" extra "\r\n"
#define HEAD(path, extra) "HEAD " path " HTTP/1.1\r\nHost: h\r\n" extra "\r\n"

/* What the handlers do, set by each test. */
static struct {
    int status;
    const char *type;
    size_t body_len; /* bytes of body to write, from a pattern */
    int flush_after; /* flush after this many bytes (0: never) */
    int results[32]; /* return values the handler saw */
    int nresults;
} plan;

static char pattern[1 << 20];

static void setup_plan(int status, const char *type, size_t body_len)
{
    memset(&plan, 0, sizeof plan);
    plan.status = status;
    plan.type = type;
    plan.body_len = body_len;
}

static void note(int r)
{
    if (plan.nresults < 32) plan.results[plan.nresults++] = r;
}

/* Writes plan.body_len bytes of text in pieces of 100, flushing once. */
static void body_handler(cshw_context *ctx)
{
    cshw_response *res = cshw_context_response(ctx);
    if (plan.status) note(cshw_response_set_status(res, plan.status));
    if (plan.type) note(cshw_response_set_content_type(res, plan.type, NULL));
    size_t done = 0;
    while (done < plan.body_len) {
        size_t n = plan.body_len - done < 100 ? plan.body_len - done : 100;
        int r = cshw_response_write(res, pattern + done, n);
        if (r < 0) {
            note(r);
            return;
        }
        done += n;
        if (plan.flush_after && done == (size_t)plan.flush_after) note(cshw_response_flush(res));
    }
}

static int setup(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof pattern; i++)
        pattern[i] = "the quick brown fox jumps over the lazy dog\n"[i % 44];
    return 0;
}

static void assert_body_is_pattern(const tw_response *t, size_t len)
{
    assert_int_equal(t->body_len, len);
    assert_memory_equal(t->body, pattern, len);
}

/* ---- status ---- */

static void test_status_reasons(void **state)
{
    (void)state;
    /* every code of RFC 9110 §15 */
    static const struct {
        int code;
        const char *reason;
    } codes[] = {
        {100, "Continue"},
        {101, "Switching Protocols"},
        {200, "OK"},
        {201, "Created"},
        {202, "Accepted"},
        {203, "Non-Authoritative Information"},
        {204, "No Content"},
        {205, "Reset Content"},
        {206, "Partial Content"},
        {300, "Multiple Choices"},
        {301, "Moved Permanently"},
        {302, "Found"},
        {303, "See Other"},
        {304, "Not Modified"},
        {305, "Use Proxy"},
        {307, "Temporary Redirect"},
        {308, "Permanent Redirect"},
        {400, "Bad Request"},
        {401, "Unauthorized"},
        {402, "Payment Required"},
        {403, "Forbidden"},
        {404, "Not Found"},
        {405, "Method Not Allowed"},
        {406, "Not Acceptable"},
        {407, "Proxy Authentication Required"},
        {408, "Request Timeout"},
        {409, "Conflict"},
        {410, "Gone"},
        {411, "Length Required"},
        {412, "Precondition Failed"},
        {413, "Content Too Large"},
        {414, "URI Too Long"},
        {415, "Unsupported Media Type"},
        {416, "Range Not Satisfiable"},
        {417, "Expectation Failed"},
        {421, "Misdirected Request"},
        {422, "Unprocessable Content"},
        {426, "Upgrade Required"},
        {500, "Internal Server Error"},
        {501, "Not Implemented"},
        {502, "Bad Gateway"},
        {503, "Service Unavailable"},
        {504, "Gateway Timeout"},
        {505, "HTTP Version Not Supported"},
        {431, "Request Header Fields Too Large"},
        {429, "Too Many Requests"},
    };
    for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++)
        assert_string_equal(cshw_response_status_reason(codes[i].code), codes[i].reason);
    assert_string_equal(cshw_response_status_reason(306), ""); /* (Unused) */
    assert_string_equal(cshw_response_status_reason(299), "");
    assert_string_equal(cshw_response_status_reason(0), "");
    assert_string_equal(cshw_response_status_reason(-1), "");
}

static void status_handler(cshw_context *ctx)
{
    cshw_response *res = cshw_context_response(ctx);
    note(cshw_response_set_status(res, 99));
    note(cshw_response_set_status(res, 100));
    note(cshw_response_set_status(res, 600));
    note(cshw_response_set_status(res, 418));
    note(cshw_response_status(res));
}

static void test_status_set_and_refused(void **state)
{
    (void)state;
    setup_plan(0, NULL, 0);
    tw_run run;
    tw_serve_str(&run, GET("/", ""), 0, status_handler);
    assert_int_equal(plan.results[0], CSHW_E_INVALID_STATUS);
    assert_int_equal(plan.results[1], CSHW_E_INVALID_STATUS);
    assert_int_equal(plan.results[2], CSHW_E_INVALID_STATUS);
    assert_int_equal(plan.results[3], 0);
    assert_int_equal(plan.results[4], 418);
    assert_int_equal(run.r[0].status, 418);
    /* an unknown code goes out with an empty reason: "HTTP/1.1 418 \r\n" */
    assert_memory_equal(run.r[0].head, "HTTP/1.1 418 \r\n", 15);
    tw_free(&run);
}

/* ---- fields ---- */

static void fields_handler(cshw_context *ctx)
{
    cshw_response *res = cshw_context_response(ctx);
    note(cshw_response_set_header(res, "X-One", "1"));
    note(cshw_response_append_header(res, "x-one", "2"));
    note(cshw_response_append_header(res, "X-Two", "a"));
    note(cshw_response_set_header(res, "X-TWO", "b")); /* replaces, any case */
    note(cshw_response_append_header(res, "X-Gone", "g"));
    note(cshw_response_remove_header(res, "x-gone"));
    note(cshw_response_remove_header(res, "x-never-set"));
    note(cshw_response_set_header(res, "X-Empty", ""));
    note(cshw_response_set_header(res, "X-Tab", "a\tb obs-text \xc3\xa9"));
    const char *v = cshw_response_header(res, "X-ONE");
    note(v && strcmp(v, "1") == 0);
    note(cshw_response_header(res, "x-gone") == NULL);
}

static void test_fields_set_append_remove(void **state)
{
    (void)state;
    setup_plan(0, NULL, 0);
    tw_run run;
    tw_serve_str(&run, GET("/", ""), 0, fields_handler);
    for (int i = 0; i < 9; i++) assert_int_equal(plan.results[i], 0);
    assert_int_equal(plan.results[9], 1);
    assert_int_equal(plan.results[10], 1);
    tw_response *t = &run.r[0];
    assert_int_equal(tw_field_count(t, "x-one"), 2);
    assert_int_equal(tw_field_count(t, "x-two"), 1);
    assert_string_equal(tw_field(t, "x-two"), "b");
    assert_null(tw_field(t, "x-gone"));
    assert_string_equal(tw_field(t, "x-empty"), "");
    assert_string_equal(tw_field(t, "x-tab"), "a\tb obs-text \xc3\xa9");
    /* in the order set */
    assert_non_null(strstr(t->head, "X-One: 1\r\nx-one: 2\r\n"));
    tw_free(&run);
}

/* Header injection: nothing with CR, LF or another control, and no name
 * that is not a token, ever reaches the wire. */
static void injection_handler(cshw_context *ctx)
{
    cshw_response *res = cshw_context_response(ctx);
    static const char *const bad_values[] = {
        "a\r\nSet-Cookie: evil=1", "a\nevil: 1", "a\revil", "a\x01", "a\x7f", "\x1b[31m",
    };
    static const char *const bad_names[] = {
        "", "X Evil", "X-Evil:", "X-Evil\r\nA", "X\x01", "(evil)", "X/Y", "na\xc3\xafve", "a@b",
    };
    for (size_t i = 0; i < sizeof bad_values / sizeof *bad_values; i++) {
        note(cshw_response_set_header(res, "X-Evil", bad_values[i]));
        note(cshw_response_append_header(res, "X-Evil", bad_values[i]));
    }
    int all = 0;
    for (size_t i = 0; i < sizeof bad_names / sizeof *bad_names; i++)
        all |= cshw_response_set_header(res, bad_names[i], "v") != CSHW_E_INVALID_HEADER;
    note(all);
    note(cshw_response_set_header(res, NULL, "v"));
    note(cshw_response_set_header(res, "X-Null", NULL));
    note(cshw_response_set_content_type(res, "text/html\r\nX-Evil: 1", NULL));
    note(cshw_response_set_content_type(res, "text/html", "utf-8\r\nX-Evil: 1"));
    note(cshw_response_set_content_type(res, "text/html", "utf 8"));
    note(cshw_response_redirect(res, 302, "/a\r\nSet-Cookie: evil=1"));
    note(cshw_response_remove_header(res, "bad name"));
    cshw_response_puts(res, "ok");
}

static void test_header_injection_refused(void **state)
{
    (void)state;
    setup_plan(0, NULL, 0);
    tw_run run;
    tw_serve_str(&run, GET("/", ""), 1, injection_handler);
    for (int i = 0; i < 12; i++) assert_int_equal(plan.results[i], CSHW_E_INVALID_HEADER);
    assert_int_equal(plan.results[12], 0); /* every bad name refused */
    for (int i = 13; i < 20; i++) assert_int_equal(plan.results[i], CSHW_E_INVALID_HEADER);
    assert_int_equal(run.error, 0);
    assert_int_equal(run.n, 1);
    assert_int_equal(run.r[0].status, 200);
    assert_string_equal(run.r[0].body, "ok");
    assert_null(strstr(run.out, "evil"));
    assert_null(strstr(run.out, "Evil"));
    assert_null(tw_field(&run.r[0], "set-cookie"));
    tw_free(&run);
}

/* Framing fields are the toolkit's (RFC 9112 §6); Connection: close is
 * honoured (§9.6). */
static void reserved_handler(cshw_context *ctx)
{
    cshw_response *res = cshw_context_response(ctx);
    note(cshw_response_set_header(res, "Content-Length", "5"));
    note(cshw_response_append_header(res, "transfer-encoding", "chunked"));
    note(cshw_response_set_header(res, "Connection", "keep-alive"));
    note(cshw_response_set_header(res, "Connection", "CLOSE"));
    cshw_response_puts(res, "hello, world");
}

static void test_reserved_fields(void **state)
{
    (void)state;
    setup_plan(0, NULL, 0);
    tw_run run;
    tw_serve_str(&run, GET("/", "") GET("/second", ""), 0, reserved_handler);
    assert_int_equal(plan.results[0], CSHW_E_RESERVED_HEADER);
    assert_int_equal(plan.results[1], CSHW_E_RESERVED_HEADER);
    assert_int_equal(plan.results[2], CSHW_E_RESERVED_HEADER);
    assert_int_equal(plan.results[3], 0);
    assert_int_equal(run.served, 1); /* closed after the first */
    assert_int_equal(run.n, 1);
    assert_int_equal(run.error, 0);
    assert_string_equal(tw_field(&run.r[0], "content-length"), "12");
    assert_int_equal(tw_field_count(&run.r[0], "content-length"), 1);
    assert_null(tw_field(&run.r[0], "transfer-encoding"));
    assert_string_equal(tw_field(&run.r[0], "connection"), "close");
    tw_free(&run);
}

static void type_cookie_handler(cshw_context *ctx)
{
    cshw_response *res = cshw_context_response(ctx);
    note(cshw_response_set_content_type(res, "text/plain", "utf-8"));
    note(cshw_response_set_content_type(res, "application/json", NULL)); /* replaces */
    cshw_cookie c;
    cshw_cookie_init(&c, "sid", "abc123");
    c.path = "/";
    c.http_only = 1;
    c.same_site = CSHW_SAME_SITE_LAX;
    note(cshw_response_set_cookie(res, &c));
    cshw_cookie_init(&c, "theme", "dark");
    note(cshw_response_set_cookie(res, &c));
    cshw_cookie_init(&c, "bad name", "x");
    note(cshw_response_set_cookie(res, &c));
    cshw_cookie_init(&c, "v", "a;b\r\nX-Evil: 1");
    note(cshw_response_set_cookie(res, &c));
    note(cshw_response_set_cookie(res, NULL));
    cshw_cookie_init(&c, "old", "1");
    c.size = CSHW_COOKIE_SIZE_0_3 - 1; /* not the init's: nothing added */
    note(cshw_response_set_cookie(res, &c));
    cshw_response_puts(res, "{}");
}

static void test_content_type_and_cookies(void **state)
{
    (void)state;
    setup_plan(0, NULL, 0);
    tw_run run;
    tw_serve_str(&run, GET("/", ""), 0, type_cookie_handler);
    assert_int_equal(plan.results[0], 0);
    assert_int_equal(plan.results[1], 0);
    assert_int_equal(plan.results[2], 0);
    assert_int_equal(plan.results[3], 0);
    assert_int_equal(plan.results[4], CSHW_E_COOKIE_INVALID_NAME);
    assert_int_equal(plan.results[5], CSHW_E_COOKIE_INVALID_VALUE);
    assert_int_equal(plan.results[6], -EINVAL);
    assert_int_equal(plan.results[7], -EINVAL);
    tw_response *t = &run.r[0];
    assert_int_equal(tw_field_count(t, "content-type"), 1);
    assert_string_equal(tw_field(t, "content-type"), "application/json");
    /* RFC 6265 §4.1: one Set-Cookie field per cookie */
    assert_int_equal(tw_field_count(t, "set-cookie"), 2);
    assert_non_null(strstr(t->head, "Set-Cookie: sid=abc123; Path=/; HttpOnly; SameSite=Lax\r\n"));
    assert_non_null(strstr(t->head, "Set-Cookie: theme=dark\r\n"));
    assert_null(strstr(run.out, "Evil"));
    tw_free(&run);
}

/* ---- framing ---- */

static void test_buffered_content_length(void **state)
{
    (void)state;
    for (size_t piece = 0; piece <= 1; piece++) {
        setup_plan(0, "text/plain", 1000);
        tw_run run;
        tw_serve_str(&run, GET("/", "") GET("/2", ""), piece, body_handler);
        assert_int_equal(run.served, 2);
        assert_int_equal(run.n, 2);
        assert_int_equal(run.error, 0);
        for (int i = 0; i < 2; i++) {
            assert_int_equal(run.r[i].framing, CSH_BODY_LENGTH);
            assert_string_equal(tw_field(&run.r[i], "content-length"), "1000");
            assert_null(tw_field(&run.r[i], "transfer-encoding"));
            assert_null(tw_field(&run.r[i], "connection"));
            assert_body_is_pattern(&run.r[i], 1000);
        }
        tw_free(&run);
    }
}

static void test_overflow_goes_chunked(void **state)
{
    (void)state;
    cshw_options o;
    cshw_options_init(&o);
    o.response_buffer = 256;
    setup_plan(0, "text/plain", 1000);
    static const char in[] = GET("/", "") GET("/2", "");
    tw_run run;
    tw_serve(&run, in, sizeof in - 1, 0, &o, body_handler);
    assert_int_equal(run.served, 2);
    assert_int_equal(run.error, 0);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(run.r[i].framing, CSH_BODY_CHUNKED);
        assert_string_equal(tw_field(&run.r[i], "transfer-encoding"), "chunked");
        assert_null(tw_field(&run.r[i], "content-length"));
        assert_body_is_pattern(&run.r[i], 1000);
    }
    /* the last chunk ends the first response right before the second */
    assert_non_null(strstr(run.out, "\r\n0\r\n\r\nHTTP/1.1 200 OK\r\n"));
    tw_free(&run);
}

static void test_flush_goes_chunked(void **state)
{
    (void)state;
    setup_plan(0, "text/plain", 300);
    plan.flush_after = 100;
    tw_run run;
    tw_serve_str(&run, GET("/", ""), 0, body_handler);
    assert_int_equal(plan.results[1], 0); /* the flush */
    assert_int_equal(run.error, 0);
    assert_int_equal(run.r[0].framing, CSH_BODY_CHUNKED);
    assert_body_is_pattern(&run.r[0], 300);
    /* the first 100 bytes went out as their own chunk */
    assert_non_null(strstr(run.out, "\r\n\r\n64\r\n"));
    tw_free(&run);
}

/* RFC 9112 §6.3 rule 8: HTTP/1.0 has no chunked coding; a body of unknown
 * length ends with the connection. */
static void test_http10_close_delimited(void **state)
{
    (void)state;
    cshw_options o;
    cshw_options_init(&o);
    o.response_buffer = 256;
    setup_plan(0, "text/plain", 1000);
    static const char in[] = "GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"
                             "GET /2 HTTP/1.0\r\nConnection: keep-alive\r\n\r\n";
    tw_run run;
    tw_serve(&run, in, sizeof in - 1, 0, &o, body_handler);
    assert_int_equal(run.served, 1);
    assert_int_equal(run.n, 1);
    assert_int_equal(run.error, 0);
    assert_int_equal(run.r[0].framing, CSH_BODY_UNTIL_CLOSE);
    assert_null(tw_field(&run.r[0], "content-length"));
    assert_null(tw_field(&run.r[0], "transfer-encoding"));
    assert_string_equal(tw_field(&run.r[0], "connection"), "close");
    assert_body_is_pattern(&run.r[0], 1000);
    tw_free(&run);
}

/* RFC 9112 §9.3: an HTTP/1.0 connection persists only when both say so */
static void test_http10_keep_alive(void **state)
{
    (void)state;
    setup_plan(0, "text/plain", 10);
    tw_run run;
    tw_serve_str(&run,
                 "GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"
                 "GET /2 HTTP/1.0\r\n\r\n"
                 "GET /3 HTTP/1.0\r\n\r\n",
                 0, body_handler);
    assert_int_equal(run.served, 2);
    assert_int_equal(run.error, 0);
    assert_string_equal(tw_field(&run.r[0], "connection"), "keep-alive");
    assert_string_equal(tw_field(&run.r[1], "connection"), "close");
    /* the status line is ours, 1.1, whatever the client's (RFC 9110 §6.2) */
    assert_memory_equal(run.r[0].head, "HTTP/1.1 200 OK\r\n", 17);
    tw_free(&run);
}

/* ---- HEAD ---- */

/* The fields of a response but Date, as "name: value\n" lines. */
static void fields_but_date(const tw_response *t, char *out, size_t cap)
{
    out[0] = '\0';
    for (size_t i = 0; i < t->nfields; i++) {
        if (strcasecmp(t->names[i], "date") == 0) continue;
        size_t n = strlen(out);
        snprintf(out + n, cap - n, "%s: %s\n", t->names[i], t->values[i]);
    }
}

/* RFC 9110 §9.3.2: HEAD gets the header section GET would, and no body */
static void test_head_same_headers_as_get(void **state)
{
    (void)state;
    static const size_t sizes[] = {0, 10, 3000, 20000};
    static const char *const accept[] = {"", "Accept-Encoding: gzip\r\n"};
    for (size_t a = 0; a < 2; a++) {
        for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
            char in[512];
            snprintf(in, sizeof in,
                     "GET / HTTP/1.1\r\nHost: h\r\n%s\r\nHEAD / HTTP/1.1\r\nHost: h\r\n%s\r\n"
                     "GET /last HTTP/1.1\r\nHost: h\r\n\r\n",
                     accept[a], accept[a]);
            setup_plan(0, "text/plain", sizes[i]);
            tw_run run;
            tw_serve(&run, in, strlen(in), 0, NULL, body_handler);
            assert_int_equal(run.served, 3);
            assert_int_equal(run.n, 3);
            assert_int_equal(run.error, 0);
            char get[2048], head[2048];
            fields_but_date(&run.r[0], get, sizeof get);
            fields_but_date(&run.r[1], head, sizeof head);
            if (sizes[i] == 0) {
                /* nothing written: HEAD cannot know, and omits the length */
                assert_string_equal(tw_field(&run.r[0], "content-length"), "0");
                assert_null(tw_field(&run.r[1], "content-length"));
                char *cl = strstr(get, "Content-Length: 0\n");
                assert_non_null(cl);
                memmove(cl, cl + 18, strlen(cl + 18) + 1);
            }
            assert_string_equal(get, head);
            assert_int_equal(run.r[1].body_len, 0);
            if (a == 1 && sizes[i] >= 1024)
                assert_string_equal(tw_field(&run.r[1], "content-encoding"), "gzip");
            if (sizes[i] == 20000)
                assert_string_equal(tw_field(&run.r[1], "transfer-encoding"), "chunked");
            /* no body byte of HEAD on the wire: the next response follows */
            assert_int_equal(run.r[2].status, 200);
            tw_free(&run);
        }
    }
}

/* ---- responses without content ---- */

static void test_no_body_statuses(void **state)
{
    (void)state;
    static const int statuses[] = {204, 304, 205};
    for (size_t i = 0; i < 3; i++) {
        for (int flush = 0; flush <= 1; flush++) {
            setup_plan(statuses[i], "text/plain", 500);
            plan.flush_after = flush ? 100 : 0;
            tw_run run;
            tw_serve_str(&run, GET("/", "Accept-Encoding: gzip\r\n") GET("/2", ""), 0,
                         body_handler);
            assert_int_equal(run.served, 2);
            assert_int_equal(run.n, 2);
            assert_int_equal(run.error, 0);
            tw_response *t = &run.r[0];
            assert_int_equal(t->status, statuses[i]);
            assert_int_equal(t->body_len, 0);
            assert_null(tw_field(t, "transfer-encoding"));
            assert_null(tw_field(t, "content-encoding"));
            if (statuses[i] == 205) /* RFC 9110 §15.3.6 */
                assert_string_equal(tw_field(t, "content-length"), "0");
            else /* §8.6: never in 204; no length of what was not sent in 304 */
                assert_null(tw_field(t, "content-length"));
            tw_free(&run);
        }
    }
}

/* ---- gzip ---- */

static void test_gzip_buffered(void **state)
{
    (void)state;
    setup_plan(0, "text/html; charset=utf-8", 5000);
    tw_run run;
    tw_serve_str(&run, GET("/", "Accept-Encoding: gzip, deflate, br\r\n"), 0, body_handler);
    tw_response *t = &run.r[0];
    assert_int_equal(run.error, 0);
    assert_string_equal(tw_field(t, "content-encoding"), "gzip");
    assert_string_equal(tw_field(t, "vary"), "Accept-Encoding");
    assert_int_equal(t->framing, CSH_BODY_LENGTH);
    assert_true(t->body_len < 1000);
    char cl[32];
    snprintf(cl, sizeof cl, "%zu", t->body_len);
    assert_string_equal(tw_field(t, "content-length"), cl);
    size_t n;
    char *plain = tw_gunzip(t->body, t->body_len, &n);
    assert_non_null(plain);
    assert_int_equal(n, 5000);
    assert_memory_equal(plain, pattern, 5000);
    free(plain);
    tw_free(&run);
}

/* RFC 9110 §12.5.3: codings with q-values; q=0 refuses; "*" stands for
 * what is not listed; identity is acceptable unless refused. */
static void test_gzip_accept_encoding(void **state)
{
    (void)state;
    static const struct {
        const char *fields;
        int gzip;
    } cases[] = {
        {"Accept-Encoding: gzip\r\n", 1},
        {"Accept-Encoding: GZip\r\n", 1},
        {"Accept-Encoding: x-gzip\r\n", 1},
        {"Accept-Encoding: *\r\n", 1},
        {"Accept-Encoding: br, gzip;q=0.1\r\n", 1},
        {"Accept-Encoding: gzip ; q=1.0 , br\r\n", 1},
        {"Accept-Encoding: gzip;level=9\r\n", 1},
        {"Accept-Encoding: identity;q=0.5, gzip;q=0.8\r\n", 1},
        {"Accept-Encoding: br\r\nAccept-Encoding: gzip\r\n", 1},
        {"Accept-Encoding: gzip;q=0\r\n", 0},
        {"Accept-Encoding: gzip; Q=0.000\r\n", 0},
        {"Accept-Encoding: *;q=0\r\n", 0},
        {"Accept-Encoding: gzip;q=0, *\r\n", 0},
        {"Accept-Encoding: deflate, br\r\n", 0},
        {"Accept-Encoding: identity\r\n", 0},
        {"Accept-Encoding: gzip;q=0.5, identity\r\n", 0},
        {"Accept-Encoding: gzip;q=0.5, *\r\n", 0},
        {"Accept-Encoding: gzip;q=1.5\r\n", 0},
        {"Accept-Encoding: gzip;q=0.1234\r\n", 0},
        {"Accept-Encoding: gzip;q=abc\r\n", 0},
        {"Accept-Encoding: gzip;q\r\n", 0},
        {"Accept-Encoding: gzipx\r\n", 0},
        {"Accept-Encoding: \r\n", 0},
        {"", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char in[256];
        snprintf(in, sizeof in, "GET / HTTP/1.1\r\nHost: h\r\n%s\r\n", cases[i].fields);
        setup_plan(0, "application/json", 2000);
        tw_run run;
        tw_serve(&run, in, strlen(in), 0, NULL, body_handler);
        assert_int_equal(run.error, 0);
        tw_response *t = &run.r[0];
        if (cases[i].gzip != (tw_field(t, "content-encoding") != NULL))
            fail_msg("case %zu: %s", i, cases[i].fields);
        /* considered every time: the answer varies with the field */
        assert_string_equal(tw_field(t, "vary"), "Accept-Encoding");
        if (!cases[i].gzip) assert_body_is_pattern(t, 2000);
        tw_free(&run);
    }
}

static void gzip_cases_handler(cshw_context *ctx)
{
    cshw_request *req = cshw_context_request(ctx);
    cshw_response *res = cshw_context_response(ctx);
    const char *p = cshw_request_path(req);
    if (strcmp(p, "/png") == 0) cshw_response_set_content_type(res, "image/png", NULL);
    if (strcmp(p, "/small") == 0) cshw_response_set_content_type(res, "text/plain", NULL);
    if (strcmp(p, "/disabled") == 0) {
        cshw_response_set_content_type(res, "text/plain", NULL);
        cshw_response_disable_gzip(res);
    }
    if (strcmp(p, "/encoded") == 0) {
        cshw_response_set_content_type(res, "text/plain", NULL);
        cshw_response_set_header(res, "Content-Encoding", "br");
    }
    if (strcmp(p, "/vary") == 0) {
        cshw_response_set_content_type(res, "text/css", NULL);
        cshw_response_set_header(res, "Vary", "Cookie, accept-encoding");
    }
    if (strcmp(p, "/svg") == 0) cshw_response_set_content_type(res, "image/svg+xml", NULL);
    if (strcmp(p, "/ld") == 0) cshw_response_set_content_type(res, "application/ld+json", NULL);
    if (strcmp(p, "/sse") == 0) cshw_response_set_content_type(res, "text/event-stream", NULL);
    if (strcmp(p, "/js") == 0)
        cshw_response_set_content_type(res, "Application/JavaScript", "utf-8");
    if (strcmp(p, "/bin") == 0)
        cshw_response_set_content_type(res, "application/octet-stream", NULL);
    if (strcmp(p, "/ttf") == 0) cshw_response_set_content_type(res, "font/ttf", NULL);
    if (strcmp(p, "/woff2") == 0) cshw_response_set_content_type(res, "font/woff2", NULL);
    if (strcmp(p, "/ico") == 0) cshw_response_set_content_type(res, "image/x-icon", NULL);
    size_t n = strcmp(p, "/small") == 0 ? 1023 : 4000;
    cshw_response_write(res, pattern, n);
}

static void test_gzip_when_not_to(void **state)
{
    (void)state;
    static const struct {
        const char *path;
        int gzip, vary;
    } cases[] = {
        {"/none", 0, 0},     /* no Content-Type: not considered */
        {"/png", 0, 0},      /* already compressed */
        {"/small", 0, 1},    /* below gzip_min_bytes, but considered */
        {"/disabled", 0, 0}, /* the application said no */
        {"/encoded", 0, 0},  /* the application encoded it */
        {"/vary", 1, 0},     /* its Vary already names Accept-Encoding */
        {"/svg", 1, 1},
        {"/ld", 1, 1},
        {"/sse", 0, 0},
        /* by type: compressible ones (case-insensitive), and ones that
         * are compressed already or binary */
        {"/js", 1, 1},
        {"/ttf", 1, 1},
        {"/ico", 1, 1},
        {"/bin", 0, 0},
        {"/woff2", 0, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char in[256];
        snprintf(in, sizeof in, "GET %s HTTP/1.1\r\nHost: h\r\nAccept-Encoding: gzip\r\n\r\n",
                 cases[i].path);
        tw_run run;
        tw_serve(&run, in, strlen(in), 0, NULL, gzip_cases_handler);
        tw_response *t = &run.r[0];
        assert_int_equal(run.error, 0);
        if (cases[i].gzip != (tw_field(t, "content-encoding") != NULL &&
                              strcmp(tw_field(t, "content-encoding"), "gzip") == 0))
            fail_msg("gzip, case %s", cases[i].path);
        int vary = 0;
        for (size_t j = 0; j < t->nfields; j++)
            vary |= strcasecmp(t->names[j], "vary") == 0 &&
                    strcmp(t->values[j], "Accept-Encoding") == 0;
        if (cases[i].vary != vary) fail_msg("vary, case %s", cases[i].path);
        tw_free(&run);
    }
    /* gzip off in the options: never considered */
    cshw_options o;
    cshw_options_init(&o);
    o.gzip = 0;
    static const char in[] = GET("/svg", "Accept-Encoding: gzip\r\n");
    tw_run run;
    tw_serve(&run, in, sizeof in - 1, 0, &o, gzip_cases_handler);
    assert_null(tw_field(&run.r[0], "content-encoding"));
    assert_null(tw_field(&run.r[0], "vary"));
    tw_free(&run);
}

static void test_gzip_streamed(void **state)
{
    (void)state;
    for (int mode = 0; mode < 3; mode++) {
        cshw_options o;
        cshw_options_init(&o);
        if (mode == 1) o.response_buffer = 256; /* overflow: streamed in small chunks */
        setup_plan(0, "text/plain", mode == 2 ? 300 : 100000);
        if (mode == 2) plan.flush_after = 100; /* flushed before gzip_min_bytes */
        static const char in[] = GET("/", "Accept-Encoding: gzip\r\n") GET("/2", "");
        tw_run run;
        tw_serve(&run, in, sizeof in - 1, 1, &o, body_handler);
        assert_int_equal(run.served, 2);
        assert_int_equal(run.error, 0);
        tw_response *t = &run.r[0];
        assert_int_equal(t->framing, CSH_BODY_CHUNKED);
        assert_string_equal(tw_field(t, "content-encoding"), "gzip");
        assert_string_equal(tw_field(t, "vary"), "Accept-Encoding");
        size_t n;
        char *plain = tw_gunzip(t->body, t->body_len, &n);
        assert_non_null(plain);
        assert_int_equal(n, plan.body_len);
        assert_memory_equal(plain, pattern, n);
        free(plain);
        /* the second (no Accept-Encoding) is not compressed */
        assert_null(tw_field(&run.r[1], "content-encoding"));
        assert_body_is_pattern(&run.r[1], plan.body_len);
        tw_free(&run);
    }
}

static unsigned char noise[4096];

static void noise_handler(cshw_context *ctx)
{
    cshw_response *res = cshw_context_response(ctx);
    cshw_response_set_content_type(res, "text/plain", NULL);
    cshw_response_set_header(res, "ETag", "\"v1\"");
    cshw_response_write(res, noise, sizeof noise);
}

/* A body that gzip would make larger is sent as it is (still Vary) */
static void test_gzip_incompressible_sent_identity(void **state)
{
    (void)state;
    uint32_t x = 2463534242u;
    for (size_t i = 0; i < sizeof noise; i++) {
        x ^= x << 13, x ^= x >> 17, x ^= x << 5;
        noise[i] = (unsigned char)x;
    }
    tw_run run;
    tw_serve_str(&run, GET("/", "Accept-Encoding: gzip\r\n"), 0, noise_handler);
    tw_response *t = &run.r[0];
    assert_null(tw_field(t, "content-encoding"));
    assert_string_equal(tw_field(t, "vary"), "Accept-Encoding");
    assert_string_equal(tw_field(t, "etag"), "\"v1\""); /* still strong: same bytes */
    assert_int_equal(t->body_len, sizeof noise);
    assert_memory_equal(t->body, noise, sizeof noise);
    tw_free(&run);
}

static void etag_handler(cshw_context *ctx)
{
    cshw_response *res = cshw_context_response(ctx);
    cshw_response_set_content_type(res, "text/plain", NULL);
    cshw_response_set_header(res, "ETag", "\"abc\"");
    cshw_response_write(res, pattern, 3000);
}

/* RFC 9110 §8.8.3: gzip changes the bytes, so a strong ETag turns weak */
static void test_etag_weakened_by_gzip(void **state)
{
    (void)state;
    tw_run run;
    tw_serve_str(&run, GET("/", "Accept-Encoding: gzip\r\n") GET("/", ""), 0, etag_handler);
    assert_string_equal(tw_field(&run.r[0], "etag"), "W/\"abc\"");
    assert_string_equal(tw_field(&run.r[1], "etag"), "\"abc\"");
    tw_free(&run);
}

/* ---- redirects and error pages ---- */

static int redirect_status;
static const char *redirect_location;

static void redirect_handler(cshw_context *ctx)
{
    cshw_response *res = cshw_context_response(ctx);
    cshw_response_set_content_type(res, "application/json", NULL);
    cshw_response_set_header(res, "ETag", "\"x\"");
    cshw_response_set_header(res, "X-Kept", "yes");
    cshw_response_puts(res, "junk that must not be sent");
    note(cshw_response_redirect(res, redirect_status, redirect_location));
}

static void test_redirects(void **state)
{
    (void)state;
    static const int ok[] = {301, 302, 303, 307, 308};
    for (size_t i = 0; i < 5; i++) {
        setup_plan(0, NULL, 0);
        redirect_status = ok[i];
        redirect_location = "/next?a=\"<b>\"&c=1";
        tw_run run;
        tw_serve_str(&run, GET("/", "") HEAD("/", ""), 0, redirect_handler);
        assert_int_equal(plan.results[0], 0);
        assert_int_equal(run.error, 0);
        tw_response *t = &run.r[0];
        assert_int_equal(t->status, ok[i]);
        assert_string_equal(tw_field(t, "location"), "/next?a=\"<b>\"&c=1");
        assert_string_equal(tw_field(t, "content-type"), "text/html; charset=utf-8");
        assert_null(tw_field(t, "etag"));
        assert_string_equal(tw_field(t, "x-kept"), "yes");
        assert_null(strstr(t->body, "junk"));
        assert_non_null(strstr(t->body, "<a href=\"/next?a=&quot;&lt;b&gt;&quot;&amp;c=1\">"));
        assert_null(strstr(t->body, "<b>"));
        assert_int_equal(run.r[1].status, ok[i]);
        assert_int_equal(run.r[1].body_len, 0);
        assert_string_equal(tw_field(&run.r[1], "content-length"), tw_field(t, "content-length"));
        tw_free(&run);
    }
    static const int bad[] = {200, 300, 304, 305, 306, 309, 404};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        setup_plan(0, NULL, 0);
        redirect_status = bad[i];
        redirect_location = "/x";
        tw_run run;
        tw_serve_str(&run, GET("/", ""), 0, redirect_handler);
        assert_int_equal(plan.results[0], CSHW_E_INVALID_REDIRECT);
        assert_int_equal(run.r[0].status, 200);
        tw_free(&run);
    }
    setup_plan(0, NULL, 0);
    redirect_status = 302;
    redirect_location = "";
    tw_run run;
    tw_serve_str(&run, GET("/", ""), 0, redirect_handler);
    assert_int_equal(plan.results[0], CSHW_E_INVALID_HEADER);
    tw_free(&run);
}

static void error_page_handler(cshw_context *ctx)
{
    cshw_response *res = cshw_context_response(ctx);
    cshw_response_set_content_type(res, "application/json", NULL);
    cshw_response_set_header(res, "Allow", "GET, HEAD");
    cshw_response_puts(res, "{\"partial\":");
    note(cshw_response_send_error(res, 200));
    note(cshw_response_send_error(res, 600));
    note(cshw_response_send_error(res, 405));
}

static void test_send_error_page(void **state)
{
    (void)state;
    setup_plan(0, NULL, 0);
    tw_run run;
    tw_serve_str(&run, GET("/", "") GET("/", ""), 0, error_page_handler);
    assert_int_equal(plan.results[0], CSHW_E_INVALID_STATUS);
    assert_int_equal(plan.results[1], CSHW_E_INVALID_STATUS);
    assert_int_equal(plan.results[2], 0);
    assert_int_equal(run.served, 2); /* an error of the application's: kept alive */
    tw_response *t = &run.r[0];
    assert_int_equal(t->status, 405);
    assert_string_equal(tw_field(t, "allow"), "GET, HEAD");
    assert_string_equal(tw_field(t, "content-type"), "text/html; charset=utf-8");
    assert_int_equal(tw_field_count(t, "content-type"), 1);
    assert_null(strstr(t->body, "partial"));
    assert_non_null(strstr(t->body, "<title>405 Method Not Allowed</title>"));
    assert_non_null(strstr(t->body, "<h1>405 Method Not Allowed</h1>"));
    tw_free(&run);
}

static void late_error_handler(cshw_context *ctx)
{
    cshw_response *res = cshw_context_response(ctx);
    cshw_response_puts(res, "started");
    note(cshw_response_flush(res));
    note(cshw_response_send_error(res, 500));
    note(cshw_response_set_status(res, 500));
    note(cshw_response_set_header(res, "X-Late", "1"));
    note(cshw_response_headers_sent(res));
}

/* Too late for a status: the response is cut short, so that the client
 * sees it incomplete (RFC 9112 §8), and the connection closes. */
static void test_send_error_after_headers_sent(void **state)
{
    (void)state;
    setup_plan(0, NULL, 0);
    tw_run run;
    tw_serve_str(&run, GET("/", "") GET("/", ""), 0, late_error_handler);
    assert_int_equal(plan.results[0], 0);
    assert_int_equal(plan.results[1], CSHW_E_HEADERS_SENT);
    assert_int_equal(plan.results[2], CSHW_E_HEADERS_SENT);
    assert_int_equal(plan.results[3], CSHW_E_HEADERS_SENT);
    assert_int_equal(plan.results[4], 1);
    assert_int_equal(run.served, 1);
    assert_int_equal(run.n, 1);
    assert_int_equal(run.r[0].status, 200);
    assert_int_equal(run.error, CSH_E_BODY_TRUNCATED); /* no last chunk */
    assert_null(strstr(run.out, "0\r\n\r\n"));
    tw_free(&run);
}

/* ---- Date, Server ---- */

static void test_date_and_server(void **state)
{
    (void)state;
    setup_plan(0, NULL, 1);
    tw_run run;
    tw_serve_str(&run, GET("/", ""), 0, body_handler);
    const char *d = tw_field(&run.r[0], "date");
    assert_non_null(d);
    /* IMF-fixdate, RFC 9110 §5.6.7: "Sun, 06 Nov 1994 08:49:37 GMT" */
    assert_int_equal(strlen(d), 29);
    assert_non_null(strstr("Mon,Tue,Wed,Thu,Fri,Sat,Sun,", (char[]){d[0], d[1], d[2], d[3], 0}));
    assert_true(d[4] == ' ' && d[7] == ' ' && d[11] == ' ' && d[16] == ' ' && d[19] == ':' &&
                d[22] == ':' && d[25] == ' ');
    assert_string_equal(d + 26, "GMT");
    /* it is now (strftime in the C locale gives the same form) */
    int found = 0;
    for (time_t t = time(NULL); !found && t > time(NULL) - 5; t--) {
        char expect[64];
        struct tm tm;
        gmtime_r(&t, &tm);
        strftime(expect, sizeof expect, "%a, %d %b %Y %H:%M:%S GMT", &tm);
        found = strcmp(expect, d) == 0;
    }
    assert_true(found);
    assert_null(tw_field(&run.r[0], "server"));
    tw_free(&run);

    cshw_options o;
    cshw_options_init(&o);
    o.server_header = "cshttp-test/1";
    static const char in[] = GET("/", "");
    tw_serve(&run, in, sizeof in - 1, 0, &o, body_handler);
    assert_string_equal(tw_field(&run.r[0], "server"), "cshttp-test/1");
    tw_free(&run);
}

/* ---- a client that stops reading ---- */

static void test_failed_writes(void **state)
{
    (void)state;
    static const char in[] = GET("/", "") GET("/2", "");
    /* buffered: the one write at the end fails; the connection ends */
    setup_plan(0, "text/plain", 1000);
    cshw_memory *m = cshw_memory_new(in, sizeof in - 1, 0);
    cshw_memory_fail_writes_after(m, 20);
    assert_int_equal(cshw_memory_serve(m, NULL, body_handler), 1);
    size_t n;
    cshw_memory_output(m, &n);
    assert_int_equal(n, 20);
    cshw_memory_free(m);

    /* streamed: the handler sees the failure, then every later write too */
    cshw_options o;
    cshw_options_init(&o);
    o.response_buffer = 256;
    setup_plan(0, "text/plain", 5000);
    m = cshw_memory_new(in, sizeof in - 1, 0);
    cshw_memory_fail_writes_after(m, 300);
    assert_int_equal(cshw_memory_serve(m, &o, body_handler), 1);
    assert_int_equal(plan.results[plan.nresults - 1], -EPIPE);
    cshw_memory_output(m, &n);
    assert_int_equal(n, 300);
    cshw_memory_free(m);
}

static void write_after_error_handler(cshw_context *ctx)
{
    cshw_response *res = cshw_context_response(ctx);
    note(cshw_response_flush(res));
    note(cshw_response_puts(res, "more"));
    note(cshw_response_flush(res));
    note(cshw_response_printf(res, "%d", 1));
}

static void test_write_errors_are_sticky(void **state)
{
    (void)state;
    setup_plan(0, NULL, 0);
    static const char in[] = GET("/", "");
    cshw_memory *m = cshw_memory_new(in, sizeof in - 1, 0);
    cshw_memory_fail_writes_after(m, 0);
    assert_int_equal(cshw_memory_serve(m, NULL, write_after_error_handler), 1);
    assert_int_equal(plan.results[0], -EPIPE);
    assert_int_equal(plan.results[1], -EPIPE);
    assert_int_equal(plan.results[2], -EPIPE);
    assert_int_equal(plan.results[3], -EPIPE);
    cshw_memory_free(m);
}

/* ---- files ---- */

static int file_fd = -1;
static uint64_t file_len;

static void file_handler(cshw_context *ctx)
{
    cshw_response *res = cshw_context_response(ctx);
    cshw_response_puts(res, "discarded");
    cshw_response_set_content_type(res, "text/plain", NULL);
    note(cshw_response_send_file(res, file_fd, 10, file_len));
    note(cshw_response_puts(res, "after"));
    note(cshw_response_set_header(res, "X-After", "1"));
    note(cshw_response_send_file(res, file_fd, 0, 1));
}

static int make_file(size_t len)
{
    char path[] = "/tmp/cshw-test-file-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    unlink(path);
    assert_int_equal(write(fd, pattern, len), (ssize_t)len);
    return fd;
}

static void test_send_file(void **state)
{
    (void)state;
    file_fd = make_file(50000);
    file_len = 3000;
    setup_plan(0, NULL, 0);
    tw_run run;
    tw_serve_str(&run, GET("/", "Accept-Encoding: gzip\r\n") HEAD("/", "") GET("/", ""), 1,
                 file_handler);
    assert_int_equal(plan.results[0], 0);
    assert_int_equal(plan.results[1], CSHW_E_BODY_AFTER_FILE);
    assert_int_equal(plan.results[2], CSHW_E_HEADERS_SENT);
    assert_int_equal(plan.results[3], CSHW_E_HEADERS_SENT);
    assert_int_equal(run.served, 3);
    assert_int_equal(run.error, 0);
    for (int i = 0; i < 3; i++) {
        tw_response *t = &run.r[i];
        assert_string_equal(tw_field(t, "content-length"), "3000");
        assert_null(tw_field(t, "content-encoding")); /* files are sent as they are */
        if (i == 1) {
            assert_int_equal(t->body_len, 0);
            continue;
        }
        assert_int_equal(t->body_len, 3000);
        assert_memory_equal(t->body, pattern + 10, 3000);
    }
    tw_free(&run);

    /* a transport without send_file: read and written through the buffer */
    static const char head[] = GET("/", "");
    cshw_memory *m = cshw_memory_new("", 0, 0);
    cshw_transport t = *cshw_memory_transport(m);
    cshw_transport_ops ops = *t.ops;
    ops.send_file = NULL;
    t.ops = &ops;
    cshw_options o;
    cshw_options_init(&o);
    o.response_buffer = 1000; /* several reads */
    cshw_context *ctx = cshw_context_new(&o);
    file_len = 30000; /* beyond the small-file path */
    assert_int_equal(tw_run_one(ctx, &t, head, file_handler), 1);
    tw_collect(&run, m, head);
    assert_int_equal(run.error, 0);
    assert_int_equal(run.r[0].body_len, 30000);
    assert_memory_equal(run.r[0].body, pattern + 10, 30000);
    tw_free(&run);
    cshw_memory_free(m);

    /* a file shorter than announced: the response is cut, the connection
     * closes, the client sees a truncated body */
    m = cshw_memory_new("", 0, 0);
    t.io = cshw_memory_transport(m)->io;
    file_len = 60000;
    setup_plan(0, NULL, 0);
    assert_int_equal(tw_run_one(ctx, &t, head, file_handler), CSHW_E_FILE_READ);
    assert_int_equal(plan.results[0], CSHW_E_FILE_READ);
    tw_collect(&run, m, head);
    assert_string_equal(tw_field(&run.r[0], "content-length"), "60000");
    assert_int_equal(run.error, CSH_E_BODY_TRUNCATED);
    tw_free(&run);
    cshw_memory_free(m);
    cshw_context_free(ctx);
    close(file_fd);
}

/* cshw_response_write_file (0.4.1): file ranges among written bytes, the
 * response going on. ?len: a declared length (written + the ranges). */
static void ranges_handler(cshw_context *ctx)
{
    cshw_response *res = cshw_context_response(ctx);
    cshw_request *req = cshw_context_request(ctx);
    if (cshw_request_query_get(req, "len"))
        note(cshw_response_set_content_length(res, 3 + 20000 + 3));
    note(cshw_response_puts(res, "abc"));
    note(cshw_response_write_file(res, file_fd, 100, 20000));
    note(cshw_response_puts(res, "xyz"));
    /* past the declared length: refused, nothing sent */
    note(cshw_response_write_file(res, file_fd, 0, cshw_request_query_get(req, "len") ? 1 : 0));
}

static void test_write_file_ranges(void **state)
{
    (void)state;
    file_fd = make_file(50000);
    char want[20006];
    memcpy(want, "abc", 3);
    memcpy(want + 3, pattern + 100, 20000);
    memcpy(want + 20003, "xyz", 3);
    setup_plan(0, NULL, 0);
    tw_run run;
    /* HTTP/1.1, no length: chunked, the range a chunk of its own (RFC
     * 9112 §7.1); with a declared length: as it is; HEAD: nothing; gzip
     * accepted: the bytes go as they are */
    tw_serve_str(&run, GET("/", "Accept-Encoding: gzip\r\n") GET("/?len=1", "") HEAD("/", ""), 1,
                 ranges_handler);
    assert_int_equal(run.served, 3);
    assert_int_equal(run.error, 0);
    assert_string_equal(tw_field(&run.r[0], "transfer-encoding"), "chunked");
    assert_null(tw_field(&run.r[0], "content-encoding"));
    assert_string_equal(tw_field(&run.r[1], "content-length"), "20006");
    for (int i = 0; i < 2; i++) {
        assert_int_equal(run.r[i].body_len, sizeof want);
        assert_memory_equal(run.r[i].body, want, sizeof want);
    }
    assert_int_equal(run.r[2].body_len, 0);
    assert_int_equal(plan.results[0], 0);
    assert_int_equal(plan.results[1], 0);
    assert_int_equal(plan.results[2], 0);
    assert_int_equal(plan.results[3], 0); /* a range of 0 bytes: nothing */
    assert_int_equal(plan.results[8], CSHW_E_BODY_LENGTH);
    tw_free(&run);

    /* a transport without send_file: read and written; a bad range */
    static const char head[] = GET("/", "");
    cshw_memory *m = cshw_memory_new("", 0, 0);
    cshw_transport t = *cshw_memory_transport(m);
    cshw_transport_ops ops = *t.ops;
    ops.send_file = NULL;
    t.ops = &ops;
    cshw_options o;
    cshw_options_init(&o);
    cshw_context *ctx = cshw_context_new(&o);
    setup_plan(0, NULL, 0);
    assert_int_equal(tw_run_one(ctx, &t, head, ranges_handler), 1);
    tw_collect(&run, m, head);
    assert_int_equal(run.error, 0);
    assert_int_equal(run.r[0].body_len, sizeof want);
    assert_memory_equal(run.r[0].body, want, sizeof want);
    tw_free(&run);
    cshw_memory_free(m);
    cshw_context_free(ctx);
    close(file_fd);
}

/* A transport that counts its writes and send_files. */
static const cshw_transport_ops *real_ops;
static int n_writes, n_send_files;

static int counting_write(void *io, const void *data, size_t len)
{
    n_writes++;
    return real_ops->write(io, data, len);
}

static int counting_send_file(void *io, int fd, off_t offset, size_t len)
{
    n_send_files++;
    return real_ops->send_file(io, fd, offset, len);
}

/* Up to 16 KiB a file goes out with its head in one write (one segment on a
 * socket); above, the head is written and the body sent with send_file. A
 * small file shorter than announced takes the send_file path, which cuts
 * the response as for a large one. */
static void test_send_file_small_in_one_write(void **state)
{
    (void)state;
    file_fd = make_file(50000);
    static const char head[] = GET("/", "");
    cshw_options o;
    cshw_options_init(&o);
    cshw_context *ctx = cshw_context_new(&o);
    struct {
        uint64_t len;
        int writes, send_files;
    } cases[] = {{1, 1, 0}, {3000, 1, 0}, {16384, 1, 0}, {16385, 1, 1}, {40000, 1, 1}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cshw_memory *m = cshw_memory_new("", 0, 0);
        cshw_transport t = *cshw_memory_transport(m);
        cshw_transport_ops ops = *t.ops;
        real_ops = t.ops;
        ops.write = counting_write;
        ops.send_file = counting_send_file;
        t.ops = &ops;
        file_len = cases[i].len;
        n_writes = n_send_files = 0;
        setup_plan(0, NULL, 0);
        assert_int_equal(tw_run_one(ctx, &t, head, file_handler), 1);
        assert_int_equal(n_writes, cases[i].writes);
        assert_int_equal(n_send_files, cases[i].send_files);
        tw_run run;
        tw_collect(&run, m, head);
        assert_int_equal(run.error, 0);
        assert_int_equal(run.r[0].body_len, cases[i].len);
        assert_memory_equal(run.r[0].body, pattern + 10, cases[i].len);
        tw_free(&run);
        cshw_memory_free(m);
    }
    close(file_fd);

    /* 200 bytes announced, 100 on disk: the transport's send_file fails
     * (the memory transport says -EIO, a socket's sendfile the same way) */
    file_fd = make_file(110);
    file_len = 200;
    cshw_memory *m = cshw_memory_new("", 0, 0);
    setup_plan(0, NULL, 0);
    assert_int_equal(tw_run_one(ctx, cshw_memory_transport(m), head, file_handler), -EIO);
    tw_run run;
    tw_collect(&run, m, head);
    assert_string_equal(tw_field(&run.r[0], "content-length"), "200");
    assert_int_equal(run.error, CSH_E_BODY_TRUNCATED);
    tw_free(&run);
    cshw_memory_free(m);
    cshw_context_free(ctx);
    close(file_fd);
}

/* ---- printf and the rest ---- */

static void printf_handler(cshw_context *ctx)
{
    cshw_response *res = cshw_context_response(ctx);
    note(cshw_response_headers_sent(res));
    note(cshw_response_printf(res, "%d-%s|", 42, "x"));
    note(cshw_response_printf(res, "%.*s", 40000, pattern)); /* larger than the buffer */
    note(cshw_response_headers_sent(res));
    note(cshw_response_printf(res, "|%s", "end"));
}

static void test_printf(void **state)
{
    (void)state;
    setup_plan(0, NULL, 0);
    tw_run run;
    tw_serve_str(&run, GET("/", "") HEAD("/", ""), 0, printf_handler);
    assert_int_equal(plan.results[0], 0);
    assert_int_equal(plan.results[1], 0);
    assert_int_equal(plan.results[2], 0);
    assert_int_equal(plan.results[3], 1); /* it outgrew the buffer */
    assert_int_equal(plan.results[4], 0);
    assert_int_equal(run.error, 0);
    tw_response *t = &run.r[0];
    assert_int_equal(t->body_len, 5 + 40000 + 4);
    assert_memory_equal(t->body, "42-x|", 5);
    assert_memory_equal(t->body + 5, pattern, 40000);
    assert_memory_equal(t->body + 40005, "|end", 4);
    assert_int_equal(run.r[1].body_len, 0);
    tw_free(&run);
}

static void close_handler(cshw_context *ctx)
{
    cshw_response_close_connection(cshw_context_response(ctx));
}

static void length_printf_handler(cshw_context *ctx)
{
    cshw_response *res = cshw_context_response(ctx);
    note(cshw_response_set_content_length(res, 5));
    note(cshw_response_printf(res, "%s", "hello"));
    note(cshw_response_printf(res, "%d", 1));
}

/* Writes 20 bytes, declares 30, then 10 (less than written: refused),
 * sends an error page instead (its own length, not the 30) and flushes
 * it before a last try at declaring. */
static void length_misuse_handler(cshw_context *ctx)
{
    cshw_response *res = cshw_context_response(ctx);
    cshw_response_write(res, pattern, 20);
    note(cshw_response_set_content_length(res, 30));
    note(cshw_response_set_content_length(res, 10));
    note(cshw_response_send_error(res, 500));
    cshw_response_flush(res);
    note(cshw_response_set_content_length(res, 10));
}

/* ---- a declared length (cshw_response_set_content_length) ---- */

static uint64_t declared; /* the length the next handler declares */

/* Declares `declared`, then writes as body_handler does. */
static void length_handler(cshw_context *ctx)
{
    note(cshw_response_set_content_length(cshw_context_response(ctx), declared));
    body_handler(ctx);
}

/* Content-Length as declared, whether the body stays in the buffer,
 * outgrows it or is flushed early: never chunked, never gzip, and the
 * connection goes on to the next request (RFC 9112 §6.2). */
static void test_declared_length_exact(void **state)
{
    (void)state;
    static const size_t buffers[] = {0, 256}; /* 0: the default, the body fits */
    for (size_t b = 0; b < 2; b++) {
        for (int flush = 0; flush <= 1; flush++) {
            cshw_options o;
            cshw_options_init(&o);
            if (buffers[b]) o.response_buffer = buffers[b];
            o.gzip = 1; /* considered, and left alone for a declared length */
            setup_plan(0, "text/plain", 1000);
            plan.flush_after = flush ? 100 : 0;
            declared = 1000;
            static const char in[] =
                GET("/", "Accept-Encoding: gzip\r\n") GET("/2", "Accept-Encoding: gzip\r\n");
            tw_run run;
            tw_serve(&run, in, sizeof in - 1, 0, &o, length_handler);
            assert_int_equal(plan.results[0], 0);
            assert_int_equal(run.served, 2);
            assert_int_equal(run.n, 2);
            assert_int_equal(run.error, 0);
            for (int i = 0; i < 2; i++) {
                assert_int_equal(run.r[i].framing, CSH_BODY_LENGTH);
                assert_string_equal(tw_field(&run.r[i], "content-length"), "1000");
                assert_null(tw_field(&run.r[i], "transfer-encoding"));
                assert_null(tw_field(&run.r[i], "content-encoding"));
                assert_null(tw_field(&run.r[i], "connection"));
                assert_body_is_pattern(&run.r[i], 1000);
            }
            tw_free(&run);
        }
    }
    /* HTTP/1.0 asking to keep the connection: a streamed body with a
     * length needs no close to end it (RFC 9112 §6.3, §9.3) */
    cshw_options o;
    cshw_options_init(&o);
    o.response_buffer = 256;
    setup_plan(0, "text/plain", 1000);
    declared = 1000;
    static const char in10[] = "GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"
                               "GET /2 HTTP/1.0\r\nConnection: keep-alive\r\n\r\n";
    tw_run run;
    tw_serve(&run, in10, sizeof in10 - 1, 0, &o, length_handler);
    assert_int_equal(run.served, 2);
    assert_int_equal(run.error, 0);
    assert_string_equal(tw_field(&run.r[0], "content-length"), "1000");
    assert_string_equal(tw_field(&run.r[0], "connection"), "keep-alive");
    assert_body_is_pattern(&run.r[0], 1000);
    tw_free(&run);
}

/* A write past the declared length fails and sends none of its bytes: a
 * handler that stops there, having written exactly the length, leaves a
 * whole response and the connection goes on. */
static void test_declared_length_more_is_an_error(void **state)
{
    (void)state;
    for (size_t buffer = 0; buffer <= 256; buffer += 256) {
        cshw_options o;
        cshw_options_init(&o);
        if (buffer) o.response_buffer = buffer;
        setup_plan(0, "text/plain", 1000);
        declared = 500; /* the sixth write of 100 goes past it */
        static const char in[] = GET("/", "") GET("/2", "");
        tw_run run;
        tw_serve(&run, in, sizeof in - 1, 0, &o, length_handler);
        assert_int_equal(plan.results[0], 0);                  /* declared */
        assert_int_equal(plan.results[1], 0);                  /* the type */
        assert_int_equal(plan.results[2], CSHW_E_BODY_LENGTH); /* the sixth write */
        assert_int_equal(run.served, 2);
        assert_int_equal(run.error, 0);
        assert_string_equal(tw_field(&run.r[0], "content-length"), "500");
        assert_body_is_pattern(&run.r[0], 500);
        tw_free(&run);
    }
    /* the same through printf, which writes in place when it can */
    cshw_options o;
    cshw_options_init(&o);
    setup_plan(0, "text/plain", 0);
    tw_run run;
    tw_serve(&run, GET("/", ""), sizeof GET("/", "") - 1, 0, &o, length_printf_handler);
    assert_int_equal(plan.results[0], 0);
    assert_int_equal(plan.results[1], 0);
    assert_int_equal(plan.results[2], CSHW_E_BODY_LENGTH);
    assert_int_equal(run.error, 0);
    assert_string_equal(tw_field(&run.r[0], "content-length"), "5");
    assert_string_equal(run.r[0].body, "hello");
    tw_free(&run);
}

/* A handler that ends short of its declared length: the connection is
 * closed after the response (the next request is not served on it), and
 * said so when the head had not gone out yet. */
static void test_declared_length_less_closes(void **state)
{
    (void)state;
    for (size_t buffer = 0; buffer <= 256; buffer += 256) {
        cshw_options o;
        cshw_options_init(&o);
        if (buffer) o.response_buffer = buffer;
        setup_plan(0, "text/plain", 300);
        declared = 1000;
        static const char in[] = GET("/", "") GET("/2", "");
        tw_run run;
        tw_serve(&run, in, sizeof in - 1, 0, &o, length_handler);
        assert_int_equal(plan.results[0], 0);
        assert_int_equal(run.served, 1);
        assert_int_equal(run.n, 1);
        assert_string_equal(tw_field(&run.r[0], "content-length"), "1000");
        assert_null(tw_field(&run.r[0], "transfer-encoding"));
        if (!buffer) assert_string_equal(tw_field(&run.r[0], "connection"), "close");
        /* the client sees a body cut short, never a whole one */
        assert_int_not_equal(run.error, 0);
        assert_int_equal(run.r[0].body_len, 300);
        tw_free(&run);
    }
}

/* HEAD: the declared length, no body, nothing written is no error; 204
 * and 304 send no Content-Length (RFC 9110 §8.6), 205 sends 0; an error
 * page or a redirect brings its own length; too late once the headers
 * went out, and never below what was written. */
static void test_declared_length_rules(void **state)
{
    (void)state;
    setup_plan(0, "text/plain", 0);
    declared = 1000;
    tw_run run;
    tw_serve_str(&run, HEAD("/", "") GET("/", ""), 0, length_handler);
    assert_int_equal(run.served, 2);
    assert_int_equal(run.n, 2);
    assert_string_equal(tw_field(&run.r[1], "connection"), "close"); /* GET: none of its 1000 */
    assert_string_equal(tw_field(&run.r[0], "content-length"), "1000");
    assert_null(tw_field(&run.r[0], "connection"));
    assert_int_equal(run.r[0].body_len, 0);
    tw_free(&run);

    static const int statuses[] = {204, 304, 205};
    for (int i = 0; i < 3; i++) {
        setup_plan(statuses[i], NULL, 0);
        declared = 42;
        tw_serve_str(&run, GET("/", "") GET("/2", ""), 0, length_handler);
        assert_int_equal(run.served, 2);
        assert_int_equal(run.error, 0);
        assert_int_equal(run.r[0].status, statuses[i]);
        if (statuses[i] == 205)
            assert_string_equal(tw_field(&run.r[0], "content-length"), "0");
        else
            assert_null(tw_field(&run.r[0], "content-length"));
        tw_free(&run);
    }

    setup_plan(0, NULL, 0);
    tw_serve_str(&run, GET("/", ""), 0, length_misuse_handler);
    assert_int_equal(plan.results[0], 0);                  /* 30 declared */
    assert_int_equal(plan.results[1], CSHW_E_BODY_LENGTH); /* 10: below the 20 written */
    assert_int_equal(plan.results[2], 0);                  /* the error page */
    assert_int_equal(plan.results[3], CSHW_E_HEADERS_SENT);
    assert_int_equal(run.served, 1);
    assert_int_equal(run.error, 0);
    assert_int_equal(run.r[0].status, 500);
    /* the page flushed: streamed as any page is, the 30 forgotten */
    assert_int_equal(run.r[0].framing, CSH_BODY_CHUNKED);
    assert_null(tw_field(&run.r[0], "content-length"));
    tw_free(&run);
}

static void test_close_connection(void **state)
{
    (void)state;
    tw_run run;
    tw_serve_str(&run, GET("/", "") GET("/", ""), 0, close_handler);
    assert_int_equal(run.served, 1);
    assert_string_equal(tw_field(&run.r[0], "connection"), "close");
    assert_string_equal(tw_field(&run.r[0], "content-length"), "0");
    tw_free(&run);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_status_reasons),
        cmocka_unit_test(test_status_set_and_refused),
        cmocka_unit_test(test_fields_set_append_remove),
        cmocka_unit_test(test_header_injection_refused),
        cmocka_unit_test(test_reserved_fields),
        cmocka_unit_test(test_content_type_and_cookies),
        cmocka_unit_test(test_buffered_content_length),
        cmocka_unit_test(test_overflow_goes_chunked),
        cmocka_unit_test(test_flush_goes_chunked),
        cmocka_unit_test(test_http10_close_delimited),
        cmocka_unit_test(test_http10_keep_alive),
        cmocka_unit_test(test_head_same_headers_as_get),
        cmocka_unit_test(test_no_body_statuses),
        cmocka_unit_test(test_gzip_buffered),
        cmocka_unit_test(test_gzip_accept_encoding),
        cmocka_unit_test(test_gzip_when_not_to),
        cmocka_unit_test(test_gzip_streamed),
        cmocka_unit_test(test_gzip_incompressible_sent_identity),
        cmocka_unit_test(test_etag_weakened_by_gzip),
        cmocka_unit_test(test_redirects),
        cmocka_unit_test(test_send_error_page),
        cmocka_unit_test(test_send_error_after_headers_sent),
        cmocka_unit_test(test_date_and_server),
        cmocka_unit_test(test_failed_writes),
        cmocka_unit_test(test_write_errors_are_sticky),
        cmocka_unit_test(test_send_file),
        cmocka_unit_test(test_write_file_ranges),
        cmocka_unit_test(test_send_file_small_in_one_write),
        cmocka_unit_test(test_printf),
        cmocka_unit_test(test_close_connection),
        cmocka_unit_test(test_declared_length_exact),
        cmocka_unit_test(test_declared_length_more_is_an_error),
        cmocka_unit_test(test_declared_length_less_closes),
        cmocka_unit_test(test_declared_length_rules),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
