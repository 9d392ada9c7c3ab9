/* cshw_static_serve through the in-memory transport: statuses, header
 * fields and bytes for files, folders, traversal attempts, preconditions
 * (RFC 9110 §13), ranges (§14), precompressed siblings, methods, and no
 * descriptor left open after any request. The root is a temporary folder
 * (static_fixture.h). */
#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/sysmacros.h>
#include <time.h>

#include <cmocka.h>

#include "cshttp/web/context.h"
#include "cshttp/web/error.h"
#include "cshttp/web/memory.h"
#include "cshttp/web/response.h"
#include "cshttp/web/static.h"
#include "static_fixture.h"
#include "static_priv.h"

static fixture fx;
static cshw_static_options g_o; /* the options the handler serves with */
static const cshw_static_options *g_other; /* served with instead when set */
static int g_rc;                           /* what cshw_static_serve returned last */

static void handler(cshw_context *ctx)
{
    cshw_response *res = cshw_context_response(ctx);
    g_rc = cshw_static_serve(ctx, g_other ? g_other : &g_o);
    if (g_rc < 0 && !cshw_response_headers_sent(res)) {
        int st = cshw_error_status(g_rc);
        cshw_response_send_error(res, st >= 400 ? st : 500);
    }
}

/* ---- responses ---- */

#define MAX_FIELDS 64

typedef struct resp {
    struct resp *next; /* every response of a test, freed in teardown */
    char *raw;         /* the head, NUL-terminated, split in place */
    int status;
    size_t nf;
    char *names[MAX_FIELDS], *values[MAX_FIELDS];
    unsigned char *body; /* de-chunked */
    size_t body_len;
    size_t wire_len; /* bytes of this response on the wire */
} resp;

static resp *all_resps;

static resp *resp_new(void)
{
    resp *r = calloc(1, sizeof *r);
    assert_non_null(r);
    r->next = all_resps;
    all_resps = r;
    return r;
}

static int free_resps(void **state)
{
    (void)state;
    while (all_resps) {
        resp *n = all_resps->next;
        free(all_resps->raw);
        free(all_resps->body);
        free(all_resps);
        all_resps = n;
    }
    cshw_static_options_init(&g_o);
    g_o.root = fx.root;
    cshw__static_no_openat2 = 0;
    return 0;
}

static const char *hdr(const resp *r, const char *name)
{
    for (size_t i = 0; i < r->nf; i++)
        if (strcasecmp(r->names[i], name) == 0) return r->values[i];
    return NULL;
}

static size_t hdr_count(const resp *r, const char *name)
{
    size_t n = 0;
    for (size_t i = 0; i < r->nf; i++) n += strcasecmp(r->names[i], name) == 0;
    return n;
}

static void body_append(resp *r, const char *p, size_t n)
{
    r->body = realloc(r->body, r->body_len + n + 1);
    assert_non_null(r->body);
    memcpy(r->body + r->body_len, p, n);
    r->body_len += n;
    r->body[r->body_len] = 0;
}

/* Parses one response at data[0 .. len) (no_body: the answer to HEAD). */
static resp *parse_resp(const char *data, size_t len, int no_body)
{
    resp *r = resp_new();
    const char *end = NULL;
    for (size_t i = 0; i + 3 < len; i++)
        if (memcmp(data + i, "\r\n\r\n", 4) == 0) {
            end = data + i;
            break;
        }
    if (!end) fail_msg("no complete head in %zu bytes: %.*s", len, (int)len, data);
    size_t hl = (size_t)(end - data);
    r->raw = malloc(hl + 1);
    assert_non_null(r->raw);
    memcpy(r->raw, data, hl);
    r->raw[hl] = 0;
    assert_int_equal(strncmp(r->raw, "HTTP/1.1 ", 9), 0);
    r->status = atoi(r->raw + 9);
    char *line = strstr(r->raw, "\r\n");
    while (line) {
        *line = 0;
        char *name = line + 2, *next = strstr(name, "\r\n");
        char *colon = strchr(name, ':');
        assert_non_null(colon);
        *colon = 0;
        char *v = colon + 1;
        while (*v == ' ') v++;
        assert_true(r->nf < MAX_FIELDS);
        r->names[r->nf] = name;
        r->values[r->nf++] = v;
        line = next;
    }
    const char *p = end + 4, *lim = data + len;
    const char *te = hdr(r, "Transfer-Encoding"), *cl = hdr(r, "Content-Length");
    int bodiless = no_body || r->status == 304 || r->status == 204 || r->status < 200;
    if (bodiless) {
        /* nothing */
    } else if (te) {
        assert_string_equal(te, "chunked");
        for (;;) {
            char *e;
            unsigned long n = strtoul(p, &e, 16);
            assert_true(e[0] == '\r' && e[1] == '\n');
            p = e + 2;
            if (n == 0) {
                assert_true(p[0] == '\r' && p[1] == '\n');
                p += 2;
                break;
            }
            assert_true(p + n + 2 <= lim);
            body_append(r, p, n);
            p += n;
            assert_true(p[0] == '\r' && p[1] == '\n');
            p += 2;
        }
    } else if (cl) {
        size_t n = (size_t)strtoull(cl, NULL, 10);
        assert_true(p + n <= lim);
        body_append(r, p, n);
        p += n;
    } else {
        body_append(r, p, (size_t)(lim - p));
        p = lim;
    }
    if (!r->body) body_append(r, "", 0);
    r->wire_len = (size_t)(p - data);
    return r;
}

/* ---- serving ---- */

/* Serves raw through cshw_memory_serve and returns its output (malloc);
 * checks that no descriptor was left open. */
static char *serve_raw(const char *raw, size_t *out_len)
{
    int before = fix_fd_count();
    cshw_memory *m = cshw_memory_new(raw, strlen(raw), 0);
    assert_non_null(m);
    int served = cshw_memory_serve(m, NULL, handler);
    assert_true(served >= 0);
    size_t n;
    const char *out = cshw_memory_output(m, &n);
    char *copy = malloc(n + 1);
    assert_non_null(copy);
    memcpy(copy, out, n);
    copy[n] = 0;
    cshw_memory_free(m);
    assert_int_equal(fix_fd_count(), before);
    *out_len = n;
    return copy;
}

/* One request, one response: the whole output must be that response. */
static resp *request(const char *method, const char *target, const char *fields)
{
    char raw[8192];
    snprintf(raw, sizeof raw, "%s %s HTTP/1.1\r\nHost: test\r\n%s\r\n", method, target,
             fields ? fields : "");
    size_t n;
    char *out = serve_raw(raw, &n);
    resp *r = parse_resp(out, n, strcmp(method, "HEAD") == 0);
    if (r->wire_len != n)
        fail_msg("%zu bytes after the response to %s %s", n - r->wire_len, method, target);
    free(out);
    return r;
}

static resp *get(const char *target, const char *fields)
{
    return request("GET", target, fields);
}

static void expect_status(const resp *r, int status)
{
    if (r->status != status) fail_msg("status %d, want %d (%s)", r->status, status, r->raw);
}

static void expect_body(const resp *r, const char *s)
{
    assert_int_equal(r->body_len, strlen(s));
    assert_memory_equal(r->body, s, r->body_len);
}

static void expect_pattern(const unsigned char *b, size_t off, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (b[i] != fix_byte(off + i)) fail_msg("byte %zu of the part at %zu differs", i, off);
}

