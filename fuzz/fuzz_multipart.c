/* fuzz_multipart: the multipart/form-data parser (cshw_multipart_*) and the
 * boundary parameter (cshw_multipart_boundary) of libcshttp-web.
 *
 * Input: bytes 0..2 are the setup, the rest the body.
 *   byte 0 bits 0-1  boundary: "XyZ", "-", "a b", "--"
 *          bit 2     tiny limits instead of the defaults
 *          bits 3-4  pieces: 0 of 1..16 bytes, 1 single bytes, 2 of 1..512,
 *                    3 of 1..4
 *   bytes 1-2        seed of the piece sizes
 * The body is parsed twice: whole (every call on all the bytes not yet
 * consumed) and fed in pieces, each call getting a fresh heap copy of
 * exactly the unconsumed bytes plus what arrived (so a read past len, or a
 * pointer kept into an earlier buffer, is caught). Every call must consume
 * at most len bytes, return DATA spans (non-empty) inside what it consumed,
 * consume something with every PART, DATA and PART_END, hold back no more
 * than a delimiter or the header limit allows, keep DONE and errors sticky,
 * and describe parts consistently (NUL-terminated strings, index, limits).
 * Both runs must agree on everything: the parts and their headers, the data
 * of each part, the result and the offset of an error.
 * The body is also given to cshw_multipart_boundary as a Content-Type: a
 * boundary found must lie inside it and be 1..70 valid characters.
 * Self-contained: links only libcshttp-web (and libcshttp). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cshttp/web/arena.h>
#include <cshttp/web/error.h>
#include <cshttp/web/multipart.h>

#include "web_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);


typedef struct tbuf {
    char *data;
    size_t len, cap;
} tbuf;

static void tput(tbuf *b, const void *p, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        b->cap = (b->len + n + 1) * 2;
        b->data = realloc(b->data, b->cap);
        CHECK(b->data != NULL, "out of memory");
    }
    if (n) memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
}

static void tprintf(tbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void tprintf(tbuf *b, const char *fmt, ...)
{
    char s[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(s, sizeof s, fmt, ap);
    va_end(ap);
    tput(b, s, n < 0 ? 0 : (size_t)n < sizeof s ? (size_t)n : sizeof s - 1);
}

enum { WHOLE = -1 };

static void run(const char *body, size_t len, const char *boundary,
                const cshw_multipart_limits *limits, int pieces, uint32_t seed, tbuf *t)
{
    cshw_arena *a = cshw_arena_new(0);
    CHECK(a != NULL, "out of memory");
    cshw_multipart m;
    CHECK(cshw_multipart_init(&m, a, boundary, strlen(boundary), limits) == 0, "init");
    size_t dl = 4 + strlen(boundary);
    size_t pos = 0, avail = pieces == WHOLE ? len : 0, absolute = 0;
    uint64_t data_bytes = 0;
    int r;
    for (;;) {
        if (pieces != WHOLE) {
            seed = seed * 1103515245u + 12345u;
            size_t max = pieces == 0 ? 16 : pieces == 1 ? 1 : pieces == 2 ? 512 : 4;
            size_t piece = 1 + (seed >> 16) % max;
            avail += piece < len - avail ? piece : len - avail;
        }
        for (;;) {
            size_t n = avail - pos;
            char *buf = malloc(n ? n : 1);
            CHECK(buf != NULL, "out of memory");
            if (n) memcpy(buf, body + pos, n);
            size_t used = (size_t)-1;
            csh_span d = {(size_t)-1, (size_t)-1};
            r = cshw_multipart_feed(&m, buf, n, &used, &d);
            CHECK(used <= n, "consumed %zu of %zu", used, n);
            if (r == CSHW_MULTIPART_PART || r == CSHW_MULTIPART_DATA ||
                r == CSHW_MULTIPART_PART_END)
                CHECK(used > 0, "event %d consumed nothing", r);
            if (r == CSHW_MULTIPART_DATA) {
                CHECK(d.len > 0 && d.off + d.len <= used, "span %zu+%zu, consumed %zu", d.off,
                      d.len, used);
                tput(t, buf + d.off, d.len);
                data_bytes += d.len;
                CHECK(m.data_bytes == data_bytes, "data_bytes");
            } else if (r == CSHW_MULTIPART_PART) {
                const cshw_multipart_part *p = &m.part;
                CHECK(p->name && p->name[p->name_len] == '\0', "name");
                CHECK(!p->filename || p->filename[p->filename_len] == '\0', "filename");
                CHECK(p->content_type && p->content_type[p->content_type_len] == '\0', "type");
                CHECK(p->index + 1 == m.parts, "index %zu of %zu parts", p->index, m.parts);
                CHECK(!limits->max_parts || m.parts <= limits->max_parts, "parts past limit");
                CHECK(!limits->max_headers || p->headers.count <= limits->max_headers,
                      "headers past limit");
                CHECK(p->headers.count >= 1, "a part without its Content-Disposition");
                tprintf(t, "\nPART %zu [", p->index);
                tput(t, p->name, p->name_len);
                tprintf(t, "] [");
                if (p->filename) tput(t, p->filename, p->filename_len);
                tprintf(t, "] %d [", p->filename != NULL);
                tput(t, p->content_type, p->content_type_len);
                tprintf(t, "] %zu headers\n", p->headers.count);
                for (size_t k = 0; k < p->headers.count; k++) {
                    const cshw_pair *h = &p->headers.items[k];
                    CHECK(h->name[h->name_len] == '\0' && h->value[h->value_len] == '\0', "hdr");
                    for (size_t c = 0; c < h->name_len; c++)
                        CHECK(!(h->name[c] >= 'A' && h->name[c] <= 'Z'), "name not lower-case");
                    tprintf(t, "%s: %s\n", h->name, h->value);
                }
                data_bytes = 0;
                CHECK(m.data_bytes == 0, "data_bytes not reset");
            } else if (r == CSHW_MULTIPART_PART_END) {
                tprintf(t, "\nEND %llu\n", (unsigned long long)data_bytes);
            } else if (r == CSHW_MULTIPART_DONE) {
                CHECK(used == n, "DONE left %zu bytes of epilogue", n - used);
            } else if (r == CSHW_MULTIPART_INCOMPLETE) {
                size_t held = n - used;
                size_t bound = dl > limits->max_header_bytes ? dl : limits->max_header_bytes;
                CHECK(held <= bound, "held back %zu bytes (bound %zu)", held, bound);
            } else {
                CHECK(r < 0 && cshw_error_status(r) >= 400, "result %d", r);
                tprintf(t, "\n%s at %zu\n", cshw_error_name(r), absolute + used);
            }
            free(buf);
            pos += used;
            absolute += used;
            if (r == CSHW_MULTIPART_DATA || r == CSHW_MULTIPART_PART ||
                r == CSHW_MULTIPART_PART_END)
                continue;
            break;
        }
        if (r != CSHW_MULTIPART_INCOMPLETE) break;
        if (avail == len) {
            r = cshw_multipart_finish(&m);
            CHECK(r == CSHW_E_MULTIPART_TRUNCATED, "finish gave %d", r);
            tprintf(t, "\n%s at end\n", cshw_error_name(r));
            break;
        }
    }
    /* sticky */
    size_t used = 99;
    csh_span d;
    int again = cshw_multipart_feed(&m, "--", 2, &used, &d);
    CHECK(again == r, "result %d then %d", r, again);
    CHECK(used == (r == CSHW_MULTIPART_DONE ? 2u : 0u), "sticky call consumed %zu", used);
    CHECK(cshw_multipart_finish(&m) == r, "finish after the end");
    tprintf(t, "\nRESULT %d\n", r);
    cshw_arena_free(a);
}

