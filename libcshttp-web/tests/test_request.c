/* cshw_request: the request line and fields (RFC 9112 §3, RFC 9110 §5),
 * the decoded path, the query string, cookies (RFC 6265 §5.4), forms
 * (x-www-form-urlencoded, multipart/form-data RFC 7578) with uploads in
 * memory or in temporary files, the body as a stream (chunked, RFC 9112
 * §7.1), Expect: 100-continue (RFC 9110 §10.1.1) and what happens to a body
 * the handler leaves unread. Bodies are fed whole and a byte at a time. */
#include <dirent.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "tw.h"

/* What a handler saw, copied out of the request's arena. */
static struct {
    char s[16][256];
    long long v[16];
    int called;
} seen;

static void keep(int i, const char *s)
{
    if (!s) {
        strcpy(seen.s[i], "(null)");
        return;
    }
    snprintf(seen.s[i], sizeof seen.s[i], "%s", s);
}

static void reset_seen(void)
{
    memset(&seen, 0, sizeof seen);
}

#define POST(path, fields, body)                                                                   \
    "POST " path " HTTP/1.1\r\nHost: h\r\n" fields "Content-Length: " #body "\r\n\r\n"

/* ---- request line ---- */

static void line_handler(cshw_context *ctx)
{
    cshw_request *req = cshw_context_request(ctx);
    seen.called++;
    keep(0, cshw_request_method(req));
    seen.v[0] = cshw_request_method_id(req);
    keep(1, cshw_request_target(req));
    keep(2, cshw_request_path(req));
    keep(3, cshw_request_query_string(req));
    seen.v[1] = cshw_request_version_minor(req);
    keep(4, cshw_request_scheme(req));
    keep(5, cshw_request_remote_addr(req));
    seen.v[2] = cshw_request_path_error(req);
    seen.v[3] = cshw_request_content_length(req);
    cshw_response_puts(cshw_context_response(ctx), "ok");
}