/* the documented ETag: "<size hex>-<mtime ns hex>" */
static const char *etag_of(uint64_t size, const char *suffix)
{
    static char buf[4][64];
    static int k;
    char *b = buf[k++ % 4];
    snprintf(b, 64, "\"%" PRIx64 "-%" PRIx64 "%s\"", size, (uint64_t)FIX_MTIME * 1000000000u,
             suffix);
    return b;
}

#define E_HELLO etag_of(13, "")

/* ---- files ---- */

static void test_get_file(void **state)
{
    (void)state;
    resp *r = get("/hello.txt", NULL);
    expect_status(r, 200);
    assert_int_equal(g_rc, 0);
    expect_body(r, "hello, world\n");
    assert_string_equal(hdr(r, "Content-Length"), "13");
    assert_string_equal(hdr(r, "Content-Type"), "text/plain; charset=utf-8");
    assert_string_equal(hdr(r, "ETag"), E_HELLO);
    assert_string_equal(hdr(r, "Last-Modified"), FIX_DATE);
    assert_string_equal(hdr(r, "Accept-Ranges"), "bytes");
    assert_string_equal(hdr(r, "Cache-Control"), "max-age=0");
    assert_null(hdr(r, "Vary"));
    assert_null(hdr(r, "Content-Encoding"));
    assert_null(hdr(r, "Content-Range"));
    assert_int_equal(hdr_count(r, "ETag"), 1);
}

static void test_types_in_responses(void **state)
{
    (void)state;
    assert_string_equal(hdr(get("/app.js", NULL), "Content-Type"),
                        "text/javascript; charset=utf-8");
    assert_string_equal(hdr(get("/style.css", NULL), "Content-Type"), "text/css; charset=utf-8");
    assert_string_equal(hdr(get("/page.html", NULL), "Content-Type"), "text/html; charset=utf-8");
    assert_string_equal(hdr(get("/unknown.xyz", NULL), "Content-Type"), "application/octet-stream");
    assert_string_equal(hdr(get("/data.bin", NULL), "Content-Type"), "application/octet-stream");
}

/* RFC 9110 §9.3.2: HEAD gets GET's header section and no content */
static void test_head_like_get(void **state)
{
    (void)state;
    const char *paths[] = {"/hello.txt", "/data.bin", "/", "/empty.txt", "/style.css"};
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
        resp *g = get(paths[i], NULL);
        resp *h = request("HEAD", paths[i], NULL);
        expect_status(h, 200);
        assert_int_equal(h->body_len, 0); /* request() checked nothing follows the head */
        assert_int_equal(g->nf, h->nf);
        for (size_t k = 0; k < g->nf; k++) {
            assert_string_equal(g->names[k], h->names[k]);
            if (strcasecmp(g->names[k], "Date") != 0)
                assert_string_equal(g->values[k], h->values[k]);
        }
    }
}

static void test_empty_file(void **state)
{
    (void)state;
    resp *r = get("/empty.txt", NULL);
    expect_status(r, 200);
    assert_string_equal(hdr(r, "Content-Length"), "0");
    assert_int_equal(r->body_len, 0);
}

/* A transport around the memory one, with send_file counted or absent. */
typedef struct wrap {
    const cshw_transport *under;
    int calls;
    cshw_transport_ops ops;
    cshw_transport t;
} wrap;

static int w_peek(void *io, const char **d, size_t *n)
{
    wrap *w = io;
    return w->under->ops->peek(w->under->io, d, n);
}
static void w_consume(void *io, size_t n)
{
    wrap *w = io;
    w->under->ops->consume(w->under->io, n);
}
static int w_write(void *io, const void *d, size_t n)
{
    wrap *w = io;
    return w->under->ops->write(w->under->io, d, n);
}
static int w_send_file(void *io, int fd, off_t off, size_t n)
{
    wrap *w = io;
    w->calls++;
    return w->under->ops->send_file(w->under->io, fd, off, n);
}

/* Serves one request as an engine would, with or without send_file. */
static resp *serve_wrapped(const char *raw, int with_send_file, int *calls)
{
    int before = fix_fd_count();
    cshw_memory *m = cshw_memory_new(raw, strlen(raw), 0);
    wrap w;
    memset(&w, 0, sizeof w);
    w.under = cshw_memory_transport(m);
    w.ops.size = sizeof w.ops;
    w.ops.peek = w_peek;
    w.ops.consume = w_consume;
    w.ops.write = w_write;
    w.ops.send_file = with_send_file ? w_send_file : NULL;
    w.t.size = sizeof w.t;
    w.t.ops = &w.ops;
    w.t.io = &w;
    csh_header fields[32];
    csh_limits lim;
    csh_limits_init(&lim);
    csh_parser p;
    csh_parser_init(&p, CSH_REQUEST, fields, 32, &lim, 0);
    assert_int_equal(csh_parser_execute(&p, raw, strlen(raw)), CSH_OK);
    const char *d;
    size_t n;
    assert_int_equal(w_peek(&w, &d, &n), 0);
    w_consume(&w, p.msg.head_length);
    cshw_context *ctx = cshw_context_new(NULL);
    assert_non_null(ctx);
    assert_int_equal(cshw_context_begin(ctx, raw, &p.msg, &w.t), 0);
    assert_true(cshw_context_run(ctx, handler) >= 0);
    cshw_context_free(ctx);
    const char *out = cshw_memory_output(m, &n);
    resp *r = parse_resp(out, n, 0);
    assert_int_equal(r->wire_len, n);
    cshw_memory_free(m);
    assert_int_equal(fix_fd_count(), before);
    *calls = w.calls;
    return r;
}

/* The body goes through the transport's send_file when it has one, and is
 * read and written by the toolkit when it has none: same bytes. */
static void test_send_file_and_copy(void **state)
{
    (void)state;
    const char *raw = "GET /big.bin HTTP/1.1\r\nHost: t\r\n\r\n";
    int calls = 0;
    resp *a = serve_wrapped(raw, 1, &calls);
    expect_status(a, 200);
    assert_int_equal(calls, 1);
    assert_int_equal(a->body_len, 200000);
    expect_pattern(a->body, 0, 200000);
    resp *b = serve_wrapped(raw, 0, &calls);
    assert_int_equal(calls, 0);
    assert_int_equal(b->body_len, 200000);
    expect_pattern(b->body, 0, 200000);
    /* a range, both ways */
    const char *rr = "GET /big.bin HTTP/1.1\r\nHost: t\r\nRange: bytes=100000-149999\r\n\r\n";
    a = serve_wrapped(rr, 1, &calls);
    expect_status(a, 206);
    assert_int_equal(calls, 1);
    expect_pattern(a->body, 100000, 50000);
    b = serve_wrapped(rr, 0, &calls);
    expect_status(b, 206);
    assert_int_equal(b->body_len, 50000);
    expect_pattern(b->body, 100000, 50000);
    /* up to 16 KiB (a small file, a short range) goes out with its head in
     * one write, send_file or not */
    rr = "GET /big.bin HTTP/1.1\r\nHost: t\r\nRange: bytes=100000-100099\r\n\r\n";
    a = serve_wrapped(rr, 1, &calls);
    expect_status(a, 206);
    assert_int_equal(calls, 0);
    assert_int_equal(a->body_len, 100);
    expect_pattern(a->body, 100000, 100);
}

/* Two requests on one connection: the first response is complete and the
 * connection stays usable (keep-alive). HTTP/1.0 gets its answer too. */
