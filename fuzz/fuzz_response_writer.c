/* fuzz_response_writer: the response writer (cshw_response_*) driven by a
 * handler that does what the input says, through the in-memory transport.
 *
 * Input: byte 0 picks the request (GET or HEAD, with or without
 * "Accept-Encoding: gzip", HTTP/1.1 or 1.0); then operations, each an
 * opcode byte and its arguments as strings cut at 0x00 bytes (any other
 * byte, CR and LF included, may be in them): set status (two bytes), set,
 * append or remove a header, set the content type, write, flush, send an
 * error, redirect. Checks, on the output parsed back strictly with
 * libcshttp:
 *   - it is exactly one well-framed response (no second response smuggled
 *     in by a header value, no bytes left over);
 *   - a header the writer accepted had a token name and a value without
 *     CR, LF or NUL; one it accepted and was not changed after appears in
 *     the output with its value;
 *   - the status is the one the handler last set successfully, unless the
 *     handler sent an error or a redirect;
 *   - a send_error after the headers went out (CSHW_E_HEADERS_SENT) leaves
 *     the response cut short, never complete-looking;
 *   - for a GET without gzip and without send_error or redirect, the body
 *     is exactly the bytes the handler wrote.
 * Self-contained: links only libcshttp-web (and libcshttp). */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cshttp/grammar.h>

#include "../libcshttp-web/tests/tw.h"
#include "web_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const uint8_t *in;
static size_t in_len, in_pos;

/* what the handler did */
static int set_status, other_answer, n_written, cut;
static char *written;
static char last_name[256], last_value[256];
static int last_ok; /* the last header op was an accepted set of last_name */

static const char *next_str(char *buf, size_t cap)
{
    size_t n = 0;
    while (in_pos < in_len && in[in_pos] != 0) {
        if (n + 1 < cap) buf[n++] = (char)in[in_pos];
        in_pos++;
    }
    if (in_pos < in_len) in_pos++;
    buf[n] = '\0';
    return buf;
}

static int clean_value(const char *v)
{
    for (; *v; v++)
        if (*v == '\r' || *v == '\n') return 0;
    return 1;
}