static void test_request_line(void **state)
{
    (void)state;
    static const struct {
        const char *in;
        const char *method;
        csh_method id;
        const char *target, *path, *query;
        int minor;
    } cases[] = {
        {"GET /a%20b/./c/../d?x=1&y=%41 HTTP/1.1\r\nHost: h\r\n\r\n", "GET", CSH_METHOD_GET,
         "/a%20b/./c/../d?x=1&y=%41", "/a b/d", "x=1&y=%41", 1},
        {"PURGE /x HTTP/1.1\r\nHost: h\r\n\r\n", "PURGE", CSH_METHOD_OTHER, "/x", "/x", "", 1},
        /* a later 1.x, handled as 1.1 (RFC 9110 §6.2): its minor as sent */
        {"GET /x HTTP/1.7\r\nHost: h\r\n\r\n", "GET", CSH_METHOD_GET, "/x", "/x", "", 7},
        {"DELETE /q? HTTP/1.0\r\n\r\n", "DELETE", CSH_METHOD_DELETE, "/q?", "/q", "", 0},
        {"GET /a?b?c=/d HTTP/1.1\r\nHost: h\r\n\r\n", "GET", CSH_METHOD_GET, "/a?b?c=/d", "/a",
         "b?c=/d", 1},
        /* absolute-form, RFC 9112 §3.2.2 */
        {"GET http://example.com/a/../b?q=1 HTTP/1.1\r\nHost: example.com\r\n\r\n", "GET",
         CSH_METHOD_GET, "http://example.com/a/../b?q=1", "/b", "q=1", 1},
        {"GET http://example.com HTTP/1.1\r\nHost: example.com\r\n\r\n", "GET", CSH_METHOD_GET,
         "http://example.com", "/", "", 1},
        /* asterisk-form, §3.2.4: no path */
        {"OPTIONS * HTTP/1.1\r\nHost: h\r\n\r\n", "OPTIONS", CSH_METHOD_OPTIONS, "*", "(null)", "",
         1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        reset_seen();
        tw_run run;
        tw_serve_str(&run, cases[i].in, 1, line_handler);
        assert_int_equal(seen.called, 1);
        assert_string_equal(seen.s[0], cases[i].method);
        assert_int_equal(seen.v[0], cases[i].id);
        assert_string_equal(seen.s[1], cases[i].target);
        assert_string_equal(seen.s[2], cases[i].path);
        assert_string_equal(seen.s[3], cases[i].query);
        assert_int_equal(seen.v[1], cases[i].minor);
        assert_string_equal(seen.s[4], "http");
        assert_string_equal(seen.s[5], "192.0.2.1");
        assert_int_equal(seen.v[3], 0);
        assert_int_equal(run.r[0].status, 200); /* the handler answered */
        tw_free(&run);
    }
}

static void test_scheme_and_remote_from_transport(void **state)
{
    (void)state;
    reset_seen();
    cshw_memory *m = cshw_memory_new("", 0, 0);
    cshw_transport t = *cshw_memory_transport(m);
    t.is_secure = 1;
    t.remote_addr = "2001:db8::1";
    cshw_context *ctx = cshw_context_new(NULL);
    assert_int_equal(tw_run_one(ctx, &t, "GET / HTTP/1.1\r\nHost: h\r\n\r\n", line_handler), 1);
    assert_string_equal(seen.s[4], "https");
    assert_string_equal(seen.s[5], "2001:db8::1");
    t.remote_addr = NULL;
    assert_int_equal(tw_run_one(ctx, &t, "GET / HTTP/1.1\r\nHost: h\r\n\r\n", line_handler), 1);
    assert_string_equal(seen.s[5], "(null)");
    cshw_context_free(ctx);
    cshw_memory_free(m);
}

/* A path that cannot be decoded safely is an error, never a file name:
 * NULL for the handler, 400 if it does not answer. */
static void path_handler(cshw_context *ctx)
{
    cshw_request *req = cshw_context_request(ctx);
    if (seen.called++) return; /* the next request */
    keep(0, cshw_request_path(req));
    seen.v[0] = cshw_request_path_error(req);
}

static void test_path_errors(void **state)
{
    (void)state;
    static const struct {
        const char *target;
        int error;
    } cases[] = {
        {"/%00", CSHW_E_PATH_CONTROL},
        {"/a%00.txt", CSHW_E_PATH_CONTROL},
        {"/a%0d%0aX:%20y", CSHW_E_PATH_CONTROL},
        {"/..", CSHW_E_PATH_TRAVERSAL},
        {"/../etc/passwd", CSHW_E_PATH_TRAVERSAL},
        {"/a/../../b", CSHW_E_PATH_TRAVERSAL},
        {"/%2e%2e/x", CSHW_E_PATH_TRAVERSAL},
        {"/a%2Fb", CSHW_E_PATH_SEPARATOR},
        {"/a%5cb", CSHW_E_PATH_SEPARATOR},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        reset_seen();
        char in[256];
        snprintf(in, sizeof in,
                 "GET %s HTTP/1.1\r\nHost: h\r\n\r\nGET /next HTTP/1.1\r\nHost: h\r\n\r\n",
                 cases[i].target);
        tw_run run;
        tw_serve(&run, in, strlen(in), 0, NULL, path_handler);
        assert_string_equal(seen.s[0], "(null)");
        assert_int_equal(seen.v[0], cases[i].error);
        assert_int_equal(run.r[0].status, 400);
        assert_string_equal(tw_field(&run.r[0], "content-type"), "text/html; charset=utf-8");
        assert_non_null(strstr(run.r[0].body, "400 Bad Request"));
        assert_int_equal(run.served, 2); /* a bad path does not poison the connection */
        assert_int_equal(run.r[1].status, 200);
        tw_free(&run);
    }
}

/* ---- header fields ---- */

static void fields_handler(cshw_context *ctx)
{
    cshw_request *req = cshw_context_request(ctx);
    keep(0, cshw_request_header(req, "x-multi"));
    keep(1, cshw_request_header(req, "X-MULTI"));
    const char *all[2];
    seen.v[0] = (long long)cshw_request_header_all(req, "X-Multi", all, 2);
    keep(2, all[0]);
    keep(3, all[1]);
    keep(4, cshw_request_header(req, "x-missing"));
    keep(5, cshw_request_header(req, "x-spaces"));
    seen.v[1] = (long long)cshw_request_header_count(req);
    const char *value;
    keep(6, cshw_request_header_at(req, 1, &value));
    keep(7, value);
    keep(8, cshw_request_header_at(req, 99, &value));
    keep(9, value);
    seen.v[2] = (long long)cshw_request_header_all(req, "nope", all, 2);
    keep(10, cshw_request_header(req, "empty"));
    seen.v[3] = (long long)cshw_request_message(req)->num_headers;
}

static void test_header_lookup(void **state)
{
    (void)state;
    reset_seen();
    tw_run run;
    tw_serve_str(&run,
                 "GET / HTTP/1.1\r\nHost: h\r\nX-Multi: one\r\nx-spaces:   padded \t \r\n"
                 "X-MULTI: two\r\nx-multi: three\r\nEmpty:\r\n\r\n",
                 1, fields_handler);
    assert_string_equal(seen.s[0], "one");
    assert_string_equal(seen.s[1], "one");
    assert_int_equal(seen.v[0], 3); /* all of them counted, two stored */
    assert_string_equal(seen.s[2], "one");
    assert_string_equal(seen.s[3], "two");
    assert_string_equal(seen.s[4], "(null)");
    assert_string_equal(seen.s[5], "padded"); /* RFC 9110 §5.5: OWS is not the value */
    assert_int_equal(seen.v[1], 6);
    assert_string_equal(seen.s[6], "X-Multi");
    assert_string_equal(seen.s[7], "one");
    assert_string_equal(seen.s[8], "(null)");
    assert_string_equal(seen.s[9], "(null)");
    assert_int_equal(seen.v[2], 0);
    assert_string_equal(seen.s[10], "");
    assert_int_equal(seen.v[3], 6);
    tw_free(&run);
}

/* ---- query string ---- */

static void query_handler(cshw_context *ctx)
{
    cshw_request *req = cshw_context_request(ctx);
    cshw_arena *a = cshw_context_arena(ctx);
    size_t before = cshw_arena_used(a);
    const cshw_pairs *q = cshw_request_query(req);
    size_t after = cshw_arena_used(a);
    const cshw_pairs *q2 = cshw_request_query(req);
    seen.v[0] = after > before;                         /* parsed on first access */
    seen.v[1] = q == q2 && cshw_arena_used(a) == after; /* and only once */
    seen.v[2] = (long long)q->count;
    keep(0, cshw_request_query_get(req, "a"));
    keep(1, cshw_request_query_get(req, "b"));
    keep(2, cshw_request_query_get(req, "missing"));
    const char *all[4];
    seen.v[3] = (long long)cshw_pairs_get_all(q, "a", all, 4);
    keep(3, seen.v[3] > 1 ? all[1] : NULL);
    seen.v[4] = cshw_request_query_error(req);
    keep(4, cshw_request_query_get(req, "e"));
    seen.v[5] = cshw_request_query_error(req) ? 0 : (long long)q->items[0].value_len;
}

static void test_query(void **state)
{
    (void)state;
    reset_seen();
    tw_run run;
    tw_serve_str(&run, "GET /p?a=1&b=x+y%21&a=2&e=&z HTTP/1.1\r\nHost: h\r\n\r\n", 0,
                 query_handler);
    assert_int_equal(seen.v[0], 1);
    assert_int_equal(seen.v[1], 1);
    assert_int_equal(seen.v[2], 5);
    assert_string_equal(seen.s[0], "1");
    assert_string_equal(seen.s[1], "x y!");
    assert_string_equal(seen.s[2], "(null)");
    assert_int_equal(seen.v[3], 2);
    assert_string_equal(seen.s[3], "2");
    assert_int_equal(seen.v[4], 0);
    assert_string_equal(seen.s[4], "");
    tw_free(&run);

    /* malformed escapes stay as they are (WHATWG percent-decode); an
     * encoded NUL is a byte of the value, which value_len shows */
    reset_seen();
    tw_serve_str(&run, "GET /p?a=%zz%4&b=%00x&a=%%41 HTTP/1.1\r\nHost: h\r\n\r\n", 1,
                 query_handler);
    assert_string_equal(seen.s[0], "%zz%4");
    assert_string_equal(seen.s[3], "%A");
    assert_string_equal(seen.s[1], ""); /* "\0x" as a C string */
    assert_int_equal(seen.v[4], 0);
    tw_free(&run);

    /* past the parser's limits: empty, an error for the handler, and the
     * toolkit does not answer for it */
    char in[8192];
    strcpy(in, "GET /p?");
    for (int i = 0; i < 1100; i++) strcat(in, "a&");
    strcat(in, " HTTP/1.1\r\nHost: h\r\n\r\n");
    reset_seen();
    tw_serve(&run, in, strlen(in), 0, NULL, query_handler);
    assert_int_equal(seen.v[2], 0);
    assert_int_equal(seen.v[4], CSHW_E_FORM_TOO_MANY_PAIRS);
    assert_int_equal(run.r[0].status, 200);
    tw_free(&run);
}

/* ---- cookies ---- */

static void cookie_handler(cshw_context *ctx)
{
    cshw_request *req = cshw_context_request(ctx);
    const cshw_pairs *c = cshw_request_cookies(req);
    seen.v[0] = (long long)c->count;
    keep(0, cshw_request_cookie(req, "a"));
    keep(1, cshw_request_cookie(req, "b"));
    keep(2, cshw_request_cookie(req, "c"));
    keep(3, cshw_request_cookie(req, "d"));
    seen.v[1] = cshw_request_cookie_error(req);
    seen.v[2] = cshw_request_cookies(req) == c;
}

static void test_cookies(void **state)
{
    (void)state;
    reset_seen();
    tw_run run;
    tw_serve_str(&run, "GET / HTTP/1.1\r\nHost: h\r\nCookie: a=1; b=\"two\";c=3\r\n\r\n", 1,
                 cookie_handler);
    assert_int_equal(seen.v[0], 3);
    assert_string_equal(seen.s[0], "1");
    assert_string_equal(seen.s[1], "two"); /* RFC 6265 §4.1.1: DQUOTEs are not the value */
    assert_string_equal(seen.s[2], "3");
    assert_int_equal(seen.v[1], 0);
    assert_int_equal(seen.v[2], 1);
    tw_free(&run);

    /* several Cookie lines are joined; malformed pieces skipped */
    reset_seen();
    tw_serve_str(&run,
                 "GET / HTTP/1.1\r\nHost: h\r\nCookie: a=1; =x; novalue\r\nX: y\r\n"
                 "Cookie: d=4\r\n\r\n",
                 0, cookie_handler);
    assert_string_equal(seen.s[0], "1");
    assert_string_equal(seen.s[3], "4");
    assert_string_equal(seen.s[2], "(null)");
    assert_int_equal(seen.v[0], 2);
    assert_int_equal(seen.v[1], 0);
    tw_free(&run);

    /* past the limits: empty and an error, not an answer */
    char in[8192];
    strcpy(in, "GET / HTTP/1.1\r\nHost: h\r\nCookie: a=");
    memset(in + strlen(in), 'v', 5000);
    in[strlen("GET / HTTP/1.1\r\nHost: h\r\nCookie: a=") + 5000] = '\0';
    strcat(in, "; b=2\r\n\r\n");
    reset_seen();
    tw_serve(&run, in, strlen(in), 0, NULL, cookie_handler);
    assert_int_equal(seen.v[0], 0);
    assert_string_equal(seen.s[1], "(null)");
    assert_int_equal(seen.v[1], CSHW_E_COOKIE_TOO_LARGE);
    assert_int_equal(run.r[0].status, 200);
    tw_free(&run);

    /* no Cookie at all */
    reset_seen();
    tw_serve_str(&run, "GET / HTTP/1.1\r\nHost: h\r\n\r\n", 0, cookie_handler);
    assert_int_equal(seen.v[0], 0);
    assert_int_equal(seen.v[1], 0);
    tw_free(&run);
}

/* ---- forms ---- */

static void form_handler(cshw_context *ctx)
{
    cshw_request *req = cshw_context_request(ctx);
    if (seen.called++) return; /* only the first request of the input */
    const cshw_pairs *f = cshw_request_form(req);
    seen.v[0] = (long long)f->count;
    seen.v[1] = cshw_request_form_error(req);
    keep(0, cshw_request_form_get(req, "name"));
    keep(1, cshw_request_form_get(req, "msg"));
    const cshw_pair *p = cshw_pairs_find(f, "bin");
    seen.v[2] = p ? (long long)p->value_len : -1;
    seen.v[3] = cshw_request_form(req) == f;
    cshw_response *res = cshw_context_response(ctx);
    if (!seen.v[1]) cshw_response_printf(res, "%s|%s", seen.s[0], seen.s[1]);
}

static void test_form_urlencoded(void **state)
{
    (void)state;
    static const char *const ins[] = {
        POST("/f", "Content-Type: application/x-www-form-urlencoded\r\n",
             31) "name=J%C3%B6rg&msg=a+b%26c&bin=",
        "POST /f HTTP/1.1\r\nHost: h\r\nContent-Type: Application/X-WWW-Form-URLEncoded; "
        "charset=UTF-8\r\nTransfer-Encoding: chunked\r\n\r\n"
        "5\r\nname=\r\n9;ext=1\r\nJ%C3%B6rg\r\n11\r\n&msg=a+b%26c&bin=\r\n0\r\nX-T: 1\r\n\r\n",
    };
    for (size_t i = 0; i < 2; i++) {
        for (size_t piece = 0; piece <= 2; piece++) {
            reset_seen();
            char in[512];
            snprintf(in, sizeof in, "%sGET /next HTTP/1.1\r\nHost: h\r\n\r\n", ins[i]);
            tw_run run;
            tw_serve(&run, in, strlen(in), piece, NULL, form_handler);
            assert_int_equal(seen.v[1], 0);
            assert_int_equal(seen.v[0], 3);
            assert_string_equal(seen.s[0], "J\xc3\xb6rg");
            assert_string_equal(seen.s[1], "a b&c");
            assert_int_equal(seen.v[2], 0);
            assert_int_equal(seen.v[3], 1);
            assert_int_equal(run.served, 2); /* the body was read exactly */
            assert_string_equal(run.r[0].body, "J\xc3\xb6rg|a b&c");
            tw_free(&run);
        }
    }
}

/* The form is refused past max_form_bytes (413); a declared length before
 * anything is read. The connection closes after a body error. */
static void test_form_too_large(void **state)
{
    (void)state;
    cshw_options o;
    cshw_options_init(&o);
    o.max_form_bytes = 16;
    static const char *const ins[] = {
        POST("/f", "Content-Type: application/x-www-form-urlencoded\r\n",
             20) "name=aaaaaaaaaaaaaaa"
                 "GET /next HTTP/1.1\r\nHost: h\r\n\r\n",
        "POST /f HTTP/1.1\r\nHost: h\r\nContent-Type: application/x-www-form-urlencoded\r\n"
        "Transfer-Encoding: chunked\r\n\r\n10\r\nname=aaaaaaaaaaa\r\n4\r\naaaa\r\n0\r\n\r\n"
        "GET /next HTTP/1.1\r\nHost: h\r\n\r\n",
    };
    for (size_t i = 0; i < 2; i++) {
        reset_seen();
        tw_run run;
        tw_serve(&run, ins[i], strlen(ins[i]), 1, &o, form_handler);
        assert_int_equal(seen.v[1], CSHW_E_FORM_TOO_LARGE);
        assert_int_equal(seen.v[0], 0);
        assert_string_equal(seen.s[0], "(null)");
        assert_int_equal(run.r[0].status, 413);
        assert_non_null(strstr(run.r[0].body, "413 Content Too Large"));
        assert_string_equal(tw_field(&run.r[0], "connection"), "close");
        assert_int_equal(run.served, 1);
        tw_free(&run);
    }
}

static void answering_form_handler(cshw_context *ctx)
{
    cshw_request *req = cshw_context_request(ctx);
    seen.v[0] = cshw_request_form_error(req);
    cshw_response_set_status(cshw_context_response(ctx), 422);
    cshw_response_puts(cshw_context_response(ctx), "my own answer");
}

static void test_form_error_answered_by_handler(void **state)
{
    (void)state;
    reset_seen();
    tw_run run;
    tw_serve_str(&run,
                 POST("/f", "Content-Type: multipart/form-data; boundary=xyz\r\n", 9) "--xyz\r\nZZ",
                 0, answering_form_handler);
    assert_int_equal(seen.v[0], CSHW_E_MULTIPART_TRUNCATED);
    assert_int_equal(run.r[0].status, 422);
    assert_string_equal(run.r[0].body, "my own answer");
    assert_string_equal(tw_field(&run.r[0], "connection"), "close");
    tw_free(&run);
}

static void stream_after_form_handler(cshw_context *ctx)
{
    cshw_request *req = cshw_context_request(ctx);
    seen.v[0] = (long long)cshw_request_form(req)->count;
    seen.v[1] = cshw_request_form_error(req);
    char buf[64];
    size_t len = 0;
    ssize_t n;
    while ((n = cshw_request_read(req, buf + len, sizeof buf - 1 - len)) > 0) len += (size_t)n;
    buf[len] = '\0';
    seen.v[2] = n < 0 ? n : (long long)len;
    keep(0, buf);
}

/* Not a form: an empty form, no error, and the body is the handler's */
static void test_not_a_form(void **state)
{
    (void)state;
    reset_seen();
    tw_run run;
    tw_serve_str(&run, POST("/", "Content-Type: application/json\r\n", 7) "{\"a\":1}", 1,
                 stream_after_form_handler);
    assert_int_equal(seen.v[0], 0);
    assert_int_equal(seen.v[1], 0);
    assert_int_equal(seen.v[2], 7);
    assert_string_equal(seen.s[0], "{\"a\":1}");
    tw_free(&run);

    reset_seen();
    tw_serve_str(&run, "GET /?name=x HTTP/1.1\r\nHost: h\r\n\r\n", 0, stream_after_form_handler);
    assert_int_equal(seen.v[0], 0);
    assert_int_equal(seen.v[1], 0);
    assert_int_equal(seen.v[2], 0);
    tw_free(&run);
}

/* ---- multipart/form-data and uploads ---- */

static char temp_dir[64];

static size_t count_dir(const char *path)
{
    DIR *d = opendir(path);
    assert_non_null(d);
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
    closedir(d);
    return n;
}

static char big[5000];

static void upload_handler(cshw_context *ctx)
{
    cshw_request *req = cshw_context_request(ctx);
    if (seen.called++) return; /* only the first request of the input */
    seen.v[0] = (long long)cshw_request_form(req)->count;
    seen.v[1] = cshw_request_form_error(req);
    keep(0, cshw_request_form_get(req, "title"));
    keep(1, cshw_request_form_get(req, "empty"));
    const cshw_file *files;
    seen.v[2] = (long long)cshw_request_files(req, &files);
    if (seen.v[2] != 2) return;
    /* the small file, in memory */
    keep(2, files[0].field);
    keep(3, files[0].filename);
    keep(4, files[0].content_type);
    seen.v[3] = (long long)files[0].size;
    seen.v[4] =
        files[0].data && !files[0].path && memcmp(files[0].data, "hello\r\n--y\r\n-x", 15) == 0;
    /* the large one, in a temporary file that exists during the request */
    const cshw_file *f = cshw_request_file(req, "doc");
    keep(5, f->filename);
    keep(6, f->content_type);
    seen.v[5] = (long long)f->size;
    seen.v[6] = f->data == NULL && f->path != NULL;
    if (f->path) {
        keep(7, f->path);
        FILE *fp = fopen(f->path, "rb");
        static char got[sizeof big + 1];
        size_t n = fp ? fread(got, 1, sizeof got, fp) : 0;
        if (fp) fclose(fp);
        seen.v[7] = n == sizeof big && memcmp(got, big, sizeof big) == 0;
        struct stat st;
        seen.v[8] = stat(f->path, &st) == 0 ? (long long)(st.st_mode & 0777) : -1;
    }
    seen.v[9] = cshw_request_file(req, "nope") == NULL;
    seen.v[10] = (long long)count_dir(temp_dir);
    cshw_response_puts(cshw_context_response(ctx), "stored");
}

/* RFC 7578: fields and files, with name, filename, type and size */
static size_t build_upload(char *out, size_t cap, size_t big_len)
{
    size_t n = (size_t)snprintf(out, cap,
                                "preamble, ignored\r\n"
                                "--x\r\nContent-Disposition: form-data; name=\"title\"\r\n\r\n"
                                "Holiday \"photos\"\r\n"
                                "--x\r\nContent-Disposition: form-data; name=\"pic\"; "
                                "filename=\"../a b.txt\"\r\nContent-Type: text/plain\r\n\r\n"
                                "hello\r\n--y\r\n-x\r\n"
                                "--x\r\nContent-Disposition: form-data; name=\"empty\"\r\n\r\n"
                                "\r\n--x\r\nContent-Disposition: form-data; name=\"doc\"; "
                                "filename=\"report.bin\"\r\n\r\n");
    memcpy(out + n, big, big_len);
    n += big_len;
    n += (size_t)snprintf(out + n, cap - n, "\r\n--x--\r\nepilogue, ignored");
    return n;
}

static void test_multipart_upload(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof big; i++) big[i] = (char)(i * 7 + i / 251);
    static char body[8192], in[9000];
    size_t blen = build_upload(body, sizeof body, sizeof big);
    cshw_options o;
    cshw_options_init(&o);
    o.upload_memory_threshold = 100;
    o.temp_dir = temp_dir;
    static const size_t pieces[] = {0, 1, 7, 4096};
    for (size_t k = 0; k < 4; k++) {
        int len = snprintf(in, sizeof in,
                           "POST /up HTTP/1.1\r\nHost: h\r\nContent-Type: multipart/form-data; "
                           "boundary=x\r\nContent-Length: %zu\r\n\r\n",
                           blen);
        memcpy(in + len, body, blen);
        size_t n = (size_t)len + blen;
        memcpy(in + n, "GET /next HTTP/1.1\r\nHost: h\r\n\r\n", 32);
        n += 32;
        reset_seen();
        tw_run run;
        tw_serve(&run, in, n, pieces[k], &o, upload_handler);
        assert_int_equal(seen.v[1], 0);
        assert_int_equal(seen.v[0], 2);
        assert_string_equal(seen.s[0], "Holiday \"photos\"");
        assert_string_equal(seen.s[1], "");
        assert_int_equal(seen.v[2], 2);
        assert_string_equal(seen.s[2], "pic");
        assert_string_equal(seen.s[3], "../a b.txt"); /* as sent: never a path */
        assert_string_equal(seen.s[4], "text/plain");
        assert_int_equal(seen.v[3], 14);
        assert_int_equal(seen.v[4], 1);
        assert_string_equal(seen.s[5], "report.bin");
        assert_string_equal(seen.s[6], "text/plain"); /* RFC 7578 §4.4 default */
        assert_int_equal(seen.v[5], sizeof big);
        assert_int_equal(seen.v[6], 1);
        assert_int_equal(seen.v[7], 1);
        assert_int_equal(seen.v[8], 0600);
        assert_int_equal(seen.v[9], 1);
        assert_int_equal(seen.v[10], 1);
        assert_int_equal(strncmp(seen.s[7], temp_dir, strlen(temp_dir)), 0);
        /* removed at the end of the request */
        assert_int_equal(count_dir(temp_dir), 0);
        assert_int_equal(run.served, 2);
        assert_string_equal(run.r[0].body, "stored");
        tw_free(&run);
    }
}