static void test_pipelined_and_http10(void **state)
{
    (void)state;
    size_t n;
    char *out = serve_raw("GET /hello.txt HTTP/1.1\r\nHost: t\r\n\r\n"
                          "GET /data.bin HTTP/1.1\r\nHost: t\r\nRange: bytes=-3\r\n\r\n",
                          &n);
    resp *a = parse_resp(out, n, 0);
    expect_status(a, 200);
    expect_body(a, "hello, world\n");
    resp *b = parse_resp(out + a->wire_len, n - a->wire_len, 0);
    expect_status(b, 206);
    assert_string_equal(hdr(b, "Content-Range"), "bytes 997-999/1000");
    expect_pattern(b->body, 997, 3);
    assert_int_equal(a->wire_len + b->wire_len, n);
    free(out);
    out = serve_raw("GET /hello.txt HTTP/1.0\r\n\r\n", &n);
    a = parse_resp(out, n, 0);
    expect_status(a, 200);
    expect_body(a, "hello, world\n");
    free(out);
}

/* ---- methods (RFC 9110 §15.5.6) ---- */

static void test_methods(void **state)
{
    (void)state;
    const char *methods[] = {"POST", "PUT", "DELETE", "OPTIONS", "PATCH", "BREW"};
    for (size_t i = 0; i < sizeof methods / sizeof methods[0]; i++) {
        resp *r = request(methods[i], "/hello.txt", "Content-Length: 0\r\n");
        expect_status(r, 405);
        assert_int_equal(g_rc, 0);
        assert_string_equal(hdr(r, "Allow"), "GET, HEAD");
        assert_null(hdr(r, "ETag"));
        r = request(methods[i], "/sub/", "Content-Length: 0\r\n");
        expect_status(r, 405);
        assert_string_equal(hdr(r, "Allow"), "GET, HEAD");
        /* no such file: not answered, so that a router can go on */
        r = request(methods[i], "/missing", "Content-Length: 0\r\n");
        expect_status(r, 404);
        assert_int_equal(g_rc, CSHW_E_NOT_FOUND);
    }
    /* with a body the handler does not read */
    size_t n;
    char *out =
        serve_raw("POST /hello.txt HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\nabcde", &n);
    resp *r = parse_resp(out, n, 0);
    expect_status(r, 405);
    assert_int_equal(r->wire_len, n);
    free(out);
}

/* ---- what is not served ---- */

static void test_not_found(void **state)
{
    (void)state;
    const char *paths[] = {"/missing.txt", "/hello.txt/", "/sub/missing/x", "/hello.txt/x",
                           "/sub/nested/"};
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
        resp *r = get(paths[i], NULL);
        expect_status(r, 404);
        assert_int_equal(g_rc, CSHW_E_NOT_FOUND);
        assert_null(hdr(r, "ETag"));
    }
}

static void test_not_regular(void **state)
{
    (void)state;
    /* a FIFO would block a plain open(2); a socket cannot be opened */
    time_t t0 = time(NULL);
    resp *r = get("/fifo", NULL);
    expect_status(r, 404);
    assert_true(time(NULL) - t0 < 5);
    expect_status(get("/sock", NULL), 404);
    /* a device, through a link the option allows */
    g_o.follow_symlinks = 1;
    expect_status(get("/devnull", NULL), 404);
    assert_int_equal(g_rc, CSHW_E_NOT_FOUND);
    g_o.follow_symlinks = 0;
    /* a device node in the root, where the system lets us make one */
    char p[400];
    snprintf(p, sizeof p, "%s/null", fx.root);
    if (mknod(p, S_IFCHR | 0666, makedev(1, 3)) == 0) {
        expect_status(get("/null", NULL), 404);
        unlink(p);
    }
}

typedef struct denied_case {
    const char *target;
    int status;
} denied_case;

static int denied_child(void *arg)
{
    const denied_case *c = arg;
    for (int i = 0; c[i].target; i++) {
        for (int mode = 0; mode < 2; mode++) {
            cshw__static_no_openat2 = mode;
            char raw[256];
            snprintf(raw, sizeof raw, "GET %s HTTP/1.1\r\nHost: t\r\n\r\n", c[i].target);
            cshw_memory *m = cshw_memory_new(raw, strlen(raw), 0);
            if (!m || cshw_memory_serve(m, NULL, handler) != 1) return 20;
            size_t n;
            const char *out = cshw_memory_output(m, &n);
            int st = n > 12 ? atoi(out + 9) : 0;
            cshw_memory_free(m);
            if (st != c[i].status) return 30 + i;
        }
    }
    return 0;
}

/* permission denied is 403 (as "nobody": root reads everything) */
static void test_permission_denied(void **state)
{
    (void)state;
    static const denied_case cases[] = {
        {"/noread.txt", 403},
        {"/closed/x.txt", 403},
        {"/closed/", 403},
        {"/locked/", 403}, /* an index that may not be read: 403, not a listing */
        {"/hello.txt", 200},
        {NULL, 0},
    };
    assert_int_equal(fix_unprivileged(denied_child, (void *)cases), 0);
}

/* ---- traversal: nothing outside the root, ever ---- */

typedef struct trav_case {
    const char *target;
    int status;
} trav_case;

static const trav_case trav_cases[] = {
    {"/../outside.txt", 400},
    {"/../../../../etc/passwd", 400},
    {"/%2e%2e/outside.txt", 400},
    {"/%2E%2e/%2e%2E/etc/passwd", 400},
    {"/.%2e/outside.txt", 400},
    {"/sub/%2e%2e/%2e%2e/outside.txt", 400},
    {"/sub/./../../outside.txt", 400},
    {"/sub/..%2f..%2foutside.txt", 400},
    {"/%2e%2e%2foutside.txt", 400},
    {"/..%5coutside.txt", 400},
    {"/sub\\..\\..\\outside.txt", 400},
    {"/hello.txt%00.html", 400},
    {"/%00", 400},
    {"/sub/%00/../../outside.txt", 400},
    {"/%252e%252e/outside.txt", 404}, /* decoded once: a name "%2e%2e" */
    {"//etc/passwd", 404},            /* root/etc/passwd, not /etc/passwd */
    {"/etc/passwd", 404},
    {"/link_out", 404},
    {"/link_out_abs", 404},
    {"/sub/link_out_sub", 404},
    {"/dir_out/secret.txt", 404},
    {"/dir_out/", 404},
    {"/dangling", 404},
    {"/loop", 404},
    {"/devnull", 404},
    {"/link_prefix", 404},
};

static void run_traversal(void)
{
    for (size_t i = 0; i < sizeof trav_cases / sizeof trav_cases[0]; i++) {
        char raw[512];
        snprintf(raw, sizeof raw, "GET %s HTTP/1.1\r\nHost: t\r\n\r\n", trav_cases[i].target);
        size_t n;
        char *out = serve_raw(raw, &n);
        if (strstr(out, "SECRET") || strstr(out, "root:"))
            fail_msg("%s served outside content", trav_cases[i].target);
        resp *r = parse_resp(out, n, 0);
        if (r->status != trav_cases[i].status)
            fail_msg("%s: %d, want %d", trav_cases[i].target, r->status, trav_cases[i].status);
        free(out);
    }
    /* an absolute-form target is never a way out either */
    size_t n;
    char *out = serve_raw("GET http://test/../outside.txt HTTP/1.1\r\nHost: test\r\n\r\n", &n);
    assert_null(strstr(out, "SECRET"));
    assert_int_not_equal(atoi(out + 9), 200);
    free(out);
    /* links that stay inside are served */
    expect_body(get("/link_in", NULL), "hello, world\n");
    expect_body(get("/link_abs_in", NULL), "hello, world\n");
    expect_body(get("/sub/link_in_sub", NULL), "hello, world\n");
}