static int bchar(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           (c && strchr("'()+_,-./:=? ", c));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 3) return 0;
    static const char *boundaries[] = {"XyZ", "-", "a b", "--"};
    const char *boundary = boundaries[data[0] & 3];
    cshw_multipart_limits limits;
    cshw_multipart_limits_init(&limits);
    if (data[0] & 4) {
        limits.max_parts = 3;
        limits.max_header_bytes = 90;
        limits.max_headers = 2;
    }
    int pieces = (data[0] >> 3) & 3;
    uint32_t seed = (uint32_t)data[1] << 8 | data[2];
    size_t len = size - 3;
    char *body = malloc(len ? len : 1);
    CHECK(body != NULL, "out of memory");
    if (len) memcpy(body, data + 3, len);

    tbuf whole = {0}, split = {0};
    run(body, len, boundary, &limits, WHOLE, 0, &whole);
    run(body, len, boundary, &limits, pieces, seed, &split);
    if (whole.len != split.len || memcmp(whole.data, split.data, whole.len) != 0) {
        fprintf(stderr, "--- whole:\n%s\n--- in pieces:\n%s\n", whole.data, split.data);
        CHECK(0, "whole and split disagree");
    }
    free(whole.data);
    free(split.data);

    const char *b = NULL;
    size_t bl = 0;
    int r = cshw_multipart_boundary(body, len, &b, &bl);
    if (r == 0) {
        CHECK(b >= body && b + bl <= body + len, "boundary outside the value");
        CHECK(bl >= 1 && bl <= 70 && b[bl - 1] != ' ', "boundary length %zu", bl);
        for (size_t i = 0; i < bl; i++) CHECK(bchar((unsigned char)b[i]), "boundary byte");
        /* and a parser accepts it */
        cshw_arena *a = cshw_arena_new(0);
        cshw_multipart m;
        CHECK(cshw_multipart_init(&m, a, b, bl, NULL) == 0, "boundary refused by init");
        cshw_arena_free(a);
    } else {
        CHECK(r == CSHW_E_MULTIPART_NOT_MULTIPART || r == CSHW_E_MULTIPART_INVALID_CONTENT_TYPE ||
                  r == CSHW_E_MULTIPART_NO_BOUNDARY || r == CSHW_E_MULTIPART_INVALID_BOUNDARY,
              "boundary error %d", r);
    }
    free(body);
    return 0;
}