static void test_multipart_malformed(void **state)
{
    (void)state;
    static const struct {
        const char *type, *body;
        int error, status;
    } cases[] = {
        {"multipart/form-data; boundary=x",
         "--x\r\nContent-Disposition: form-data; name=a\r\n\r\n1", CSHW_E_MULTIPART_TRUNCATED, 400},
        {"multipart/form-data; boundary=x", "--xjunk\r\n", CSHW_E_MULTIPART_INVALID_DELIMITER, 400},
        {"multipart/form-data; boundary=x", "--x\r\nContent-Type: text/plain\r\n\r\n1\r\n--x--",
         CSHW_E_MULTIPART_INVALID_DISPOSITION, 400},
        {"multipart/form-data; boundary=x",
         "--x\r\nContent-Disposition: form-data; name=a\r\nBad Header\r\n\r\n1\r\n--x--",
         CSHW_E_MULTIPART_INVALID_HEADER, 400},
        {"multipart/form-data; boundary=x",
         "--x\r\nContent-Disposition: form-data; name=a\nX: y\r\n\r\n1\r\n--x--",
         CSHW_E_MULTIPART_INVALID_HEADER, 400},
        {"multipart/form-data", "--x--", CSHW_E_MULTIPART_NO_BOUNDARY, 400},
        {"multipart/form-data; boundary=\"\"", "--x--", CSHW_E_MULTIPART_INVALID_BOUNDARY, 400},
        {"multipart/form-data; boundary", "--x--", CSHW_E_MULTIPART_INVALID_CONTENT_TYPE, 400},
        {"multipart/form-data; boundary=x", "\r\n", CSHW_E_MULTIPART_TRUNCATED, 400},
        {"multipart/mixed; boundary=x", "--x--", 0, 200}, /* not a form */
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        for (size_t piece = 0; piece <= 1; piece++) {
            char in[512];
            snprintf(in, sizeof in,
                     "POST / HTTP/1.1\r\nHost: h\r\nContent-Type: %s\r\nContent-Length: %zu\r\n\r\n"
                     "%sGET /next HTTP/1.1\r\nHost: h\r\n\r\n",
                     cases[i].type, strlen(cases[i].body), cases[i].body);
            reset_seen();
            tw_run run;
            tw_serve(&run, in, strlen(in), piece, NULL, upload_handler);
            if (seen.v[1] != cases[i].error)
                fail_msg("case %zu: %s vs %s", i, cshw_error_name((int)seen.v[1]),
                         cshw_error_name(cases[i].error));
            assert_int_equal(seen.v[0], 0);
            assert_int_equal(seen.v[2], 0);
            assert_int_equal(run.r[0].status, cases[i].status);
            if (cases[i].error) {
                assert_string_equal(tw_field(&run.r[0], "connection"), "close");
                assert_int_equal(run.served, 1);
            } else {
                assert_int_equal(run.served, 2);
            }
            tw_free(&run);
        }
    }
}