static void test_traversal_openat2(void **state)
{
    (void)state;
    cshw__static_no_openat2 = 0;
    run_traversal();
}

static void test_traversal_portable(void **state)
{
    (void)state;
    cshw__static_no_openat2 = 1;
    run_traversal();
}

static void test_follow_symlinks_option(void **state)
{
    (void)state;
    expect_status(get("/link_out", NULL), 404);
    assert_int_equal(g_rc, CSHW_E_MAP_PATH_OUTSIDE);
    g_o.follow_symlinks = 1;
    expect_body(get("/link_out", NULL), "OUTSIDE SECRET\n");
    expect_body(get("/dir_out/secret.txt", NULL), "OUTDIR SECRET\n");
    /* the option allows links, never ".." */
    expect_status(get("/%2e%2e/outside.txt", NULL), 400);
}

/* dotfiles are 404 unless hidden_files, except /.well-known/ (RFC 8615) */
static void test_hidden_files(void **state)
{
    (void)state;
    expect_status(get("/.secret", NULL), 404);
    assert_int_equal(g_rc, CSHW_E_NOT_FOUND);
    expect_status(get("/sub/.hidden", NULL), 404);
    expect_status(get("/.well-known/../.secret", NULL), 404);
    expect_body(get("/.well-known/acme.txt", NULL), "token\n");
    g_o.hidden_files = 1;
    expect_body(get("/.secret", NULL), "dot secret\n");
    expect_body(get("/sub/.hidden", NULL), "h\n");
}

/* ---- folders ---- */

static void test_folders(void **state)
{
    (void)state;
    resp *r = get("/sub", NULL);
    expect_status(r, 301); /* RFC 9110 §15.4.2 */
    assert_string_equal(hdr(r, "Location"), "/sub/");
    r = get("/sub?x=1&y=%20", NULL);
    expect_status(r, 301);
    assert_string_equal(hdr(r, "Location"), "/sub/?x=1&y=%20");
    r = get("/sp%20ace", NULL);
    expect_status(r, 301);
    assert_string_equal(hdr(r, "Location"), "/sp%20ace/");
    expect_status(request("HEAD", "/docs", NULL), 301);
    r = get("/sp%20ace/", NULL);
    expect_body(r, "space\n");
    r = get("/", NULL);
    expect_status(r, 200);
    expect_body(r, "<h1>home</h1>\n");
    assert_string_equal(hdr(r, "Content-Type"), "text/html; charset=utf-8");
    assert_string_equal(hdr(r, "ETag"), etag_of(14, ""));
    expect_body(get("/docs/", NULL), "<h1>docs</h1>\n");
    /* no index and no listing */
    expect_status(get("/sub/", NULL), 404);
    assert_int_equal(g_rc, CSHW_E_NOT_FOUND);
    g_o.index = NULL;
    expect_status(get("/", NULL), 404);
    g_o.index = "a.txt";
    expect_body(get("/sub/", NULL), "a\n");
}

static size_t pos_of(const resp *r, const char *s)
{
    const char *p = strstr((const char *)r->body, s);
    if (!p) fail_msg("listing lacks %s", s);
    return (size_t)(p - (const char *)r->body);
}

static void test_listing(void **state)
{
    (void)state;
    g_o.directory_listing = 1;
    resp *r = get("/sub/", NULL);
    expect_status(r, 200);
    assert_string_equal(hdr(r, "Content-Type"), "text/html; charset=utf-8");
    const char *b = (const char *)r->body;
    assert_non_null(strstr(b, "<title>Index of /sub/</title>"));
    /* sorted bytewise, names HTML-escaped, links percent-encoded */
    size_t up = pos_of(r, "<a href=\"../\">../</a>");
    size_t x = pos_of(r, "<a href=\"%3Cx%3E%26%27.txt\">&lt;x&gt;&amp;&#39;.txt</a>");
    size_t a = pos_of(r, "<a href=\"a.txt\">a.txt</a></td><td>2</td>");
    size_t ab = pos_of(r, "<a href=\"a%3Ab.txt\">a:b.txt</a>");
    size_t bc = pos_of(r, "<a href=\"b%20c.txt\">b c.txt</a></td><td>3</td>");
    size_t li = pos_of(r, "<a href=\"link_in_sub\">link_in_sub</a></td><td>13</td>");
    size_t ne = pos_of(r, "<a href=\"nested/\">nested/</a>");
    assert_true(up < x && x < a && a < ab && ab < bc && bc < li && li < ne);
    /* what would not be served is not listed */
    assert_null(strstr(b, "hidden"));
    assert_null(strstr(b, "link_out_sub"));
    assert_null(strstr(b, "<x>"));

    g_o.index = NULL;
    r = get("/", NULL);
    expect_status(r, 200);
    b = (const char *)r->body;
    assert_null(strstr(b, "../"));
    assert_non_null(strstr(b, "<a href=\"hello.txt\">hello.txt</a></td><td>13</td>"));
    assert_non_null(strstr(b, "<a href=\"sp%20ace/\">sp ace/</a>"));
    assert_non_null(strstr(b, "<a href=\"link_abs_in\">"));
    const char *absent[] = {"fifo",    "sock", "secret",  "link_out",   "dangling",
                            "devnull", "loop", "dir_out", "link_prefix"};
    /* .well-known is served, so it is listed */
    assert_non_null(strstr(b, "<a href=\".well-known/\">.well-known/</a>"));
    for (size_t i = 0; i < sizeof absent / sizeof absent[0]; i++)
        if (strstr(b, absent[i])) fail_msg("the listing shows %s", absent[i]);
    /* HEAD: the same head, no body */
    resp *h = request("HEAD", "/", NULL);
    expect_status(h, 200);
    assert_int_equal(h->body_len, 0);
}

/* ---- preconditions: RFC 9110 §13.1, evaluated in the order of §13.2.2 ---- */

static void expect_304(const resp *r, const char *etag)
{
    expect_status(r, 304);
    /* §15.4.5: the validators and caching fields, no content */
    if (etag) assert_string_equal(hdr(r, "ETag"), etag);
    assert_string_equal(hdr(r, "Last-Modified"), FIX_DATE);
    assert_string_equal(hdr(r, "Cache-Control"), "max-age=0");
    assert_null(hdr(r, "Content-Length"));
    assert_null(hdr(r, "Content-Type"));
    assert_null(hdr(r, "Transfer-Encoding"));
    assert_int_equal(r->body_len, 0);
}

static resp *get1(const char *target, const char *name, const char *value)
{
    char f[512];
    snprintf(f, sizeof f, "%s: %s\r\n", name, value);
    return get(target, f);
}

#define EARLIER "Thu, 02 Jan 2020 03:04:04 GMT"
#define LATER "Thu, 02 Jan 2020 03:04:06 GMT"

