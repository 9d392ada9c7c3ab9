/* The demo application: plaintext, JSON, an echo of the parsed request, a
 * blocking route, a form and upload page, a tunnel that echoes bytes
 * (a connection switched to the "echo" protocol), an answer with trailers
 * and a WebSocket echo. Mounted only with --demo:
 * echo reflects every request header (cookies included) and upload takes large bodies, which no
 * public site should offer by accident. */
#include "demo.h"

#include "app.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cshttp/web/arena.h>
#include <cshttp/web/buf.h>
#include <cshttp/web/html.h>
#include <cshttp/web/json.h>
#include <cshttp/web/pairs.h>
#include <cshttp/web/request.h>
#include <cshttp/web/response.h>
#include <cshttp/web/url.h>
#include <cshttp/server/tunnel.h>
#include <cshttp/web/error.h>

static void plaintext(cshw_context *ctx)
{
    cshw_response *res = cshw_context_response(ctx);
    cshw_response_set_content_type(res, "text/plain", NULL);
    cshw_response_puts(res, "Hello, World!");
}

static void send_json(cshw_response *res, cshw_buf *b)
{
    cshw_response_set_content_type(res, "application/json", NULL);
    cshw_response_write(res, b->data ? b->data : "", b->len);
    cshw_buf_free(b);
}

static void json(cshw_context *ctx)
{
    cshw_buf b;
    cshw_buf_init(&b, cshw_context_arena(ctx));
    cshw_json j;
    cshw_json_init_buf(&j, &b);
    cshw_json_object_begin(&j);
    cshw_json_key(&j, "message");
    cshw_json_string(&j, "Hello, World!");
    cshw_json_object_end(&j);
    send_json(cshw_context_response(ctx), &b);
}

/* The request as the toolkit parsed it. The body is read up to 1 MiB. */
static void echo(cshw_context *ctx)
{
    cshw_request *req = cshw_context_request(ctx);
    cshw_response *res = cshw_context_response(ctx);
    cshw_buf body;
    cshw_buf_init(&body, cshw_context_arena(ctx));
    char chunk[16384];
    ssize_t n;
    int body_error = 0;
    while ((n = cshw_request_read(req, chunk, sizeof chunk)) > 0) {
        if (body.len + (size_t)n > (1u << 20)) {
            cshw_response_send_error(res, 413);
            return;
        }
        cshw_buf_append(&body, chunk, (size_t)n);
    }
    if (n < 0) body_error = (int)n;
    cshw_buf b;
    cshw_buf_init(&b, cshw_context_arena(ctx));
    cshw_json j;
    cshw_json_init_buf(&j, &b);
    cshw_json_object_begin(&j);
    cshw_json_key(&j, "method");
    cshw_json_string(&j, cshw_request_method(req));
    cshw_json_key(&j, "target");
    cshw_json_string(&j, cshw_request_target(req));
    cshw_json_key(&j, "path");
    const char *path = cshw_request_path(req);
    if (path)
        cshw_json_string(&j, path);
    else
        cshw_json_null(&j);
    cshw_json_key(&j, "version");
    cshw_json_string(&j, cshw_request_version_minor(req) ? "HTTP/1.1" : "HTTP/1.0");
    cshw_json_key(&j, "remote_addr");
    cshw_json_string(&j, cshw_request_remote_addr(req) ? cshw_request_remote_addr(req) : "");
    cshw_json_key(&j, "headers");
    cshw_json_array_begin(&j);
    for (size_t i = 0; i < cshw_request_header_count(req); i++) {
        const char *value;
        const char *name = cshw_request_header_at(req, i, &value);
        cshw_json_array_begin(&j);
        cshw_json_string(&j, name);
        cshw_json_string(&j, value);
        cshw_json_array_end(&j);
    }
    cshw_json_array_end(&j);
    cshw_json_key(&j, "body_length");
    cshw_json_uint(&j, body.len);
    cshw_json_key(&j, "body");
    cshw_json_string_n(&j, body.data ? body.data : "", body.len);
    cshw_json_key(&j, "trailers");
    cshw_json_array_begin(&j);
    for (size_t i = 0; i < cshw_request_trailer_count(req); i++) {
        const char *value;
        const char *name = cshw_request_trailer_at(req, i, &value);
        cshw_json_array_begin(&j);
        cshw_json_string(&j, name);
        cshw_json_string(&j, value);
        cshw_json_array_end(&j);
    }
    cshw_json_array_end(&j);
    if (body_error) {
        cshw_json_key(&j, "body_error");
        cshw_json_int(&j, body_error);
    }
    cshw_json_object_end(&j);
    cshw_buf_append_byte(&b, '\n');
    send_json(res, &b);
}

/* An answer with trailers, as gRPC sends its grpc-status: each pair of
 * the query but "size" becomes a trailer field, added after `size` bytes
 * of body (at most 16 MiB; past the response buffer the head has gone out
 * before the trailers are known). A field the toolkit refuses as a
 * trailer is a 400 whose X-Trailer-Error names the error. */