static void test_multipart_limits(void **state)
{
    (void)state;
    cshw_options o;
    cshw_options_init(&o);
    o.temp_dir = temp_dir;
    o.upload_memory_threshold = 10;
    static char in[16384];
    const char *parts = "--x\r\nContent-Disposition: form-data; name=a\r\n\r\n1\r\n"
                        "--x\r\nContent-Disposition: form-data; name=b\r\n\r\n2\r\n"
                        "--x\r\nContent-Disposition: form-data; name=c\r\n\r\n3\r\n--x--";
    snprintf(in, sizeof in,
             "POST / HTTP/1.1\r\nHost: h\r\nContent-Type: multipart/form-data; boundary=x\r\n"
             "Content-Length: %zu\r\n\r\n%s",
             strlen(parts), parts);
    o.max_form_parts = 2;
    reset_seen();
    tw_run run;
    tw_serve(&run, in, strlen(in), 0, &o, upload_handler);
    assert_int_equal(seen.v[1], CSHW_E_MULTIPART_TOO_MANY_PARTS);
    assert_int_equal(run.r[0].status, 413);
    tw_free(&run);
    o.max_form_parts = 1000;

    /* one part's header section past max_part_header */
    o.max_part_header = 64;
    const char *fat = "--x\r\nContent-Disposition: form-data; name=a\r\n"
                      "X-Padding: 0123456789012345678901234567890123456789\r\n\r\n1\r\n--x--";
    snprintf(in, sizeof in,
             "POST / HTTP/1.1\r\nHost: h\r\nContent-Type: multipart/form-data; boundary=x\r\n"
             "Content-Length: %zu\r\n\r\n%s",
             strlen(fat), fat);
    reset_seen();
    tw_serve(&run, in, strlen(in), 1, &o, upload_handler);
    assert_int_equal(seen.v[1], CSHW_E_MULTIPART_HEADER_TOO_LARGE);
    assert_int_equal(run.r[0].status, 413);
    tw_free(&run);
    o.max_part_header = 16384;

    /* the whole body past max_form_bytes, in the middle of a file already
     * spilled to disk: the error, and the temporary file is gone */
    o.max_form_bytes = 3000;
    const char *hdr = "--x\r\nContent-Disposition: form-data; name=f; filename=f\r\n\r\n";
    int len = snprintf(in, sizeof in,
                       "POST / HTTP/1.1\r\nHost: h\r\nContent-Type: multipart/form-data; "
                       "boundary=x\r\nTransfer-Encoding: chunked\r\n\r\n1000\r\n%s",
                       hdr);
    size_t start = (size_t)len - strlen(hdr), n = (size_t)len;
    while (n < start + 0x1000) in[n++] = 'z';
    memcpy(in + n, "\r\n0\r\n\r\n", 7);
    n += 7;
    reset_seen();
    tw_serve(&run, in, n, 0, &o, upload_handler);
    assert_int_equal(seen.v[1], CSHW_E_FORM_TOO_LARGE);
    assert_int_equal(run.r[0].status, 413);
    assert_int_equal(count_dir(temp_dir), 0);
    tw_free(&run);
}