static void test_if_none_match(void **state)
{
    (void)state;
    char v[200];
    expect_304(get1("/hello.txt", "If-None-Match", E_HELLO), E_HELLO);
    snprintf(v, sizeof v, "W/%s", E_HELLO); /* §13.1.2: weak comparison */
    expect_304(get1("/hello.txt", "If-None-Match", v), E_HELLO);
    snprintf(v, sizeof v, "\"a\", %s", E_HELLO);
    expect_304(get1("/hello.txt", "If-None-Match", v), E_HELLO);
    expect_304(get1("/hello.txt", "If-None-Match", "*"), E_HELLO);
    snprintf(v, sizeof v, "If-None-Match: \"a\"\r\nIf-None-Match: %s\r\n", E_HELLO);
    expect_304(get("/hello.txt", v), E_HELLO);
    expect_304(request("HEAD", "/hello.txt", "If-None-Match: *\r\n"), E_HELLO);
    expect_status(get1("/hello.txt", "If-None-Match", "\"nope\""), 200);
    expect_status(get1("/hello.txt", "If-None-Match", etag_of(14, "")), 200);
    expect_status(get1("/hello.txt", "If-None-Match", "nope"), 200);
    /* another file's tag */
    expect_status(get1("/index.html", "If-None-Match", E_HELLO), 200);
}

static void test_if_modified_since(void **state)
{
    (void)state;
    expect_304(get1("/hello.txt", "If-Modified-Since", FIX_DATE), E_HELLO);
    expect_304(get1("/hello.txt", "If-Modified-Since", LATER), E_HELLO);
    /* the obsolete forms (§5.6.7) */
    expect_304(get1("/hello.txt", "If-Modified-Since", "Thursday, 02-Jan-20 03:04:05 GMT"),
               E_HELLO);
    expect_304(get1("/hello.txt", "If-Modified-Since", "Thu Jan  2 03:04:05 2020"), E_HELLO);
    expect_status(get1("/hello.txt", "If-Modified-Since", EARLIER), 200);
    /* §13.1.3: an invalid or repeated date is ignored */
    expect_status(get1("/hello.txt", "If-Modified-Since", "garbage"), 200);
    expect_status(
        get("/hello.txt", "If-Modified-Since: " LATER "\r\nIf-Modified-Since: " LATER "\r\n"), 200);
}

static void test_if_match(void **state)
{
    (void)state;
    char v[200];
    expect_status(get1("/hello.txt", "If-Match", E_HELLO), 200);
    expect_status(get1("/hello.txt", "If-Match", "*"), 200);
    snprintf(v, sizeof v, "\"a\", %s", E_HELLO);
    expect_status(get1("/hello.txt", "If-Match", v), 200);
    resp *r = get1("/hello.txt", "If-Match", "\"nope\"");
    expect_status(r, 412);
    assert_int_equal(g_rc, 0);
    /* §13.1.1: strong comparison, a weak tag never matches */
    snprintf(v, sizeof v, "W/%s", E_HELLO);
    expect_status(get1("/hello.txt", "If-Match", v), 412);
    /* 412 wins over Range */
    expect_status(get("/data.bin", "If-Match: \"nope\"\r\nRange: bytes=0-1\r\n"), 412);
}

static void test_if_unmodified_since(void **state)
{
    (void)state;
    expect_status(get1("/hello.txt", "If-Unmodified-Since", EARLIER), 412);
    expect_status(get1("/hello.txt", "If-Unmodified-Since", FIX_DATE), 200);
    expect_status(get1("/hello.txt", "If-Unmodified-Since", LATER), 200);
    expect_status(get1("/hello.txt", "If-Unmodified-Since", "not a date"), 200);
}

/* §13.2.2: the order of evaluation */
static void test_precondition_precedence(void **state)
{
    (void)state;
    char f[512];
    /* step 1 before 2: If-Match present, If-Unmodified-Since not looked at */
    snprintf(f, sizeof f, "If-Match: %s\r\nIf-Unmodified-Since: " EARLIER "\r\n", E_HELLO);
    expect_status(get("/hello.txt", f), 200);
    /* step 1 before 3: a failed If-Match is 412 even when If-None-Match matches */
    snprintf(f, sizeof f, "If-Match: \"nope\"\r\nIf-None-Match: %s\r\n", E_HELLO);
    expect_status(get("/hello.txt", f), 412);
    /* steps 1 then 3 */
    snprintf(f, sizeof f, "If-Match: %s\r\nIf-None-Match: %s\r\n", E_HELLO, E_HELLO);
    expect_304(get("/hello.txt", f), E_HELLO);
    /* step 2 then 4 */
    expect_304(
        get("/hello.txt", "If-Unmodified-Since: " LATER "\r\nIf-Modified-Since: " LATER "\r\n"),
        E_HELLO);
    expect_status(
        get("/hello.txt", "If-Unmodified-Since: " EARLIER "\r\nIf-Modified-Since: " LATER "\r\n"),
        412);
    /* step 3 before 4: If-None-Match present, If-Modified-Since ignored */
    expect_status(get("/hello.txt", "If-None-Match: \"nope\"\r\nIf-Modified-Since: " LATER "\r\n"),
                  200);
    snprintf(f, sizeof f, "If-None-Match: %s\r\nIf-Modified-Since: " EARLIER "\r\n", E_HELLO);
    expect_304(get("/hello.txt", f), E_HELLO);
    /* step 4 before 5: a 304 leaves Range unused */
    expect_304(get("/data.bin", "If-Modified-Since: " LATER "\r\nRange: bytes=0-1\r\n"),
               etag_of(1000, ""));
    /* §13.2.1: no preconditions where the answer would not be 2xx */
    expect_status(get1("/sub", "If-Match", "\"nope\""), 301);
    expect_status(get1("/missing", "If-None-Match", "*"), 404);
}

static void test_etag_off(void **state)
{
    (void)state;
    g_o.etag = 0;
    resp *r = get("/hello.txt", NULL);
    expect_status(r, 200);
    assert_null(hdr(r, "ETag"));
    expect_status(get1("/hello.txt", "If-None-Match", E_HELLO), 200);
    expect_status(get1("/hello.txt", "If-Match", E_HELLO), 412);
    expect_status(get1("/hello.txt", "If-Match", "*"), 200);
    expect_304(get1("/hello.txt", "If-Modified-Since", FIX_DATE), NULL);
    assert_null(hdr(get1("/hello.txt", "If-Modified-Since", FIX_DATE), "ETag"));
    /* If-Range by tag cannot hold without tags */
    r = get("/data.bin", "Range: bytes=0-1\r\nIf-Range: \"x\"\r\n");
    expect_status(r, 200);
}

static void test_cache_control(void **state)
{
    (void)state;
    g_o.cache_control = "public, max-age=3600";
    assert_string_equal(hdr(get("/hello.txt", NULL), "Cache-Control"), "public, max-age=3600");
    g_o.cache_control = NULL;
    assert_null(hdr(get("/hello.txt", NULL), "Cache-Control"));
}

/* ---- ranges: RFC 9110 §14 ---- */

static resp *range(const char *target, const char *spec)
{
    return get1(target, "Range", spec);
}

static void expect_single(const resp *r, uint64_t first, uint64_t last, uint64_t size)
{
    expect_status(r, 206);
    char cr[128], cl[32];
    snprintf(cr, sizeof cr, "bytes %" PRIu64 "-%" PRIu64 "/%" PRIu64, first, last, size);
    snprintf(cl, sizeof cl, "%" PRIu64, last - first + 1);
    assert_string_equal(hdr(r, "Content-Range"), cr);
    assert_string_equal(hdr(r, "Content-Length"), cl);
    assert_int_equal(r->body_len, last - first + 1);
    expect_pattern(r->body, first, r->body_len);
    assert_string_equal(hdr(r, "Accept-Ranges"), "bytes");
    assert_string_equal(hdr(r, "ETag"), etag_of(size, ""));
}

