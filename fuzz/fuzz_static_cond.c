/* fuzz_static_cond: conditional and range requests against one fixed file,
 * through cshw_static_serve and the in-memory transport.
 *
 * A temporary root holds f.txt (1000 bytes, mtime FIX_MTIME) and its
 * precompressed sibling f.txt.gz (300 other bytes). The input is up to
 * seven field values separated by '\n', in this order: Range, If-Match,
 * If-None-Match, If-Modified-Since, If-Unmodified-Since, If-Range,
 * Accept-Encoding (an empty value leaves the field out; bytes that cannot
 * be in a field value are dropped). Byte 0 picks GET or HEAD. Checks, on
 * the response parsed back with libcshttp:
 *   - it is one well-framed response with status 200, 206, 304, 412 or 416;
 *   - its representation (f.txt, or f.txt.gz with Content-Encoding: gzip)
 *     is whole in a 200, and a 206's Content-Range lies within it, with
 *     the body bytes at that place (a multipart/byteranges body: each
 *     part's range within the file);
 *   - 206 and 416 only with a Range field, 412 only with If-Match or
 *     If-Unmodified-Since;
 *   - a 304 only when a validator matches: If-None-Match holds "*" or the
 *     response's opaque tag, or there is no If-None-Match and
 *     If-Modified-Since is present.
 * Self-contained: links only libcshttp-web (and libcshttp). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cshttp/web/static.h>

#include "../libcshttp-web/tests/tw.h"
#include "web_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FIX_MTIME 1577934245
#define PLAIN_LEN 1000
#define GZ_LEN 300

static char root[64];
static char plain[PLAIN_LEN], gz[GZ_LEN];
static cshw_static_options opts;

static void write_file(const char *name, const char *data, size_t len)
{
    char p[128];
    snprintf(p, sizeof p, "%s/%s", root, name);
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0 || write(fd, data, len) != (ssize_t)len) abort();
    struct timespec ts[2] = {{FIX_MTIME, 0}, {FIX_MTIME, 0}};
    if (futimens(fd, ts) != 0) abort();
    close(fd);
}

static void cleanup(void)
{
    char p[128];
    snprintf(p, sizeof p, "%s/f.txt", root);
    unlink(p);
    snprintf(p, sizeof p, "%s/f.txt.gz", root);
    unlink(p);
    rmdir(root);
}

static void setup(void)
{
    if (root[0]) return;
    snprintf(root, sizeof root, "/tmp/cshttp-fuzz-XXXXXX");
    if (!mkdtemp(root)) abort();
    for (size_t i = 0; i < PLAIN_LEN; i++) plain[i] = (char)('a' + i % 26);
    for (size_t i = 0; i < GZ_LEN; i++) gz[i] = (char)('0' + i % 10);
    write_file("f.txt", plain, PLAIN_LEN);
    write_file("f.txt.gz", gz, GZ_LEN);
    atexit(cleanup);
    cshw_static_options_init(&opts);
    opts.root = root;
}

static void handler(cshw_context *ctx)
{
    cshw_static_serve(ctx, &opts);
}

static const char *const names[7] = {"Range",          "If-Match", "If-None-Match",
                                     "If-Modified-Since", "If-Unmodified-Since", "If-Range",
                                     "Accept-Encoding"};
enum { RANGE, IF_MATCH, IF_NONE_MATCH, IF_MODIFIED_SINCE, IF_UNMODIFIED_SINCE, IF_RANGE, ACCEPT };

/* "bytes a-b/n": 1 and the numbers, else 0 */
static int content_range(const char *v, unsigned long long *a, unsigned long long *b,
                         unsigned long long *n)
{
    char tail;
    return v && sscanf(v, "bytes %llu-%llu/%llu%c", a, b, n, &tail) == 3;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    setup();
    if (size == 0) return 0;
    int head = data[0] & 1;
    data++, size--;

    char *values[7] = {0};
    size_t start = 0, k = 0;
    for (size_t i = 0; i <= size && k < 7; i++) {
        if (i < size && data[i] != '\n') continue;
        char *v = malloc(i - start + 1);
        size_t n = 0;
        for (size_t j = start; j < i; j++) {
            unsigned char c = data[j];
            if ((c >= 0x20 && c != 0x7f) || c == '\t') v[n++] = (char)c;
        }
        /* no leading or trailing whitespace: it would not survive the parse */
        while (n && (v[n - 1] == ' ' || v[n - 1] == '\t')) n--;
        size_t s = 0;
        while (s < n && (v[s] == ' ' || v[s] == '\t')) s++;
        memmove(v, v + s, n - s);
        v[n - s] = '\0';
        values[k++] = v;
        start = i + 1;
    }

    size_t cap = 128 + size + 7 * 32;
    char *req = malloc(cap);
    size_t len = (size_t)snprintf(req, cap, "%s /f.txt HTTP/1.1\r\nHost: a\r\n", head ? "HEAD" : "GET");
    for (size_t i = 0; i < 7; i++)
        if (values[i] && values[i][0])
            len += (size_t)snprintf(req + len, cap - len, "%s: %s\r\n", names[i], values[i]);
    len += (size_t)snprintf(req + len, cap - len, "\r\n");
    int has[7];
    for (size_t i = 0; i < 7; i++) has[i] = values[i] && values[i][0];

    tw_run run;
    tw_serve(&run, req, len, 0, NULL, handler);
    CHECK(run.error == 0 && run.n == 1, "response did not parse (%d, %zu responses)", run.error,
          run.n);
    const tw_response *t = &run.r[0];
    int st = t->status;
    CHECK(st == 200 || st == 206 || st == 304 || st == 412 || st == 416, "status %d", st);

    const char *enc = tw_field(t, "content-encoding");
    const char *rep = enc ? gz : plain;
    size_t rep_len = enc ? GZ_LEN : PLAIN_LEN;
    CHECK(!enc || strcmp(enc, "gzip") == 0, "Content-Encoding %s", enc);
    const char *etag = tw_field(t, "etag");

    if (st == 200 && !head) {
        CHECK(t->body_len == rep_len && memcmp(t->body, rep, rep_len) == 0, "200 body");
    }
    if (st == 206) {
        CHECK(has[RANGE], "206 without Range");
        unsigned long long a, b, n;
        const char *cr = tw_field(t, "content-range");
        if (cr) {
            CHECK(content_range(cr, &a, &b, &n), "Content-Range %s", cr);
            CHECK(a <= b && b < n && n == rep_len, "Content-Range %s outside %zu", cr, rep_len);
            if (!head)
                CHECK(t->body_len == b - a + 1 && memcmp(t->body, rep + a, t->body_len) == 0,
                      "206 body for %s", cr);
        } else {
            /* multipart/byteranges: every part's range within the file */
            const char *ct = tw_field(t, "content-type");
            CHECK(ct && strncmp(ct, "multipart/byteranges", 20) == 0, "206 without Content-Range");
            size_t parts = 0;
            for (const char *p = t->body; p && (p = strstr(p, "Content-Range: ")) != NULL; p++) {
                CHECK(sscanf(p, "Content-Range: bytes %llu-%llu/%llu", &a, &b, &n) == 3,
                      "part Content-Range");
                CHECK(a <= b && b < n && n == rep_len, "part range %llu-%llu/%llu", a, b, n);
                const char *body = strstr(p, "\r\n\r\n");
                CHECK(body && (size_t)(t->body + t->body_len - (body + 4)) >= b - a + 1 &&
                          memcmp(body + 4, rep + a, b - a + 1) == 0,
                      "part bytes %llu-%llu", a, b);
                parts++;
            }
            CHECK(head || parts >= 2, "multipart with %zu parts", parts);
        }
    }
    if (st == 416) {
        CHECK(has[RANGE], "416 without Range");
        const char *cr = tw_field(t, "content-range");
        /* the length of the selected representation (RFC 9110 §15.5.17):
         * the error page drops Content-Encoding, so with Accept-Encoding it
         * may be the sibling's */
        char want[32], want_gz[32];
        snprintf(want, sizeof want, "bytes */%d", PLAIN_LEN);
        snprintf(want_gz, sizeof want_gz, "bytes */%d", GZ_LEN);
        CHECK(cr && (strcmp(cr, want) == 0 || (has[ACCEPT] && strcmp(cr, want_gz) == 0)),
              "416 Content-Range %s", cr ? cr : "(none)");
    }
    if (st == 412) CHECK(has[IF_MATCH] || has[IF_UNMODIFIED_SINCE], "412 without a precondition");
    if (st == 304) {
        int ok;
        if (has[IF_NONE_MATCH]) {
            /* the opaque tag of the response's ETag, quotes included */
            const char *opaque = etag && strncmp(etag, "W/", 2) == 0 ? etag + 2 : etag;
            ok = strchr(values[IF_NONE_MATCH], '*') != NULL ||
                 (opaque && strstr(values[IF_NONE_MATCH], opaque) != NULL);
        } else {
            ok = has[IF_MODIFIED_SINCE];
        }
        CHECK(ok, "304 without a matching validator (ETag %s)", etag ? etag : "(none)");
        CHECK(t->body_len == 0, "304 with a body");
    }

    tw_free(&run);
    free(req);
    for (size_t i = 0; i < 7; i++) free(values[i]);
    return 0;
}