/* ---- the body as a stream ---- */

static size_t read_cap;

static void echo_handler(cshw_context *ctx)
{
    cshw_request *req = cshw_context_request(ctx);
    cshw_response *res = cshw_context_response(ctx);
    if (seen.called++) return; /* only the first request of the input */
    seen.v[0] = cshw_request_content_length(req);
    char buf[256];
    ssize_t n;
    long long total = 0;
    while ((n = cshw_request_read(req, buf, read_cap)) > 0) {
        cshw_response_write(res, buf, (size_t)n);
        total += n;
    }
    seen.v[1] = n;
    seen.v[2] = total;
    seen.v[3] = cshw_request_read(req, buf, read_cap); /* at the end: 0 again */
    seen.v[4] = (long long)cshw_request_form(req)->count;
    seen.v[5] = cshw_request_form_error(req);
}

static void test_body_stream(void **state)
{
    (void)state;
    static const struct {
        const char *in;
        long long length;
        const char *body;
    } cases[] = {
        {POST("/", "", 11) "hello world", 11, "hello world"},
        /* the exchange reads a chunked body before the handler runs: the
         * handler sees it decoded, with its length */
        {"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
         "5\r\nhello\r\n1;a=b;c=\"d\"\r\n \r\n5\r\nworld\r\n0\r\nX-Trailer: 1\r\nY: 2\r\n\r\n",
         11, "hello world"},
        {"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 0, ""},
        {"GET / HTTP/1.1\r\nHost: h\r\n\r\n", 0, ""},
    };
    static const size_t caps[] = {1, 3, 256};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        for (size_t piece = 0; piece <= 2; piece++) {
            for (size_t c = 0; c < 3; c++) {
                char in[512];
                snprintf(in, sizeof in, "%sGET /next HTTP/1.1\r\nHost: h\r\n\r\n", cases[i].in);
                reset_seen();
                read_cap = caps[c];
                tw_run run;
                tw_serve(&run, in, strlen(in), piece, NULL, echo_handler);
                assert_int_equal(seen.v[0], cases[i].length);
                assert_int_equal(seen.v[1], 0);
                assert_int_equal(seen.v[2], strlen(cases[i].body));
                assert_int_equal(seen.v[3], 0);
                assert_int_equal(seen.v[4], 0);
                assert_int_equal(seen.v[5], cases[i].length ? CSHW_E_BODY_CONSUMED : 0);
                assert_string_equal(run.r[0].body, cases[i].body);
                assert_int_equal(run.served, 2); /* exactly the body was taken */
                tw_free(&run);
            }
        }
    }
}