static void test_range_single(void **state)
{
    (void)state;
    expect_single(range("/data.bin", "bytes=0-9"), 0, 9, 1000);
    expect_single(range("/data.bin", "bytes=990-"), 990, 999, 1000); /* open */
    expect_single(range("/data.bin", "bytes=-10"), 990, 999, 1000);  /* suffix */
    expect_single(range("/data.bin", "bytes=-2000"), 0, 999, 1000);  /* longer suffix */
    expect_single(range("/data.bin", "bytes=995-2000"), 995, 999, 1000);
    expect_single(range("/data.bin", "bytes=0-0"), 0, 0, 1000);
    expect_single(range("/data.bin", "bytes=999-999"), 999, 999, 1000);
    expect_single(range("/data.bin", "BYTES=5-6"), 5, 6, 1000);
    expect_single(range("/data.bin", "bytes=1000-1000, 7-8"), 7, 8, 1000);
    assert_string_equal(hdr(range("/data.bin", "bytes=0-9"), "Content-Type"),
                        "application/octet-stream");
}

static void test_range_unsatisfiable(void **state)
{
    (void)state;
    const char *specs[] = {"bytes=1000-", "bytes=-0", "bytes=5000-6000", "bytes=1000-1001, -0"};
    for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
        resp *r = range("/data.bin", specs[i]);
        expect_status(r, 416); /* §15.5.17 */
        assert_int_equal(g_rc, 0);
        assert_string_equal(hdr(r, "Content-Range"), "bytes */1000"); /* §14.4 */
    }
}

/* §14.2: a Range that is not understood is ignored: 200, whole file */
static void test_range_ignored(void **state)
{
    (void)state;
    const char *specs[] = {"bytes=abc", "bytes=10-5",  "items=0-5", "bytes 0-5",
                           "bytes=",    "bytes=0-5;x", "bytes=--1", "bytes=0-1,,x"};
    for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
        resp *r = range("/data.bin", specs[i]);
        if (r->status != 200) fail_msg("Range: %s gave %d", specs[i], r->status);
        assert_int_equal(r->body_len, 1000);
        expect_pattern(r->body, 0, 1000);
        assert_null(hdr(r, "Content-Range"));
    }
    /* two Range fields */
    expect_status(get("/data.bin", "Range: bytes=0-1\r\nRange: bytes=2-3\r\n"), 200);
    /* an empty file */
    resp *r = range("/empty.txt", "bytes=0-");
    expect_status(r, 200);
    assert_int_equal(r->body_len, 0);
    /* §14.2: Range is for GET; HEAD gets the 200 header section */
    r = request("HEAD", "/data.bin", "Range: bytes=0-9\r\n");
    expect_status(r, 200);
    assert_string_equal(hdr(r, "Content-Length"), "1000");
    assert_null(hdr(r, "Content-Range"));
    assert_int_equal(r->body_len, 0);
}

typedef struct part {
    char type[128];
    uint64_t first, last, size;
    const unsigned char *data;
    size_t len;
} part;

/* Parses a multipart/byteranges body (RFC 9110 §14.6, RFC 2046 §5.1). */
static size_t parse_multipart(const resp *r, part *parts, size_t max)
{
    const char *ct = hdr(r, "Content-Type");
    assert_non_null(ct);
    const char *pre = "multipart/byteranges; boundary=";
    assert_int_equal(strncmp(ct, pre, strlen(pre)), 0);
    char delim[128];
    snprintf(delim, sizeof delim, "--%s", ct + strlen(pre));
    size_t dl = strlen(delim);
    const char *b = (const char *)r->body, *end = b + r->body_len;
    assert_int_equal(memcmp(b, delim, dl), 0);
    const char *p = b + dl;
    size_t n = 0;
    for (;;) {
        if (p[0] == '-' && p[1] == '-') {
            assert_true(p[2] == '\r' && p[3] == '\n' && p + 4 == end);
            break;
        }
        assert_true(p[0] == '\r' && p[1] == '\n');
        p += 2;
        assert_true(n < max);
        part *pt = &parts[n++];
        memset(pt, 0, sizeof *pt);
        int have_range = 0;
        while (!(p[0] == '\r' && p[1] == '\n')) {
            const char *eol = strstr(p, "\r\n");
            assert_non_null(eol);
            if (strncmp(p, "Content-Type: ", 14) == 0) {
                assert_true((size_t)(eol - p - 14) < sizeof pt->type);
                memcpy(pt->type, p + 14, (size_t)(eol - p - 14));
            } else if (strncmp(p, "Content-Range: bytes ", 21) == 0) {
                assert_int_equal(sscanf(p + 21, "%" SCNu64 "-%" SCNu64 "/%" SCNu64, &pt->first,
                                        &pt->last, &pt->size),
                                 3);
                have_range = 1;
            } else {
                fail_msg("unexpected part field %.*s", (int)(eol - p), p);
            }
            p = eol + 2;
        }
        assert_true(have_range);
        p += 2;
        pt->data = (const unsigned char *)p;
        pt->len = pt->last - pt->first + 1;
        p += pt->len;
        assert_true(p + 2 + dl <= end);
        assert_true(p[0] == '\r' && p[1] == '\n');
        assert_int_equal(memcmp(p + 2, delim, dl), 0);
        p += 2 + dl;
    }
    return n;
}

static void test_range_multipart(void **state)
{
    (void)state;
    resp *r = range("/data.bin", "bytes=0-4,10-14,-5");
    expect_status(r, 206);
    assert_null(hdr(r, "Content-Range"));
    assert_string_equal(hdr(r, "ETag"), etag_of(1000, ""));
    part parts[20];
    size_t n = parse_multipart(r, parts, 20);
    assert_int_equal(n, 3);
    const uint64_t want[3][2] = {{0, 4}, {10, 14}, {995, 999}};
    for (size_t i = 0; i < n; i++) {
        assert_string_equal(parts[i].type, "application/octet-stream");
        assert_true(parts[i].first == want[i][0] && parts[i].last == want[i][1]);
        assert_true(parts[i].size == 1000);
        expect_pattern(parts[i].data, parts[i].first, parts[i].len);
    }
    /* disjoint ranges keep the order asked for */
    n = parse_multipart(range("/data.bin", "bytes=50-59,0-9"), parts, 20);
    assert_int_equal(n, 2);
    assert_true(parts[0].first == 50 && parts[1].first == 0);
    /* a text file's parts carry its type */
    n = parse_multipart(range("/hello.txt", "bytes=0-1,-2"), parts, 20);
    assert_int_equal(n, 2);
    assert_string_equal(parts[0].type, "text/plain; charset=utf-8");
    assert_memory_equal(parts[0].data, "he", 2);
    assert_memory_equal(parts[1].data, "d\n", 2);
    /* two answers have different boundaries */
    const char *c1 = hdr(range("/data.bin", "bytes=0-1,5-6"), "Content-Type");
    const char *c2 = hdr(range("/data.bin", "bytes=0-1,5-6"), "Content-Type");
    assert_string_not_equal(c1, c2);
}

static void test_range_coalesce_and_limit(void **state)
{
    (void)state;
    /* overlapping or touching ranges become one */
    expect_single(range("/data.bin", "bytes=0-10,5-20"), 0, 20, 1000);
    expect_single(range("/data.bin", "bytes=20-29,0-9,10-19"), 0, 29, 1000);
    expect_single(range("/data.bin", "bytes=0-,-1"), 0, 999, 1000);
    /* at most CSHW_STATIC_MAX_RANGES range-specs */
    char spec[512] = "bytes=";
    for (int i = 0; i < CSHW_STATIC_MAX_RANGES; i++)
        snprintf(spec + strlen(spec), sizeof spec - strlen(spec), "%s%d-%d", i ? "," : "", i * 10,
                 i * 10 + 2);
    part parts[20];
    assert_int_equal(parse_multipart(range("/data.bin", spec), parts, 20), CSHW_STATIC_MAX_RANGES);
    for (int i = 0; i < CSHW_STATIC_MAX_RANGES; i++)
        expect_pattern(parts[i].data, (size_t)i * 10, 3);
    strcat(spec, ",900-901");
    resp *r = range("/data.bin", spec);
    expect_status(r, 200);
    assert_int_equal(r->body_len, 1000);
}

