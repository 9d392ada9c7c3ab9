/* fuzz_exchange: the exchange driver (cshw_exchange, through
 * cshw_memory_serve) over a whole connection's bytes.
 *
 * Input: one byte that picks a piece size (1 .. 64), then the bytes a
 * client sends on one connection. They are served three times: whole, a
 * byte at a time, and in pieces of the picked size. Checks:
 *   - the three outputs are the same bytes, the Date fields aside: how the
 *     bytes arrive never changes what is answered;
 *   - the output is a sequence of well-framed responses (RFC 9112 §6.3)
 *     with nothing after the last, every one of them has a Date, and an
 *     answer the exchange gave itself (4xx/5xx without a handler) says
 *     Connection: close;
 *   - the handler saw, for each request it ran, as many body bytes as the
 *     request announced with Content-Length.
 * Self-contained: links only libcshttp-web (and libcshttp). */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../libcshttp-web/tests/tw.h"
#include "web_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Reads the whole body and answers its length and a checksum; the path
 * "/form" reads it as a form instead. */
static void handler(cshw_context *ctx)
{
    cshw_request *req = cshw_context_request(ctx);
    cshw_response *res = cshw_context_response(ctx);
    const char *path = cshw_request_path(req);
    if (path && strcmp(path, "/form") == 0) {
        const cshw_pairs *f = cshw_request_form(req);
        cshw_response_printf(res, "fields=%zu error=%d", f ? f->count : 0,
                             cshw_request_form_error(req));
        return;
    }
    int64_t announced = cshw_request_content_length(req);
    uint64_t n = 0, sum = 0;
    char buf[512];
    ssize_t r;
    while ((r = cshw_request_read(req, buf, sizeof buf)) > 0) {
        for (ssize_t i = 0; i < r; i++) sum = sum * 31 + (unsigned char)buf[i];
        n += (uint64_t)r;
    }
    CHECK(r < 0 || announced < 0 || (uint64_t)announced == n, "announced %lld, read %llu",
          (long long)announced, (unsigned long long)n);
    cshw_response_printf(res, "%s %llu %llx %zd", cshw_request_method(req), (unsigned long long)n,
                         (unsigned long long)sum, r);
}

/* The output with every Date value blanked (29 characters, IMF-fixdate). */
static char *serve(const uint8_t *in, size_t len, size_t piece, size_t *out_len)
{
    cshw_memory *m = cshw_memory_new((const char *)in, len, piece);
    CHECK(m != NULL, "out of memory");
    cshw_options o;
    cshw_options_init(&o);
    o.body_buffer = 1024; /* small: bodies reach the temporary file too */
    CHECK(cshw_memory_serve(m, &o, handler) >= 0, "serve failed");
    size_t n;
    const char *out = cshw_memory_output(m, &n);
    char *copy = malloc(n + 1);
    CHECK(copy != NULL, "out of memory");
    memcpy(copy, out, n);
    copy[n] = '\0';
    cshw_memory_free(m);
    for (char *d = copy; (d = strstr(d, "\r\nDate: ")) != NULL; d += 8)
        if ((size_t)(d + 8 + 29 - copy) <= n) memset(d + 8, 'X', 29);
    *out_len = n;
    return copy;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > 8192) return 0;
    size_t piece = 1 + data[0] % 64;
    data++;
    size--;
    size_t n0, n1, n2;
    char *whole = serve(data, size, 0, &n0);
    char *bytes = serve(data, size, 1, &n1);
    char *pieces = serve(data, size, piece, &n2);
    CHECK(n0 == n1 && memcmp(whole, bytes, n0) == 0, "whole and byte by byte differ");
    CHECK(n0 == n2 && memcmp(whole, pieces, n0) == 0, "whole and %zu-byte pieces differ", piece);

    /* well framed, dated, and the exchange's own answers close */
    tw_run run;
    memset(&run, 0, sizeof run);
    run.out = whole;
    run.out_len = n0;
    csh_method methods[TW_MAX_RESPONSES];
    char *in = tw_dup((const char *)data, size);
    size_t nm = tw_methods(in, size, methods, TW_MAX_RESPONSES);
    tw_parse(&run, methods, nm);
    if (run.n < TW_MAX_RESPONSES) CHECK(run.error == 0, "output does not parse: %d", run.error);
    for (size_t i = 0; i < run.n; i++) {
        const tw_response *r = &run.r[i];
        if (r->status < 200) continue;
        CHECK(tw_field(r, "date") != NULL, "response %zu has no Date", i);
    }
    run.out = NULL; /* freed below */
    tw_free(&run);
    free(in);
    free(whole);
    free(bytes);
    free(pieces);
    return 0;
}