/* A body that fails is answered by the exchange before any handler runs
 * (RFC 9112 §7.1: a malformed chunked body is a 400; RFC 9110 §15.5.14: a
 * chunk size past 63 bits, 413), with Connection: close, whole and byte by
 * byte; a body the input ends inside is not answered (the client is gone). */
static void test_body_errors(void **state)
{
    (void)state;
    static const struct {
        const char *in;
        int status; /* 0: nothing answered */
    } cases[] = {
        {POST("/", "", 20) "only ten b", 0},
        {"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel", 0},
        {"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nX-T: 1\r\n", 0},
        {"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n",
         400},
        {"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhelloXX0\r\n\r\n",
         400},
        {"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nBad Trailer\r\n\r\n",
         400},
        {"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
         "fffffffffffffffffff\r\n",
         413},
        {"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n-5\r\nhello\r\n0\r\n\r\n",
         400},
        {"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n0x5\r\nhello\r\n0\r\n\r\n",
         400},
        {"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n+5\r\nhello\r\n0\r\n\r\n",
         400},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        for (size_t piece = 0; piece <= 1; piece++) {
            reset_seen();
            read_cap = 256;
            tw_run run;
            tw_serve(&run, cases[i].in, strlen(cases[i].in), piece, NULL, echo_handler);
            if (seen.called || (cases[i].status ? run.n != 1 : run.n != 0))
                fail_msg("case %zu piece %zu: called %d, %zu responses", i, piece, seen.called,
                         run.n);
            if (cases[i].status) {
                assert_int_equal(run.r[0].status, cases[i].status);
                assert_string_equal(tw_field(&run.r[0], "connection"), "close");
                assert_non_null(tw_field(&run.r[0], "date")); /* RFC 9110 §6.6.1 */
            }
            tw_free(&run);
        }
    }
}