/* parts larger than the response buffer: the body is streamed (chunked) */
static void test_range_multipart_large(void **state)
{
    (void)state;
    resp *r = range("/big.bin", "bytes=0-99999,150000-199999");
    expect_status(r, 206);
    part parts[4];
    assert_int_equal(parse_multipart(r, parts, 4), 2);
    assert_true(parts[0].first == 0 && parts[0].last == 99999 && parts[0].size == 200000);
    expect_pattern(parts[0].data, 0, 100000);
    assert_true(parts[1].first == 150000 && parts[1].last == 199999);
    expect_pattern(parts[1].data, 150000, 50000);
}

/* §13.1.5 */
static void test_if_range(void **state)
{
    (void)state;
    const char *e = etag_of(1000, "");
    char f[512];
    snprintf(f, sizeof f, "Range: bytes=0-9\r\nIf-Range: %s\r\n", e);
    expect_single(get("/data.bin", f), 0, 9, 1000);
    expect_single(get("/data.bin", "Range: bytes=0-9\r\nIf-Range: " FIX_DATE "\r\n"), 0, 9, 1000);
    /* a changed representation: the whole of it */
    resp *r = get("/data.bin", "Range: bytes=0-9\r\nIf-Range: \"old\"\r\n");
    expect_status(r, 200);
    assert_int_equal(r->body_len, 1000);
    expect_status(get("/data.bin", "Range: bytes=0-9\r\nIf-Range: " EARLIER "\r\n"), 200);
    expect_status(get("/data.bin", "Range: bytes=0-9\r\nIf-Range: " LATER "\r\n"), 200);
    /* a weak tag never holds (strong comparison) */
    snprintf(f, sizeof f, "Range: bytes=0-9\r\nIf-Range: W/%s\r\n", e);
    expect_status(get("/data.bin", f), 200);
    expect_status(get("/data.bin", "Range: bytes=0-9\r\nIf-Range: garbage\r\n"), 200);
    /* If-Range holding, Range unsatisfiable: 416 */
    snprintf(f, sizeof f, "Range: bytes=5000-\r\nIf-Range: %s\r\n", e);
    expect_status(get("/data.bin", f), 416);
    /* If-Range without Range: nothing to do */
    expect_status(get1("/data.bin", "If-Range", "\"old\""), 200);
}

/* If-Range by date needs a Last-Modified at least a second old (§8.8.2.2) */
static void test_if_range_fresh_file(void **state)
{
    (void)state;
    assert_int_equal(fix_str(fx.root, "fresh.txt", "0123456789"), 0);
    char p[400];
    snprintf(p, sizeof p, "%s/fresh.txt", fx.root);
    time_t now = time(NULL) + 10; /* a clock skew puts it in the future */
    struct timespec ts[2] = {{now, 0}, {now, 0}};
    assert_int_equal(utimensat(AT_FDCWD, p, ts, 0), 0);
    char date[CSHW__DATE_SIZE], f[256];
    cshw__date_format(now, date);
    snprintf(f, sizeof f, "Range: bytes=0-1\r\nIf-Range: %s\r\n", date);
    expect_status(get("/fresh.txt", f), 200);
    ts[0].tv_sec = ts[1].tv_sec = FIX_MTIME;
    assert_int_equal(utimensat(AT_FDCWD, p, ts, 0), 0);
    snprintf(f, sizeof f, "Range: bytes=0-1\r\nIf-Range: %s\r\n", FIX_DATE);
    expect_status(get("/fresh.txt", f), 206);
    unlink(p);
}

/* ---- precompressed siblings ---- */

#define GZ_BYTES "\x1f\x8b\x08\x00GZIPPED-CSS"

static void test_precompressed(void **state)
{
    (void)state;
    const char *plain_tag = etag_of(21, ""), *gz_tag = etag_of(15, "-gz");
    resp *r = get1("/style.css", "Accept-Encoding", "gzip, deflate");
    expect_status(r, 200);
    assert_int_equal(r->body_len, 15);
    assert_memory_equal(r->body, GZ_BYTES, 15);
    assert_string_equal(hdr(r, "Content-Encoding"), "gzip");
    assert_string_equal(hdr(r, "Content-Type"), "text/css; charset=utf-8");
    assert_string_equal(hdr(r, "Vary"), "Accept-Encoding");
    assert_string_equal(hdr(r, "ETag"), gz_tag);
    assert_string_equal(hdr(r, "Content-Length"), "15");
    assert_string_not_equal(plain_tag, gz_tag);

    /* the same Accept-Encoding rule as live gzip (test_response.c): an
     * identity weighed above gzip wins, "*" stands for identity too */
    const char *plain[] = {NULL,          "gzip;q=0",    "identity",
                           "br",          "gzip;q=0, *", "deflate;q=1",
                           "gzip;q=0.5, identity", "gzip;q=0.5, *", "*;q=0"};
    for (size_t i = 0; i < sizeof plain / sizeof plain[0]; i++) {
        r = plain[i] ? get1("/style.css", "Accept-Encoding", plain[i]) : get("/style.css", NULL);
        expect_status(r, 200);
        expect_body(r, "body { color: red; }\n");
        assert_null(hdr(r, "Content-Encoding"));
        assert_string_equal(hdr(r, "Vary"), "Accept-Encoding"); /* §12.5.5 */
        assert_string_equal(hdr(r, "ETag"), plain_tag);
    }
    const char *gz[] = {"GZIP", "br, *;q=0.1", "x-gzip", "gzip;q=0.001",
                        "identity;q=0.5, gzip;q=0.8", ", gzip"};
    for (size_t i = 0; i < sizeof gz / sizeof gz[0]; i++) {
        r = get1("/style.css", "Accept-Encoding", gz[i]);
        assert_string_equal(hdr(r, "Content-Encoding"), "gzip");
    }
    /* validators are per representation */
    char f[512];
    snprintf(f, sizeof f, "Accept-Encoding: gzip\r\nIf-None-Match: %s\r\n", gz_tag);
    r = get("/style.css", f);
    expect_304(r, gz_tag);
    assert_string_equal(hdr(r, "Vary"), "Accept-Encoding");
    snprintf(f, sizeof f, "If-None-Match: %s\r\n", gz_tag);
    expect_status(get("/style.css", f), 200);
    /* ranges of the stored gzip bytes */
    r = get("/style.css", "Accept-Encoding: gzip\r\nRange: bytes=0-3\r\n");
    expect_status(r, 206);
    assert_string_equal(hdr(r, "Content-Range"), "bytes 0-3/15");
    assert_memory_equal(r->body, GZ_BYTES, 4);
    /* HEAD */
    r = request("HEAD", "/style.css", "Accept-Encoding: gzip\r\n");
    assert_string_equal(hdr(r, "Content-Length"), "15");
    assert_string_equal(hdr(r, "Content-Encoding"), "gzip");
    /* asked for by name: a gzip file, not an encoding */
    r = get1("/style.css.gz", "Accept-Encoding", "gzip");
    assert_string_equal(hdr(r, "Content-Type"), "application/gzip");
    assert_null(hdr(r, "Content-Encoding"));
    /* A type that is not stored compressed (image/png): its sibling is
     * served to a client that takes gzip, with Vary; a client that does not
     * gets the file without a Vary (its sibling is not even looked for). */
    r = get1("/photo.png", "Accept-Encoding", "gzip");
    assert_int_equal(r->body_len, 15);
    assert_memory_equal(r->body, "\x1f\x8b\x08\x00GZIPPED-PNG", 15);
    assert_string_equal(hdr(r, "Content-Encoding"), "gzip");
    assert_string_equal(hdr(r, "Vary"), "Accept-Encoding");
    assert_string_equal(hdr(r, "Content-Type"), "image/png");
    r = get("/photo.png", NULL);
    assert_int_equal(r->body_len, 10);
    assert_memory_equal(r->body, "\x89PNG-BYTES", 10);
    assert_null(hdr(r, "Content-Encoding"));
    assert_null(hdr(r, "Vary"));
    /* off */
    g_o.precompressed = 0;
    r = get1("/style.css", "Accept-Encoding", "gzip");
    expect_body(r, "body { color: red; }\n");
    assert_null(hdr(r, "Vary"));
    assert_null(hdr(r, "Content-Encoding"));
}