static void trailers(cshw_context *ctx)
{
    cshw_request *req = cshw_context_request(ctx);
    cshw_response *res = cshw_context_response(ctx);
    const char *q = cshw_request_query_get(req, "size");
    long size = q ? strtol(q, NULL, 10) : 0;
    if (size < 0 || size > (16L << 20)) size = 0;
    cshw_response_set_content_type(res, "text/plain", NULL);
    char line[64];
    memset(line, 'x', sizeof line - 1);
    line[sizeof line - 1] = '\n';
    for (long left = size; left > 0; left -= (long)sizeof line)
        if (cshw_response_write(res, line, left < (long)sizeof line ? (size_t)left : sizeof line) <
            0)
            return;
    const cshw_pairs *pairs = cshw_request_query(req);
    for (size_t i = 0; pairs && i < pairs->count; i++) {
        const cshw_pair *p = &pairs->items[i];
        if (strcmp(p->name, "size") == 0) continue;
        int e = cshw_response_add_trailer(res, p->name, p->value);
        if (e < 0) {
            /* a 400 naming the error, while the status can still say so
             * (after the head it cuts the response short) */
            cshw_response_set_header(res, "X-Trailer-Error", cshw_error_name(e));
            cshw_response_send_error(res, 400);
            return;
        }
    }
}

/* Blocks ms milliseconds (at most 10 s): a handler waiting on something. */
static void sleep_route(cshw_context *ctx)
{
    cshw_request *req = cshw_context_request(ctx);
    const char *q = cshw_request_query_get(req, "ms");
    long ms = q ? strtol(q, NULL, 10) : 100;
    if (ms < 0) ms = 0;
    if (ms > 10000) ms = 10000;
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0) {
    }
    cshw_response *res = cshw_context_response(ctx);
    cshw_response_set_content_type(res, "text/plain", NULL);
    cshw_response_printf(res, "slept %ld ms\n", ms);
}

static const char form_page[] =
    "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>cshttpd: form and "
    "upload</title>\n<link rel=\"stylesheet\" href=\"/style.css\"></head><body>\n"
    "<h1>Form and upload</h1>\n"
    "<form method=\"post\" action=\"/demo/upload\" enctype=\"multipart/form-data\">\n"
    "<p><label>Name <input name=\"name\" value=\"world\"></label></p>\n"
    "<p><label>File <input type=\"file\" name=\"file\" multiple></label></p>\n"
    "<p><button>Send</button></p></form>\n"
    "<form method=\"post\" action=\"/demo/upload\">\n"
    "<p><label>Comment <input name=\"comment\"></label> <button>Send urlencoded</button></p>"
    "</form>\n<p><a href=\"/\">home</a></p></body></html>\n";

static void form(cshw_context *ctx)
{
    cshw_response *res = cshw_context_response(ctx);
    cshw_response_set_content_type(res, "text/html", "utf-8");
    cshw_response_puts(res, form_page);
}

static void html(cshw_response *res, const char *s)
{
    cshw_buf b;
    cshw_buf_init(&b, NULL);
    cshw_html_encode_buf(&b, s, strlen(s));
    cshw_response_write(res, b.data ? b.data : "", b.len);
    cshw_buf_free(&b);
}

static void upload(cshw_context *ctx)
{
    cshw_request *req = cshw_context_request(ctx);
    cshw_response *res = cshw_context_response(ctx);
    const cshw_pairs *fields = cshw_request_form(req);
    int err = cshw_request_form_error(req);
    if (err < 0) return; /* the toolkit answers a form error with its status */
    const cshw_file *files;
    size_t nf = cshw_request_files(req, &files);
    cshw_response_set_content_type(res, "text/html", "utf-8");
    cshw_response_puts(res, "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>"
                            "received</title></head><body><h1>Received</h1>\n<h2>Fields</h2><ul>");
    for (size_t i = 0; fields && i < fields->count; i++) {
        cshw_response_puts(res, "<li>");
        html(res, fields->items[i].name);
        cshw_response_puts(res, " = ");
        html(res, fields->items[i].value);
        cshw_response_puts(res, "</li>\n");
    }
    cshw_response_puts(res, "</ul><h2>Files</h2><ul>");
    for (size_t i = 0; i < nf; i++) {
        cshw_response_puts(res, "<li>");
        html(res, files[i].filename ? files[i].filename : "");
        cshw_response_printf(res, ": %llu bytes, ", (unsigned long long)files[i].size);
        html(res, files[i].content_type ? files[i].content_type : "");
        cshw_response_puts(res, "</li>\n");
    }
    cshw_response_puts(res, "</ul><p><a href=\"/demo/form\">again</a></p></body></html>\n");
}