static void silent_reader(cshw_context *ctx)
{
    char buf[64];
    seen.v[0] = cshw_request_read(cshw_context_request(ctx), buf, sizeof buf);
    while (cshw_request_read(cshw_context_request(ctx), buf, sizeof buf) > 0) continue;
}

/* A body error is never answered 2xx: the exchange answers it before the
 * handler, which never sees the request */
static void test_body_error_answered(void **state)
{
    (void)state;
    reset_seen();
    tw_run run;
    tw_serve_str(&run, "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\nq\r\n", 0,
                 echo_handler);
    assert_int_equal(seen.called, 0);
    assert_int_equal(run.r[0].status, 400);
    assert_non_null(strstr(run.r[0].body, "chunked"));
    tw_free(&run);
}

/* ---- Expect: 100-continue ---- */

static void rejecting_handler(cshw_context *ctx)
{
    seen.called++;
    cshw_response_send_error(cshw_context_response(ctx), 403);
}

#define CONTINUE "HTTP/1.1 100 Continue\r\n\r\n"

static void test_expect_continue(void **state)
{
    (void)state;
    static const char in[] =
        POST("/", "Expect: 100-continue\r\n", 5) "hello"
                                                 "GET /next HTTP/1.1\r\nHost: h\r\n\r\n";
    /* The exchange reads the body before the handler, so it invites it
     * once the head is in, however the bytes arrive: 100 first, then the
     * answer; the connection goes on. */
    for (size_t piece = 0; piece <= 1; piece++) {
        reset_seen();
        read_cap = 256;
        tw_run run;
        tw_serve(&run, in, sizeof in - 1, piece, NULL, echo_handler);
        assert_memory_equal(run.out, CONTINUE, strlen(CONTINUE));
        assert_null(strstr(run.out + 1, CONTINUE));
        assert_int_equal(run.r[0].status, 100);
        assert_int_equal(run.n, 3);
        assert_int_equal(run.r[1].status, 200);
        assert_string_equal(run.r[1].body, "hello");
        assert_int_equal(run.served, 2);
        tw_free(&run);
    }
    /* rejected by the handler: the body was read already, so nothing is
     * left on the connection and it goes on */
    reset_seen();
    tw_run run;
    tw_serve(&run, in, sizeof in - 1, 0, NULL, rejecting_handler);
    assert_memory_equal(run.out, CONTINUE, strlen(CONTINUE));
    assert_int_equal(run.r[1].status, 403);
    assert_null(tw_field(&run.r[1], "connection"));
    assert_int_equal(run.served, 2);
    tw_free(&run);

    /* reading the form sends it too */
    static const char form[] =
        POST("/", "Expect: 100-continue\r\nContent-Type: application/x-www-form-urlencoded\r\n",
             6) "name=x";
    reset_seen();
    tw_serve(&run, form, sizeof form - 1, 1, NULL, form_handler);
    assert_memory_equal(run.out, CONTINUE, strlen(CONTINUE));
    assert_string_equal(seen.s[0], "x");
    tw_free(&run);

    /* a form too large by its Content-Length: 413 from the form limit (the
     * body was within max_request_body, so it was invited and read) */
    cshw_options o;
    cshw_options_init(&o);
    o.max_form_bytes = 3;
    reset_seen();
    tw_serve(&run, form, sizeof form - 1, 0, &o, form_handler);
    assert_int_equal(run.r[1].status, 413);
    tw_free(&run);

    /* HTTP/1.0: the expectation is ignored (RFC 9110 §10.1.1) */
    static const char old[] =
        "POST / HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\nhi";
    reset_seen();
    tw_serve(&run, old, sizeof old - 1, 0, NULL, echo_handler);
    assert_null(strstr(run.out, "100 Continue"));
    assert_string_equal(run.r[0].body, "hi");
    tw_free(&run);

    /* any other expectation: 417, the handler never runs */
    static const char other[] = POST("/", "Expect: 200-ok\r\n", 2) "hi";
    reset_seen();
    tw_serve(&run, other, sizeof other - 1, 0, NULL, echo_handler);
    assert_int_equal(seen.called, 0);
    assert_int_equal(run.r[0].status, 417);
    tw_free(&run);
}

/* ---- a body left unread ---- */

static void ignoring_handler(cshw_context *ctx)
{
    seen.called++;
    cshw_response_puts(cshw_context_response(ctx), "ignored the body");
}