/* files go out as stored: the response's own gzip stays off */
static void test_no_response_gzip(void **state)
{
    (void)state;
    resp *r = get1("/page.html", "Accept-Encoding", "gzip");
    expect_status(r, 200);
    assert_null(hdr(r, "Content-Encoding"));
    assert_string_equal(hdr(r, "Content-Length"), "4000");
    assert_int_equal(r->body_len, 4000);
    assert_string_equal(hdr(r, "ETag"), etag_of(4000, ""));
}

static void test_root_errors(void **state)
{
    (void)state;
    g_o.root = NULL;
    expect_status(get("/hello.txt", NULL), 500);
    assert_int_equal(g_rc, CSHW_E_STATIC_NO_ROOT);
    g_o.root = "/nonexistent/cshw/root";
    expect_status(get("/hello.txt", NULL), 500);
    assert_int_equal(g_rc, CSHW_E_STATIC_NO_ROOT);
    char p[400];
    snprintf(p, sizeof p, "%s/hello.txt", fx.root);
    g_o.root = p; /* a file is not a root */
    expect_status(get("/", NULL), 500);
    assert_int_equal(g_rc, CSHW_E_STATIC_NO_ROOT);
    g_o.root = fx.root;
    assert_int_equal(cshw_static_serve(NULL, &g_o), -EINVAL);
}

static void test_options_defaults(void **state)
{
    (void)state;
    cshw_static_options o;
    memset(&o, 0x5a, sizeof o);
    cshw_static_options_init(&o);
    assert_null(o.root);
    assert_string_equal(o.index, "index.html");
    assert_int_equal(o.directory_listing, 0);
    assert_int_equal(o.follow_symlinks, 0);
    assert_int_equal(o.precompressed, 1);
    assert_string_equal(o.cache_control, "max-age=0");
    assert_int_equal(o.etag, 1);
    assert_int_equal(o.hidden_files, 0);
}

/* static.h: the options are read by their size. A struct of the first
 * version's size, alone in its allocation (ASan sees a read past it), is
 * served with; a newer caller's larger one has what this library does not
 * know zeroed by the init and ignored; a size below the first version's
 * (a struct memset or initialized without the init) is -EINVAL from
 * cshw_static_serve and cshw_static_map_path (cshw_router_set_static:
 * test_router.c). */
static void test_options_sizes(void **state)
{
    (void)state;
    cshw_static_options *old = malloc(CSHW_STATIC_OPTIONS_SIZE_0_3);
    assert_non_null(old);
    cshw_static_options_init_sized(old, CSHW_STATIC_OPTIONS_SIZE_0_3);
    assert_int_equal(old->size, CSHW_STATIC_OPTIONS_SIZE_0_3);
    assert_string_equal(old->cache_control, "max-age=0");
    old->root = fx.root;
    old->cache_control = "no-store";
    g_other = old;
    resp *r = get("/hello.txt", NULL);
    expect_status(r, 200);
    assert_string_equal(hdr(r, "Cache-Control"), "no-store");
    cshw_arena *a = cshw_arena_new(0);
    const char *mapped;
    assert_int_equal(cshw_static_map_path(a, old, "/hello.txt", &mapped), 0);
    free(old);

    size_t big[sizeof(cshw_static_options) / sizeof(size_t) + 4];
    memset(big, 0xff, sizeof big);
    cshw_static_options *newer = (cshw_static_options *)(void *)big;
    cshw_static_options_init_sized(newer, sizeof big);
    assert_int_equal(newer->size, sizeof big);
    for (size_t i = sizeof(cshw_static_options) / sizeof(size_t); i < sizeof big / sizeof big[0];
         i++)
        assert_int_equal(big[i], 0);
    big[sizeof big / sizeof big[0] - 1] = 1; /* a newer option this library ignores */
    newer->root = fx.root;
    newer->cache_control = "no-cache";
    g_other = newer;
    r = get("/hello.txt", NULL);
    expect_status(r, 200);
    assert_string_equal(hdr(r, "Cache-Control"), "no-cache");

    cshw_static_options bad;
    cshw_static_options_init(&bad);
    assert_int_equal(bad.size, sizeof bad);
    bad.root = fx.root;
    bad.size = CSHW_STATIC_OPTIONS_SIZE_0_3 - 1;
    g_other = &bad;
    expect_status(get("/hello.txt", NULL), 500);
    assert_int_equal(g_rc, -EINVAL);
    mapped = "unchanged";
    assert_int_equal(cshw_static_map_path(a, &bad, "/hello.txt", &mapped), -EINVAL);
    assert_null(mapped);
    memset(&bad, 0, sizeof bad);
    bad.root = fx.root;
    expect_status(get("/hello.txt", NULL), 500);
    assert_int_equal(g_rc, -EINVAL);
    g_other = NULL;
    cshw_arena_free(a);
}

static int setup(void **state)
{
    if (fix_make(&fx) != 0) return -1;
    return free_resps(state);
}

static int teardown(void **state)
{
    free_resps(state);
    fix_free(&fx);
    return 0;
}

#define T(f) cmocka_unit_test_teardown(f, free_resps)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_get_file),
        T(test_options_sizes),
        T(test_types_in_responses),
        T(test_head_like_get),
        T(test_empty_file),
        T(test_send_file_and_copy),
        T(test_pipelined_and_http10),
        T(test_methods),
        T(test_not_found),
        T(test_not_regular),
        T(test_permission_denied),
        T(test_traversal_openat2),
        T(test_traversal_portable),
        T(test_follow_symlinks_option),
        T(test_hidden_files),
        T(test_folders),
        T(test_listing),
        T(test_if_none_match),
        T(test_if_modified_since),
        T(test_if_match),
        T(test_if_unmodified_since),
        T(test_precondition_precedence),
        T(test_etag_off),
        T(test_cache_control),
        T(test_range_single),
        T(test_range_unsatisfiable),
        T(test_range_ignored),
        T(test_range_multipart),
        T(test_range_coalesce_and_limit),
        T(test_range_multipart_large),
        T(test_if_range),
        T(test_if_range_fresh_file),
        T(test_precompressed),
        T(test_no_response_gzip),
        T(test_root_errors),
        T(test_options_defaults),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