static void handler(cshw_context *ctx)
{
    cshw_response *res = cshw_context_response(ctx);
    char a[256], b[256];
    int ops = 0;
    while (in_pos < in_len && ops++ < 32) {
        uint8_t op = in[in_pos++];
        switch (op % 9) {
        case 0: {
            int st = 0;
            if (in_pos + 2 <= in_len) st = in[in_pos] << 8 | in[in_pos + 1];
            in_pos += 2;
            st %= 700;
            if (cshw_response_set_status(res, st) == 0) {
                CHECK(st >= 200 && st <= 599, "status %d accepted", st);
                set_status = st;
            }
            break;
        }
        case 1:
        case 2: {
            next_str(a, sizeof a);
            next_str(b, sizeof b);
            int r = op % 9 == 1 ? cshw_response_set_header(res, a, b)
                                : cshw_response_append_header(res, a, b);
            if (r == 0) {
                CHECK(csh_is_token(a, strlen(a)), "name \"%s\" accepted", a);
                CHECK(clean_value(b), "value with CR or LF accepted for %s", a);
            }
            last_ok = r == 0 && op % 9 == 1;
            if (last_ok) {
                snprintf(last_name, sizeof last_name, "%s", a);
                snprintf(last_value, sizeof last_value, "%s", b);
            }
            break;
        }
        case 3:
            next_str(a, sizeof a);
            cshw_response_remove_header(res, a);
            last_ok = 0;
            break;
        case 4:
            next_str(a, sizeof a);
            next_str(b, sizeof b);
            cshw_response_set_content_type(res, a, b[0] ? b : NULL);
            last_ok = 0;
            break;
        case 5: {
            next_str(a, sizeof a);
            size_t n = strlen(a);
            if (cshw_response_write(res, a, n) == 0) {
                written = realloc(written, (size_t)n_written + n + 1);
                memcpy(written + n_written, a, n);
                n_written += (int)n;
            }
            break;
        }
        case 6:
            cshw_response_flush(res);
            last_ok = 0; /* headers are gone once sent */
            break;
        case 7: {
            int st = in_pos < in_len ? 400 + in[in_pos++] % 200 : 500;
            int r = cshw_response_send_error(res, st);
            if (r == 0) other_answer = 1;
            /* response.h: too late once the headers went out, and the
             * response is cut short so that it cannot pass for complete */
            if (r == CSHW_E_HEADERS_SENT) cut = 1;
            return;
        }
        case 8:
            next_str(a, sizeof a);
            if (cshw_response_redirect(res, 302, a) == 0) other_answer = 1;
            return;
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0) return 0;
    int head = data[0] & 1, gzip = data[0] & 2, v10 = data[0] & 4;
    in = data + 1;
    in_len = size - 1;
    in_pos = 0;
    set_status = 200;
    other_answer = 0;
    n_written = 0;
    written = NULL;
    last_ok = 0;
    cut = 0;

    char req[128];
    int len = snprintf(req, sizeof req, "%s / HTTP/1.%d\r\nHost: a\r\n%s\r\n", head ? "HEAD" : "GET",
                       v10 ? 0 : 1, gzip ? "Accept-Encoding: gzip\r\n" : "");
    tw_run run;
    tw_serve(&run, req, (size_t)len, 0, NULL, handler);
    if (cut) {
        /* a close-delimited body (HTTP/1.0) cannot show it (RFC 9112 §6.3
         * (8)), and a 204 or 304 has no body to cut */
        CHECK(run.n == 1 && (run.error == CSH_E_BODY_TRUNCATED || head ||
                             (run.error == 0 && (run.r[0].framing == CSH_BODY_UNTIL_CLOSE ||
                                                 run.r[0].framing == CSH_BODY_NONE))),
              "a response cut short parsed as complete (error %d)", run.error);
        goto done;
    }
    CHECK(run.error == 0 && run.n == 1 && run.leftover == 0,
          "output is not one response (error %d, %zu responses, %zu bytes left)", run.error,
          run.n, run.leftover);
    const tw_response *t = &run.r[0];
    CHECK(t->status >= 200 && t->status <= 599, "status %d", t->status);
    if (!other_answer) {
        /* a failed write may have turned it into an error page before the
         * head went out; otherwise the status is the handler's */
        CHECK(t->status == set_status || t->status >= 500, "status %d, set %d", t->status,
              set_status);
        /* RFC 9110 §15.3.6: a 205 has no content, whatever was written */
        if (t->status == 205) CHECK(t->body_len == 0, "205 with %zu bytes", t->body_len);
        if (t->status == set_status && !head && !gzip && t->status != 204 && t->status != 205 &&
            t->status != 304) {
            CHECK(t->body_len == (size_t)n_written &&
                      (n_written == 0 || memcmp(t->body, written, (size_t)n_written) == 0),
                  "status %d: body of %zu bytes, %d written", t->status, t->body_len, n_written);
        }
        if (last_ok && t->status == set_status) {
            /* fields the toolkit owns (Content-Length, Date...) may be
             * replaced by it; others must be there as set */
            static const char *const own[] = {"content-length", "transfer-encoding", "date",
                                              "connection",     "content-encoding",  "vary",
                                              "content-type",   "server",            "trailer",
                                              "keep-alive",     "upgrade",           "te"};
            int owned = 0;
            for (size_t i = 0; i < sizeof own / sizeof own[0]; i++)
                owned |= strcasecmp(last_name, own[i]) == 0;
            if (!owned) {
                const char *got = tw_field(t, last_name);
                /* the parser trims OWS around a value */
                const char *v = last_value;
                while (*v == ' ' || *v == '\t') v++;
                size_t vl = strlen(v);
                while (vl && (v[vl - 1] == ' ' || v[vl - 1] == '\t')) vl--;
                CHECK(got && strlen(got) == vl && memcmp(got, v, vl) == 0,
                      "field %s: \"%s\", set \"%s\"", last_name, got ? got : "(none)", last_value);
            }
        }
    }
done:
    tw_free(&run);
    free(written);
    written = NULL;
    return 0;
}