static void test_unread_body(void **state)
{
    (void)state;
    cshw_options o;
    cshw_options_init(&o);
    o.max_drain_bytes = 10;
    static const struct {
        const char *in;
        int served, close_field;
    } cases[] = {
        /* drained: the next request is served */
        {POST("/", "", 10) "0123456789", 2, 0},
        {"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
         "5\r\n01234\r\n5\r\n56789\r\n0\r\n\r\n",
         2, 0},
        /* more than max_drain_bytes: the exchange read the body before the
         * handler, so what the handler left costs nothing and the
         * connection goes on (max_drain_bytes bounds streaming routes) */
        {POST("/", "", 11) "0123456789a", 2, 0},
        {"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
         "6\r\n012345\r\n6\r\n6789ab\r\n0\r\n\r\n",
         2, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        for (size_t piece = 0; piece <= 1; piece++) {
            char in[512];
            snprintf(in, sizeof in, "%sGET /next HTTP/1.1\r\nHost: h\r\n\r\n", cases[i].in);
            reset_seen();
            tw_run run;
            tw_serve(&run, in, strlen(in), piece, &o, ignoring_handler);
            if (run.served != cases[i].served) fail_msg("case %zu piece %zu", i, piece);
            assert_int_equal(run.r[0].status, 200);
            const char *c = tw_field(&run.r[0], "connection");
            assert_int_equal(c != NULL, cases[i].close_field);
            tw_free(&run);
        }
    }
}

/* RFC 9112 §6.1: gzip under chunked would reach the handler encoded */
static void test_transfer_coding_refused(void **state)
{
    (void)state;
    reset_seen();
    tw_run run;
    tw_serve_str(&run,
                 "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"
                 "3\r\nabc\r\n0\r\n\r\n",
                 0, ignoring_handler);
    assert_int_equal(seen.called, 0);
    assert_int_equal(run.r[0].status, 501);
    assert_string_equal(tw_field(&run.r[0], "connection"), "close");
    tw_free(&run);
}

/* A transport whose reads time out, as the engine's do past its deadline */
static cshw_memory *timeout_out;

static int timeout_peek(void *io, const char **data, size_t *len)
{
    (void)io;
    *data = NULL;
    *len = 0;
    return -ETIMEDOUT;
}

static void timeout_consume(void *io, size_t n)
{
    (void)io;
    (void)n;
}

static int timeout_write(void *io, const void *data, size_t len)
{
    (void)io;
    const cshw_transport *t = cshw_memory_transport(timeout_out);
    return t->ops->write(t->io, data, len);
}

static void test_read_timeout(void **state)
{
    (void)state;
    static const cshw_transport_ops ops = {.size = sizeof(cshw_transport_ops),
                                           .peek = timeout_peek,
                                           .consume = timeout_consume,
                                           .write = timeout_write};
    cshw_transport t = {.size = sizeof t, .ops = &ops};
    timeout_out = cshw_memory_new("", 0, 0);
    cshw_context *ctx = cshw_context_new(NULL);
    static const char head[] = POST("/", "", 5);
    reset_seen();
    assert_int_equal(tw_run_one(ctx, &t, head, silent_reader), 0);
    assert_int_equal(seen.v[0], -ETIMEDOUT);
    tw_run run;
    tw_collect(&run, timeout_out, head);
    assert_int_equal(run.r[0].status, 408); /* RFC 9110 §15.5.9 */
    assert_string_equal(tw_field(&run.r[0], "connection"), "close");
    tw_free(&run);
    cshw_context_free(ctx);
    cshw_memory_free(timeout_out);
}

/* A socket-like transport: the body's bytes, then nothing more for now (a
 * peek then waits and times out, as the engine's would while the client
 * keeps the connection open without sending the next request). */
static const char *eob_data;
static size_t eob_len, eob_peeks_after_end;

static int eob_peek(void *io, const char **data, size_t *len)
{
    (void)io;
    if (eob_len == 0) {
        eob_peeks_after_end++;
        *data = NULL;
        *len = 0;
        return -ETIMEDOUT;
    }
    *data = eob_data;
    *len = eob_len;
    return 0;
}

static void eob_consume(void *io, size_t n)
{
    (void)io;
    eob_data += n;
    eob_len -= n;
}

static void body_to_end(cshw_context *ctx)
{
    char buf[64];
    ssize_t n, total = 0;
    while ((n = cshw_request_read(cshw_context_request(ctx), buf, sizeof buf)) > 0) total += n;
    seen.v[0] = (int)n;
    seen.v[1] = (int)total;
}

/* The end of a Content-Length body is known from the length: reading past
 * its last byte returns 0 without asking the transport for more (RFC 9112
 * §6.2), which on a keep-alive socket would wait for the next request. */
static void test_length_body_end_needs_no_more_input(void **state)
{
    (void)state;
    static const cshw_transport_ops ops = {.size = sizeof(cshw_transport_ops),
                                           .peek = eob_peek,
                                           .consume = eob_consume,
                                           .write = timeout_write};
    cshw_transport t = {.size = sizeof t, .ops = &ops};
    timeout_out = cshw_memory_new("", 0, 0);
    cshw_context *ctx = cshw_context_new(NULL);
    eob_data = "hello";
    eob_len = 5;
    eob_peeks_after_end = 0;
    reset_seen();
    assert_int_equal(tw_run_one(ctx, &t, POST("/", "", 5), body_to_end), 1);
    assert_int_equal(seen.v[0], 0);
    assert_int_equal(seen.v[1], 5);
    assert_int_equal(eob_peeks_after_end, 0);
    cshw_context_free(ctx);
    cshw_memory_free(timeout_out);
}

static int setup(void **state)
{
    (void)state;
    strcpy(temp_dir, "/tmp/cshw-test-up-XXXXXX");
    assert_non_null(mkdtemp(temp_dir));
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    rmdir(temp_dir);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_length_body_end_needs_no_more_input),
        cmocka_unit_test(test_request_line),
        cmocka_unit_test(test_scheme_and_remote_from_transport),
        cmocka_unit_test(test_path_errors),
        cmocka_unit_test(test_header_lookup),
        cmocka_unit_test(test_query),
        cmocka_unit_test(test_cookies),
        cmocka_unit_test(test_form_urlencoded),
        cmocka_unit_test(test_form_too_large),
        cmocka_unit_test(test_form_error_answered_by_handler),
        cmocka_unit_test(test_not_a_form),
        cmocka_unit_test(test_multipart_upload),
        cmocka_unit_test(test_multipart_malformed),
        cmocka_unit_test(test_multipart_limits),
        cmocka_unit_test(test_body_stream),
        cmocka_unit_test(test_body_errors),
        cmocka_unit_test(test_body_error_answered),
        cmocka_unit_test(test_expect_continue),
        cmocka_unit_test(test_unread_body),
        cmocka_unit_test(test_transfer_coding_refused),
        cmocka_unit_test(test_read_timeout),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