/* /demo/tunnel: GET with "Connection: Upgrade" and "Upgrade: echo" is
 * answered 101, then every byte the client sends comes back; the client
 * pausing its reads pauses ours (past write_high_water), and its end
 * (FIN) ends ours after what is queued. */
static void tunnel_data(cshs_tunnel *t, const char *p, size_t n, void *arg)
{
    (void)arg;
    if (n == 0)
        cshs_tunnel_shutdown(t);
    else if (cshs_tunnel_write(t, p, n) == 1)
        cshs_tunnel_pause(t);
}

static void tunnel_drained(cshs_tunnel *t, void *arg)
{
    (void)arg;
    cshs_tunnel_resume(t);
}

static void tunnel_closed(cshs_tunnel *t, int why, void *arg)
{
    (void)t;
    (void)why;
    (void)arg;
}

static const cshs_tunnel_ops echo_tunnel = {NULL, tunnel_data, tunnel_drained, tunnel_closed};

static void tunnel(cshw_context *ctx)
{
    int r = cshs_upgrade(ctx, "echo", &echo_tunnel, NULL);
    if (r < 0) {
        /* 426 names what to ask for (RFC 9110 §15.5.22) */
        cshw_response *res = cshw_context_response(ctx);
        if (r == CSHW_E_UPGRADE_NOT_ASKED) cshw_response_set_header(res, "Upgrade", "echo");
        cshw_response_send_error(res, cshw_error_status(r));
    }
}

/* /demo/ws: a WebSocket that sends every message back as it came (text
 * as text, binary as binary), with cshttpd's --ws-... settings. A client
 * that does not read pauses the reading of its own messages (past
 * write_high_water), as the tunnel's echo does. */
static void ws_message(cshw_ws *ws, int type, const char *p, size_t n, void *arg)
{
    (void)arg;
    if (cshw_ws_send(ws, type, p, n) == 1) cshw_ws_pause(ws, 1);
}

static void ws_drained(cshw_ws *ws, void *arg)
{
    (void)arg;
    cshw_ws_pause(ws, 0);
}

static void ws_closed(cshw_ws *ws, int code, const char *reason, size_t len, void *arg)
{
    (void)ws;
    (void)code;
    (void)reason;
    (void)len;
    (void)arg;
}

static const cshw_ws_handlers echo_ws = {
    .message = ws_message, .drained = ws_drained, .closed = ws_closed};

static void ws_echo(cshw_context *ctx)
{
    const cshttpd_app *app = cshw_context_app_data(ctx);
    cshw_ws_options defaults;
    cshw_ws_options_init(&defaults);
    /* answered by cshs_websocket when refused (400, 403, 426) */
    cshs_websocket(ctx, app && app->ws ? app->ws : &defaults, &echo_ws, NULL);
}

int demo_routes(cshw_router *r)
{
    int e = 0;
    e = e < 0 ? e : cshw_router_add(r, "GET", "/demo/plaintext", plaintext);
    e = e < 0 ? e : cshw_router_add(r, "GET", "/demo/json", json);
    e = e < 0 ? e : cshw_router_add(r, "*", "/demo/echo", echo);
    e = e < 0 ? e : cshw_router_add(r, "*", "/demo/echo/*", echo);
    e = e < 0 ? e : cshw_router_add(r, "GET", "/demo/sleep", sleep_route);
    e = e < 0 ? e : cshw_router_add(r, "*", "/demo/trailers", trailers);
    e = e < 0 ? e : cshw_router_add(r, "GET", "/demo/form", form);
    e = e < 0 ? e : cshw_router_add(r, "POST", "/demo/upload", upload);
    e = e < 0 ? e : cshw_router_add(r, "GET", "/demo/tunnel", tunnel);
    e = e < 0 ? e : cshw_router_add(r, "GET", "/demo/ws", ws_echo);
    return e;
}

int demo_blocks(const char *target, size_t len)
{
    /* the path the router matches: after the authority of an
     * absolute-form target, before the query, decoded as it decodes it */
    const char *p = target, *end = target + len;
    const char *scheme = len > 3 ? memchr(target, ':', len) : NULL;
    if (target[0] != '/' && scheme && end - scheme > 3 && !memcmp(scheme, "://", 3)) {
        p = memchr(scheme + 3, '/', (size_t)(end - scheme - 3));
        if (!p) return 0;
    }
    const char *q = memchr(p, '?', (size_t)(end - p));
    if (q) end = q;
    cshw_arena *a = cshw_arena_new(0);
    const char *path = NULL;
    size_t plen = 0;
    int blocks = a && cshw_path_decode(a, p, (size_t)(end - p), &path, &plen) == 0 && plen == 11 &&
                 memcmp(path, "/demo/sleep", 11) == 0;
    /* out of memory: taken as blocking, where the wrong guess costs least */
    if (!a) blocks = 1;
    cshw_arena_free(a);
    return blocks;
}
